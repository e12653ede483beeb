/* The environment's costs beyond commission, on hand-written bars with every number worked
 * out by hand: the bid-ask spread on mid, bid and ask bars (a buy, a sell, a stop and a
 * take-profit, each triggered against the side of the book it trades on, and the marking),
 * slippage on take-profit fills, and financing of long and short positions (cost and credit)
 * over several bars with exact cash. Each step's fill record is checked too. Tick 0.25, $50 a
 * point, $2.5 a contract, 1 tick (0.25) of slippage, max 4 contracts, $100k. */
#include "vp_test.h"
#include "test_env_hand.h"

/* The instrument of these tests on bars of side `side`, spread_ticks `ticks`, no financing
 * and no leverage limit. */
static vp_instrument inst_side(vp_price_side side, double ticks) {
    vp_instrument i = {0.25, 50.0, 2.5, 1.0, 4, 100000.0, ticks, side, 0.0, 0.0, 0.0};
    return i;
}

/* 5-bar episodes, ruin at 50 %, reward scale 100, no penalties. */
static vp_env_config cfg_n(int episode_bars) {
    vp_env_config c = {episode_bars, 0.5, 100.0, 0.0, 0.0, 7};
    return c;
}

/* Checks the market order of the last step: contracts, price, cost per contract, cut. */
#define CHECK_ORDER(x, q, px, sl)                                                                        \
    CHECK((x).fill.qty[0] == (q) && (x).fill.price[0] == (px) && (x).fill.slip[0] == (sl),               \
          "order: qty %d price %.17g slip %.17g (expected %d, %.17g, %.17g)", (x).fill.qty[0],            \
          (x).fill.price[0], (x).fill.slip[0], (int)(q), (double)(px), (double)(sl))

/* Checks the resting fill of the last step: contracts, kind, price, cost per contract. */
#define CHECK_EXIT(x, q, k, px, sl)                                                                      \
    CHECK((x).fill.qty[1] == (q) && (x).fill.kind == (k) && (x).fill.price[1] == (px) &&                 \
              (x).fill.slip[1] == (sl),                                                                  \
          "exit: qty %d kind %d price %.17g slip %.17g (expected %d, %d, %.17g, %.17g)", (x).fill.qty[1], \
          (x).fill.kind, (x).fill.price[1], (x).fill.slip[1], (int)(q), (int)(k), (double)(px), (double)(sl))

/* Checks cash and equity after the last step. */
#define CHECK_MONEY(x, want_cash, want_eq)                                                                  \
    CHECK((x).st.s.cash[0] == (want_cash) && (x).st.s.equity[0] == (want_eq),                                 \
          "cash %.17g equity %.17g (expected %.17g, %.17g)", (x).st.s.cash[0], (x).st.s.equity[0],             \
          (double)(want_cash), (double)(want_eq))

#define FLAT_BARS(p) {p, p, p, p, 2}, {p, p, p, p, 2}

/* Mid bars, a spread per bar from the market's column: a buy pays half the spread of its bar
 * above the bar price, a sell half below; a long's take-profit is tested against the high less
 * half the spread, a short's stop against the high plus half. */
