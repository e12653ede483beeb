/* The leverage limit's cuts in a backtest, on the hand-checkable 9-bar path
 * (test_backtest_hand.h) with instrument.max_leverage 1.5 and 10000 of equity, every cut worked
 * out by hand: the orders cut and the contracts removed per window and in all, the bars they
 * were for, for the strategy and for buy-and-hold; summary.json's leverage_cuts objects, the
 * console's LEVERAGE lines and the report's warnings; none of it without cuts; at most 100
 * bars listed. */
#include "test_backtest_hand.h" /* first: its system headers' POSIX level */

#include <cjson/cJSON.h>

/* Choices at bars 0..7 (4 contracts at size 1.0). A cap is floor(1.5 x equity / (fill price x 50))
 * at the decision's equity: */
static const int32_t ACTS[NB - 1][4] = {
    {2, 3, 0, 0}, /* long 4 from flat: 15000 / (101 x 50) = 2.97: 2 bought at 101, 2 cut (bar 1) */
    {2, 1, 0, 0}, /* long 2: held, nothing to cut */
    {0, 3, 0, 0}, /* short 4: sell 2 to close, then 1.5 x 10145 / (102 x 50) = 2.98: short 2, 2 cut (bar 3) */
    {1, 0, 0, 0}, /* flat: a reduction, never cut; buy 2 at 100.75 */
    {2, 0, 0, 0}, /* long 1: 1.5 x 10205 / (100.25 x 50) = 3.05 >= 1, not cut */
    {1, 0, 0, 0}, /* flat: sell 1 at 98 */
    {1, 0, 0, 0},
    {2, 3, 0, 0}, /* the last step goes flat whatever the choice: nothing to cut */
};

/* Long 4 at every decision (buy-and-hold's choice). */
static const int32_t HOLD[4] = {VP_ENV_DIR_LONG, 3, 0, 0};

/* The path's settings: 4 contracts, 10000 of equity, at most 1.5 x equity of notional. */
static vp_rollout_cfg lev_cfg(const int32_t* forced, int64_t n_windows) {
    vp_rollout_cfg c = hand_cfg(forced);
    c.instrument.max_position = 4;
    c.instrument.initial_equity = 10000.0;
    c.instrument.max_leverage = 1.5;
    c.n_windows = n_windows;
    return c;
}

/* A run of the choices acts [NB - 1, 4] over the fixture's 9 bars in n windows into *r. */
static void run(const fixture* f, const int32_t* acts, int64_t n, double max_leverage, vp_rollout_result* r) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = lev_cfg(acts, n);
    c.instrument.max_leverage = max_leverage;
    vp_rollout_data d = {&f->bars, f->atr, NULL, {0, NB}};
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, r));
    vp_backend_free(b);
}

/* Whether cuts c are `orders` orders, `contracts` contracts at bars want [n_bars]. */
static int cuts_are(const vp_rollout_cuts* c, int64_t orders, int64_t contracts, const int64_t* want, int n_bars) {
    int ok = c->orders == orders && c->contracts == contracts && c->n_bars == n_bars && c->max_leverage == 1.5;
    for (int i = 0; ok && i < n_bars; ++i) ok = c->bars[i] == want[i];
    if (!ok) {
        fprintf(stderr, "  cuts: %lld orders, %lld contracts, limit %g, %d bars:", (long long)c->orders,
                (long long)c->contracts, c->max_leverage, c->n_bars);
        for (int i = 0; i < c->n_bars; ++i) fprintf(stderr, " %lld", (long long)c->bars[i]);
        fprintf(stderr, "\n");
    }
    return ok;
}

/* The exact path: the strategy's two cuts and the equity they left; buy-and-hold, cut at every
 * order it placed before its last step (each add cut to nothing once it holds 2). */
