/* summary.json objects: every metric with its unit in the key's name; +-inf as "inf" /
 * "-inf" and undefined values (NaN) as null, since JSON has no such numbers. */
#include <cjson/cJSON.h>
#include <math.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

vp_status vp_metric_json_add(cJSON* obj, const char* key, double v) {
    VP_REQUIRE(obj && key, VP_ERR_INVALID_ARG, "vp_metric_json_add: obj and key must not be NULL");
    cJSON* item;
    if (isnan(v)) item = cJSON_CreateNull();
    else if (isinf(v)) item = cJSON_CreateString(v > 0 ? "inf" : "-inf");
    else item = cJSON_CreateNumber(v);
    VP_REQUIRE(item, VP_ERR_OOM, "metrics JSON: out of memory at '%s'", key);
    if (!cJSON_AddItemToObject(obj, key, item)) {
        cJSON_Delete(item);
        VP_FAIL(VP_ERR_OOM, "metrics JSON: out of memory at '%s'", key);
    }
    return VP_OK;
}

/* Adds a string field. */
static vp_status add_str(cJSON* obj, const char* key, const char* s) {
    VP_REQUIRE(cJSON_AddStringToObject(obj, key, s), VP_ERR_OOM, "metrics JSON: out of memory at '%s'", key);
    return VP_OK;
}

/* Adds every field of a table read from the struct at src. */
static vp_status add_fields(cJSON* obj, const vp_metric_field* fields, int n, const void* src) {
    for (int i = 0; i < n; ++i) VP_TRY(vp_metric_json_add(obj, fields[i].key, vp_metric_field_get(&fields[i], src)));
    return VP_OK;
}

vp_status vp_perf_to_json(const vp_perf* p, cJSON* obj) {
    VP_REQUIRE(p && obj, VP_ERR_INVALID_ARG, "vp_perf_to_json: p and obj must not be NULL");
    VP_TRY(add_str(obj, "status", vp_perf_status_name(p->status)));
    VP_TRY(vp_metric_json_add(obj, "n_returns", (double)p->n_returns));
    VP_TRY(vp_metric_json_add(obj, "n_valid_returns", (double)p->n_valid));
    VP_TRY(vp_metric_json_add(obj, "periods_per_year", p->periods_per_year));
    VP_TRY(vp_metric_json_add(obj, "risk_free_rate_frac", p->risk_free_rate));
    VP_TRY(vp_metric_json_add(obj, "annualised_from_years", p->years));
    VP_REQUIRE(cJSON_AddBoolToObject(obj, "extrapolated", p->extrapolated), VP_ERR_OOM,
               "metrics JSON: out of memory at 'extrapolated'");
    VP_TRY(add_fields(obj, vp_perf_fields, vp_perf_n_fields, p));
    VP_TRY(vp_metric_json_add(obj, "skewness_ratio", p->skewness));
    return vp_metric_json_add(obj, "kurtosis_ratio", p->kurtosis);
}

vp_status vp_tear_to_json(const vp_tear* t, cJSON* obj) {
    VP_REQUIRE(t && obj, VP_ERR_INVALID_ARG, "vp_tear_to_json: t and obj must not be NULL");
    VP_TRY(vp_metric_json_add(obj, "n_returns", (double)t->n_returns));
    VP_TRY(vp_metric_json_add(obj, "n_valid_returns", (double)t->n_valid));
    VP_TRY(vp_metric_json_add(obj, "n_valid_pairs", (double)t->n_pairs));
    VP_TRY(vp_metric_json_add(obj, "periods_per_year", t->periods_per_year));
    VP_TRY(vp_metric_json_add(obj, "risk_free_rate_frac", t->risk_free_rate));
    return add_fields(obj, vp_tear_fields, vp_tear_n_fields, t);
}

vp_status vp_trade_stats_to_json(const vp_trade_stats* t, cJSON* obj) {
    VP_REQUIRE(t && obj, VP_ERR_INVALID_ARG, "vp_trade_stats_to_json: t and obj must not be NULL");
    return add_fields(obj, vp_trade_fields, vp_trade_n_fields, t);
}

