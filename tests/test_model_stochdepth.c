/* Stochastic depth on the Mamba2 residual branch, on the CPU: the kernel's scale and residual
 * on hand values; the training forward of the whole network against the double reference with
 * the same per-sample scales, and its backward against finite differences of that reference,
 * every tensor; an inference forward is the plain network bit for bit; the learner draws
 * one uniform per sample from Philox(seed, step) and two learners agree bit for bit; the
 * configuration checks. */
#include "learn/loss_math.h"
#include "model/hmops.h"
#include "test_hmods_util.h"

/* p = 0.5: u = 0.7 keeps (x2), 0.2 drops, 0.5 (= p) keeps, 0.1 drops. */
static const float U4[HM_B] = {0.7f, 0.2f, 0.5f, 0.1f};
static const double S4[HM_B] = {2.0, 0.0, 2.0, 0.0};

static void test_kernel_hand_values(void) {
    const float u[3] = {0.7f, 0.2f, 0.5f};
    const float last[6] = {1.5f, -1.0f, 0.0f, 2.0f, 3.0f, -0.5f};
    const float o[6] = {0.25f, 0.5f, 7.0f, -1.0f, -0.75f, 1.0f};
    float scale[3], e[6], de[6] = {1, 2, 3, 4, 5, 6}, d_o[6];
    CHECK_OK(vp_hcpu_sd_forward(NULL, 3, 2, 0.5f, u, last, o, scale, e));
    const float want_s[3] = {2.0f, 0.0f, 2.0f};
    const float want_e[6] = {2.0f, 0.0f, 0.0f, 2.0f, 1.5f, 1.5f};
    CHECK(memcmp(scale, want_s, sizeof scale) == 0, "scales %g %g %g", scale[0], scale[1], scale[2]);
    CHECK(memcmp(e, want_e, sizeof e) == 0, "e = %g %g %g %g %g %g", e[0], e[1], e[2], e[3], e[4], e[5]);
    CHECK_OK(vp_hcpu_sd_backward(NULL, 3, 2, scale, de, d_o));
    const float want_d[6] = {2, 4, 0, 0, 10, 12};
    CHECK(memcmp(d_o, want_d, sizeof d_o) == 0, "d_o = %g %g %g %g %g %g", d_o[0], d_o[1], d_o[2], d_o[3], d_o[4],
          d_o[5]);
    // p = 0.25 keeps with the float 1 / 0.75
    const float u1 = 0.25f, l1 = 0.0f, o1 = 3.0f;
    float s1, e1;
    CHECK_OK(vp_hcpu_sd_forward(NULL, 1, 1, 0.25f, &u1, &l1, &o1, &s1, &e1));
    CHECK(s1 == 1.0f / 0.75f && e1 == 3.0f * (1.0f / 0.75f), "p 0.25: scale %.9g e %.9g", s1, e1);
}

/* The reference with per-sample scales s [B] of the branch (NULL: the plain network). */
static void ref_forward_sd(const hm_fixture* f, const double* s, double* logp, double* q, double* zq) {
    const vp_model* m = &f->m;
    const int H = m->cfg.hidden, K = m->cfg.window;
    double* h2 = ref_alloc(HM_B * K * H);
    double* e = ref_alloc(HM_B * H);
    ref_trunk(m, f->p, f->feat, f->bar, HM_B, K, h2);
    ref_mamba(m, f->p, h2, HM_B, e);
    for (int b = 0; s && b < HM_B; ++b)
        for (int j = 0; j < H; ++j) {
            const double last = h2[((int64_t)b * K + K - 1) * H + j];
            e[b * H + j] = last + s[b] * (e[b * H + j] - last);
        }
    ref_heads(m, f->p, e, f->port, f->taus, HM_B, HM_T, logp, q, zq);
    free(h2);
    free(e);
}

/* Loss weights of the gradient check and the scales it runs with. */
static double* g_wl;
static double* g_wi;

static double loss_sd(const hm_fixture* f) {
    const vp_model_cfg* c = &f->m.cfg;
    const int A = vp_model_cfg_actions(c), Z = c->n_atoms;
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    ref_forward_sd(f, S4, logp, q, zq);
    const double L = ref_dot(g_wl, logp, HM_B * A * Z) + ref_dot(g_wi, zq, HM_B * HM_T * A);
    free(logp);
    free(q);
    free(zq);
    return L;
}

