/* A double-precision reference of the agent network (SPEC section 4), written with plain
 * loops from the specification, for the model tests: the C float forward is compared
 * with it, and its central finite differences check the analytic backward. Parameters
 * are read by name through the model's table. Also the test helpers those checks share. */
#ifndef VP_MODEL_REF_H
#define VP_MODEL_REF_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/mops.h"
#include "vulpes/model.h"
#include "vulpes/rng.h"

/* ---- helpers ------------------------------------------------------------------------- */

/* calloc that aborts the test program when memory runs out. */
static inline double* ref_alloc(int64_t n) {
    double* p = (double*)calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) {
        fprintf(stderr, "model_ref: out of memory\n");
        exit(2);
    }
    return p;
}

/* Uniform in [lo, hi) from a Philox stream (tests own their inputs). */
static inline double ref_uniform(uint64_t seed, uint64_t stream, uint64_t i, double lo, double hi) {
    return lo + (hi - lo) * (double)vp_rng_uniform(seed, stream, i);
}

/* Fills x [n] with U(lo, hi) from a stream. */
static inline void ref_fill(double* x, int64_t n, uint64_t stream, double lo, double hi) {
    for (int64_t i = 0; i < n; ++i) x[i] = ref_uniform(1234, stream, (uint64_t)i, lo, hi);
}

/* ||a - b|| / ||b|| over n elements (||b|| floored at 1e-30). */
static inline double ref_rel_err(const double* a, const double* b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
        num += (a[i] - b[i]) * (a[i] - b[i]);
        den += b[i] * b[i];
    }
    return sqrt(num) / fmax(sqrt(den), 1e-30);
}

/* A loss of the inputs a context points to. */
typedef double (*ref_loss_fn)(void* ctx);

/* g [n] = central differences (step eps) of loss(ctx) in each element of x [n] (which the
 * loss reads through ctx); x is restored. */
static inline void ref_fd(ref_loss_fn loss, void* ctx, double* x, int64_t n, double eps, double* g) {
    for (int64_t i = 0; i < n; ++i) {
        double keep = x[i];
        x[i] = keep + eps;
        double lp = loss(ctx);
        x[i] = keep - eps;
        double lm = loss(ctx);
        x[i] = keep;
        g[i] = (lp - lm) / (2 * eps);
    }
}

/* sum(w * y) over n elements. */
static inline double ref_dot(const double* w, const double* y, int64_t n) {
    double s = 0;
    for (int64_t i = 0; i < n; ++i) s += w[i] * y[i];
    return s;
}

/* Parameter `name` inside the double copy p of the flat buffer; aborts when absent. */
static inline const double* ref_param(const vp_model* m, const double* p, const char* name) {
    const vp_param_info* info = vp_model_find_param(m, name);
    if (!info) {
        fprintf(stderr, "model_ref: parameter %s is missing from the table\n", name);
        exit(2);
    }
    return p + info->offset;
}

/* ---- layers ---------------------------------------------------------------------------- */

/* y [rows, out] = x [rows, in] W^T + b (b may be NULL), W [out, in]. */
static inline void ref_linear(const double* x, int64_t rows, int in, const double* W, const double* b, int out,
                              double* y) {
    for (int64_t r = 0; r < rows; ++r)
        for (int o = 0; o < out; ++o) {
            double acc = b ? b[o] : 0.0;
            for (int i = 0; i < in; ++i) acc += x[r * in + i] * W[(int64_t)o * in + i];
            y[r * out + o] = acc;
        }
}

static inline void ref_relu(double* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = x[i] > 0 ? x[i] : 0.0;
}

static inline double ref_silu(double x) { return x / (1.0 + exp(-x)); }

static inline double ref_softplus(double x) { return x > 30 ? x : log1p(exp(x)); }

/* LayerNorm per row of x [rows, n] (biased variance), in place. */
static inline void ref_layernorm(double* x, int64_t rows, int n, const double* g, const double* b, double eps) {
    for (int64_t r = 0; r < rows; ++r) {
        double* v = x + r * n;
        double mean = 0, var = 0;
        for (int i = 0; i < n; ++i) mean += v[i];
        mean /= n;
        for (int i = 0; i < n; ++i) var += (v[i] - mean) * (v[i] - mean);
        var /= n;
        double rstd = 1.0 / sqrt(var + eps);
        for (int i = 0; i < n; ++i) v[i] = (v[i] - mean) * rstd * g[i] + b[i];
    }
}

