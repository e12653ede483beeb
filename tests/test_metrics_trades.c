/* Trade statistics, the annualisation factor and the equity helpers, each
 * against values worked out by hand. */
#include "vp_test.h"
#include "vulpes/metrics.h"

static void test_trade_stats_by_hand(void) {
    // five trades: three wins, one loss, one break-even
    const vp_trade tr[5] = {{120.0, 5.0, 3}, {-40.0, 5.0, 1}, {0.0, 5.0, 2}, {30.0, 2.5, 7}, {10.0, 2.5, 4}};
    // positions at each bar's close, max_position 4: changes 2, 0, 2 (to 4), 4 (to 0), 0, 3 (to -3), 3 (to 0)
    const double pos[7] = {2, 2, 4, 0, 0, -3, 0};
    vp_trade_stats s;
    CHECK_OK(vp_trade_stats_compute(tr, 5, pos, 7, 4.0, 252.0, &s));
    CHECK(s.n_trades == 5 && s.n_wins == 3 && s.n_losses == 1, "counts %lld %lld %lld", (long long)s.n_trades,
          (long long)s.n_wins, (long long)s.n_losses);
    CHECK_NEAR(s.hit_rate, 0.6, 0, 1e-15);
    CHECK_NEAR(s.gross_profit, 160.0, 0, 1e-15);
    CHECK_NEAR(s.gross_loss, 40.0, 0, 1e-15);
    CHECK_NEAR(s.profit_factor, 4.0, 0, 1e-15);
    CHECK_NEAR(s.net_pnl, 120.0, 0, 1e-15);
    CHECK_NEAR(s.costs, 20.0, 0, 1e-15);
    CHECK_NEAR(s.avg_trade_pnl, 24.0, 0, 1e-15);
    CHECK_NEAR(s.avg_holding_bars, 17.0 / 5.0, 0, 1e-15);
    // 4 of 7 bars hold a position; traded 2 + 2 + 4 + 3 + 3 = 14 contracts = 3.5 x max
    CHECK(s.n_bars == 7, "bars %lld", (long long)s.n_bars);
    CHECK_NEAR(s.exposure, 4.0 / 7.0, 0, 1e-15);
    CHECK_NEAR(s.turnover, 3.5, 0, 1e-15);
    CHECK_NEAR(s.turnover_per_year, 3.5 * 252.0 / 7.0, 0, 1e-12);
}

static void test_trade_stats_edges(void) {
    vp_trade_stats s;
    // no losses: infinite profit factor, reported as such
    const vp_trade wins[2] = {{5.0, 1.0, 2}, {7.0, 1.0, 3}};
    CHECK_OK(vp_trade_stats_compute(wins, 2, NULL, 0, 1.0, 252.0, &s));
    CHECK(isinf(s.profit_factor) && s.profit_factor > 0, "profit factor %g", s.profit_factor);
    CHECK_NEAR(s.hit_rate, 1.0, 0, 0);
    CHECK(isnan(s.exposure) && isnan(s.turnover_per_year) && s.turnover == 0.0, "no bars: %g %g %g", s.exposure,
          s.turnover_per_year, s.turnover);
    // no trades: undefined rates, zero sums
    CHECK_OK(vp_trade_stats_compute(NULL, 0, NULL, 0, 1.0, 252.0, &s));
    CHECK(s.n_trades == 0 && isnan(s.hit_rate) && isnan(s.profit_factor) && isnan(s.avg_holding_bars),
          "no trades: %g %g %g", s.hit_rate, s.profit_factor, s.avg_holding_bars);
    CHECK(s.net_pnl == 0.0 && s.costs == 0.0, "sums");
    // only losses: profit factor 0
    const vp_trade loss[1] = {{-3.0, 1.0, 1}};
    CHECK_OK(vp_trade_stats_compute(loss, 1, NULL, 0, 1.0, 252.0, &s));
    CHECK(s.profit_factor == 0.0 && s.hit_rate == 0.0, "losses only: %g %g", s.profit_factor, s.hit_rate);
    // only break-even trades: 0 / 0
    const vp_trade even[3] = {{0.0, 1.0, 1}, {0.0, 1.0, 1}, {0.0, 1.0, 1}};
    CHECK_OK(vp_trade_stats_compute(even, 3, NULL, 0, 1.0, 252.0, &s));
    CHECK(isnan(s.profit_factor) && s.hit_rate == 0.0, "break-even: %g %g", s.profit_factor, s.hit_rate);
    // bad inputs name what is wrong
    const vp_trade bad[1] = {{NAN, 0.0, 1}};
    CHECK_STATUS(vp_trade_stats_compute(bad, 1, NULL, 0, 1.0, 252.0, &s), VP_ERR_NUMERIC, "trade 0");
    const double pos[2] = {1.0, INFINITY};
    CHECK_STATUS(vp_trade_stats_compute(NULL, 0, pos, 2, 1.0, 252.0, &s), VP_ERR_NUMERIC, "positions[1]");
    CHECK_STATUS(vp_trade_stats_compute(NULL, 0, pos, 1, 0.0, 252.0, &s), VP_ERR_INVALID_ARG, "max_position");
    CHECK_STATUS(vp_trade_stats_compute(NULL, 3, NULL, 0, 1.0, 252.0, &s), VP_ERR_INVALID_ARG, "trades is NULL");
}

