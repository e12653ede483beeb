/* Helpers shared by the head-module tests (test_model_stochdepth.c, test_model_qdenoise.c):
 * a small network with perturbed parameters and its inputs (double copies beside the float
 * ones, for the reference of tests/model_ref.h), and a learner with a filled batch. Small
 * odd shapes: F = 5, P = 3, K = 5, H = 8 (Mamba2 head dim 4: 2 heads), N = 3, conv 4, head
 * hidden 6, Z = 7 on [-2, 3], branches (3, 2), 4 cosines, 3 taus, B = 4. */
#ifndef VP_TEST_HMODS_UTIL_H
#define VP_TEST_HMODS_UTIL_H

#include "learn/learner_internal.h"
#include "test_model_util.h"

/* The small configuration (modules off; the caller switches them on). */
static inline vp_model_cfg hm_cfg(void) {
    return tmu_cfg((tmu_dims){.F = 5, .P = 3, .K = 5, .H = 8, .head_dim = 4, .N = 3, .conv = 4, .head_hidden = 6,
                              .Z = 7, .v_min = -2.0f, .v_max = 3.0f, .n_cos = 4, .branches = {3, 2}});
}

enum { HM_B = 4, HM_T = 3, HM_ROWS = 9 };

/* A network, activations for a backward and its inputs. */
typedef struct hm_fixture {
    vp_backend* be;
    vp_model m;
    vp_model_acts* a;
    double* p;                   /* [n_weights] parameters (double copy of the float ones) */
    double feat[HM_ROWS * 5];    /* [rows, F] */
    double port[HM_B * 3];       /* [B, P] */
    double taus[HM_B * HM_T];    /* [B, T] */
    int32_t bar[HM_B];           /* decision bars */
    float featf[HM_ROWS * 5], portf[HM_B * 3], tausf[HM_B * HM_T];
    vp_tensor features, bar_t, port_t, taus_t;
} hm_fixture;

/* Rounds x [n] to float and back. */
static inline void hm_round(double* x, float* xf, int64_t n) {
    ref_to_f32(xf, x, n);
    ref_from_f32(x, xf, n);
}

/* Builds the fixture for c: initial parameters plus U(-0.2, 0.2) noise (so no norm weight
 * sits at 1 and no zero-initialised tensor stays 0), dt and A near the decay that matters. */
static inline int hm_fixture_init(hm_fixture* f, const vp_model_cfg* c, uint64_t seed) {
    memset(f, 0, sizeof *f);
    if (vp_backend_cpu_init(&f->be) != VP_OK || vp_model_init(&f->m, f->be, c, seed) != VP_OK ||
        vp_model_acts_init(&f->a, &f->m, HM_B, HM_T, 1) != VP_OK) {
        CHECK(0, "fixture: %s", vp_last_error());
        return 0;
    }
    f->p = ref_alloc(f->m.n_weights);
    ref_from_f32(f->p, f->m.params.data, f->m.n_weights);
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        for (int64_t i = 0; i < pi->numel; ++i) f->p[pi->offset + i] += ref_uniform(seed, 100 + k, i, -0.2, 0.2);
    }
    const char* ssm[2] = {"mamba.dt_bias", "mamba.A_log"};
    for (int k = 0; k < 2; ++k) {
        const vp_param_info* pi = vp_model_find_param(&f->m, ssm[k]);
        for (int64_t i = 0; pi && i < pi->numel; ++i) f->p[pi->offset + i] = ref_uniform(seed, 200 + k, i, -0.5, 0.5);
    }
    hm_round(f->p, (float*)f->m.params.data, f->m.n_weights);
    ref_fill(f->feat, HM_ROWS * 5, 1, -2, 2);
    ref_fill(f->port, HM_B * 3, 2, -1, 1);
    ref_fill(f->taus, HM_B * HM_T, 3, 0.02, 0.98);
    hm_round(f->feat, f->featf, HM_ROWS * 5);
    hm_round(f->port, f->portf, HM_B * 3);
    hm_round(f->taus, f->tausf, HM_B * HM_T);
    const int32_t bars[HM_B] = {0, 1, 8, 5};
    memcpy(f->bar, bars, sizeof bars);
    f->features = vp_tensor_2d(f->featf, VP_F32, VP_MEM_HOST, HM_ROWS, 5);
    f->bar_t = vp_tensor_1d(f->bar, VP_I32, VP_MEM_HOST, HM_B);
    f->port_t = vp_tensor_2d(f->portf, VP_F32, VP_MEM_HOST, HM_B, 3);
    f->taus_t = vp_tensor_2d(f->tausf, VP_F32, VP_MEM_HOST, HM_B, HM_T);
    return 1;
}

static inline void hm_fixture_free(hm_fixture* f) {
    vp_model_acts_free(f->a);
    vp_model_free(&f->m);
    vp_backend_free(f->be);
    free(f->p);
}