/* ---- trunk ----------------------------------------------------------------------------- */

/* h2 [B*Kt, H] of the windows ending at bar[b] (rows below 0 read row 0). */
static inline void ref_trunk(const vp_model* m, const double* p, const double* features, const int32_t* bar,
                             int64_t B, int Kt, double* h2) {
    const vp_model_cfg* c = &m->cfg;
    const int F = c->n_features, H = c->hidden;
    const int64_t R = B * Kt;
    double* x = ref_alloc(R * F);
    double* h1 = ref_alloc(R * H);
    for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < Kt; ++k) {
            int64_t t = bar[b] - Kt + 1 + k;
            if (t < 0) t = 0;
            memcpy(x + (b * Kt + k) * F, features + t * F, sizeof(double) * (size_t)F);
        }
    ref_linear(x, R, F, ref_param(m, p, "trunk.w1"), ref_param(m, p, "trunk.b1"), H, h1);
    ref_layernorm(h1, R, H, ref_param(m, p, "trunk.ln1.g"), ref_param(m, p, "trunk.ln1.b"), c->ln_eps);
    ref_relu(h1, R * H);
    ref_linear(h1, R, H, ref_param(m, p, "trunk.w2"), ref_param(m, p, "trunk.b2"), H, h2);
    ref_layernorm(h2, R, H, ref_param(m, p, "trunk.ln2.g"), ref_param(m, p, "trunk.ln2.b"), c->ln_eps);
    ref_relu(h2, R * H);
    free(x);
    free(h1);
}

/* ---- Mamba2 ------------------------------------------------------------------------------ */

/* Causal depthwise conv + bias + SiLU over every channel and step of each window.
 * xbcdt [B*K, L] (channels are its first H + 2N columns), w [H+2N, CW]; out [B*K, H+2N]. */
static inline void ref_conv(const vp_mamba_dims* d, const double* xbcdt, const double* w, const double* bias,
                            double* out) {
    const int K = d->window, CH = d->hidden + 2 * d->state, L = CH + d->heads;
    for (int64_t b = 0; b < d->batch; ++b)
        for (int t = 0; t < K; ++t)
            for (int ch = 0; ch < CH; ++ch) {
                double acc = bias[ch];
                for (int j = 0; j < d->conv; ++j) {
                    int s = t - (d->conv - 1) + j;
                    if (s >= 0) acc += w[ch * d->conv + j] * xbcdt[(b * K + s) * L + ch];
                }
                out[(b * K + t) * CH + ch] = ref_silu(acc);
            }
}

/* Selective scan over each window; y [B, H] at the last step. conv [B*K, H+2N] holds
 * x, B, C after the conv; dt_raw is column H+2N+h of xbcdt [B*K, L]. */
static inline void ref_scan(const vp_mamba_dims* d, const double* conv, const double* xbcdt, const double* dt_bias,
                            const double* A_log, const double* D, double* y) {
    const int K = d->window, H = d->hidden, N = d->state, CH = H + 2 * N, L = CH + d->heads;
    double* s = ref_alloc(N);
    for (int64_t b = 0; b < d->batch; ++b)
        for (int hd = 0; hd < d->heads; ++hd) {
            double A = -exp(A_log[hd]);
            for (int p = 0; p < d->head_dim; ++p) {
                int col = hd * d->head_dim + p;
                memset(s, 0, sizeof(double) * (size_t)N);
                for (int t = 0; t < K; ++t) {
                    const double* row = conv + (b * K + t) * CH;
                    double dt = ref_softplus(xbcdt[(b * K + t) * L + CH + hd] + dt_bias[hd]);
                    for (int n = 0; n < N; ++n) s[n] = exp(dt * A) * s[n] + dt * row[col] * row[H + n];
                }
                const double* last = conv + (b * K + K - 1) * CH;
                double acc = D[hd] * last[col];
                for (int n = 0; n < N; ++n) acc += s[n] * last[H + N + n];
                y[b * H + col] = acc;
            }
        }
    free(s);
}

/* Gated RMSNorm: out [B, H] = RMSNorm(y * silu(z)) * g. */
static inline void ref_gate(int64_t B, int H, const double* y, const double* z, const double* g, double eps,
                            double* out) {
    for (int64_t b = 0; b < B; ++b) {
        double ms = 0;
        for (int i = 0; i < H; ++i) {
            double v = y[b * H + i] * ref_silu(z[b * H + i]);
            out[b * H + i] = v;
            ms += v * v;
        }
        double r = 1.0 / sqrt(ms / H + eps);
        for (int i = 0; i < H; ++i) out[b * H + i] *= r * g[i];
    }
}

