/* The policy interface's checked entry points and the DQN agent's policy (the network's
 * encoder and its C51 expected values). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "backend/kit.h"
#include "model/model_internal.h"
#include "vulpes/ops.h"
#include "vulpes/policy.h"

vp_status vp_policy_check(const vp_policy* p) {
    VP_REQUIRE(p != NULL && p->ops != NULL && p->backend != NULL, VP_ERR_INVALID_ARG,
               "policy: NULL policy, functions or backend");
    const vp_policy_ops* o = p->ops;
    VP_REQUIRE(o->work_init && o->work_free && o->encode && o->score, VP_ERR_INVALID_ARG,
               "policy %s: a function of its table is NULL", o->name ? o->name : "?");
    VP_REQUIRE(p->n_features >= 1 && p->window >= 1 && p->enc_dim >= 1 &&
                   (p->n_portfolio == VP_ENV_PORTFOLIO ||
                    (p->n_portfolio == VP_ENV_PORTFOLIO + 1 && o == &vp_model_policy_ops && isfinite(p->goal))),
               VP_ERR_INVALID_ARG, "policy %s: F %d, K %d, P %d (the environment's is %d, or %d for a goal-conditioned "
               "DQN network with a finite goal), encoding width %d", o->name, p->n_features, p->window, p->n_portfolio,
               VP_ENV_PORTFOLIO, VP_ENV_PORTFOLIO + 1, p->enc_dim);
    return vp_action_layout_check(o->name, p->layout.n_branches, p->layout.size);
}

vp_status vp_policy_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_policy_work_init: out is NULL");
    *out = NULL;
    VP_TRY(vp_policy_check(p));
    VP_REQUIRE(batch >= 1, VP_ERR_INVALID_ARG, "vp_policy_work_init: batch %lld (>= 1)", (long long)batch);
    return p->ops->work_init(p, batch, out);
}

void vp_policy_work_free(const vp_policy* p, vp_policy_work* w) {
    if (p && p->ops && w) p->ops->work_free(w);
}

vp_status vp_policy_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                           int64_t n, vp_tensor* enc) {
    VP_REQUIRE(p != NULL && p->ops != NULL && w != NULL && enc != NULL, VP_ERR_INVALID_ARG,
               "vp_policy_encode: NULL argument");
    return p->ops->encode(p, w, features, bar_idx, n, enc);
}

vp_status vp_policy_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                          int64_t n, vp_tensor* scores) {
    VP_REQUIRE(p != NULL && p->ops != NULL && w != NULL && scores != NULL, VP_ERR_INVALID_ARG,
               "vp_policy_score: NULL argument");
    return p->ops->score(p, w, enc, portfolio, n, scores);
}

vp_status vp_policy_observe(const vp_policy* p, vp_policy_work* w, const vp_tensor* actions, const vp_tensor* rewards,
                            int64_t n) {
    VP_REQUIRE(p != NULL && w != NULL && actions != NULL && rewards != NULL && n >= 1, VP_ERR_INVALID_ARG,
               "vp_policy_observe: NULL argument or n %lld", (long long)n);
    if (!p->observe) return VP_OK;
    return p->observe(p, w, actions, rewards, n);
}

/* ---- the DQN agent: vp_model_encode and the C51 expected values --------------------------- */

/* The DQN policy's workspace: the network's forward activations (no IQN head) and the
 * network as its scores are computed (with fp32_scores, a shallow copy with FP32 GEMMs). */
struct vp_policy_work {
    vp_model_acts* acts; /* forward of up to `batch` samples */
    vp_model heads;      /* the network for the heads (shares its buffers) */
    /* a goal-conditioned network's rows (n_portfolio VP_ENV_PORTFOLIO + 1): one buffer holding */
    vp_buffer goal_buf;  /* (empty otherwise) */
    vp_tensor goal_src;  /* [batch * 8 + 1, 1] the env's rows, then the goal */
    vp_tensor goal_idx;  /* [batch * 9] i32: row e entry k < 8 reads e * 8 + k, entry 8 the goal */
    vp_tensor goal_rows; /* [batch * 9, 1] the rows scored */
    int64_t batch;       /* rows the workspace holds */
};