static void test_exact_cuts(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, &ACTS[0][0], 1, 1.5, &r);
    static const int64_t bars[2] = {1, 3};
    CHECK(cuts_are(&r.cuts, 2, 4, bars, 2), "strategy cuts");
    CHECK(r.windows[0].cut_orders == 2 && r.windows[0].cut_contracts == 4, "window 0: %lld orders, %lld contracts",
          (long long)r.windows[0].cut_orders, (long long)r.windows[0].cut_contracts);
    // the positions and equity of what was left: 2 long at 101, short 2 at 102, flat at 100.75, long 1 at 100.25
    static const int32_t pos[NB] = {0, 2, 2, -2, 0, 1, 0, 0, 0};
    static const double eq[NB] = {10000, 10045, 10145, 10235, 10205, 10090, 10087.5, 10087.5, 10087.5};
    for (int i = 0; i < NB && r.n_points == NB; ++i)
        CHECK(r.position[i] == pos[i] && r.equity[i] == eq[i], "point %d: %d contracts, equity %.17g", i,
              r.position[i], r.equity[i]);
    // buy-and-hold: the cap is 2 contracts at every open (1.5 x equity / notional between 2.95 and 2.98)
    static const int64_t bh_bars[7] = {1, 2, 3, 4, 5, 6, 7};
    CHECK(cuts_are(&r.buy_hold_cuts, 7, 14, bh_bars, 7), "buy-and-hold cuts");
    CHECK(r.windows[0].buy_hold_cut_orders == 7 && r.windows[0].buy_hold_cut_contracts == 14,
          "window 0 buy-and-hold: %lld orders, %lld contracts", (long long)r.windows[0].buy_hold_cut_orders,
          (long long)r.windows[0].buy_hold_cut_contracts);
    // 2 contracts bought at 101 and sold at the open of bar 8 at 99
    CHECK(r.curve_benchmark[NB - 1] == 10000.0 - 2 * 2.0 * 50.0 - 10.0, "buy-and-hold ends at %.17g",
          r.curve_benchmark[NB - 1]);
    vp_rollout_result_free(&r);

    // no limit: nothing cut, by either
    run(&f, &ACTS[0][0], 1, 0.0, &r);
    CHECK(r.cuts.orders == 0 && r.cuts.contracts == 0 && r.cuts.n_bars == 0 && r.buy_hold_cuts.orders == 0 &&
              r.position[1] == 4,
          "no limit: %lld / %lld orders cut, %d held", (long long)r.cuts.orders, (long long)r.buy_hold_cuts.orders,
          r.position[1]);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* Two windows (bars 0..4 and 4..8), each from flat at 10000: the strategy's cuts all fall in
 * the first; buy-and-hold is cut at bars 1, 2, 3 and, from its fresh start, 5, 6, 7. */
static void test_segment_cuts(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, &ACTS[0][0], 2, 1.5, &r);
    static const int64_t bars[2] = {1, 3};
    static const int64_t bh_bars[6] = {1, 2, 3, 5, 6, 7};
    CHECK(r.n_windows == 2 && cuts_are(&r.cuts, 2, 4, bars, 2) && cuts_are(&r.buy_hold_cuts, 6, 12, bh_bars, 6),
          "totals over 2 windows");
    CHECK(r.n_windows == 2 && r.windows[0].cut_orders == 2 && r.windows[0].cut_contracts == 4 &&
              r.windows[1].cut_orders == 0 && r.windows[1].cut_contracts == 0,
          "strategy per window");
    CHECK(r.n_windows == 2 && r.windows[0].buy_hold_cut_orders == 3 && r.windows[0].buy_hold_cut_contracts == 6 &&
              r.windows[1].buy_hold_cut_orders == 3 && r.windows[1].buy_hold_cut_contracts == 6,
          "buy-and-hold per window");
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* A number at a JSON path (a.b), NaN when absent. */
static double jnum(const cJSON* o, const char* a, const char* b) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* Whether array o[a][b] holds the numbers want [n]. */
static int jbars(const cJSON* o, const char* a, const char* b, const int64_t* want, int n) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, a), b);
    int ok = cJSON_IsArray(x) && cJSON_GetArraySize(x) == n;
    for (int i = 0; ok && i < n; ++i) ok = cJSON_GetArrayItem(x, i)->valuedouble == (double)want[i];
    return ok;
}

/* The console of result r into con[n]. */
static void console(const vp_rollout_result* r, char* con, size_t n) {
    memset(con, 0, n);
    FILE* out = tmpfile();
    CHECK(out != NULL, "tmpfile");
    if (!out) return;
    CHECK_OK(vp_backtest_print(r, out));
    rewind(out);
    CHECK(fread(con, 1, n - 1, out) > 0, "console text");
    fclose(out);
}

