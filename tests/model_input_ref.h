/* Double-precision reference of the input modules (variable selection, spectral norm, KAN),
 * written from their definitions in docs/modules.md, and the trunk and whole forward with
 * them (model_ref.h's heads and Mamba2 after it). */
#ifndef VP_MODEL_INPUT_REF_H
#define VP_MODEL_INPUT_REF_H

#include "model_ref.h"

/* The spectral norm's vectors held fixed by a gradient check (PyTorch treats u, v as
 * constants): u1 [H], v1 [F], u2 [H], v2 [H]; `use` 0 recomputes them from the parameters. */
typedef struct ref_sn_state {
    int use;
    double u[2][256], v[2][256];
    double sigma[2];
} ref_sn_state;

/* One power step of W [rows, cols] from u0: v = W^T u0 / |.|, u = W v / |.|; sigma = u^T W v. */
static inline double ref_sn_power(const double* W, int rows, int cols, const double* u0, double* u, double* v) {
    double n = 0;
    for (int j = 0; j < cols; ++j) {
        double a = 0;
        for (int i = 0; i < rows; ++i) a += W[i * cols + j] * u0[i];
        v[j] = a;
        n += a * a;
    }
    n = fmax(sqrt(n), 1e-12);
    for (int j = 0; j < cols; ++j) v[j] /= n;
    n = 0;
    for (int i = 0; i < rows; ++i) {
        double a = 0;
        for (int j = 0; j < cols; ++j) a += W[i * cols + j] * v[j];
        u[i] = a;
        n += a * a;
    }
    n = fmax(sqrt(n), 1e-12);
    for (int i = 0; i < rows; ++i) u[i] /= n;
    double s = 0;
    for (int i = 0; i < rows; ++i)
        for (int j = 0; j < cols; ++j) s += u[i] * W[i * cols + j] * v[j];
    return s;
}

/* W / sigma into out, sigma = u^T W v with st's vectors (st->use) or a fresh power step. */
static inline void ref_sn_weight(const double* W, int rows, int cols, const double* u0, ref_sn_state* st, int which,
                                 double* out) {
    double s;
    if (st && st->use) {
        s = 0;
        for (int i = 0; i < rows; ++i)
            for (int j = 0; j < cols; ++j) s += st->u[which][i] * W[i * cols + j] * st->v[which][j];
    } else {
        double u[256], v[256];
        s = ref_sn_power(W, rows, cols, u0, u, v);
        if (st) {
            memcpy(st->u[which], u, sizeof(double) * (size_t)rows);
            memcpy(st->v[which], v, sizeof(double) * (size_t)cols);
        }
    }
    if (st) st->sigma[which] = s;
    for (int e = 0; e < rows * cols; ++e) out[e] = W[e] / s;
}

/* B-spline basis j of order p at x on knots t (Cox-de Boor recursion, straight from the definition). */
static inline double ref_bspline(const double* t, int j, int p, double x) {
    if (p == 0) return (x >= t[j] && x < t[j + 1]) ? 1.0 : 0.0;
    return (x - t[j]) / (t[j + p] - t[j]) * ref_bspline(t, j, p - 1, x) +
           (t[j + p + 1] - x) / (t[j + p + 1] - t[j + 1]) * ref_bspline(t, j + 1, p - 1, x);
}

/* Variable selection: xs [R, F] from x [R, F]; weights w [R, F] (may be NULL). */
static inline void ref_vsn(const vp_model* m, const double* p, const double* x, int64_t R, double* xs, double* w) {
    const int F = m->cfg.n_features, VH = m->cfg.vsn_hidden;
    double* eta = ref_alloc(R * VH);
    double* gs = ref_alloc(R * 2 * F);
    double* pre = ref_alloc(R * F);
    ref_linear(x, R, F, ref_param(m, p, "vsn.w1"), ref_param(m, p, "vsn.b1"), VH, eta);
    for (int64_t i = 0; i < R * VH; ++i) eta[i] = eta[i] > 0 ? eta[i] : expm1(eta[i]);
    ref_linear(eta, R, VH, ref_param(m, p, "vsn.w2"), ref_param(m, p, "vsn.b2"), 2 * F, gs);
    for (int64_t r = 0; r < R; ++r)
        for (int j = 0; j < F; ++j)
            pre[r * F + j] = x[r * F + j] + gs[r * 2 * F + j] / (1.0 + exp(-gs[r * 2 * F + F + j]));
    ref_layernorm(pre, R, F, ref_param(m, p, "vsn.ln.g"), ref_param(m, p, "vsn.ln.b"), m->cfg.ln_eps);
    for (int64_t r = 0; r < R; ++r) {
        double mx = pre[r * F], s = 0;
        for (int j = 1; j < F; ++j) mx = fmax(mx, pre[r * F + j]);
        for (int j = 0; j < F; ++j) s += exp(pre[r * F + j] - mx);
        for (int j = 0; j < F; ++j) {
            const double wj = exp(pre[r * F + j] - mx) / s;
            if (w) w[r * F + j] = wj;
            xs[r * F + j] = F * wj * x[r * F + j];
        }
    }
    free(eta);
    free(gs);
    free(pre);
}

