/* CPU kernels of the span encoding's Mamba2 mixer (mops.h: span_conv, span_scan): the conv +
 * SiLU and the step sizes once per bar of the span's table, then each window's scan reading
 * its rows from the table by index. Both in the arithmetic of cpu_mamba.c's conv_forward and
 * scan_forward (cpu_mamba_math.h: the same operations in the same order, so the same bits); the
 * scan 16 channels at a time with AVX-512 as the one-sample forward's (vp_model_inc_isa); span_mix
 * adds the backend's gate ops (vp_model_gate_forward's). */
#include <stdlib.h>
#include <string.h>

#include "vulpes/ops.h"

#include "model/cpu_mamba_math.h"
#include "model/cpu_mops.h"
#include "model/model_internal.h"

/* Checks the extents the kernels assume. */
static vp_status check_dims(const char* fn, const vp_mamba_dims* d) {
    VP_REQUIRE(vp_mamba_dims_fit(d), VP_ERR_INVALID_ARG, "%s: bad Mamba2 extents", fn);
    return VP_OK;
}

vp_status vp_cpu_span_conv(vp_backend* be, const vp_mamba_dims* d, int64_t rows, const float* xbcdt, const float* w,
                           const float* bias, const float* dt_bias, float* act) {
    (void)be;
    VP_TRY(check_dims("cpu span_conv", d));
    VP_REQUIRE(rows >= 1 && xbcdt && w && bias && dt_bias && act, VP_ERR_INVALID_ARG,
               "cpu span_conv: %lld rows or a NULL pointer", (long long)rows);
    const int CW = d->conv, NH = d->heads;
    const int64_t CH = d->hidden + 2 * (int64_t)d->state, L = CH + NH;
    for (int64_t r = 0; r < rows; ++r) {
        // the bar's CW - 1 predecessors (clamped at the table's first row) and itself
        const float* in[VP_MAMBA_MAX_CW];
        for (int j = 0; j < CW; ++j) {
            const int64_t s = r - (CW - 1) + j;
            in[j] = xbcdt + (s > 0 ? s : 0) * L;
        }
        float* o = act + r * L;
        for (int64_t ch = 0; ch < CH; ++ch) {
            // conv_at at a step past the padding: bias, then w[j] x_j in order
            float pre = bias[ch];
            for (int j = 0; j < CW; ++j) pre += w[ch * CW + j] * in[j][ch];
            o[ch] = pre * vp_cpu_sigmoid(pre);
        }
        for (int h = 0; h < NH; ++h) o[CH + h] = softplusf_(xbcdt[r * L + CH + h] + dt_bias[h]);
    }
    return VP_OK;
}

