/* Ruin on the hand-checkable 9-bar path (test_backtest_hand.h), every value worked out by
 * hand: a close at or below ruin_fraction x initial_equity closes the position at the next
 * open and ends the window; equity is never clamped (a gap below zero stays negative and is
 * recorded); buy-and-hold is stepped by the environment under the same rule, and every
 * summary equals its own curve (last / first - 1, exactly); the segment mode, a ruin at a
 * window's last close; summary.json, equity.csv, trades.csv, the console and the report say
 * RUINED. */
#include "test_backtest_hand.h" /* first: its system headers' POSIX level */

#include <cjson/cJSON.h>

/* Long 2 contracts (max_position) at every decision, no take-profit or stop. */
static const int32_t HOLD[4] = {VP_ENV_DIR_LONG, 3, 0, 0};
static const int32_t FLAT[4] = {VP_ENV_DIR_FLAT, 0, 0, 0};

/* The 9-bar path with bar 2 closing at 96 and bar 3 gapping down to an open of 80. */
static void gap_fixture(fixture* f) {
    fixture_init(f);
    f->bars.low[2] = 95.5, f->bars.close[2] = 96.0;
    f->bars.open[3] = 80.0, f->bars.high[3] = 81.0, f->bars.low[3] = 79.0, f->bars.close[3] = 80.5;
}

/* A run of the choice `a` at every bar, initial equity `init`, ruin fraction `frac`, n windows. */
static void run(const fixture* f, const int32_t* a, double init, double frac, int64_t n, vp_rollout_result* r) {
    static int32_t acts[NB - 1][4];
    hand_same_choice(acts, a);
    vp_rollout_cfg c = hand_cfg(&acts[0][0]);
    c.instrument.initial_equity = init;
    c.ruin_fraction = frac;
    c.n_windows = n;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_data d = {&f->bars, f->atr, NULL, {0, NB}};
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, r));
    vp_backend_free(b);
}

/* Checks a ruin record against its expected bars and figures. */
static void check_ruin(const char* what, const vp_rollout_ruin* ru, int64_t bar, int64_t close_bar, double level,
                       double at, double after, int below_zero) {
    CHECK(ru->ruined && ru->bar == bar && ru->close_bar == close_bar, "%s: ruined %d at bar %lld, closed at %lld", what,
          ru->ruined, (long long)ru->bar, (long long)ru->close_bar);
    CHECK(ru->time_ms == 1578268800000LL + bar * 3600000LL, "%s: time %lld", what, (long long)ru->time_ms);
    CHECK(ru->level == level && ru->equity_at_ruin == at && ru->equity_after_close == after, "%s: %.17g %.17g %.17g",
          what, ru->level, ru->equity_at_ruin, ru->equity_after_close);
    const double low = at < after ? at : after;
    CHECK(ru->below_zero == below_zero && ru->loss_past_floor == (low < level ? level - low : 0.0),
          "%s: below zero %d, past the floor %.17g", what, ru->below_zero, ru->loss_past_floor);
}

/* Equity at each close: initial 1680, 2 contracts bought at 101 (cash 1680 - 10100 - 5 = -8425),
 * marked at 101.5, 102.5, 100.5 and 100 (1725, 1825, 1625, 1575). The ruin level is 0.9375 x
 * 1680 = 1575: the close of bar 4 is at it, so the next step sells 2 at 100 - 0.25 (cash -8425 +
 * 9975 - 5 = 1545) and the window ends at bar 5's close. */
