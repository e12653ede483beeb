/* Tests of the learner modules in the learner step on the CPU (docs/modules.md): adaptive
 * atoms and PopArt switched on change nothing at step 0; the spacing logits learn; PopArt's
 * statistics by hand (alone and inside a step); its rescale keeps the IQN head's unnormalised
 * outputs; its IQN target by hand; the configurations refused. */
#include "test_hmods_util.h"
#include "test_loss_util.h"

/* The small learner with the modules given. */
static vp_learner_cfg lm_cfg(int adaptive, int popart) {
    vp_learner_cfg c = hl_cfg(0.0f, 0);
    c.model.adaptive_atoms = adaptive;
    c.popart = popart;
    c.popart_beta = 0.25f;
    return c;
}

/* The learner's host float array of a tensor (CPU backend: host memory). */
static const float* fl(const vp_tensor* t) { return (const float*)t->data; }

/* Switched on at step 0 each module gives the step of the plain learner (same seed: the same
 * parameters; zero spacing logits are the uniform support, PopArt starts at mu 0, sigma 1);
 * only the gradient norm grows by the spacing logits' gradient. */
static void test_step0_unchanged(void) {
    const int mods[3][2] = {{1, 0}, {0, 1}, {1, 1}};
    for (int k = 0; k < 3; ++k) {
        hl_fixture off, on;
        vp_learner_cfg co = lm_cfg(0, 0), cn = lm_cfg(mods[k][0], mods[k][1]);
        if (!hl_fixture_init(&off, &co) || !hl_fixture_init(&on, &cn)) return;
        CHECK_OK(vp_learner_run_phase(&off.l, VP_PHASE_FORWARD, &off.bt, NULL));
        CHECK_OK(vp_learner_run_phase(&on.l, VP_PHASE_FORWARD, &on.bt, NULL));
        vp_tensor qo = vp_model_q(off.l.scratch->acts), qn = vp_model_q(on.l.scratch->acts);
        for (int64_t e = 0; e < vp_tensor_numel(&qo); ++e) CHECK_NEAR(fl(&qn)[e], fl(&qo)[e], 1e-6, 1e-6);
        CHECK_OK(vp_learner_step(&off.l, &off.bt, NULL));
        CHECK_OK(vp_learner_step(&on.l, &on.bt, NULL));
        for (int s = VP_STAT_LOSS; s <= VP_STAT_Q_MAX; ++s)
            if (s != VP_STAT_GRAD_NORM) CHECK_NEAR(on.l.stats_host[s], off.l.stats_host[s], 1e-6, 1e-6);
        // the gradient norm also counts the spacing logits' gradient
        double g2 = (double)off.l.stats_host[VP_STAT_GRAD_NORM] * off.l.stats_host[VP_STAT_GRAD_NORM];
        for (int64_t i = 0; mods[k][0] && i < vp_tensor_numel(&on.l.scratch->mods.d_spacing); ++i)
            g2 += (double)fl(&on.l.scratch->mods.d_spacing)[i] * fl(&on.l.scratch->mods.d_spacing)[i];
        CHECK_NEAR(on.l.stats_host[VP_STAT_GRAD_NORM], sqrt(g2), 1e-6, 1e-5);
        // every parameter of the plain network moved the same
        for (int p = 0; p < off.l.model.n_params; ++p) {
            const vp_param_info* po = &off.l.model.info[p];
            const vp_param_info* pn = vp_model_find_param(&on.l.model, po->name);
            CHECK(pn != NULL, "%s missing with the modules on", po->name);
            if (!pn || strncmp(po->name, "iqn.l2", 6) == 0) continue; /* PopArt rescales it after the step */
            double dmax = 0.0;
            for (int64_t i = 0; i < po->numel; ++i) {
                const double d = fabs(fl(&on.l.model.params)[pn->offset + i] - fl(&off.l.model.params)[po->offset + i]);
                dmax = d > dmax ? d : dmax;
            }
            CHECK(dmax <= 2e-6, "module set %d: %s differs by %g after one step", k, po->name, dmax);
        }
        hl_fixture_free(&off);
        hl_fixture_free(&on);
    }
}

/* With both modules on: the spacing logits get the module's gradient and move; the support
 * stays increasing with its ends at v_min and v_max; the steps allocate, copy and synchronise
 * nothing. */
