/* Tests of the learner on the CPU with a small network: the step's invariants (loss parts
 * add up, priorities are the C51 losses, the Polyak update, the AdamW step counter, the
 * statistics block), no copy, allocation or sync inside a step, bit-for-bit repeatability,
 * learning on a fixed batch, phases equal to the step, tau draws and argument checks.
 * The values themselves are checked against PyTorch in test_learner_golden.c. */
#include "learn/learner_internal.h"
#include "vp_test.h"

enum { T_ROWS = 23 };

static vp_learner_cfg small_cfg(int use_mamba) {
    vp_learner_cfg c = vp_learner_cfg_default();
    c.model.n_features = 5;
    c.model.n_portfolio = 3;
    c.model.window = 3;
    c.model.hidden = 8;
    c.model.encoder = use_mamba ? VP_ENCODER_MAMBA2 : VP_ENCODER_NONE;
    c.model.mamba_state = 2;
    c.model.mamba_head_dim = 4;
    c.model.mamba_conv = 2;
    c.model.head_hidden = 6;
    c.model.n_atoms = 7;
    c.model.n_branches = 2;
    c.model.branch_sizes[0] = 2;
    c.model.branch_sizes[1] = 3;
    c.model.iqn_cos = 4;
    c.batch = 5;
    c.n_taus = 3;
    c.n_target_taus = 4;
    c.adamw.lr = 1e-3f;
    c.seed = 11;
    return c;
}

/* A learner, a filled batch and its feature matrix (host memory: the CPU backend). */
typedef struct fixture {
    vp_backend* b;
    vp_learner l;
    vp_batch bt;
    float feats[T_ROWS * 5];
    float prio[5];
    vp_tensor prio_t;
} fixture;

static int fixture_init(fixture* f, int use_mamba) {
    memset(f, 0, sizeof *f);
    vp_learner_cfg c = small_cfg(use_mamba);
    if (vp_backend_cpu_init(&f->b) != VP_OK || vp_learner_init(&f->l, f->b, &c) != VP_OK ||
        vp_learner_batch_init(&f->l, &f->bt) != VP_OK) {
        CHECK(0, "fixture: %s", vp_last_error());
        return 0;
    }
    // Features and batch from a fixed Philox stream.
    for (int i = 0; i < T_ROWS * 5; ++i) f->feats[i] = vp_rng_normal(5, 1, (uint64_t)i);
    f->bt.features = vp_tensor_2d(f->feats, VP_F32, VP_MEM_HOST, T_ROWS, 5);
    const int64_t B = c.batch;
    int32_t* bar = (int32_t*)f->bt.bar_idx.data;
    int32_t* nbar = (int32_t*)f->bt.next_bar_idx.data;
    int32_t* act = (int32_t*)f->bt.actions.data;
    float* r = (float*)f->bt.reward.data;
    float* d = (float*)f->bt.discount.data;
    float* w = (float*)f->bt.is_weight.data;
    for (int64_t i = 0; i < B; ++i) {
        bar[i] = (int32_t)((7 * i + 1) % (T_ROWS - 3));
        nbar[i] = bar[i] + 3;
        act[i * 2 + 0] = (int32_t)(i % 2);
        act[i * 2 + 1] = (int32_t)(i % 3);
        r[i] = 0.5f * (float)(i % 3) - 0.4f;
        d[i] = i == 2 ? 0.0f : 0.970299f;
        w[i] = 0.5f + 0.1f * (float)i;
    }
    for (int64_t e = 0; e < B * 3; ++e) {
        ((float*)f->bt.portfolio.data)[e] = vp_rng_uniform(5, 2, (uint64_t)e) - 0.5f;
        ((float*)f->bt.next_portfolio.data)[e] = vp_rng_uniform(5, 3, (uint64_t)e) - 0.5f;
    }
    f->prio_t = vp_tensor_1d(f->prio, VP_F32, VP_MEM_HOST, B);
    return vp_learner_draw_taus(&f->l, &f->bt) == VP_OK;
}

static void fixture_free(fixture* f) {
    vp_learner_free(&f->l);
    vp_backend_free(f->b);
}

static void test_init_state(void) {
    fixture f;
    if (!fixture_init(&f, 1)) return;
    const vp_learner* l = &f.l;
    CHECK(memcmp(l->target.data, l->model.params.data, sizeof(float) * (size_t)l->model.n_weights) == 0,
          "target starts equal to the online parameters");
    CHECK(*(const int32_t*)l->step.data == 0, "step counter starts at 0");
    for (int s = 0; s < VP_STAT_COUNT; ++s) CHECK(l->stats_host[s] == 0.0f, "stat %d starts at 0", s);
    CHECK(l->stats_host == (const float*)l->stats.data, "CPU: the mapped alias is the same memory");
    fixture_free(&f);
}

