/* Tests of the heads' pieces on the CPU: the dueling combine + log_softmax + Q, and the
 * IQN embedding and head, forward against the double reference and backward (inputs and
 * parameters) against its central finite differences. */
#include "test_model_util.h"

/* Branches (2, 3, 1) (a one-action branch has no advantage left), Z = 5, H = 6. */
static vp_model_cfg heads_cfg(void) {
    return tmu_cfg((tmu_dims){.F = 3, .P = 2, .K = 2, .H = 6, .head_dim = 3, .N = 2, .head_hidden = 5, .Z = 5,
                              .v_min = -1.5f, .v_max = 2.5f, .n_cos = 5, .branches = {2, 3, 1}});
}

/* A CPU model and activations of `B` samples and `T` taus. */
typedef struct rig {
    vp_backend* be;
    vp_model m;
    vp_model_acts* a;
} rig;

static int rig_init(rig* r, int64_t B, int T) {
    memset(r, 0, sizeof *r);
    vp_model_cfg c = heads_cfg();
    return vp_backend_cpu_init(&r->be) == VP_OK && vp_model_init(&r->m, r->be, &c, 11) == VP_OK &&
           vp_model_acts_init(&r->a, &r->m, B, T, 1) == VP_OK;
}

static void rig_free(rig* r) {
    vp_model_acts_free(r->a);
    vp_model_free(&r->m);
    vp_backend_free(r->be);
}

/* ---- dueling combine + log_softmax -------------------------------------------------------- */

typedef struct comb_ctx {
    const vp_model_cfg* c;
    int64_t B;
    double *v, *adv, *w;
} comb_ctx;

static double comb_loss(void* p) {
    comb_ctx* x = (comb_ctx*)p;
    const int A = vp_model_cfg_actions(x->c), Z = x->c->n_atoms;
    double* logp = ref_alloc(x->B * A * Z);
    double* q = ref_alloc(x->B * A);
    ref_combine(x->c, x->B, x->v, x->adv, logp, q);
    double L = ref_dot(x->w, logp, x->B * A * Z);
    free(logp);
    free(q);
    return L;
}

static void test_combine_piece(void) {
    rig r;
    CHECK(rig_init(&r, 3, 0), "rig: %s", vp_last_error());
    if (!r.a) {
        rig_free(&r);
        return;
    }
    const vp_model_cfg* c = &r.m.cfg;
    const int64_t B = 3, A = vp_model_cfg_actions(c), Z = c->n_atoms;
    comb_ctx x = {c, B, ref_alloc(B * Z), ref_alloc(B * A * Z), ref_alloc(B * A * Z)};
    ref_fill(x.v, B * Z, 41, -2, 2);
    ref_fill(x.adv, B * A * Z, 42, -2, 2);
    ref_fill(x.w, B * A * Z, 43, -1, 1);
    ref_to_f32(r.a->v.data, x.v, B * Z);
    ref_to_f32(r.a->adv.data, x.adv, B * A * Z);
    ref_from_f32(x.v, r.a->v.data, B * Z);
    ref_from_f32(x.adv, r.a->adv.data, B * A * Z);
    // forward vs the reference
    CHECK_OK(vp_model_combine_forward(&r.m, r.a, B));
    double* logp = ref_alloc(B * A * Z);
    double* q = ref_alloc(B * A);
    double* got = ref_alloc(B * A * Z);
    ref_combine(c, B, x.v, x.adv, logp, q);
    ref_from_f32(got, r.a->logp.data, B * A * Z);
    double e1 = ref_rel_err(got, logp, B * A * Z);
    ref_from_f32(got, r.a->q.data, B * A);
    double e2 = ref_rel_err(got, q, B * A);
    CHECK(e1 < FWD_TOL && e2 < FWD_TOL, "combine forward: logp %.3g, q %.3g", e1, e2);
    // each row is a distribution, Q inside the support
    for (int64_t i = 0; i < B * A; ++i) {
        double s = 0;
        for (int z = 0; z < Z; ++z) s += exp(((float*)r.a->logp.data)[i * Z + z]);
        CHECK_NEAR(s, 1.0, 1e-5, 0);
        CHECK(((float*)r.a->q.data)[i] >= c->v_min && ((float*)r.a->q.data)[i] <= c->v_max, "q inside the support");
    }
    // the single-action branch has logits V alone
    const int a_last = (int)A - 1;
    double lse = 0;
    for (int z = 0; z < Z; ++z) lse += exp(x.v[z]);
    CHECK_NEAR(((float*)r.a->logp.data)[a_last * Z + 2], x.v[2] - log(lse), 1e-5, 1e-5);
    // backward vs FD in V and the advantages
    float* w = (float*)calloc((size_t)(B * A * Z), sizeof(float));
    ref_to_f32(w, x.w, B * A * Z);
    ref_from_f32(x.w, w, B * A * Z);
    vp_tensor wt = vp_tensor_2d(w, VP_F32, VP_MEM_HOST, B * A, Z);
    CHECK_OK(vp_model_combine_backward(&r.m, r.a, &wt, B));
    double* fd = ref_alloc(B * A * Z);
    ref_fd(comb_loss, &x, x.v, B * Z, FD_EPS, fd);
    tmu_check_grad("d_v", r.a->d_v.data, fd, B * Z);
    ref_fd(comb_loss, &x, x.adv, B * A * Z, FD_EPS, fd);
    tmu_check_grad("d_adv", r.a->d_adv.data, fd, B * A * Z);
    // adding a constant to one branch's advantages at an atom leaves the logits unchanged
    CHECK_OK(vp_model_combine_forward(&r.m, r.a, B));
    float before = ((float*)r.a->logp.data)[2 * Z + 1];
    for (int a = 2; a < 5; ++a) ((float*)r.a->adv.data)[a * Z + 1] += 0.75f;
    CHECK_OK(vp_model_combine_forward(&r.m, r.a, B));
    CHECK_NEAR(((float*)r.a->logp.data)[2 * Z + 1], before, 1e-6, 1e-6);
    free(x.v), free(x.adv), free(x.w), free(logp), free(q), free(got), free(w), free(fd);
    rig_free(&r);
}

