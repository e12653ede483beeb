/* The tear sheet's statistics over time against hand-computed values: calendar-month and
 * calendar-year returns, numpy's histogram bins, the rolling Sharpe and volatility and their
 * window, the worst drawdowns. */
#include "metrics/tear_sheet.h"
#include "vp_test.h"

#define DAY_MS 86400000LL
#define JAN31_2017_MS 1485820800000LL /* 2017-01-31 00:00 UTC */

static void test_period_returns(void) {
    // points on Jan 31, Feb 1, Feb 15, Mar 1 2017 and Jan 1 2018; returns +10 %, -10 %, +10 %, +100 %
    const int64_t t[5] = {JAN31_2017_MS, JAN31_2017_MS + DAY_MS, JAN31_2017_MS + 15 * DAY_MS,
                          JAN31_2017_MS + 29 * DAY_MS, JAN31_2017_MS + 335 * DAY_MS};
    const double eq[5] = {100.0, 110.0, 99.0, 108.9, 217.8};
    vp_period_return m[8];
    int64_t n = -1;
    CHECK_OK(vp_tear_period_returns(t, eq, 5, 0, m, 8, &n));
    CHECK(n == 3, "%lld months", (long long)n);
    if (n == 3) {
        // February 99 / 100 - 1, March 108.9 / 99 - 1, January 2018 217.8 / 108.9 - 1
        CHECK(m[0].year == 2017 && m[0].month == 2 && m[0].first == 1 && m[0].last == 2, "Feb %d-%d [%lld, %lld]",
              m[0].year, m[0].month, (long long)m[0].first, (long long)m[0].last);
        CHECK_NEAR(m[0].ret, -0.01, 1e-15, 0);
        CHECK(m[1].year == 2017 && m[1].month == 3, "second month %d-%d", m[1].year, m[1].month);
        CHECK_NEAR(m[1].ret, 0.1, 1e-15, 0);
        CHECK(m[2].year == 2018 && m[2].month == 1, "third month %d-%d", m[2].year, m[2].month);
        CHECK_NEAR(m[2].ret, 1.0, 1e-15, 0);
    }
    vp_period_return y[2];
    CHECK_OK(vp_tear_period_returns(t, eq, 5, 1, y, 2, &n));
    CHECK(n == 2 && y[0].year == 2017 && y[0].month == 0 && y[1].year == 2018, "%lld years", (long long)n);
    CHECK_NEAR(y[0].ret, 0.089, 1e-15, 0);
    CHECK_NEAR(y[1].ret, 1.0, 1e-15, 0);
    // a cap below the count still counts them all
    CHECK_OK(vp_tear_period_returns(t, eq, 5, 0, m, 1, &n));
    CHECK(n == 3 && m[0].month == 2, "capped: %lld", (long long)n);
    CHECK_STATUS(vp_tear_period_returns(t, eq, 5, 0, NULL, 1, &n), VP_ERR_INVALID_ARG, "must be given");
}

static void test_histogram(void) {
    // numpy.histogram([0, 1, 2, 3, 4], 4) -> [1, 1, 1, 2] over [0, 4]; a NaN is left out
    const double x[6] = {0.0, 1.0, 2.0, 3.0, 4.0, NAN};
    int64_t c[4];
    double lo, hi;
    CHECK_OK(vp_tear_histogram(x, 6, 4, c, &lo, &hi));
    CHECK(c[0] == 1 && c[1] == 1 && c[2] == 1 && c[3] == 2 && lo == 0.0 && hi == 4.0, "counts %lld %lld %lld %lld",
          (long long)c[0], (long long)c[1], (long long)c[2], (long long)c[3]);
    // numpy.histogram([2, 2], 2) -> [0, 2] over [1.5, 2.5]
    const double k[2] = {2.0, 2.0};
    CHECK_OK(vp_tear_histogram(k, 2, 2, c, &lo, &hi));
    CHECK(c[0] == 0 && c[1] == 2 && lo == 1.5 && hi == 2.5, "constant: %lld %lld over [%g, %g]", (long long)c[0],
          (long long)c[1], lo, hi);
}

