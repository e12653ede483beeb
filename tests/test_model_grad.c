/* Gradient checks of the whole network and of the trunk on the CPU: the C float forward
 * against the double reference (tests/model_ref.h), and the C backward against central
 * finite differences of that reference, tensor by tensor. Small odd shapes: F = 5, P = 3,
 * H = 8 (Mamba2 head dim 4, so 2 heads), N = 3, conv 4, head hidden 6, Z = 7,
 * branches (3, 2), 4 cosines, 3 taus, B = 4; K = 3 (shorter than the conv) and K = 5. */
#include "test_model_util.h"

static vp_model_cfg small_cfg(vp_model_encoder enc, int K) {
    vp_model_cfg c = tmu_cfg((tmu_dims){.F = 5, .P = 3, .K = K, .H = 8, .head_dim = 4, .N = 3, .conv = 4,
                                        .head_hidden = 6, .Z = 7, .v_min = -2.0f, .v_max = 3.0f, .n_cos = 4,
                                        .branches = {3, 2}});
    c.encoder = enc;
    // TLOB: 2 blocks, 2 temporal heads of 4, the feature heads dividing K, MLP x2
    c.tlob_blocks = 2;
    c.tlob_heads = 2;
    c.tlob_feature_heads = 1;
    c.tlob_mlp = 2;
    return c;
}

/* A small network with perturbed parameters, its inputs, and a random linear loss. */
typedef struct fixture {
    vp_backend* be;
    vp_model m;
    vp_model_acts* a;
    int64_t B, rows;    /* samples, feature rows */
    int T;              /* taus per sample */
    double* p;          /* [n_weights] parameters (double copy of the float ones) */
    double* feat;       /* [rows, F] */
    int32_t bar[4];     /* decision bars */
    double* port;       /* [B, P] */
    double* taus;       /* [B, T] */
    double* wl;         /* [B, A, Z] loss weights of log-probs */
    double* wi;         /* [B, T, A] loss weights of quantiles */
    float *featf, *portf, *tausf, *wlf, *wif;
    vp_tensor features, bar_t, port_t, taus_t, wl_t, wi_t;
} fixture;

