/* The backtest on a hand-checkable 9-bar path with forced actions: every fill, cost, trade
 * row and equity value worked out by hand below, buy-and-hold's and flat's curves stepped
 * by the environment; the files it writes; bad arguments. Ruin: test_backtest_ruin.c. */
#include "test_backtest_hand.h"

/* Choices (direction 0 short / 1 flat / 2 long, size 0..3, take-profit, stop-loss) at bars 0..7. */
static const int32_t ACTS[NB - 1][4] = {
    {2, 3, 0, 0}, /* long 2 contracts: buy 2 at 100.75 + 0.25 */
    {2, 1, 0, 0}, /* long 1: sell 1 at 101.50 - 0.25 */
    {0, 3, 0, 1}, /* short 2, stop 1 ATR: sell 3 at 102.25 - 0.25 (closes the long), stop 103 */
    {0, 3, 0, 1}, /* hold */
    {2, 0, 1, 2}, /* long 1, TP 1 ATR, stop 2 ATR: buy 3 at 100.25; stop 98.25 hit in bar 5 at 98 - 0.25 */
    {0, 1, 2, 0}, /* short 1, TP 2 ATR: sell 1 at 98.25 - 0.25; TP 96 hit in bar 6, bought at 96 + 0.25 */
    {2, 0, 0, 0}, /* long 1: buy 1 at 98.50 + 0.25 */
    {2, 3, 0, 0}, /* the last step: closed at the open of bar 8, 99.25 - 0.25, whatever the choice */
};

