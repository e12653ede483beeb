/* summary.json's description of a backtest beside its metrics: the status ("ok" or
 * "ruined") with the ruin of the strategy and of buy-and-hold, what ran over which bars, the
 * orders the leverage limit cut (the strategy's and buy-and-hold's), the fragile decisions,
 * the decision for the bar after the span, the timing, and the per-window table in the
 * segment mode. A ruined series' metrics carry the status "ruined"
 * instead of their data status, so they never read as a normal result. */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>

#include "eval/backtest_impl.h"

/* Adds {first_bar, last_bar, first_time, last_time, n_bars} of bars [b0, b1] to obj under key. */
static void add_span(cJSON* obj, const char* key, const vp_rollout_result* r, int64_t b0, int64_t b1) {
    char t[32];
    cJSON* s = cJSON_AddObjectToObject(obj, key);
    cJSON_AddNumberToObject(s, "first_bar", (double)b0);
    cJSON_AddNumberToObject(s, "last_bar", (double)b1);
    cJSON_AddStringToObject(s, "first_time", vp_bt_bar_time(r, b0, t));
    cJSON_AddStringToObject(s, "last_time", vp_bt_bar_time(r, b1, t));
    cJSON_AddNumberToObject(s, "n_bars", (double)(b1 - b0 + 1));
}

/* Adds a ruin under key: {window, bar, time, equity_at_ruin, equity_after_close, below_zero,
 * close_bar, close_time, ruin_level, loss_past_floor}, or null when there was none. */
