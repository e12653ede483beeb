/* The flat C API's network: a checkpoint's config and parameters on the CPU backend, its
 * configuration and parameters by name, and the C forward on caller-given windows. A PPO
 * checkpoint opens as its actor-critic (vulpes/ppo.h): the forward's q is its policy logits
 * and vp_api_model_values its values; an IQL checkpoint (vulpes/iql.h) likewise: q its policy
 * head's logits, the values its V(s). */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "model/model_hmods.h"
#include "vulpes/checkpoint.h"
#include "vulpes/config.h"
#include "vulpes/dqn.h"
#include "vulpes/features.h"
#include "vulpes/iql.h"
#include "vulpes/model.h"
#include "vulpes/ppo.h"
#include "vulpes/train.h"

struct vp_api_model {
    vp_backend* backend; /* the CPU backend */
    vp_model model;      /* the checkpoint's network, its parameters in model.params */
    vp_model_acts* acts; /* activations for up to acts_batch samples and acts_taus taus (NULL: none yet) */
    int64_t acts_batch;
    int acts_taus;
    int32_t* bar_idx;    /* [acts_batch] the decision row of each sample in the caller's window */
    vp_ppo_net* ppo;     /* a PPO checkpoint's actor-critic (NULL: the DQN network in `model`) */
    vp_ppo_acts* pacts;  /* its activations for up to acts_batch samples */
    int n_ppo;           /* its checkpoint tensors */
    const char** ppo_names; /* [n_ppo] their names */
    vp_tensor* ppo_views;   /* [n_ppo] their views of ppo->params (of iql->params for an IQL network) */
    vp_iql_net* iql;        /* an IQL checkpoint's network (its tensors in n_ppo, ppo_names, ppo_views) */
    vp_iql_acts* iacts;     /* its activations for up to acts_batch samples */
};

/* Whether m holds a network with heads of its own over the encoder (PPO's or IQL's). */
static int heads_net(const vp_api_model* m) { return m->ppo != NULL || m->iql != NULL; }

/* The network configuration of m. */
static const vp_model_cfg* cfg_of(const vp_api_model* m) {
    return m->ppo ? &m->ppo->enc.cfg : m->iql ? &m->iql->enc.cfg : &m->model.cfg;
}

vp_status vp_api_checkpoint_config(const char* path, vp_config* cfg, vp_model_cfg* mc) {
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* yaml = vp_checkpoint_meta(ck, "config");
    vp_status s = yaml ? VP_OK
                       : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s has no config in its metadata", path);
    vp_config_defaults(cfg);
    if (s == VP_OK) s = vp_config_load_string(cfg, yaml, "the checkpoint's config");
    vp_checkpoint_close(ck);
    VP_TRY(s);
    VP_TRY(vp_config_check(cfg));
    // F as the dataset computes it: every feature, the configured normalisation window
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = (int)cfg->features.window;
    vp_train_parts parts;
    VP_TRY(vp_train_parts_make(cfg, vp_features_count(&fc), &parts));
    *mc = parts.learner.model;
    return VP_OK;
}

/* The model configuration of the training run whose config YAML the checkpoint holds. */
static vp_status model_cfg_of(const char* path, vp_model_cfg* out, int* is_ppo, int* is_iql) {
    vp_config cfg;
    VP_TRY(vp_api_checkpoint_config(path, &cfg, out));
    *is_ppo = strcmp(cfg.train.algo, "ppo") == 0;
    *is_iql = strcmp(cfg.train.algo, "iql") == 0;
    VP_REQUIRE(*is_ppo || *is_iql || strcmp(cfg.train.algo, "dqn") == 0, VP_ERR_UNSUPPORTED,
               "checkpoint %s was trained by train.algo '%s'; only the dqn, ppo and iql networks open as a model "
               "(a dt checkpoint opens with vp_api_dt_open)", path, cfg.train.algo);
    return VP_OK;
}