/* Central difference of loss(f) in element i of f->p. */
static inline double hm_fd(hm_fixture* f, int64_t i, double (*loss)(const hm_fixture*)) {
    const double keep = f->p[i];
    f->p[i] = keep + FD_EPS;
    const double lp = loss(f);
    f->p[i] = keep - FD_EPS;
    const double lm = loss(f);
    f->p[i] = keep;
    return (lp - lm) / (2 * FD_EPS);
}

/* Checks m.grads of every tensor whose name starts with `prefix` against FD of loss; returns
 * how many tensors were checked. Tensors whose FD gradient is zero are checked to be zero. */
static inline int hm_check_grads(hm_fixture* f, const char* prefix, double (*loss)(const hm_fixture*)) {
    int n = 0;
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        if (strncmp(pi->name, prefix, strlen(prefix)) != 0) continue;
        double* fd = ref_alloc(pi->numel);
        for (int64_t i = 0; i < pi->numel; ++i) fd[i] = hm_fd(f, pi->offset + i, loss);
        double nrm = 0;
        for (int64_t i = 0; i < pi->numel; ++i) nrm += fd[i] * fd[i];
        if (nrm > 1e-12) {
            tmu_check_grad(pi->name, (const float*)f->m.grads.data + pi->offset, fd, pi->numel);
        } else {
            double an = 0;
            for (int64_t i = 0; i < pi->numel; ++i) an += fabs(((const float*)f->m.grads.data)[pi->offset + i]);
            CHECK(an < 1e-7, "%s: finite differences are zero, the gradient sums to %g", pi->name, an);
        }
        free(fd);
        n++;
    }
    return n;
}

/* ---- a learner with a filled batch (as tests/test_learner.c) ------------------------------- */

enum { HL_ROWS = 23, HL_B = 5 };

/* A learner with the small network of test_learner.c and the given model switches. */
typedef struct hl_fixture {
    vp_backend* b;
    vp_learner l;
    vp_batch bt;
    float feats[HL_ROWS * 5];
} hl_fixture;

static inline vp_learner_cfg hl_cfg(float stoch_depth, int q_denoise) {
    vp_learner_cfg c = vp_learner_cfg_default();
    c.model = hm_cfg();
    c.model.window = 3;
    c.model.mamba_state = 2;
    c.model.mamba_conv = 2;
    c.model.stoch_depth = stoch_depth;
    c.model.q_denoise = q_denoise;
    c.batch = HL_B;
    c.n_taus = 3;
    c.n_target_taus = 4;
    c.adamw.lr = 1e-3f;
    c.seed = 11;
    return c;
}

static inline int hl_fixture_init(hl_fixture* f, const vp_learner_cfg* c) {
    memset(f, 0, sizeof *f);
    if (vp_backend_cpu_init(&f->b) != VP_OK || vp_learner_init(&f->l, f->b, c) != VP_OK ||
        vp_learner_batch_init(&f->l, &f->bt) != VP_OK) {
        CHECK(0, "learner fixture: %s", vp_last_error());
        return 0;
    }
    for (int i = 0; i < HL_ROWS * 5; ++i) f->feats[i] = vp_rng_normal(5, 1, (uint64_t)i);
    f->bt.features = vp_tensor_2d(f->feats, VP_F32, VP_MEM_HOST, HL_ROWS, 5);
    int32_t* bar = (int32_t*)f->bt.bar_idx.data;
    int32_t* nbar = (int32_t*)f->bt.next_bar_idx.data;
    int32_t* act = (int32_t*)f->bt.actions.data;
    float* r = (float*)f->bt.reward.data;
    float* d = (float*)f->bt.discount.data;
    float* w = (float*)f->bt.is_weight.data;
    for (int64_t i = 0; i < HL_B; ++i) {
        bar[i] = (int32_t)((7 * i + 1) % (HL_ROWS - 3));
        nbar[i] = bar[i] + 3;
        act[i * 2 + 0] = (int32_t)(i % 3);
        act[i * 2 + 1] = (int32_t)(i % 2);
        r[i] = 0.5f * (float)(i % 3) - 0.4f;
        d[i] = i == 2 ? 0.0f : 0.970299f;
        w[i] = 0.5f + 0.1f * (float)i;
    }
    for (int64_t e = 0; e < HL_B * 3; ++e) {
        ((float*)f->bt.portfolio.data)[e] = vp_rng_uniform(5, 2, (uint64_t)e) - 0.5f;
        ((float*)f->bt.next_portfolio.data)[e] = vp_rng_uniform(5, 3, (uint64_t)e) - 0.5f;
    }
    return vp_learner_draw_taus(&f->l, &f->bt) == VP_OK;
}

static inline void hl_fixture_free(hl_fixture* f) {
    vp_learner_free(&f->l);
    vp_backend_free(f->b);
}

#endif /* VP_TEST_HMODS_UTIL_H */
