/* CPU kernels of the Mamba2 mixer: causal depthwise conv + SiLU and the selective scan,
 * forward and backward, one sample at a time (the CUDA grid is (sample, channel) for the
 * conv and (sample, head, head_dim) for the scan). */
#include <math.h>
#include <string.h>

#include "model/cpu_mamba_math.h"
#include "model/cpu_mops.h"

/* d silu(x) / dx. */
static inline float silu_grad(float x) {
    float s = vp_cpu_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

vp_status vp_cpu_conv_forward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                              const float* bias, float* xb_pre, float* xb, float* c_pre, float* c) {
    (void)be;
    const int K = d->window, H = d->hidden, N = d->state, CW = d->conv;
    const int64_t L = H + 2 * N + d->heads, XB = H + N;
    for (int64_t b = 0; b < d->batch; ++b) {
        const float* in = xbcdt + b * K * L;
        // x and B channels at every step: a step's pre-activations over its contiguous
        // channels, then SiLU over the row (vp_cpu_silu_rows: the scalar form's bits)
        for (int t = 0; t < K; ++t) {
            float* row = xb + (b * K + t) * XB;
            for (int64_t ch = 0; ch < XB; ++ch) row[ch] = conv_at(in + ch, L, w + ch * CW, bias[ch], t, CW);
            if (xb_pre) memcpy(xb_pre + (b * K + t) * XB, row, sizeof(float) * (size_t)XB);
            vp_cpu_silu_rows(row, XB);
        }
        // C channels at the last step only
        for (int n = 0; n < N; ++n) {
            int ch = (int)XB + n;
            float pre = conv_at(in + ch, L, w + (int64_t)ch * CW, bias[ch], K - 1, CW);
            if (c_pre) c_pre[b * N + n] = pre;
            c[b * N + n] = pre * vp_cpu_sigmoid(pre);
        }
    }
    return VP_OK;
}

vp_status vp_cpu_conv_backward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                               const float* xb_pre, const float* c_pre, const float* d_xb, const float* d_c,
                               float* d_xbcdt, float* w_part, float* b_part) {
    (void)be;
    const int K = d->window, H = d->hidden, N = d->state, CW = d->conv;
    const int64_t L = H + 2 * N + d->heads, XB = H + N, CH = H + 2 * N;
    float dout[VP_MAMBA_MAX_K];
    for (int64_t b = 0; b < d->batch; ++b) {
        const float* in = xbcdt + b * K * L;
        for (int64_t ch = 0; ch < CH; ++ch) {
            // gradient of the conv output (through SiLU); C channels exist at the last step only
            for (int t = 0; t < K; ++t) {
                if (ch < XB) {
                    int64_t o = (b * K + t) * XB + ch;
                    dout[t] = d_xb[o] * silu_grad(xb_pre[o]);
                } else {
                    int64_t o = b * N + (ch - XB);
                    dout[t] = t == K - 1 ? d_c[o] * silu_grad(c_pre[o]) : 0.0f;
                }
            }
            const float* wc = w + ch * CW;
            // input gradient: the transposed causal conv
            for (int s = 0; s < K; ++s) {
                float acc = 0.0f;
                for (int j = 0; j < CW; ++j) {
                    int t = s + CW - 1 - j;
                    if (t < K) acc += wc[j] * dout[t];
                }
                d_xbcdt[(b * K + s) * L + ch] = acc;
            }
            // this sample's weight and bias gradients
            float db = 0.0f;
            for (int t = 0; t < K; ++t) db += dout[t];
            b_part[b * CH + ch] = db;
            for (int j = 0; j < CW; ++j) {
                float acc = 0.0f;
                for (int t = 0; t < K; ++t) {
                    int s = t - (CW - 1) + j;
                    if (s >= 0) acc += dout[t] * in[(int64_t)s * L + ch];
                }
                w_part[b * CH * CW + ch * CW + j] = acc;
            }
        }
    }
    return VP_OK;
}

