/* GPU parity of the head modules (stochastic depth, Q-denoise refinement, cross-branch
 * messages, risk-budget head). Their kernels on fresh random inputs at odd and default sizes:
 * the element-wise stochastic depth and the cross-branch layout bit for bit, the losses of the
 * refinement and of the risk budget within 1e-6 norm-wise (per-sample sums may contract to
 * FMAs). Then the whole network with all four on, FP32 products: a training forward with the
 * same uniforms and a backward with the same refinement and risk gradients against the CPU's
 * (1e-5 forward; 1e-4 per gradient tensor relative to its norm, or to 1 % of its share of the whole
 * gradient's where that is larger: small batches, so no ReLU mask flips), with no
 * allocation, copy or sync in the pair; then learner steps with all four on stay free of
 * them too. Runs on a GPU machine only. */
#include "gpu_twin.h"
#include "learn/learner_internal.h"
#include "model/hmops.h"
#include "model/model_internal.h"

static const vp_hmops* kernels(vp_backend* b) {
    const vp_hmops* k = NULL;
    CHECK_OK(vp_hmops_get(b, &k));
    return k;
}

static void sd_case(int64_t B, int64_t H, float p) {
    char cas[64];
    snprintf(cas, sizeof cas, "B%lld H%lld p%g", (long long)B, (long long)H, (double)p);
    twin u, last, o, scale, e, de, d_o;
    twin_1d(&u, VP_F32, B);
    twin_2d(&last, VP_F32, B, H);
    twin_2d(&o, VP_F32, B, H);
    twin_1d(&scale, VP_F32, B);
    twin_2d(&e, VP_F32, B, H);
    twin_2d(&de, VP_F32, B, H);
    twin_2d(&d_o, VP_F32, B, H);
    twin_rand(&u, 0.0f, 1.0f);
    twin_rand(&last, -2.0f, 2.0f);
    twin_rand(&o, -2.0f, 2.0f);
    twin_rand(&de, -1.0f, 1.0f);
    twin_poison(&scale), twin_poison(&e), twin_poison(&d_o);
    const vp_hmops *kc = kernels(g_cpu), *kg = kernels(g_gpu);
    CHECK_OK(kc->sd_forward(g_cpu, B, H, p, u.h.data, last.h.data, o.h.data, scale.h.data, e.h.data));
    CHECK_OK(kg->sd_forward(g_gpu, B, H, p, u.d.data, last.d.data, o.d.data, scale.d.data, e.d.data));
    CHECK_OK(kc->sd_backward(g_cpu, B, H, scale.h.data, de.h.data, d_o.h.data));
    CHECK_OK(kg->sd_backward(g_gpu, B, H, scale.d.data, de.d.data, d_o.d.data));
    twin_check_bits("sd_forward scale", cas, &scale);
    twin_check_bits("sd_forward e", cas, &e);
    twin_check_bits("sd_backward", cas, &d_o);
    twin_free(&u), twin_free(&last), twin_free(&o), twin_free(&scale), twin_free(&e), twin_free(&de), twin_free(&d_o);
}

static void qd_case(int64_t B, int Z, const vp_branch_map* br) {
    char cas[64];
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    snprintf(cas, sizeof cas, "B%lld Z%d A%d", (long long)B, Z, A);
    twin proj, act, w, q, loss, dq;
    twin_2d(&proj, VP_F32, B * br->n, Z);
    twin_2d(&act, VP_I32, B, br->n);
    twin_1d(&w, VP_F32, B);
    twin_2d(&q, VP_F32, B, A);
    twin_1d(&loss, VP_F32, B);
    twin_2d(&dq, VP_F32, B, A);
    twin_rand(&proj, 0.0f, 1.0f);
    twin_rand(&w, 0.1f, 1.0f);
    twin_rand(&q, -3.0f, 3.0f);
    // actions inside each branch
    for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < br->n; ++k)
            ((int32_t*)act.h.data)[b * br->n + k] = (int32_t)((b * 7 + k * 3) % br->size[k]);
    twin_push(&act);
    twin_poison(&loss), twin_poison(&dq);
    const vp_hmops *kc = kernels(g_cpu), *kg = kernels(g_gpu);
    CHECK_OK(kc->qd_loss(g_cpu, B, Z, -10.0f, 10.0f, br, proj.h.data, act.h.data, w.h.data, q.h.data, loss.h.data,
                         dq.h.data));
    CHECK_OK(kg->qd_loss(g_gpu, B, Z, -10.0f, 10.0f, br, proj.d.data, act.d.data, w.d.data, q.d.data, loss.d.data,
                         dq.d.data));
    twin_check("qd_loss loss", cas, &loss, 1e-6);
    twin_check("qd_loss d_q", cas, &dq, 1e-6);
    twin_free(&proj), twin_free(&act), twin_free(&w), twin_free(&q), twin_free(&loss), twin_free(&dq);
}

