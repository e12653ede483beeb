/* Helpers shared by the model tests (test_model_*.c): tolerances, small configurations
 * and the analytic-vs-finite-difference gradient check. */
#ifndef VP_TEST_MODEL_UTIL_H
#define VP_TEST_MODEL_UTIL_H

#include "model/model_internal.h"
#include "model_ref.h"
#include "vp_test.h"

/* Tolerances: float forward vs double reference (norm-wise), analytic vs FD gradient. */
#define FWD_TOL 1e-5
#define GRAD_TOL 1e-3
#define FD_EPS 1e-5

/* The extents of a small test model; a field left 0 keeps the default's value. */
typedef struct tmu_dims {
    int F, P, K, H;         /* features, portfolio inputs, window, trunk width */
    int head_dim, N, conv;  /* Mamba2 head width, state, conv width */
    int head_hidden, Z;     /* head MLP width, atoms */
    float v_min, v_max;     /* atom support */
    int n_cos;              /* IQN cosines */
    int branches[4];        /* choices per branch, 0-terminated (all 0: default) */
} tmu_dims;

/* vp_model_cfg_default() with the extents of `d` set. */
static inline vp_model_cfg tmu_cfg(tmu_dims d) {
    vp_model_cfg c = vp_model_cfg_default();
    if (d.F) c.n_features = d.F;
    if (d.P) c.n_portfolio = d.P;
    if (d.K) c.window = d.K;
    if (d.H) c.hidden = d.H;
    if (d.head_dim) c.mamba_head_dim = d.head_dim;
    if (d.N) c.mamba_state = d.N;
    if (d.conv) c.mamba_conv = d.conv;
    if (d.head_hidden) c.head_hidden = d.head_hidden;
    if (d.Z) c.n_atoms = d.Z;
    if (d.v_min != 0.0f) c.v_min = d.v_min;
    if (d.v_max != 0.0f) c.v_max = d.v_max;
    if (d.n_cos) c.iqn_cos = d.n_cos;
    if (d.branches[0]) {
        c.n_branches = 0;
        for (int i = 0; i < 4 && d.branches[i]; ++i) c.branch_sizes[c.n_branches++] = d.branches[i];
    }
    return c;
}

/* A small network of encoder `enc` (K 4, hidden H) with the input modules vsn, sn, kan: the span
 * tests' shapes (TLOB of two blocks, VSN hidden 3). */
static inline vp_model_cfg tmu_span_cfg(vp_model_encoder enc, int H, int vsn, int sn, int kan) {
    vp_model_cfg c = tmu_cfg((tmu_dims){.F = 5, .K = 4, .H = H, .head_dim = 4, .N = 2, .conv = 3, .head_hidden = 6,
                                        .Z = 5, .n_cos = 4});
    c.encoder = enc;
    c.tlob_blocks = 2, c.tlob_heads = 2, c.tlob_feature_heads = 1, c.tlob_mlp = 2;
    c.vsn = vsn, c.vsn_hidden = 3;
    c.spectral_norm = sn;
    c.kan = kan;
    return c;
}

/* Compares an analytic gradient an_f [n] (float) with its finite differences fd [n],
 * norm-wise, and fails when fd is all but zero; prints the error. */
static inline void tmu_check_grad(const char* what, const float* an_f, const double* fd, int64_t n) {
    double* an = ref_alloc(n);
    ref_from_f32(an, an_f, n);
    double err = ref_rel_err(an, fd, n), nrm = 0;
    for (int64_t i = 0; i < n; ++i) nrm += fd[i] * fd[i];
    CHECK(err < GRAD_TOL && nrm > 1e-12, "%s: ||grad - fd|| / ||fd|| = %.3g (tolerance %g), ||fd||^2 = %.3g", what, err,
          GRAD_TOL, nrm);
    fprintf(stderr, "    %-14s grad rel err %.2g\n", what, err);
    free(an);
}

#endif /* VP_TEST_MODEL_UTIL_H */
