/* The actor-critic's forward and backward: the encoder (vp_model_encode and the encoder's
 * backward pieces), the portfolio projection h = e + W_p p + b_p, the policy MLP to per-head
 * logits and the value MLP; and its greedy policy (vulpes/policy.h). */
#include <stdlib.h>
#include <string.h>

#include "learn/headnet.h"
#include "model/model_internal.h"
#include "vulpes/ops.h"
#include "vulpes/ppo.h"

/* Activations of one batch. */
struct vp_ppo_acts {
    const vp_ppo_net* net;       /* the network */
    vp_model heads;              /* the encoder's model as the heads compute (FP32 for rollouts) */
    vp_model_acts* enc;          /* the encoder's activations */
    int64_t max_batch;           /* B */
    int64_t batch;               /* samples of the last heads */
    int for_backward;            /* backward buffers present */
    int own_enc;                 /* the last heads read the activations' own encoding */
    const vp_tensor* portfolio;  /* [batch, P] the last heads' portfolio (caller's memory) */
    vp_arena arena;              /* the tensors below */
    vp_tensor h;                 /* [B, H] e + portfolio projection */
    vp_tensor pi_h, v_h;         /* [B, HH] the MLPs' hidden layers (after relu) */
    vp_tensor logits;            /* [B, A] */
    vp_tensor value;             /* [B, 1] */
    vp_tensor d_h;               /* [B, H] (backward) */
    vp_tensor d_pi_h, d_v_h;     /* [B, HH] (backward) */
};

/* Rows [0, n) of a 2-D activation. */
static vp_tensor rows_of(const vp_tensor* t, int64_t n) { return vp_tensor_2d(t->data, t->dtype, t->mem, n, t->shape[1]); }

vp_status vp_ppo_acts_init(vp_ppo_acts** out, const vp_ppo_net* n, int64_t batch, int for_backward, int fp32) {
    VP_REQUIRE(out != NULL && n != NULL && batch >= 1, VP_ERR_INVALID_ARG, "vp_ppo_acts_init: bad argument");
    *out = NULL;
    vp_ppo_acts* a = (vp_ppo_acts*)calloc(1, sizeof *a);
    VP_REQUIRE(a != NULL, VP_ERR_OOM, "ppo activations: out of host memory");
    a->net = n;
    a->heads = n->enc;
    if (fp32) a->heads.precision = VP_PREC_FP32;
    a->max_batch = batch;
    a->for_backward = for_backward;
    const vp_model_cfg* c = &n->enc.cfg;
    const int64_t H = c->hidden, HH = c->head_hidden, A = vp_model_cfg_actions(c);
    const int64_t per_row = H + 2 * HH + A + 1 + (for_backward ? H + 2 * HH : 0);
    vp_status s = vp_model_acts_init(&a->enc, &n->enc, batch, 0, for_backward);
    if (s == VP_OK)
        s = vp_arena_init(&a->arena, n->enc.backend, vp_backend_native_mem(n->enc.backend),
                          sizeof(float) * (size_t)(batch * per_row) + 16 * 256);
    const int64_t sh_h[2] = {batch, H}, sh_hh[2] = {batch, HH}, sh_a[2] = {batch, A}, sh_1[2] = {batch, 1};
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.h", VP_F32, 2, sh_h, &a->h, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.pi_h", VP_F32, 2, sh_hh, &a->pi_h, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.v_h", VP_F32, 2, sh_hh, &a->v_h, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.logits", VP_F32, 2, sh_a, &a->logits, NULL);
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.value", VP_F32, 2, sh_1, &a->value, NULL);
    if (s == VP_OK && for_backward) {
        s = vp_arena_tensor(&a->arena, "ppo.d_h", VP_F32, 2, sh_h, &a->d_h, NULL);
        if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.d_pi_h", VP_F32, 2, sh_hh, &a->d_pi_h, NULL);
        if (s == VP_OK) s = vp_arena_tensor(&a->arena, "ppo.d_v_h", VP_F32, 2, sh_hh, &a->d_v_h, NULL);
    }
    if (s != VP_OK) {
        vp_ppo_acts_free(a);
        return s;
    }
    *out = a;
    return VP_OK;
}

void vp_ppo_acts_free(vp_ppo_acts* a) {
    if (!a) return;
    vp_model_acts_free(a->enc);
    if (a->arena.backend) vp_arena_free(&a->arena);
    free(a);
}

