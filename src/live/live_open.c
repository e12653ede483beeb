/* Opening a checkpoint for live decisions: its config (with the allowed overrides) and the
 * record of its training data, the network on the CPU with the checkpoint's parameters, the
 * feature stream, the trunk ring and the account with the rollout's step constants. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/env_params.h"
#include "live/live_handle.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"
#include "vulpes/dataset.h"
#include "vulpes/dqn.h"
#include "vulpes/train.h"

vp_live_opts vp_live_opts_default(void) {
    vp_live_opts o;
    memset(&o, 0, sizeof o);
    return o;
}

void vp_live_account_reset(vp_live_account* a, double equity) {
    memset(a, 0, sizeof *a);
    a->window_end = INT32_MAX; /* a live account never reaches its end */
    a->cash = a->equity = a->peak = equity;
    a->steps = INT32_MAX;
    a->last = INT32_MAX;
    a->alive = 1;
    a->ruin = -1;
    vp_env_state* s = &a->st;
    s->t = &a->t, s->window_end = &a->window_end, s->position = &a->position, s->bars_held = &a->bars_held;
    s->episode = &a->episode, s->cash = &a->cash, s->equity = &a->equity, s->peak = &a->peak;
    s->entry = &a->entry, s->take_profit = &a->take_profit, s->stop_loss = &a->stop_loss, s->last_size = &a->last_size;
    vp_ro_windows* w = &a->win;
    w->steps = &a->steps, w->offset = &a->offset, w->last = &a->last, w->alive = &a->alive, w->ruin = &a->ruin;
    w->fill = &a->fill;
}

/* The training run's config and the record of its data, from the checkpoint's metadata, with
 * the overrides a backtest allows. */
static vp_status load_config(vp_live* h, const char* path, const vp_live_opts* o) {
    VP_TRY(vp_backtest_checkpoint_config(path, (char* const*)o->overrides, o->n_overrides, "live decisions",
                                         &h->cfg, &h->rec, &h->has_rec));
    VP_REQUIRE(strcmp(h->cfg.train.algo, "dqn") == 0, VP_ERR_UNSUPPORTED,
               "checkpoint %s was trained by train.algo '%s'; live decisions run the dqn network only", path,
               h->cfg.train.algo);
    return VP_OK;
}

/* Bars per year for the financing rates: given, else 365.25 days over the training data's bar interval. */
static vp_status bars_per_year(const vp_live* h, const vp_live_opts* o, double* out) {
    *out = o->bars_per_year;
    if (*out > 0.0) return VP_OK;
    VP_REQUIRE(o->bars_per_year == 0.0, VP_ERR_INVALID_ARG, "live: bars_per_year %g (> 0, or 0 for the training "
               "data's)", o->bars_per_year);
    if (h->has_rec && h->rec.interval_s > 0) *out = 365.25 * 86400.0 / h->rec.interval_s;
    const int financed = h->instrument.financing_long != 0.0 || h->instrument.financing_short != 0.0;
    VP_REQUIRE(*out > 0.0 || !financed, VP_ERR_INVALID_ARG, "live: the instrument has a financing rate but the "
               "checkpoint records no bar interval: give bars_per_year");
    if (!(*out > 0.0)) *out = 1.0; /* not read without a financing rate */
    return VP_OK;
}

/* The network of the config on the CPU with the checkpoint's parameters, and what one sample's
 * decision computes with. */
static vp_status load_network(vp_live* h, const vp_train_parts* parts) {
    // a goal-conditioned network (her.enabled) takes a goal the live session does not feed
    VP_REQUIRE(parts->learner.model.n_portfolio == VP_ENV_PORTFOLIO, VP_ERR_UNSUPPORTED,
               "checkpoint %s: its network is goal-conditioned (her.enabled); live decisions feed no goal, so use "
               "vulpes act or vulpes backtest (her.eval_goal)", h->path);
    VP_TRY(vp_backend_cpu_init(&h->b));
    VP_TRY(vp_model_init(&h->model, h->b, &parts->learner.model, parts->learner.seed));
    h->model_on = 1;
    h->model.precision = parts->precision;
    VP_TRY(vp_dqn_read_params(h->b, &h->model, h->path, &h->model.params));
    VP_REQUIRE(h->model.precision != VP_PREC_BF16, VP_ERR_UNSUPPORTED, "checkpoint %s: live decisions compute in "
               "FP32 on the CPU; its run.precision is bf16", h->path);
    VP_TRY(vp_model_inc_init(&h->inc, &h->model, &h->model.params));
    VP_TRY(vp_model_acts_init(&h->acts, &h->model, 1, 0, 0));
    const vp_mem mem = vp_backend_native_mem(h->b);
    VP_TRY(vp_buffer_alloc(h->b, mem, sizeof(float) * VP_ENV_PORTFOLIO, &h->pf_buf));
    h->pf = vp_tensor_2d(h->pf_buf.dev, VP_F32, mem, 1, VP_ENV_PORTFOLIO);
    return VP_OK;
}

