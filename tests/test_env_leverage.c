/* The leverage limit on hand-written bars (cut from flat, on adding, on a reversal, never
 * below the position held, reductions uncut, equity <= 0, limit 0 = none) with the fill
 * record's cut count; the instrument from a configuration; the checks of the new instrument
 * and market fields; and the rollout trading the same rules (spread column, financing). */
#include "vp_test.h"
#include "test_env_hand.h"

/* Tick 0.25, $50 a point, $2.5 a contract, 1 tick of slippage, max 16 contracts, $100k, mid
 * bars without spread or financing, leverage at most `lev`. */
static vp_instrument inst_lev(double lev) {
    vp_instrument i = {0.25, 50.0, 2.5, 1.0, 16, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, lev};
    return i;
}

/* 7-bar episodes, ruin at 0 (only below zero equity), reward scale 100, no penalties. */
static vp_env_config cfg7(void) {
    vp_env_config c = {7, 0.0, 100.0, 0.0, 0.0, 3};
    return c;
}

/* Checks the last step's order (contracts, cut) and the money after it. */
#define CHECK_CUT(x, q, want_cut, want_cash, want_eq)                                                          \
    CHECK((x).fill.qty[0] == (q) && (x).fill.cut == (want_cut) && (x).st.s.cash[0] == (want_cash) &&           \
              (x).st.s.equity[0] == (want_eq),                                                                 \
          "qty %d cut %d cash %.17g equity %.17g (expected %d, %d, %.17g, %.17g)", (x).fill.qty[0], (x).fill.cut, \
          (x).st.s.cash[0], (x).st.s.equity[0], (int)(q), (int)(want_cut), (double)(want_cash), (double)(want_eq))

static const row5 LEV_ROWS[] = {{100, 100, 100, 100, 2}, {100, 100, 95, 95, 2}, {90, 90, 90, 90, 2},
                                {110, 110, 110, 110, 2}, {110, 110, 110, 110, 2}, {110, 110, 110, 110, 2},
                                {110, 110, 110, 110, 2}, {110, 110, 110, 110, 2}, {110, 110, 110, 110, 2}};

static void test_leverage_cut(void) {
    hx x;
    if (!hx_init(&x, LEV_ROWS, 9, inst_lev(0.5), cfg7())) return;
    /* from flat: long 16 at 100.25 is cut to floor(0.5 x 100000 / (100.25 x 50)) = floor(9.975) = 9 */
    hx_step_fill(&x, LONG, 3, 0, 0);
    CHECK_CUT(x, 9, 7, 100000.0 - 9 * 100.25 * 50 - 9 * 2.5, 54865.0 + 9 * 95.0 * 50);
    CHECK(x.pf[7] == 1.0f, "the last size is the one chosen: %g", x.pf[7]);
    /* adding: floor(0.5 x 97615 / (90.25 x 50)) = floor(10.82) = 10: one more of the 7 asked */
    hx_step_fill(&x, LONG, 3, 0, 0);
    CHECK_CUT(x, 1, 6, 54865.0 - 90.25 * 50 - 2.5, 50350.0 + 10 * 90.0 * 50);
    CHECK(x.st.s.entry[0] == 99.25, "average entry %.17g", x.st.s.entry[0]);
    /* adding when the limit is below the position: floor(0.5 x 95350 / (110.25 x 50)) = 8 < 10;
     * nothing is bought and nothing sold, the 6 asked for are cut */
    hx_step_fill(&x, LONG, 3, 0, 0);
    CHECK_CUT(x, 0, 6, 50350.0, 50350.0 + 10 * 110.0 * 50);
    CHECK(x.st.s.position[0] == 10, "position %d", x.st.s.position[0]);
    /* a reversal: the long closes whole, the short side is cut to
     * floor(0.5 x 105350 / (109.75 x 50)) = floor(9.60) = 9 */
    hx_step_fill(&x, SHORT, 3, 0, 0);
    CHECK_CUT(x, -19, 7, 50350.0 + 19 * 109.75 * 50 - 19 * 2.5, 154565.0 - 9 * 110.0 * 50);
    /* a reduction (short 9 to short 8) is never cut */
    hx_step_fill(&x, SHORT, 1, 0, 0);
    CHECK_CUT(x, 1, 0, 154565.0 - 110.25 * 50 - 2.5, 149050.0 - 8 * 110.0 * 50);
    /* growing the short again: floor(0.5 x 105050 / 5487.5) = 9, one of the 8 asked */
    hx_step_fill(&x, SHORT, 3, 0, 0);
    CHECK_CUT(x, -1, 7, 149050.0 + 109.75 * 50 - 2.5, 154535.0 - 9 * 110.0 * 50);
    hx_free(&x);

    /* limit 0: no limit, the 16 contracts fill */
    if (!hx_init(&x, LEV_ROWS, 9, inst_lev(0.0), cfg7())) return;
    hx_step_fill(&x, LONG, 3, 0, 0);
    CHECK_CUT(x, 16, 0, 100000.0 - 16 * 100.25 * 50 - 16 * 2.5, 19760.0 + 16 * 95.0 * 50);
    hx_free(&x);

    /* the default limit of 20 leaves this order alone (16 x 100.25 x 50 is 8 x equity) */
    vp_instrument def = inst_lev(vp_instrument_default().max_leverage);
    CHECK(def.max_leverage == 20.0, "default max_leverage %g", def.max_leverage);
    if (!hx_init(&x, LEV_ROWS, 9, def, cfg7())) return;
    hx_step_fill(&x, LONG, 3, 0, 0);
    CHECK(x.fill.qty[0] == 16 && x.fill.cut == 0, "qty %d cut %d", x.fill.qty[0], x.fill.cut);
    hx_free(&x);
}