/* The Mamba2 extents of a configuration. */
static inline vp_mamba_dims ref_dims(const vp_model_cfg* c, int64_t B) {
    vp_mamba_dims d = {B, c->window, c->hidden, c->mamba_state, c->hidden / c->mamba_head_dim, c->mamba_head_dim,
                       c->mamba_conv};
    return d;
}

/* e [B, H] = h2_K + out_proj(gated RMSNorm of the scan) from h2 [B*K, H]. */
static inline void ref_mamba(const vp_model* m, const double* p, const double* h2, int64_t B, double* e) {
    const vp_model_cfg* c = &m->cfg;
    const vp_mamba_dims d = ref_dims(c, B);
    const int K = c->window, H = c->hidden, N = c->mamba_state, L = 2 * H + 2 * N + d.heads;
    double* proj = ref_alloc(B * K * L);
    double* conv = ref_alloc(B * K * (H + 2 * N));
    double* y = ref_alloc(B * H);
    double* z = ref_alloc(B * H);
    double* yn = ref_alloc(B * H);
    // full in_proj at every step: z, x, B, C, dt (z is used at the last step)
    ref_linear(h2, B * K, H, ref_param(m, p, "mamba.in_proj.w"), NULL, L, proj);
    for (int64_t b = 0; b < B; ++b) memcpy(z + b * H, proj + (b * K + K - 1) * L, sizeof(double) * (size_t)H);
    double* xbcdt = ref_alloc(B * K * (L - H));
    for (int64_t r = 0; r < B * K; ++r) memcpy(xbcdt + r * (L - H), proj + r * L + H, sizeof(double) * (size_t)(L - H));
    ref_conv(&d, xbcdt, ref_param(m, p, "mamba.conv.w"), ref_param(m, p, "mamba.conv.b"), conv);
    ref_scan(&d, conv, xbcdt, ref_param(m, p, "mamba.dt_bias"), ref_param(m, p, "mamba.A_log"),
             ref_param(m, p, "mamba.D"), y);
    ref_gate(B, H, y, z, ref_param(m, p, "mamba.norm.g"), c->rms_eps, yn);
    ref_linear(yn, B, H, ref_param(m, p, "mamba.out_proj.w"), NULL, H, e);
    for (int64_t b = 0; b < B; ++b)
        for (int i = 0; i < H; ++i) e[b * H + i] += h2[(b * K + K - 1) * H + i];
    free(proj);
    free(conv);
    free(y);
    free(z);
    free(yn);
    free(xbcdt);
}

/* ---- heads ------------------------------------------------------------------------------- */

/* Dueling combine, log_softmax over atoms and Q: v [B, Z], adv [B, A*Z] -> logp [B, A, Z], q [B, A]. */
static inline void ref_combine(const vp_model_cfg* c, int64_t B, const double* v, const double* adv, double* logp,
                               double* q) {
    const int Z = c->n_atoms, A = vp_model_cfg_actions(c);
    for (int64_t b = 0; b < B; ++b) {
        int a0 = 0;
        for (int br = 0; br < c->n_branches; ++br) {
            int n = c->branch_sizes[br];
            for (int a = a0; a < a0 + n; ++a) {
                double* lo = logp + (b * A + a) * Z;
                for (int z = 0; z < Z; ++z) {
                    double mean = 0;
                    for (int a2 = a0; a2 < a0 + n; ++a2) mean += adv[(b * A + a2) * Z + z];
                    lo[z] = v[b * Z + z] + adv[(b * A + a) * Z + z] - mean / n;
                }
                double mx = lo[0], sum = 0, qq = 0;
                for (int z = 1; z < Z; ++z) mx = fmax(mx, lo[z]);
                for (int z = 0; z < Z; ++z) sum += exp(lo[z] - mx);
                for (int z = 0; z < Z; ++z) {
                    lo[z] -= mx + log(sum);
                    qq += (c->v_min + (c->v_max - c->v_min) * z / (Z - 1.0)) * exp(lo[z]);
                }
                q[b * A + a] = qq;
            }
            a0 += n;
        }
    }
}

