/* Validation: the rollout (vulpes/rollout.h) of the network's greedy policy over one span,
 * cut into windows of about the training episode's length that run side by side, scored
 * by the rollout's own metrics. The same path as the exact backtest: one window of the
 * validation span gives the same figures as `vulpes backtest` over it. Any algorithm's
 * policy (vulpes/policy.h) can be scored. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/rollout.h"
#include "vulpes/train.h"

struct vp_validator {
    vp_backend* backend;       /* where it runs */
    vp_rollout_data data;      /* bars, ATR, features and the span */
    vp_rollout_cfg cfg;        /* windows, instrument, episode length, annualisation and risk-free rate */
    int64_t window_bars;       /* decisions per window (the shortest) */
};

vp_status vp_validator_init(vp_validator** out, vp_backend* b, const vp_tensor* features, const vp_train_data* d,
                            vp_span span, const vp_instrument* inst, int64_t window_bars, double ruin_fraction) {
    VP_REQUIRE(out != NULL && b != NULL && features != NULL && d != NULL && inst != NULL,
               VP_ERR_INVALID_ARG, "vp_validator_init: NULL argument");
    *out = NULL;
    const int64_t len = vp_span_len(span);
    VP_REQUIRE(len >= 2 && span.begin >= 0 && span.end <= d->bars.n, VP_ERR_INVALID_ARG,
               "vp_validator_init: span [%lld, %lld) of %lld bars (needs at least 2 bars)", (long long)span.begin,
               (long long)span.end, (long long)d->bars.n);
    vp_validator* v = (vp_validator*)calloc(1, sizeof *v);
    VP_REQUIRE(v != NULL, VP_ERR_OOM, "vp_validator_init: out of host memory");
    v->backend = b;
    v->data.bars = &d->bars;
    v->data.atr = d->atr;
    v->data.features = features;
    v->data.span = span;
    // N windows of about window_bars decisions covering the span's len - 1 steps
    v->cfg = vp_rollout_cfg_default();
    v->cfg.instrument = *inst;
    v->cfg.ruin_fraction = ruin_fraction;
    v->cfg.next_decision = 0; /* only the metrics are read: no extra encoding per validation */
    v->cfg.n_windows = (window_bars <= 0 || window_bars > len - 1) ? 1 : (len - 1) / window_bars;
    v->cfg.episode_bars = (int32_t)(window_bars >= 1 && window_bars <= len - 1 ? window_bars : len - 1);
    vp_annual_given(d->periods_per_year, &v->cfg.annual);
    v->window_bars = (len - 1) / v->cfg.n_windows;
    *out = v;
    return VP_OK;
}

void vp_validator_free(vp_validator* v) { free(v); }

void vp_validator_set_risk_free(vp_validator* v, double risk_free_rate) {
    if (v) v->cfg.annual.risk_free_rate = risk_free_rate;
}

vp_status vp_validator_init_run(vp_validator** out, vp_backend* b, const vp_tensor* features, const vp_train_data* d,
                                const vp_instrument* inst, const vp_config* cfg) {
    VP_REQUIRE(cfg != NULL && d != NULL, VP_ERR_INVALID_ARG, "vp_validator_init_run: NULL argument");
    VP_TRY(vp_validator_init(out, b, features, d, d->split.val, inst, cfg->env.episode_bars, cfg->env.ruin_fraction));
    vp_validator_set_risk_free(*out, cfg->metrics.risk_free_rate);
    return VP_OK;
}

vp_status vp_validator_run(vp_validator* v, const vp_policy* pol, vp_eval_result* out) {
    VP_REQUIRE(v != NULL && pol != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_validator_run: NULL argument");
    memset(out, 0, sizeof *out);
    vp_rollout_result r;
    vp_status s = vp_rollout_run(v->backend, pol, &v->data, &v->cfg, &r);
    if (s == VP_OK) {
        out->windows = r.n_windows;
        out->window_bars = v->window_bars;
        for (int64_t w = 0; w < r.n_windows; ++w) out->ruined += r.windows[w].ruined != 0;
        out->strategy = r.summary.strategy;
        out->buy_hold = r.summary.buy_hold;
        out->flat = r.summary.flat;
        out->exposure = r.summary.trades.exposure;
        out->turnover = r.summary.trades.turnover;
    }
    vp_rollout_result_free(&r);
    if (s != VP_OK)
        return vp_error_context(s, "validation of bars [%lld, %lld)", (long long)v->data.span.begin,
                                (long long)v->data.span.end);
    return VP_OK;
}