/* Sets env 0 to a position and money at bar 0 (entry at 100 when holding). */
static void set_state(hx* x, int32_t pos, double cash, double equity) {
    vp_env_state* s = &x->st.s;
    s->t[0] = 0, s->window_end[0] = 7, s->position[0] = pos, s->bars_held[0] = 0;
    s->cash[0] = cash, s->equity[0] = equity, s->peak[0] = 100000.0;
    s->entry[0] = pos != 0 ? 100.0 : 0.0, s->take_profit[0] = 0.0, s->stop_loss[0] = 0.0;
    s->last_size[0] = 0.0f;
    CHECK_OK(vp_env_state_set(&x->e, s));
}

static void test_leverage_no_equity(void) {
    hx x;
    if (!hx_init(&x, LEV_ROWS, 9, inst_lev(0.5), cfg7())) return;
    /* equity 0 allows no contracts: the whole order is cut */
    set_state(&x, 0, 0.0, 0.0);
    hx_step_fill(&x, LONG, 0, 0, 0);
    CHECK(x.fill.qty[0] == 0 && x.fill.cut == 4, "equity 0: qty %d cut %d", x.fill.qty[0], x.fill.cut);
    /* a reversal at negative equity: the long 2 is sold, the short side cut to 0 */
    set_state(&x, 2, -10100.0, -100.0);
    hx_step_fill(&x, SHORT, 3, 0, 0);
    CHECK(x.fill.qty[0] == -2 && x.fill.cut == 16 && x.fill.price[0] == 99.75, "negative equity: qty %d cut %d "
          "price %g", x.fill.qty[0], x.fill.cut, x.fill.price[0]);
    CHECK(x.done == 1.0f, "equity -10100 + 9975 - 5 is below zero: ruin");
    hx_free(&x);
}

