/* Cross-branch message passing on the CPU: the layout kernel on hand values; the forward of
 * the whole network against a double reference of the branch states, messages and per-branch
 * output rows, and its backward against finite differences, every tensor; the near-identity
 * start (embeddings the identity within 0.01, messages within 0.01, the advantages close to
 * the network without it); the one-sample forward equals the batch forward. */
#include "model/hmops.h"
#include "test_hmods_util.h"

static void test_pack_hand_values(void) {
    // B = 2, Z = 1, branches (2, 1): blocks [[1, 2], [3, 4]] then [[5], [6]]
    const vp_branch_map br = {2, {2, 1}};
    const float blocks[6] = {1, 2, 3, 4, 5, 6};
    const float want[6] = {1, 2, 5, 3, 4, 6};
    float adv[6], back[6];
    CHECK_OK(vp_hcpu_xb_pack(NULL, 2, 1, &br, 1, blocks, adv));
    CHECK(memcmp(adv, want, sizeof adv) == 0, "adv = %g %g %g %g %g %g", adv[0], adv[1], adv[2], adv[3], adv[4],
          adv[5]);
    CHECK_OK(vp_hcpu_xb_pack(NULL, 2, 1, &br, 0, adv, back));
    CHECK(memcmp(back, blocks, sizeof back) == 0, "the way back differs");
}

/* The advantage stream with the messages: h [B, H] -> adv [B, A * Z]. */
static void ref_adv_xb(const vp_model* m, const double* p, const double* h, double* adv) {
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, HH = c->head_hidden, Z = c->n_atoms, nb = c->n_branches, A = vp_model_cfg_actions(c);
    double* ah = ref_alloc(HM_B * HH);
    double* S = ref_alloc((int64_t)nb * HM_B * HH);
    double* Sp = ref_alloc((int64_t)nb * HM_B * HH);
    const double *E = ref_param(m, p, "xbranch.embed.w"), *W = ref_param(m, p, "xbranch.msg.w");
    const double *A2 = ref_param(m, p, "c51.a2.w"), *b2 = ref_param(m, p, "c51.a2.b");
    ref_linear(h, HM_B, H, ref_param(m, p, "c51.a1.w"), ref_param(m, p, "c51.a1.b"), HH, ah);
    ref_relu(ah, HM_B * HH);
    for (int k = 0; k < nb; ++k) ref_linear(ah, HM_B, HH, E + (int64_t)k * HH * HH, NULL, HH, S + k * HM_B * HH);
    ref_relu(S, (int64_t)nb * HM_B * HH);
    memcpy(Sp, S, sizeof(double) * (size_t)(nb * HM_B * HH));
    double* msg = ref_alloc(HM_B * HH);
    for (int j = 0; j < nb; ++j)
        for (int k = 0; k < nb; ++k) {
            ref_linear(S + j * HM_B * HH, HM_B, HH, W + ((int64_t)j * nb + k) * HH * HH, NULL, HH, msg);
            for (int64_t i = 0; i < HM_B * HH; ++i) Sp[k * HM_B * HH + i] += msg[i];
        }
    int o = 0;
    double* blk = ref_alloc(HM_B * A * Z);
    for (int k = 0; k < nb; ++k) {
        const int w = c->branch_sizes[k] * Z;
        ref_linear(Sp + k * HM_B * HH, HM_B, HH, A2 + (int64_t)o * Z * HH, b2 + o * Z, w, blk);
        for (int b = 0; b < HM_B; ++b)
            for (int j = 0; j < w; ++j) adv[(int64_t)b * A * Z + o * Z + j] = blk[b * w + j];
        o += c->branch_sizes[k];
    }
    free(ah), free(S), free(Sp), free(msg), free(blk);
}

