/* The whole-network check of the input-module tests (test_model_vsn.c, test_model_sn.c,
 * test_model_kan.c): a small network with the modules of a configuration on, its C float
 * forward against the double reference (model_input_ref.h), and its C backward against
 * central finite differences of that reference, tensor by tensor (the spectral norm's u, v
 * held at the forward's values, as PyTorch's gradient holds them). */
#ifndef VP_TEST_MODEL_INPUT_UTIL_H
#define VP_TEST_MODEL_INPUT_UTIL_H

#include "model_input_ref.h"
#include "test_model_util.h"

/* The small shapes of test_model_grad.c (F 5, H 8, ...) with window K and Mamba2 on or off. */
static inline vp_model_cfg tmi_cfg(int use_mamba, int K) {
    vp_model_cfg c = tmu_cfg((tmu_dims){.F = 5, .P = 3, .K = K, .H = 8, .head_dim = 4, .N = 3, .conv = 4,
                                        .head_hidden = 6, .Z = 7, .v_min = -2.0f, .v_max = 3.0f, .n_cos = 4,
                                        .branches = {3, 2}});
    c.encoder = use_mamba ? VP_ENCODER_MAMBA2 : VP_ENCODER_NONE;
    c.vsn_hidden = 3;
    c.kan_grid = 3;
    c.kan_order = 2;
    c.kan_range = 1.5f;
    return c;
}

/* The network, its inputs and a random linear loss over log-probs and quantiles. */
typedef struct tmi_fix {
    vp_backend* be;
    vp_model m;
    vp_model_acts* a;
    int64_t B, rows;
    int T;
    double *p, *feat, *port, *taus, *wl, *wi;
    int32_t bar[4];
    float *featf, *portf, *tausf, *wlf, *wif;
    vp_tensor features, bar_t, port_t, taus_t, wl_t, wi_t;
    ref_sn_state sn;
} tmi_fix;

/* Doubles in [lo, hi) rounded to float, into both copies. */
static inline void tmi_fill(double* d, float* f, int64_t n, uint64_t stream, double lo, double hi) {
    ref_fill(d, n, stream, lo, hi);
    ref_to_f32(f, d, n);
    ref_from_f32(d, f, n);
}

static inline int tmi_init(tmi_fix* f, const vp_model_cfg* c, uint64_t seed) {
    memset(f, 0, sizeof *f);
    if (vp_backend_cpu_init(&f->be) != VP_OK || vp_model_init(&f->m, f->be, c, seed) != VP_OK) return 0;
    f->m.precision = VP_PREC_FP32;
    f->B = 4;
    f->T = 3;
    f->rows = 9;
    if (vp_model_acts_init(&f->a, &f->m, f->B, f->T, 1) != VP_OK) return 0;
    const int64_t A = vp_model_cfg_actions(c), Z = c->n_atoms, F = c->n_features, P = c->n_portfolio;
    // perturbed parameters, so no norm weight sits at 1
    f->p = ref_alloc(f->m.n_weights);
    ref_from_f32(f->p, f->m.params.data, f->m.n_weights);
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        for (int64_t i = 0; i < pi->numel; ++i) f->p[pi->offset + i] += ref_uniform(seed, 100 + k, i, -0.2, 0.2);
    }
    ref_to_f32(f->m.params.data, f->p, f->m.n_weights);
    ref_from_f32(f->p, f->m.params.data, f->m.n_weights);
    f->feat = ref_alloc(f->rows * F);
    f->port = ref_alloc(f->B * P);
    f->taus = ref_alloc(f->B * f->T);
    f->wl = ref_alloc(f->B * A * Z);
    f->wi = ref_alloc(f->B * f->T * A);
    f->featf = (float*)calloc((size_t)(f->rows * F), sizeof(float));
    f->portf = (float*)calloc((size_t)(f->B * P), sizeof(float));
    f->tausf = (float*)calloc((size_t)(f->B * f->T), sizeof(float));
    f->wlf = (float*)calloc((size_t)(f->B * A * Z), sizeof(float));
    f->wif = (float*)calloc((size_t)(f->B * f->T * A), sizeof(float));
    // features beyond the KAN grid too (|x| up to 2 > kan_range + order h)
    tmi_fill(f->feat, f->featf, f->rows * F, 1, -2.6, 2.6);
    tmi_fill(f->port, f->portf, f->B * P, 2, -1, 1);
    tmi_fill(f->taus, f->tausf, f->B * f->T, 3, 0.02, 0.98);
    tmi_fill(f->wl, f->wlf, f->B * A * Z, 4, -1, 1);
    tmi_fill(f->wi, f->wif, f->B * f->T * A, 5, -1, 1);
    f->bar[0] = 0;
    f->bar[1] = 1;
    f->bar[2] = 8;
    f->bar[3] = 5;
    f->features = vp_tensor_2d(f->featf, VP_F32, VP_MEM_HOST, f->rows, F);
    f->bar_t = vp_tensor_1d(f->bar, VP_I32, VP_MEM_HOST, f->B);
    f->port_t = vp_tensor_2d(f->portf, VP_F32, VP_MEM_HOST, f->B, P);
    f->taus_t = vp_tensor_2d(f->tausf, VP_F32, VP_MEM_HOST, f->B, f->T);
    f->wl_t = vp_tensor_3d(f->wlf, VP_F32, VP_MEM_HOST, f->B, A, Z);
    f->wi_t = vp_tensor_3d(f->wif, VP_F32, VP_MEM_HOST, f->B, f->T, A);
    return 1;
}