static void test_training_forward_and_grads(void) {
    vp_model_cfg c = hm_cfg();
    c.stoch_depth = 0.5f;
    hm_fixture f;
    if (!hm_fixture_init(&f, &c, 31)) return;
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    float u[HM_B], wlf[HM_B * 5 * 7], wif[HM_B * HM_T * 5];
    memcpy(u, U4, sizeof u);
    vp_tensor u_t = vp_tensor_1d(u, VP_F32, VP_MEM_HOST, HM_B);
    CHECK_OK(vp_model_acts_set_drop(f.a, &u_t));
    g_wl = ref_alloc(HM_B * A * Z);
    g_wi = ref_alloc(HM_B * HM_T * A);
    ref_fill(g_wl, HM_B * A * Z, 4, -1, 1);
    ref_fill(g_wi, HM_B * HM_T * A, 5, -1, 1);
    hm_round(g_wl, wlf, HM_B * A * Z);
    hm_round(g_wi, wif, HM_B * HM_T * A);
    vp_tensor wl_t = vp_tensor_3d(wlf, VP_F32, VP_MEM_HOST, HM_B, A, Z);
    vp_tensor wi_t = vp_tensor_3d(wif, VP_F32, VP_MEM_HOST, HM_B, HM_T, A);
    // forward vs the reference with the scales (2, 0, 2, 0)
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, HM_B));
    const float* sc = (const float*)f.a->sd_scale.data;
    CHECK(sc[0] == 2.0f && sc[1] == 0.0f && sc[2] == 2.0f && sc[3] == 0.0f, "scales %g %g %g %g", sc[0], sc[1], sc[2],
          sc[3]);
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    double* got = ref_alloc(HM_B * A * Z);
    ref_forward_sd(&f, S4, logp, q, zq);
    vp_tensor t_lp = vp_model_log_probs(f.a), t_zq = vp_model_iqn(f.a);
    ref_from_f32(got, t_lp.data, HM_B * A * Z);
    const double e1 = ref_rel_err(got, logp, HM_B * A * Z);
    ref_from_f32(got, t_zq.data, HM_B * HM_T * A);
    const double e2 = ref_rel_err(got, zq, HM_B * HM_T * A);
    CHECK(e1 < FWD_TOL && e2 < FWD_TOL, "training forward vs reference: logp %.3g iqn %.3g", e1, e2);
    // a dropped sample's encoding is its last bar's trunk row, exactly
    const int H = c.hidden, K = c.window;
    CHECK(memcmp((const float*)f.a->e.data + 1 * H, (const float*)f.a->h2.data + (1 * K + K - 1) * H,
                 sizeof(float) * (size_t)H) == 0,
          "sample 1 (dropped): e is not h2 at its last bar");
    // backward vs finite differences of the reference, every tensor
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &wl_t, &wi_t));
    const int n = hm_check_grads(&f, "", loss_sd);
    CHECK(n == f.m.n_params, "checked %d of %d tensors", n, f.m.n_params);
    free(logp);
    free(q);
    free(zq);
    free(got);
    free(g_wl);
    free(g_wi);
    hm_fixture_free(&f);
}

static void test_inference_is_identity(void) {
    vp_model_cfg c = hm_cfg(), off = hm_cfg();
    c.stoch_depth = 0.5f;
    hm_fixture f, g;
    if (!hm_fixture_init(&f, &c, 32) || !hm_fixture_init(&g, &off, 32)) return;
    CHECK(f.m.n_weights == g.m.n_weights && f.m.n_params == g.m.n_params, "stochastic depth added parameters");
    CHECK(memcmp(f.m.params.data, g.m.params.data, sizeof(float) * (size_t)f.m.n_weights) == 0, "parameters differ");
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    // no uniforms set, and uniforms set then cleared: both the plain network's bits
    float u[HM_B] = {0.1f, 0.1f, 0.1f, 0.1f};
    vp_tensor u_t = vp_tensor_1d(u, VP_F32, VP_MEM_HOST, HM_B);
    for (int round = 0; round < 2; ++round) {
        if (round == 1) {
            CHECK_OK(vp_model_acts_set_drop(f.a, &u_t));
            CHECK_OK(vp_model_acts_set_drop(f.a, NULL));
        }
        CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, HM_B));
        CHECK_OK(vp_model_forward(&g.m, &g.m.params, g.a, &g.features, &g.bar_t, &g.port_t, &g.taus_t, HM_B));
        CHECK(memcmp(vp_model_log_probs(f.a).data, vp_model_log_probs(g.a).data,
                     sizeof(float) * (size_t)(HM_B * A * Z)) == 0 &&
                  memcmp(vp_model_iqn(f.a).data, vp_model_iqn(g.a).data, sizeof(float) * (size_t)(HM_B * HM_T * A)) == 0,
              "round %d: an inference forward differs from the plain network", round);
    }
    // forward-only activations refuse the uniforms
    vp_model_acts* fo = NULL;
    CHECK_OK(vp_model_acts_init(&fo, &f.m, HM_B, 0, 0));
    CHECK_STATUS(vp_model_acts_set_drop(fo, &u_t), VP_ERR_STATE, "activations made for a backward");
    vp_model_acts_free(fo);
    hm_fixture_free(&f);
    hm_fixture_free(&g);
}