/* One step: loss parts, priorities, Polyak, step counter, no runtime calls. */
static void test_step_invariants(void) {
    fixture f;
    if (!fixture_init(&f, 1)) return;
    vp_learner* l = &f.l;
    const int64_t W = l->model.n_weights;
    float* before = (float*)malloc(sizeof(float) * (size_t)W);
    float* target_before = (float*)malloc(sizeof(float) * (size_t)W);
    memcpy(before, l->model.params.data, sizeof(float) * (size_t)W);
    // Make the target differ from the online network first, so Polyak is visible.
    float* tg = (float*)l->target.data;
    for (int64_t i = 0; i < W; ++i) tg[i] += 0.01f * vp_rng_normal(9, 9, (uint64_t)i);
    memcpy(target_before, tg, sizeof(float) * (size_t)W);
    vp_runtime_counters c0, c1;
    vp_backend_counters(f.b, &c0);
    CHECK_OK(vp_learner_step(l, &f.bt, &f.prio_t));
    vp_backend_counters(f.b, &c1);
    CHECK(c0.copies == c1.copies && c0.allocs == c1.allocs && c0.syncs == c1.syncs,
          "a step made %lld copies, %lld allocations, %lld syncs", (long long)(c1.copies - c0.copies),
          (long long)(c1.allocs - c0.allocs), (long long)(c1.syncs - c0.syncs));
    const float* st = l->stats_host;
    CHECK(isfinite(st[VP_STAT_LOSS]) && st[VP_STAT_LOSS] > 0.0f, "loss %g", (double)st[VP_STAT_LOSS]);
    CHECK_NEAR(st[VP_STAT_LOSS], st[VP_STAT_C51] + st[VP_STAT_IQN], 1e-6, 1e-6);
    CHECK(st[VP_STAT_IQN] > 0.0f && st[VP_STAT_C51] > 0.0f, "both parts are positive");
    CHECK(st[VP_STAT_GRAD_NORM] > 0.0f && st[VP_STAT_NAN] == 0.0f, "grad norm %g, NaN flag %g",
          (double)st[VP_STAT_GRAD_NORM], (double)st[VP_STAT_NAN]);
    CHECK(st[VP_STAT_Q_MAX] >= st[VP_STAT_Q_MEAN], "Q max below Q mean");
    CHECK(*(const int32_t*)l->step.data == 1, "step counter %d", *(const int32_t*)l->step.data);
    // Priorities are the per-sample C51 losses; their weighted mean is the C51 part.
    const float* c51 = (const float*)l->scratch->c51_loss.data;
    const float* w = (const float*)f.bt.is_weight.data;
    double wm = 0.0;
    for (int i = 0; i < 5; ++i) {
        CHECK(f.prio[i] == c51[i] && f.prio[i] > 0.0f, "priority %d = %g, c51 %g", i, (double)f.prio[i],
              (double)c51[i]);
        wm += (double)w[i] * c51[i] / 5.0;
    }
    CHECK_NEAR(st[VP_STAT_C51], wm, 1e-6, 1e-5);
    // Parameters moved; the target moved by tau towards the new parameters.
    const float* p = (const float*)l->model.params.data;
    const float tau = l->cfg.polyak_tau;
    int64_t moved = 0, n_real = 0;
    double err = 0.0;
    for (int k = 0; k < l->model.n_params; ++k) {
        const vp_param_info* pi = &l->model.info[k];
        n_real += pi->numel;
        for (int64_t i = pi->offset; i < pi->offset + pi->numel; ++i) moved += p[i] != before[i];
    }
    for (int64_t i = 0; i < W; ++i)
        err = fmax(err, fabs((double)tg[i] - ((1.0 - tau) * target_before[i] + tau * p[i])));
    CHECK(moved > n_real * 3 / 4, "only %lld of %lld parameters moved", (long long)moved, (long long)n_real);
    CHECK(err < 1e-6, "Polyak update off by %g", err);
    // The step counter advances each step; a second step is finite too.
    CHECK_OK(vp_learner_draw_taus(l, &f.bt));
    CHECK_OK(vp_learner_step(l, &f.bt, NULL));
    CHECK(*(const int32_t*)l->step.data == 2 && isfinite(st[VP_STAT_LOSS]), "second step");
    free(before);
    free(target_before);
    fixture_free(&f);
}

/* Same seed, same batch: the same bits; the phases in order are the step. */
static void test_repeatable_and_phases(void) {
    fixture a, b2;
    if (!fixture_init(&a, 1) || !fixture_init(&b2, 1)) return;
    CHECK_OK(vp_learner_step(&a.l, &a.bt, &a.prio_t));
    for (int ph = 0; ph < VP_PHASE_COUNT; ++ph)
        CHECK_OK(vp_learner_run_phase(&b2.l, (vp_learner_phase)ph, &b2.bt, &b2.prio_t));
    size_t bytes = sizeof(float) * (size_t)a.l.model.n_weights;
    CHECK(memcmp(a.l.model.params.data, b2.l.model.params.data, bytes) == 0, "parameters differ");
    CHECK(memcmp(a.l.model.grads.data, b2.l.model.grads.data, bytes) == 0, "gradients differ");
    CHECK(memcmp(a.l.target.data, b2.l.target.data, bytes) == 0, "targets differ");
    CHECK(memcmp(a.l.stats_host, b2.l.stats_host, sizeof(float) * VP_STAT_COUNT) == 0, "statistics differ");
    CHECK(memcmp(a.prio, b2.prio, sizeof a.prio) == 0, "priorities differ");
    CHECK(strcmp(vp_learner_phase_name(VP_PHASE_OPTIM), "optimiser") == 0, "phase name");
    CHECK_STATUS(vp_learner_run_phase(&a.l, VP_PHASE_COUNT, &a.bt, NULL), VP_ERR_INVALID_ARG, "bad phase");
    fixture_free(&a);
    fixture_free(&b2);
}

