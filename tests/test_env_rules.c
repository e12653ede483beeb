/* The environment's trading rules on hand-written bars, every number computed by hand:
 * fills at the next open with slippage and commission, stops and take-profits (slippage on
 * both), gaps, flips, zero-size actions, window-end liquidation, ruin, reward arithmetic and
 * the portfolio vector; no spread, financing or leverage limit (test_env_costs.c has those).
 * Each market's span holds exactly one episode, so the (random) start is bar 0. */
#include "vp_test.h"
#include "test_env_hand.h"

/* Reward of an equity change under scale `scale` and initial equity 100000, no penalties. */
static double rew(double eq, double eq_prev, double scale) { return (eq - eq_prev) / 100000.0 * scale; }

/* tick 0.25, $50 a point, $2.5 a side, 1 tick slippage, max 4 contracts, $100k; mid bars, no
 * spread, no financing, no leverage limit. */
static vp_instrument inst4(void) {
    vp_instrument i = {0.25, 50.0, 2.5, 1.0, 4, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, 0.0};
    return i;
}

/* 5-bar episodes, ruin at 50 %, reward scale 100, no penalties. */
static vp_env_config cfg5(void) {
    vp_env_config c = {5, 0.5, 100.0, 0.0, 0.0, 7};
    return c;
}

#define ROWS_PAD {100, 100, 100, 100, 2}, {100, 100, 100, 100, 2}, {100, 100, 100, 100, 2}, {100, 100, 100, 100, 2}

