/* Live decisions bar by bar (vulpes/live.h): a bar checked, its features, ATR and trunk row,
 * the account stepped through the previous decision over it by the rollout's own step
 * (rollout_step.h), then the decision at its close from the window's encoding and the
 * account's portfolio, as the exact backtest decides. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "live/live_handle.h"
#include "eval/backtest_decision.h"
#include "vulpes/data_record.h"

/* Checks one field: finite and, with `positive`, above 0 (else at least 0). */
static vp_status check_value(int64_t bar, const char* field, double v, int positive) {
    VP_REQUIRE(isfinite(v), VP_ERR_PARSE, "bar %lld: %s is %g, not a finite number", (long long)bar, field, v);
    if (positive) VP_REQUIRE(v > 0.0, VP_ERR_PARSE, "bar %lld: %s %.17g is not above 0", (long long)bar, field, v);
    else VP_REQUIRE(v >= 0.0, VP_ERR_PARSE, "bar %lld: %s %.17g is below 0", (long long)bar, field, v);
    return VP_OK;
}

/* The loader's rules for one bar (vp_bars_validate), naming the field that breaks one. */
static vp_status check_bar(const vp_live* h, const vp_live_bar* b) {
    const int64_t n = h->n;
    VP_TRY(check_value(n, "open", b->open, 1));
    VP_TRY(check_value(n, "high", b->high, 1));
    VP_TRY(check_value(n, "low", b->low, 1));
    VP_TRY(check_value(n, "close", b->close, 1));
    VP_TRY(check_value(n, "volume", b->volume, 0));
    if (b->has_spread) VP_TRY(check_value(n, "spread", b->spread, 0));
    VP_REQUIRE(b->low <= b->high, VP_ERR_PARSE, "bar %lld: high %.17g is below low %.17g", (long long)n, b->high,
               b->low);
    VP_REQUIRE(b->low <= b->open && b->open <= b->high, VP_ERR_PARSE, "bar %lld: open %.17g is outside [low %.17g, "
               "high %.17g]", (long long)n, b->open, b->low, b->high);
    VP_REQUIRE(b->low <= b->close && b->close <= b->high, VP_ERR_PARSE, "bar %lld: close %.17g is outside [low "
               "%.17g, high %.17g]", (long long)n, b->close, b->low, b->high);
    if (n > 0) {
        char t[32], p[32];
        VP_REQUIRE(b->time_ms > h->last_time, VP_ERR_PARSE, "bar %lld: time %s is not after the previous bar's %s",
                   (long long)n, vp_time_format_iso(b->time_ms, t, sizeof t),
                   vp_time_format_iso(h->last_time, p, sizeof p));
    }
    return VP_OK;
}

/* The data checks at the first decision, bar `bar`: a backtest's checks over the bars
 * seen so far: the training data's record against their interval and closes. */
static vp_status run_checks(vp_live* h, const vp_live_bar* bar) {
    const int64_t n = h->n + 1; /* the bars up to this one, in hist_time and hist_close */
    vp_bt_seen seen;
    memset(&seen, 0, sizeof seen);
    vp_bars v;
    memset(&v, 0, sizeof v);
    v.n = n;
    v.time_ms = h->hist_time;
    v.open = v.high = v.low = v.close = h->hist_close;
    VP_TRY(vp_data_record_identify("live bars", -1, 0, &seen.data));
    if (n >= 2) VP_TRY(vp_data_record_measure(&v, &seen.data));
    seen.span = (vp_span){0, n};
    seen.first_close = bar->close;
    VP_TRY(vp_bars_median_close(&v, seen.span, &seen.span_median_close));
    vp_backtest_checks c = h->checks;
    vp_status s = vp_bt_check_data(h->has_rec ? &h->rec : NULL, &seen, &h->cfg, h->force, &c);
    if (s != VP_OK) return vp_error_context(s, "bar %lld, the first decision", (long long)h->n);
    h->checks = c;
    return VP_OK;
}

/* Wilder's ATR with the new bar (vp_atr's recursion, one step). */
static double atr_step(vp_live* h, const vp_live_bar* b) {
    double tr = b->high - b->low;
    if (h->n > 0) {
        const double pc = h->bars[0].close; /* the previous bar's (bars shifted already) */
        tr = fmax(tr, fmax(fabs(b->high - pc), fabs(b->low - pc)));
    }
    const int period = VP_LIVE_ATR_PERIOD;
    if (h->n < period) {
        h->atr_sum += tr;
        h->atr = h->atr_sum / (double)(h->n + 1);
    } else {
        h->atr = (h->atr * (period - 1) + tr) / period;
    }
    return h->atr;
}

/* The bar's features, then its encoder rows into the ring. */
static vp_status encode_bar(vp_live* h, const vp_live_bar* b) {
    const vp_feat_bar fb = {b->time_ms, b->open, b->high, b->low, b->close, b->volume};
    vp_feat_stream_push(h->fs, &fb, h->frow);
    return vp_model_inc_push(&h->inc, h->acts, &h->ring, h->frow);
}

