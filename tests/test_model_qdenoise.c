/* The Q-denoise refinement on the CPU: its loss kernel on hand values; the refined Q of the
 * whole network against the double reference; its backward against finite differences (the
 * refinement's tensors of the full loss, the others of the loss without it: its input is
 * detached), with the C51 and IQN outputs and gradients bit for bit those of the network
 * without it; the zero-initialised output layer starts as the identity; the one-sample
 * forward refines as the batch forward does; the learner keeps the C51 and IQN part of its
 * step exact and lowers the refinement's loss on a fixed batch. */
#include "model/hmops.h"
#include "test_hmods_util.h"

static void test_loss_hand_values(void) {
    // one sample, branches (3, 2), Z = 3 atoms on [-1, 1]: targets y = 0 and y = 1
    const vp_branch_map br = {2, {3, 2}};
    const float proj[6] = {0.25f, 0.5f, 0.25f, 0.0f, 0.0f, 1.0f};
    const int32_t act[2] = {1, 0};
    const float w = 0.5f, q[5] = {0.5f, 1.0f, 2.0f, 3.0f, -1.0f};
    float loss, dq[5];
    CHECK_OK(vp_hcpu_qd_loss(NULL, 1, 3, -1.0f, 1.0f, &br, proj, act, &w, q, &loss, dq));
    // residuals 1 - 0 and 3 - 1: loss (0.5 + 2) / 2; d q = w / (B nb) r at the taken heads
    const float want[5] = {0.0f, 0.25f, 0.0f, 0.5f, 0.0f};
    CHECK(loss == 1.25f, "loss %.9g, want 1.25", loss);
    CHECK(memcmp(dq, want, sizeof dq) == 0, "d_q = %g %g %g %g %g", dq[0], dq[1], dq[2], dq[3], dq[4]);
    const int32_t bad[2] = {3, 0};
    CHECK_OK(vp_hcpu_qd_loss(NULL, 1, 3, -1.0f, 1.0f, &br, proj, bad, &w, q, &loss, dq));
    CHECK(isnan(loss), "an action outside its branch gave loss %g", loss);
}

/* Refined Q [B, A] of the reference from its C51 q [B, A]. */
static void ref_refine(const hm_fixture* f, const double* q, double* out) {
    const vp_model* m = &f->m;
    const int A = vp_model_cfg_actions(&m->cfg);
    double* h = ref_alloc(HM_B * 2 * A);
    ref_linear(q, HM_B, A, ref_param(m, f->p, "qdenoise.w1"), ref_param(m, f->p, "qdenoise.b1"), 2 * A, h);
    ref_relu(h, HM_B * 2 * A);
    ref_linear(h, HM_B, 2 * A, ref_param(m, f->p, "qdenoise.w2"), ref_param(m, f->p, "qdenoise.b2"), A, out);
    for (int64_t i = 0; i < HM_B * A; ++i) out[i] += q[i];
    free(h);
}

static double *g_wl, *g_wi, *g_wq;

/* sum(wl logp) + sum(wi zq) (+ sum(wq q_refined) when `refined`). */
static double loss_of(const hm_fixture* f, int refined) {
    const vp_model_cfg* c = &f->m.cfg;
    const int A = vp_model_cfg_actions(c), Z = c->n_atoms;
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* qr = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    ref_forward(&f->m, f->p, f->feat, f->bar, f->port, f->taus, HM_B, HM_T, logp, q, zq);
    double L = ref_dot(g_wl, logp, HM_B * A * Z) + ref_dot(g_wi, zq, HM_B * HM_T * A);
    if (refined) {
        ref_refine(f, q, qr);
        L += ref_dot(g_wq, qr, HM_B * A);
    }
    free(logp);
    free(q);
    free(qr);
    free(zq);
    return L;
}
static double loss_full(const hm_fixture* f) { return loss_of(f, 1); }
static double loss_detached(const hm_fixture* f) { return loss_of(f, 0); }