/* The whole reference forward with the messages. */
static void ref_forward_xb(const hm_fixture* f, double* logp, double* q, double* zq) {
    const vp_model* m = &f->m;
    const vp_model_cfg* c = &m->cfg;
    const int H = c->hidden, K = c->window, HH = c->head_hidden, Z = c->n_atoms, A = vp_model_cfg_actions(c);
    double* h2 = ref_alloc(HM_B * K * H);
    double* h = ref_alloc(HM_B * H);
    double* hid = ref_alloc(HM_B * HH);
    double* v = ref_alloc(HM_B * Z);
    double* adv = ref_alloc(HM_B * A * Z);
    ref_trunk(m, f->p, f->feat, f->bar, HM_B, K, h2);
    ref_mamba(m, f->p, h2, HM_B, h);
    double* e = ref_alloc(HM_B * H);
    memcpy(e, h, sizeof(double) * (size_t)(HM_B * H));
    ref_linear(f->port, HM_B, c->n_portfolio, ref_param(m, f->p, "port.w"), ref_param(m, f->p, "port.b"), H, h);
    for (int64_t i = 0; i < HM_B * H; ++i) h[i] += e[i];
    ref_linear(h, HM_B, H, ref_param(m, f->p, "c51.v1.w"), ref_param(m, f->p, "c51.v1.b"), HH, hid);
    ref_relu(hid, HM_B * HH);
    ref_linear(hid, HM_B, HH, ref_param(m, f->p, "c51.v2.w"), ref_param(m, f->p, "c51.v2.b"), Z, v);
    ref_adv_xb(m, f->p, h, adv);
    ref_combine(c, HM_B, v, adv, logp, q);
    ref_iqn(m, f->p, h, f->taus, HM_B, HM_T, zq);
    free(h2), free(h), free(hid), free(v), free(adv), free(e);
}

static double *g_wl, *g_wi;

static double loss_xb(const hm_fixture* f) {
    const vp_model_cfg* c = &f->m.cfg;
    const int A = vp_model_cfg_actions(c), Z = c->n_atoms;
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    ref_forward_xb(f, logp, q, zq);
    const double L = ref_dot(g_wl, logp, HM_B * A * Z) + ref_dot(g_wi, zq, HM_B * HM_T * A);
    free(logp), free(q), free(zq);
    return L;
}

static void test_forward_and_grads(void) {
    vp_model_cfg c = hm_cfg();
    c.cross_branch = 1;
    hm_fixture f;
    if (!hm_fixture_init(&f, &c, 51)) return;
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    const vp_param_info* E = vp_model_find_param(&f.m, "xbranch.embed.w");
    const vp_param_info* W = vp_model_find_param(&f.m, "xbranch.msg.w");
    CHECK(E && W && E->shape[0] == 2 * 6 && E->shape[1] == 6 && W->shape[0] == 4 * 6 && W->shape[1] == 6,
          "embeddings [12, 6] and messages [24, 6]");
    float wlf[HM_B * 5 * 7], wif[HM_B * HM_T * 5];
    g_wl = ref_alloc(HM_B * A * Z);
    g_wi = ref_alloc(HM_B * HM_T * A);
    ref_fill(g_wl, HM_B * A * Z, 4, -1, 1);
    ref_fill(g_wi, HM_B * HM_T * A, 5, -1, 1);
    hm_round(g_wl, wlf, HM_B * A * Z);
    hm_round(g_wi, wif, HM_B * HM_T * A);
    vp_tensor wl_t = vp_tensor_3d(wlf, VP_F32, VP_MEM_HOST, HM_B, A, Z);
    vp_tensor wi_t = vp_tensor_3d(wif, VP_F32, VP_MEM_HOST, HM_B, HM_T, A);
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, HM_B));
    double* logp = ref_alloc(HM_B * A * Z);
    double* q = ref_alloc(HM_B * A);
    double* zq = ref_alloc(HM_B * HM_T * A);
    double* got = ref_alloc(HM_B * A * Z);
    ref_forward_xb(&f, logp, q, zq);
    ref_from_f32(got, vp_model_log_probs(f.a).data, HM_B * A * Z);
    const double e1 = ref_rel_err(got, logp, HM_B * A * Z);
    ref_from_f32(got, vp_model_q(f.a).data, HM_B * A);
    const double e2 = ref_rel_err(got, q, HM_B * A);
    CHECK(e1 < FWD_TOL && e2 < FWD_TOL, "forward vs reference: logp %.3g q %.3g", e1, e2);
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &wl_t, &wi_t));
    const int n = hm_check_grads(&f, "", loss_xb);
    CHECK(n == f.m.n_params, "checked %d of %d tensors", n, f.m.n_params);
    free(logp), free(q), free(zq), free(got), free(g_wl), free(g_wi);
    hm_fixture_free(&f);
}