static void test_long_hits_stop(void) {
    const row5 rows[] = {{100, 101, 99, 100, 2}, {100.5, 101, 99.5, 100, 2}, {99.5, 100, 98, 98.5, 2}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    const vp_env_state* s = &x.st.s;
    CHECK(s->t[0] == 0 && s->window_end[0] == 5, "start t %d wend %d", s->t[0], s->window_end[0]);
    /* long 2 (size 0.5 of 4), no take-profit, stop 1 ATR: buy 2 at 100.5 + 0.25 */
    hx_step(&x, LONG, 1, 0, 1);
    CHECK(s->position[0] == 2 && s->entry[0] == 100.75, "pos %d entry %g", s->position[0], s->entry[0]);
    CHECK(s->stop_loss[0] == 98.75 && s->take_profit[0] == 0.0, "sl %g tp %g", s->stop_loss[0], s->take_profit[0]);
    CHECK(s->cash[0] == 100000.0 - 2 * 100.75 * 50 - 2 * 2.5, "cash %.4f", s->cash[0]);
    CHECK(s->equity[0] == 89920.0 + 2 * 100.0 * 50, "equity %.4f", s->equity[0]);
    CHECK_NEAR(x.reward, rew(99920, 100000, 100), 1e-7, 1e-6);
    CHECK(x.done == 0.0f && x.obs == 1 && s->bars_held[0] == 1, "done %g obs %d held %d", x.done, x.obs, s->bars_held[0]);
    /* holding: bar 2 trades down through 98.75, the stop sells 2 at 98.75 - 0.25 */
    hx_step(&x, LONG, 1, 0, 1);
    CHECK(s->position[0] == 0 && s->entry[0] == 0 && s->stop_loss[0] == 0 && s->bars_held[0] == 0, "flat after stop");
    CHECK(s->cash[0] == 89920.0 + 2 * 98.5 * 50 - 5.0, "cash %.4f", s->cash[0]);
    CHECK(s->equity[0] == 99765.0, "equity %.4f", s->equity[0]);
    CHECK_NEAR(x.reward, rew(99765, 99920, 100), 1e-7, 1e-6);
    CHECK(x.pf[0] == 0.0f && x.pf[4] == 0.0f && x.pf[5] == 0.0f, "flat portfolio");
    hx_free(&x);
}

static void test_short_hits_take_profit(void) {
    const row5 rows[] = {{100, 101, 99, 100, 2}, {100, 100.5, 99, 99.5, 2}, {99, 99.5, 95, 96, 2}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    const vp_env_state* s = &x.st.s;
    /* short 4, take-profit 1 ATR, no stop: sell 4 at 100 - 0.25 */
    hx_step(&x, SHORT, 3, 1, 0);
    CHECK(s->position[0] == -4 && s->entry[0] == 99.75 && s->take_profit[0] == 97.75 && s->stop_loss[0] == 0,
          "pos %d entry %g tp %g sl %g", s->position[0], s->entry[0], s->take_profit[0], s->stop_loss[0]);
    CHECK(s->cash[0] == 119940.0 && s->equity[0] == 100040.0, "cash %.4f equity %.4f", s->cash[0], s->equity[0]);
    CHECK_NEAR(x.reward, rew(100040, 100000, 100), 1e-7, 1e-6);
    /* bar 2 opens at 99 and trades to 95: the limit buys 4 at 97.75 plus a tick of slippage */
    hx_step(&x, SHORT, 3, 1, 0);
    CHECK(s->position[0] == 0 && s->take_profit[0] == 0, "flat after take-profit");
    CHECK(s->cash[0] == 119940.0 - 4 * 98.0 * 50 - 10.0 && s->equity[0] == 100330.0, "cash %.4f equity %.4f",
          s->cash[0], s->equity[0]);
    CHECK_NEAR(x.reward, rew(100330, 100040, 100), 1e-7, 1e-6);
    hx_free(&x);
}

static void test_both_touched_stop_first(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {100, 103, 98, 101, 2}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    const vp_env_state* s = &x.st.s;
    /* long 1 (size 0.25 of 4), both levels 1 ATR: entry 100.25, tp 102.25, sl 98.25 */
    hx_step(&x, LONG, 0, 1, 1);
    CHECK(s->position[0] == 1 && s->take_profit[0] == 102.25 && s->stop_loss[0] == 98.25, "pos %d tp %g sl %g",
          s->position[0], s->take_profit[0], s->stop_loss[0]);
    CHECK(s->cash[0] == 94985.0, "cash %.4f", s->cash[0]);
    /* bar 2 spans 98 .. 103: both levels touched, the stop fills (98.25 - 0.25), not the target */
    hx_step(&x, LONG, 0, 1, 1);
    CHECK(s->position[0] == 0, "flat");
    CHECK(s->cash[0] == 94985.0 + 98.0 * 50 - 2.5 && s->equity[0] == 99882.5, "cash %.4f equity %.4f", s->cash[0],
          s->equity[0]);
    hx_free(&x);
}

static void test_gap_through_stop(void) {
    /* long: bar 2 opens at 97, under the stop at 98.25: the stop fills at the open less slippage */
    const row5 up[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {97, 97.5, 96, 97, 2}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, up, 7, inst4(), cfg5())) return;
    hx_step(&x, LONG, 0, 0, 1);
    hx_step(&x, LONG, 0, 0, 1);
    CHECK(x.st.s.position[0] == 0 && x.st.s.cash[0] == 94985.0 + 96.75 * 50 - 2.5, "long gap: pos %d cash %.4f",
          x.st.s.position[0], x.st.s.cash[0]);
    hx_free(&x);
    /* short: entry 99.75, stop 101.75; bar 2 opens at 103: buys at 103 + 0.25 */
    const row5 dn[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {103, 104, 102.5, 103.5, 2}, ROWS_PAD};
    if (!hx_init(&x, dn, 7, inst4(), cfg5())) return;
    hx_step(&x, SHORT, 0, 0, 1);
    CHECK(x.st.s.stop_loss[0] == 101.75 && x.st.s.cash[0] == 100000.0 + 99.75 * 50 - 2.5, "short entry");
    hx_step(&x, SHORT, 0, 0, 1);
    CHECK(x.st.s.position[0] == 0 && x.st.s.cash[0] == 104985.0 - 103.25 * 50 - 2.5, "short gap: pos %d cash %.4f",
          x.st.s.position[0], x.st.s.cash[0]);
    hx_free(&x);
}

static void test_flip_long_to_short(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {101, 101.5, 100.5, 101, 3}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    const vp_env_state* s = &x.st.s;
    hx_step(&x, LONG, 1, 0, 0);
    CHECK(s->cash[0] == 89970.0 && s->equity[0] == 99970.0, "long 2: cash %.4f equity %.4f", s->cash[0], s->equity[0]);
    /* long 2 -> short 2: sells 4 at 101 - 0.25, commission on all 4 (both legs); new levels from ATR of bar 1 */
    hx_step(&x, SHORT, 1, 2, 1);
    CHECK(s->position[0] == -2 && s->entry[0] == 100.75 && s->bars_held[0] == 1, "pos %d entry %g held %d",
          s->position[0], s->entry[0], s->bars_held[0]);
    CHECK(s->cash[0] == 89970.0 + 4 * 100.75 * 50 - 4 * 2.5, "cash %.4f", s->cash[0]);
    CHECK(s->equity[0] == 100010.0, "equity %.4f", s->equity[0]);
    CHECK(s->take_profit[0] == 96.75 && s->stop_loss[0] == 102.75, "tp %g sl %g", s->take_profit[0], s->stop_loss[0]);
    CHECK_NEAR(x.reward, rew(100010, 99970, 100), 1e-7, 1e-6);
    hx_free(&x);
}

static void test_zero_size_and_flat(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {101, 101.5, 100.5, 101, 2}, ROWS_PAD};
    hx x;
    /* max_position 1: size 0.25 rounds to 0 contracts, so "long 0.25" stays flat and pays nothing */
    vp_instrument one = inst4();
    one.max_position = 1;
    if (!hx_init(&x, rows, 7, one, cfg5())) return;
    hx_step(&x, LONG, 0, 1, 1);
    CHECK(x.st.s.position[0] == 0 && x.st.s.cash[0] == 100000.0 && x.reward == 0.0f, "zero size: pos %d cash %.4f",
          x.st.s.position[0], x.st.s.cash[0]);
    CHECK(x.pf[7] == 0.25f && x.pf[0] == 0.0f, "last size %g", x.pf[7]);
    /* size 0.5 of 1 rounds half up to 1 contract */
    hx_step(&x, LONG, 1, 0, 0);
    CHECK(x.st.s.position[0] == 1, "pos %d", x.st.s.position[0]);
    hx_free(&x);
    /* direction flat closes a long of 2 at the open less slippage */
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    hx_step(&x, LONG, 1, 0, 0);
    hx_step(&x, FLAT, 3, 2, 2);
    CHECK(x.st.s.position[0] == 0 && x.st.s.cash[0] == 89970.0 + 2 * 100.75 * 50 - 5.0, "flat: pos %d cash %.4f",
          x.st.s.position[0], x.st.s.cash[0]);
    CHECK(x.pf[7] == 0.0f && x.st.s.take_profit[0] == 0 && x.st.s.stop_loss[0] == 0, "flat state");
    hx_free(&x);
}