static int fixture_init(fixture* f, const vp_model_cfg* c, uint64_t seed) {
    memset(f, 0, sizeof *f);
    if (vp_backend_cpu_init(&f->be) != VP_OK) return 0;
    if (vp_model_init(&f->m, f->be, c, seed) != VP_OK) return 0;
    f->B = 4;
    f->T = 3;
    f->rows = 9;
    if (vp_model_acts_init(&f->a, &f->m, f->B, f->T, 1) != VP_OK) return 0;
    const int A = vp_model_cfg_actions(c), Z = c->n_atoms;
    // parameters: the initial ones plus noise, so no norm weight sits at exactly 1
    f->p = ref_alloc(f->m.n_weights);
    ref_from_f32(f->p, f->m.params.data, f->m.n_weights);
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        for (int64_t i = 0; i < pi->numel; ++i) f->p[pi->offset + i] += ref_uniform(seed, 100 + k, i, -0.2, 0.2);
    }
    // dt near 0.7 and A near -1, so the decay of the state matters to the loss
    const char* ssm[2] = {"mamba.dt_bias", "mamba.A_log"};
    for (int k = 0; k < 2; ++k) {
        const vp_param_info* pi = vp_model_find_param(&f->m, ssm[k]);
        for (int64_t i = 0; pi && i < pi->numel; ++i) f->p[pi->offset + i] = ref_uniform(seed, 200 + k, i, -0.5, 0.5);
    }
    ref_to_f32(f->m.params.data, f->p, f->m.n_weights);
    ref_from_f32(f->p, f->m.params.data, f->m.n_weights);
    // inputs; bars 0 and 1 exercise the clamp at row 0
    f->feat = ref_alloc(f->rows * c->n_features);
    ref_fill(f->feat, f->rows * c->n_features, 1, -2, 2);
    f->bar[0] = 0;
    f->bar[1] = 1;
    f->bar[2] = 8;
    f->bar[3] = 5;
    f->port = ref_alloc(f->B * c->n_portfolio);
    ref_fill(f->port, f->B * c->n_portfolio, 2, -1, 1);
    f->taus = ref_alloc(f->B * f->T);
    ref_fill(f->taus, f->B * f->T, 3, 0.02, 0.98);
    f->wl = ref_alloc(f->B * A * Z);
    ref_fill(f->wl, f->B * A * Z, 4, -1, 1);
    f->wi = ref_alloc(f->B * f->T * A);
    ref_fill(f->wi, f->B * f->T * A, 5, -1, 1);
    // float host tensors of the same values
    f->featf = (float*)calloc((size_t)(f->rows * c->n_features), sizeof(float));
    f->portf = (float*)calloc((size_t)(f->B * c->n_portfolio), sizeof(float));
    f->tausf = (float*)calloc((size_t)(f->B * f->T), sizeof(float));
    f->wlf = (float*)calloc((size_t)(f->B * A * Z), sizeof(float));
    f->wif = (float*)calloc((size_t)(f->B * f->T * A), sizeof(float));
    ref_to_f32(f->featf, f->feat, f->rows * c->n_features);
    ref_to_f32(f->portf, f->port, f->B * c->n_portfolio);
    ref_to_f32(f->tausf, f->taus, f->B * f->T);
    ref_to_f32(f->wlf, f->wl, f->B * A * Z);
    ref_to_f32(f->wif, f->wi, f->B * f->T * A);
    ref_from_f32(f->feat, f->featf, f->rows * c->n_features);
    ref_from_f32(f->port, f->portf, f->B * c->n_portfolio);
    ref_from_f32(f->taus, f->tausf, f->B * f->T);
    f->features = vp_tensor_2d(f->featf, VP_F32, VP_MEM_HOST, f->rows, c->n_features);
    f->bar_t = vp_tensor_1d(f->bar, VP_I32, VP_MEM_HOST, f->B);
    f->port_t = vp_tensor_2d(f->portf, VP_F32, VP_MEM_HOST, f->B, c->n_portfolio);
    f->taus_t = vp_tensor_2d(f->tausf, VP_F32, VP_MEM_HOST, f->B, f->T);
    f->wl_t = vp_tensor_3d(f->wlf, VP_F32, VP_MEM_HOST, f->B, A, Z);
    f->wi_t = vp_tensor_3d(f->wif, VP_F32, VP_MEM_HOST, f->B, f->T, A);
    return 1;
}