/* Adds the annualisation factor, its source and the rule, and the risk-free rate with its rule. */
static vp_status annual_to_json(const vp_annual* a, cJSON* obj) {
    VP_TRY(vp_metric_json_add(obj, "periods_per_year", a->periods_per_year));
    VP_TRY(add_str(obj, "method", a->method == VP_ANNUAL_MEASURED ? "measured" : "given"));
    if (a->method == VP_ANNUAL_MEASURED) {
        VP_TRY(add_str(obj, "rule", VP_ANNUAL_RULE_TEXT));
        VP_TRY(vp_metric_json_add(obj, "n_bars", (double)a->n_bars));
        VP_TRY(vp_metric_json_add(obj, "span_days", a->span_days));
        VP_TRY(vp_metric_json_add(obj, "median_bar_interval_s", a->median_interval_s));
    }
    VP_TRY(vp_metric_json_add(obj, "risk_free_rate_frac", a->risk_free_rate));
    return add_str(obj, "risk_free_rule", VP_RISK_FREE_RULE_TEXT);
}

/* Builds the summary object into root. */
static vp_status summary_fill(const vp_metrics_summary* s, cJSON* root) {
    static const char* names[3] = {"strategy", "buy_and_hold", "flat"};
    const vp_perf* series[3] = {&s->strategy, &s->buy_hold, &s->flat};
    cJSON* annual = cJSON_AddObjectToObject(root, "annualisation");
    VP_REQUIRE(annual, VP_ERR_OOM, "metrics JSON: out of memory");
    VP_TRY(annual_to_json(&s->annual, annual));
    for (int i = 0; i < 3; ++i) {
        cJSON* o = cJSON_AddObjectToObject(root, names[i]);
        VP_REQUIRE(o, VP_ERR_OOM, "metrics JSON: out of memory");
        VP_TRY(vp_perf_to_json(series[i], o));
        if (i == 0) VP_TRY(vp_metric_json_add(o, "psr_vs_buy_hold_frac", vp_perf_psr_vs(&s->strategy, &s->buy_hold)));
    }
    if (s->has_tear) {
        cJSON* tear = cJSON_AddObjectToObject(root, "tear");
        VP_REQUIRE(tear, VP_ERR_OOM, "metrics JSON: out of memory");
        VP_TRY(add_str(tear, "benchmark", "buy_and_hold"));
        VP_TRY(vp_tear_to_json(&s->tear, tear));
    }
    cJSON* trades = cJSON_AddObjectToObject(root, "trades");
    VP_REQUIRE(trades, VP_ERR_OOM, "metrics JSON: out of memory");
    return vp_trade_stats_to_json(&s->trades, trades);
}

vp_status vp_metrics_to_json(const vp_metrics_summary* s, cJSON** out) {
    VP_REQUIRE(s && out, VP_ERR_INVALID_ARG, "vp_metrics_to_json: s and out must not be NULL");
    *out = NULL;
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root, VP_ERR_OOM, "metrics JSON: out of memory");
    vp_status st = summary_fill(s, root);
    if (st != VP_OK) {
        cJSON_Delete(root);
        return st;
    }
    *out = root;
    return VP_OK;
}

vp_status vp_metrics_json_mark_ruined(cJSON* obj, const char* series) {
    cJSON* o = cJSON_GetObjectItemCaseSensitive(obj, series);
    if (!cJSON_IsObject(o)) return VP_OK;
    cJSON* s = cJSON_CreateString("ruined");
    VP_REQUIRE(s != NULL, VP_ERR_OOM, "summary.json: out of memory");
    if (cJSON_HasObjectItem(o, "status")) cJSON_ReplaceItemInObjectCaseSensitive(o, "status", s);
    else cJSON_AddItemToObject(o, "status", s);
    return VP_OK;
}