/* Every field of vp_instrument_from_config, and the default instrument. */
static void test_instrument_from_config(void) {
    vp_config c;
    vp_config_defaults(&c);
    c.instrument.tick_size = 0.5, c.instrument.multiplier = 20.0, c.instrument.commission = 1.25;
    c.instrument.slippage_ticks = 2.0, c.instrument.spread_ticks = 3.0, c.instrument.max_position = 7.0;
    c.instrument.initial_equity = 5000.0, c.instrument.financing_long = 0.03, c.instrument.financing_short = -0.01;
    c.instrument.max_leverage = 5.0, c.data.price_side = 1;
    vp_instrument i = vp_instrument_from_config(&c);
    CHECK(i.tick_size == 0.5 && i.multiplier == 20.0 && i.commission == 1.25 && i.slippage_ticks == 2.0 &&
              i.max_position == 7 && i.initial_equity == 5000.0,
          "contract fields");
    CHECK(i.spread_ticks == 3.0 && i.price_side == VP_PRICE_BID && i.financing_long == 0.03 &&
              i.financing_short == -0.01 && i.max_leverage == 5.0,
          "cost fields: spread %g side %d fin %g %g lev %g", i.spread_ticks, (int)i.price_side, i.financing_long,
          i.financing_short, i.max_leverage);
    CHECK(vp_instrument_spread(&i) == 1.5, "spread %g", vp_instrument_spread(&i));
    c.data.price_side = 2;
    CHECK(vp_instrument_from_config(&c).price_side == VP_PRICE_ASK, "ask");
    /* the training run's parts use the same instrument */
    vp_train_parts parts;
    CHECK_OK(vp_train_parts_make(&c, 8, &parts));
    CHECK(parts.instrument.max_leverage == 5.0 &&
              parts.instrument.price_side == VP_PRICE_ASK && parts.instrument.spread_ticks == 3.0 &&
              parts.instrument.financing_short == -0.01 && parts.instrument.max_position == 7,
          "train parts instrument");
    /* the defaults: mid bars, no spread, no financing, leverage 20 */
    vp_instrument d = vp_instrument_default();
    vp_config_defaults(&c);
    vp_instrument e = vp_instrument_from_config(&c);
    CHECK(d.price_side == VP_PRICE_MID && d.spread_ticks == 0.0 && d.financing_long == 0.0 &&
              d.financing_short == 0.0 && d.max_leverage == 20.0 && d.max_position == 100 && d.tick_size == e.tick_size &&
              d.initial_equity == e.initial_equity,
          "defaults");
    /* a max_position past int32 stays out of range, for vp_env_init to refuse */
    c.instrument.max_position = 1e12;
    CHECK(vp_instrument_from_config(&c).max_position == INT32_MAX, "huge max_position");
}

/* vp_env_init and vp_env_market_init refuse bad cost settings with messages naming them. */
static void test_checks(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    const int n = 9;
    vpt_bars bars = vpt_bars_alloc(n);
    for (int i = 0; i < n; ++i) bars.o[i] = bars.h[i] = bars.l[i] = bars.c[i] = 100.0, bars.atr[i] = 1.0;
    double spread[9] = {0, 0, 0, -0.25, 0, 0, 0, 0, 0};
    vp_env_market_desc d = {n, bars.o, bars.h, bars.l, bars.c, bars.atr, 0, 8, NULL, spread, 0.0, 0.0};
    vp_env_market m;
    CHECK_STATUS(vp_env_market_init(&m, b, &d), VP_ERR_INVALID_ARG, "bar 3 has spread -0.25");
    spread[3] = NAN;
    CHECK_STATUS(vp_env_market_init(&m, b, &d), VP_ERR_INVALID_ARG, "bar 3 has spread nan");
    d.spread = NULL, d.default_spread = -1.0;
    CHECK_STATUS(vp_env_market_init(&m, b, &d), VP_ERR_INVALID_ARG, "default spread -1");
    d.default_spread = 0.5, d.bars_per_year = -1.0;
    CHECK_STATUS(vp_env_market_init(&m, b, &d), VP_ERR_INVALID_ARG, "bars_per_year -1");
    d.bars_per_year = 0.0;
    CHECK_OK(vp_env_market_init(&m, b, &d));
    CHECK(m.bars[5].spread == 0.5 && m.bars_per_year == 0.0, "default spread on every bar");

    vp_env e;
    vp_env_config cfg = cfg7();
    struct {
        vp_instrument in;
        const char* needle;
    } bad[7];
    for (int k = 0; k < 7; ++k) bad[k].in = inst_lev(0.0);
    bad[0].in.spread_ticks = -1.0, bad[0].needle = "spread_ticks -1";
    bad[1].in.spread_ticks = INFINITY, bad[1].needle = "spread_ticks inf";
    bad[2].in.price_side = (vp_price_side)3, bad[2].needle = "price_side 3";
    bad[3].in.financing_long = 1.5, bad[3].needle = "financing_long 1.5";
    bad[4].in.financing_short = NAN, bad[4].needle = "financing_short nan";
    bad[5].in.max_leverage = -2.0, bad[5].needle = "max_leverage -2";
    bad[6].in.financing_short = 0.02, bad[6].needle = "need the market's bars per year, which is 0";
    for (int k = 0; k < 7; ++k) CHECK_STATUS(vp_env_init(&e, b, &m, &bad[k].in, &cfg, 1), VP_ERR_INVALID_ARG, bad[k].needle);
    vp_env_market_free(&m);
    /* with the bars per year known, the financing rate is accepted */
    d.bars_per_year = 252.0;
    CHECK_OK(vp_env_market_init(&m, b, &d));
    CHECK_OK(vp_env_init(&e, b, &m, &bad[6].in, &cfg, 1));
    vp_env_free(&e);
    vp_env_market_free(&m);
    vpt_bars_free(&bars);
    vp_backend_free(b);
}