static void test_ruin_at_fraction(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, HOLD, 1680.0, 0.9375, 1, &r);
    static const double eq[6] = {1680, 1725, 1825, 1625, 1575, 1545};
    static const int32_t pos[6] = {0, 2, 2, 2, 2, 0};
    CHECK(r.n_points == 6 && r.windows[0].ruined && r.windows[0].last == 5 && r.n_ruined == 1, "%lld points, last %lld",
          (long long)r.n_points, (long long)r.windows[0].last);
    for (int i = 0; i < 6 && r.n_points == 6; ++i) {
        CHECK(r.equity[i] == eq[i] && r.position[i] == pos[i], "point %d: %.17g, %d", i, r.equity[i], r.position[i]);
        CHECK(r.action[4 * i] == (i < 5 ? VP_ENV_DIR_LONG : -1), "action at %d: %d", i, r.action[4 * i]);
    }
    check_ruin("strategy", &r.ruin, 4, 5, 1575.0, 1575.0, 1545.0, 0);
    check_ruin("window 0", &r.windows[0].ruin, 4, 5, 1575.0, 1575.0, 1545.0, 0);
    // the trade closed by the ruin rule: bought at 101, sold at 99.75 at the open of bar 5
    CHECK(r.n_trades == 1 && r.trades[0].reason == VP_EXIT_RUIN && r.trades[0].entry_bar == 1 &&
              r.trades[0].exit_bar == 5 && r.trades[0].exit_price == 99.75 && r.trades[0].pnl == -135.0 &&
              r.trades[0].costs == 60.0 && r.trades[0].bars_held == 4,
          "ruin trade: %lld trades, reason %s", (long long)r.n_trades,
          r.n_trades ? vp_exit_reason_name(r.trades[0].reason) : "-");
    // the curve holds the closed-out equity; buy-and-hold made the same choices, so the same curve and ruin
    for (int j = 0; j < NB; ++j) {
        const double want = eq[j < 6 ? j : 5];
        CHECK(r.curve_equity[j] == want && r.curve_benchmark[j] == want && r.curve_flat[j] == 1680.0,
              "curve[%d] %.17g, buy-and-hold %.17g, flat %.17g", j, r.curve_equity[j], r.curve_benchmark[j],
              r.curve_flat[j]);
    }
    check_ruin("buy-and-hold", &r.buy_hold_ruin, 4, 5, 1575.0, 1575.0, 1545.0, 0);
    CHECK(r.summary.strategy.total_return == 1545.0 / 1680.0 - 1.0 &&
              r.summary.buy_hold.total_return == 1545.0 / 1680.0 - 1.0 && r.summary.flat.total_return == 0.0,
          "totals %.17g %.17g", r.summary.strategy.total_return, r.summary.buy_hold.total_return);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* One unit of initial equity more: the level 0.9375 x 1681 = 1575.9375 lies under bar 4's
 * close (1576), so the run goes on to bar 5's close at 98 (-8424 + 9800 = 1376), ruins there
 * and sells at bar 6's open, 98.25 - 0.25 (cash -8424 + 9800 - 5 = 1371). */
static void test_ruin_just_above(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, HOLD, 1681.0, 0.9375, 1, &r);
    static const double eq[7] = {1681, 1726, 1826, 1626, 1576, 1376, 1371};
    CHECK(r.n_points == 7 && r.windows[0].last == 6, "%lld points", (long long)r.n_points);
    for (int i = 0; i < 7 && r.n_points == 7; ++i) CHECK(r.equity[i] == eq[i], "point %d: %.17g", i, r.equity[i]);
    check_ruin("strategy", &r.ruin, 5, 6, 1575.9375, 1376.0, 1371.0, 0);
    CHECK(r.n_trades == 1 && r.trades[0].exit_bar == 6 && r.trades[0].exit_price == 98.0 &&
              r.trades[0].reason == VP_EXIT_RUIN,
          "%lld trades", (long long)r.n_trades);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* A gap below zero: 2 contracts at 101 on 1000 (cash -9105), bar 1's close 1045, bar 2's
 * close at 96 gives 495 <= 500 (ruin fraction 0.5); bar 3 opens at 80, the close-out sells at
 * 79.75: cash -9105 + 7975 - 5 = -1135, kept as it is (below zero, 1635 past the floor). With
 * ruin fraction 0 the run goes on to bar 3's close, -9105 + 8050 = -1055 <= 0, and sells at
 * bar 4's open, 100.25: -9105 + 10025 - 5 = 915. */