/* Repeated steps on one batch lower its loss (with and without Mamba2). */
static void test_learns_fixed_batch(void) {
    for (int mb = 0; mb <= 1; ++mb) {
        fixture f;
        if (!fixture_init(&f, mb)) return;
        CHECK_OK(vp_learner_set_control(&f.l, VP_CTL_LR, 5e-3f));
        CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
        const float first = f.l.stats_host[VP_STAT_LOSS];
        for (int s = 0; s < 60; ++s) CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
        const float last = f.l.stats_host[VP_STAT_LOSS];
        CHECK(last < 0.85f * first, "mamba %d: loss %g -> %g did not fall", mb, (double)first, (double)last);
        CHECK(f.l.stats_host[VP_STAT_NAN_STEPS] == 0.0f, "NaN steps counted");
        fixture_free(&f);
    }
}

/* Taus come fresh with each step counter value and stay in (0, 1). */
static void test_draw_taus(void) {
    fixture f;
    if (!fixture_init(&f, 1)) return;
    float t0[15], t1[15], g0[20];
    memcpy(t0, f.bt.taus.data, sizeof t0);
    memcpy(g0, f.bt.target_taus.data, sizeof g0);
    CHECK(memcmp(t0, g0, sizeof t0) != 0, "online and target taus share a stream");
    CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
    CHECK_OK(vp_learner_draw_taus(&f.l, &f.bt));
    memcpy(t1, f.bt.taus.data, sizeof t1);
    int same = 0;
    for (int i = 0; i < 15; ++i) {
        same += t0[i] == t1[i];
        CHECK(t1[i] > 0.0f && t1[i] < 1.0f, "tau %g", (double)t1[i]);
    }
    CHECK(same == 0, "%d taus repeat after a step", same);
    fixture_free(&f);
}

static void test_bad_arguments(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_learner l;
    vp_learner_cfg c = small_cfg(1);
    c.clip_norm = 0.0f;
    CHECK_STATUS(vp_learner_init(&l, b, &c), VP_ERR_INVALID_ARG, "clip_norm");
    c = small_cfg(1);
    c.polyak_tau = 1.5f;
    CHECK_STATUS(vp_learner_init(&l, b, &c), VP_ERR_INVALID_ARG, "polyak_tau");
    c = small_cfg(1);
    c.n_target_taus = 0;
    CHECK_STATUS(vp_learner_init(&l, b, &c), VP_ERR_INVALID_ARG, "n_target_taus");
    c = small_cfg(1);
    c.model.hidden = 6;
    CHECK_STATUS(vp_learner_init(&l, b, &c), VP_ERR_INVALID_ARG, "mamba_head_dim");
    vp_backend_free(b);
    fixture f;
    if (!fixture_init(&f, 1)) return;
    vp_batch bad = f.bt;
    bad.portfolio = vp_tensor_2d(bad.portfolio.data, VP_F32, VP_MEM_HOST, 5, 2);
    CHECK_STATUS(vp_learner_step(&f.l, &bad, NULL), VP_ERR_SHAPE, "portfolio");
    bad = f.bt;
    bad.taus = vp_tensor_2d(bad.taus.data, VP_F32, VP_MEM_HOST, 3, 5);
    CHECK_STATUS(vp_learner_step(&f.l, &bad, NULL), VP_ERR_SHAPE, "taus");
    bad = f.bt;
    bad.actions.dtype = VP_F32;
    CHECK_STATUS(vp_learner_step(&f.l, &bad, NULL), VP_ERR_INVALID_ARG, "actions");
    vp_batch second;
    CHECK_STATUS(vp_learner_batch_init(&f.l, &second), VP_ERR_STATE, "already taken");
    CHECK_STATUS(vp_learner_step(NULL, &f.bt, NULL), VP_ERR_INVALID_ARG, "learner");
    fixture_free(&f);
}

int main(void) {
    RUN_TEST(test_init_state);
    RUN_TEST(test_step_invariants);
    RUN_TEST(test_repeatable_and_phases);
    RUN_TEST(test_learns_fixed_batch);
    RUN_TEST(test_draw_taus);
    RUN_TEST(test_bad_arguments);
    return vpt_finish();
}