static void test_rolling(void) {
    CHECK(vp_tear_rolling_window(1000, 252.0) == 126, "window %lld", (long long)vp_tear_rolling_window(1000, 252.0));
    CHECK(vp_tear_rolling_window(200, 252.0) == 50, "short window %lld", (long long)vp_tear_rolling_window(200, 252.0));
    CHECK(vp_tear_rolling_window(5, 252.0) == 2, "tiny window %lld", (long long)vp_tear_rolling_window(5, 252.0));
    // windows of 2 at 4 periods a year: [.01, .03] mean .02, sd sqrt(.0002); [.03, -.01] mean .01,
    // sd sqrt(.0008); [-.01, .05] mean .02, sd sqrt(.0018); [0, 0] no spread
    const double r[5] = {0.01, 0.03, -0.01, 0.05, 0.05};
    vp_annual a = {0};
    a.periods_per_year = 4.0;
    double sh[4], vol[4];
    CHECK_OK(vp_tear_rolling(r, 4, 2, &a, sh, vol));
    CHECK_NEAR(sh[0], 0.02 / sqrt(0.0002) * 2.0, 1e-12, 0);
    CHECK_NEAR(vol[0], sqrt(0.0002) * 2.0, 1e-14, 0);
    CHECK_NEAR(sh[1], 0.01 / sqrt(0.0008) * 2.0, 1e-12, 0);
    CHECK_NEAR(vol[2], sqrt(0.0018) * 2.0, 1e-14, 0);
    CHECK_NEAR(sh[2], 0.02 / sqrt(0.0018) * 2.0, 1e-12, 0);
    // the risk-free rate: 4 % a year is .01 a bar off the mean
    a.risk_free_rate = 0.04;
    CHECK_OK(vp_tear_rolling(r, 4, 2, &a, sh, vol));
    CHECK_NEAR(sh[0], 0.01 / sqrt(0.0002) * 2.0, 1e-12, 0);
    // a constant window: volatility 0, Sharpe +inf (a positive mean over no spread)
    a.risk_free_rate = 0.0;
    CHECK_OK(vp_tear_rolling(r + 3, 2, 2, &a, sh, vol));
    CHECK(vol[0] == 0.0 && isinf(sh[0]) && sh[0] > 0, "constant window: Sharpe %g vol %g", sh[0], vol[0]);
    CHECK_STATUS(vp_tear_rolling(r, 4, 5, &a, sh, vol), VP_ERR_INVALID_ARG, "2 <= w = 5 <= n = 4");
}

static void test_worst_drawdowns(void) {
    // 100 -> 90 -> back at 100 (bar 3); 120 -> 60 -> 130 (bar 7); 130 -> 117, not recovered
    const double eq[9] = {100, 90, 95, 100, 120, 60, 80, 130, 117};
    vp_drawdown_period d[3];
    int n = -1;
    CHECK_OK(vp_tear_worst_drawdowns(eq, 9, 3, d, &n));
    CHECK(n == 3, "%d drawdowns", n);
    if (n != 3) return;
    CHECK(d[0].peak == 4 && d[0].trough == 5 && d[0].recovery == 7 && d[0].depth == -0.5, "worst: %lld %lld %lld %g",
          (long long)d[0].peak, (long long)d[0].trough, (long long)d[0].recovery, d[0].depth);
    CHECK(d[1].peak == 0 && d[1].trough == 1 && d[1].recovery == 3, "second: %lld %lld %lld", (long long)d[1].peak,
          (long long)d[1].trough, (long long)d[1].recovery);
    CHECK_NEAR(d[1].depth, -0.1, 1e-15, 0);
    CHECK(d[2].peak == 7 && d[2].trough == 8 && d[2].recovery == -1, "open one: %lld %lld %lld", (long long)d[2].peak,
          (long long)d[2].trough, (long long)d[2].recovery);
    CHECK_NEAR(d[2].depth, -0.1, 1e-15, 0);
    // the two worst only; a curve that never falls has none
    CHECK_OK(vp_tear_worst_drawdowns(eq, 9, 2, d, &n));
    CHECK(n == 2 && d[0].peak == 4 && d[1].peak == 0, "two worst: %d, peaks %lld %lld", n, (long long)d[0].peak,
          (long long)d[1].peak);
    const double up[3] = {1, 2, 2};
    CHECK_OK(vp_tear_worst_drawdowns(up, 3, 2, d, &n));
    CHECK(n == 0, "a rising curve has %d drawdowns", n);
}

int main(void) {
    RUN_TEST(test_period_returns);
    RUN_TEST(test_histogram);
    RUN_TEST(test_rolling);
    RUN_TEST(test_worst_drawdowns);
    return vpt_finish();
}
