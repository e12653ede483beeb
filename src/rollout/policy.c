/* The policy interface's checked entry points and the DQN agent's policy (the network's
 * encoder and its C51 expected values). */
#include <stdlib.h>
#include <string.h>

#include "model/model_internal.h"
#include "vulpes/policy.h"

vp_status vp_policy_check(const vp_policy* p) {
    VP_REQUIRE(p != NULL && p->ops != NULL && p->backend != NULL, VP_ERR_INVALID_ARG,
               "policy: NULL policy, functions or backend");
    const vp_policy_ops* o = p->ops;
    VP_REQUIRE(o->work_init && o->work_free && o->encode && o->score, VP_ERR_INVALID_ARG,
               "policy %s: a function of its table is NULL", o->name ? o->name : "?");
    VP_REQUIRE(p->n_features >= 1 && p->window >= 1 && p->n_portfolio == VP_ENV_PORTFOLIO && p->enc_dim >= 1,
               VP_ERR_INVALID_ARG, "policy %s: F %d, K %d, P %d (the environment's is %d), encoding width %d", o->name,
               p->n_features, p->window, p->n_portfolio, VP_ENV_PORTFOLIO, p->enc_dim);
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

/* ---- the DQN agent: vp_model_encode and the C51 expected values --------------------------- */

/* The DQN policy's workspace: the network's forward activations (no IQN head) and the
 * network as its scores are computed (with fp32_scores, a shallow copy with FP32 GEMMs). */
struct vp_policy_work {
    vp_model_acts* acts; /* forward of up to `batch` samples */
    vp_model heads;      /* the network for the heads (shares its buffers) */
};

static vp_status dqn_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "policy dqn: workspace");
    vp_status s = vp_model_acts_init(&w->acts, (const vp_model*)p->impl, batch, 0, 0);
    if (s != VP_OK) {
        free(w);
        return s;
    }
    w->heads = *(const vp_model*)p->impl;
    if (p->fp32_scores) w->heads.precision = VP_PREC_FP32;
    *out = w;
    return VP_OK;
}

static void dqn_work_free(vp_policy_work* w) {
    if (!w) return;
    vp_model_acts_free(w->acts);
    free(w);
}

static vp_status dqn_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features,
                            const vp_tensor* bar_idx, int64_t n, vp_tensor* enc) {
    VP_TRY(vp_model_encode((const vp_model*)p->impl, p->params, w->acts, features, bar_idx, n));
    *enc = vp_model_encoding(w->acts);
    return VP_OK;
}

static vp_status dqn_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                           int64_t n, vp_tensor* scores) {
    VP_TRY(vp_model_heads(&w->heads, p->params, w->acts, enc, portfolio, NULL, n));
    *scores = vp_model_q(w->acts);
    return VP_OK;
}

const float* vp_policy_size_scale(const vp_policy* p, const vp_policy_work* w) {
    if (!p || !w || p->ops != &vp_model_policy_ops) return NULL;
    const vp_model* m = (const vp_model*)p->impl;
    return m->cfg.risk_budget > 0.0f ? (const float*)w->acts->rb.data : NULL;
}

const vp_policy_ops vp_model_policy_ops = {"dqn", dqn_work_init, dqn_work_free, dqn_encode, dqn_score};

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