static void test_gap_below_zero(void) {
    fixture f;
    gap_fixture(&f);
    vp_rollout_result r;
    run(&f, HOLD, 1000.0, 0.5, 1, &r);
    static const double eq[4] = {1000, 1045, 495, -1135};
    CHECK(r.n_points == 4, "%lld points", (long long)r.n_points);
    for (int i = 0; i < 4 && r.n_points == 4; ++i) CHECK(r.equity[i] == eq[i], "point %d: %.17g", i, r.equity[i]);
    check_ruin("strategy", &r.ruin, 2, 3, 500.0, 495.0, -1135.0, 1);
    CHECK(r.ruin.loss_past_floor == 1635.0, "past the floor %.17g", r.ruin.loss_past_floor);
    CHECK(r.n_trades == 1 && r.trades[0].pnl == -2135.0 && r.trades[0].exit_price == 79.75 &&
              r.trades[0].bars_held == 2 && r.trades[0].reason == VP_EXIT_RUIN,
          "gap trade: %lld trades", (long long)r.n_trades);
    CHECK(r.curve_equity[NB - 1] == -1135.0 && r.curve_drawdown[3] == -1135.0 / 1045.0 - 1.0,
          "curve end %.17g, drawdown %.17g", r.curve_equity[NB - 1], r.curve_drawdown[3]);
    CHECK(r.summary.strategy.total_return == -1135.0 / 1000.0 - 1.0, "total %.17g", r.summary.strategy.total_return);
    vp_rollout_result_free(&r);

    // ruin fraction 0: ruin only at or below zero
    run(&f, HOLD, 1000.0, 0.0, 1, &r);
    static const double eq0[5] = {1000, 1045, 495, -1055, 915};
    CHECK(r.n_points == 5, "%lld points", (long long)r.n_points);
    for (int i = 0; i < 5 && r.n_points == 5; ++i) CHECK(r.equity[i] == eq0[i], "point %d: %.17g", i, r.equity[i]);
    check_ruin("fraction 0", &r.ruin, 3, 4, 0.0, -1055.0, 915.0, 1);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* A flat strategy beside a buy-and-hold that ruins: the strategy's status stays ok, the
 * baseline's ruin is recorded and its summary is its curve's. */
static void test_baseline_ruins_alone(void) {
    fixture f;
    gap_fixture(&f);
    vp_rollout_result r;
    run(&f, FLAT, 1000.0, 0.5, 1, &r);
    CHECK(!r.ruin.ruined && r.n_ruined == 0 && r.n_points == NB && r.n_trades == 0, "strategy ruined %d, %lld points",
          r.ruin.ruined, (long long)r.n_points);
    check_ruin("buy-and-hold", &r.buy_hold_ruin, 2, 3, 500.0, 495.0, -1135.0, 1);
    check_ruin("window 0's buy-and-hold", &r.windows[0].buy_hold_ruin, 2, 3, 500.0, 495.0, -1135.0, 1);
    static const double bh[NB] = {1000, 1045, 495, -1135, -1135, -1135, -1135, -1135, -1135};
    for (int j = 0; j < NB; ++j)
        CHECK(r.curve_benchmark[j] == bh[j] && r.curve_equity[j] == 1000.0, "curve[%d]: %.17g / %.17g", j,
              r.curve_benchmark[j], r.curve_equity[j]);
    CHECK(r.summary.buy_hold.total_return == -1135.0 / 1000.0 - 1.0 && r.summary.strategy.total_return == 0.0,
          "buy-and-hold total %.17g", r.summary.buy_hold.total_return);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* Two windows (bars 0..4 and 4..8) at ruin fraction 0.95 of 1680 (level 1596): window 0's
 * last step sells at bar 4's open, 100.25 (cash -8425 + 10025 - 5 = 1595), below the level at
 * its last close, so it is marked ruined with nothing left to close; window 1 buys at 100.25
 * (cash 1680 - 10025 - 5 = -8350), closes bar 5 at 98 (1450), is closed out at bar 6's open,
 * 98 (1445). The stitched curves chain the windows and the summaries are the curves'. */
static void test_segments_ruin(void) {
    fixture f;
    fixture_init(&f);
    vp_rollout_result r;
    run(&f, HOLD, 1680.0, 0.95, 2, &r);
    const double level = 0.95 * 1680.0;
    CHECK(r.n_windows == 2 && r.n_ruined == 2 && r.windows[0].n_points == 5 && r.windows[1].n_points == 3,
          "%lld ruined, points %lld + %lld", (long long)r.n_ruined, (long long)r.windows[0].n_points,
          (long long)r.windows[1].n_points);
    check_ruin("window 0", &r.windows[0].ruin, 4, 4, level, 1595.0, 1595.0, 0);
    check_ruin("window 1", &r.windows[1].ruin, 5, 6, level, 1450.0, 1445.0, 0);
    CHECK(r.ruin.window == 0 && r.ruin.bar == 4, "first ruin: window %lld bar %lld", (long long)r.ruin.window,
          (long long)r.ruin.bar);
    // window 0's trade ended with the window; window 1's by the ruin rule
    CHECK(r.n_trades == 2 && r.trades[0].reason == VP_EXIT_END && r.trades[1].reason == VP_EXIT_RUIN &&
              r.trades[1].exit_bar == 6,
          "%lld trades", (long long)r.n_trades);
    // the chained curve: from 1680 by window 0's returns, then window 1's, then flat
    static const double pts[7] = {1680, 1725, 1825, 1625, 1595, 1450, 1445}; /* window 1's from 1680 at bar 4 */
    double chain = 1680.0;
    for (int j = 0; j < NB; ++j) {
        CHECK(r.curve_equity[j] == chain, "curve[%d] = %.17g, chained %.17g", j, r.curve_equity[j], chain);
        if (j + 1 < 7) chain *= 1.0 + (pts[j + 1] / (j == 4 ? 1680.0 : pts[j]) - 1.0);
    }
    const double* c[2] = {r.curve_equity, r.curve_benchmark};
    const vp_perf* p[2] = {&r.summary.strategy, &r.summary.buy_hold};
    for (int i = 0; i < 2; ++i)
        CHECK(p[i]->total_return == c[i][NB - 1] / c[i][0] - 1.0, "series %d: total %.17g, curve %.17g", i,
              p[i]->total_return, c[i][NB - 1] / c[i][0] - 1.0);
    CHECK(r.windows[1].perf.total_return == 1445.0 / 1680.0 - 1.0, "window 1 total %.17g", r.windows[1].perf.total_return);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* A number of a JSON object's member path (a.b), NaN when absent. */
static double jnum(const cJSON* o, const char* a, const char* b) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsNumber(x) ? x->valuedouble : NAN;
}

/* A string of a JSON object's member path (a.b), "" when absent. */
static const char* jstr(const cJSON* o, const char* a, const char* b) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b) x = cJSON_GetObjectItemCaseSensitive(x, b);
    return cJSON_IsString(x) ? x->valuestring : "";
}

