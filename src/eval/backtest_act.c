/* `vulpes act`'s decision object (vp_act_json): the last window's choice for the bar after the
 * span, its scores per branch, and the take-profit and stop-loss prices from the last close by the
 * environment's own rules (env_rules.h: contracts of a size, a level from a price and ATR). */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "env/env_rules.h"
#include "vulpes/backtest.h"
#include "vulpes/action.h"

/* v with `decimals` decimals (the double nearest that decimal text), v itself when decimals < 0. */
static double at_decimals(double v, int decimals) {
    if (decimals < 0) return v;
    char buf[64];
    snprintf(buf, sizeof buf, "%.*f", decimals, v);
    return strtod(buf, NULL);
}

/* A score as the shortest decimal that reads back as the same float. */
static double score_value(float q) {
    char buf[32];
    snprintf(buf, sizeof buf, "%.9g", (double)q);
    return strtod(buf, NULL);
}

/* {atr_multiple, price}: the level k x ATR from the last close on side `side` (+1: above). */
static vp_status add_level(cJSON* root, const char* key, int32_t k, int32_t side, const vp_backtest_last_bar* last,
                           int decimals) {
    cJSON* o = cJSON_AddObjectToObject(root, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "vulpes act: out of memory");
    cJSON_AddNumberToObject(o, "atr_multiple", (double)k);
    const double lvl = side != 0 ? vp_env_level(last->close, side, k, last->atr) : 0.0;
    if (lvl > 0.0) cJSON_AddNumberToObject(o, "price", at_decimals(lvl, decimals));
    else cJSON_AddNullToObject(o, "price");
    return VP_OK;
}

/* "q": each branch's scores, in the order of its choices. */
static vp_status add_q(cJSON* root, const float* q /* [A] */) {
    static const char* keys[VP_ENV_BRANCHES] = {"direction", "size", "take_profit", "stop_loss"};
    const vp_action_layout l = vp_action_layout_env();
    cJSON* o = cJSON_AddObjectToObject(root, "q");
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "vulpes act: out of memory");
    for (int br = 0; br < l.n_branches; ++br) {
        cJSON* a = cJSON_AddArrayToObject(o, keys[br]);
        VP_REQUIRE(a != NULL, VP_ERR_OOM, "vulpes act: out of memory");
        for (int j = 0; j < l.size[br]; ++j) cJSON_AddItemToArray(a, cJSON_CreateNumber(score_value(q[l.offset[br] + j])));
    }
    return VP_OK;
}

/* The decision's fields into root. */
static vp_status fill(cJSON* root, const vp_rollout_result* r, int64_t w, int64_t o, const vp_backtest_last_bar* last,
                      const char* checkpoint, const char* data, const vp_backtest_checks* checks) {
    static const char* dirs[VP_ENV_DIR_COUNT] = {"short", "flat", "long"};
    const int32_t* a = r->action + VP_ENV_BRANCHES * o;
    const int32_t side = a[0] - 1;
    const int decimals = vp_tick_decimals(last->instrument.tick_size);
    char t[32], after[64];
    vp_time_format_iso(last->time_ms, t, sizeof t);
    snprintf(after, sizeof after, "the bar after %s", t);
    if (checkpoint) cJSON_AddStringToObject(root, "checkpoint", checkpoint);
    else cJSON_AddNullToObject(root, "checkpoint");
    if (data) cJSON_AddStringToObject(root, "data", data);
    else cJSON_AddNullToObject(root, "data");
    cJSON_AddNumberToObject(root, "bar", (double)last->bar);
    cJSON_AddStringToObject(root, "time", t);
    cJSON_AddStringToObject(root, "decision_for", after);
    cJSON_AddStringToObject(root, "direction", dirs[a[0]]);
    cJSON_AddNumberToObject(root, "size_fraction", 0.25 * (double)(a[1] + 1));
    cJSON_AddNumberToObject(root, "contracts", side != 0 ? (double)vp_env_contracts(a[1], last->instrument.max_position)
                                                         : 0.0);
    VP_TRY(add_level(root, "take_profit", a[2], side, last, decimals));
    VP_TRY(add_level(root, "stop_loss", a[3], -side, last, decimals));
    VP_TRY(add_q(root, r->next_q + w * r->n_heads));
    const double margin = r->margin[o];
    VP_TRY(vp_metric_json_add(root, "q_margin", margin));
    const int fragile = margin < VP_ACTION_FRAGILE_MARGIN;
    cJSON_AddBoolToObject(root, "fragile", fragile);
    cJSON_AddNumberToObject(root, "atr", last->atr);
    cJSON_AddNumberToObject(root, "last_close", last->close);
    cJSON* ws = cJSON_AddArrayToObject(root, "warnings");
    VP_REQUIRE(ws != NULL, VP_ERR_OOM, "vulpes act: out of memory");
    for (int i = 0; checks && i < checks->n_notes; ++i) cJSON_AddItemToArray(ws, cJSON_CreateString(checks->notes[i]));
    if (fragile) {
        char m[160];
        snprintf(m, sizeof m, "WARNING: the decision is fragile: its Q margin %.3g is below %g, so another machine's "
                 "rounding may flip it", margin, VP_ACTION_FRAGILE_MARGIN);
        cJSON_AddItemToArray(ws, cJSON_CreateString(m));
    }
    return VP_OK;
}

vp_status vp_act_json(const vp_rollout_result* r, const vp_backtest_last_bar* last, const char* checkpoint,
                      const char* data, const vp_backtest_checks* checks, cJSON** out) {
    VP_REQUIRE(r != NULL && last != NULL && out != NULL && r->n_windows >= 1, VP_ERR_INVALID_ARG,
               "vp_act_json: NULL argument or empty result");
    *out = NULL;
    const int64_t w = r->n_windows - 1;
    const vp_rollout_window* x = &r->windows[w];
    const int64_t o = x->offset + x->n_points - 1;
    if (x->ruined)
        VP_FAIL(VP_ERR_STATE, "no decision for the bar after bar %lld: the backtest leading to it ruined at bar %lld "
                "and stopped", (long long)last->bar, (long long)x->ruin.bar);
    VP_REQUIRE(r->bar[o] == last->bar && r->action[VP_ENV_BRANCHES * o] >= 0 && r->next_q != NULL &&
               r->n_heads == vp_action_layout_env().n_heads, VP_ERR_STATE,
               "no decision for the bar after bar %lld: the backtest made none there", (long long)last->bar);
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "vulpes act: out of memory");
    vp_status s = fill(root, r, w, o, last, checkpoint, data, checks);
    if (s != VP_OK) {
        cJSON_Delete(root);
        return s;
    }
    *out = root;
    return VP_OK;
}
