/* IQL's forward and backward: the encoder (vp_model_encode and the encoder's backward), the
 * portfolio projection h = e + W_p p + b_p, the four MLPs H -> HH -> out (relu between) and the
 * target copies of the Q MLPs; and its greedy policy (vulpes/policy.h). */
#include <stdlib.h>
#include <string.h>

#include "learn/headnet.h"
#include "model/model_internal.h"
#include "vulpes/iql.h"
#include "vulpes/ops.h"

/* Activations of one batch. */
struct vp_iql_acts {
    const vp_iql_net* net;                 /* the network */
    vp_model heads;                        /* the encoder's model as the heads compute (FP32 for rollouts) */
    vp_model_acts* enc;                    /* the encoder's activations */
    int64_t max_batch;                     /* B */
    int64_t batch;                         /* samples of the last encode */
    int for_backward;                      /* backward and target buffers present */
    int own_enc;                           /* the last encode made its own encoding */
    const vp_tensor* portfolio;            /* [batch, P] the last encode's portfolio (caller's memory) */
    vp_arena arena;                        /* the tensors below */
    vp_tensor h;                           /* [B, H] e + portfolio projection */
    vp_tensor hid[VP_IQL_MLP_COUNT];       /* [B, HH] each MLP's hidden layer (after relu) */
    vp_tensor out[VP_IQL_MLP_COUNT];       /* [B, A] ([B, 1] for V) each MLP's output */
    vp_tensor t_hid[2], t_out[2];          /* [B, HH], [B, A] the target Q MLPs' (backward) */
    vp_tensor d_h;                         /* [B, H] (backward) */
    vp_tensor d_hid[VP_IQL_MLP_COUNT];     /* [B, HH] (backward) */
};

/* Rows [0, n) of a 2-D activation. */
static vp_tensor rows_of(const vp_tensor* t, int64_t n) { return vp_tensor_2d(t->data, t->dtype, t->mem, n, t->shape[1]); }

/* Output width of MLP m. */
static int64_t out_dim(const vp_model_cfg* c, int m) { return m == VP_IQL_MLP_V ? 1 : vp_model_cfg_actions(c); }

vp_status vp_iql_acts_init(vp_iql_acts** out, const vp_iql_net* n, int64_t batch, int for_backward, int fp32) {
    VP_REQUIRE(out != NULL && n != NULL && batch >= 1, VP_ERR_INVALID_ARG, "vp_iql_acts_init: bad argument");
    *out = NULL;
    vp_iql_acts* a = (vp_iql_acts*)calloc(1, sizeof *a);
    VP_REQUIRE(a != NULL, VP_ERR_OOM, "iql activations: out of host memory");
    a->net = n;
    a->heads = n->enc;
    if (fp32) a->heads.precision = VP_PREC_FP32;
    a->max_batch = batch;
    a->for_backward = for_backward;
    const vp_model_cfg* c = &n->enc.cfg;
    const int64_t H = c->hidden, HH = c->head_hidden, A = vp_model_cfg_actions(c);
    const int64_t per_row = H + 4 * HH + 3 * A + 1 + (for_backward ? 2 * HH + 2 * A + H + 4 * HH : 0);
    vp_status s = vp_model_acts_init(&a->enc, &n->enc, batch, 0, for_backward);
    if (s == VP_OK)
        s = vp_arena_init(&a->arena, n->enc.backend, vp_backend_native_mem(n->enc.backend),
                          sizeof(float) * (size_t)(batch * per_row) + 24 * 256);
    const int64_t sh_h[2] = {batch, H}, sh_hh[2] = {batch, HH}, sh_a[2] = {batch, A};
    for (int m = 0; s == VP_OK && m < VP_IQL_MLP_COUNT; ++m) {
        const int64_t sh_o[2] = {batch, out_dim(c, m)};
        s = vp_arena_tensor(&a->arena, "iql.hid", VP_F32, 2, sh_hh, &a->hid[m], NULL);
        if (s == VP_OK) s = vp_arena_tensor(&a->arena, "iql.out", VP_F32, 2, sh_o, &a->out[m], NULL);
        if (s == VP_OK && for_backward) s = vp_arena_tensor(&a->arena, "iql.d_hid", VP_F32, 2, sh_hh, &a->d_hid[m], NULL);
    }
    if (s == VP_OK) s = vp_arena_tensor(&a->arena, "iql.h", VP_F32, 2, sh_h, &a->h, NULL);
    if (s == VP_OK && for_backward) {
        s = vp_arena_tensor(&a->arena, "iql.d_h", VP_F32, 2, sh_h, &a->d_h, NULL);
        for (int q = 0; s == VP_OK && q < 2; ++q) {
            s = vp_arena_tensor(&a->arena, "iql.t_hid", VP_F32, 2, sh_hh, &a->t_hid[q], NULL);
            if (s == VP_OK) s = vp_arena_tensor(&a->arena, "iql.t_out", VP_F32, 2, sh_a, &a->t_out[q], NULL);
        }
    }
    if (s != VP_OK) {
        vp_iql_acts_free(a);
        return s;
    }
    *out = a;
    return VP_OK;
}

