/* The flat C API's Decision Transformer: a dt checkpoint's network on the CPU backend in FP32,
 * its configuration and parameters by name, and the C forward of caller-given sequences. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "vulpes/config.h"
#include "vulpes/dt.h"
#include "vulpes/ops.h"

struct vp_api_dt {
    vp_backend* backend;   /* the CPU backend */
    vp_dt_net net;         /* the network, its parameters in net.params */
    float target;          /* the checkpoint's target return */
    int n;                 /* checkpoint tensors */
    const char** names;    /* [n] their names */
    vp_tensor* views;      /* [n] their views of net.params */
    vp_dt_acts* acts;      /* forward activations for up to acts_b sequences (NULL: none yet) */
    int64_t acts_b;
    int32_t* bar;          /* [acts_b K] the decision row of each step in the caller's windows */
};

void vp_api_dt_close(vp_api_dt* m) {
    if (!m) return;
    vp_dt_acts_free(m->acts);
    free(m->bar);
    free(m->names);
    free(m->views);
    if (m->backend) vp_dt_net_free(&m->net);
    vp_backend_free(m->backend);
    free(m);
}

int vp_api_dt_open(const char* checkpoint, vp_api_dt** out) {
    VP_REQUIRE(checkpoint != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_api_dt_open: checkpoint or out is NULL");
    *out = NULL;
    vp_config cfg;
    vp_model_cfg mc;
    VP_TRY(vp_api_checkpoint_config(checkpoint, &cfg, &mc));
    VP_REQUIRE(strcmp(cfg.train.algo, "dt") == 0, VP_ERR_UNSUPPORTED,
               "checkpoint %s was trained by train.algo '%s', not dt (vp_api_model_open opens it)", checkpoint,
               cfg.train.algo);
    vp_dt_cfg dc;
    VP_TRY(vp_dt_cfg_make(&cfg, &dc));
    vp_api_dt* m = (vp_api_dt*)calloc(1, sizeof *m);
    VP_REQUIRE(m != NULL, VP_ERR_OOM, "opening checkpoint %s: out of memory", checkpoint);
    vp_status s = vp_backend_cpu_init(&m->backend);
    if (s == VP_OK) s = vp_dt_net_init(&m->net, m->backend, &mc, &dc.dims, 0);
    if (s == VP_OK) m->net.enc.precision = VP_PREC_FP32;
    if (s == VP_OK) s = vp_dt_read_params(m->backend, &m->net, checkpoint, &m->net.params, &m->target);
    if (s == VP_OK) {
        m->n = vp_dt_net_tensors(&m->net, NULL, NULL, NULL, 0);
        m->names = (const char**)calloc((size_t)m->n, sizeof *m->names);
        m->views = (vp_tensor*)calloc((size_t)m->n, sizeof *m->views);
        if (!m->names || !m->views) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "opening checkpoint %s: out of memory", checkpoint);
    }
    if (s == VP_OK) vp_dt_net_tensors(&m->net, &m->net.params, m->names, m->views, m->n);
    if (s != VP_OK) {
        vp_api_dt_close(m);
        return vp_error_context(s, "opening checkpoint %s", checkpoint);
    }
    *out = m;
    return VP_OK;
}