static void test_mid_bars(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2},   {100, 103, 99.5, 101, 2}, {101.5, 103.25, 101, 102, 2},
                         {102, 102.5, 101.5, 102, 2}, {102.5, 103, 102, 102.5, 2}, FLAT_BARS(102.5)};
    const double spread[] = {0.5, 1.0, 0.5, 1.0, 0.5, 0.5, 0.5};
    hx x;
    if (!hx_init_market(&x, rows, 7, spread, 0.0, 0.0, inst_side(VP_PRICE_MID, 0.0), cfg_n(5))) return;
    const vp_env_state* s = &x.st.s;
    /* long 2, take-profit 1 ATR: buy at 100 + 0.25 slippage + 0.5 (half of bar 1's spread of 1) */
    hx_step_fill(&x, LONG, 1, 1, 0);
    CHECK_ORDER(x, 2, 100.75, 0.75);
    CHECK(s->entry[0] == 100.75 && s->take_profit[0] == 102.75 && s->position[0] == 2, "entry %g tp %g pos %d",
          s->entry[0], s->take_profit[0], s->position[0]);
    /* bar 1's high 103 passes the take-profit, but the sell side's high (103 - 0.5) does not */
    CHECK(x.fill.qty[1] == 0 && x.fill.kind == VP_FILL_NONE && x.fill.cut == 0 && x.fill.financing == 0.0,
          "no exit, no cut, no financing");
    /* marked at the sell side of the close: 101 - 0.5 */
    CHECK_MONEY(x, 100000.0 - 2 * 100.75 * 50 - 5.0, 89920.0 + 2 * 100.5 * 50);
    CHECK_NEAR(x.reward, (99970.0 - 100000.0) / 100000.0 * 100, 1e-7, 1e-6);
    /* the portfolio reads the same price: (100.5 - 100.75) / 2 and (102.75 - 100.5) / 2 */
    CHECK(x.pf[1] == -0.125f && x.pf[4] == 1.125f && x.pf[5] == 0.0f, "pf %g %g %g", x.pf[1], x.pf[4], x.pf[5]);
    /* bar 2 (spread 0.5): sell-side high 103.25 - 0.25 reaches 102.75; sold at 102.75 - 0.25 */
    hx_step_fill(&x, LONG, 1, 1, 0);
    CHECK_ORDER(x, 0, 0.0, 0.0);
    CHECK_EXIT(x, -2, VP_FILL_TAKE_PROFIT, 102.5, 0.5);
    CHECK_MONEY(x, 89920.0 + 2 * 102.5 * 50 - 5.0, 100165.0);
    /* short 1, stop 1 ATR: sell at 102 - 0.25 - 0.5 (bar 3's spread 1); stop 101.25 + 2 */
    hx_step_fill(&x, SHORT, 0, 0, 1);
    CHECK_ORDER(x, -1, 101.25, 0.75);
    CHECK(s->stop_loss[0] == 103.25 && x.fill.qty[1] == 0, "sl %g, buy-side high 103 < 103.25", s->stop_loss[0]);
    /* a short is marked at the buy side of the close, 102 + 0.5 */
    CHECK_MONEY(x, 100165.0 + 101.25 * 50 - 2.5, 105225.0 - 102.5 * 50);
    CHECK(x.pf[1] == -0.625f && x.pf[5] == 0.375f, "pf %g %g", x.pf[1], x.pf[5]);
    /* bar 4's high 103 is below the stop, its buy side 103 + 0.25 touches it: bought at 103.25 + 0.25 */
    hx_step_fill(&x, SHORT, 0, 0, 1);
    CHECK_EXIT(x, 1, VP_FILL_STOP, 103.5, 0.5);
    CHECK_MONEY(x, 105225.0 - 103.5 * 50 - 2.5, 100047.5);
    hx_free(&x);
}

/* Bid bars, the spread of 4 ticks from the instrument: a buy pays the whole spread, a sell
 * nothing; a short's take-profit is a buy, tested against the low plus the spread. */
static void test_bid_bars(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 101, 99.5, 100.5, 2}, {100, 100.5, 99, 99.5, 2},
                         {99.5, 100, 97, 98, 2},   {98, 98.5, 96, 96.5, 2},   FLAT_BARS(96.5)};
    vp_instrument in = inst_side(VP_PRICE_BID, 4.0);
    hx x;
    if (!hx_init_market(&x, rows, 7, NULL, vp_instrument_spread(&in), 0.0, in, cfg_n(5))) return;
    CHECK(x.m.bars[3].spread == 1.0, "bar spread %g from 4 ticks of 0.25", x.m.bars[3].spread);
    const vp_env_state* s = &x.st.s;
    /* long 1, stop 1 ATR: buy at 100 + 0.25 + 1; stop 99.25; bar 1's low 99.5 (a bid) is above it */
    hx_step_fill(&x, LONG, 0, 0, 1);
    CHECK_ORDER(x, 1, 101.25, 1.25);
    CHECK(s->stop_loss[0] == 99.25 && x.fill.qty[1] == 0, "sl %g", s->stop_loss[0]);
    /* marked at the bid close 100.5 */
    CHECK_MONEY(x, 94935.0, 94935.0 + 100.5 * 50);
    /* bar 2's low 99 touches the stop: sold at the level less slippage, no spread on the bid side */
    hx_step_fill(&x, LONG, 0, 0, 1);
    CHECK_EXIT(x, -1, VP_FILL_STOP, 99.0, 0.25);
    CHECK_MONEY(x, 94935.0 + 99.0 * 50 - 2.5, 99882.5);
    /* short 1, take-profit 1 ATR: sell at 99.5 - 0.25; take-profit 97.25; bar 3's low 97 is a bid,
     * its ask 98 is above the take-profit: no fill */
    hx_step_fill(&x, SHORT, 0, 1, 0);
    CHECK_ORDER(x, -1, 99.25, 0.25);
    CHECK(s->take_profit[0] == 97.25 && x.fill.qty[1] == 0, "tp %g", s->take_profit[0]);
    /* marked at the ask close 98 + 1 */
    CHECK_MONEY(x, 104842.5, 104842.5 - 99.0 * 50);
    /* bar 4's ask low 96 + 1 reaches 97.25: bought at 97.25 + 0.25 */
    hx_step_fill(&x, SHORT, 0, 1, 0);
    CHECK_EXIT(x, 1, VP_FILL_TAKE_PROFIT, 97.5, 1.25);
    CHECK_MONEY(x, 104842.5 - 97.5 * 50 - 2.5, 99965.0);
    hx_free(&x);
}

