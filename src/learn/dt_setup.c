/* The Decision Transformer trainer's set-up: its settings from the config, the dataset (loaded,
 * checked against the run's data and its training span, split into episodes), the feature
 * matrix on the backend, the network, the batch, the optimiser state and the validation
 * backtest. */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dt_impl.h"
#include "vulpes/algo.h"
#include "vulpes/ops.h"

vp_status vp_dt_cfg_make(const vp_config* cfg, vp_dt_cfg* out) {
    VP_REQUIRE(cfg != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_dt_cfg_make: NULL argument");
    memset(out, 0, sizeof *out);
    const vp_config_dt* c = &cfg->dt;
    vp_dt_dims* d = &out->dims;
    d->K = (int)c->context, d->L = 3 * d->K, d->D = (int)c->embed, d->NH = (int)c->heads, d->layers = (int)c->layers;
    d->TM = (int)(cfg->env.episode_bars < 65536 ? cfg->env.episode_bars : 65536);
    VP_REQUIRE(d->D % d->NH == 0 && d->D / d->NH <= VP_ATTN_MAX_DIM, VP_ERR_INVALID_ARG,
               "dt.heads = %d does not divide dt.embed = %d into heads of at most %d", d->NH, d->D, VP_ATTN_MAX_DIM);
    VP_REQUIRE(c->batch <= INT32_MAX / (3 * c->context), VP_ERR_INVALID_ARG, "dt.batch x 3 dt.context = %lld x %lld tokens",
               (long long)c->batch, (long long)(3 * c->context));
    // the DQN learner's and PPO's switches: nothing here to apply them to
    const char* other = cfg->learn.adaptive_atoms ? "learn.adaptive_atoms"
                        : cfg->learn.popart       ? "learn.popart"
                        : cfg->learn.lr_schedule  ? "learn.lr_schedule"
                        : cfg->curiosity.enabled  ? "curiosity.enabled"
                        : cfg->her.enabled        ? "her.enabled"
                        : cfg->signals.enable     ? "signals.enable"
                                                  : NULL;
    VP_REQUIRE(other == NULL, VP_ERR_UNSUPPORTED,
               "train.algo = dt: %s is a switch of the DQN learner (docs/modules.md); the Decision Transformer does not "
               "apply it, so turn it off", other);
    out->batch = c->batch;
    // the target: "best" or a finite number
    if (strcmp(c->target_return, "best") == 0) {
        out->target_best = 1;
    } else {
        char* end = NULL;
        const double v = strtod(c->target_return, &end);
        VP_REQUIRE(end != c->target_return && *end == '\0' && isfinite(v) && fabs(v) < 3e38, VP_ERR_INVALID_ARG,
                   "dt.target_return = '%s' is neither 'best' nor a finite number", c->target_return);
        out->target_return = v;
    }
    out->adamw.lr = (float)cfg->learn.lr;
    out->adamw.beta1 = (float)cfg->learn.beta1;
    out->adamw.beta2 = (float)cfg->learn.beta2;
    out->adamw.eps = (float)cfg->learn.eps;
    out->adamw.weight_decay = (float)cfg->learn.weight_decay;
    out->clip_norm = cfg->learn.clip_norm > 0.0 ? (float)cfg->learn.clip_norm : FLT_MAX; /* 0: no clip */
    return VP_OK;
}

/* One f32 or i32 tensor of the trainer's arena. */
static vp_status take(vp_dt_trainer* t, const char* name, vp_dtype dt, int64_t n, vp_tensor* out) {
    const int64_t sh[1] = {n};
    return vp_arena_tensor(&t->arena, name, dt, 1, sh, out, NULL);
}

/* The batch and the optimiser's buffers in one arena. */
static vp_status buffers_init(vp_dt_trainer* t) {
    const vp_dt_dims* d = &t->net.dims;
    const int64_t W = t->net.n_weights, BK = t->dc.batch * d->K;
    const int64_t words = 3 * W + 8 + BK * (1 + d->P + 4 + 3) + BK + VP_DT_STAT_COUNT;
    VP_TRY(vp_arena_init(&t->arena, t->backend, vp_backend_native_mem(t->backend), (size_t)words * 4 + 24 * 256));
    VP_TRY(vp_dt_batch_init(&t->batch, &t->arena, d, t->dc.batch));
    VP_TRY(take(t, "dt.adam_m", VP_F32, W, &t->adam_m));
    VP_TRY(take(t, "dt.adam_v", VP_F32, W, &t->adam_v));
    VP_TRY(take(t, "dt.best_params", VP_F32, W, &t->best_params));
    VP_TRY(take(t, "dt.adam_step", VP_I32, 1, &t->adam_step));
    VP_TRY(take(t, "dt.grad_norm", VP_F32, 1, &t->grad_norm));
    VP_TRY(take(t, "dt.clip_coef", VP_F32, 1, &t->clip_coef));
    VP_TRY(take(t, "dt.terms", VP_F32, BK, &t->terms));
    VP_TRY(take(t, "dt.stats", VP_F32, VP_DT_STAT_COUNT, &t->stats));
    VP_TRY(vp_fill(t->backend, &t->adam_m, 0.0f));
    VP_TRY(vp_fill(t->backend, &t->adam_v, 0.0f));
    VP_TRY(vp_fill_i32(t->backend, &t->adam_step, 0));
    VP_TRY(vp_fill(t->backend, &t->stats, NAN));
    VP_TRY(vp_fill(t->backend, &t->grad_norm, NAN));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

/* The dataset against the run: its data record and span, the training span, the portfolio. */
static vp_status check_dataset(const vp_offline_data* od, const vp_train_data* d, const char* path) {
    VP_TRY(vp_offline_check_data(od, d, path));
    const vp_span tr = d->split.train;
    VP_REQUIRE(od->span.begin >= tr.begin && od->span.end <= tr.end, VP_ERR_INVALID_ARG,
               "dt.dataset %s was recorded on bars [%lld, %lld), not inside the run's training span [%lld, %lld): "
               "the validation and test spans must stay unseen", path, (long long)od->span.begin,
               (long long)od->span.end, (long long)tr.begin, (long long)tr.end);
    return VP_OK;
}

vp_status vp_dt_trainer_init_data(vp_dt_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                                  const vp_offline_data* od) {
    VP_REQUIRE(t != NULL && b != NULL && cfg != NULL && d != NULL && od != NULL, VP_ERR_INVALID_ARG,
               "vp_dt_trainer_init_data: NULL argument");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->backend = b;
    t->data = d;
    VP_TRY(vp_train_parts_make(cfg, d->n_features, &t->parts));
    VP_TRY(vp_dt_cfg_make(cfg, &t->dc));
    vp_status s = check_dataset(od, d, cfg->dt.dataset[0] ? cfg->dt.dataset : "(in memory)");
    if (s == VP_OK) s = vp_dt_data_init(&t->rows, b, od, t->parts.learner.model.n_portfolio);
    if (s == VP_OK) t->target = (float)(t->dc.target_best ? t->rows.best_return : t->dc.target_return);
    if (s == VP_OK) s = vp_algo_features_upload(b, d, &t->feat_buf, &t->features);
    if (s == VP_OK) s = vp_dt_net_init(&t->net, b, &t->parts.learner.model, &t->dc.dims, t->parts.learner.seed);
    if (s == VP_OK) t->net.enc.precision = t->parts.precision;
    if (s == VP_OK) s = buffers_init(t);
    if (s == VP_OK) s = vp_dt_acts_init(&t->acts, &t->net, t->dc.batch, 1, t->dc.batch * t->dc.dims.K, 0);
    if (s == VP_OK) s = vp_validator_init_run(&t->val, b, &t->features, d, &t->parts.instrument, cfg);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s != VP_OK) {
        vp_dt_trainer_free(t);
        return vp_error_context(s, "setting up Decision Transformer training");
    }
    return VP_OK;
}

vp_status vp_dt_trainer_init(vp_dt_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    VP_REQUIRE(t != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_dt_trainer_init: NULL argument");
    memset(t, 0, sizeof *t);
    VP_REQUIRE(cfg->dt.dataset[0] != '\0', VP_ERR_INVALID_ARG,
               "train.algo = dt needs dt.dataset: a dataset recorded on the training span (vulpes record)");
    vp_offline_data od;
    memset(&od, 0, sizeof od);
    vp_status s = vp_offline_load(cfg->dt.dataset, &od);
    if (s == VP_OK) s = vp_dt_trainer_init_data(t, b, cfg, d, &od);
    vp_offline_free(&od);
    return s;
}

void vp_dt_trainer_free(vp_dt_trainer* t) {
    if (!t) return;
    vp_graph_free(t->g_update);
    vp_validator_free(t->val);
    vp_dt_acts_free(t->acts);
    if (t->backend) vp_arena_free(&t->arena);
    vp_dt_net_free(&t->net);
    vp_dt_data_free(&t->rows);
    if (t->backend) vp_buffer_free(t->backend, &t->feat_buf);
    memset(t, 0, sizeof *t);
}
