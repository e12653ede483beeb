/* The backtest on a hand-checkable 9-bar path with forced actions: every fill, cost, trade
 * row and equity value worked out by hand below; the files it writes; bad arguments. */
#include "test_data_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"

enum { NB = 9 };

/* Bars on the 0.25 tick grid: open, high, low, close. */
static const double BARS[NB][4] = {
    {100.00, 101.00, 99.00, 100.50}, {100.75, 102.00, 100.50, 101.50}, {101.50, 103.00, 101.00, 102.50},
    {102.25, 102.50, 100.00, 100.50}, {100.50, 101.00, 99.50, 100.00}, {100.00, 100.25, 97.00, 98.00},
    {98.25, 99.00, 95.50, 98.50},     {98.50, 99.50, 98.00, 99.00},    {99.25, 99.50, 98.50, 99.00},
};

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

/* The bars, ATR 1 everywhere, hourly times from 2020-01-06. */
typedef struct fixture {
    vp_bars bars;
    double atr[NB];
} fixture;

static void fixture_init(fixture* f) {
    CHECK_OK(vp_bars_alloc(&f->bars, NB));
    for (int i = 0; i < NB; ++i) {
        f->bars.time_ms[i] = 1578268800000LL + (int64_t)i * 3600000LL;
        f->bars.open[i] = BARS[i][0], f->bars.high[i] = BARS[i][1];
        f->bars.low[i] = BARS[i][2], f->bars.close[i] = BARS[i][3];
        f->bars.volume[i] = 100.0;
        f->atr[i] = 1.0;
    }
}

/* E-mini-like: tick 0.25, $50 a point, $2.5 a contract, 1 tick of slippage, 2 contracts. */
static vp_rollout_cfg hand_cfg(void) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument_emini();
    c.instrument.max_position = 2;
    c.episode_bars = 16;
    c.forced_actions = &ACTS[0][0];
    return c;
}

static void test_hand_path(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg();
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
    // buy-and-hold: 2 contracts bought at 101 (open 1 + slippage), sold at 99 (open 8 - slippage)
    CHECK_NEAR(r.curve_benchmark[NB - 1], 100000.0 + 2 * (99.0 - 101.0) * 50.0 - 4 * 2.5, 1e-9, 0);
    CHECK(r.summary.annual.periods_per_year == 252.0, "ppy %g", r.summary.annual.periods_per_year);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

/* Reads line `k` (0 = header) of a file into buf; 1 when found. */
static int read_line(const char* path, int k, char* buf, size_t n) {
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    int ok = 0;
    for (int i = 0; i <= k && fgets(buf, (int)n, f); ++i) ok = i == k;
    fclose(f);
    return ok;
}

static void test_files(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg();
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
              strcmp(line, "0,long,1,2020-01-06T05:00:00Z,5,100.25,2020-01-06T05:00:00Z,5,98,-117.5,30,0,stop\n") == 0,
          "trade row: %s", line);
    CHECK(read_line(path, 4, line, sizeof line) && strstr(line, ",take_profit\n") != NULL, "row: %s", line);
    CHECK(!read_line(path, 6, line, sizeof line), "a sixth trade row");
    // equity.csv: a row per bar with equity, position, drawdown and the choices
    snprintf(path, sizeof path, "%s/equity.csv", sub);
    CHECK(read_line(path, 5, line, sizeof line) &&
              strcmp(line, "2020-01-06T04:00:00Z,4,0,100247.5,-2,0,99895,2,0,1,2\n") == 0,
          "equity row: %s", line);
    CHECK(read_line(path, 9, line, sizeof line) && strstr(line, ",100190,0,") && strstr(line, ",-1,-1,-1,-1\n"),
          "last row: %s", line);
    // summary.json and report.html exist with their content; no temporary file is left
    snprintf(path, sizeof path, "%s/summary.json", sub);
    FILE* js = fopen(path, "r");
    char text[8192] = {0};
    CHECK(js && fread(text, 1, sizeof text - 1, js) > 0, "summary.json");
    if (js) fclose(js);
    CHECK(strstr(text, "\"mode\":\t\"sequential\"") && strstr(text, "\"n_trades\":\t5") &&
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

/* A small account wiped out: long 2 contracts at 101, the close of bar 2 at 90 marks the
 * equity at 1000 - 10100 - 5 + 9000 = -105; the window stops there with a ruin exit (and
 * buy-and-hold, ruined the same way, does not break the metrics). */
static void test_ruin(void) {
    fixture f;
    fixture_init(&f);
    f.bars.low[2] = 89.0, f.bars.close[2] = 90.0;
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg();
    int32_t hold[NB - 1][4];
    for (int i = 0; i < NB - 1; ++i) hold[i][0] = 2, hold[i][1] = 3, hold[i][2] = 0, hold[i][3] = 0;
    c.forced_actions = &hold[0][0];
    c.instrument.initial_equity = 1000.0;
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    CHECK(r.n_points == 3 && r.windows[0].ruined && r.windows[0].last == 2, "%lld points, ruined %d",
          (long long)r.n_points, r.windows[0].ruined);
    CHECK(r.n_points == 3 && r.equity[1] == 1000.0 - 10105.0 + 10150.0 && r.equity[2] == -105.0, "equity %.17g",
          r.n_points == 3 ? r.equity[2] : 0.0);
    CHECK(r.n_trades == 1 && r.trades[0].reason == VP_EXIT_RUIN && r.trades[0].exit_bar == 2 &&
              r.trades[0].exit_price == 90.0 && r.trades[0].pnl == -1105.0,
          "ruin trade: %lld trades", (long long)r.n_trades);
    // the curve holds the ruined equity after the stop; the metrics see the loss
    CHECK(r.n_curve == NB && r.curve_equity[NB - 1] == -105.0 && r.curve_position[NB - 1] == 0.0, "curve end %.17g",
          r.curve_equity[NB - 1]);
    CHECK(r.summary.strategy.total_return < -1.0, "total return %g", r.summary.strategy.total_return);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

static void test_bad_args(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg();
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
    c = hand_cfg();
    f.bars.low[2] = 103.5;
    d.span = (vp_span){0, NB};
    vp_clear_error();
    CHECK(vp_backtest_run(b, NULL, NULL, &d, &c, &r) != VP_OK && strstr(vp_last_error(), "bar") != NULL,
          "bad bar accepted: %s", vp_last_error());
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_hand_path);
    RUN_TEST(test_files);
    RUN_TEST(test_ruin);
    RUN_TEST(test_bad_args);
    return vpt_finish();
}