static void test_window_end_liquidation(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {101, 101.5, 100.5, 101, 2},
                         {102, 102.5, 101.5, 102, 2}, {99, 99, 99, 99, 2}};
    vp_env_config c = cfg5();
    c.episode_bars = 3; /* steps from bars 0, 1, 2; bar 3's open closes the episode */
    hx x;
    if (!hx_init(&x, rows, 5, inst4(), c)) return;
    hx_step(&x, LONG, 1, 0, 0);
    hx_step(&x, LONG, 1, 0, 0);
    CHECK(x.done == 0.0f && x.st.s.equity[0] == 89970.0 + 2 * 101.0 * 50, "before the end");
    /* the last step ignores the action: sells 2 at 102 - 0.25, commission, done, restart */
    double eq_prev = x.st.s.equity[0];
    hx_step(&x, LONG, 3, 0, 0);
    double eq_end = 89970.0 + 2 * 101.75 * 50 - 5.0;
    CHECK(x.done == 1.0f, "done %g", x.done);
    CHECK_NEAR(x.reward, rew(eq_end, eq_prev, 100), 1e-7, 1e-6);
    const vp_env_state* s = &x.st.s;
    CHECK(s->episode[0] == 1 && s->t[0] == 0 && s->window_end[0] == 3 && s->position[0] == 0 &&
              s->cash[0] == 100000.0 && s->equity[0] == 100000.0 && s->peak[0] == 100000.0,
          "restart: episode %u t %d pos %d cash %.2f", s->episode[0], s->t[0], s->position[0], s->cash[0]);
    const float fresh[8] = {0, 0, 0, 0, 0, 0, 1, 0};
    CHECK(x.obs == 0, "obs %d", x.obs);
    for (int k = 0; k < 8; ++k) CHECK(x.pf[k] == fresh[k], "pf[%d] = %g after restart", k, x.pf[k]);
    hx_free(&x);
}