void vp_iql_acts_free(vp_iql_acts* a) {
    if (!a) return;
    vp_model_acts_free(a->enc);
    if (a->arena.backend) vp_arena_free(&a->arena);
    free(a);
}

vp_status vp_iql_net_encode(const vp_iql_net* n, const vp_tensor* params, vp_iql_acts* a, const vp_tensor* features,
                            const vp_tensor* bar_idx, const vp_tensor* enc, const vp_tensor* portfolio, int64_t batch) {
    const char* fn = "vp_iql_net_encode";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && portfolio != NULL && batch >= 1 && batch <= a->max_batch &&
                   (enc != NULL || (features != NULL && bar_idx != NULL)),
               VP_ERR_INVALID_ARG, "%s: %lld samples for activations of %lld, or a NULL argument", fn,
               (long long)batch, a ? (long long)a->max_batch : 0LL);
    VP_TRY(vp_tensor_check_numel(fn, "params", n->enc.backend, params, VP_F32, n->n_weights));
    const vp_model* m = &a->heads;
    const vp_model_cfg* c = &m->cfg;
    VP_TRY(vp_tensor_check_min_rows(fn, "portfolio", m->backend, portfolio, VP_F32, batch, c->n_portfolio));
    const vp_tensor pe = vp_iql_enc_view(n, params);
    if (enc) {
        VP_TRY(vp_tensor_check_min_rows(fn, "enc", m->backend, enc, VP_F32, batch, c->hidden));
    } else {
        VP_TRY(vp_model_encode(&n->enc, &pe, a->enc, features, bar_idx, batch));
    }
    // h = e + W_p p + b_p
    const vp_tensor e = enc ? rows_of(enc, batch) : rows_of(&a->enc->e, batch);
    vp_tensor h = rows_of(&a->h, batch);
    vp_tensor port = vp_tensor_2d(portfolio->data, VP_F32, portfolio->mem, batch, c->n_portfolio);
    VP_TRY(vp_headnet_project(m, &pe, &e, &port, &h));
    a->batch = batch;
    a->portfolio = portfolio;
    a->own_enc = enc == NULL;
    return VP_OK;
}

vp_tensor vp_iql_encoding(const vp_iql_acts* a) { return vp_model_encoding(a->enc); }

vp_status vp_iql_net_head(const vp_iql_net* n, const vp_tensor* params, const vp_tensor* target, vp_iql_acts* a,
                          vp_iql_mlp which) {
    const char* fn = "vp_iql_net_head";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && a->batch >= 1 && which >= 0 && which < VP_IQL_MLP_COUNT,
               VP_ERR_INVALID_ARG, "%s: bad argument (or no encode before it)", fn);
    VP_REQUIRE(target == NULL || (a->for_backward && which <= VP_IQL_MLP_Q2), VP_ERR_INVALID_ARG,
               "%s: a target copy exists of the Q heads only, in training activations", fn);
    if (target) VP_TRY(vp_tensor_check_numel(fn, "target", n->enc.backend, target, VP_F32, n->n_target));
    const vp_model* m = &a->heads;
    const int64_t B = a->batch;
    const int s0 = 4 * (int)which;
    vp_tensor W[4];
    for (int k = 0; k < 4; ++k)
        W[k] = target ? vp_iql_target_view(n, target, (vp_iql_head)(s0 + k))
                      : vp_iql_head_view(n, params, (vp_iql_head)(s0 + k));
    vp_tensor h = rows_of(&a->h, B);
    vp_tensor hid = rows_of(target ? &a->t_hid[which] : &a->hid[which], B);
    vp_tensor o = rows_of(target ? &a->t_out[which] : &a->out[which], B);
    VP_TRY(vp_model_linear(m, &h, &W[0], &W[1], VP_EPI_BIAS_RELU, 0.0f, &hid));
    return vp_model_linear(m, &hid, &W[2], &W[3], VP_EPI_BIAS, 0.0f, &o);
}

vp_tensor vp_iql_out(const vp_iql_acts* a, vp_iql_mlp which, int target) {
    return rows_of(target ? &a->t_out[which] : &a->out[which], a->batch);
}