static void fixture_free(fixture* f) {
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

/* The reference loss sum(wl * logp) + sum(wi * zq) at parameters f->p. */
static double ref_loss(const fixture* f) {
    const vp_model_cfg* c = &f->m.cfg;
    const int64_t nl = f->B * vp_model_cfg_actions(c) * c->n_atoms, ni = f->B * f->T * vp_model_cfg_actions(c);
    double* logp = ref_alloc(nl);
    double* q = ref_alloc(f->B * vp_model_cfg_actions(c));
    double* zq = ref_alloc(ni);
    ref_forward(&f->m, f->p, f->feat, f->bar, f->port, f->taus, f->B, f->T, logp, q, zq);
    double L = 0;
    for (int64_t i = 0; i < nl; ++i) L += f->wl[i] * logp[i];
    for (int64_t i = 0; i < ni; ++i) L += f->wi[i] * zq[i];
    free(logp);
    free(q);
    free(zq);
    return L;
}

/* Central difference of `loss` in element i of f->p. */
static double fd_at(fixture* f, int64_t i, double (*loss)(const fixture*)) {
    double keep = f->p[i];
    f->p[i] = keep + FD_EPS;
    double lp = loss(f);
    f->p[i] = keep - FD_EPS;
    double lm = loss(f);
    f->p[i] = keep;
    return (lp - lm) / (2 * FD_EPS);
}

/* Largest gradient error of the checks so far (printed by each test). */
static double g_worst = 0;

/* Compares m.grads of every tensor whose name starts with `prefix` with FD of `loss`. */
static void check_param_grads(fixture* f, const char* prefix, double (*loss)(const fixture*)) {
    int checked = 0;
    for (int k = 0; k < f->m.n_params; ++k) {
        const vp_param_info* pi = &f->m.info[k];
        if (strncmp(pi->name, prefix, strlen(prefix)) != 0) continue;
        double* fd = ref_alloc(pi->numel);
        double* an = ref_alloc(pi->numel);
        for (int64_t i = 0; i < pi->numel; ++i) fd[i] = fd_at(f, pi->offset + i, loss);
        ref_from_f32(an, (float*)f->m.grads.data + pi->offset, pi->numel);
        double err = ref_rel_err(an, fd, pi->numel);
        if (err > g_worst) g_worst = err;
        if (err > 1e-5) {
            fprintf(stderr, "    %s: grad rel err %.2g\n", pi->name, err);
        }
        CHECK(err < GRAD_TOL, "%s: ||grad - fd|| / ||fd|| = %.3g (tolerance %g)", pi->name, err, GRAD_TOL);
        double nrm = 0;
        for (int64_t i = 0; i < pi->numel; ++i) nrm += fd[i] * fd[i];
        CHECK(nrm > 1e-12, "%s: finite-difference gradient is zero, the check would be empty", pi->name);
        free(fd);
        free(an);
        checked++;
    }
    CHECK(checked > 0, "no parameter starts with %s", prefix);
}

/* Runs the C forward and backward, compares outputs with the reference and every gradient with FD. */
static void check_whole(vp_model_encoder enc, int K) {
    vp_model_cfg c = small_cfg(enc, K);
    const char* en = vp_model_encoder_name(enc);
    fixture f;
    CHECK(fixture_init(&f, &c, 7 + (uint64_t)K), "fixture: %s", vp_last_error());
    if (!f.a) {
        fixture_free(&f);
        return;
    }
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    // C float forward vs the double reference
    vp_runtime_counters before, after;
    vp_backend_counters(f.be, &before);
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, &f.taus_t, f.B));
    CHECK_OK(vp_model_backward(&f.m, &f.m.params, f.a, &f.wl_t, &f.wi_t));
    vp_backend_counters(f.be, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "forward + backward allocated, copied or synchronised");
    double* logp = ref_alloc(f.B * A * Z);
    double* q = ref_alloc(f.B * A);
    double* zq = ref_alloc(f.B * f.T * A);
    double* got = ref_alloc(f.B * A * Z);
    ref_forward(&f.m, f.p, f.feat, f.bar, f.port, f.taus, f.B, f.T, logp, q, zq);
    vp_tensor t_lp = vp_model_log_probs(f.a), t_q = vp_model_q(f.a), t_zq = vp_model_iqn(f.a);
    CHECK(t_lp.ndim == 3 && t_lp.shape[0] == f.B && t_lp.shape[1] == A && t_lp.shape[2] == Z, "log_probs shape");
    CHECK(t_zq.ndim == 3 && t_zq.shape[1] == f.T && t_zq.shape[2] == A, "iqn shape");
    ref_from_f32(got, t_lp.data, f.B * A * Z);
    double e1 = ref_rel_err(got, logp, f.B * A * Z);
    ref_from_f32(got, t_q.data, f.B * A);
    double e2 = ref_rel_err(got, q, f.B * A);
    ref_from_f32(got, t_zq.data, f.B * f.T * A);
    double e3 = ref_rel_err(got, zq, f.B * f.T * A);
    CHECK(e1 < FWD_TOL && e2 < FWD_TOL && e3 < FWD_TOL, "%s K %d: forward vs reference: logp %.3g q %.3g iqn %.3g",
          en, K, e1, e2, e3);
    // backward vs FD of the reference, every tensor
    g_worst = 0;
    check_param_grads(&f, "", ref_loss);
    fprintf(stderr, "  %s K %d: %d tensors, forward rel err logp %.2g q %.2g iqn %.2g, worst grad rel err %.2g\n",
            en, K, f.m.n_params, e1, e2, e3, g_worst);
    CHECK((vp_model_find_param(&f.m, "mamba.A_log") != NULL) == (enc == VP_ENCODER_MAMBA2), "mamba tensors present iff on");
    CHECK((vp_model_find_param(&f.m, "tlob.pos") != NULL) == (enc == VP_ENCODER_TLOB), "tlob tensors present iff on");
    free(logp);
    free(q);
    free(zq);
    free(got);
    fixture_free(&f);
}