static void test_atoms_learn(void) {
    hl_fixture f;
    vp_learner_cfg c = lm_cfg(1, 1);
    if (!hl_fixture_init(&f, &c)) return;
    const vp_param_info* p = vp_model_find_param(&f.l.model, "c51.atoms");
    CHECK(p != NULL && p->shape[0] == 2 && p->shape[1] == 6, "c51.atoms [2, 6]");
    if (!p) return;
    vp_runtime_counters before, after;
    vp_backend_counters(f.b, &before);
    for (int it = 0; it < 5; ++it) CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
    vp_backend_counters(f.b, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "steps with the modules allocated (%lld), copied (%lld) or synchronised (%lld)",
          (long long)(after.allocs - before.allocs), (long long)(after.copies - before.copies),
          (long long)(after.syncs - before.syncs));
    double gn = 0.0, sn = 0.0;
    for (int64_t i = 0; i < p->numel; ++i) {
        const float g = fl(&f.l.model.grads)[p->offset + i];
        CHECK(g == fl(&f.l.scratch->mods.d_spacing)[i], "grads holds the spacing gradient at %lld", (long long)i);
        gn += fabs(g);
        sn += fabs(fl(&f.l.model.params)[p->offset + i]);
    }
    CHECK(gn > 1e-6 && sn > 1e-5, "the spacing learns: |grad| %g, |s| %g", gn, sn);
    vp_tensor z = vp_model_support(f.l.scratch->acts);
    CHECK(vp_tensor_numel(&z) == 14, "support [2, 7]");
    for (int br = 0; br < 2 && vp_tensor_numel(&z) == 14; ++br) {
        const float* zb = fl(&z) + br * 7;
        CHECK(zb[0] == -2.0f && zb[6] == 3.0f, "branch %d ends %g %g", br, zb[0], zb[6]);
        for (int k = 1; k < 7; ++k) CHECK(zb[k] > zb[k - 1], "branch %d increasing at %d", br, k);
    }
    hl_fixture_free(&f);
}

/* PopArt's statistics by hand: Y = [1 + .5 (1 * 2 + 0), 3] = [2, 3] (the second terminal),
 * beta .5: mu = 1.25, nu = .5 + .5 * 6.5 = 3.75, sigma = sqrt(3.75 - 1.5625); w [1, -2] *=
 * 1 / sigma, b = (.5 + 0 - 1.25) / sigma. Then equal targets at beta 1: sigma clamps to 1e-4. */
static void test_popart_stats_hand(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(2, 1, sz, 3, -1.0f, 1.0f, 0, 0);
    float reward[2] = {1.0f, 3.0f}, disc[2] = {.5f, 0.0f}, w[2] = {1, 1}, tq[2] = {2.0f, 7.0f};
    float st[VP_POPART_N] = {0.0f, 1.0f, 1.0f}, lw[2] = {1.0f, -2.0f}, lb[1] = {.5f}, tw[2] = {3.0f, 4.0f}, tb[1] = {-1.0f};
    int32_t act[2] = {0, 0}, next[2] = {0, 0};
    tlu_batch t;
    tlu_batch_init(&t, 2, 1, act, next, reward, disc, w);
    vp_tensor ts = tlu_t1(st, VP_F32, VP_POPART_N), ttq = tlu_t2(tq, VP_F32, 2, 1);
    vp_tensor tlw = tlu_t2(lw, VP_F32, 1, 2), tlb = tlu_t1(lb, VP_F32, 1), ttw = tlu_t2(tw, VP_F32, 1, 2);
    vp_tensor ttb = tlu_t1(tb, VP_F32, 1);
    t.b.popart = &ts;
    CHECK_OK(vp_loss_popart(be, &d, &t.b, &ttq, 0.5f, &tlw, &tlb, &ttw, &ttb));
    const double sg = sqrt(2.1875);
    CHECK_NEAR(st[VP_POPART_MU], 1.25, 1e-7, 0.0);
    CHECK_NEAR(st[VP_POPART_NU], 3.75, 1e-7, 0.0);
    CHECK_NEAR(st[VP_POPART_SIGMA], sg, 0.0, 1e-7);
    CHECK_NEAR(lw[0], 1.0 / sg, 0.0, 1e-6);
    CHECK_NEAR(lw[1], -2.0 / sg, 0.0, 1e-6);
    CHECK_NEAR(lb[0], -0.75 / sg, 0.0, 1e-6);
    CHECK_NEAR(tw[1], 4.0 / sg, 0.0, 1e-6);
    CHECK_NEAR(tb[0], (-1.0 - 1.25) / sg, 0.0, 1e-6);
    // targets all 3 (reward 3, terminal) at beta 1: variance 0, sigma at its floor
    float r3[2] = {3.0f, 3.0f}, d0[2] = {0.0f, 0.0f};
    tlu_batch_init(&t, 2, 1, act, next, r3, d0, w);
    t.b.popart = &ts;
    CHECK_OK(vp_loss_popart(be, &d, &t.b, &ttq, 1.0f, NULL, NULL, NULL, NULL));
    CHECK_NEAR(st[VP_POPART_MU], 3.0, 1e-7, 0.0);
    CHECK_NEAR(st[VP_POPART_SIGMA], VP_POPART_SIGMA_MIN, 0.0, 1e-6);
    CHECK_STATUS(vp_loss_popart(be, &d, &t.b, &ttq, 0.0f, NULL, NULL, NULL, NULL), VP_ERR_INVALID_ARG, "beta");
    t.b.popart = NULL;
    CHECK_STATUS(vp_loss_popart(be, &d, &t.b, &ttq, 0.5f, NULL, NULL, NULL, NULL), VP_ERR_INVALID_ARG, "state");
    vp_backend_free(be);
}