static void test_forward_and_grads(void) {
    vp_model_cfg c = hm_cfg(), off = hm_cfg();
    c.q_denoise = 1;
    hm_fixture f, g;
    if (!hm_fixture_init(&f, &c, 41) || !hm_fixture_init(&g, &off, 41)) return;
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    CHECK(f.m.n_params == g.m.n_params + 4 && vp_model_find_param(&f.m, "qdenoise.w2") != NULL, "tensors: %d and %d",
          f.m.n_params, g.m.n_params);
    CHECK(memcmp(f.m.params.data, g.m.params.data, sizeof(float) * (size_t)g.m.n_weights) == 0,
          "the shared parameters differ");
    // loss weights; the refinement's enters the backward as d q
    float wlf[HM_B * 5 * 7], wif[HM_B * HM_T * 5], wqf[HM_B * 5];
    g_wl = ref_alloc(HM_B * A * Z);
    g_wi = ref_alloc(HM_B * HM_T * A);
    g_wq = ref_alloc(HM_B * A);
    ref_fill(g_wl, HM_B * A * Z, 4, -1, 1);
    ref_fill(g_wi, HM_B * HM_T * A, 5, -1, 1);
    ref_fill(g_wq, HM_B * A, 6, -1, 1);
    hm_round(g_wl, wlf, HM_B * A * Z);
    hm_round(g_wi, wif, HM_B * HM_T * A);
    hm_round(g_wq, wqf, HM_B * A);
    vp_tensor wl_t = vp_tensor_3d(wlf, VP_F32, VP_MEM_HOST, HM_B, A, Z);
    vp_tensor wi_t = vp_tensor_3d(wif, VP_F32, VP_MEM_HOST, HM_B, HM_T, A);
    vp_tensor wq_t = vp_tensor_2d(wqf, VP_F32, VP_MEM_HOST, HM_B, A);
    CHECK_OK(vp_model_acts_set_qd_grad(f.a, &wq_t));
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, HM_B));
    CHECK_OK(vp_model_forward(&g.m, &g.m.params, g.a, &g.features, &g.bar_t, &g.port_t, &g.taus_t, HM_B));
    // refined Q vs the reference; C51 Q, log-probs and quantiles are the plain network's bits
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* qr = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    double* got = ref_alloc(HM_B * A);
    ref_forward(&f.m, f.p, f.feat, f.bar, f.port, f.taus, HM_B, HM_T, logp, q, zq);
    ref_refine(&f, q, qr);
    ref_from_f32(got, vp_model_q(f.a).data, HM_B * A);
    const double eq = ref_rel_err(got, qr, HM_B * A);
    double moved = 0;
    for (int64_t i = 0; i < HM_B * A; ++i) moved += fabs(qr[i] - q[i]);
    CHECK(eq < FWD_TOL && moved > 1e-3, "refined Q vs reference %.3g (refinement moved Q by %g)", eq, moved);
    CHECK(memcmp(vp_model_q_c51(f.a).data, vp_model_q(g.a).data, sizeof(float) * (size_t)(HM_B * A)) == 0,
          "C51 Q before the refinement differs from the plain network's");
    CHECK(memcmp(vp_model_log_probs(f.a).data, vp_model_log_probs(g.a).data, sizeof(float) * (size_t)(HM_B * A * Z)) ==
                  0 &&
              memcmp(vp_model_iqn(f.a).data, vp_model_iqn(g.a).data, sizeof(float) * (size_t)(HM_B * HM_T * A)) == 0,
          "log-probs or quantiles differ from the plain network's");
    // backward: the refinement against the full loss, the rest against the detached one
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &wl_t, &wi_t));
    CHECK_OK(vp_model_backward(&g.m, &g.m.params, g.a, &wl_t, &wi_t));
    CHECK(hm_check_grads(&f, "qdenoise.", loss_full) == 4, "four refinement tensors");
    CHECK(hm_check_grads(&f, "c51.", loss_detached) == 8, "eight C51 tensors");
    CHECK(hm_check_grads(&f, "mamba.out_proj", loss_detached) == 1, "out_proj");
    CHECK(memcmp(f.m.grads.data, g.m.grads.data, sizeof(float) * (size_t)g.m.n_weights) == 0,
          "the gradients of the shared tensors differ from the plain network's");
    // without d q the refinement's gradients are zero
    CHECK_OK(vp_model_acts_set_qd_grad(f.a, NULL));
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &wl_t, &wi_t));
    const vp_param_info* w2 = vp_model_find_param(&f.m, "qdenoise.w2");
    int nz = 0;
    for (int64_t i = 0; i < w2->numel; ++i) nz += ((const float*)f.m.grads.data)[w2->offset + i] != 0.0f;
    CHECK(nz == 0, "%d nonzero refinement gradients without d q", nz);
    free(logp);
    free(q);
    free(qr);
    free(zq);
    free(got);
    free(g_wl);
    free(g_wi);
    free(g_wq);
    hm_fixture_free(&f);
    hm_fixture_free(&g);
}