static void pack_case(int64_t B, int Z, const vp_branch_map* br) {
    char cas[64];
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    snprintf(cas, sizeof cas, "B%lld Z%d A%d", (long long)B, Z, A);
    twin blocks, adv, back;
    twin_1d(&blocks, VP_F32, B * A * Z);
    twin_1d(&adv, VP_F32, B * A * Z);
    twin_1d(&back, VP_F32, B * A * Z);
    twin_rand(&blocks, -1.0f, 1.0f);
    twin_poison(&adv), twin_poison(&back);
    const vp_hmops *kc = kernels(g_cpu), *kg = kernels(g_gpu);
    CHECK_OK(kc->xb_pack(g_cpu, B, Z, br, 1, blocks.h.data, adv.h.data));
    CHECK_OK(kg->xb_pack(g_gpu, B, Z, br, 1, blocks.d.data, adv.d.data));
    CHECK_OK(kc->xb_pack(g_cpu, B, Z, br, 0, adv.h.data, back.h.data));
    CHECK_OK(kg->xb_pack(g_gpu, B, Z, br, 0, adv.d.data, back.d.data));
    twin_check_bits("xb_pack to adv", cas, &adv);
    twin_check_bits("xb_pack to blocks", cas, &back);
    twin_free(&blocks), twin_free(&adv), twin_free(&back);
}

static void rb_case(int64_t B, int T, const vp_branch_map* br) {
    char cas[64];
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    snprintf(cas, sizeof cas, "B%lld T%d A%d", (long long)B, T, A);
    twin iqn, taus, act, w, s, loss, dl;
    twin_1d(&iqn, VP_F32, B * T * A);
    twin_2d(&taus, VP_F32, B, T);
    twin_2d(&act, VP_I32, B, br->n);
    twin_1d(&w, VP_F32, B);
    twin_1d(&s, VP_F32, B);
    twin_1d(&loss, VP_F32, B);
    twin_1d(&dl, VP_F32, B);
    twin_rand(&iqn, -3.0f, 2.0f);
    twin_rand(&taus, 0.0f, 1.0f);
    twin_rand(&w, 0.1f, 1.0f);
    twin_rand(&s, 0.01f, 0.99f);
    for (int64_t b = 0; b < B; ++b)
        for (int k = 0; k < br->n; ++k)
            ((int32_t*)act.h.data)[b * br->n + k] = (int32_t)((b * 5 + k) % br->size[k]);
    twin_push(&act);
    twin_poison(&loss), twin_poison(&dl);
    const vp_hmops *kc = kernels(g_cpu), *kg = kernels(g_gpu);
    CHECK_OK(kc->rb_loss(g_cpu, B, T, A, br->n, br->size[0], br->size[1], 0.1f, 0.5f, iqn.h.data, taus.h.data,
                         act.h.data, w.h.data, s.h.data, loss.h.data, dl.h.data));
    CHECK_OK(kg->rb_loss(g_gpu, B, T, A, br->n, br->size[0], br->size[1], 0.1f, 0.5f, iqn.d.data, taus.d.data,
                         act.d.data, w.d.data, s.d.data, loss.d.data, dl.d.data));
    twin_check("rb_loss loss", cas, &loss, 1e-6);
    twin_check("rb_loss d_logit", cas, &dl, 1e-6);
    twin_free(&iqn), twin_free(&taus), twin_free(&act), twin_free(&w), twin_free(&s), twin_free(&loss);
    twin_free(&dl);
}

static void test_kernels(void) {
    sd_case(5, 7, 0.3f);
    sd_case(8192, 256, 0.1f);
    const vp_branch_map odd = {3, {2, 1, 4}}, def = {4, {3, 4, 3, 3}};
    qd_case(7, 11, &odd);
    qd_case(8192, 51, &def);
    pack_case(3, 5, &odd);
    pack_case(8192, 51, &def);
    rb_case(9, 5, &odd);
    rb_case(8192, 64, &def);
}

/* The small network of the CPU tests with both modules on. */
static vp_model_cfg small_cfg(void) {
    vp_model_cfg c = vp_model_cfg_default();
    c.n_features = 5;
    c.n_portfolio = 3;
    c.window = 5;
    c.hidden = 8;
    c.mamba_head_dim = 4;
    c.mamba_state = 3;
    c.head_hidden = 6;
    c.n_atoms = 7;
    c.n_branches = 2;
    c.branch_sizes[0] = 3;
    c.branch_sizes[1] = 2;
    c.iqn_cos = 4;
    c.stoch_depth = 0.4f;
    c.q_denoise = 1;
    c.cross_branch = 1;
    c.risk_budget = 0.5f;
    return c;
}