/* Ask bars, a spread of 1: a buy pays the bar price, a sell the bar price less the spread; a
 * gapped take-profit, a stop filled in the bar the short opened, the window-end close. */
static void test_ask_bars(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2},  {100, 102.5, 99.5, 101, 2}, {103.5, 104, 103, 103.5, 2},
                         {103, 104, 102.5, 103, 2}, {103, 103.5, 102.5, 103, 2}, FLAT_BARS(103)};
    hx x;
    if (!hx_init_market(&x, rows, 7, NULL, 1.0, 0.0, inst_side(VP_PRICE_ASK, 0.0), cfg_n(5))) return;
    const vp_env_state* s = &x.st.s;
    /* long 1, take-profit 1 ATR: buy at 100 + 0.25; the bid high 102.5 - 1 stays below 102.25 */
    hx_step_fill(&x, LONG, 0, 1, 0);
    CHECK_ORDER(x, 1, 100.25, 0.25);
    CHECK(s->take_profit[0] == 102.25 && x.fill.qty[1] == 0, "tp %g", s->take_profit[0]);
    /* marked at the bid close 101 - 1 */
    CHECK_MONEY(x, 94985.0, 94985.0 + 100.0 * 50);
    /* bar 2 gaps up: the bid open 102.5 is past the take-profit, which fills there less slippage */
    hx_step_fill(&x, LONG, 0, 1, 0);
    CHECK_EXIT(x, -1, VP_FILL_TAKE_PROFIT, 102.25, 1.25);
    CHECK_MONEY(x, 94985.0 + 102.25 * 50 - 2.5, 100095.0);
    /* short 1, stop 1 ATR: sell at 103 - 0.25 - 1, stop 103.75; bar 3's high 104 (an ask) hits it
     * in the same bar: bought at 103.75 + 0.25 */
    hx_step_fill(&x, SHORT, 0, 0, 1);
    CHECK_ORDER(x, -1, 101.75, 1.25);
    CHECK_EXIT(x, 1, VP_FILL_STOP, 104.0, 0.25);
    CHECK_MONEY(x, 100095.0 + 101.75 * 50 - 2.5 - 104.0 * 50 - 2.5, 99977.5);
    /* short 1 held: marked at the ask close 103 */
    hx_step_fill(&x, SHORT, 0, 0, 0);
    CHECK_MONEY(x, 99977.5 + 101.75 * 50 - 2.5, 105062.5 - 103.0 * 50);
    /* the window's last step buys it back at the open 103 + 0.25 */
    hx_step_fill(&x, SHORT, 0, 0, 0);
    CHECK_ORDER(x, 1, 103.25, 0.25);
    CHECK(x.done == 1.0f, "done %g", x.done);
    CHECK_NEAR(x.reward, (105062.5 - 103.25 * 50 - 2.5 - 99912.5) / 100000.0 * 100, 1e-7, 1e-6);
    hx_free(&x);
}

/* A take-profit pays slippage like any fill: 2 ticks here, no spread. */
static void test_take_profit_slippage(void) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {100.5, 103, 100, 102, 2},
                         {99, 99.5, 97, 97.5, 2},  {98, 98, 96, 96, 2},       FLAT_BARS(96)};
    vp_instrument in = inst_side(VP_PRICE_MID, 0.0);
    in.slippage_ticks = 2.0;
    hx x;
    if (!hx_init(&x, rows, 7, in, cfg_n(5))) return;
    /* long 1 at 100 + 0.5, take-profit 102.5; bar 2's high 103 takes it at 102.5 - 0.5 */
    hx_step_fill(&x, LONG, 0, 1, 0);
    hx_step_fill(&x, LONG, 0, 1, 0);
    CHECK_EXIT(x, -1, VP_FILL_TAKE_PROFIT, 102.0, 0.5);
    CHECK_MONEY(x, 100000.0 - 100.5 * 50 - 2.5 + 102.0 * 50 - 2.5, 100070.0);
    /* short 1 at 99 - 0.5, take-profit 96.5; bar 4 opens at 98 and trades to 96: bought at 96.5 + 0.5 */
    hx_step_fill(&x, SHORT, 0, 1, 0);
    hx_step_fill(&x, SHORT, 0, 1, 0);
    CHECK_EXIT(x, 1, VP_FILL_TAKE_PROFIT, 97.0, 0.5);
    CHECK_MONEY(x, 100070.0 + 98.5 * 50 - 2.5 - 97.0 * 50 - 2.5, 100140.0);
    hx_free(&x);
}

