/* The risk-budget head on the CPU: its loss kernel on hand values (a CVaR over the taus at or
 * below 0.1, the lowest tau's quantile when none is, the budget's target, the cross-entropy
 * and its gradient); the scaled contracts of the environment's rule on hand values and equal
 * to the plain rule at scale 1; the head's forward against the double reference and its
 * gradients against finite differences, every other gradient bit for bit the plain
 * network's (the input is detached); the learner keeps the C51 and IQN part of its step
 * exact and lowers the head's loss on a fixed batch. */
#include "env/env_rules.h"
#include "model/hmops.h"
#include "test_hmods_util.h"

static void test_loss_hand_values(void) {
    // B = 2, T = 3, A = 5 (branches 3, 2: the size branch's heads are 3 and 4), kappa 1
    const float taus[6] = {0.05f, 0.08f, 0.5f, 0.3f, 0.2f, 0.9f};
    float iqn[2 * 3 * 5];
    for (int i = 0; i < 30; ++i) iqn[i] = 100.0f; /* other heads: never read */
    const float q0[3] = {-3.0f, -1.0f, 2.0f}, q1[3] = {4.0f, -0.5f, 1.0f};
    for (int j = 0; j < 3; ++j) iqn[(0 * 3 + j) * 5 + 4] = q0[j], iqn[(1 * 3 + j) * 5 + 3] = q1[j];
    const int32_t act[4] = {0, 1, 2, 0};
    const float w[2] = {0.6f, 0.8f}, s[2] = {0.5f, 0.75f};
    float loss[2], dl[2];
    CHECK_OK(vp_hcpu_rb_loss(NULL, 2, 3, 5, 2, 3, 2, 0.1f, 1.0f, iqn, taus, act, w, s, loss, dl));
    // sample 0: CVaR (-3 - 1) / 2 = -2, tail 2 over the budget 1: target 0.5 = s, loss ln 2
    CHECK(fabsf(loss[0] - 0.69314718f) < 1e-6f && dl[0] == 0.0f, "sample 0: loss %.9g d %.9g", loss[0], dl[0]);
    // sample 1: no tau <= 0.1, the lowest (0.2) gives -0.5, within the budget: target 1
    CHECK(fabsf(loss[1] - 0.28768207f) < 1e-6f && dl[1] == -0.1f, "sample 1: loss %.9g d %.9g", loss[1], dl[1]);
    const int32_t bad[4] = {0, 2, 0, 0};
    CHECK_OK(vp_hcpu_rb_loss(NULL, 2, 3, 5, 2, 3, 2, 0.1f, 1.0f, iqn, taus, bad, w, s, loss, dl));
    CHECK(isnan(loss[0]) && dl[0] == 0.0f && !isnan(loss[1]), "a size outside the branch: loss %g d %g", loss[0],
          dl[0]);
}

static void test_scaled_contracts(void) {
    // 3 contracts at size 1: half of 3 is 1.5, rounded half up to 2; 0.4 of 3 is 1.2 -> 1
    CHECK(vp_env_scaled_contracts(3, 3, 1.0f) == 3 && vp_env_scaled_contracts(3, 3, 0.5f) == 2 &&
              vp_env_scaled_contracts(3, 3, 0.4f) == 1 && vp_env_scaled_contracts(3, 3, 0.0f) == 0,
          "scaled contracts of size 1.0 at 3 contracts");
    CHECK(vp_env_scaled_contracts(1, 10, 0.3f) == 2 && vp_env_scaled_contracts(1, 10, 2.0f) == 5 &&
              vp_env_scaled_contracts(1, 10, -1.0f) == 0,
          "0.3 x 5 = 1.5 -> 2; scales clamp to [0, 1]");
    int diff = 0;
    for (int M = 1; M <= 64; ++M)
        for (int k = 0; k < 4; ++k) diff += vp_env_scaled_contracts(k, M, 1.0f) != vp_env_contracts(k, M);
    CHECK(diff == 0, "%d sizes differ from the plain rule at scale 1", diff);
}

/* h [B, H] of the reference network (the heads' input). */
static void ref_h(const hm_fixture* f, double* h) {
    const vp_model* m = &f->m;
    const int H = m->cfg.hidden, K = m->cfg.window;
    double* h2 = ref_alloc(HM_B * K * H);
    double* e = ref_alloc(HM_B * H);
    ref_trunk(m, f->p, f->feat, f->bar, HM_B, K, h2);
    ref_mamba(m, f->p, h2, HM_B, e);
    ref_linear(f->port, HM_B, m->cfg.n_portfolio, ref_param(m, f->p, "port.w"), ref_param(m, f->p, "port.b"), H, h);
    for (int64_t i = 0; i < HM_B * H; ++i) h[i] += e[i];
    free(h2), free(e);
}

static double g_wr[HM_B];

/* sum_b wr_b logit_b of the reference. */
static double loss_logit(const hm_fixture* f) {
    const int H = f->m.cfg.hidden;
    double* h = ref_alloc(HM_B * H);
    double lg[HM_B];
    ref_h(f, h);
    ref_linear(h, HM_B, H, ref_param(&f->m, f->p, "risk.w"), ref_param(&f->m, f->p, "risk.b"), 1, lg);
    free(h);
    return ref_dot(g_wr, lg, HM_B);
}