/* The rollout (the backtest's path) trades the same rules: the bars' spread column, ask bars,
 * financing at the annualisation's bars per year; equity at each close as the env's. */
static void test_rollout_costs(void) {
    enum { NB = 6 };
    static const double B[NB][4] = {{100, 100, 100, 100},      {100, 102.5, 99.5, 101}, {103.5, 104, 103, 103.5},
                                    {103, 104, 102.5, 103}, {103, 103.5, 102.5, 103}, {103, 103, 103, 103}};
    /* long 1 with a take-profit, held; short 1 with a stop; short 1; the last step closes it */
    static const int32_t acts[NB - 1][4] = {{LONG, 0, 1, 0}, {LONG, 0, 1, 0}, {SHORT, 0, 0, 1}, {SHORT, 0, 0, 0},
                                            {SHORT, 0, 0, 0}};
    vp_bars bars;
    CHECK_OK(vp_bars_alloc(&bars, NB));
    CHECK_OK(vp_bars_alloc_spread(&bars));
    double atr[NB];
    for (int i = 0; i < NB; ++i) {
        bars.time_ms[i] = 1578268800000LL + (int64_t)i * 3600000LL;
        bars.open[i] = B[i][0], bars.high[i] = B[i][1], bars.low[i] = B[i][2], bars.close[i] = B[i][3];
        bars.spread[i] = 1.0, atr[i] = 2.0;
    }
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = inst_lev(0.0);
    c.instrument.max_position = 4, c.instrument.price_side = VP_PRICE_ASK, c.instrument.financing_long = 0.5;
    c.episode_bars = 16;
    c.forced_actions = &acts[0][0];
    vp_annual_given(256.0, &c.annual);
    vp_rollout_data d = {&bars, atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    /* test_env_costs.c's ask path, less the long's financing at bar 1: 101 x 50 / 512 */
    const double fin = 5050.0 / 512;
    const double eq[NB] = {100000.0, 99985.0 - fin, 100095.0 - fin, 99977.5 - fin, 99912.5 - fin, 99897.5 - fin};
    CHECK(r.n_points == NB, "%lld points", (long long)r.n_points);
    for (int i = 0; i < NB && r.n_points == NB; ++i)
        CHECK(r.equity[i] == eq[i], "equity[%d] = %.17g, expected %.17g", i, r.equity[i], eq[i]);
    vp_rollout_result_free(&r);
    vp_backend_free(b);
    vp_bars_free(&bars);
}

int main(void) {
    RUN_TEST(test_leverage_cut);
    RUN_TEST(test_leverage_no_equity);
    RUN_TEST(test_instrument_from_config);
    RUN_TEST(test_checks);
    RUN_TEST(test_rollout_costs);
    return vpt_finish();
}