vp_status vp_ppo_net_encode(const vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* features,
                            const vp_tensor* bar_idx, int64_t batch) {
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && batch >= 1 && batch <= a->max_batch, VP_ERR_INVALID_ARG,
               "vp_ppo_net_encode: %lld samples for activations of %lld", (long long)batch,
               a ? (long long)a->max_batch : 0LL);
    const vp_tensor enc = vp_ppo_enc_view(n, params);
    return vp_model_encode(&n->enc, &enc, a->enc, features, bar_idx, batch);
}

vp_tensor vp_ppo_encoding(const vp_ppo_acts* a) { return vp_model_encoding(a->enc); }

vp_status vp_ppo_net_heads(const vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* enc,
                           const vp_tensor* portfolio, int64_t batch) {
    const char* fn = "vp_ppo_net_heads";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && portfolio != NULL && batch >= 1 && batch <= a->max_batch,
               VP_ERR_INVALID_ARG, "%s: bad argument", fn);
    VP_TRY(vp_tensor_check_numel(fn, "params", n->enc.backend, params, VP_F32, n->n_weights));
    const vp_model* m = &a->heads;
    const vp_model_cfg* c = &m->cfg;
    VP_TRY(vp_tensor_check_min_rows(fn, "portfolio", m->backend, portfolio, VP_F32, batch, c->n_portfolio));
    const vp_tensor pe = vp_ppo_enc_view(n, params);
    vp_tensor e = enc ? rows_of(enc, batch) : rows_of(&a->enc->e, batch);
    if (enc) VP_TRY(vp_tensor_check_min_rows(fn, "enc", m->backend, enc, VP_F32, batch, c->hidden));
    vp_tensor h = rows_of(&a->h, batch), pi_h = rows_of(&a->pi_h, batch), v_h = rows_of(&a->v_h, batch);
    vp_tensor lg = rows_of(&a->logits, batch), v = rows_of(&a->value, batch);
    vp_tensor port = vp_tensor_2d(portfolio->data, VP_F32, portfolio->mem, batch, c->n_portfolio);
    vp_tensor w1 = vp_ppo_head_view(n, params, VP_PPO_PI1_W), b1 = vp_ppo_head_view(n, params, VP_PPO_PI1_B);
    vp_tensor w2 = vp_ppo_head_view(n, params, VP_PPO_PI2_W), b2 = vp_ppo_head_view(n, params, VP_PPO_PI2_B);
    vp_tensor u1 = vp_ppo_head_view(n, params, VP_PPO_V1_W), c1 = vp_ppo_head_view(n, params, VP_PPO_V1_B);
    vp_tensor u2 = vp_ppo_head_view(n, params, VP_PPO_V2_W), c2 = vp_ppo_head_view(n, params, VP_PPO_V2_B);
    // h = e + W_p p + b_p
    VP_TRY(vp_headnet_project(m, &pe, &e, &port, &h));
    // the policy's logits and the value
    VP_TRY(vp_model_linear(m, &h, &w1, &b1, VP_EPI_BIAS_RELU, 0.0f, &pi_h));
    VP_TRY(vp_model_linear(m, &pi_h, &w2, &b2, VP_EPI_BIAS, 0.0f, &lg));
    VP_TRY(vp_model_linear(m, &h, &u1, &c1, VP_EPI_BIAS_RELU, 0.0f, &v_h));
    VP_TRY(vp_model_linear(m, &v_h, &u2, &c2, VP_EPI_BIAS, 0.0f, &v));
    a->batch = batch;
    a->portfolio = portfolio;
    a->own_enc = enc == NULL;
    return VP_OK;
}

vp_tensor vp_ppo_logits(const vp_ppo_acts* a) { return rows_of(&a->logits, a->batch); }

vp_tensor vp_ppo_values(const vp_ppo_acts* a) { return vp_tensor_1d(a->value.data, VP_F32, a->value.mem, a->batch); }