/* summary.json, the console and the report of the exact run; of a run without cuts. */
static void test_cut_outputs(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, &ACTS[0][0], 1, 1.5, &r);
    char dir[256];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    vp_backtest_info info = {"hand", NULL, NULL, NULL, &f.bars, NULL, 0.25, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, dir));

    // summary.json: both objects with the counts, the limit, the bars and their times
    char* text = vpt_read_file(dir, "summary.json", NULL);
    cJSON* js = text ? cJSON_Parse(text) : NULL;
    static const int64_t bars[2] = {1, 3}, bh_bars[7] = {1, 2, 3, 4, 5, 6, 7};
    CHECK(js && jnum(js, "leverage_cuts", "orders") == 2 && jnum(js, "leverage_cuts", "contracts") == 4 &&
              jnum(js, "leverage_cuts", "max_leverage") == 1.5 && jbars(js, "leverage_cuts", "bars", bars, 2),
          "leverage_cuts: %.400s", text ? strstr(text, "\"leverage_cuts\"") : "");
    const cJSON* times =
        cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "leverage_cuts"), "times");
    CHECK(cJSON_GetArraySize(times) == 2 &&
              strcmp(cJSON_GetArrayItem(times, 1)->valuestring, "2020-01-06T03:00:00Z") == 0,
          "leverage_cuts times");
    CHECK(js && jnum(js, "buy_and_hold_leverage_cuts", "orders") == 7 &&
              jnum(js, "buy_and_hold_leverage_cuts", "contracts") == 14 &&
              jbars(js, "buy_and_hold_leverage_cuts", "bars", bh_bars, 7),
          "buy_and_hold_leverage_cuts");
    cJSON_Delete(js);
    free(text);

    // the console: one line each, before any figure
    const char* line = "LEVERAGE: 2 orders of the strategy were cut to instrument.max_leverage 1.5 (notional / "
                       "equity at the decision): 4 contracts removed (bars 1, 3; the first at 2020-01-06T01:00:00Z): "
                       "it held less than chosen\n";
    const char* bh_line = "LEVERAGE: 7 orders of buy & hold were cut to instrument.max_leverage 1.5 (notional / "
                          "equity at the decision): 14 contracts removed (bars 1, 2, 3, 4, 5, 6, 7; the first at "
                          "2020-01-06T01:00:00Z): it held less than chosen\n";
    char con[16384];
    console(&r, con, sizeof con);
    const char* metrics = strstr(con, "annualisation:");
    CHECK(metrics && strncmp(con, line, strlen(line)) == 0 && strncmp(con + strlen(line), bh_line, strlen(bh_line)) == 0,
          "console: %s", con);

    // the report: warning lines under the heading, before the charts
    char* html = vpt_read_file(dir, "report.html", NULL);
    char warn[600];
    snprintf(warn, sizeof warn, "<p class=\"warn\">%.*s</p>", (int)strlen(line) - 1, line);
    CHECK(html && strstr(html, warn) && strstr(html, warn) < strstr(html, "<svg") &&
              strstr(html, "<p class=\"warn\">LEVERAGE: 7 orders of buy &amp; hold were cut"),
          "report warnings");
    free(html);
    tdu_rmtree(dir);
    vp_rollout_result_free(&r);

    // without a limit: no line, and zero counts in summary.json
    run(&f, &ACTS[0][0], 1, 0.0, &r);
    console(&r, con, sizeof con);
    CHECK(strstr(con, "LEVERAGE") == NULL, "console without cuts: %s", con);
    cJSON* root = NULL;
    CHECK_OK(vp_backtest_summary_json(&r, &info, &root));
    CHECK(root && jnum(root, "leverage_cuts", "orders") == 0 && jnum(root, "leverage_cuts", "max_leverage") == 0 &&
              jbars(root, "leverage_cuts", "bars", NULL, 0) && jnum(root, "buy_and_hold_leverage_cuts", "orders") == 0,
          "summary without cuts");
    cJSON_Delete(root);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* 205 bars at 100 and long 4 at every decision: the first order bought 2, each later one was cut
 * to nothing (203 orders of 2 contracts, the last step closes); the first 100 bars are listed. */
static void test_bars_listed(void) {
    enum { N = 205 };
    vp_bars bars;
    CHECK_OK(vp_bars_alloc(&bars, N));
    static double atr[N];
    static int32_t acts[N - 1][4];
    for (int i = 0; i < N; ++i) {
        bars.time_ms[i] = 1578268800000LL + (int64_t)i * 3600000LL;
        bars.open[i] = bars.high[i] = bars.low[i] = bars.close[i] = 100.0;
        bars.volume[i] = 1.0;
        atr[i] = 1.0;
        if (i < N - 1) memcpy(acts[i], HOLD, sizeof HOLD);
    }
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = lev_cfg(&acts[0][0], 1);
    vp_rollout_data d = {&bars, atr, NULL, {0, N}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    int listed = r.cuts.n_bars == VP_ROLLOUT_CUT_BARS;
    for (int i = 0; listed && i < VP_ROLLOUT_CUT_BARS; ++i) listed = r.cuts.bars[i] == i + 1;
    CHECK(r.cuts.orders == N - 2 && r.cuts.contracts == 2 * (N - 2) && listed, "%lld orders, %lld contracts, %d bars",
          (long long)r.cuts.orders, (long long)r.cuts.contracts, r.cuts.n_bars);
    CHECK(r.buy_hold_cuts.orders == N - 2 && r.buy_hold_cuts.n_bars == VP_ROLLOUT_CUT_BARS, "buy-and-hold %lld orders",
          (long long)r.buy_hold_cuts.orders);
    char con[16384];
    console(&r, con, sizeof con);
    CHECK(strstr(con, "LEVERAGE: 203 orders of the strategy were cut to instrument.max_leverage 1.5 (notional / "
                      "equity at the decision): 406 contracts removed (bars 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, ...; the "
                      "first at 2020-01-06T01:00:00Z)"),
          "console lists 10: %s", con);
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    vp_bars_free(&bars);
}

int main(void) {
    RUN_TEST(test_exact_cuts);
    RUN_TEST(test_segment_cuts);
    RUN_TEST(test_cut_outputs);
    RUN_TEST(test_bars_listed);
    return vpt_finish();
}
