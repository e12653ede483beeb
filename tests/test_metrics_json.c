/* summary.json objects (units in key names, "inf" for infinities, null for undefined values)
 * and the plain-text table. */
#include <cjson/cJSON.h>

#include "vp_test.h"
#include "vulpes/metrics.h"

/* A summary: the oracle series as the strategy, constant returns as buy-and-hold (infinite
 * Sharpe), zeros as flat (undefined ratios), and a few trades. */
static void make_summary(vp_metrics_summary* s) {
    memset(s, 0, sizeof *s);
    double r[9] = {NAN, 1, 10, -4, 2, 3, 2, 1, -10}, c[9], z[9];
    for (int i = 0; i < 9; ++i) {
        r[i] /= 100.0;
        c[i] = 0.002;
        z[i] = 0.0;
    }
    CHECK_OK(vp_annual_given(252.0, &s->annual));
    CHECK_OK(vp_perf_compute(r, 9, 252.0, &s->strategy));
    CHECK_OK(vp_perf_compute(c, 9, 252.0, &s->buy_hold));
    CHECK_OK(vp_perf_compute(z, 9, 252.0, &s->flat));
    const vp_trade tr[3] = {{50.0, 2.0, 2}, {25.0, 2.0, 4}, {-10.0, 2.0, 1}};
    const double pos[9] = {0, 1, 1, 0, 1, 1, 1, 1, 0};
    CHECK_OK(vp_trade_stats_compute(tr, 3, pos, 9, 1.0, 252.0, &s->trades));
}

/* The number at obj[key], NAN when absent or not a number. */
static double num(const cJSON* obj, const char* key) {
    const cJSON* it = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(it) ? it->valuedouble : NAN;
}

static void test_summary_json(void) {
    vp_metrics_summary s;
    make_summary(&s);
    cJSON* root = NULL;
    CHECK_OK(vp_metrics_to_json(&s, &root));
    CHECK(root != NULL, "no object");
    if (!root) return;
    // print and parse back, as summary.json would be read
    char* text = cJSON_Print(root);
    cJSON* back = cJSON_Parse(text);
    CHECK(back != NULL, "printed JSON does not parse: %s", text);
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(back, "strategy");
    const cJSON* bh = cJSON_GetObjectItemCaseSensitive(back, "buy_and_hold");
    const cJSON* fl = cJSON_GetObjectItemCaseSensitive(back, "flat");
    const cJSON* tr = cJSON_GetObjectItemCaseSensitive(back, "trades");
    const cJSON* an = cJSON_GetObjectItemCaseSensitive(back, "annualisation");
    CHECK(st && bh && fl && tr && an, "sections missing: %s", text);
    // values survive the round trip to full precision
    CHECK_NEAR(num(st, "sharpe_ratio"), 1.7238613961706866, 0, 1e-15);
    CHECK_NEAR(num(st, "max_drawdown_frac"), -0.1, 0, 1e-15);
    CHECK_NEAR(num(st, "calmar_ratio"), 19.135925373194, 0, 1e-12);
    CHECK_NEAR(num(st, "n_returns"), 9, 0, 0);
    CHECK_NEAR(num(st, "n_valid_returns"), 8, 0, 0);
    CHECK_NEAR(num(st, "periods_per_year"), 252, 0, 0);
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(st, "status")), "ok") == 0, "status");
    // infinities as strings, undefined values as null
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(bh, "sharpe_ratio")), "inf") == 0,
          "buy-and-hold Sharpe is not \"inf\"");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fl, "sharpe_ratio")), "flat Sharpe is not null");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fl, "calmar_ratio")), "flat Calmar is not null");
    CHECK_NEAR(num(fl, "total_return_frac"), 0.0, 0, 0);
    // trade statistics with units in their names
    CHECK_NEAR(num(tr, "n_trades"), 3, 0, 0);
    CHECK_NEAR(num(tr, "hit_rate_frac"), 2.0 / 3.0, 0, 1e-15);
    CHECK_NEAR(num(tr, "profit_factor_ratio"), 7.5, 0, 1e-15);
    CHECK_NEAR(num(tr, "net_pnl_ccy"), 65.0, 0, 1e-15);
    CHECK_NEAR(num(tr, "costs_ccy"), 6.0, 0, 1e-15);
    CHECK_NEAR(num(tr, "exposure_frac"), 6.0 / 9.0, 0, 1e-15);
    CHECK_NEAR(num(tr, "turnover_max_position"), 4.0, 0, 1e-15);
    CHECK_NEAR(num(tr, "turnover_max_position_per_year"), 4.0 * 252.0 / 9.0, 0, 1e-12);
    CHECK_NEAR(num(tr, "avg_holding_bars"), 7.0 / 3.0, 0, 1e-15);
    CHECK_NEAR(num(an, "periods_per_year"), 252, 0, 0);
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(an, "method")), "given") == 0, "method");
    // no key of the strategy lacks a unit: each ends in a known suffix or is a count/status
    const char* units[] = {"_frac", "_ratio", "_ccy", "_bars", "_per_year", "_position", "_years", "extrapolated", "status", "returns", "trades"};
    for (const cJSON* it = st->child; it; it = it->next) {
        int ok = 0;
        size_t kl = strlen(it->string);
        for (size_t u = 0; u < sizeof units / sizeof units[0]; ++u) {
            size_t ul = strlen(units[u]);
            ok |= kl >= ul && strcmp(it->string + kl - ul, units[u]) == 0;
        }
        CHECK(ok, "key '%s' has no unit in its name", it->string);
    }
    cJSON_free(text);
    cJSON_Delete(back);
    cJSON_Delete(root);
}