/* Field `col` (0-based) of a CSV line, as a number. */
static double csv_field(const char* line, int col) {
    for (int i = 0; i < col && line; ++i) line = strchr(line, ','), line = line ? line + 1 : NULL;
    return line ? strtod(line, NULL) : NAN;
}

/* The gap run's files: summary.json's status, ruin and marked series, its totals equal to
 * the written curves' last / first - 1 exactly, the ruin row of trades.csv, the report's
 * heading and the console. */
static void test_ruin_files(void) {
    fixture f;
    gap_fixture(&f);
    vp_rollout_result r;
    run(&f, HOLD, 1000.0, 0.5, 1, &r);
    char dir[256], path[400], line[1024];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    vp_backtest_info info = {"hand", NULL, NULL, NULL, &f.bars, NULL, 0.25, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, dir));

    // summary.json: status first, the ruin, the ruined series marked
    size_t n = 0;
    char* text = vpt_read_file(dir, "summary.json", &n);
    cJSON* js = text ? cJSON_Parse(text) : NULL;
    CHECK(text && strncmp(text, "{\n\t\"status\":\t\"ruined\",", 22) == 0 && js, "summary.json: %.60s", text ? text : "");
    CHECK(strcmp(jstr(js, "ruin", "time"), "2020-01-06T02:00:00Z") == 0 && jnum(js, "ruin", "bar") == 2 &&
              jnum(js, "ruin", "window") == 0 && jnum(js, "ruin", "equity_at_ruin") == 495.0 &&
              jnum(js, "ruin", "equity_after_close") == -1135.0 && jnum(js, "ruin", "close_bar") == 3 &&
              jnum(js, "ruin", "ruin_level") == 500.0 && jnum(js, "ruin", "loss_past_floor") == 1635.0 &&
              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(js, "ruin"), "below_zero")),
          "ruin object");
    CHECK(strcmp(jstr(js, "strategy", "status"), "ruined") == 0 && strcmp(jstr(js, "buy_and_hold", "status"), "ruined") == 0 &&
              strcmp(jstr(js, "flat", "status"), "ok") == 0 && jnum(js, "buy_and_hold_ruin", "bar") == 2,
          "series status %s / %s", jstr(js, "strategy", "status"), jstr(js, "buy_and_hold", "status"));
    // equity.csv's written curves against the summary: last / first - 1, exactly
    char first[1024], last[1024];
    snprintf(path, sizeof path, "%s/equity.csv", dir);
    CHECK(read_line(path, 1, first, sizeof first) && read_line(path, NB, last, sizeof last), "equity.csv rows");
    const double bh0 = csv_field(first, 6), bh1 = csv_field(last, 6), e0 = csv_field(first, 3), e1 = csv_field(last, 3);
    CHECK(bh1 == -1135.0 && e1 == -1135.0, "written ends %.17g %.17g", bh1, e1);
    CHECK(jnum(js, "buy_and_hold", "total_return_frac") == bh1 / bh0 - 1.0 &&
              jnum(js, "strategy", "total_return_frac") == e1 / e0 - 1.0,
          "summary totals %.17g %.17g against the written curves %.17g %.17g",
          jnum(js, "buy_and_hold", "total_return_frac"), jnum(js, "strategy", "total_return_frac"), bh1 / bh0 - 1.0,
          e1 / e0 - 1.0);
    cJSON_Delete(js);
    free(text);
    // trades.csv: the close-out row
    snprintf(path, sizeof path, "%s/trades.csv", dir);
    CHECK(read_line(path, 1, line, sizeof line) &&
              strcmp(line, "0,long,2,2020-01-06T01:00:00Z,1,101.00,2020-01-06T03:00:00Z,3,79.75,-2135,60,0,2,ruin\n") == 0,
          "trade row: %s", line);

    // report.html: the title, a warning line before the charts, the metrics marked
    char* html = vpt_read_file(dir, "report.html", NULL);
    const char* warn = "<p class=\"warn\">RUINED: the strategy at the close of bar 2 (the bar opened "
                       "2020-01-06T02:00:00Z): equity 495.00, at or below the ruin level 500.00; closed out at the "
                       "open of bar 3, equity -1135.00 after it; below zero, 1635.00 lost past the ruin level</p>";
    CHECK(html && strstr(html, "<h1>hand (RUINED at bar 2, 2020-01-06T02:00:00Z)</h1>") && strstr(html, warn) &&
              strstr(html, warn) < strstr(html, "<svg"),
          "report heading");
    CHECK(html && strstr(html, "<p class=\"warn\">RUINED: buy &amp; hold at the close of bar 2") &&
              strstr(html, "<h2>Metrics of a RUINED run: not a normal result</h2>") &&
              strstr(html, "series status</td><td>ruined</td><td>ruined</td><td>ok</td>"),
          "report metrics marked");
    free(html);

    // the console: RUINED with the bar and its time before any figure, and after the table
    FILE* out = tmpfile();
    CHECK(out != NULL, "tmpfile");
    if (out) {
        CHECK_OK(vp_backtest_print(&r, out));
        char con[16384] = {0};
        rewind(out);
        CHECK(fread(con, 1, sizeof con - 1, out) > 0, "console text");
        fclose(out);
        CHECK(strncmp(con, warn + strlen("<p class=\"warn\">"), strlen(warn) - strlen("<p class=\"warn\"></p>")) == 0,
              "console first line: %.200s", con);
        const char* metrics = strstr(con, "annualisation:");
        CHECK(strstr(con, "\nseries status                               ruined        ruined            ok\n"),
              "console status row: %s", con);
        CHECK(metrics && strstr(con, "RUINED: buy & hold at the close of bar 2") < metrics &&
                  strstr(con, "the metrics below are those of a RUINED run, not a normal result:\n") < metrics &&
                  strstr(con, "RUINED at bar 2 (2020-01-06T02:00:00Z): the figures above are not a normal result") >
                      metrics,
              "console order: %s", con);
    }
    tdu_rmtree(dir);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
}

/* A bad ruin fraction is refused, naming the key. */
static void test_bad_fraction(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    int32_t acts[NB - 1][4];
    hand_same_choice(acts, HOLD);
    vp_rollout_cfg c = hand_cfg(&acts[0][0]);
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    const double bad[3] = {1.0, -0.1, NAN};
    for (int i = 0; i < 3; ++i) {
        c.ruin_fraction = bad[i];
        CHECK_STATUS(vp_backtest_run(b, NULL, NULL, &d, &c, &r), VP_ERR_INVALID_ARG, "env.ruin_fraction");
        vp_rollout_result_free(&r);
    }
    vp_backend_free(b);
    vp_bars_free(&f.bars);
}

int main(void) {
    RUN_TEST(test_ruin_at_fraction);
    RUN_TEST(test_ruin_just_above);
    RUN_TEST(test_gap_below_zero);
    RUN_TEST(test_baseline_ruins_alone);
    RUN_TEST(test_segments_ruin);
    RUN_TEST(test_ruin_files);
    RUN_TEST(test_bad_fraction);
    return vpt_finish();
}