static void test_ruin(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100, 99, 99, 2}, {99, 99, 93, 93.5, 2}, ROWS_PAD};
    vp_instrument big = inst4();
    big.max_position = 10;
    big.multiplier = 1000.0;
    hx x;
    if (!hx_init(&x, rows, 7, big, cfg5())) return;
    /* long 10 at 100.25 ($1000 a point): equity 87475 after bar 1 */
    hx_step(&x, LONG, 3, 0, 0);
    CHECK(x.st.s.cash[0] == -902525.0 && x.st.s.equity[0] == 87475.0 && x.done == 0.0f, "equity %.2f",
          x.st.s.equity[0]);
    /* bar 2 closes at 93.5: equity 32475 < 0.5 x 100000 ends the episode; no closing fill */
    hx_step(&x, LONG, 3, 0, 0);
    CHECK(x.done == 1.0f, "ruin not flagged");
    CHECK_NEAR(x.reward, rew(32475.0, 87475.0, 100), 1e-6, 1e-6);
    CHECK(x.st.s.episode[0] == 1 && x.st.s.position[0] == 0 && x.st.s.equity[0] == 100000.0, "restart after ruin");
    hx_free(&x);
}

static void test_reward_penalties(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {101, 101.5, 100.5, 101, 2},
                         {100.5, 101, 100, 100.5, 2}, ROWS_PAD};
    vp_env_config c = cfg5();
    c.reward_scale = 10.0, c.drawdown_penalty = 0.5, c.turnover_penalty = 0.01;
    hx x;
    if (!hx_init(&x, rows, 8, inst4(), c)) return;
    /* buy 2 of max 4: equity 99970, drawdown 30/100000, turnover 0.5 */
    hx_step(&x, LONG, 1, 0, 0);
    CHECK_NEAR(x.reward, -30.0 / 1e5 * 10 - 0.5 * (30.0 / 1e5) - 0.01 * 0.5, 1e-8, 1e-6);
    CHECK_NEAR(x.pf[3], 30.0 / 1e5, 1e-9, 1e-6);
    /* hold to a new peak 100070: no drawdown, no turnover */
    hx_step(&x, LONG, 1, 0, 0);
    CHECK_NEAR(x.reward, 100.0 / 1e5 * 10, 1e-8, 1e-6);
    CHECK(x.st.s.peak[0] == 100070.0 && x.pf[3] == 0.0f, "peak %.2f", x.st.s.peak[0]);
    /* sell 2 at 100.25: equity 99990, drawdown 80/100070, turnover 0.5 */
    hx_step(&x, FLAT, 0, 0, 0);
    CHECK(x.st.s.equity[0] == 99990.0, "equity %.2f", x.st.s.equity[0]);
    CHECK_NEAR(x.reward, -80.0 / 1e5 * 10 - 0.5 * (80.0 / 100070.0) - 0.01 * 0.5, 1e-8, 1e-6);
    hx_free(&x);
}