vp_status vp_ppo_net_backward(vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* d_logits,
                              const vp_tensor* d_values) {
    const char* fn = "vp_ppo_net_backward";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && a->for_backward && a->portfolio != NULL && a->own_enc,
               VP_ERR_STATE, "%s: no encode and heads (on their own encoding, with backward activations) precede it",
               fn);
    vp_model* m = &n->enc;
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t B = a->batch, A = vp_model_cfg_actions(c);
    VP_TRY(vp_tensor_check_numel(fn, "d_logits", be, d_logits, VP_F32, B * A));
    VP_TRY(vp_tensor_check_numel(fn, "d_values", be, d_values, VP_F32, B));
    const vp_tensor pe = vp_ppo_enc_view(n, params);
    vp_tensor dl = vp_tensor_2d(d_logits->data, VP_F32, d_logits->mem, B, A);
    vp_tensor dv = vp_tensor_2d(d_values->data, VP_F32, d_values->mem, B, 1);
    vp_tensor h = rows_of(&a->h, B), pi_h = rows_of(&a->pi_h, B), v_h = rows_of(&a->v_h, B);
    vp_tensor d_h = rows_of(&a->d_h, B), d_pi = rows_of(&a->d_pi_h, B), d_vh = rows_of(&a->d_v_h, B);
    vp_tensor G[VP_PPO_HEAD_COUNT], W[VP_PPO_HEAD_COUNT];
    for (int k = 0; k < VP_PPO_HEAD_COUNT; ++k) {
        G[k] = vp_ppo_head_view(n, &n->grads, (vp_ppo_head)k);
        W[k] = vp_ppo_head_view(n, params, (vp_ppo_head)k);
    }
    // policy MLP, then value MLP; d h is written, then accumulated
    VP_TRY(vp_model_linear_backward(m, &pi_h, &W[VP_PPO_PI2_W], &dl, &G[VP_PPO_PI2_W], &G[VP_PPO_PI2_B], &d_pi, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &pi_h, &d_pi, &d_pi));
    VP_TRY(vp_model_linear_backward(m, &h, &W[VP_PPO_PI1_W], &d_pi, &G[VP_PPO_PI1_W], &G[VP_PPO_PI1_B], &d_h, 0.0f));
    VP_TRY(vp_model_linear_backward(m, &v_h, &W[VP_PPO_V2_W], &dv, &G[VP_PPO_V2_W], &G[VP_PPO_V2_B], &d_vh, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &v_h, &d_vh, &d_vh));
    VP_TRY(vp_model_linear_backward(m, &h, &W[VP_PPO_V1_W], &d_vh, &G[VP_PPO_V1_W], &G[VP_PPO_V1_B], &d_h, 1.0f));
    // the portfolio projection and the encoder
    vp_tensor port = vp_tensor_2d(a->portfolio->data, VP_F32, a->portfolio->mem, B, c->n_portfolio);
    return vp_headnet_backward(m, &pe, a->enc, &port, &d_h, B);
}

vp_status vp_ppo_net_commit(const vp_ppo_net* n, vp_tensor* params, const vp_ppo_acts* a) {
    VP_REQUIRE(n != NULL && params != NULL && a != NULL, VP_ERR_INVALID_ARG, "vp_ppo_net_commit: NULL argument");
    vp_tensor pe = vp_ppo_enc_view(n, params);
    return vp_model_commit(&n->enc, &pe, a->enc);
}

/* ---- the greedy policy: the encoder and the policy logits ------------------------------------- */

/* The policy's workspace: the network's forward activations with FP32 heads. */
struct vp_policy_work {
    vp_ppo_acts* acts; /* forward of up to `batch` samples */
};

static vp_status ppo_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "policy ppo: workspace");
    vp_status s = vp_ppo_acts_init(&w->acts, (const vp_ppo_net*)p->impl, batch, 0, p->fp32_scores);
    if (s != VP_OK) {
        free(w);
        return s;
    }
    *out = w;
    return VP_OK;
}

static void ppo_work_free(vp_policy_work* w) {
    if (!w) return;
    vp_ppo_acts_free(w->acts);
    free(w);
}

static vp_status ppo_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                            int64_t n, vp_tensor* enc) {
    VP_TRY(vp_ppo_net_encode((const vp_ppo_net*)p->impl, p->params, w->acts, features, bar_idx, n));
    *enc = vp_ppo_encoding(w->acts);
    return VP_OK;
}

static vp_status ppo_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                           int64_t n, vp_tensor* scores) {
    VP_TRY(vp_ppo_net_heads((const vp_ppo_net*)p->impl, p->params, w->acts, enc, portfolio, n));
    *scores = vp_ppo_logits(w->acts);
    return VP_OK;
}

static const vp_policy_ops PPO_POLICY_OPS = {"ppo", ppo_work_init, ppo_work_free, ppo_encode, ppo_score};

vp_policy vp_ppo_policy(const vp_ppo_net* n, const vp_tensor* params) {
    vp_policy p = vp_model_rollout_policy(n ? &n->enc : NULL, params);
    p.ops = &PPO_POLICY_OPS;
    p.impl = n;
    return p;
}