/* The KAN layer: a1 [R, H] from xs [R, F]. */
static inline void ref_kan(const vp_model* m, const double* p, const double* xs, int64_t R, double* a1) {
    const vp_model_cfg* c = &m->cfg;
    const int F = c->n_features, H = c->hidden, G = c->kan_grid, k = c->kan_order, KC = G + k;
    const double h = 2.0 * c->kan_range / G;
    double t[80];
    for (int j = 0; j <= G + 2 * k; ++j) t[j] = (j - k) * h - c->kan_range;
    const double *bw = ref_param(m, p, "kan.base_w"), *sw = ref_param(m, p, "kan.spline_w");
    const double* sc = ref_param(m, p, "kan.spline_scaler");
    for (int64_t r = 0; r < R; ++r)
        for (int o = 0; o < H; ++o) {
            double acc = 0;
            for (int i = 0; i < F; ++i) {
                const double x = xs[r * F + i];
                acc += bw[o * F + i] * x / (1.0 + exp(-x));
                for (int cc = 0; cc < KC; ++cc) acc += sw[(o * F + i) * KC + cc] * sc[o * F + i] * ref_bspline(t, cc, k, x);
            }
            a1[r * H + o] = acc;
        }
}

/* The trunk with the input modules on: h2 [B*Kt, H] as ref_trunk, sn the spectral norm's state. */
static inline void ref_trunk_in(const vp_model* m, const double* p, const double* features, const int32_t* bar,
                                int64_t B, int Kt, ref_sn_state* sn, double* h2) {
    const vp_model_cfg* c = &m->cfg;
    const int F = c->n_features, H = c->hidden;
    const int64_t R = B * Kt;
    double* x = ref_alloc(R * F);
    double* xs = ref_alloc(R * F);
    double* h1 = ref_alloc(R * H);
    double* w = ref_alloc((int64_t)H * (H > F ? H : F));
    for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < Kt; ++k) {
            int64_t t = bar[b] - Kt + 1 + k;
            if (t < 0) t = 0;
            memcpy(x + (b * Kt + k) * F, features + t * F, sizeof(double) * (size_t)F);
        }
    if (c->vsn)
        ref_vsn(m, p, x, R, xs, NULL);
    else
        memcpy(xs, x, sizeof(double) * (size_t)(R * F));
    if (c->kan) {
        ref_kan(m, p, xs, R, h1);
    } else if (c->spectral_norm) {
        ref_sn_weight(ref_param(m, p, "trunk.w1"), H, F, ref_param(m, p, "trunk.w1.sn_u"), sn, 0, w);
        ref_linear(xs, R, F, w, ref_param(m, p, "trunk.b1"), H, h1);
    } else {
        ref_linear(xs, R, F, ref_param(m, p, "trunk.w1"), ref_param(m, p, "trunk.b1"), H, h1);
    }
    ref_layernorm(h1, R, H, ref_param(m, p, "trunk.ln1.g"), ref_param(m, p, "trunk.ln1.b"), c->ln_eps);
    ref_relu(h1, R * H);
    const double* w2 = ref_param(m, p, "trunk.w2");
    if (c->spectral_norm) {
        ref_sn_weight(w2, H, H, ref_param(m, p, "trunk.w2.sn_u"), sn, 1, w);
        w2 = w;
    }
    ref_linear(h1, R, H, w2, ref_param(m, p, "trunk.b2"), H, h2);
    ref_layernorm(h2, R, H, ref_param(m, p, "trunk.ln2.g"), ref_param(m, p, "trunk.ln2.b"), c->ln_eps);
    ref_relu(h2, R * H);
    free(x);
    free(xs);
    free(h1);
    free(w);
}

/* The whole forward with the input modules: ref_forward with ref_trunk_in. */
static inline void ref_forward_in(const vp_model* m, const double* p, const double* features, const int32_t* bar,
                                  const double* port, const double* taus, int64_t B, int T, ref_sn_state* sn,
                                  double* logp, double* q, double* zq) {
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, Kt = c->encoder == VP_ENCODER_NONE ? 1 : c->window;
    double* h2 = ref_alloc(B * Kt * H);
    double* e = ref_alloc(B * H);
    ref_trunk_in(m, p, features, bar, B, Kt, sn, h2);
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

#endif /* VP_MODEL_INPUT_REF_H */