static void test_measured_annual_json(void) {
    vp_metrics_summary s;
    make_summary(&s);
    const int64_t t[4] = {0, 3600000, 7200000, 14400000};
    CHECK_OK(vp_annual_measure(t, 4, &s.annual));
    cJSON* root = NULL;
    CHECK_OK(vp_metrics_to_json(&s, &root));
    const cJSON* an = cJSON_GetObjectItemCaseSensitive(root, "annualisation");
    CHECK(strcmp(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(an, "method")), "measured") == 0, "method");
    CHECK(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(an, "rule")) != NULL, "rule missing");
    CHECK_NEAR(num(an, "median_bar_interval_s"), 3600.0, 0, 0);
    CHECK_NEAR(num(an, "n_bars"), 4, 0, 0);
    CHECK_NEAR(num(an, "periods_per_year"), 4.0 * 365.25 * 24.0 / 5.0, 0, 1e-12);
    cJSON_Delete(root);
    CHECK_STATUS(vp_metrics_to_json(NULL, &root), VP_ERR_INVALID_ARG, "must not be NULL");
}

static void test_format(void) {
    char b[32];
    CHECK(strcmp(vp_metric_format(0.123456, VP_METRIC_UNIT_FRAC, b, sizeof b), "12.35 %") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(1.7238, VP_METRIC_UNIT_RATIO, b, sizeof b), "1.724") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(INFINITY, VP_METRIC_UNIT_RATIO, b, sizeof b), "inf") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(-INFINITY, VP_METRIC_UNIT_RATIO, b, sizeof b), "-inf") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(NAN, VP_METRIC_UNIT_FRAC, b, sizeof b), "-") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(-0.0000001, VP_METRIC_UNIT_FRAC, b, sizeof b), "0.00 %") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(-12.5, VP_METRIC_UNIT_CCY, b, sizeof b), "-12.50") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(42, VP_METRIC_UNIT_INT, b, sizeof b), "42") == 0, "%s", b);
    CHECK(strcmp(vp_metric_format(3.5, VP_METRIC_UNIT_TIMES, b, sizeof b), "3.50 x") == 0, "%s", b);
}

static void test_text_table(void) {
    vp_metrics_summary s;
    make_summary(&s);
    FILE* f = tmpfile();
    CHECK(f != NULL, "tmpfile");
    if (!f) return;
    CHECK_OK(vp_metrics_print(&s, f));
    static char text[8192];
    rewind(f);
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    // the factor, each metric row with all three series, and the trade rows
    CHECK(strstr(text, "annualisation: 252.00 periods/year (given)") != NULL, "annualisation line:\n%s", text);
    CHECK(strstr(text, "Sharpe ratio") && strstr(text, "1.724") && strstr(text, "inf"), "Sharpe row:\n%s", text);
    CHECK(strstr(text, "191.36 %") != NULL, "annual return:\n%s", text);
    CHECK(strstr(text, "-10.00 %") != NULL, "max drawdown:\n%s", text);
    CHECK(strstr(text, "profit factor") && strstr(text, "7.500"), "profit factor:\n%s", text);
    CHECK(strstr(text, "hit rate") && strstr(text, "66.67 %"), "hit rate:\n%s", text);
    int rows = 0;
    for (const char* p = text; (p = strchr(p, '\n')); ++p) rows++;
    CHECK(rows == 1 + 1 + 10 + 1 + 1 + 15, "table has %d lines:\n%s", rows, text);
    CHECK_STATUS(vp_metrics_print(&s, NULL), VP_ERR_INVALID_ARG, "must not be NULL");
}

int main(void) {
    RUN_TEST(test_summary_json);
    RUN_TEST(test_measured_annual_json);
    RUN_TEST(test_format);
    RUN_TEST(test_text_table);
    return vpt_finish();
}