/* The IQN target with PopArt (mu 1, sigma 2): r .25, gamma .5, target quantile .5 ->
 * (.25 + .5 (2 * .5 + 1) - 1) / 2 = .125; online 0 at tau .5: .5 * .5 * .125^2 = .00390625. */
static void test_popart_iqn_hand(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 3, -1.0f, 1.0f, 1, 1);
    float reward[1] = {.25f}, disc[1] = {.5f}, w[1] = {1}, pa[VP_POPART_N] = {1.0f, 5.0f, 2.0f};
    float iq[1] = {0.0f}, tiq[1] = {.5f}, taus[1] = {.5f}, loss[1], diq[1];
    int32_t act[1] = {0}, next[1] = {0};
    tlu_batch t;
    tlu_batch_init(&t, 1, 1, act, next, reward, disc, w);
    vp_tensor tpa = tlu_t1(pa, VP_F32, VP_POPART_N), ti = tlu_f3(iq, 1, 1, 1), tti = tlu_f3(tiq, 1, 1, 1);
    vp_tensor tt = tlu_t2(taus, VP_F32, 1, 1), tl = tlu_t1(loss, VP_F32, 1), td = tlu_f3(diq, 1, 1, 1);
    t.b.popart = &tpa;
    CHECK_OK(vp_loss_iqn(be, &d, &t.b, &ti, &tti, &tt, &tl, &td));
    CHECK_NEAR(loss[0], 0.00390625, 1e-9, 1e-6);
    CHECK_NEAR(diq[0], -0.5 * 0.125, 1e-9, 1e-6);
    vp_backend_free(be);
}

/* Inside a step: the state after one step is the hand formula of the batch's targets (target
 * net's C51 Q of a*), and the rescale keeps sigma zq + mu of both networks' IQN heads. */