static void test_whole_mamba_k3(void) { check_whole(VP_ENCODER_MAMBA2, 3); }
static void test_whole_mamba_k5(void) { check_whole(VP_ENCODER_MAMBA2, 5); }
static void test_whole_no_mamba(void) { check_whole(VP_ENCODER_NONE, 3); }
static void test_whole_tlob_k3(void) { check_whole(VP_ENCODER_TLOB, 3); }

/* Trunk alone: loss sum(w * h2) over all window rows. */
static double* g_trunk_w;
static double trunk_loss(const fixture* f) {
    const int64_t n = f->B * f->m.cfg.window * f->m.cfg.hidden;
    double* h2 = ref_alloc(n);
    ref_trunk(&f->m, f->p, f->feat, f->bar, f->B, f->m.cfg.window, h2);
    double L = 0;
    for (int64_t i = 0; i < n; ++i) L += g_trunk_w[i] * h2[i];
    free(h2);
    return L;
}

static void test_trunk_piece(void) {
    vp_model_cfg c = small_cfg(VP_ENCODER_MAMBA2, 3);
    fixture f;
    CHECK(fixture_init(&f, &c, 21), "fixture: %s", vp_last_error());
    if (!f.a) {
        fixture_free(&f);
        return;
    }
    const int64_t n = f.B * c.window * c.hidden;
    CHECK_OK(vp_model_trunk_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, f.B));
    double* h2 = ref_alloc(n);
    double* got = ref_alloc(n);
    ref_trunk(&f.m, f.p, f.feat, f.bar, f.B, c.window, h2);
    ref_from_f32(got, f.a->h2.data, n);
    double err = ref_rel_err(got, h2, n);
    CHECK(err < FWD_TOL, "trunk forward vs reference %.3g", err);
    // the clamp: sample 0 (bar 0) sees row 0 three times
    CHECK(((int32_t*)f.a->idx.data)[0] == 0 && ((int32_t*)f.a->idx.data)[2] == 0 &&
              ((int32_t*)f.a->idx.data)[4] == 0 && ((int32_t*)f.a->idx.data)[5] == 1 &&
              ((int32_t*)f.a->idx.data)[8] == 8,
          "window rows");
    g_trunk_w = ref_alloc(n);
    ref_fill(g_trunk_w, n, 9, -1, 1);
    ref_to_f32(f.a->d_t1.data, g_trunk_w, n);
    ref_from_f32(g_trunk_w, f.a->d_t1.data, n);
    CHECK_OK(vp_model_trunk_backward(&f.m, &f.m.params, f.a, &f.a->d_t1, f.B));
    g_worst = 0;
    check_param_grads(&f, "trunk.", trunk_loss);
    fprintf(stderr, "  trunk: forward rel err %.2g, worst grad rel err %.2g\n", err, g_worst);
    free(g_trunk_w);
    free(h2);
    free(got);
    fixture_free(&f);
}