vp_status vp_cpu_span_scan(vp_backend* be, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                           const float* act, const float* w, const float* bias, const float* A_log, const float* D,
                           float* y) {
    (void)be;
    VP_TRY(check_dims("cpu span_scan", d));
    VP_REQUIRE(d->batch >= 1 && last && xbcdt && act && w && bias && A_log && D && y, VP_ERR_INVALID_ARG,
               "cpu span_scan: %lld windows or a NULL pointer", (long long)d->batch);
    const int K = d->window, H = d->hidden, N = d->state, NH = d->heads, PD = d->head_dim, CW = d->conv;
    const int64_t XB = H + N, CH = XB + N, L = CH + NH;
    // the steps that see the window's zero padding: their x, B channels per window
    const int P = CW - 1 < K ? CW - 1 : K;
    float* pad = P ? (float*)malloc(sizeof(float) * (size_t)(P * XB)) : NULL;
    VP_REQUIRE(P == 0 || pad != NULL, VP_ERR_OOM, "cpu span_scan: %lld floats of padded steps", (long long)(P * XB));
    int32_t row[VP_MAMBA_MAX_K];
    const float* xr[VP_MAMBA_MAX_K];
    float cc[VP_MAMBA_MAX_N], dt[VP_MAMBA_MAX_K], decay[VP_MAMBA_MAX_K], s[VP_MAMBA_MAX_N];
    const int isa = vp_model_inc_isa();
    for (int64_t b = 0; b < d->batch; ++b) {
        for (int t = 0; t < K; ++t) row[t] = last[b] - K + 1 + t > 0 ? last[b] - K + 1 + t : 0;
        for (int t = 0; t < P; ++t)
            for (int64_t ch = 0; ch < XB; ++ch) {
                const float pre = conv_at_rows(xbcdt + ch, L, row, w + ch * CW, bias[ch], t, CW);
                pad[t * XB + ch] = pre * vp_cpu_sigmoid(pre);
            }
        for (int t = 0; t < K; ++t) xr[t] = t < P ? pad + t * XB : act + (int64_t)row[t] * L;
        // C channels at the last step only
        for (int n = 0; n < N; ++n) {
            const int64_t ch = XB + n;
            if (K - 1 < P) {
                const float pre = conv_at_rows(xbcdt + ch, L, row, w + ch * CW, bias[ch], K - 1, CW);
                cc[n] = pre * vp_cpu_sigmoid(pre);
            } else {
                cc[n] = act[(int64_t)row[K - 1] * L + ch];
            }
        }
        // scan_forward's recurrence per head channel, its decay exp(dt A) once per step and head;
        // 16 channels at a time where the processor has AVX-512 (the same bits)
        for (int h = 0; h < NH; ++h) {
            const float A = -expf(A_log[h]);
            for (int t = 0; t < K; ++t) {
                dt[t] = act[(int64_t)row[t] * L + CH + h];
                decay[t] = expf(dt[t] * A);
            }
            int p = 0;
#ifdef VP_MAMBA_X86
            if (isa == VP_MODEL_INC_ISA_BEST) p = scan_head_avx512(K, N, PD, H, h, xr, cc, dt, decay, D[h], y + b * H);
#endif
            for (; p < PD; ++p) {
                const int col = h * PD + p;
                memset(s, 0, sizeof(float) * (size_t)N);
                for (int t = 0; t < K; ++t) {
                    const float a = decay[t], u = dt[t] * xr[t][col];
                    const float* Bt = xr[t] + H;
                    for (int n = 0; n < N; ++n) s[n] = a * s[n] + u * Bt[n];
                }
                float acc = D[h] * xr[K - 1][col];
                for (int n = 0; n < N; ++n) acc += s[n] * cc[n];
                y[b * H + col] = acc;
            }
        }
    }
    free(pad);
    return VP_OK;
}

vp_status vp_cpu_span_mix(vp_backend* be, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                          const float* act, const float* w, const float* bias, const float* A_log, const float* D,
                          const float* z, const float* norm_g, float eps, float* y, float* sz, float* g, float* rstd,
                          float* yn) {
    VP_REQUIRE(be != NULL && d != NULL && z && norm_g && y && sz && g && rstd && yn, VP_ERR_INVALID_ARG,
               "cpu span_mix: NULL backend or pointer");
    VP_TRY(vp_cpu_span_scan(be, d, last, xbcdt, act, w, bias, A_log, D, y));
    // vp_model_gate_forward's ops on the same rows: yn = RMSNorm(y * silu(z)) * g
    const int64_t B = d->batch, H = d->hidden;
    const vp_mem mem = vp_backend_native_mem(be);
    vp_tensor yt = vp_tensor_2d(y, VP_F32, mem, B, H), zt = vp_tensor_2d((void*)z, VP_F32, mem, B, H);
    vp_tensor szt = vp_tensor_2d(sz, VP_F32, mem, B, H), gt = vp_tensor_2d(g, VP_F32, mem, B, H);
    vp_tensor ynt = vp_tensor_2d(yn, VP_F32, mem, B, H), rt = vp_tensor_1d(rstd, VP_F32, mem, B);
    vp_tensor ng = vp_tensor_1d((void*)norm_g, VP_F32, mem, H);
    VP_TRY(vp_unary(be, VP_UNARY_SILU, &zt, &szt));
    VP_TRY(vp_binary(be, VP_BINARY_MUL, &yt, &szt, &gt));
    return vp_rmsnorm(be, &gt, &ng, eps, &ynt, &rt);
}