static void test_popart_step(void) {
    hl_fixture f;
    vp_learner_cfg c = lm_cfg(0, 1);
    if (!hl_fixture_init(&f, &c)) return;
    vp_learner_scratch* s = f.l.scratch;
    float* st = (float*)f.l.popart.data;
    st[VP_POPART_MU] = 0.3f;
    st[VP_POPART_NU] = 4.0f;
    st[VP_POPART_SIGMA] = 1.7f;
    CHECK_OK(vp_learner_run_phase(&f.l, VP_PHASE_FORWARD, &f.bt, NULL));
    CHECK_OK(vp_learner_run_phase(&f.l, VP_PHASE_LOSS, &f.bt, NULL));
    // the expected state from the forward's target Q and the double-DQN choice
    vp_tensor tq = vp_model_q_c51(s->target_acts);
    const int32_t* as = (const int32_t*)s->a_star.data;
    const float* r = fl(&f.bt.reward);
    const float* dc = fl(&f.bt.discount);
    double m1 = 0.0, m2 = 0.0;
    for (int i = 0; i < HL_B; ++i)
        for (int br = 0; br < 2; ++br) {
            const double y = r[i] + dc[i] * (1.7 * fl(&tq)[i * 5 + (br ? 3 : 0) + as[i * 2 + br]] + 0.3);
            m1 += y / (2 * HL_B);
            m2 += y * y / (2 * HL_B);
        }
    const double mu = 0.75 * 0.3 + 0.25 * m1, nu = 0.75 * 4.0 + 0.25 * m2, sg = sqrt(nu - mu * mu);
    // unnormalised IQN outputs of both networks before the update
    enum { Q = HL_B * 3 * 5, QT = HL_B * 4 * 5 };
    double on[Q], tg[QT];
    vp_tensor zo = vp_model_iqn(s->acts), zt = vp_model_iqn(s->target_acts);
    for (int e = 0; e < Q; ++e) on[e] = 1.7 * fl(&zo)[e] + 0.3;
    for (int e = 0; e < QT; ++e) tg[e] = 1.7 * fl(&zt)[e] + 0.3;
    vp_tensor lp0 = vp_model_log_probs(s->acts);
    float lpk[HL_B * 5 * 7];
    memcpy(lpk, lp0.data, sizeof lpk);
    CHECK_OK(vp_learner_mods_optim(&f.l, &f.bt));
    CHECK_NEAR(st[VP_POPART_MU], mu, 1e-6, 1e-6);
    CHECK_NEAR(st[VP_POPART_NU], nu, 1e-6, 1e-6);
    CHECK_NEAR(st[VP_POPART_SIGMA], sg, 1e-6, 1e-6);
    CHECK(fabs(st[VP_POPART_MU] - 0.3) > 1e-3, "the statistics moved (mu %g)", st[VP_POPART_MU]);
    // the same forwards again: the unnormalised outputs are kept, the C51 head is untouched
    CHECK_OK(vp_learner_run_phase(&f.l, VP_PHASE_FORWARD, &f.bt, NULL));
    const float mu1 = st[VP_POPART_MU], s1 = st[VP_POPART_SIGMA];
    for (int e = 0; e < Q; ++e) CHECK_NEAR(s1 * fl(&zo)[e] + mu1, on[e], 2e-6, 2e-6);
    for (int e = 0; e < QT; ++e) CHECK_NEAR(s1 * fl(&zt)[e] + mu1, tg[e], 2e-6, 2e-6);
    for (int e = 0; e < HL_B * 5 * 7; ++e) CHECK(fl(&lp0)[e] == lpk[e], "log-prob %d unchanged", e);
    hl_fixture_free(&f);
}

/* Settings the modules refuse, with the message naming them. */
static void test_refused(void) {
    vp_learner_cfg c = lm_cfg(0, 1);
    c.popart_beta = 0.0f;
    CHECK_STATUS(vp_learner_cfg_check(&c), VP_ERR_INVALID_ARG, "popart_beta");
    c = lm_cfg(0, 1);
    c.model.risk_budget = 0.5f;
    CHECK_STATUS(vp_learner_cfg_check(&c), VP_ERR_INVALID_ARG, "popart and model risk_budget");
    c = lm_cfg(0, 1);
    c.signals.kelly = 1;
    CHECK_STATUS(vp_learner_cfg_check(&c), VP_ERR_INVALID_ARG, "popart and the signals' kelly rule");
    c = lm_cfg(1, 0);
    c.model.q_denoise = 1;
    CHECK_STATUS(vp_learner_cfg_check(&c), VP_ERR_INVALID_ARG, "adaptive atoms and q_denoise");
    c = lm_cfg(0, 0);
    c.model.adaptive_atoms = 2;
    CHECK_STATUS(vp_learner_cfg_check(&c), VP_ERR_INVALID_ARG, "adaptive_atoms = 2");
}

int main(void) {
    RUN_TEST(test_step0_unchanged);
    RUN_TEST(test_atoms_learn);
    RUN_TEST(test_popart_stats_hand);
    RUN_TEST(test_popart_iqn_hand);
    RUN_TEST(test_popart_step);
    RUN_TEST(test_refused);
    return vpt_finish();
}