static void test_model_parity(void) {
    const vp_model_cfg c = small_cfg();
    const int64_t B = 37, ROWS = 50;
    const int T = 3, A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    vp_model mc, mg;
    CHECK_OK(vp_model_init(&mc, g_cpu, &c, 5));
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 5));
    mc.precision = mg.precision = VP_PREC_FP32;
    // a nonzero refinement output layer on both sides
    twin pw;
    twin_1d(&pw, VP_F32, mc.n_weights);
    memcpy(pw.h.data, mc.params.data, sizeof(float) * (size_t)mc.n_weights);
    const vp_param_info* w2 = vp_model_find_param(&mc, "qdenoise.w2");
    for (int64_t i = 0; i < w2->numel; ++i) ((float*)pw.h.data)[w2->offset + i] = 0.05f * (float)((i % 9) - 4);
    twin_push(&pw);
    vp_model_acts *ac = NULL, *ag = NULL;
    CHECK_OK(vp_model_acts_init(&ac, &mc, B, T, 1));
    CHECK_OK(vp_model_acts_init(&ag, &mg, B, T, 1));
    twin feat, bar, port, taus, u, dq, dlp, diq;
    twin_2d(&feat, VP_F32, ROWS, c.n_features);
    twin_1d(&bar, VP_I32, B);
    twin_2d(&port, VP_F32, B, c.n_portfolio);
    twin_2d(&taus, VP_F32, B, T);
    twin_1d(&u, VP_F32, B);
    twin_2d(&dq, VP_F32, B, A);
    twin_make(&dlp, VP_F32, 3, (int64_t[3]){B, A, Z});
    twin_make(&diq, VP_F32, 3, (int64_t[3]){B, T, A});
    twin_rand(&feat, -2.0f, 2.0f);
    twin_rand(&bar, 0.0f, (float)ROWS);
    twin_rand(&port, -1.0f, 1.0f);
    twin_rand(&taus, 0.02f, 0.98f);
    twin_rand(&u, 0.0f, 1.0f);
    twin_rand(&dq, -1.0f, 1.0f);
    twin_rand(&dlp, -1.0f, 1.0f);
    twin_rand(&diq, -1.0f, 1.0f);
    CHECK_OK(vp_model_acts_set_drop(ac, &u.h));
    CHECK_OK(vp_model_acts_set_drop(ag, &u.d));
    CHECK_OK(vp_model_acts_set_qd_grad(ac, &dq.h));
    CHECK_OK(vp_model_acts_set_qd_grad(ag, &dq.d));
    CHECK_OK(vp_model_acts_set_rb_grad(ac, &u.h)); /* any [B] gradient of the logit */
    CHECK_OK(vp_model_acts_set_rb_grad(ag, &u.d));
    vp_runtime_counters before, after;
    CHECK_OK(vp_model_forward(&mc, &pw.h, ac, &feat.h, &bar.h, &port.h, &taus.h, B));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_model_forward(&mg, &pw.d, ag, &feat.d, &bar.d, &port.d, &taus.d, B));
    CHECK_OK(vp_model_backward(&mg, &pw.d, ag, &dlp.d, &diq.d));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "the GPU forward and backward allocated, copied or synchronised");
    CHECK_OK(vp_model_backward(&mc, &pw.h, ac, &dlp.h, &diq.h));
    CHECK_OK(vp_backend_sync(g_gpu));
    // outputs: refined Q, C51 Q, log-probs, quantiles, the drop scales
    const struct {
        const char* name;
        vp_tensor hc, hg;
        int64_t n;
    } outs[6] = {{"q refined", vp_model_q(ac), vp_model_q(ag), B * A},
                 {"risk scale", vp_model_risk_scale(ac), vp_model_risk_scale(ag), B},
                 {"q c51", vp_model_q_c51(ac), vp_model_q_c51(ag), B * A},
                 {"log_probs", vp_model_log_probs(ac), vp_model_log_probs(ag), B * A * Z},
                 {"iqn", vp_model_iqn(ac), vp_model_iqn(ag), B * T * A},
                 {"drop scales", ac->sd_scale, ag->sd_scale, B}};
    for (int i = 0; i < 6; ++i) {
        twin t;
        twin_1d(&t, VP_F32, outs[i].n);
        memcpy(t.h.data, outs[i].hc.data, sizeof(float) * (size_t)outs[i].n);
        vp_tensor src = vp_tensor_1d(outs[i].hg.data, VP_F32, VP_MEM_DEVICE, outs[i].n);
        CHECK_OK(vp_copy(g_gpu, &src, &t.d));
        twin_check(outs[i].name, "small B37 fp32", &t, 1e-5);
        twin_free(&t);
    }
    // every gradient tensor, against the larger of its own norm and 1 % of its share of the whole
    // gradient's: a per-head scalar such as mamba.A_log sums terms over every sample, step and
    // channel, and where they nearly cancel its own norm is far below the rounding of the terms
    const float* gc = (const float*)mc.grads.data;
    double all = 0.0;
    for (int64_t i = 0; i < mc.n_weights; ++i) all += (double)gc[i] * gc[i];
    all = sqrt(all);
    CHECK(all > 0.0, "the CPU's gradient is zero");
    for (int k = 0; k < mc.n_params; ++k) {
        const vp_param_info* p = &mc.info[k];
        twin t;
        twin_1d(&t, VP_F32, p->numel);
        memcpy(t.h.data, gc + p->offset, sizeof(float) * (size_t)p->numel);
        vp_tensor src = vp_tensor_1d((float*)mg.grads.data + p->offset, VP_F32, VP_MEM_DEVICE, p->numel);
        CHECK_OK(vp_copy(g_gpu, &src, &t.d));
        double own = 0.0;
        for (int64_t i = 0; i < p->numel; ++i) own += (double)gc[p->offset + i] * gc[p->offset + i];
        own = sqrt(own);
        const double share = all * sqrt((double)p->numel / (double)mc.n_weights);
        twin_check_scaled(p->name, "grad small B37 fp32", &t, 1e-4, own > 1e-2 * share ? own : 1e-2 * share);
        twin_free(&t);
    }
    vp_model_acts_free(ac);
    vp_model_acts_free(ag);
    twin_free(&pw), twin_free(&feat), twin_free(&bar), twin_free(&port), twin_free(&taus), twin_free(&u);
    twin_free(&dq), twin_free(&dlp), twin_free(&diq);
    vp_model_free(&mc);
    vp_model_free(&mg);
}