/* A goal-conditioned workspace's buffers: the gather's indices and the goal, uploaded once. */
static vp_status goal_init(const vp_policy* p, int64_t batch, vp_policy_work* w) {
    const int64_t P = VP_ENV_PORTFOLIO, G = P + 1;
    const size_t src_b = ((size_t)(batch * P + 1) * 4 + 255) / 256 * 256, idx_b = ((size_t)(batch * G) * 4 + 255) / 256 * 256;
    vp_backend* b = p->backend;
    const vp_mem mem = vp_backend_native_mem(b);
    VP_TRY(vp_buffer_alloc(b, mem, src_b + 2 * idx_b, &w->goal_buf));
    char* base = (char*)w->goal_buf.dev;
    w->goal_src = vp_tensor_2d(base, VP_F32, mem, batch * P + 1, 1);
    w->goal_idx = vp_tensor_1d(base + src_b, VP_I32, mem, batch * G);
    w->goal_rows = vp_tensor_2d(base + src_b + idx_b, VP_F32, mem, batch * G, 1);
    int32_t* idx = (int32_t*)malloc(sizeof(int32_t) * (size_t)(batch * G));
    VP_REQUIRE(idx != NULL, VP_ERR_OOM, "policy dqn: goal rows of %lld envs", (long long)batch);
    for (int64_t e = 0; e < batch; ++e)
        for (int64_t k = 0; k < G; ++k) idx[e * G + k] = (int32_t)(k < P ? e * P + k : batch * P);
    vp_status s = vp_upload(b, &w->goal_idx, idx, sizeof(int32_t) * (size_t)(batch * G));
    free(idx);
    vp_tensor g = vp_tensor_1d(base + (size_t)(batch * P) * 4, VP_F32, mem, 1);
    if (s == VP_OK) s = vp_upload(b, &g, &p->goal, sizeof p->goal);
    return s;
}

static void dqn_work_free(vp_policy_work* w) {
    if (!w) return;
    vp_model_acts_free(w->acts);
    if (w->goal_buf.dev) vp_buffer_free(w->heads.backend, &w->goal_buf);
    free(w);
}

static vp_status dqn_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "policy dqn: workspace");
    vp_status s = vp_model_acts_init(&w->acts, (const vp_model*)p->impl, batch, 0, 0);
    if (s != VP_OK) {
        free(w);
        return s;
    }
    vp_model_acts_q_only(w->acts); // scores read Q only
    vp_model_acts_fold_heads(w->acts); // CUDA TF32 scores: Q in one pass from the hidden rows
    w->heads = *(const vp_model*)p->impl;
    if (p->fp32_scores) w->heads.precision = VP_PREC_FP32;
    w->batch = batch;
    if (p->n_portfolio == VP_ENV_PORTFOLIO + 1) s = goal_init(p, batch, w);
    if (s != VP_OK) {
        dqn_work_free(w);
        return s;
    }
    *out = w;
    return VP_OK;
}

static vp_status dqn_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features,
                            const vp_tensor* bar_idx, int64_t n, vp_tensor* enc) {
    VP_TRY(vp_model_encode((const vp_model*)p->impl, p->params, w->acts, features, bar_idx, n));
    *enc = vp_model_encoding(w->acts);
    return VP_OK;
}

static vp_status dqn_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                           int64_t n, vp_tensor* scores) {
    vp_tensor rows = *portfolio;
    if (p->n_portfolio == VP_ENV_PORTFOLIO + 1) VP_TRY(vp_policy_goal_rows(p, w, portfolio, n, &rows));
    VP_TRY(vp_model_heads(&w->heads, p->params, w->acts, enc, &rows, NULL, n));
    *scores = vp_model_q(w->acts);
    return VP_OK;
}