static void test_forward_and_grads(void) {
    vp_model_cfg c = hm_cfg(), off = hm_cfg();
    c.risk_budget = 0.5f;
    hm_fixture f, g;
    if (!hm_fixture_init(&f, &c, 61) || !hm_fixture_init(&g, &off, 61)) return;
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms, H = c.hidden;
    CHECK(f.m.n_params == g.m.n_params + 2 && memcmp(f.m.params.data, g.m.params.data,
                                                     sizeof(float) * (size_t)g.m.n_weights) == 0,
          "risk.w and risk.b follow the shared parameters");
    float wrf[HM_B] = {0.5f, -1.0f, 0.25f, 2.0f};
    for (int b = 0; b < HM_B; ++b) g_wr[b] = wrf[b];
    vp_tensor wr_t = vp_tensor_1d(wrf, VP_F32, VP_MEM_HOST, HM_B);
    CHECK_OK(vp_model_acts_set_rb_grad(f.a, &wr_t));
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, HM_B));
    CHECK_OK(vp_model_forward(&g.m, &g.m.params, g.a, &g.features, &g.bar_t, &g.port_t, &g.taus_t, HM_B));
    // s = sigmoid(h w + b) against the reference
    double* h = ref_alloc(HM_B * H);
    double lg[HM_B], want[HM_B], got[HM_B];
    ref_h(&f, h);
    ref_linear(h, HM_B, H, ref_param(&f.m, f.p, "risk.w"), ref_param(&f.m, f.p, "risk.b"), 1, lg);
    for (int b = 0; b < HM_B; ++b) want[b] = 1.0 / (1.0 + exp(-lg[b]));
    vp_tensor sc = vp_model_risk_scale(f.a);
    CHECK(sc.data != NULL && vp_tensor_numel(&sc) == HM_B, "the scale tensor");
    ref_from_f32(got, sc.data, HM_B);
    const double err = ref_rel_err(got, want, HM_B);
    CHECK(err < FWD_TOL, "scale vs reference %.3g", err);
    CHECK(memcmp(vp_model_q(f.a).data, vp_model_q(g.a).data, sizeof(float) * (size_t)(HM_B * A)) == 0 &&
              memcmp(vp_model_log_probs(f.a).data, vp_model_log_probs(g.a).data,
                     sizeof(float) * (size_t)(HM_B * A * Z)) == 0,
          "Q or log-probs differ from the plain network's");
    // backward: the head's tensors against FD; every shared gradient the plain network's
    float wlf[HM_B * 5 * 7], wif[HM_B * HM_T * 5];
    for (int i = 0; i < HM_B * A * Z; ++i) wlf[i] = vp_rng_uniform(4, 1, (uint64_t)i) - 0.5f;
    for (int i = 0; i < HM_B * HM_T * A; ++i) wif[i] = vp_rng_uniform(4, 2, (uint64_t)i) - 0.5f;
    vp_tensor wl_t = vp_tensor_3d(wlf, VP_F32, VP_MEM_HOST, HM_B, A, Z);
    vp_tensor wi_t = vp_tensor_3d(wif, VP_F32, VP_MEM_HOST, HM_B, HM_T, A);
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &wl_t, &wi_t));
    CHECK_OK(vp_model_backward(&g.m, &g.m.params, g.a, &wl_t, &wi_t));
    CHECK(hm_check_grads(&f, "risk.", loss_logit) == 2, "two risk tensors");
    CHECK(memcmp(f.m.grads.data, g.m.grads.data, sizeof(float) * (size_t)g.m.n_weights) == 0,
          "the shared gradients differ from the plain network's");
    // the checks of the configuration
    vp_model_cfg bad = hm_cfg();
    bad.risk_budget = -1.0f;
    CHECK_STATUS(vp_model_cfg_check(&bad), VP_ERR_INVALID_ARG, "risk_budget = -1");
    bad = hm_cfg();
    bad.risk_budget = 1.0f;
    bad.n_branches = 1;
    CHECK_STATUS(vp_model_cfg_check(&bad), VP_ERR_INVALID_ARG, "scales the size branch");
    free(h);
    hm_fixture_free(&f);
    hm_fixture_free(&g);
}

static void test_learner(void) {
    vp_learner_cfg c = hl_cfg(0.0f, 0), c0 = hl_cfg(0.0f, 0);
    c.model.risk_budget = 0.05f;
    hl_fixture f, g;
    if (!hl_fixture_init(&f, &c) || !hl_fixture_init(&g, &c0)) return;
    double first = 0, last = 0;
    for (int step = 0; step < 60; ++step) {
        vp_runtime_counters before, after;
        vp_backend_counters(f.b, &before);
        CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
        vp_backend_counters(f.b, &after);
        CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
              "step %d allocated, copied or synchronised", step);
        CHECK_OK(vp_learner_step(&g.l, &g.bt, NULL));
        double m = 0;
        for (int b = 0; b < HL_B; ++b) m += ((const float*)f.l.scratch->rb_loss.data)[b] / HL_B;
        if (step == 0) first = m;
        last = m;
        CHECK(f.l.stats_host[VP_STAT_GRAD_NORM] < f.l.cfg.clip_norm, "step %d: the clip engaged", step);
    }
    CHECK(memcmp(f.l.model.params.data, g.l.model.params.data, sizeof(float) * (size_t)g.l.model.n_weights) == 0,
          "the C51 and IQN part of the step differs with the risk-budget head on");
    fprintf(stderr, "  risk-budget loss %.4g -> %.4g over 60 steps\n", first, last);
    CHECK(isfinite(first) && last < first, "the risk-budget loss did not fall: %g -> %g", first, last);
    vp_learner_cfg nt = c;
    nt.n_taus = nt.n_target_taus = 0;
    CHECK_STATUS(vp_learner_cfg_check(&nt), VP_ERR_INVALID_ARG, "n_taus is 0");
    hl_fixture_free(&f);
    hl_fixture_free(&g);
}

int main(void) {
    RUN_TEST(test_loss_hand_values);
    RUN_TEST(test_scaled_contracts);
    RUN_TEST(test_forward_and_grads);
    RUN_TEST(test_learner);
    return vpt_finish();
}