vp_status vp_iql_net_backward(vp_iql_net* n, const vp_tensor* params, vp_iql_acts* a, const vp_tensor* d_q1,
                              const vp_tensor* d_q2, const vp_tensor* d_v, const vp_tensor* d_logits) {
    const char* fn = "vp_iql_net_backward";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && a->for_backward && a->portfolio != NULL && a->own_enc,
               VP_ERR_STATE, "%s: no encode (on its own encoding, with backward activations) precedes it", fn);
    vp_model* m = &n->enc;
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t B = a->batch;
    const vp_tensor* dout[VP_IQL_MLP_COUNT] = {d_q1, d_q2, d_v, d_logits};
    const char* dname[VP_IQL_MLP_COUNT] = {"d_q1", "d_q2", "d_v", "d_logits"};
    for (int k = 0; k < VP_IQL_MLP_COUNT; ++k)
        VP_TRY(vp_tensor_check_numel(fn, dname[k], be, dout[k], VP_F32, B * out_dim(c, k)));
    const vp_tensor pe = vp_iql_enc_view(n, params);
    vp_tensor h = rows_of(&a->h, B), d_h = rows_of(&a->d_h, B);
    // each MLP back to d h: the first one writes it, the others add to it
    for (int k = 0; k < VP_IQL_MLP_COUNT; ++k) {
        vp_tensor G[4], W[4];
        for (int j = 0; j < 4; ++j) {
            G[j] = vp_iql_head_view(n, &n->grads, (vp_iql_head)(4 * k + j));
            W[j] = vp_iql_head_view(n, params, (vp_iql_head)(4 * k + j));
        }
        vp_tensor dy = vp_tensor_2d(dout[k]->data, VP_F32, dout[k]->mem, B, out_dim(c, k));
        vp_tensor hid = rows_of(&a->hid[k], B), d_hid = rows_of(&a->d_hid[k], B);
        VP_TRY(vp_model_linear_backward(m, &hid, &W[2], &dy, &G[2], &G[3], &d_hid, 0.0f));
        VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &hid, &d_hid, &d_hid));
        VP_TRY(vp_model_linear_backward(m, &h, &W[0], &d_hid, &G[0], &G[1], &d_h, k == 0 ? 0.0f : 1.0f));
    }
    // the portfolio projection and the encoder
    vp_tensor port = vp_tensor_2d(a->portfolio->data, VP_F32, a->portfolio->mem, B, c->n_portfolio);
    return vp_headnet_backward(m, &pe, a->enc, &port, &d_h, B);
}

vp_status vp_iql_net_commit(const vp_iql_net* n, vp_tensor* params, const vp_iql_acts* a) {
    VP_REQUIRE(n != NULL && params != NULL && a != NULL, VP_ERR_INVALID_ARG, "vp_iql_net_commit: NULL argument");
    vp_tensor pe = vp_iql_enc_view(n, params);
    return vp_model_commit(&n->enc, &pe, a->enc);
}

/* ---- the greedy policy: the encoder and the policy head's logits ------------------------------- */

/* The policy's workspace: the network's forward activations with FP32 heads. */
struct vp_policy_work {
    vp_iql_acts* acts; /* forward of up to `batch` samples */
};

static vp_status iql_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "policy iql: workspace");
    vp_status s = vp_iql_acts_init(&w->acts, (const vp_iql_net*)p->impl, batch, 0, p->fp32_scores);
    if (s != VP_OK) {
        free(w);
        return s;
    }
    *out = w;
    return VP_OK;
}

static void iql_work_free(vp_policy_work* w) {
    if (!w) return;
    vp_iql_acts_free(w->acts);
    free(w);
}

static vp_status iql_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                            int64_t n, vp_tensor* enc) {
    const vp_iql_net* net = (const vp_iql_net*)p->impl;
    VP_REQUIRE(n >= 1 && n <= w->acts->max_batch, VP_ERR_INVALID_ARG, "policy iql: %lld samples for a workspace of %lld",
               (long long)n, (long long)w->acts->max_batch);
    const vp_tensor pe = vp_iql_enc_view(net, p->params);
    VP_TRY(vp_model_encode(&net->enc, &pe, w->acts->enc, features, bar_idx, n));
    *enc = vp_iql_encoding(w->acts);
    return VP_OK;
}

static vp_status iql_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                           int64_t n, vp_tensor* scores) {
    const vp_iql_net* net = (const vp_iql_net*)p->impl;
    VP_TRY(vp_iql_net_encode(net, p->params, w->acts, NULL, NULL, enc, portfolio, n));
    VP_TRY(vp_iql_net_head(net, p->params, NULL, w->acts, VP_IQL_MLP_PI));
    *scores = vp_iql_out(w->acts, VP_IQL_MLP_PI, 0);
    return VP_OK;
}

static const vp_policy_ops IQL_POLICY_OPS = {"iql", iql_work_init, iql_work_free, iql_encode, iql_score};

vp_policy vp_iql_policy(const vp_iql_net* n, const vp_tensor* params) {
    vp_policy p = vp_model_rollout_policy(n ? &n->enc : NULL, params);
    p.ops = &IQL_POLICY_OPS;
    p.impl = n;
    return p;
}