static vp_status add_ruin(cJSON* obj, const char* key, const vp_rollout_result* r, const vp_rollout_ruin* ru) {
    if (!ru->ruined) {
        VP_REQUIRE(cJSON_AddNullToObject(obj, key) != NULL, VP_ERR_OOM, "summary.json: out of memory");
        return VP_OK;
    }
    char t[32];
    cJSON* o = cJSON_AddObjectToObject(obj, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(o, "window", (double)ru->window);
    cJSON_AddNumberToObject(o, "bar", (double)ru->bar);
    cJSON_AddStringToObject(o, "time", vp_bt_bar_time(r, ru->bar, t));
    VP_TRY(vp_metric_json_add(o, "equity_at_ruin", ru->equity_at_ruin));
    VP_TRY(vp_metric_json_add(o, "equity_after_close", ru->equity_after_close));
    cJSON_AddBoolToObject(o, "below_zero", ru->below_zero);
    cJSON_AddNumberToObject(o, "close_bar", (double)ru->close_bar);
    cJSON_AddStringToObject(o, "close_time", vp_bt_bar_time(r, ru->close_bar, t));
    VP_TRY(vp_metric_json_add(o, "ruin_level", ru->level));
    return vp_metric_json_add(o, "loss_past_floor", ru->loss_past_floor);
}


/* "fragile_decisions": {count, threshold, n_decisions, bars (the first ones), times}. */
static vp_status add_fragile(cJSON* root, const vp_rollout_result* r) {
    cJSON* o = cJSON_AddObjectToObject(root, "fragile_decisions");
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(o, "count", (double)r->n_fragile);
    cJSON_AddNumberToObject(o, "threshold", VP_ACTION_FRAGILE_MARGIN);
    cJSON_AddNumberToObject(o, "n_decisions", (double)r->n_decisions);
    cJSON* bars = cJSON_AddArrayToObject(o, "bars");
    cJSON* times = cJSON_AddArrayToObject(o, "times");
    VP_REQUIRE(bars != NULL && times != NULL, VP_ERR_OOM, "summary.json: out of memory");
    char t[32];
    for (int64_t i = 0, shown = 0; i < r->n_points && shown < VP_BT_FRAGILE_LIST; ++i) {
        if (!(r->margin[i] < VP_ACTION_FRAGILE_MARGIN)) continue;
        cJSON_AddItemToArray(bars, cJSON_CreateNumber((double)r->bar[i]));
        cJSON_AddItemToArray(times, cJSON_CreateString(vp_bt_bar_time(r, r->bar[i], t)));
        ++shown;
    }
    return VP_OK;
}

/* The orders the leverage limit cut, under key: {orders, contracts, max_leverage, bars (the
 * first ones, the bar whose open each order was for), times}. */
static vp_status add_cuts(cJSON* root, const char* key, const vp_rollout_result* r, const vp_rollout_cuts* c) {
    cJSON* o = cJSON_AddObjectToObject(root, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(o, "orders", (double)c->orders);
    cJSON_AddNumberToObject(o, "contracts", (double)c->contracts);
    VP_TRY(vp_metric_json_add(o, "max_leverage", c->max_leverage));
    cJSON* bars = cJSON_AddArrayToObject(o, "bars");
    cJSON* times = cJSON_AddArrayToObject(o, "times");
    VP_REQUIRE(bars != NULL && times != NULL, VP_ERR_OOM, "summary.json: out of memory");
    char t[32];
    for (int i = 0; i < c->n_bars; ++i) {
        cJSON_AddItemToArray(bars, cJSON_CreateNumber((double)c->bars[i]));
        cJSON_AddItemToArray(times, cJSON_CreateString(vp_bt_bar_time(r, c->bars[i], t)));
    }
    return VP_OK;
}

/* A window's leverage cuts under key: {orders, contracts}. */
static vp_status add_window_cuts(cJSON* obj, const char* key, int64_t orders, int64_t contracts) {
    cJSON* o = cJSON_AddObjectToObject(obj, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(o, "orders", (double)orders);
    cJSON_AddNumberToObject(o, "contracts", (double)contracts);
    return VP_OK;
}

/* "next_decision": the choices at the span's last close for the bar after it (not traded):
 * {bar, time, direction, size, take_profit, stop_loss, q_margin}, or null when there is none. */
static vp_status add_next(cJSON* root, const vp_rollout_result* r) {
    const vp_rollout_window* x = &r->windows[r->n_windows - 1];
    const int64_t o = x->offset + x->n_points - 1;
    const int32_t* a = r->action + 4 * o;
    if (x->ruined || a[0] < 0) {
        VP_REQUIRE(cJSON_AddNullToObject(root, "next_decision") != NULL, VP_ERR_OOM, "summary.json: out of memory");
        return VP_OK;
    }
    char t[32];
    cJSON* n = cJSON_AddObjectToObject(root, "next_decision");
    VP_REQUIRE(n != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(n, "bar", (double)r->bar[o]);
    cJSON_AddStringToObject(n, "time", vp_bt_bar_time(r, r->bar[o], t));
    static const char* keys[4] = {"direction", "size", "take_profit", "stop_loss"};
    for (int i = 0; i < 4; ++i) cJSON_AddNumberToObject(n, keys[i], (double)a[i]);
    return vp_metric_json_add(n, "q_margin", r->margin[o]);
}

/* The per-window table: each window's span, ruins and metrics (a ruined series marked). */
static vp_status add_windows(cJSON* root, const vp_rollout_result* r) {
    cJSON* ws = cJSON_AddArrayToObject(root, "windows");
    VP_REQUIRE(ws != NULL, VP_ERR_OOM, "summary.json: out of memory");
    for (int64_t w = 0; w < r->n_windows; ++w) {
        const vp_rollout_window* x = &r->windows[w];
        cJSON* o = cJSON_CreateObject();
        VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
        cJSON_AddItemToArray(ws, o);
        cJSON_AddNumberToObject(o, "window", (double)w);
        add_span(o, "span", r, x->begin, x->last);
        cJSON_AddBoolToObject(o, "ruined", x->ruined);
        VP_TRY(add_ruin(o, "ruin", r, &x->ruin));
        VP_TRY(add_ruin(o, "buy_and_hold_ruin", r, &x->buy_hold_ruin));
        VP_TRY(add_window_cuts(o, "leverage_cuts", x->cut_orders, x->cut_contracts));
        VP_TRY(add_window_cuts(o, "buy_and_hold_leverage_cuts", x->buy_hold_cut_orders, x->buy_hold_cut_contracts));
        VP_TRY(vp_perf_to_json(&x->perf, cJSON_AddObjectToObject(o, "strategy")));
        VP_TRY(vp_perf_to_json(&x->buy_hold, cJSON_AddObjectToObject(o, "buy_and_hold")));
        if (x->ruined) VP_TRY(vp_metrics_json_mark_ruined(o, "strategy"));
        if (x->buy_hold_ruin.ruined) VP_TRY(vp_metrics_json_mark_ruined(o, "buy_and_hold"));
    }
    return VP_OK;
}

vp_status vp_backtest_summary_add(const vp_rollout_result* r, const vp_backtest_info* info, cJSON* root) {
    VP_REQUIRE(r != NULL && info != NULL && root != NULL && r->n_windows >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_summary_add: NULL argument or empty result");
    // the object's first key: "ruined" (the metrics beside it are not a normal result), else
    // "warnings" when a data check warned (the result may not mean what it seems), else "ok"
    const vp_backtest_span_info* si0 = info->span_info;
    int warned = 0;
    for (int i = 0; si0 && i < si0->checks.n_notes; ++i) warned += strncmp(si0->checks.notes[i], "WARNING", 7) == 0;
    cJSON* status = cJSON_AddStringToObject(root, "status", r->ruin.ruined ? "ruined" : (warned ? "warnings" : "ok"));
    VP_REQUIRE(status != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_InsertItemInArray(root, 0, cJSON_DetachItemViaPointer(root, status));
    VP_TRY(add_ruin(root, "ruin", r, &r->ruin));
    VP_TRY(add_ruin(root, "buy_and_hold_ruin", r, &r->buy_hold_ruin));
    if (r->ruin.ruined) VP_TRY(vp_metrics_json_mark_ruined(root, "strategy"));
    if (r->buy_hold_ruin.ruined) VP_TRY(vp_metrics_json_mark_ruined(root, "buy_and_hold"));
    // what ran, over which bars
    cJSON* bt = cJSON_CreateObject();
    VP_REQUIRE(bt != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddItemToObject(root, "backtest", bt);
    cJSON_AddStringToObject(bt, "mode", r->n_windows == 1 ? "sequential" : "segments");
    cJSON_AddNumberToObject(bt, "n_windows", (double)r->n_windows);
    cJSON_AddStringToObject(bt, "path", r->path ? r->path : "");
    if (info->checkpoint) cJSON_AddStringToObject(bt, "checkpoint", info->checkpoint);
    if (info->data) cJSON_AddStringToObject(bt, "data", info->data);
    add_span(bt, "span", r, r->span.begin, r->span.end - 1);
    cJSON_AddNumberToObject(bt, "n_decisions", (double)(r->span.end - r->span.begin - 1));
    cJSON_AddNumberToObject(bt, "n_trades", (double)r->n_trades);
    VP_TRY(vp_metric_json_add(bt, "ruin_level_ccy", r->ruin_level));
    cJSON_AddNumberToObject(bt, "n_ruined_windows", (double)r->n_ruined);
    // where the span came from and how many of its bars the training run saw
    const vp_backtest_span_info* si = info->span_info;
    if (si) {
        cJSON_AddStringToObject(bt, "span_source", si->source);
        cJSON* ov = cJSON_AddObjectToObject(root, "overlap");
        cJSON_AddBoolToObject(ov, "known", si->overlap_known);
        cJSON_AddNumberToObject(ov, "n_bars", (double)si->n_bars);
        if (si->overlap_known) {
            cJSON_AddNumberToObject(ov, "train_bars", (double)si->train_bars);
            cJSON_AddNumberToObject(ov, "val_bars", (double)si->val_bars);
        } else {
            cJSON_AddStringToObject(ov, "why_unknown", si->unknown_why);
        }
    }
    // the data checks' warnings and notices, after any the summary already holds
    if (si && si->checks.n_notes > 0) {
        cJSON* w = cJSON_GetObjectItemCaseSensitive(root, "warnings");
        if (!cJSON_IsArray(w)) w = cJSON_AddArrayToObject(root, "warnings");
        for (int i = 0; w && i < si->checks.n_notes; ++i)
            cJSON_AddItemToArray(w, cJSON_CreateString(si->checks.notes[i]));
        VP_REQUIRE(w != NULL, VP_ERR_OOM, "summary.json: out of memory for the warnings");
    }
    VP_TRY(add_cuts(root, "leverage_cuts", r, &r->cuts));
    VP_TRY(add_cuts(root, "buy_and_hold_leverage_cuts", r, &r->buy_hold_cuts));
    VP_TRY(add_fragile(root, r));
    VP_TRY(add_next(root, r));
    // wall-clock figures (the only values that differ between identical runs)
    cJSON* tm = cJSON_AddObjectToObject(root, "timing");
    cJSON_AddNumberToObject(tm, "encode_s", r->encode_s);
    cJSON_AddNumberToObject(tm, "sequential_s", r->sequential_s);
    // the windows, each with its own metrics and buy-and-hold
    if (r->n_windows > 1) VP_TRY(add_windows(root, r));
    return VP_OK;
}

vp_status vp_backtest_summary_json(const vp_rollout_result* r, const vp_backtest_info* info, cJSON** out) {
    VP_REQUIRE(r != NULL && info != NULL && out != NULL && r->n_windows >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_summary_json: NULL argument or empty result");
    cJSON* root = NULL;
    VP_TRY(vp_metrics_to_json(&r->summary, &root));
    vp_status s = vp_backtest_summary_add(r, info, root);
    if (s != VP_OK) {
        cJSON_Delete(root);
        return s;
    }
    *out = root;
    return VP_OK;
}