int vp_api_dt_cfg(const vp_api_dt* m, const char* name, double* out) {
    VP_REQUIRE(m != NULL && name != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_api_dt_cfg: NULL argument");
    const vp_model_cfg* c = &m->net.enc.cfg;
    const vp_dt_dims* d = &m->net.dims;
    const struct {
        const char* name;
        double value;
    } v[] = {
        {"context", d->K}, {"embed", d->D}, {"heads", d->NH}, {"layers", d->layers}, {"timesteps", d->TM},
        {"target_return", m->target}, {"n_features", c->n_features}, {"n_portfolio", c->n_portfolio},
        {"window", c->window}, {"hidden", c->hidden}, {"encoder", c->encoder}, {"mamba_state", c->mamba_state},
        {"mamba_head_dim", c->mamba_head_dim}, {"mamba_conv", c->mamba_conv}, {"head_hidden", c->head_hidden},
        {"n_atoms", c->n_atoms}, {"v_min", c->v_min}, {"v_max", c->v_max}, {"n_branches", c->n_branches},
        {"iqn_cos", c->iqn_cos}, {"ln_eps", c->ln_eps}, {"rms_eps", c->rms_eps}, {"n_heads", d->A},
        {"vsn", c->vsn}, {"vsn_hidden", c->vsn_hidden}, {"spectral_norm", c->spectral_norm}, {"kan", c->kan},
        {"kan_grid", c->kan_grid}, {"kan_order", c->kan_order}, {"kan_range", c->kan_range},
        {"stoch_depth", c->stoch_depth}, {"q_denoise", c->q_denoise}, {"cross_branch", c->cross_branch},
        {"risk_budget", c->risk_budget}, {"adaptive_atoms", c->adaptive_atoms}, {"ppo", 0}, {"iql", 0},
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

int vp_api_dt_n_params(const vp_api_dt* m) { return m ? m->n : 0; }

const char* vp_api_dt_param_name(const vp_api_dt* m, int i) { return m && i >= 0 && i < m->n ? m->names[i] : NULL; }

/* The view of tensor `name`, or an error naming it. */
static vp_status find(const vp_api_dt* m, const char* name, const vp_tensor** out) {
    VP_REQUIRE(m != NULL && name != NULL, VP_ERR_INVALID_ARG, "network or parameter name is NULL");
    for (int i = 0; i < m->n; ++i)
        if (strcmp(m->names[i], name) == 0) {
            *out = &m->views[i];
            return VP_OK;
        }
    VP_FAIL(VP_ERR_INVALID_ARG, "the network has no parameter '%.80s'", name);
}

int vp_api_dt_param_shape(const vp_api_dt* m, const char* name, int64_t* shape, int* ndim) {
    VP_REQUIRE(shape != NULL && ndim != NULL, VP_ERR_INVALID_ARG, "vp_api_dt_param_shape: shape or ndim is NULL");
    const vp_tensor* t = NULL;
    VP_TRY(find(m, name, &t));
    *ndim = t->ndim;
    shape[0] = t->shape[0];
    shape[1] = t->ndim > 1 ? t->shape[1] : 1;
    return VP_OK;
}

int vp_api_dt_param(const vp_api_dt* m, const char* name, float* dst, int64_t cap) {
    VP_REQUIRE(dst != NULL, VP_ERR_INVALID_ARG, "vp_api_dt_param: dst is NULL");
    const vp_tensor* t = NULL;
    VP_TRY(find(m, name, &t));
    const int64_t n = vp_tensor_numel(t);
    VP_REQUIRE(cap >= n, VP_ERR_SHAPE, "parameter %s has %lld elements, the buffer holds %lld", name, (long long)n,
               (long long)cap);
    memcpy(dst, t->data, sizeof(float) * (size_t)n);
    return VP_OK;
}

int vp_api_dt_forward(vp_api_dt* m, const float* window, const float* portfolio, const int32_t* actions,
                      const float* rtg, const int32_t* ts, const float* valid, int64_t batch, float* logits) {
    VP_REQUIRE(m != NULL && window && portfolio && actions && rtg && ts && valid && logits && batch >= 1 &&
                   batch <= INT32_MAX / (3 * VP_DT_MAX_CONTEXT * 64),
               VP_ERR_INVALID_ARG, "vp_api_dt_forward: NULL argument or batch %lld", (long long)batch);
    const vp_dt_dims* d = &m->net.dims;
    const vp_model_cfg* c = &m->net.enc.cfg;
    const int64_t K = d->K, W = c->window, BK = batch * K;
    // the choices inside their branches
    const vp_action_layout lay = vp_action_layout_env();
    for (int64_t r = 0; r < BK; ++r)
        for (int br = 0; br < 4; ++br)
            VP_REQUIRE(actions[r * 4 + br] >= 0 && actions[r * 4 + br] < lay.size[br], VP_ERR_INVALID_ARG,
                       "vp_api_dt_forward: action %d of branch %d at step %lld is outside 0 .. %d",
                       (int)actions[r * 4 + br], br, (long long)r, lay.size[br] - 1);
    if (!m->acts || batch > m->acts_b) {
        vp_dt_acts_free(m->acts);
        m->acts = NULL;
        free(m->bar);
        m->bar = (int32_t*)malloc(sizeof(int32_t) * (size_t)BK);
        VP_REQUIRE(m->bar != NULL, VP_ERR_OOM, "forward of %lld sequences: out of memory", (long long)batch);
        VP_TRY(vp_dt_acts_init(&m->acts, &m->net, batch, 0, BK, 1));
        m->acts_b = batch;
    }
    // each step's window is rows r W .. r W + W - 1 of the caller's array
    for (int64_t r = 0; r < BK; ++r) m->bar[r] = (int32_t)(r * W + W - 1);
    vp_tensor feats = vp_tensor_2d((void*)window, VP_F32, VP_MEM_HOST, BK * W, c->n_features);
    vp_tensor bars = vp_tensor_1d(m->bar, VP_I32, VP_MEM_HOST, BK);
    vp_dt_batch x;
    x.bar = bars;
    x.port = vp_tensor_2d((void*)portfolio, VP_F32, VP_MEM_HOST, BK, c->n_portfolio);
    x.act = vp_tensor_2d((void*)actions, VP_I32, VP_MEM_HOST, BK, 4);
    x.rtg = vp_tensor_1d((void*)rtg, VP_F32, VP_MEM_HOST, BK);
    x.ts = vp_tensor_1d((void*)ts, VP_I32, VP_MEM_HOST, BK);
    x.valid = vp_tensor_1d((void*)valid, VP_F32, VP_MEM_HOST, BK);
    VP_TRY(vp_dt_encode(&m->net, &m->net.params, m->acts, &feats, &bars, BK));
    VP_TRY(vp_dt_forward(&m->net, &m->net.params, m->acts, NULL, &x, batch));
    const vp_tensor lg = vp_dt_logits(m->acts);
    memcpy(logits, lg.data, sizeof(float) * (size_t)(batch * d->L * d->A));
    return VP_OK;
}