/* ---- IQN embedding and head ------------------------------------------------------------------ */

typedef struct iqn_ctx {
    const vp_model* m;
    double* p; /* [n_weights] parameters */
    int64_t B;
    int T;
    double *h, *taus, *w;
} iqn_ctx;

static double iqn_loss(void* p) {
    iqn_ctx* x = (iqn_ctx*)p;
    const int A = vp_model_cfg_actions(&x->m->cfg);
    double* out = ref_alloc(x->B * x->T * A);
    ref_iqn(x->m, x->p, x->h, x->taus, x->B, x->T, out);
    double L = ref_dot(x->w, out, x->B * x->T * A);
    free(out);
    return L;
}

static void test_iqn_piece(void) {
    const int64_t B = 3;
    const int T = 4;
    rig r;
    CHECK(rig_init(&r, B, T), "rig: %s", vp_last_error());
    if (!r.a) {
        rig_free(&r);
        return;
    }
    const vp_model_cfg* c = &r.m.cfg;
    const int64_t H = c->hidden, A = vp_model_cfg_actions(c), Q = B * T;
    iqn_ctx x = {&r.m, ref_alloc(r.m.n_weights), B, T, ref_alloc(B * H), ref_alloc(Q), ref_alloc(Q * A)};
    ref_from_f32(x.p, r.m.params.data, r.m.n_weights);
    ref_fill(x.h, B * H, 51, -1.5, 1.5);
    ref_fill(x.taus, Q, 52, 0.01, 0.99);
    ref_fill(x.w, Q * A, 53, -1, 1);
    ref_to_f32(r.a->h.data, x.h, B * H);
    ref_from_f32(x.h, r.a->h.data, B * H);
    float* taus = (float*)calloc((size_t)Q, sizeof(float));
    float* w = (float*)calloc((size_t)(Q * A), sizeof(float));
    ref_to_f32(taus, x.taus, Q);
    ref_from_f32(x.taus, taus, Q);
    ref_to_f32(w, x.w, Q * A);
    ref_from_f32(x.w, w, Q * A);
    vp_tensor taus_t = vp_tensor_2d(taus, VP_F32, VP_MEM_HOST, B, T), w_t = vp_tensor_2d(w, VP_F32, VP_MEM_HOST, Q, A);
    // forward vs the reference
    CHECK_OK(vp_model_iqn_forward(&r.m, &r.m.params, r.a, &taus_t, B, T));
    r.a->n_taus = T;
    double* out = ref_alloc(Q * A);
    double* got = ref_alloc(Q * A);
    ref_iqn(&r.m, x.p, x.h, x.taus, B, T, out);
    ref_from_f32(got, r.a->zq.data, Q * A);
    double err = ref_rel_err(got, out, Q * A);
    CHECK(err < FWD_TOL, "iqn forward rel err %.3g", err);
    // backward: d h accumulates onto what is there (ones here)
    for (int64_t i = 0; i < B * H; ++i) ((float*)r.a->d_h.data)[i] = 1.0f;
    CHECK_OK(vp_model_iqn_backward(&r.m, &r.m.params, r.a, &w_t, B));
    for (int64_t i = 0; i < B * H; ++i) ((float*)r.a->d_h.data)[i] -= 1.0f;
    double* fd = ref_alloc(r.m.n_weights > Q * A ? r.m.n_weights : Q * A);
    ref_fd(iqn_loss, &x, x.h, B * H, FD_EPS, fd);
    tmu_check_grad("iqn d_h", r.a->d_h.data, fd, B * H);
    int checked = 0;
    for (int k = 0; k < r.m.n_params; ++k) {
        const vp_param_info* pi = &r.m.info[k];
        if (strncmp(pi->name, "iqn.", 4) != 0) continue;
        ref_fd(iqn_loss, &x, x.p + pi->offset, pi->numel, FD_EPS, fd);
        tmu_check_grad(pi->name, (float*)r.m.grads.data + pi->offset, fd, pi->numel);
        checked++;
    }
    CHECK(checked == 6, "%d IQN tensors checked, expected 6", checked);
    free(x.p), free(x.h), free(x.taus), free(x.w), free(taus), free(w), free(out), free(got), free(fd);
    rig_free(&r);
}