static inline void tmi_free(tmi_fix* f) {
    vp_model_acts_free(f->a);
    vp_model_free(&f->m);
    vp_backend_free(f->be);
    free(f->p);
    free(f->feat);
    free(f->port);
    free(f->taus);
    free(f->wl);
    free(f->wi);
    free(f->featf);
    free(f->portf);
    free(f->tausf);
    free(f->wlf);
    free(f->wif);
}

/* The reference loss at f->p (the spectral norm's vectors as f->sn holds them). */
static inline double tmi_loss(tmi_fix* f) {
    const vp_model_cfg* c = &f->m.cfg;
    const int64_t A = vp_model_cfg_actions(c), nl = f->B * A * c->n_atoms, ni = f->B * f->T * A;
    double* logp = ref_alloc(nl);
    double* q = ref_alloc(f->B * A);
    double* zq = ref_alloc(ni);
    ref_forward_in(&f->m, f->p, f->feat, f->bar, f->port, f->taus, f->B, f->T, &f->sn, logp, q, zq);
    const double L = ref_dot(f->wl, logp, nl) + ref_dot(f->wi, zq, ni);
    free(logp);
    free(q);
    free(zq);
    return L;
}

/* Whether a parameter is a spectral-norm vector (no gradient). */
static inline int tmi_is_sn_vector(const char* name) {
    const size_t n = strlen(name);
    return n > 5 && (strcmp(name + n - 5, ".sn_u") == 0 || strcmp(name + n - 5, ".sn_v") == 0);
}

/* The C forward and backward of f's network against the reference and FD; returns the
 * worst gradient error. */
static inline double tmi_check_whole(tmi_fix* f, const char* what) {
    const vp_model_cfg* c = &f->m.cfg;
    const int64_t A = vp_model_cfg_actions(c), Z = c->n_atoms, n = f->B * A * Z, ni = f->B * f->T * A;
    vp_runtime_counters before, after;
    vp_backend_counters(f->be, &before);
    CHECK_OK(vp_model_forward(&f->m, &f->m.params, f->a, &f->features, &f->bar_t, &f->port_t, &f->taus_t, f->B));
    CHECK_OK(vp_model_backward(&f->m, &f->m.params, f->a, &f->wl_t, &f->wi_t));
    vp_backend_counters(f->be, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "%s: forward + backward allocated, copied or synchronised", what);
    // forward: the reference with a fresh power step (which it keeps for the FD below)
    double* logp = ref_alloc(n);
    double* q = ref_alloc(f->B * A);
    double* zq = ref_alloc(ni);
    double* got = ref_alloc(n);
    f->sn.use = 0;
    ref_forward_in(&f->m, f->p, f->feat, f->bar, f->port, f->taus, f->B, f->T, &f->sn, logp, q, zq);
    f->sn.use = 1;
    ref_from_f32(got, vp_model_log_probs(f->a).data, n);
    const double e1 = ref_rel_err(got, logp, n);
    ref_from_f32(got, vp_model_iqn(f->a).data, ni);
    const double e2 = ref_rel_err(got, zq, ni);
    CHECK(e1 < FWD_TOL && e2 < FWD_TOL, "%s: forward vs reference: logp %.3g iqn %.3g", what, e1, e2);
    // backward: every tensor against central differences; the sn vectors get exactly zero
    double worst = 0;
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        const float* an_f = (const float*)f->m.grads.data + pi->offset;
        if (tmi_is_sn_vector(pi->name)) {
            int zero = 1;
            for (int64_t i = 0; i < pi->numel; ++i) zero &= an_f[i] == 0.0f;
            CHECK(zero, "%s: %s has a gradient", what, pi->name);
            continue;
        }
        double* fd = ref_alloc(pi->numel);
        double* an = ref_alloc(pi->numel);
        for (int64_t i = 0; i < pi->numel; ++i) {
            double* x = &f->p[pi->offset + i];
            const double keep = *x;
            *x = keep + FD_EPS;
            const double lp = tmi_loss(f);
            *x = keep - FD_EPS;
            const double lm = tmi_loss(f);
            *x = keep;
            fd[i] = (lp - lm) / (2 * FD_EPS);
        }
        ref_from_f32(an, an_f, pi->numel);
        const double err = ref_rel_err(an, fd, pi->numel);
        double nrm = 0;
        for (int64_t i = 0; i < pi->numel; ++i) nrm += fd[i] * fd[i];
        CHECK(err < GRAD_TOL && nrm > 1e-12, "%s: %s: ||grad - fd|| / ||fd|| = %.3g (tolerance %g), ||fd||^2 %.3g", what,
              pi->name, err, GRAD_TOL, nrm);
        if (err > worst) worst = err;
        free(fd);
        free(an);
    }
    fprintf(stderr, "  %s: %d tensors, forward rel err logp %.2g iqn %.2g, worst grad rel err %.2g\n", what,
            f->m.n_params, e1, e2, worst);
    free(logp);
    free(q);
    free(zq);
    free(got);
    return worst;
}

/* Builds the network of cfg and runs tmi_check_whole on it. */
static inline void tmi_whole(const vp_model_cfg* c, uint64_t seed, const char* what) {
    tmi_fix f;
    CHECK(tmi_init(&f, c, seed), "%s: fixture: %s", what, vp_last_error());
    if (f.a) tmi_check_whole(&f, what);
    tmi_free(&f);
}

#endif /* VP_TEST_MODEL_INPUT_UTIL_H */