/* encode + heads equals forward; outside encodings run the heads only; misuse is refused. */
static void test_split_and_misuse(void) {
    vp_model_cfg c = small_cfg(VP_ENCODER_MAMBA2, 3);
    fixture f;
    CHECK(fixture_init(&f, &c, 5), "fixture: %s", vp_last_error());
    if (!f.a) {
        fixture_free(&f);
        return;
    }
    const int A = vp_model_cfg_actions(&c), n = (int)f.B * A * c.n_atoms;
    float* full = (float*)calloc((size_t)n, sizeof(float));
    float* enc = (float*)calloc((size_t)(f.B * c.hidden), sizeof(float));
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, NULL, f.B));
    memcpy(full, vp_model_log_probs(f.a).data, sizeof(float) * (size_t)n);
    CHECK(vp_model_iqn(f.a).data == NULL, "no IQN output without taus");
    CHECK_STATUS(vp_model_backward(&f.m, &f.m.params, f.a, &f.wl_t, &f.wi_t), VP_ERR_STATE, "no IQN head");
    // encode, keep the encoding, run the heads from it as an outside tensor
    CHECK_OK(vp_model_encode(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, f.B));
    vp_tensor e = vp_model_encoding(f.a);
    CHECK(e.ndim == 2 && e.shape[0] == f.B && e.shape[1] == c.hidden, "encoding shape");
    memcpy(enc, e.data, sizeof(float) * (size_t)(f.B * c.hidden));
    vp_tensor enc_t = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, f.B, c.hidden);
    CHECK_OK(vp_model_heads(&f.m, &f.m.params, f.a, &enc_t, &f.port_t, NULL, f.B));
    int same = memcmp(full, vp_model_log_probs(f.a).data, sizeof(float) * (size_t)n) == 0;
    CHECK(same, "heads from a kept encoding differ from the forward");
    CHECK_STATUS(vp_model_backward(&f.m, &f.m.params, f.a, &f.wl_t, NULL), VP_ERR_STATE, "own encoding");
    // argument checks
    CHECK_STATUS(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, NULL, 5), VP_ERR_SHAPE,
                 "batch 5");
    vp_tensor bad = vp_tensor_2d(f.featf, VP_F32, VP_MEM_HOST, 15, 3);
    CHECK_STATUS(vp_model_encode(&f.m, &f.m.params, f.a, &bad, &f.bar_t, f.B), VP_ERR_SHAPE, "features");
    CHECK_STATUS(vp_model_heads(&f.m, &f.m.params, f.a, NULL, &f.port_t, NULL, f.B), VP_ERR_STATE, "no encoding");
    CHECK_OK(vp_model_encode(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, f.B));
    CHECK_STATUS(vp_model_heads(&f.m, &f.m.params, f.a, NULL, &f.features, NULL, f.B), VP_ERR_SHAPE, "portfolio");
    vp_model_acts* fwd_only = NULL;
    CHECK_OK(vp_model_acts_init(&fwd_only, &f.m, 2, 0, 0));
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, fwd_only, &f.features, &f.bar_t, &f.port_t, NULL, 2));
    CHECK_STATUS(vp_model_backward(&f.m, &f.m.params, fwd_only, &f.wl_t, NULL), VP_ERR_STATE, "forward only");
    CHECK(vp_model_acts_bytes(fwd_only) < vp_model_acts_bytes(f.a), "forward-only activations are smaller");
    vp_model_acts_free(fwd_only);
    free(full);
    free(enc);
    fixture_free(&f);
}

int main(void) {
    RUN_TEST(test_trunk_piece);
    RUN_TEST(test_whole_mamba_k3);
    RUN_TEST(test_whole_mamba_k5);
    RUN_TEST(test_whole_no_mamba);
    RUN_TEST(test_whole_tlob_k3);
    RUN_TEST(test_split_and_misuse);
    return vpt_finish();
}
