/* CPU kernels of the model outside the Mamba2 mixer: window indices, last-step rows,
 * the dueling combine, C51 expected values and the IQN embedding and mix. */
#include <math.h>

#include "backend/cpu/cpu_exp.h"
#include "model/cpu_mops.h"

/* Atoms of a row whose probabilities the expected value holds at once. */
#define C51_Q_CHUNK 64

vp_status vp_cpu_window_index(vp_backend* be, int64_t B, int K, const int32_t* bar, int32_t* idx) {
    (void)be;
    for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < K; ++k) {
            int64_t r = (int64_t)bar[b] - K + 1 + k;
            idx[b * K + k] = (int32_t)(r < 0 ? 0 : r);
        }
    return VP_OK;
}

vp_status vp_cpu_take_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst) {
    (void)be;
    for (int64_t b = 0; b < B; ++b) {
        const float* s = src + (b * K + K - 1) * n;
        for (int64_t j = 0; j < n; ++j) dst[b * n + j] = s[j];
    }
    return VP_OK;
}

vp_status vp_cpu_add_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst) {
    (void)be;
    for (int64_t b = 0; b < B; ++b) {
        float* o = dst + (b * K + K - 1) * n;
        for (int64_t j = 0; j < n; ++j) o[j] += src[b * n + j];
    }
    return VP_OK;
}

vp_status vp_cpu_dueling_forward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, const float* v,
                                 const float* adv, float* logit) {
    (void)be;
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    for (int64_t b = 0; b < B; ++b)
        for (int z = 0; z < Z; ++z) {
            const float* ad = adv + b * A * Z + z;
            float* lo = logit + b * A * Z + z;
            int a0 = 0;
            for (int i = 0; i < br->n; ++i) {
                // mean advantage of the branch at this atom
                float mean = 0.0f;
                for (int a = a0; a < a0 + br->size[i]; ++a) mean += ad[(int64_t)a * Z];
                mean /= (float)br->size[i];
                for (int a = a0; a < a0 + br->size[i]; ++a) lo[(int64_t)a * Z] = v[b * Z + z] + ad[(int64_t)a * Z] - mean;
                a0 += br->size[i];
            }
        }
    return VP_OK;
}

vp_status vp_cpu_dueling_backward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                  const float* d_logit, float* d_v, float* d_adv) {
    (void)be;
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    for (int64_t b = 0; b < B; ++b)
        for (int z = 0; z < Z; ++z) {
            const float* dl = d_logit + b * A * Z + z;
            float* da = d_adv + b * A * Z + z;
            float dv = 0.0f;
            int a0 = 0;
            for (int i = 0; i < br->n; ++i) {
                // every action feeds V; each advantage loses the branch mean of the gradient
                float sum = 0.0f;
                for (int a = a0; a < a0 + br->size[i]; ++a) sum += dl[(int64_t)a * Z];
                float mean = sum / (float)br->size[i];
                for (int a = a0; a < a0 + br->size[i]; ++a) da[(int64_t)a * Z] = dl[(int64_t)a * Z] - mean;
                dv += sum;
                a0 += br->size[i];
            }
            d_v[b * Z + z] = dv;
        }
    return VP_OK;
}

vp_status vp_cpu_c51_q(vp_backend* be, int64_t rows, int Z, float v_min, float v_max, const float* logp,
                       float* q) {
    (void)be;
    const float dz = (v_max - v_min) / (float)(Z - 1);
    float p[C51_Q_CHUNK];
    for (int64_t r = 0; r < rows; ++r) {
        float acc = 0.0f;
        for (int z0 = 0; z0 < Z; z0 += C51_Q_CHUNK) {
            const int m = Z - z0 < C51_Q_CHUNK ? Z - z0 : C51_Q_CHUNK;
            vp_cpu_exp_rows(logp + r * Z + z0, 0.0f, p, m);
            for (int z = z0; z < z0 + m; ++z) acc += (v_min + (float)z * dz) * p[z - z0];
        }
        q[r] = acc;
    }
    return VP_OK;
}

vp_status vp_cpu_iqn_cos(vp_backend* be, int64_t rows, int NC, const float* tau, float* out) {
    (void)be;
    for (int64_t r = 0; r < rows; ++r)
        for (int i = 0; i < NC; ++i) out[r * NC + i] = cosf(tau[r] * (float)(3.14159265358979323846 * i));
    return VP_OK;
}