/* A PPO checkpoint's actor-critic in FP32 and its tensor list into m. */
static vp_status ppo_open(vp_api_model* m, const vp_model_cfg* mc, const char* checkpoint) {
    m->ppo = (vp_ppo_net*)calloc(1, sizeof *m->ppo);
    VP_REQUIRE(m->ppo != NULL, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    VP_TRY(vp_ppo_net_init(m->ppo, m->backend, mc, 0));
    m->ppo->enc.precision = VP_PREC_FP32;
    VP_TRY(vp_ppo_read_params(m->backend, m->ppo, checkpoint, &m->ppo->params));
    m->n_ppo = vp_ppo_net_tensors(m->ppo, NULL, NULL, NULL, 0);
    m->ppo_names = (const char**)calloc((size_t)m->n_ppo, sizeof *m->ppo_names);
    m->ppo_views = (vp_tensor*)calloc((size_t)m->n_ppo, sizeof *m->ppo_views);
    VP_REQUIRE(m->ppo_names && m->ppo_views, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    vp_ppo_net_tensors(m->ppo, &m->ppo->params, m->ppo_names, m->ppo_views, m->n_ppo);
    return VP_OK;
}

/* An IQL checkpoint's network in FP32 and its tensor list into m. */
static vp_status iql_open(vp_api_model* m, const vp_model_cfg* mc, const char* checkpoint) {
    m->iql = (vp_iql_net*)calloc(1, sizeof *m->iql);
    VP_REQUIRE(m->iql != NULL, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    VP_TRY(vp_iql_net_init(m->iql, m->backend, mc, 0));
    m->iql->enc.precision = VP_PREC_FP32;
    VP_TRY(vp_iql_read_params(m->backend, m->iql, checkpoint, &m->iql->params));
    m->n_ppo = vp_iql_net_tensors(m->iql, NULL, NULL, NULL, 0);
    m->ppo_names = (const char**)calloc((size_t)m->n_ppo, sizeof *m->ppo_names);
    m->ppo_views = (vp_tensor*)calloc((size_t)m->n_ppo, sizeof *m->ppo_views);
    VP_REQUIRE(m->ppo_names && m->ppo_views, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    vp_iql_net_tensors(m->iql, &m->iql->params, m->ppo_names, m->ppo_views, m->n_ppo);
    return VP_OK;
}

int vp_api_model_open(const char* checkpoint, vp_api_model** out) {
    VP_REQUIRE(checkpoint != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_api_model_open: checkpoint or out is NULL");
    *out = NULL;
    vp_model_cfg mc;
    int is_ppo = 0, is_iql = 0;
    VP_TRY(model_cfg_of(checkpoint, &mc, &is_ppo, &is_iql));
    vp_api_model* m = (vp_api_model*)calloc(1, sizeof *m);
    VP_REQUIRE(m != NULL, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    vp_status s = vp_backend_cpu_init(&m->backend);
    if (s == VP_OK && is_ppo) {
        s = ppo_open(m, &mc, checkpoint);
    } else if (s == VP_OK && is_iql) {
        s = iql_open(m, &mc, checkpoint);
    } else {
        if (s == VP_OK) s = vp_model_init(&m->model, m->backend, &mc, 0);
        if (s == VP_OK) m->model.precision = VP_PREC_FP32;
        if (s == VP_OK) s = vp_dqn_read_params(m->backend, &m->model, checkpoint, &m->model.params);
    }
    if (s != VP_OK) {
        vp_api_model_close(m);
        return vp_error_context(s, "opening checkpoint %s", checkpoint);
    }
    *out = m;
    return VP_OK;
}

void vp_api_model_close(vp_api_model* m) {
    if (!m) return;
    vp_model_acts_free(m->acts);
    vp_ppo_acts_free(m->pacts);
    free(m->bar_idx);
    free(m->ppo_names);
    free(m->ppo_views);
    if (m->ppo) vp_ppo_net_free(m->ppo);
    free(m->ppo);
    vp_iql_acts_free(m->iacts);
    if (m->iql) vp_iql_net_free(m->iql);
    free(m->iql);
    if (m->backend) vp_model_free(&m->model);
    vp_backend_free(m->backend);
    free(m);
}

int vp_api_model_cfg(const vp_api_model* m, const char* name, double* out) {
    VP_REQUIRE(m != NULL && name != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_api_model_cfg: NULL argument");
    const vp_model_cfg* c = cfg_of(m);
    const struct {
        const char* name;
        double value;
    } v[] = {
        {"ppo", m->ppo ? 1 : 0}, {"iql", m->iql ? 1 : 0},
        {"n_features", c->n_features}, {"n_portfolio", c->n_portfolio}, {"window", c->window},
        {"hidden", c->hidden}, {"encoder", c->encoder}, {"mamba_state", c->mamba_state},
        {"mamba_head_dim", c->mamba_head_dim}, {"mamba_conv", c->mamba_conv}, {"head_hidden", c->head_hidden},
        {"n_atoms", c->n_atoms}, {"v_min", c->v_min}, {"v_max", c->v_max}, {"n_branches", c->n_branches},
        {"iqn_cos", c->iqn_cos}, {"ln_eps", c->ln_eps}, {"rms_eps", c->rms_eps},
        {"n_heads", vp_model_cfg_actions(c)}, {"vsn", c->vsn}, {"vsn_hidden", c->vsn_hidden},
        {"spectral_norm", c->spectral_norm}, {"kan", c->kan}, {"kan_grid", c->kan_grid},
        {"kan_order", c->kan_order}, {"kan_range", c->kan_range},
        {"stoch_depth", c->stoch_depth}, {"q_denoise", c->q_denoise}, {"cross_branch", c->cross_branch},
        {"risk_budget", c->risk_budget}, {"adaptive_atoms", c->adaptive_atoms},
        {"tlob_blocks", c->tlob_blocks}, {"tlob_heads", c->tlob_heads},
        {"tlob_feature_heads", c->tlob_feature_heads}, {"tlob_mlp", c->tlob_mlp},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
        if (strcmp(name, v[i].name) == 0) {
            *out = v[i].value;
            return VP_OK;
        }
    if (strncmp(name, "branch_size", 11) == 0 && name[11] >= '0' && name[11] < '0' + VP_MAX_BRANCHES &&
        name[12] == '\0') {
        const int br = name[11] - '0';
        *out = br < c->n_branches ? c->branch_sizes[br] : 0;
        return VP_OK;
    }
    VP_FAIL(VP_ERR_INVALID_ARG, "the network has no configuration value '%.60s' (vulpes/api.h lists them)", name);
}

int vp_api_model_n_params(const vp_api_model* m) { return m ? (heads_net(m) ? m->n_ppo : m->model.n_params) : 0; }

const char* vp_api_model_param_name(const vp_api_model* m, int i) {
    if (m && heads_net(m)) return i >= 0 && i < m->n_ppo ? m->ppo_names[i] : NULL;
    return (m && i >= 0 && i < m->model.n_params) ? m->model.info[i].name : NULL;
}

/* The view of tensor `name` of m's PPO or IQL network, or an error naming it. */
static vp_status find_ppo(const vp_api_model* m, const char* name, const vp_tensor** out) {
    VP_REQUIRE(name != NULL, VP_ERR_INVALID_ARG, "parameter name is NULL");
    for (int i = 0; i < m->n_ppo; ++i)
        if (strcmp(m->ppo_names[i], name) == 0) {
            *out = &m->ppo_views[i];
            return VP_OK;
        }
    VP_FAIL(VP_ERR_INVALID_ARG, "the network has no parameter '%.80s'", name);
}

/* Parameter `name` of m, or an error naming it. */
static vp_status find_param(const vp_api_model* m, const char* name, const vp_param_info** out) {
    VP_REQUIRE(m != NULL && name != NULL, VP_ERR_INVALID_ARG, "model or parameter name is NULL");
    *out = vp_model_find_param(&m->model, name);
    VP_REQUIRE(*out != NULL, VP_ERR_INVALID_ARG, "the network has no parameter '%.80s'", name);
    return VP_OK;
}

int vp_api_model_param_shape(const vp_api_model* m, const char* name, int64_t* shape, int* ndim) {
    VP_REQUIRE(shape != NULL && ndim != NULL, VP_ERR_INVALID_ARG, "vp_api_model_param_shape: shape or ndim is NULL");
    if (m && heads_net(m)) {
        const vp_tensor* t = NULL;
        VP_TRY(find_ppo(m, name, &t));
        *ndim = t->ndim;
        shape[0] = t->shape[0];
        shape[1] = t->ndim > 1 ? t->shape[1] : 1;
        return VP_OK;
    }
    const vp_param_info* p = NULL;
    VP_TRY(find_param(m, name, &p));
    *ndim = p->ndim;
    shape[0] = p->shape[0];
    shape[1] = p->ndim > 1 ? p->shape[1] : 1;
    return VP_OK;
}

int vp_api_model_param(const vp_api_model* m, const char* name, float* dst, int64_t cap) {
    VP_REQUIRE(dst != NULL, VP_ERR_INVALID_ARG, "vp_api_model_param: dst is NULL");
    if (m && heads_net(m)) {
        const vp_tensor* t = NULL;
        VP_TRY(find_ppo(m, name, &t));
        const int64_t n = vp_tensor_numel(t);
        VP_REQUIRE(cap >= n, VP_ERR_SHAPE, "parameter %s has %lld elements, the buffer holds %lld", name,
                   (long long)n, (long long)cap);
        return vp_download(m->backend, dst, t, sizeof(float) * (size_t)n);
    }
    const vp_param_info* p = NULL;
    VP_TRY(find_param(m, name, &p));
    VP_REQUIRE(cap >= p->numel, VP_ERR_SHAPE, "parameter %s has %lld elements, the buffer holds %lld", name,
               (long long)p->numel, (long long)cap);
    vp_tensor v = vp_model_param_view(&m->model, &m->model.params, p);
    return vp_download(m->backend, dst, &v, sizeof(float) * (size_t)p->numel);
}

/* Activations and decision rows for `batch` samples with `n_taus` taus (remade when they do not fit). */
static vp_status ensure_acts(vp_api_model* m, int64_t batch, int n_taus) {
    if ((m->acts || m->pacts || m->iacts) && batch <= m->acts_batch && n_taus == m->acts_taus) return VP_OK;
    vp_model_acts_free(m->acts);
    vp_ppo_acts_free(m->pacts);
    vp_iql_acts_free(m->iacts);
    m->acts = NULL;
    m->pacts = NULL;
    m->iacts = NULL;
    free(m->bar_idx);
    m->bar_idx = (int32_t*)malloc(sizeof(int32_t) * (size_t)batch);
    VP_REQUIRE(m->bar_idx != NULL, VP_ERR_OOM, "forward of %lld samples: out of memory", (long long)batch);
    if (m->ppo)
        VP_TRY(vp_ppo_acts_init(&m->pacts, m->ppo, batch, 0, 1));
    else if (m->iql)
        VP_TRY(vp_iql_acts_init(&m->iacts, m->iql, batch, 0, 1));
    else
        VP_TRY(vp_model_acts_init(&m->acts, &m->model, batch, n_taus, 0));
    m->acts_batch = batch;
    m->acts_taus = n_taus;
    return VP_OK;
}

/* Copies n floats of an output view to the caller (NULL dst: not wanted). */
static vp_status copy_out(vp_api_model* m, const vp_tensor* t, float* dst, int64_t n) {
    if (!dst) return VP_OK;
    VP_REQUIRE(t->data != NULL, VP_ERR_STATE, "the forward wrote no such output");
    return vp_download(m->backend, dst, t, sizeof(float) * (size_t)n);
}

int vp_api_model_forward(vp_api_model* m, const float* window, const float* portfolio, const float* taus,
                         int64_t batch, int n_taus, float* q, float* log_probs, float* quantiles) {
    VP_REQUIRE(m != NULL && window != NULL && portfolio != NULL && q != NULL, VP_ERR_INVALID_ARG,
               "vp_api_model_forward: model, window, portfolio or q is NULL");
    const vp_model_cfg* c = cfg_of(m);
    const int64_t K = c->window;
    VP_REQUIRE(batch >= 1 && batch <= INT32_MAX / K, VP_ERR_INVALID_ARG,
               "forward of %lld samples: the batch must be 1 .. %lld (its windows' rows are counted in 32 bits)",
               (long long)batch, (long long)(INT32_MAX / K));
    VP_REQUIRE(n_taus >= 0 && (n_taus == 0) == (taus == NULL), VP_ERR_INVALID_ARG,
               "forward: taus must be given exactly when n_taus > 0 (n_taus %d, taus %s)", n_taus,
               taus ? "given" : "NULL");
    VP_REQUIRE(quantiles == NULL || n_taus > 0, VP_ERR_INVALID_ARG, "forward: IQN quantiles need taus");
    VP_REQUIRE(!heads_net(m) || (n_taus == 0 && log_probs == NULL), VP_ERR_INVALID_ARG,
               "forward: a %s network has no C51 log-probabilities or IQN head (give NULL log_probs and no taus)",
               m->ppo ? "PPO" : "IQL");
    const int64_t F = c->n_features, P = c->n_portfolio, A = vp_model_cfg_actions(c);
    VP_TRY(ensure_acts(m, batch, n_taus));
    // the caller's windows as one feature matrix [batch K, F]: sample i decides at its last row
    for (int64_t i = 0; i < batch; ++i) m->bar_idx[i] = (int32_t)(i * K + K - 1);
    vp_tensor feats = vp_tensor_2d((void*)window, VP_F32, VP_MEM_HOST, batch * K, F);
    vp_tensor bars = vp_tensor_1d(m->bar_idx, VP_I32, VP_MEM_HOST, batch);
    vp_tensor port = vp_tensor_2d((void*)portfolio, VP_F32, VP_MEM_HOST, batch, P);
    vp_tensor tt = taus ? vp_tensor_2d((void*)taus, VP_F32, VP_MEM_HOST, batch, n_taus) : (vp_tensor){0};
    if (m->iql) {
        // the IQL network: q receives the policy head's logits, vp_api_model_values V(s)
        VP_TRY(vp_iql_net_encode(m->iql, &m->iql->params, m->iacts, &feats, &bars, NULL, &port, batch));
        VP_TRY(vp_iql_net_head(m->iql, &m->iql->params, NULL, m->iacts, VP_IQL_MLP_PI));
        VP_TRY(vp_iql_net_head(m->iql, &m->iql->params, NULL, m->iacts, VP_IQL_MLP_V));
        const vp_tensor lg = vp_iql_out(m->iacts, VP_IQL_MLP_PI, 0);
        return copy_out(m, &lg, q, batch * A);
    }
    if (m->ppo) {
        // the actor-critic: q receives the policy logits, vp_api_model_values the values
        VP_TRY(vp_ppo_net_encode(m->ppo, &m->ppo->params, m->pacts, &feats, &bars, batch));
        VP_TRY(vp_ppo_net_heads(m->ppo, &m->ppo->params, m->pacts, NULL, &port, batch));
        const vp_tensor lg = vp_ppo_logits(m->pacts);
        return copy_out(m, &lg, q, batch * A);
    }
    VP_TRY(vp_model_forward(&m->model, &m->model.params, m->acts, &feats, &bars, &port, taus ? &tt : NULL, batch));
    const vp_tensor tq = vp_model_q(m->acts), tl = vp_model_log_probs(m->acts), ti = vp_model_iqn(m->acts);
    VP_TRY(copy_out(m, &tq, q, batch * A));
    VP_TRY(copy_out(m, &tl, log_probs, batch * A * c->n_atoms));
    return copy_out(m, &ti, quantiles, batch * n_taus * A);
}

int vp_api_model_size_scale(const vp_api_model* m, float* dst, int64_t cap) {
    VP_REQUIRE(m != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_api_model_size_scale: model or dst is NULL");
    const vp_tensor s = vp_model_risk_scale(m->acts);
    VP_REQUIRE(s.data != NULL, VP_ERR_STATE,
               "the size scale: the network has no risk-budget head (model.risk_budget 0) or ran no forward");
    VP_REQUIRE(cap >= vp_tensor_numel(&s), VP_ERR_INVALID_ARG, "the size scale of %lld samples does not fit in %lld",
               (long long)vp_tensor_numel(&s), (long long)cap);
    return vp_download(m->backend, dst, &s, sizeof(float) * (size_t)vp_tensor_numel(&s));
}

int vp_api_model_values(const vp_api_model* m, float* dst, int64_t cap) {
    VP_REQUIRE(m != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_api_model_values: model or dst is NULL");
    VP_REQUIRE((m->ppo != NULL && m->pacts != NULL) || (m->iql != NULL && m->iacts != NULL), VP_ERR_STATE,
               "the values: the network is not a PPO actor-critic or an IQL network, or ran no forward");
    const vp_tensor vi = m->iacts ? vp_iql_out(m->iacts, VP_IQL_MLP_V, 0) : (vp_tensor){0};
    const vp_tensor v = m->iacts ? vp_tensor_1d(vi.data, VP_F32, vi.mem, vi.shape[0]) : vp_ppo_values(m->pacts);
    VP_REQUIRE(cap >= vp_tensor_numel(&v), VP_ERR_INVALID_ARG, "the values of %lld samples do not fit in %lld",
               (long long)vp_tensor_numel(&v), (long long)cap);
    return vp_download(m->backend, dst, &v, sizeof(float) * (size_t)vp_tensor_numel(&v));
}
