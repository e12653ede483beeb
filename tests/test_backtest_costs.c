/* A trade's costs and financing in a backtest, on the hand-checkable 9-bar path
 * (test_backtest_hand.h) with a spread of 2 ticks on mid bars and financing (a long pays 25 % a
 * year, a short receives 12.5 %, 256 bars a year, so every per-bar rate is a power of two and
 * every figure exact): each trade's costs are its commission, slippage and spread share times
 * contracts and point value, plus the financing it paid; its financing column is the net
 * financing; equity, buy-and-hold and trades.csv's rows by hand. Also a bad instrument refused
 * by the rollout with the environment's own message. */
#include "test_backtest_hand.h" /* first: its system headers' POSIX level */

#include "env/env_params.h"

/* Choices at bars 0..7 (2 contracts at size 1.0). A buy pays the open + 0.25 (half the spread)
 * + 0.25 (slippage), a sell gets the open - 0.5; a long is marked at close - 0.25, a short at
 * close + 0.25. Financing at a close: |position| x close x 50 x 2^-10 for a long, x -2^-11 for
 * a short. */
static const int32_t ACTS[NB - 1][4] = {
    {2, 3, 0, 0}, /* long 2: buy 2 at 101.25; financing 10150 / 1024 at bar 1's close */
    {2, 3, 0, 0}, /* hold; financing 10250 / 1024 at bar 2's close */
    {0, 3, 0, 0}, /* short 2: sell 4 at 101.75; a credit of 10050 / 2048 at bar 3's close */
    {1, 0, 0, 0}, /* flat: buy 2 at 101.00; nothing held at the close, no financing */
    {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0},
};

/* The path's settings: a spread of 2 ticks (0.5), financing at 256 bars a year. */
static vp_rollout_cfg cost_cfg(void) {
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    c.instrument.spread_ticks = 2.0;
    c.instrument.financing_long = 0.25;
    c.instrument.financing_short = -0.125;
    CHECK_OK(vp_annual_given(256.0, &c.annual));
    return c;
}

/* The run's equity, trades (costs = commission + slippage + spread share + financing paid) and
 * buy-and-hold, all by hand. */
static void test_trade_costs(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = cost_cfg();
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));

    // equity: cash 100000 - 10125 - 5 - 10150/1024 = 89860.087890625 marked at 101.25 (+10125),
    // less 10250/1024 marked at 102.25 (+10225); + 20350 - 10 + 10050/2048 marked at 100.75
    // (-10075); - 10100 - 5, flat from there
    const double f1 = 10150.0 / 1024.0, f2 = 10250.0 / 1024.0, f3 = -10050.0 / 2048.0;
    const double c1 = 100000.0 - 10125.0 - 5.0 - f1, c2 = c1 - f2, c3 = c2 + 20350.0 - 10.0 - f3, c4 = c3 - 10100.0 - 5.0;
    const double eq[NB] = {100000.0, c1 + 10125.0, c2 + 10225.0, c3 - 10075.0, c4, c4, c4, c4, c4};
    CHECK(c4 == 100089.9853515625, "final cash %.17g", c4);
    for (int i = 0; i < NB && r.n_points == NB; ++i)
        CHECK(r.equity[i] == eq[i], "equity[%d] = %.17g, expected %.17g", i, r.equity[i], eq[i]);

    // the trades: per fill, commission 2.5, slippage 0.25 and spread share 0.25 a contract (x 50)
    const double fill2 = 2 * 2.5 + 2 * 0.25 * 50.0 + 2 * 0.25 * 50.0; /* a fill of 2 contracts: 55 */
    CHECK(r.n_trades == 2, "%lld trades", (long long)r.n_trades);
    if (r.n_trades == 2) {
        const vp_rollout_trade* t = &r.trades[0];
        // long 2 from 101.25 to 101.75: +50, less two fills' commission (10), less financing
        CHECK(t->side == 1 && t->size == 2 && t->entry_bar == 1 && t->exit_bar == 3 && t->entry_price == 101.25 &&
                  t->exit_price == 101.75 && t->bars_held == 2 && t->reason == VP_EXIT_SIGNAL,
              "trade 0: side %d bars %lld..%lld prices %.17g %.17g", t->side, (long long)t->entry_bar,
              (long long)t->exit_bar, t->entry_price, t->exit_price);
        CHECK(t->financing == f1 + f2 && t->financing == 19.921875, "trade 0 financing %.17g", t->financing);
        CHECK(t->costs == 2 * fill2 + f1 + f2 && t->costs == 129.921875, "trade 0 costs %.17g", t->costs);
        CHECK(t->pnl == 50.0 - 10.0 - (f1 + f2) && t->pnl == 20.078125, "trade 0 pnl %.17g", t->pnl);
        // short 2 from 101.75 to 101.00: +75, less commission, plus the credit (not a cost)
        t = &r.trades[1];
        CHECK(t->side == -1 && t->size == 2 && t->entry_bar == 3 && t->exit_bar == 4 && t->entry_price == 101.75 &&
                  t->exit_price == 101.0 && t->bars_held == 1 && t->reason == VP_EXIT_SIGNAL,
              "trade 1: side %d bars %lld..%lld", t->side, (long long)t->entry_bar, (long long)t->exit_bar);
        CHECK(t->financing == f3 && t->financing == -4.9072265625, "trade 1 financing %.17g", t->financing);
        CHECK(t->costs == 2 * fill2 && t->costs == 110.0, "trade 1 costs %.17g", t->costs);
        CHECK(t->pnl == 75.0 - 10.0 - f3 && t->pnl == 69.9072265625, "trade 1 pnl %.17g", t->pnl);
        CHECK(r.trades[0].pnl + r.trades[1].pnl == c4 - 100000.0, "the trades' pnl against the equity change");
        CHECK(r.summary.trades.costs == 239.921875, "costs_ccy %.17g", r.summary.trades.costs);
    }

    // buy-and-hold: 2 bought at 101.25, financed at the closes of bars 1..7 (their sum 700), sold at 98.75
    CHECK(r.curve_benchmark[NB - 1] == 100000.0 - 250.0 - 10.0 - 2 * 700.0 * 50.0 / 1024.0 &&
              r.curve_benchmark[NB - 1] == 99671.640625,
          "buy-and-hold ends at %.17g", r.curve_benchmark[NB - 1]);

    // trades.csv: costs and the financing column, exact
    char dir[256], path[400], line[512];
    CHECK(tdu_mkdtemp(dir, sizeof dir) != NULL, "temporary folder");
    vp_backtest_info info = {"costs", NULL, NULL, NULL, &f.bars, NULL, 0.25, 0, 0.0};
    CHECK_OK(vp_backtest_write(&r, &info, dir));
    snprintf(path, sizeof path, "%s/trades.csv", dir);
    CHECK(read_line(path, 0, line, sizeof line) &&
              strcmp(line, "window,side,size,entry_time,entry_bar,entry_price,exit_time,exit_bar,exit_price,pnl,costs,"
                           "financing,bars_held,exit_reason\n") == 0,
          "header: %s", line);
    CHECK(read_line(path, 1, line, sizeof line) &&
              strcmp(line, "0,long,2,2020-01-06T01:00:00Z,1,101.25,2020-01-06T03:00:00Z,3,101.75,20.078125,129.921875,"
                           "19.921875,2,signal\n") == 0,
          "row 1: %s", line);
    CHECK(read_line(path, 2, line, sizeof line) &&
              strcmp(line, "0,short,2,2020-01-06T03:00:00Z,3,101.75,2020-01-06T04:00:00Z,4,101.00,69.9072265625,110,"
                           "-4.9072265625,1,signal\n") == 0,
          "row 2: %s", line);
    tdu_rmtree(dir);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