/* Financing over 5 bars held: long 2 for three closes, then short 1 for two, the window's end
 * flat. 256 bars a year make the per-bar rates binary fractions, so every cash value is exact. */
static void financing_path(double rate_long, double rate_short, const double* cash, const double* fin) {
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 101, 99, 100, 2},  {100, 101, 99, 101, 2},
                         {101, 102, 100, 102, 2}, {102, 103, 101, 102, 2}, {102, 103, 101, 101, 2},
                         {101, 101, 101, 101, 2}, {101, 101, 101, 101, 2}};
    vp_instrument in = inst_side(VP_PRICE_MID, 0.0);
    in.financing_long = rate_long, in.financing_short = rate_short;
    hx x;
    if (!hx_init_market(&x, rows, 8, NULL, 0.0, 256.0, in, cfg_n(6))) return;
    const int dir[6] = {LONG, LONG, LONG, SHORT, SHORT, SHORT}, size[6] = {1, 1, 1, 0, 0, 0};
    const double close[6] = {100, 101, 102, 102, 101, 101};
    const int pos[6] = {2, 2, 2, -1, -1, 0};
    for (int k = 0; k < 6; ++k) {
        hx_step_fill(&x, dir[k], size[k], 0, 0);
        CHECK(x.fill.financing == fin[k], "step %d: financing %.17g, expected %.17g", k, x.fill.financing, fin[k]);
        if (k == 5) {
            /* the window's end: flat at the open of bar 6, nothing financed; the env restarted */
            CHECK(x.done == 1.0f && x.fill.qty[0] == 1, "done %g qty %d", x.done, x.fill.qty[0]);
            break;
        }
        CHECK(x.st.s.position[0] == pos[k], "step %d: position %d", k, x.st.s.position[0]);
        CHECK_MONEY(x, cash[k], cash[k] + pos[k] * close[k] * 50);
    }
    /* the last step's reward: the equity after closing at 101.25 against the mark at 101 */
    CHECK_NEAR(x.reward, (cash[5] - (cash[4] - 101.0 * 50)) / 100000.0 * 100, 1e-7, 1e-6);
    hx_free(&x);
}

static void test_financing(void) {
    /* long at 0.5 a year (1/512 per bar) pays |pos| x close x 50 / 512; short at -0.25 a year
     * (a credit of 1/1024 per bar) receives it */
    const double fin_a[6] = {10000.0 / 512, 10100.0 / 512, 10200.0 / 512, -5100.0 / 1024, -5050.0 / 1024, 0.0};
    const double cash_a[6] = {89970.0 - 19.53125, 89950.46875 - 19.7265625, 89930.7421875 - 19.921875,
                              89910.8203125 + 3 * 101.75 * 50 - 7.5 + 4.98046875, 105170.80078125 + 4.931640625,
                              105175.732421875 - 101.25 * 50 - 2.5};
    financing_path(0.5, -0.25, cash_a, fin_a);
    /* the other way round: a long credited at 0.5 a year, a short charged 0.25 */
    const double fin_b[6] = {-10000.0 / 512, -10100.0 / 512, -10200.0 / 512, 5100.0 / 1024, 5050.0 / 1024, 0.0};
    const double cash_b[6] = {89989.53125, 90009.2578125, 90029.1796875, 105279.19921875, 105274.267578125,
                              100209.267578125};
    financing_path(-0.5, 0.25, cash_b, fin_b);
    /* a position closed by its stop inside the bar is not held at the close: no financing */
    const row5 rows[] = {{100, 100, 100, 100, 2}, {100, 100.5, 99.5, 100, 2}, {99.5, 100, 97, 98, 2},
                         FLAT_BARS(98), FLAT_BARS(98)};
    vp_instrument in = inst_side(VP_PRICE_MID, 0.0);
    in.financing_long = 0.5;
    hx x;
    if (!hx_init_market(&x, rows, 7, NULL, 0.0, 256.0, in, cfg_n(5))) return;
    hx_step_fill(&x, LONG, 0, 0, 1);
    CHECK(x.fill.financing == 5000.0 / 512, "held at the close: %.17g", x.fill.financing);
    hx_step_fill(&x, LONG, 0, 0, 1);
    CHECK(x.fill.kind == VP_FILL_STOP && x.fill.financing == 0.0, "stopped out: kind %d financing %.17g",
          x.fill.kind, x.fill.financing);
    hx_free(&x);
}

int main(void) {
    RUN_TEST(test_mid_bars);
    RUN_TEST(test_bid_bars);
    RUN_TEST(test_ask_bars);
    RUN_TEST(test_take_profit_slippage);
    RUN_TEST(test_financing);
    return vpt_finish();
}