vp_status vp_cpu_scan_forward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                              const float* xbcdt, const float* dt_bias, const float* A_log, const float* D,
                              float* dt, float* y) {
    (void)be;
    const int K = d->window, H = d->hidden, N = d->state, NH = d->heads, PD = d->head_dim;
    const int64_t L = H + 2 * N + NH, XB = H + N;
    float s[VP_MAMBA_MAX_N];
    for (int64_t b = 0; b < d->batch; ++b)
        for (int h = 0; h < NH; ++h) {
            const float A = -expf(A_log[h]);
            // step sizes of this head
            for (int t = 0; t < K; ++t) {
                int64_t r = b * K + t;
                dt[r * NH + h] = softplusf_(xbcdt[r * L + H + 2 * N + h] + dt_bias[h]);
            }
            // one state row [N] per head channel, run over the window
            for (int p = 0; p < PD; ++p) {
                int col = h * PD + p;
                memset(s, 0, sizeof(float) * (size_t)N);
                for (int t = 0; t < K; ++t) {
                    int64_t r = b * K + t;
                    float dtv = dt[r * NH + h], a = expf(dtv * A), u = dtv * xb[r * XB + col];
                    const float* Bt = xb + r * XB + H;
                    for (int n = 0; n < N; ++n) s[n] = a * s[n] + u * Bt[n];
                }
                float acc = D[h] * xb[(b * K + K - 1) * XB + col];
                for (int n = 0; n < N; ++n) acc += s[n] * c[b * N + n];
                y[b * H + col] = acc;
            }
        }
    return VP_OK;
}

vp_status vp_cpu_scan_backward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                               const float* xbcdt, const float* dt, const float* dt_bias, const float* A_log,
                               const float* D, const float* d_y, float* d_xb, float* d_c, float* d_xbcdt,
                               float* p_alog, float* p_d, float* p_dtb) {
    (void)be;
    const int K = d->window, H = d->hidden, N = d->state, NH = d->heads, PD = d->head_dim;
    const int64_t L = H + 2 * N + NH, XB = H + N;
    float hist[VP_MAMBA_MAX_K * VP_MAMBA_MAX_N], ds[VP_MAMBA_MAX_N], a_t[VP_MAMBA_MAX_K], ddt[VP_MAMBA_MAX_K];
    for (int64_t b = 0; b < d->batch; ++b) {
        // this sample's input gradients are accumulated from zero
        memset(d_xb + b * K * XB, 0, sizeof(float) * (size_t)(K * XB));
        memset(d_c + b * N, 0, sizeof(float) * (size_t)N);
        for (int h = 0; h < NH; ++h) {
            const float A = -expf(A_log[h]);
            for (int t = 0; t < K; ++t) {
                a_t[t] = expf(dt[(b * K + t) * NH + h] * A);
                ddt[t] = 0.0f;
            }
            float dA = 0.0f, dD = 0.0f;
            for (int p = 0; p < PD; ++p) {
                int col = h * PD + p;
                // recompute the states s_t of this channel
                for (int t = 0; t < K; ++t) {
                    int64_t r = b * K + t;
                    float u = dt[r * NH + h] * xb[r * XB + col];
                    const float* Bt = xb + r * XB + H;
                    for (int n = 0; n < N; ++n)
                        hist[t * N + n] = (t ? a_t[t] * hist[(t - 1) * N + n] : 0.0f) + u * Bt[n];
                }
                // output: y = s_K C + D x_K
                float dy = d_y[b * H + col];
                int64_t rK = b * K + K - 1;
                for (int n = 0; n < N; ++n) {
                    ds[n] = dy * c[b * N + n];
                    d_c[b * N + n] += dy * hist[(K - 1) * N + n];
                }
                dD += dy * xb[rK * XB + col];
                d_xb[rK * XB + col] += D[h] * dy;
                // back through the recurrence
                for (int t = K - 1; t >= 0; --t) {
                    int64_t r = b * K + t;
                    float dtv = dt[r * NH + h], a = a_t[t], xv = xb[r * XB + col];
                    const float* Bt = xb + r * XB + H;
                    float* dBt = d_xb + r * XB + H;
                    float gx = 0.0f, gdt = 0.0f, gA = 0.0f;
                    for (int n = 0; n < N; ++n) {
                        float sp = t ? hist[(t - 1) * N + n] : 0.0f;
                        gx += ds[n] * Bt[n];
                        dBt[n] += dtv * ds[n] * xv;
                        gdt += ds[n] * (xv * Bt[n] + A * a * sp);
                        gA += ds[n] * sp;
                        ds[n] *= a;
                    }
                    d_xb[r * XB + col] += dtv * gx;
                    ddt[t] += gdt;
                    dA += dtv * a * gA;
                }
            }
            // through dt = softplus(raw + dt_bias); A = -exp(A_log)
            float dtb = 0.0f;
            for (int t = 0; t < K; ++t) {
                int64_t r = b * K + t;
                float g = ddt[t] * vp_cpu_sigmoid(xbcdt[r * L + H + 2 * N + h] + dt_bias[h]);
                d_xbcdt[r * L + H + 2 * N + h] = g;
                dtb += g;
            }
            p_alog[b * NH + h] = dA * A;
            p_d[b * NH + h] = dD;
            p_dtb[b * NH + h] = dtb;
        }
    }
    return VP_OK;
}
