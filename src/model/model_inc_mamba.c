/* The Mamba2 mixer of the forward one bar at a time (model_internal.h): the causal conv +
 * SiLU and the selective scan of one sample, in the arithmetic of the CPU kernels
 * (cpu_mamba.c: the same operations in the same order, so the same bits), arranged for a
 * window that slides one bar: a conv output that reads only bars inside the window (positions
 * >= CW - 1) is a function of the bar and its CW - 1 predecessors, computed once when the bar
 * comes (vp_model_inc_conv_row); the scan's decay exp(dt A) is computed once per step and head
 * instead of once per channel; the conv runs tap by tap over all channels (its weights laid out
 * by tap, w_convt) and the SiLUs over whole rows (vp_cpu_silu_rows), the bits of conv_at and
 * vp_cpu_sigmoid. */
#include <math.h>
#include <string.h>

#include "model/cpu_mamba_math.h"
#include "model/model_internal.h"

/* acc[c] += w[c] * x[c] for c < n: one conv tap over channels side by side (a multiply, then an
 * add: conv_at's operations, so its bits). */
static void taps_add(float* restrict acc, const float* restrict w, const float* restrict x, int64_t n) {
    for (int64_t c = 0; c < n; ++c) acc[c] += w[c] * x[c];
}

void vp_model_inc_conv_row(const vp_model_inc* w, vp_model_inc_ring* r) {
    const vp_model* m = w->m;
    const vp_model_cfg* c = &m->cfg;
    const int K = r->K, CW = c->mamba_conv;
    if (w->L == 0 || K < CW) return; /* no window position reads a whole conv then */
    const int64_t L = w->L, XB = c->hidden + c->mamba_state, i = r->n - 1;
    const float* cwt = (const float*)w->w_convt.data; /* [CW, CH] */
    const float* cb = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_B).data;
    const int64_t CH = vp_tensor_cols(&w->w_convt);
    // the bar and its predecessors' rows (a bar before the first reads the first: its copies fill the ring)
    const float* row[VP_MAMBA_MAX_K];
    for (int j = 0; j < CW; ++j) {
        const int64_t s = i - (CW - 1) + j;
        row[j] = r->xbcdt + ((s % K + K) % K) * L;
    }
    float* out = r->xb + (i % K) * XB;
    // per channel: the bias, then tap by tap in order (conv_at's sum), channels side by side
    memcpy(out, cb, sizeof(float) * (size_t)XB);
    for (int j = 0; j < CW; ++j) taps_add(out, cwt + (int64_t)j * CH, row[j], XB);
    vp_cpu_silu_rows(out, XB); /* pre * vp_cpu_sigmoid(pre), 16 channels at a time */
}

void vp_model_inc_mix(const vp_model_inc* w, vp_model_acts* a, const vp_model_inc_ring* r) {
    const vp_model* m = w->m;
    const vp_model_cfg* c = &m->cfg;
    const int K = c->window, H = c->hidden, N = c->mamba_state, NH = H / c->mamba_head_dim;
    const int PD = c->mamba_head_dim, CW = c->mamba_conv;
    const int64_t L = w->L, XB = H + N;
    const float* in = (const float*)a->xbcdt.data; /* [K, L] the window's rows, oldest first */
    const float* cwt = (const float*)w->w_convt.data; /* [CW, CH] */
    const float* cb = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_B).data;
    const int64_t CH = vp_tensor_cols(&w->w_convt);
    float* xb = (float*)a->xb.data; /* [K, XB] */
    float* cc = (float*)a->c.data;  /* [N] */
    // x and B channels: the cached whole convs, the window's first CW - 1 steps computed
    const int oldest = (int)(r->n % K);
    for (int t = 0; t < K; ++t) {
        float* o = xb + (int64_t)t * XB;
        if (t >= CW - 1) {
            memcpy(o, r->xb + ((oldest + t) % K) * XB, sizeof(float) * (size_t)XB);
            continue;
        }
        // conv_at's sum per channel: the bias, then the taps inside the window in order
        memcpy(o, cb, sizeof(float) * (size_t)XB);
        for (int j = 0; j < CW; ++j) {
            const int s = t - (CW - 1) + j;
            if (s >= 0) taps_add(o, cwt + (int64_t)j * CH, in + (int64_t)s * L, XB);
        }
        vp_cpu_silu_rows(o, XB);
    }
    // C channels at the last step only
    memcpy(cc, cb + XB, sizeof(float) * (size_t)N);
    for (int j = 0; j < CW; ++j) {
        const int s = K - 1 - (CW - 1) + j;
        if (s >= 0) taps_add(cc, cwt + (int64_t)j * CH + XB, in + (int64_t)s * L + XB, N);
    }
    vp_cpu_silu_rows(cc, N);
    // the scan of every head to the last step's y
    const float* dtb = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_DT_BIAS).data;
    const float* alog = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_A_LOG).data;
    const float* D = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_D).data;
    float* dt = (float*)a->dt.data; /* [K, NH] */
    float* y = (float*)a->y.data;   /* [H] */
    float s[VP_MAMBA_MAX_N], decay[VP_MAMBA_MAX_K], dth[VP_MAMBA_MAX_K];
    const float* xr[VP_MAMBA_MAX_K];
    for (int t = 0; t < K; ++t) xr[t] = xb + (int64_t)t * XB;
    for (int h = 0; h < NH; ++h) {
        const float A = -expf(alog[h]);
        for (int t = 0; t < K; ++t) {
            dt[t * NH + h] = softplusf_(in[(int64_t)t * L + H + 2 * N + h] + dtb[h]);
            dth[t] = dt[t * NH + h];
            decay[t] = expf(dt[t * NH + h] * A);
        }
        int p = 0;
#ifdef VP_MAMBA_X86
        const int isa = vp_model_inc_isa();
        if (isa == VP_MODEL_INC_ISA_BEST) p = scan_head_avx512(K, N, PD, H, h, xr, cc, dth, decay, D[h], y);
        else if (isa == VP_MODEL_INC_ISA_AVX2) p = scan_head_avx2(K, N, PD, H, h, xr, cc, dth, decay, D[h], y);
#endif
        for (; p < PD; ++p) {
            const int col = h * PD + p;
            memset(s, 0, sizeof(float) * (size_t)N);
            for (int t = 0; t < K; ++t) {
                const float dtv = dt[t * NH + h], at = decay[t], u = dtv * xb[(int64_t)t * XB + col];
                const float* Bt = xb + (int64_t)t * XB + H;
                for (int n = 0; n < N; ++n) s[n] = at * s[n] + u * Bt[n];
            }
            float acc = D[h] * xb[(int64_t)(K - 1) * XB + col];
            for (int n = 0; n < N; ++n) acc += s[n] * cc[n];
            y[col] = acc;
        }
    }
}