static void test_near_identity_start(void) {
    vp_model_cfg c = hm_cfg(), off = hm_cfg();
    c.cross_branch = 1;
    c.head_hidden = 32;
    off.head_hidden = 32;
    vp_backend* be = NULL;
    vp_model m, m0;
    CHECK_OK(vp_backend_cpu_init(&be));
    CHECK_OK(vp_model_init(&m, be, &c, 8));
    CHECK_OK(vp_model_init(&m0, be, &off, 8));
    CHECK(memcmp(m.params.data, m0.params.data, sizeof(float) * (size_t)m0.n_weights) == 0, "shared parameters differ");
    // embeddings: the identity per block within 0.01; messages within 0.01
    const vp_param_info* E = vp_model_find_param(&m, "xbranch.embed.w");
    const vp_param_info* W = vp_model_find_param(&m, "xbranch.msg.w");
    const float* p = (const float*)m.params.data;
    double worst_e = 0, worst_w = 0;
    for (int64_t i = 0; i < E->numel; ++i) {
        const int64_t r = (i / 32) % 32, col = i % 32;
        worst_e = fmax(worst_e, fabs(p[E->offset + i] - (r == col ? 1.0 : 0.0)));
    }
    for (int64_t i = 0; i < W->numel; ++i) worst_w = fmax(worst_w, fabs(p[W->offset + i]));
    CHECK(worst_e <= 0.01 && worst_e > 0.001 && worst_w <= 0.01 && worst_w > 0.001,
          "embeddings off the identity by %g, messages up to %g", worst_e, worst_w);
    // the advantages stay within a few percent of the network without the messages
    vp_model_acts *a = NULL, *a0 = NULL, *one = NULL;
    CHECK_OK(vp_model_acts_init(&a, &m, HM_B, 0, 0));
    CHECK_OK(vp_model_acts_init(&a0, &m0, HM_B, 0, 0));
    float feat[HM_ROWS * 5], port[HM_B * 3];
    for (int i = 0; i < HM_ROWS * 5; ++i) feat[i] = vp_rng_normal(9, 1, (uint64_t)i);
    for (int i = 0; i < HM_B * 3; ++i) port[i] = vp_rng_uniform(9, 2, (uint64_t)i) - 0.5f;
    int32_t bar[HM_B] = {0, 3, 8, 5};
    vp_tensor ft = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, HM_ROWS, 5), bt = vp_tensor_1d(bar, VP_I32, VP_MEM_HOST, HM_B);
    vp_tensor pt = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, HM_B, 3);
    CHECK_OK(vp_model_forward(&m, &m.params, a, &ft, &bt, &pt, NULL, HM_B));
    CHECK_OK(vp_model_forward(&m0, &m0.params, a0, &ft, &bt, &pt, NULL, HM_B));
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    double* x = ref_alloc(HM_B * A * Z);
    double* y = ref_alloc(HM_B * A * Z);
    ref_from_f32(x, a->adv.data, HM_B * A * Z);
    ref_from_f32(y, a0->adv.data, HM_B * A * Z);
    const double rel = ref_rel_err(x, y, HM_B * A * Z);
    fprintf(stderr, "  advantages at the start: %.3g relative to the network without messages\n", rel);
    CHECK(rel > 1e-4 && rel < 0.1, "advantages differ by %g from the network without messages", rel);
    // the one-sample forward of bar 8's window equals the batch forward's sample 2
    vp_model_inc w;
    vp_model_inc_ring r;
    CHECK_OK(vp_model_inc_init(&w, &m, &m.params));
    CHECK_OK(vp_model_inc_ring_init(&r, &w));
    CHECK_OK(vp_model_acts_init(&one, &m, 1, 0, 0));
    for (int t = 0; t <= 8; ++t) CHECK_OK(vp_model_inc_push(&w, one, &r, feat + t * 5));
    CHECK_OK(vp_model_inc_encode(&w, one, &r));
    vp_tensor p1 = vp_tensor_2d(port + 2 * 3, VP_F32, VP_MEM_HOST, 1, 3);
    CHECK_OK(vp_model_inc_heads(&w, one, &p1));
    CHECK(memcmp(vp_model_q(one).data, (const float*)vp_model_q(a).data + 2 * A, sizeof(float) * (size_t)A) == 0,
          "the one-sample Q of bar 8 differs from the batch forward's");
    free(x), free(y);
    vp_model_acts_free(one);
    vp_model_inc_ring_free(&r);
    vp_model_inc_free(&w);
    vp_model_acts_free(a);
    vp_model_acts_free(a0);
    vp_model_free(&m);
    vp_model_free(&m0);
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_pack_hand_values);
    RUN_TEST(test_forward_and_grads);
    RUN_TEST(test_near_identity_start);
    return vpt_finish();
}