vp_status vp_policy_goal_rows(const vp_policy* p, vp_policy_work* w, const vp_tensor* portfolio, int64_t n,
                              vp_tensor* out) {
    static const char* fn = "vp_policy_goal_rows";
    VP_REQUIRE(p != NULL && w != NULL && portfolio != NULL && out != NULL, VP_ERR_INVALID_ARG, "%s: NULL argument", fn);
    VP_REQUIRE(p->ops == &vp_model_policy_ops && p->n_portfolio == VP_ENV_PORTFOLIO + 1 && w->goal_buf.dev != NULL,
               VP_ERR_INVALID_ARG, "%s: the policy is not a goal-conditioned DQN network (n_portfolio %d)", fn,
               p->n_portfolio);
    VP_REQUIRE(n >= 1 && n <= w->batch, VP_ERR_SHAPE, "%s: %lld rows (the workspace holds 1 .. %lld)", fn, (long long)n,
               (long long)w->batch);
    VP_TRY(vp_tensor_check_rows(fn, "portfolio", p->backend, portfolio, VP_F32, n, VP_ENV_PORTFOLIO));
    const int64_t P = VP_ENV_PORTFOLIO, G = P + 1;
    // the env's rows into the source's front, then every entry gathered (the goal from the source's end)
    vp_tensor src = vp_tensor_1d(w->goal_src.data, VP_F32, w->goal_src.mem, n * P);
    VP_TRY(vp_copy(p->backend, portfolio, &src));
    vp_tensor idx = vp_tensor_1d(w->goal_idx.data, VP_I32, w->goal_idx.mem, n * G);
    vp_tensor dst = vp_tensor_2d(w->goal_rows.data, VP_F32, w->goal_rows.mem, n * G, 1);
    VP_TRY(vp_gather_rows(p->backend, &w->goal_src, &idx, &dst));
    *out = vp_tensor_2d(w->goal_rows.data, VP_F32, w->goal_rows.mem, n, G);
    return VP_OK;
}

const float* vp_policy_size_scale(const vp_policy* p, const vp_policy_work* w) {
    if (!p || !w || p->ops != &vp_model_policy_ops) return NULL;
    const vp_model* m = (const vp_model*)p->impl;
    return m->cfg.risk_budget > 0.0f ? (const float*)w->acts->rb.data : NULL;
}

vp_status vp_policy_hold_params(const vp_policy* p, vp_policy_work* w, int held) {
    VP_REQUIRE(p != NULL && w != NULL, VP_ERR_INVALID_ARG, "vp_policy_hold_params: NULL argument");
    if (p->ops == &vp_model_policy_ops) vp_model_acts_hold_params(w->acts, held);
    return VP_OK;
}

const vp_policy_ops vp_model_policy_ops = {"dqn", dqn_work_init, dqn_work_free, dqn_encode, dqn_score};

vp_status vp_model_policy_encode_span(const vp_policy* p, vp_policy_work* w, const vp_model_span* s,
                                      const vp_tensor* features, int64_t chunk, vp_tensor* out) {
    VP_REQUIRE(p != NULL && p->ops == &vp_model_policy_ops && w != NULL, VP_ERR_INVALID_ARG,
               "vp_model_policy_encode_span: the policy is not a DQN network's (%s), or no workspace",
               p && p->ops && p->ops->name ? p->ops->name : "NULL");
    return vp_model_encode_span((const vp_model*)p->impl, p->params, w->acts, s, features, chunk, out);
}

vp_policy vp_model_policy(const vp_model* m, const vp_tensor* params) {
    vp_policy p;
    memset(&p, 0, sizeof p);
    p.ops = &vp_model_policy_ops;
    p.impl = m;
    p.params = params;
    if (m) {
        p.backend = m->backend;
        p.n_features = m->cfg.n_features;
        p.window = m->cfg.window;
        p.n_portfolio = m->cfg.n_portfolio;
        p.enc_dim = m->cfg.hidden;
        p.layout.n_branches = m->cfg.n_branches;
        for (int br = 0; br < m->cfg.n_branches && br < VP_ENV_BRANCHES; ++br) {
            p.layout.size[br] = m->cfg.branch_sizes[br];
            p.layout.offset[br] = p.layout.n_heads;
            p.layout.n_heads += m->cfg.branch_sizes[br];
        }
    }
    return p;
}

vp_policy vp_model_rollout_policy(const vp_model* m, const vp_tensor* params) {
    vp_policy p = vp_model_policy(m, params);
    p.fp32_scores = 1;
    return p;
}