/* The features, the ring, the warm-up history and the account with the rollout's constants. */
static vp_status make_state(vp_live* h, const vp_train_parts* parts, const vp_live_opts* o) {
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = (int)h->cfg.features.window;
    VP_TRY(vp_feat_stream_init(&h->fs, &fc));
    const int F = vp_feat_stream_width(h->fs);
    VP_REQUIRE(F == h->model.cfg.n_features, VP_ERR_STATE, "live: %d features, the network reads %d", F,
               h->model.cfg.n_features);
    VP_TRY(vp_model_inc_ring_init(&h->ring, &h->inc));
    h->warmup = vp_train_data_warmup(&h->cfg);
    h->frow = (float*)malloc(sizeof(float) * (size_t)F);
    h->hist_time = (int64_t*)malloc(sizeof(int64_t) * (size_t)(h->warmup + 1));
    h->hist_close = (double*)malloc(sizeof(double) * (size_t)(h->warmup + 1));
    VP_REQUIRE(h->frow && h->hist_time && h->hist_close, VP_ERR_OOM, "live: out of memory");
    // the step's constants as the rollout makes them: no reward shaping, the environment's ruin off
    h->instrument = parts->instrument;
    h->episode_bars = parts->env.episode_bars;
    double bpy = 0.0;
    VP_TRY(bars_per_year(h, o, &bpy));
    VP_TRY(vp_env_instrument_check("live", &h->instrument, bpy));
    const vp_env_config ec = {h->episode_bars, 0.0, 1.0, 0.0, 0.0, 0};
    vp_ro_dims* d = &h->dims;
    memset(d, 0, sizeof *d);
    d->env = vp_env_params_make(&h->instrument, &ec, bpy);
    d->env.ruin_level = -INFINITY;
    d->env.n_starts = 1;
    // the risk-budget head's scale of the one account's size, refilled by each decision
    d->env.size_scale = h->model.cfg.risk_budget > 0.0f ? (const float*)h->acts->rb.data : NULL;
    d->ruin_level = parts->env.ruin_fraction * h->instrument.initial_equity;
    d->n_windows = 1;
    d->hidden = h->model.cfg.hidden;
    d->layout = vp_action_layout_env();
    vp_live_account_reset(&h->acc, h->instrument.initial_equity);
    return VP_OK;
}

vp_status vp_live_open(vp_live** out, const char* path, const vp_live_opts* opts) {
    VP_REQUIRE(out != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_live_open: out or path is NULL");
    *out = NULL;
    const vp_live_opts o = opts ? *opts : vp_live_opts_default();
    vp_live* h = (vp_live*)calloc(1, sizeof *h);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "vp_live_open: out of memory");
    h->path = (char*)malloc(strlen(path) + 1);
    vp_status s = h->path ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_live_open: out of memory");
    if (s == VP_OK) memcpy(h->path, path, strlen(path) + 1);
    h->force = o.force;
    vp_train_parts parts;
    if (s == VP_OK) s = load_config(h, path, &o);
    if (s == VP_OK) s = vp_train_parts_make(&h->cfg, VP_FEATURES_DEFAULT, &parts);
    if (s == VP_OK) s = load_network(h, &parts);
    if (s == VP_OK) s = make_state(h, &parts, &o);
    if (s == VP_OK) {
        h->checks.recorded = h->has_rec;
        snprintf(h->checks.data, sizeof h->checks.data, "live bars");
    }
    if (s != VP_OK) {
        vp_live_close(h);
        return vp_error_context(s, "opening %s for live decisions", path);
    }
    *out = h;
    return VP_OK;
}

void vp_live_close(vp_live* h) {
    if (!h) return;
    vp_feat_stream_free(h->fs);
    vp_model_acts_free(h->acts);
    vp_model_inc_free(&h->inc);
    if (h->pf_buf.dev) vp_buffer_free(h->b, &h->pf_buf);
    if (h->model_on) vp_model_free(&h->model);
    vp_backend_free(h->b);
    free(h->frow);
    vp_model_inc_ring_free(&h->ring);
    free(h->hist_time);
    free(h->hist_close);
    free(h->path);
    free(h);
}

int64_t vp_live_warmup(const vp_live* h) { return h ? h->warmup : 0; }

int64_t vp_live_bars(const vp_live* h) { return h ? h->n : 0; }

int vp_live_n_notes(const vp_live* h) { return h ? h->checks.n_notes : 0; }

const char* vp_live_note(const vp_live* h, int i) {
    return h && i >= 0 && i < h->checks.n_notes ? h->checks.notes[i] : NULL;
}
