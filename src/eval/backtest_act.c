/* The decision record (vulpes/decision.h) and `vulpes act`'s object: a choice's contracts and
 * take-profit and stop-loss levels by the environment's own rules (env_rules.h), the JSON
 * object `vulpes act` and the live API print (backtest_decision.h), and vp_act_json, the
 * record of the last window's choice for the bar after the span. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env_rules.h"
#include "eval/backtest_decision.h"
#include "vulpes/action.h"
#include "vulpes/backtest.h"

void vp_decision_levels(vp_decision* d, const vp_instrument* in) {
    const int32_t side = d->action[0] - 1;
    const int32_t full = d->has_scale ? vp_env_scaled_contracts(d->action[1], in->max_position, d->size_scale)
                                      : vp_env_contracts(d->action[1], in->max_position);
    d->contracts = side != 0 ? full : 0;
    d->take_profit = side != 0 ? vp_env_level(d->close, side, d->action[2], d->atr) : 0.0;
    d->stop_loss = side != 0 ? vp_env_level(d->close, -side, d->action[3], d->atr) : 0.0;
}

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

/* {atr_multiple, price}: the level of ATR multiple k (price null when none or not above 0). */
static vp_status add_level(cJSON* root, const char* key, int32_t k, double level, int decimals) {
    cJSON* o = cJSON_AddObjectToObject(root, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "decision: out of memory");
    cJSON_AddNumberToObject(o, "atr_multiple", (double)k);
    if (level > 0.0) cJSON_AddNumberToObject(o, "price", at_decimals(level, decimals));
    else cJSON_AddNullToObject(o, "price");
    return VP_OK;
}

/* "q": each branch's scores, in the order of its choices. */
static vp_status add_q(cJSON* root, const vp_decision* d) {
    static const char* keys[VP_ENV_BRANCHES] = {"direction", "size", "take_profit", "stop_loss"};
    const vp_action_layout l = vp_action_layout_env();
    VP_REQUIRE(d->n_heads == l.n_heads, VP_ERR_STATE, "decision: %d scores, the environment's layout has %d",
               d->n_heads, l.n_heads);
    cJSON* o = cJSON_AddObjectToObject(root, "q");
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "decision: out of memory");
    for (int br = 0; br < l.n_branches; ++br) {
        cJSON* a = cJSON_AddArrayToObject(o, keys[br]);
        VP_REQUIRE(a != NULL, VP_ERR_OOM, "decision: out of memory");
        for (int j = 0; j < l.size[br]; ++j) cJSON_AddItemToArray(a, cJSON_CreateNumber(score_value(d->q[l.offset[br] + j])));
    }
    return VP_OK;
}

/* The warnings: the checks' notes, a fragile decision's, a closing-out one's. */
static vp_status add_warnings(cJSON* root, const vp_decision* d, const vp_backtest_checks* checks) {
    cJSON* ws = cJSON_AddArrayToObject(root, "warnings");
    VP_REQUIRE(ws != NULL, VP_ERR_OOM, "decision: out of memory");
    for (int i = 0; checks && i < checks->n_notes; ++i) cJSON_AddItemToArray(ws, cJSON_CreateString(checks->notes[i]));
    char m[200];
    if (d->fragile) {
        snprintf(m, sizeof m, "WARNING: the decision is fragile: its Q margin %.3g is below %g, so another machine's "
                 "rounding may flip it", d->q_margin, VP_ACTION_FRAGILE_MARGIN);
        cJSON_AddItemToArray(ws, cJSON_CreateString(m));
    }
    if (d->closing_out) {
        snprintf(m, sizeof m, "WARNING: the account's equity %.6g is at or below the ruin level: the next open closes "
                 "it out flat whatever the choice, and no decision follows", d->equity);
        cJSON_AddItemToArray(ws, cJSON_CreateString(m));
    }
    return VP_OK;
}

/* The decision's fields into root. */
static vp_status fill(cJSON* root, const vp_decision* d, const vp_instrument* in, const char* checkpoint,
                      const char* data, const vp_backtest_checks* checks) {
    static const char* dirs[VP_ENV_DIR_COUNT] = {"short", "flat", "long"};
    VP_REQUIRE(d->action[0] >= 0 && d->action[0] < VP_ENV_DIR_COUNT, VP_ERR_STATE, "decision: direction %d",
               (int)d->action[0]);
    const int decimals = vp_tick_decimals(in->tick_size);
    char t[32], after[64];
    vp_time_format_iso(d->time_ms, t, sizeof t);
    snprintf(after, sizeof after, "the bar after %s", t);
    if (checkpoint) cJSON_AddStringToObject(root, "checkpoint", checkpoint);
    else cJSON_AddNullToObject(root, "checkpoint");
    if (data) cJSON_AddStringToObject(root, "data", data);
    else cJSON_AddNullToObject(root, "data");
    cJSON_AddNumberToObject(root, "bar", (double)d->bar);
    cJSON_AddStringToObject(root, "time", t);
    cJSON_AddStringToObject(root, "decision_for", after);
    cJSON_AddStringToObject(root, "direction", dirs[d->action[0]]);
    cJSON_AddNumberToObject(root, "size_fraction", 0.25 * (double)(d->action[1] + 1));
    cJSON_AddNumberToObject(root, "contracts", (double)d->contracts);
    if (d->has_scale) cJSON_AddNumberToObject(root, "size_scale", score_value(d->size_scale));
    VP_TRY(add_level(root, "take_profit", d->action[2], d->take_profit, decimals));
    VP_TRY(add_level(root, "stop_loss", d->action[3], d->stop_loss, decimals));
    VP_TRY(add_q(root, d));
    VP_TRY(vp_metric_json_add(root, "q_margin", d->q_margin));
    cJSON_AddBoolToObject(root, "fragile", d->fragile);
    cJSON_AddNumberToObject(root, "atr", d->atr);
    cJSON_AddNumberToObject(root, "last_close", d->close);
    return add_warnings(root, d, checks);
}

vp_status vp_decision_json(const vp_decision* d, const vp_instrument* in, const char* checkpoint,
                           const char* data, const vp_backtest_checks* checks, cJSON** out) {
    VP_REQUIRE(d != NULL && in != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_decision_json: NULL argument");
    *out = NULL;
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "decision: out of memory");
    vp_status s = fill(root, d, in, checkpoint, data, checks);
    if (s != VP_OK) {
        cJSON_Delete(root);
        return s;
    }
    *out = root;
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
    // the decision record, printed by the same code as the live API's
    vp_decision d;
    memset(&d, 0, sizeof d);
    d.bar = last->bar;
    d.time_ms = last->time_ms;
    memcpy(d.action, r->action + VP_ENV_BRANCHES * o, sizeof d.action);
    d.close = last->close;
    d.atr = last->atr;
    d.n_heads = r->n_heads;
    memcpy(d.q, r->next_q + w * r->n_heads, sizeof(float) * (size_t)r->n_heads);
    d.q_margin = r->margin[o];
    d.fragile = d.q_margin < VP_ACTION_FRAGILE_MARGIN;
    if (r->next_scale) {
        d.has_scale = 1;
        d.size_scale = r->next_scale[w];
    }
    vp_decision_levels(&d, &last->instrument);
    return vp_decision_json(&d, &last->instrument, checkpoint, data, checks, out);
}
