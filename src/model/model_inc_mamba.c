/* The Mamba2 mixer of the forward one bar at a time (model_internal.h): the causal conv +
 * SiLU and the selective scan of one sample, in the arithmetic of the CPU kernels
 * (cpu_mamba.c: the same operations in the same order, so the same bits), arranged for a
 * window that slides one bar: a conv output that reads only bars inside the window (positions
 * >= CW - 1) is a function of the bar and its CW - 1 predecessors, computed once when the bar
 * comes (vp_model_inc_conv_row); the scan's decay exp(dt A) is computed once per step and head
 * instead of once per channel; the SiLUs run over whole rows (vp_cpu_silu_rows, the bits of
 * sigmoidf_). */
#include <math.h>
#include <string.h>

#include "model/cpu_mamba_math.h"
#include "model/model_internal.h"

void vp_model_inc_conv_row(const vp_model_inc* w, vp_model_inc_ring* r) {
    const vp_model* m = w->m;
    const vp_model_cfg* c = &m->cfg;
    const int K = r->K, CW = c->mamba_conv;
    if (w->L == 0 || K < CW) return; /* no window position reads a whole conv then */
    const int64_t L = w->L, XB = c->hidden + c->mamba_state, i = r->n - 1;
    const float* cw = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_W).data;
    const float* cb = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_B).data;
    // the bar and its predecessors' rows (a bar before the first reads the first: its copies fill the ring)
    const float* row[VP_MAMBA_MAX_K];
    for (int j = 0; j < CW; ++j) {
        const int64_t s = i - (CW - 1) + j;
        row[j] = r->xbcdt + ((s % K + K) % K) * L;
    }
    float* out = r->xb + (i % K) * XB;
    for (int64_t ch = 0; ch < XB; ++ch) {
        float acc = cb[ch];
        for (int j = 0; j < CW; ++j) acc += cw[ch * CW + j] * row[j][ch];
        out[ch] = acc;
    }
    vp_cpu_silu_rows(out, XB); /* pre * sigmoidf_(pre), 16 channels at a time */
}

void vp_model_inc_mix(const vp_model_inc* w, vp_model_acts* a, const vp_model_inc_ring* r) {
    const vp_model* m = w->m;
    const vp_model_cfg* c = &m->cfg;
    const int K = c->window, H = c->hidden, N = c->mamba_state, NH = H / c->mamba_head_dim;
    const int PD = c->mamba_head_dim, CW = c->mamba_conv;
    const int64_t L = w->L, XB = H + N;
    const float* in = (const float*)a->xbcdt.data; /* [K, L] the window's rows, oldest first */
    const float* cw = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_W).data;
    const float* cb = (const float*)vp_model_slot(m, w->params, VP_PS_MAMBA_CONV_B).data;
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
        for (int64_t ch = 0; ch < XB; ++ch) o[ch] = conv_at(in + ch, L, cw + ch * CW, cb[ch], t, CW);
        vp_cpu_silu_rows(o, XB);
    }
    // C channels at the last step only
    for (int n = 0; n < N; ++n) cc[n] = conv_at(in + XB + n, L, cw + (XB + n) * CW, cb[XB + n], K - 1, CW);
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
        if (vp_model_inc_isa() == VP_MODEL_INC_ISA_BEST)
            p = scan_head_avx512(K, N, PD, H, h, xr, cc, dth, decay, D[h], y);
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