/* The text of the last error after its function's name ("vp_env_init: ") into buf[n]. */
static const char* after_fn(char* buf, size_t n) {
    const char* e = vp_last_error();
    const char* colon = strstr(e, ": ");
    snprintf(buf, n, "%s", colon ? colon + 2 : e);
    return buf;
}

/* A negative max_leverage: the rollout refuses it with the environment's own message, the one
 * vp_env_init (training) gives. */
static void test_bad_instrument(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = cost_cfg();
    c.instrument.max_leverage = -1.0;
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_STATUS(vp_rollout_run(b, NULL, &d, &c, &r), VP_ERR_INVALID_ARG,
                 "vp_rollout_run: instrument max_leverage -1 (finite, >= 0 required; 0: no limit)");
    char backtest[512], training[512];
    after_fn(backtest, sizeof backtest);
    CHECK(r.n_points == 0 && r.trades == NULL, "a refused run holds nothing");
    vp_rollout_result_free(&r);

    // the environment of a training run, on the same bars and instrument
    vp_env_market m;
    memset(&m, 0, sizeof m);
    vp_env_market_desc md = {NB, f.bars.open, f.bars.high, f.bars.low, f.bars.close, f.atr, 0, NB, NULL, NULL,
                             vp_instrument_spread(&c.instrument), 256.0};
    CHECK_OK(vp_env_market_init(&m, b, &md));
    vp_env e;
    memset(&e, 0, sizeof e);
    vp_env_config ec = vp_env_config_default();
    ec.episode_bars = 4;
    CHECK_STATUS(vp_env_init(&e, b, &m, &c.instrument, &ec, 1), VP_ERR_INVALID_ARG,
                 "vp_env_init: instrument max_leverage -1");
    CHECK(strcmp(after_fn(training, sizeof training), backtest) == 0, "backtest '%s', training '%s'", backtest,
          training);
    vp_env_free(&e);
    vp_env_market_free(&m);

    // a financing rate outside [-1, 1]: the same check
    c.instrument.max_leverage = 0.0;
    c.annual.periods_per_year = 256.0;
    c.instrument.financing_long = 2.0;
    CHECK_STATUS(vp_rollout_run(b, NULL, &d, &c, &r), VP_ERR_INVALID_ARG,
                 "vp_rollout_run: instrument financing_long 2 (a yearly rate in [-1, 1] required)");
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_trade_costs);
    RUN_TEST(test_bad_instrument);
    return vpt_finish();
}