/* Norm-wise relative error of n floats against n floats. */
static double rel_f32(const float* got, const float* want, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* The one-pass IQN embedding's CPU reference (what the CUDA kernel is checked against)
 * against the op path's cosines, phi and mix; mix alone (no cosines or phi asked) is the
 * same bits. */
static void test_iqn_embed_reference(void) {
    const int64_t B = 3;
    const int T = 4;
    rig r;
    CHECK(rig_init(&r, B, T), "rig: %s", vp_last_error());
    if (!r.a) {
        rig_free(&r);
        return;
    }
    const vp_model_cfg* c = &r.m.cfg;
    const int64_t H = c->hidden, Q = B * T, NC = c->iqn_cos;
    float* taus = (float*)calloc((size_t)Q, sizeof(float));
    for (int64_t i = 0; i < Q; ++i) taus[i] = 0.01f + 0.98f * (float)((i * 7) % Q) / (float)Q;
    for (int64_t i = 0; i < B * H; ++i) ((float*)r.a->h.data)[i] = -1.5f + 3.0f * (float)((i * 5) % 11) / 11.0f;
    vp_tensor taus_t = vp_tensor_2d(taus, VP_F32, VP_MEM_HOST, B, T);
    CHECK_OK(vp_model_iqn_forward(&r.m, &r.m.params, r.a, &taus_t, B, T));
    float *cosf = (float*)calloc((size_t)(Q * NC), sizeof(float)), *phi = (float*)calloc((size_t)(Q * H), sizeof(float));
    float *mix = (float*)calloc((size_t)(Q * H), sizeof(float)), *mix2 = (float*)calloc((size_t)(Q * H), sizeof(float));
    const float* P = (const float*)r.m.params.data;
    const float* pw = P + vp_model_find_param(&r.m, "iqn.phi.w")->offset;
    const float* pb = P + vp_model_find_param(&r.m, "iqn.phi.b")->offset;
    const vp_iqn_dims d = {B, T, (int)NC, (int)H};
    CHECK_OK(vp_mops_cpu.iqn_embed(NULL, &d, taus, (const float*)r.a->h.data, pw, pb, cosf, phi, mix));
    CHECK_OK(vp_mops_cpu.iqn_embed(NULL, &d, taus, (const float*)r.a->h.data, pw, pb, NULL, NULL, mix2));
    CHECK(rel_f32(cosf, (const float*)r.a->cosf.data, Q * NC) == 0.0, "cosines equal the op path's");
    double e_phi = rel_f32(phi, (const float*)r.a->phi.data, Q * H), e_mix = rel_f32(mix, (const float*)r.a->mix.data, Q * H);
    CHECK(e_phi < FWD_TOL && e_mix < FWD_TOL, "phi rel err %.3g, mix %.3g against the op path", e_phi, e_mix);
    CHECK(memcmp(mix, mix2, sizeof(float) * (size_t)(Q * H)) == 0, "mix without cosines or phi is the same");
    int live = 0;
    for (int64_t i = 0; i < Q * H; ++i) live += phi[i] > 0.0f;
    CHECK(live > 0 && live < Q * H, "the ReLU cuts some of phi and keeps some (%d of %lld)", live, (long long)(Q * H));
    free(taus), free(cosf), free(phi), free(mix), free(mix2);
    rig_free(&r);
}

/* The cosine embedding: cos(pi i tau), i from 0 (the first feature is 1). */
/* Q-only activations: the same Q bits as full ones, no log-probabilities handed out; the flag
 * is refused (ignored) on activations made for a backward. */
static void test_q_only(void) {
    rig r;
    CHECK(rig_init(&r, 4, 0), "rig: %s", vp_last_error());
    vp_model_acts *full = NULL, *qo = NULL;
    CHECK_OK(vp_model_acts_init(&full, &r.m, 4, 0, 0));
    CHECK_OK(vp_model_acts_init(&qo, &r.m, 4, 0, 0));
    vp_model_acts_q_only(qo);
    vp_model_acts_q_only(r.a); /* made for a backward: no effect */
    float enc[4 * 6], port[4 * 2];
    for (int i = 0; i < 24; ++i) enc[i] = 0.1f * (float)(i % 7) - 0.3f;
    for (int i = 0; i < 8; ++i) port[i] = 0.25f * (float)(i % 3) - 0.2f;
    vp_tensor te = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, 4, 6), tp = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, 4, 2);
    CHECK_OK(vp_model_heads(&r.m, &r.m.params, full, &te, &tp, NULL, 4));
    CHECK_OK(vp_model_heads(&r.m, &r.m.params, qo, &te, &tp, NULL, 4));
    CHECK_OK(vp_model_heads(&r.m, &r.m.params, r.a, &te, &tp, NULL, 4));
    vp_tensor qf = vp_model_q(full), qq = vp_model_q(qo);
    CHECK(qf.data && qq.data && vp_tensor_numel(&qf) == 4 * 6, "Q of both activations");
    if (qf.data && qq.data) CHECK(memcmp(qf.data, qq.data, (size_t)vp_tensor_numel(&qf) * 4) == 0, "Q differs when Q-only");
    CHECK(vp_model_log_probs(full).data != NULL, "full activations hand out log-probabilities");
    CHECK(vp_model_log_probs(qo).data == NULL, "Q-only activations hand out log-probabilities");
    CHECK(vp_model_log_probs(r.a).data != NULL, "a backward's activations lost their log-probabilities");
    vp_model_acts_free(full);
    vp_model_acts_free(qo);
    rig_free(&r);
}

static void test_iqn_cos(void) {
    const float tau[2] = {0.25f, 0.5f};
    float out[2 * 4];
    CHECK_OK(vp_mops_cpu.iqn_cos(NULL, 2, 4, tau, out));
    const double pi = 3.14159265358979323846;
    const double want[8] = {1, cos(pi * 0.25), 0, cos(pi * 0.75), 1, 0, -1, 0};
    for (int i = 0; i < 8; ++i) CHECK_NEAR(out[i], want[i], 1e-6, 0);
}

int main(void) {
    RUN_TEST(test_combine_piece);
    RUN_TEST(test_q_only);
    RUN_TEST(test_iqn_piece);
    RUN_TEST(test_iqn_embed_reference);
    RUN_TEST(test_iqn_cos);
    return vpt_finish();
}