vp_status vp_cpu_iqn_mix_forward(vp_backend* be, int64_t B, int T, int H, const float* h, const float* phi,
                                 float* out) {
    (void)be;
    for (int64_t b = 0; b < B; ++b)
        for (int j = 0; j < T; ++j) {
            int64_t r = (b * T + j) * H;
            for (int f = 0; f < H; ++f) out[r + f] = h[b * H + f] * phi[r + f];
        }
    return VP_OK;
}

vp_status vp_cpu_iqn_mix_backward(vp_backend* be, int64_t B, int T, int H, const float* h, const float* phi,
                                  const float* d_out, float* d_h, float* d_phi, float* p_b) {
    (void)be;
    for (int64_t b = 0; b < B; ++b)
        for (int f = 0; f < H; ++f) {
            float acc = 0.0f, pb = 0.0f, hv = h[b * H + f];
            for (int j = 0; j < T; ++j) {
                int64_t r = (b * T + j) * H + f;
                const float g = d_out[r], p = phi[r];
                acc += g * p;
                const float dp = p > 0.0f ? g * hv : 0.0f;
                d_phi[r] = dp;
                pb += dp;
            }
            d_h[b * H + f] += acc;
            p_b[b * H + f] = pb;
        }
    return VP_OK;
}

vp_status vp_cpu_iqn_embed(vp_backend* be, const vp_iqn_dims* d, const float* tau, const float* h, const float* pw,
                           const float* pb, float* cosf_out, float* phi_out, float* mix) {
    (void)be;
    VP_REQUIRE(d && tau && h && pw && pb && mix && d->batch >= 1 && d->taus >= 1 && d->cos >= 1 && d->cos <= 1024 &&
                   d->hidden >= 1,
               VP_ERR_INVALID_ARG, "cpu iqn_embed: bad arguments");
    const int NC = d->cos, H = d->hidden;
    float c[1024];
    for (int64_t r = 0; r < d->batch * d->taus; ++r) {
        const float* hb = h + (r / d->taus) * H;
        for (int i = 0; i < NC; ++i) c[i] = cosf(tau[r] * (float)(3.14159265358979323846 * i));
        for (int i = 0; cosf_out && i < NC; ++i) cosf_out[r * NC + i] = c[i];
        for (int n = 0; n < H; ++n) {
            float acc = 0.0f;
            for (int k = 0; k < NC; ++k) acc += c[k] * pw[(int64_t)n * NC + k];
            const float p = fmaxf(acc + pb[n], 0.0f);
            if (phi_out) phi_out[r * H + n] = p;
            mix[r * H + n] = hb[n] * p;
        }
    }
    return VP_OK;
}

vp_status vp_cpu_iqn_l2_backward(vp_backend* be, int64_t B, int T, int M, int A, const float* iq1, const float* dzq,
                                 const float* w2, float* d_iq1, float* p_b, float* p_w2) {
    (void)be;
    const int64_t AM = (int64_t)A * M;
    for (int64_t b = 0; b < B; ++b) {
        float* pb = p_b + b * M;
        float* pw = p_w2 + (b / VP_IQN_W2_GROUP) * AM;
        if (b % VP_IQN_W2_GROUP == 0)
            for (int64_t k = 0; k < AM; ++k) pw[k] = 0.0f;
        for (int m = 0; m < M; ++m) pb[m] = 0.0f;
        for (int j = 0; j < T; ++j) {
            const int64_t r = b * T + j;
            const float* dz = dzq + r * A;
            const float* x = iq1 + r * M;
            float* g = d_iq1 + r * M;
            // every element's sums over a in order, m innermost (contiguous rows of w2 and p_w2)
            for (int m = 0; m < M; ++m) g[m] = 0.0f;
            for (int a = 0; a < A; ++a) {
                const float d = dz[a];
                const float* wa = w2 + (int64_t)a * M;
                float* pa = pw + (int64_t)a * M;
                for (int m = 0; m < M; ++m) {
                    g[m] += d * wa[m];
                    pa[m] += d * x[m];
                }
            }
            for (int m = 0; m < M; ++m) {
                g[m] = x[m] > 0.0f ? g[m] : 0.0f;
                pb[m] += g[m];
            }
        }
    }
    return VP_OK;
}