/* Hourly bars on a 24x5 week (Sunday 22:00 to Friday 22:00 UTC, 120 bars a week) over 53
 * weeks, and daily bars Monday to Friday. */
static void test_annual_factor(void) {
    enum { WEEKS = 53 };
    static int64_t t[WEEKS * 120];
    const int64_t H = 3600000, D = 24 * H, W = 7 * D;
    const int64_t sun22 = 1483308000000LL;  // 2017-01-01 22:00 UTC, a Sunday
    int64_t n = 0;
    for (int w = 0; w < WEEKS; ++w)
        for (int h = 0; h < 120; ++h) t[n++] = sun22 + w * W + h * H;
    vp_annual a;
    CHECK_OK(vp_annual_measure(t, n, &a));
    // span = 52 weeks + 119 h + 1 h (median) = 52 weeks + 5 days; bars 6360
    double span_days = 52 * 7 + 5;
    CHECK(a.method == VP_ANNUAL_MEASURED && a.n_bars == n, "method / bars");
    CHECK_NEAR(a.median_interval_s, 3600.0, 0, 0);
    CHECK_NEAR(a.span_days, span_days, 0, 1e-12);
    CHECK_NEAR(a.periods_per_year, 6360.0 * 365.25 / span_days, 0, 1e-12);
    CHECK(a.periods_per_year > 6240 && a.periods_per_year < 6300, "24x5 hourly: %g", a.periods_per_year);
    // daily Monday..Friday over 101 weeks, a holiday removed every 7 weeks
    static int64_t d[505];
    int64_t m = 0;
    const int64_t mon = 1483920000000LL;  // 2017-01-09, a Monday
    for (int w = 0; w < 101; ++w)
        for (int k = 0; k < 5; ++k)
            if (!(w % 7 == 3 && k == 2)) d[m++] = mon + w * W + k * D;
    CHECK_OK(vp_annual_measure(d, m, &a));
    CHECK_NEAR(a.median_interval_s, 86400.0, 0, 0);
    CHECK_NEAR(a.periods_per_year, (double)m * 365.25 / (100 * 7 + 5), 0, 1e-12);
    CHECK(a.periods_per_year > 248 && a.periods_per_year < 262, "daily: %g", a.periods_per_year);
    // the description names the factor and its source
    char buf[200];
    vp_annual_describe(&a, buf, sizeof buf);
    CHECK(strstr(buf, "periods/year (measured: 491 bars") != NULL, "describe: %s", buf);
    CHECK_OK(vp_annual_given(252.0, &a));
    CHECK(strcmp(vp_annual_describe(&a, buf, sizeof buf), "252.00 periods/year (given); risk-free rate 0 % a year") == 0,
          "given: %s", buf);
    // errors
    const int64_t back[3] = {10, 20, 20};
    CHECK_STATUS(vp_annual_measure(back, 3, &a), VP_ERR_INVALID_ARG, "not strictly increasing at 2");
    CHECK_STATUS(vp_annual_measure(back, 1, &a), VP_ERR_INVALID_ARG, "at least 2");
    CHECK_STATUS(vp_annual_given(-1.0, &a), VP_ERR_INVALID_ARG, "positive");
}

static void test_returns_and_drawdown(void) {
    const double eq[6] = {100.0, 110.0, 99.0, 104.5, 121.0, 96.8};
    double r[5], dd[6];
    CHECK_OK(vp_returns_from_equity(eq, 6, r));
    const double er[5] = {0.1, -0.1, 104.5 / 99.0 - 1, 121.0 / 104.5 - 1, -0.2};
    for (int i = 0; i < 5; ++i) CHECK_NEAR(r[i], er[i], 1e-15, 1e-12);
    CHECK_OK(vp_drawdown_series(eq, 6, dd));
    const double edd[6] = {0.0, 0.0, -0.1, 104.5 / 110.0 - 1, 0.0, -0.2};
    for (int i = 0; i < 6; ++i) CHECK_NEAR(dd[i], edd[i], 1e-15, 1e-12);
    // the drawdown of the curve equals the metric's max drawdown from its returns
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 5, 252.0, &p));
    CHECK_NEAR(p.max_drawdown, -0.2, 1e-15, 1e-12);
    // through zero and below (a ruined account): e1 / e0 - 1 from a negative e0, 0 -> 0 is 0,
    // 0 -> anything else undefined; a non-finite equity is refused
    const double ruin[6] = {100.0, -20.0, -30.0, 0.0, 0.0, 50.0};
    CHECK_OK(vp_returns_from_equity(ruin, 6, r));
    CHECK(r[0] == -1.2 && r[1] == 0.5 && r[2] == -1.0 && r[3] == 0.0 && isnan(r[4]),
          "through zero: %.17g %.17g %.17g %.17g %g", r[0], r[1], r[2], r[3], r[4]);
    const double bad[3] = {100.0, NAN, 50.0};
    CHECK_STATUS(vp_returns_from_equity(bad, 3, r), VP_ERR_NUMERIC, "equity[1] = nan");
}

int main(void) {
    RUN_TEST(test_trade_stats_by_hand);
    RUN_TEST(test_trade_stats_edges);
    RUN_TEST(test_annual_factor);
    RUN_TEST(test_returns_and_drawdown);
    return vpt_finish();
}