static void test_learner_step_gpu(void) {
    vp_learner_cfg c = vp_learner_cfg_default();
    c.model = small_cfg();
    c.batch = 64;
    c.n_taus = 3;
    c.n_target_taus = 4;
    vp_learner l;
    vp_batch bt;
    CHECK_OK(vp_learner_init(&l, g_gpu, &c));
    CHECK_OK(vp_learner_batch_init(&l, &bt));
    twin feat;
    twin_2d(&feat, VP_F32, 40, c.model.n_features);
    twin_rand(&feat, -2.0f, 2.0f);
    bt.features = feat.d;
    // indices, actions and weights that are valid; the rest zero
    CHECK_OK(vp_fill_i32(g_gpu, &bt.bar_idx, 10));
    CHECK_OK(vp_fill_i32(g_gpu, &bt.next_bar_idx, 13));
    CHECK_OK(vp_fill_i32(g_gpu, &bt.actions, 1));
    CHECK_OK(vp_fill(g_gpu, &bt.portfolio, 0.1f));
    CHECK_OK(vp_fill(g_gpu, &bt.next_portfolio, 0.2f));
    CHECK_OK(vp_fill(g_gpu, &bt.reward, 0.5f));
    CHECK_OK(vp_fill(g_gpu, &bt.discount, 0.97f));
    CHECK_OK(vp_fill(g_gpu, &bt.is_weight, 1.0f));
    CHECK_OK(vp_learner_draw_taus(&l, &bt));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int i = 0; i < 3; ++i) CHECK_OK(vp_learner_step(&l, &bt, NULL));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "learner steps with the head modules allocated, copied or synchronised");
    CHECK_OK(vp_backend_sync(g_gpu));
    CHECK(isfinite(l.stats_host[VP_STAT_LOSS]) && l.stats_host[VP_STAT_NAN] == 0.0f, "loss %g after 3 steps",
          l.stats_host[VP_STAT_LOSS]);
    twin_row("learner step (modules)", "B64, 3 steps", 0.0, 0.0, 1);
    twin_free(&feat);
    vp_learner_free(&l);
}

int main(void) {
    gpu_setup("test_gpu_modules_head");
    RUN_TEST(test_kernels);
    RUN_TEST(test_model_parity);
    RUN_TEST(test_learner_step_gpu);
    gpu_teardown();
    return vpt_finish();
}