/* The decision at the close of bar t (bars[1]): portfolio, encoding, heads, greedy choice. */
static vp_status decide(vp_live* h, int64_t t, const vp_live_bar* b, vp_decision* d) {
    vp_live_account* a = &h->acc;
    // the account's portfolio at bars[1], its time left as for an account that goes on (1)
    vp_env_view v = vp_env_view_of(&a->st, 0);
    v.window_end = v.t + h->episode_bars;
    float pf[VP_ENV_PORTFOLIO];
    vp_env_portfolio(&h->dims.env, h->bars, &v, pf);
    VP_TRY(vp_upload(h->b, &h->pf, pf, sizeof pf));
    VP_TRY(vp_model_inc_encode(&h->inc, h->acts, &h->ring));
    VP_TRY(vp_model_inc_heads(&h->inc, h->acts, &h->pf));
    vp_tensor q = vp_model_q(h->acts);
    const vp_action_layout* l = &h->dims.layout;
    memset(d, 0, sizeof *d);
    d->n_heads = l->n_heads;
    VP_TRY(vp_download(h->b, d->q, &q, sizeof(float) * (size_t)l->n_heads));
    d->q_margin = vp_action_greedy_margin(l, d->q, d->action);
    d->fragile = d->q_margin < VP_ACTION_FRAGILE_MARGIN;
    d->bar = t;
    d->time_ms = b->time_ms;
    d->close = b->close;
    d->atr = h->bars[1].atr;
    d->position = a->position;
    d->equity = a->equity;
    d->closing_out = a->ruin >= 0;
    vp_tensor sc = vp_model_risk_scale(h->acts);
    if (sc.data) {
        d->has_scale = 1;
        VP_TRY(vp_download(h->b, &d->size_scale, &sc, sizeof(float)));
    }
    vp_decision_levels(d, &h->instrument);
    memcpy(h->action, d->action, sizeof h->action);
    h->pending = 1;
    return VP_OK;
}

vp_status vp_live_push(vp_live* h, const vp_live_bar* bar, vp_decision* out, int* decided) {
    VP_REQUIRE(h != NULL && bar != NULL && decided != NULL, VP_ERR_INVALID_ARG, "vp_live_push: NULL argument");
    *decided = 0;
    VP_REQUIRE(!h->closed, VP_ERR_STATE, "bar %lld: the account was closed out at bar %lld after a close at or below "
               "the ruin level; open the checkpoint again for a new account", (long long)h->n,
               (long long)h->closed_bar);
    VP_TRY(check_bar(h, bar));
    if (h->n <= h->warmup) {
        h->hist_time[h->n] = bar->time_ms;
        h->hist_close[h->n] = bar->close;
    }
    if (h->n == h->warmup) VP_TRY(run_checks(h, bar));
    // the bar as the step reads it, after the previous one
    h->bars[0] = h->bars[1];
    vp_env_bar* nb = &h->bars[1];
    memset(nb, 0, sizeof *nb);
    nb->open = bar->open, nb->high = bar->high, nb->low = bar->low, nb->close = bar->close;
    nb->spread = bar->has_spread ? bar->spread : vp_instrument_spread(&h->instrument);
    nb->atr = atr_step(h, bar);
    VP_TRY(encode_bar(h, bar));
    // the previous decision over this bar: the rollout's step from bars[0] to bars[1]
    vp_live_account* a = &h->acc;
    a->t = 0;
    if (h->pending) {
        vp_ro_step(&h->dims, h->bars, &a->st, &a->win, a->scratch, h->k, 0, h->action);
        h->k += 1;
        h->pending = 0;
    }
    a->t = 1;
    const int64_t t = h->n;
    h->last_time = bar->time_ms;
    h->n += 1;
    if (!a->alive) {
        h->closed = 1;
        h->closed_bar = t;
        return VP_OK;
    }
    if (t < h->warmup) return VP_OK;
    vp_decision d;
    VP_TRY(decide(h, t, bar, &d));
    if (out) *out = d;
    *decided = 1;
    return VP_OK;
}

vp_status vp_live_decision_json(const vp_live* h, const vp_decision* d, int pretty, char** text) {
    VP_REQUIRE(h != NULL && d != NULL && text != NULL, VP_ERR_INVALID_ARG, "vp_live_decision_json: NULL argument");
    *text = NULL;
    cJSON* obj = NULL;
    VP_TRY(vp_decision_json(d, &h->instrument, h->path, NULL, &h->checks, &obj));
    *text = pretty ? cJSON_Print(obj) : cJSON_PrintUnformatted(obj);
    cJSON_Delete(obj);
    VP_REQUIRE(*text != NULL, VP_ERR_OOM, "vp_live_decision_json: out of memory");
    return VP_OK;
}