static void test_cfg_checks(void) {
    vp_model_cfg c = hm_cfg();
    c.stoch_depth = 1.0f;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "stoch_depth = 1 must lie in [0, 1)");
    c.stoch_depth = -0.1f;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "stoch_depth = -0.1 must lie in [0, 1)");
    c.stoch_depth = 0.2f;
    c.encoder = VP_ENCODER_NONE;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "the encoder is none, not mamba2");
    c.encoder = VP_ENCODER_MAMBA2;
    CHECK_OK(vp_model_cfg_check(&c));
}

static void test_learner_draws(void) {
    vp_learner_cfg c = hl_cfg(0.5f, 0);
    hl_fixture f, g;
    if (!hl_fixture_init(&f, &c) || !hl_fixture_init(&g, &c)) return;
    // two steps: each draws one uniform per sample from Philox(seed, stream, step * B + b)
    for (int step = 0; step < 2; ++step) {
        vp_runtime_counters before, after;
        vp_backend_counters(f.b, &before);
        CHECK_OK(vp_learner_step(&f.l, &f.bt, NULL));
        vp_backend_counters(f.b, &after);
        CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
              "step %d allocated, copied or synchronised", step);
        CHECK_OK(vp_learner_step(&g.l, &g.bt, NULL));
        const float* u = (const float*)f.l.scratch->drop_u.data;
        const float* s = (const float*)f.l.scratch->acts->sd_scale.data;
        int kept = 0;
        for (int b = 0; b < HL_B; ++b) {
            const float want = vp_u32_to_open_unit(
                vp_rng_draw(c.seed, VP_LEARNER_STREAM_DROP, (uint64_t)step * HL_B + (uint64_t)b).v[0]);
            CHECK(u[b] == want, "step %d sample %d: uniform %.9g, Philox gives %.9g", step, b, u[b], want);
            CHECK(s[b] == (u[b] >= 0.5f ? 2.0f : 0.0f), "step %d sample %d: scale %g for u %g", step, b, s[b], u[b]);
            kept += s[b] != 0.0f;
        }
        fprintf(stderr, "  step %d: %d of %d branches kept\n", step, kept, HL_B);
    }
    CHECK(memcmp(f.l.model.params.data, g.l.model.params.data, sizeof(float) * (size_t)f.l.model.n_weights) == 0,
          "two learners of one seed differ after two steps");
    // the drop changes the step: the same learner without it ends elsewhere
    vp_learner_cfg c0 = hl_cfg(0.0f, 0);
    hl_fixture h;
    if (hl_fixture_init(&h, &c0)) {
        CHECK_OK(vp_learner_step(&h.l, &h.bt, NULL));
        CHECK_OK(vp_learner_step(&h.l, &h.bt, NULL));
        CHECK(memcmp(f.l.model.params.data, h.l.model.params.data, sizeof(float) * (size_t)f.l.model.n_weights) != 0,
              "stochastic depth 0.5 left the parameters of the plain learner");
        hl_fixture_free(&h);
    }
    hl_fixture_free(&f);
    hl_fixture_free(&g);
}

int main(void) {
    RUN_TEST(test_kernel_hand_values);
    RUN_TEST(test_training_forward_and_grads);
    RUN_TEST(test_inference_is_identity);
    RUN_TEST(test_cfg_checks);
    RUN_TEST(test_learner_draws);
    return vpt_finish();
}