static void test_starts_as_identity(void) {
    vp_model_cfg c = hm_cfg();
    c.q_denoise = 1;
    vp_backend* be = NULL;
    vp_model m;
    vp_model_acts* a = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    CHECK_OK(vp_model_init(&m, be, &c, 3));
    CHECK_OK(vp_model_acts_init(&a, &m, HM_B, 0, 0));
    float feat[HM_ROWS * 5], port[HM_B * 3];
    for (int i = 0; i < HM_ROWS * 5; ++i) feat[i] = vp_rng_normal(9, 1, (uint64_t)i);
    for (int i = 0; i < HM_B * 3; ++i) port[i] = vp_rng_uniform(9, 2, (uint64_t)i) - 0.5f;
    int32_t bar[HM_B] = {0, 3, 8, 5};
    vp_tensor ft = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, HM_ROWS, 5), bt = vp_tensor_1d(bar, VP_I32, VP_MEM_HOST, HM_B);
    vp_tensor pt = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, HM_B, 3);
    CHECK_OK(vp_model_forward(&m, &m.params, a, &ft, &bt, &pt, NULL, HM_B));
    const int A = vp_model_cfg_actions(&c);
    CHECK(memcmp(vp_model_q(a).data, vp_model_q_c51(a).data, sizeof(float) * (size_t)(HM_B * A)) == 0,
          "the initial refinement is not the identity");
    // the one-sample forward of the last window refines as the batch forward
    vp_model_inc w;
    vp_model_inc_ring r;
    vp_model_acts* one = NULL;
    CHECK_OK(vp_model_inc_init(&w, &m, &m.params));
    CHECK_OK(vp_model_inc_ring_init(&r, &w));
    CHECK_OK(vp_model_acts_init(&one, &m, 1, 0, 0));
    float* p = (float*)m.params.data;
    const vp_param_info* w2 = vp_model_find_param(&m, "qdenoise.w2");
    for (int64_t i = 0; i < w2->numel; ++i) p[w2->offset + i] = 0.1f * (float)((i % 7) - 3);
    CHECK_OK(vp_model_forward(&m, &m.params, a, &ft, &bt, &pt, NULL, HM_B));
    for (int t = 0; t <= 8; ++t) CHECK_OK(vp_model_inc_push(&w, one, &r, feat + t * 5));
    CHECK_OK(vp_model_inc_encode(&w, one, &r));
    vp_tensor p1 = vp_tensor_2d(port + 2 * 3, VP_F32, VP_MEM_HOST, 1, 3);
    CHECK_OK(vp_model_inc_heads(&w, one, &p1));
    CHECK(memcmp(vp_model_q(one).data, (const float*)vp_model_q(a).data + 2 * A, sizeof(float) * (size_t)A) == 0,
          "the one-sample refined Q of bar 8 differs from the batch forward's");
    CHECK(memcmp(vp_model_q(one).data, vp_model_q_c51(one).data, sizeof(float) * (size_t)A) != 0,
          "the refinement did not move the one-sample Q");
    vp_model_acts_free(one);
    vp_model_inc_ring_free(&r);
    vp_model_inc_free(&w);
    vp_model_acts_free(a);
    vp_model_free(&m);
    vp_backend_free(be);
}

/* Mean of x [n]. */
static double mean_of(const float* x, int n) {
    double s = 0;
    for (int i = 0; i < n; ++i) s += x[i];
    return s / n;
}

static void test_learner(void) {
    vp_learner_cfg c = hl_cfg(0.0f, 1), c0 = hl_cfg(0.0f, 0);
    hl_fixture f, g;
    if (!hl_fixture_init(&f, &c) || !hl_fixture_init(&g, &c0)) return;
    const int64_t W0 = g.l.model.n_weights;
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
        vp_runtime_counters before, after;
        vp_backend_counters(f.b, &before);
        CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
        vp_backend_counters(f.b, &after);
        CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
              "step %d allocated, copied or synchronised", step);
        CHECK_OK(vp_learner_step(&g.l, &g.bt, NULL));
        const double qd = mean_of((const float*)f.l.scratch->qd_loss.data, HL_B);
        if (step == 0) first = qd;
        last = qd;
        // the clip stays inactive in both, so the shared tensors move alike, bit for bit
        CHECK(f.l.stats_host[VP_STAT_GRAD_NORM] < f.l.cfg.clip_norm, "step %d: the clip engaged", step);
    }
    CHECK(memcmp(f.l.model.params.data, g.l.model.params.data, sizeof(float) * (size_t)W0) == 0,
          "the C51 and IQN part of the step differs with the refinement on");
    const vp_stat same[5] = {VP_STAT_LOSS, VP_STAT_C51, VP_STAT_IQN, VP_STAT_Q_MEAN, VP_STAT_Q_MAX};
    for (int i = 0; i < 5; ++i)
        CHECK(f.l.stats_host[same[i]] == g.l.stats_host[same[i]], "statistic %d: %g vs %g", (int)same[i],
              f.l.stats_host[same[i]], g.l.stats_host[same[i]]);
    fprintf(stderr, "  refinement loss %.4g -> %.4g over 60 steps\n", first, last);
    CHECK(isfinite(first) && last < first, "the refinement loss did not fall: %g -> %g", first, last);
    hl_fixture_free(&f);
    hl_fixture_free(&g);
}

int main(void) {
    RUN_TEST(test_loss_hand_values);
    RUN_TEST(test_forward_and_grads);
    RUN_TEST(test_starts_as_identity);
    RUN_TEST(test_learner);
    return vpt_finish();
}