static void test_portfolio_vector(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99, 99.5, 2.5}, {100, 101, 99.8, 100.5, 2},
                         ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 7, inst4(), cfg5())) return;
    /* the first observation: flat, whole window left */
    CHECK(x.st.s.last_size[0] == 0.0f && x.st.s.t[0] == 0, "fresh state");
    /* short 4, take-profit 2 ATR (95.75), stop 1 ATR (101.75) from entry 99.75 with ATR 2 */
    hx_step(&x, SHORT, 3, 2, 1);
    const float want1[8] = {-1.0f, 0.1f, 0.2f, 0.0f, 1.5f, 0.9f, 0.8f, -1.0f};
    for (int k = 0; k < 8; ++k) CHECK_NEAR(x.pf[k], want1[k], 1e-7, 1e-6);
    /* bar 2 closes at 100.5 (ATR 2), inside both levels: drawdown 200/100040 */
    hx_step(&x, SHORT, 3, 2, 1);
    const double want2[8] = {-1.0, -(100.5 - 99.75) / 2, 0.4, 200.0 / 100040.0, (100.5 - 95.75) / 2,
                             (101.75 - 100.5) / 2, 0.6, -1.0};
    for (int k = 0; k < 8; ++k) CHECK_NEAR(x.pf[k], want2[k], 1e-7, 1e-6);
    CHECK(x.st.s.equity[0] == 99840.0 && x.st.s.bars_held[0] == 2, "equity %.2f held %d", x.st.s.equity[0],
          x.st.s.bars_held[0]);
    hx_free(&x);
}

static void test_add_and_reduce(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {101, 101.5, 100.5, 101, 2},
                         {102, 102.5, 101.5, 102, 2}, ROWS_PAD};
    hx x;
    if (!hx_init(&x, rows, 8, inst4(), cfg5())) return;
    const vp_env_state* s = &x.st.s;
    hx_step(&x, LONG, 0, 1, 1); /* 1 at 100.25: tp 102.25, sl 98.25 */
    /* add 2 at 101.25: average entry (100.25 + 2 x 101.25) / 3; the levels stay */
    hx_step(&x, LONG, 2, 2, 2);
    CHECK(s->position[0] == 3 && s->entry[0] == (100.25 + 2 * 101.25) / 3.0, "entry %.6f", s->entry[0]);
    CHECK(s->take_profit[0] == 102.25 && s->stop_loss[0] == 98.25 && s->bars_held[0] == 2, "levels kept");
    /* reduce to 1 at 101.75: entry and levels unchanged; bar 3's high 102.5 then takes profit at
     * 102.25 less a tick of slippage */
    hx_step(&x, LONG, 0, 0, 0);
    CHECK(s->position[0] == 0, "take-profit after reducing: pos %d", s->position[0]);
    double cash = 100000.0 - 100.25 * 50 - 2.5 - 2 * 101.25 * 50 - 5.0 + 2 * 101.75 * 50 - 5.0 + 102.0 * 50 - 2.5;
    CHECK(s->cash[0] == cash, "cash %.4f vs %.4f", s->cash[0], cash);
    hx_free(&x);
}

int main(void) {
    RUN_TEST(test_long_hits_stop);
    RUN_TEST(test_short_hits_take_profit);
    RUN_TEST(test_both_touched_stop_first);
    RUN_TEST(test_gap_through_stop);
    RUN_TEST(test_flip_long_to_short);
    RUN_TEST(test_zero_size_and_flat);
    RUN_TEST(test_window_end_liquidation);
    RUN_TEST(test_ruin);
    RUN_TEST(test_reward_penalties);
    RUN_TEST(test_portfolio_vector);
    RUN_TEST(test_add_and_reduce);
    return vpt_finish();
}