/* IQN: h [B, H], taus [B, T] -> out [B*T, A]. */
static inline void ref_iqn(const vp_model* m, const double* p, const double* h, const double* taus, int64_t B, int T,
                           double* out) {
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, NC = c->iqn_cos, HH = c->head_hidden, A = vp_model_cfg_actions(c);
    const int64_t Q = B * T;
    double* cs = ref_alloc(Q * NC);
    double* phi = ref_alloc(Q * H);
    double* l1 = ref_alloc(Q * HH);
    for (int64_t r = 0; r < Q; ++r)
        for (int i = 0; i < NC; ++i) cs[r * NC + i] = cos(3.14159265358979323846 * i * taus[r]);
    ref_linear(cs, Q, NC, ref_param(m, p, "iqn.phi.w"), ref_param(m, p, "iqn.phi.b"), H, phi);
    ref_relu(phi, Q * H);
    for (int64_t r = 0; r < Q; ++r)
        for (int i = 0; i < H; ++i) phi[r * H + i] *= h[(r / T) * H + i];
    ref_linear(phi, Q, H, ref_param(m, p, "iqn.l1.w"), ref_param(m, p, "iqn.l1.b"), HH, l1);
    ref_relu(l1, Q * HH);
    ref_linear(l1, Q, HH, ref_param(m, p, "iqn.l2.w"), ref_param(m, p, "iqn.l2.b"), A, out);
    free(cs);
    free(phi);
    free(l1);
}

/* Heads from e [B, H]: logp [B, A, Z], q [B, A], and zq [B*T, A] when taus is not NULL. */
static inline void ref_heads(const vp_model* m, const double* p, const double* e, const double* port,
                             const double* taus, int64_t B, int T, double* logp, double* q, double* zq) {
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, HH = c->head_hidden, Z = c->n_atoms, A = vp_model_cfg_actions(c);
    double* h = ref_alloc(B * H);
    double* hid = ref_alloc(B * HH);
    double* v = ref_alloc(B * Z);
    double* adv = ref_alloc(B * A * Z);
    ref_linear(port, B, c->n_portfolio, ref_param(m, p, "port.w"), ref_param(m, p, "port.b"), H, h);
    for (int64_t i = 0; i < B * H; ++i) h[i] += e[i];
    ref_linear(h, B, H, ref_param(m, p, "c51.v1.w"), ref_param(m, p, "c51.v1.b"), HH, hid);
    ref_relu(hid, B * HH);
    ref_linear(hid, B, HH, ref_param(m, p, "c51.v2.w"), ref_param(m, p, "c51.v2.b"), Z, v);
    ref_linear(h, B, H, ref_param(m, p, "c51.a1.w"), ref_param(m, p, "c51.a1.b"), HH, hid);
    ref_relu(hid, B * HH);
    ref_linear(hid, B, HH, ref_param(m, p, "c51.a2.w"), ref_param(m, p, "c51.a2.b"), A * Z, adv);
    ref_combine(c, B, v, adv, logp, q);
    if (taus) ref_iqn(m, p, h, taus, B, T, zq);
    free(h);
    free(hid);
    free(v);
    free(adv);
}

#include "tlob_ref.h"

/* The whole forward; features [T_rows, F], bar [B], port [B, P], taus [B, T] or NULL. */
static inline void ref_forward(const vp_model* m, const double* p, const double* features, const int32_t* bar,
                               const double* port, const double* taus, int64_t B, int T, double* logp, double* q,
                               double* zq) {
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, Kt = c->encoder == VP_ENCODER_NONE ? 1 : c->window;
    double* h2 = ref_alloc(B * Kt * H);
    double* e = ref_alloc(B * H);
    ref_trunk(m, p, features, bar, B, Kt, h2);
    if (c->encoder == VP_ENCODER_MAMBA2)
        ref_mamba(m, p, h2, B, e);
    else if (c->encoder == VP_ENCODER_TLOB)
        ref_tlob(m, p, h2, B, e);
    else
        memcpy(e, h2, sizeof(double) * (size_t)(B * H));
    ref_heads(m, p, e, port, taus, B, T, logp, q, zq);
    free(h2);
    free(e);
}

/* ---- host copies of tensors (CPU backend: memory is host memory) ------------------------ */

/* Doubles from f32 host memory. */
static inline void ref_from_f32(double* dst, const void* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) dst[i] = ((const float*)src)[i];
}

/* f32 host memory from doubles. */
static inline void ref_to_f32(void* dst, const double* src, int64_t n) {
    for (int64_t i = 0; i < n; ++i) ((float*)dst)[i] = (float)src[i];
}

#endif /* VP_MODEL_REF_H */