static void test_hand_path(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    // equity at each close, worked out step by step in ACTS' comments (all exact in binary)
    static const double eq[NB] = {100000, 100045, 100080, 100197.5, 100247.5, 100100, 100182.5, 100192.5, 100190};
    static const int32_t pos[NB] = {0, 2, 1, -2, -2, 0, 0, 1, 0};
    CHECK(r.n_windows == 1 && r.n_points == NB && r.n_curve == NB, "points %lld curve %lld", (long long)r.n_points,
          (long long)r.n_curve);
    for (int i = 0; i < NB && r.n_points == NB; ++i) {
        CHECK(r.equity[i] == eq[i] && r.curve_equity[i] == eq[i], "equity[%d] = %.17g, expected %.17g", i, r.equity[i],
              eq[i]);
        CHECK(r.position[i] == pos[i], "position[%d] = %d, expected %d", i, r.position[i], pos[i]);
        CHECK(r.bar[i] == i, "bar[%d] = %lld", i, (long long)r.bar[i]);
        for (int k = 0; k < 4; ++k)
            CHECK(r.action[i * 4 + k] == (i < NB - 1 ? ACTS[i][k] : -1), "action[%d][%d] = %d", i, k, r.action[i * 4 + k]);
    }
    // the five round trips: side, size, entry/exit bar and price, pnl, costs, bars held, reason
    static const struct {
        int side, size;
        int64_t eb, xb;
        double ep, xp, pnl, costs;
        int64_t held;
        vp_exit_reason why;
    } T[] = {
        {1, 2, 1, 3, 101.0, 101.625, 52.5, 60.0, 2, VP_EXIT_SIGNAL},
        {-1, 2, 3, 5, 102.0, 100.25, 165.0, 60.0, 2, VP_EXIT_SIGNAL},
        {1, 1, 5, 5, 100.25, 98.0, -117.5, 30.0, 0, VP_EXIT_STOP},
        {-1, 1, 6, 6, 98.0, 96.25, 82.5, 30.0, 0, VP_EXIT_TAKE_PROFIT},
        {1, 1, 7, 8, 98.75, 99.0, 7.5, 30.0, 1, VP_EXIT_END},
    };
    CHECK(r.n_trades == 5, "%lld trades", (long long)r.n_trades);
    double sum = 0.0;
    for (int i = 0; i < 5 && r.n_trades == 5; ++i) {
        const vp_rollout_trade* t = &r.trades[i];
        CHECK(t->side == T[i].side && t->size == T[i].size && t->entry_bar == T[i].eb && t->exit_bar == T[i].xb,
              "trade %d: side %d size %d bars %lld..%lld", i, t->side, t->size, (long long)t->entry_bar,
              (long long)t->exit_bar);
        CHECK(t->entry_price == T[i].ep && t->exit_price == T[i].xp, "trade %d prices %.17g %.17g", i, t->entry_price,
              t->exit_price);
        CHECK(t->pnl == T[i].pnl && t->costs == T[i].costs, "trade %d pnl %.17g costs %.17g", i, t->pnl, t->costs);
        CHECK(t->bars_held == T[i].held && t->reason == T[i].why, "trade %d held %lld reason %s", i,
              (long long)t->bars_held, vp_exit_reason_name(t->reason));
        sum += t->pnl;
    }
    CHECK(sum == eq[NB - 1] - 100000.0, "trades' pnl %.17g vs equity change", sum);
    // metrics: total return, trades, exposure (5 of 9 closes hold a position), turnover
    CHECK_NEAR(r.summary.strategy.total_return, 190.0 / 100000.0, 1e-15, 1e-12);
    CHECK(r.summary.trades.n_trades == 5 && r.summary.trades.n_wins == 4, "trade stats %lld / %lld",
          (long long)r.summary.trades.n_trades, (long long)r.summary.trades.n_wins);
    CHECK_NEAR(r.summary.trades.exposure, 5.0 / 9.0, 0, 1e-12);
    CHECK_NEAR(r.summary.trades.turnover, (2 + 1 + 3 + 0 + 2 + 0 + 1 + 1) / 2.0, 0, 1e-12);
    // buy-and-hold, stepped by the environment: 2 contracts bought at 101 (open 1 + slippage,
    // cash 100000 - 10100 - 5 = 89895), marked at each close, sold at 99 (open 8 - slippage)
    static const double bh[NB] = {100000, 100045, 100145, 99945, 99895, 99695, 99745, 99795, 99790};
    for (int i = 0; i < NB && r.n_curve == NB; ++i) {
        CHECK(r.curve_benchmark[i] == bh[i], "buy-and-hold[%d] = %.17g, expected %.17g", i, r.curve_benchmark[i],
              bh[i]);
        CHECK(r.curve_flat[i] == 100000.0, "flat[%d] = %.17g", i, r.curve_flat[i]);
    }
    // each summary is its curve's: total return last / first - 1, exactly
    CHECK(r.summary.buy_hold.total_return == 99790.0 / 100000.0 - 1.0, "buy-and-hold total %.17g",
          r.summary.buy_hold.total_return);
    CHECK(r.summary.strategy.total_return == 100190.0 / 100000.0 - 1.0, "strategy total %.17g",
          r.summary.strategy.total_return);
    CHECK(r.summary.flat.total_return == 0.0 && r.windows[0].buy_hold.total_return == r.summary.buy_hold.total_return,
          "flat total %.17g, window buy-and-hold %.17g", r.summary.flat.total_return,
          r.windows[0].buy_hold.total_return);
    // nothing ruined, no choice scored (forced), no decision after the span
    CHECK(!r.ruin.ruined && !r.buy_hold_ruin.ruined && r.n_ruined == 0 && r.n_decisions == 0 && r.n_fragile == 0,
          "ruin %d / %d, %lld decisions scored", r.ruin.ruined, r.buy_hold_ruin.ruined, (long long)r.n_decisions);
    for (int i = 0; i < NB && r.n_points == NB; ++i) CHECK(isnan(r.margin[i]), "margin[%d] = %g", i, r.margin[i]);
    CHECK(r.summary.annual.periods_per_year == 252.0, "ppy %g", r.summary.annual.periods_per_year);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

static void test_files(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    char dir[256], sub[300], path[400], line[512];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    snprintf(sub, sizeof sub, "%s/out/bt", dir);
    vp_backtest_info info = {"hand", "ck.safetensors", "bars.csv", "run:\n  seed: 1\n", &f.bars, NULL, 0.0, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, sub));
    // trades.csv: header, then the stop-loss exit of the third trade, times in ISO
    snprintf(path, sizeof path, "%s/trades.csv", sub);
    CHECK(read_line(path, 0, line, sizeof line) && strncmp(line, "window,side,size,entry_time", 27) == 0, "header %s",
          line);
    CHECK(read_line(path, 3, line, sizeof line) &&
              strcmp(line, "0,long,1,2020-01-06T05:00:00Z,5,100.25,2020-01-06T05:00:00Z,5,98,-117.5,30,0,0,stop\n") == 0,
          "trade row: %s", line);
    CHECK(read_line(path, 4, line, sizeof line) && strstr(line, ",take_profit\n") != NULL, "row: %s", line);
    CHECK(!read_line(path, 6, line, sizeof line), "a sixth trade row");
    // equity.csv: a row per bar stamped with its open time, marked at its close: equity,
    // position, drawdown, buy-and-hold, the choices and their margin (none: forced)
    snprintf(path, sizeof path, "%s/equity.csv", sub);
    CHECK(read_line(path, 0, line, sizeof line) &&
              strcmp(line, "bar_open_time,bar,window,equity,position,drawdown,buy_hold_equity,direction,size,"
                           "take_profit,stop_loss,q_margin\n") == 0,
          "equity header: %s", line);
    CHECK(read_line(path, 5, line, sizeof line) &&
              strcmp(line, "2020-01-06T04:00:00Z,4,0,100247.5,-2,0,99895,2,0,1,2,\n") == 0,
          "equity row: %s", line);
    CHECK(read_line(path, 9, line, sizeof line) && strstr(line, ",100190,0,") && strstr(line, ",99790,-1,-1,-1,-1,\n"),
          "last row: %s", line);
    // summary.json and report.html exist with their content; no temporary file is left
    snprintf(path, sizeof path, "%s/summary.json", sub);
    FILE* js = fopen(path, "r");
    char text[8192] = {0};
    CHECK(js && fread(text, 1, sizeof text - 1, js) > 0, "summary.json");
    if (js) fclose(js);
    CHECK(strncmp(text, "{\n\t\"status\":\t\"ok\",", 15) == 0 && strstr(text, "\"ruin\":\tnull") &&
              strstr(text, "\"next_decision\":\tnull") && strstr(text, "\"mode\":\t\"sequential\"") &&
              strstr(text, "\"n_trades\":\t5") &&
              strstr(text, "\"checkpoint\":\t\"ck.safetensors\"") && strstr(text, "\"periods_per_year\":\t252"),
          "summary.json content");
    snprintf(path, sizeof path, "%s/report.html", sub);
    CHECK(read_line(path, 0, line, sizeof line), "report.html");
    CHECK(tdu_count_entries(sub) == 4, "%d files in the output folder", tdu_count_entries(sub));
    tdu_rmtree(dir);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

static void test_bad_args(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    vp_rollout_result r;
    vp_rollout_data d = {&f.bars, f.atr, NULL, {3, 4}};
    CHECK_STATUS(vp_backtest_run(b, NULL, NULL, &d, &c, &r), VP_ERR_INVALID_ARG, "at least 2");
    d.span = (vp_span){0, NB + 1};
    CHECK_STATUS(vp_backtest_run(b, NULL, NULL, &d, &c, &r), VP_ERR_INVALID_ARG, "span");
    d.span = (vp_span){0, 4};
    c.n_windows = 4;
    CHECK_STATUS(vp_backtest_run(b, NULL, NULL, &d, &c, &r), VP_ERR_INVALID_ARG, "4 windows for a span of 3 steps");
    c.n_windows = 1;
    c.forced_actions = NULL;
    CHECK_STATUS(vp_backtest_run(b, NULL, NULL, &d, &c, &r), VP_ERR_INVALID_ARG, "model, params or features");
    // a bad bar inside the span is refused by the environment's market
    c = hand_cfg(&ACTS[0][0]);
    f.bars.low[2] = 103.5;
    d.span = (vp_span){0, NB};
    vp_clear_error();
    CHECK(vp_backtest_run(b, NULL, NULL, &d, &c, &r) != VP_OK && strstr(vp_last_error(), "bar") != NULL,
          "bad bar accepted: %s", vp_last_error());
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

/* The backtest's tear-sheet statistics on the same path: the summary's tear is vp_tear_compute
 * of the strategy curve's per-bar returns against buy-and-hold's (both worked out by hand),
 * under the backtest's factor. */
static void test_hand_path_tear(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    // the strategy's and buy-and-hold's equity at each close (test_hand_path and test_files)
    static const double eq[NB] = {100000, 100045, 100080, 100197.5, 100247.5, 100100, 100182.5, 100192.5, 100190};
    static const double bh[NB] = {100000, 100045, 100145, 99945, 99895, 99695, 99745, 99795, 99790};
    double re[NB - 1], rb[NB - 1];
    for (int i = 1; i < NB; ++i) re[i - 1] = eq[i] / eq[i - 1] - 1.0, rb[i - 1] = bh[i] / bh[i - 1] - 1.0;
    vp_tear want;
    CHECK_OK(vp_tear_compute(re, rb, NB - 1, &r.summary.annual, &want));
    const vp_tear* t = &r.summary.tear;
    CHECK(r.summary.has_tear == 1, "no tear statistics in the backtest's summary");
    CHECK(t->n_returns == NB - 1 && t->n_valid == NB - 1 && t->n_pairs == NB - 1, "counts %lld %lld %lld",
          (long long)t->n_returns, (long long)t->n_valid, (long long)t->n_pairs);
    CHECK(t->periods_per_year == 252.0, "factor %g", t->periods_per_year);
    const double got[9] = {t->skewness, t->excess_kurtosis, t->var_95, t->cvar_95, t->beta,
                           t->alpha, t->correlation, t->tracking_error, t->information_ratio};
    const double exp[9] = {want.skewness, want.excess_kurtosis, want.var_95, want.cvar_95, want.beta,
                           want.alpha, want.correlation, want.tracking_error, want.information_ratio};
    for (int k = 0; k < 9; ++k) {
        CHECK(isfinite(exp[k]), "figure %d undefined on the hand path", k);
        CHECK(got[k] == exp[k], "figure %d = %.17g, expected %.17g", k, got[k], exp[k]);
    }
    // the tail of the eight returns: the lowest is close 4 to 5 (-147.5 / 100247.5), the next
    // close 7 to 8 (-2.5 / 100192.5); VaR at position 7 x 0.05 = 0.35 between them, CVaR the
    // mean of the int(0.35) + 1 = 1 lowest
    const double lo1 = -147.5 / 100247.5, lo2 = -2.5 / 100192.5;
    CHECK_NEAR(t->cvar_95, lo1, 0, 1e-12);
    CHECK_NEAR(t->var_95, lo1 + 0.35 * (lo2 - lo1), 0, 1e-12);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_hand_path);
    RUN_TEST(test_files);
    RUN_TEST(test_bad_args);
    RUN_TEST(test_hand_path_tear);
    return vpt_finish();
}
