/* Return metrics against empyrical's oracle values, and the edge cases: constant, empty,
 * all-NaN, one return, a total loss, bad arguments. */
#include "vp_test.h"
#include "vulpes/metrics.h"

#define REL 1e-9

/* empyrical's test series: daily returns in %, the first one NaN. */
static const double ORACLE_PCT[9] = {NAN, 1, 10, -4, 2, 3, 2, 1, -10};

static void test_oracle_empyrical(void) {
    double r[9];
    for (int i = 0; i < 9; ++i) r[i] = ORACLE_PCT[i] / 100.0;
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 9, 252.0, &p));
    CHECK(p.status == VP_PERF_OK, "status %s", vp_perf_status_name(p.status));
    CHECK(p.n_returns == 9 && p.n_valid == 8, "counts %lld / %lld", (long long)p.n_returns, (long long)p.n_valid);
    CHECK_NEAR(p.sharpe, 1.7238613961706866, 0, REL);
    CHECK_NEAR(p.sortino, 2.605531251673693, 0, REL);
    CHECK_NEAR(p.downside_risk, 0.6044832503882965, 0, REL);
    CHECK_NEAR(p.annual_return, 1.9135925373194, 0, REL);
    CHECK_NEAR(p.max_drawdown, -0.1, 0, REL);
    CHECK_NEAR(p.calmar, 19.135925373194, 0, REL);
    CHECK_NEAR(p.annual_volatility, 0.9136465399704637, 0, REL);
    // total return: 1.01 x 1.10 x 0.96 x 1.02 x 1.03 x 1.02 x 1.01 x 0.90 - 1, by hand
    double prod = 1.01 * 1.10 * 0.96 * 1.02 * 1.03 * 1.02 * 1.01 * 0.90;
    CHECK_NEAR(p.total_return, prod - 1.0, 0, 1e-12);
    CHECK_NEAR(p.periods_per_year, 252.0, 0, 0);
}

/* The same series with its NaN moved to the end: only the years count changes nothing
 * else, and a NaN in the middle leaves the drawdown unchanged. */
static void test_nan_positions(void) {
    double a[9], b[9];
    for (int i = 0; i < 8; ++i) a[i] = ORACLE_PCT[i + 1] / 100.0;
    a[8] = NAN;
    for (int i = 0; i < 9; ++i) b[i] = i < 4 ? ORACLE_PCT[i + 1] / 100.0 : (i == 4 ? NAN : ORACLE_PCT[i] / 100.0);
    vp_perf pa, pb;
    CHECK_OK(vp_perf_compute(a, 9, 252.0, &pa));
    CHECK_OK(vp_perf_compute(b, 9, 252.0, &pb));
    CHECK_NEAR(pa.sharpe, 1.7238613961706866, 0, REL);
    CHECK_NEAR(pb.sharpe, 1.7238613961706866, 0, REL);
    CHECK_NEAR(pa.annual_return, 1.9135925373194, 0, REL);
    CHECK_NEAR(pb.max_drawdown, -0.1, 0, REL);
    CHECK_NEAR(pb.sortino, 2.605531251673693, 0, REL);
}

/* A drawdown from the start counts against the starting value 1; a later deeper one wins. */
static void test_drawdown_by_hand(void) {
    const double r[5] = {-0.2, 0.5, -0.5, 0.1, 0.3};
    // curve 0.8, 1.2, 0.6, 0.66, 0.858: peaks 1, 1.2, 1.2, 1.2, 1.2 -> worst 0.6 / 1.2 - 1 = -0.5
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 5, 12.0, &p));
    CHECK_NEAR(p.max_drawdown, -0.5, 0, 1e-12);
    CHECK_NEAR(p.total_return, 0.8 * 1.5 * 0.5 * 1.1 * 1.3 - 1.0, 0, 1e-12);
    double years = 5.0 / 12.0;
    CHECK_NEAR(p.annual_return, pow(0.858, 1.0 / years) - 1.0, 0, 1e-12);
    CHECK_NEAR(p.calmar, p.annual_return / 0.5, 0, 1e-12);
    // mean 0.04, sample variance by hand
    double mean = 0.04, ss = 0;
    for (int i = 0; i < 5; ++i) ss += (r[i] - mean) * (r[i] - mean);
    CHECK_NEAR(p.annual_volatility, sqrt(ss / 4.0) * sqrt(12.0), 0, 1e-12);
    CHECK_NEAR(p.downside_risk, sqrt((0.04 + 0.25) / 5.0) * sqrt(12.0), 0, 1e-12);
    CHECK_NEAR(p.sortino, mean * 12.0 / p.downside_risk, 0, 1e-12);
}

/* Constant positive returns: no deviation, no downside, no drawdown -> +inf, never NaN. */
static void test_constant_returns(void) {
    double r[7];
    for (int i = 0; i < 7; ++i) r[i] = 0.001;
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 7, 252.0, &p));
    CHECK(p.status == VP_PERF_OK, "status %s", vp_perf_status_name(p.status));
    CHECK(isinf(p.sharpe) && p.sharpe > 0, "Sharpe %g, expected +inf", p.sharpe);
    CHECK(isinf(p.sortino) && p.sortino > 0, "Sortino %g, expected +inf", p.sortino);
    CHECK(isinf(p.calmar) && p.calmar > 0, "Calmar %g, expected +inf", p.calmar);
    CHECK(p.annual_volatility == 0.0 && p.downside_risk == 0.0 && p.max_drawdown == 0.0, "vol %g, dr %g, mdd %g",
          p.annual_volatility, p.downside_risk, p.max_drawdown);
    CHECK_NEAR(p.annual_return, pow(1.001, 252.0) - 1.0, 0, 1e-12);
    // constant negative returns: -inf Sharpe, finite Sortino
    for (int i = 0; i < 7; ++i) r[i] = -0.003;
    CHECK_OK(vp_perf_compute(r, 7, 252.0, &p));
    CHECK(isinf(p.sharpe) && p.sharpe < 0, "Sharpe %g, expected -inf", p.sharpe);
    CHECK_NEAR(p.sortino, -0.003 * 252.0 / (0.003 * sqrt(252.0)), 0, 1e-12);
    // all zero (the flat baseline): ratios are 0 / 0, undefined
    for (int i = 0; i < 7; ++i) r[i] = 0.0;
    CHECK_OK(vp_perf_compute(r, 7, 252.0, &p));
    CHECK(isnan(p.sharpe) && isnan(p.sortino) && isnan(p.calmar), "0/0 ratios: %g %g %g", p.sharpe, p.sortino,
          p.calmar);
    CHECK(p.total_return == 0.0 && p.annual_return == 0.0 && p.max_drawdown == 0.0, "flat values");
}

static void test_empty_all_nan_short(void) {
    vp_perf p;
    CHECK_OK(vp_perf_compute(NULL, 0, 252.0, &p));
    CHECK(p.status == VP_PERF_EMPTY && isnan(p.sharpe) && isnan(p.total_return), "empty: %s",
          vp_perf_status_name(p.status));
    CHECK(strcmp(vp_perf_status_name(p.status), "empty") == 0, "name %s", vp_perf_status_name(p.status));
    const double nan3[3] = {NAN, NAN, NAN};
    CHECK_OK(vp_perf_compute(nan3, 3, 252.0, &p));
    CHECK(p.status == VP_PERF_ALL_NAN && p.n_valid == 0 && isnan(p.max_drawdown) && isnan(p.annual_return),
          "all NaN: %s", vp_perf_status_name(p.status));
    // one valid return: level metrics defined, dispersion ones not
    const double one[2] = {NAN, 0.05};
    CHECK_OK(vp_perf_compute(one, 2, 252.0, &p));
    CHECK(p.status == VP_PERF_SHORT, "short: %s", vp_perf_status_name(p.status));
    CHECK_NEAR(p.total_return, 0.05, 0, 1e-15);
    CHECK_NEAR(p.annual_return, pow(1.05, 126.0) - 1.0, 0, 1e-12);
    CHECK(isnan(p.sharpe) && isnan(p.annual_volatility) && isnan(p.sortino), "short ratios defined");
    CHECK(p.downside_risk == 0.0, "downside risk %g", p.downside_risk);
}

/* A total loss: equity 0, annual return -100 %, drawdown -100 %. */
static void test_total_loss(void) {
    const double r[3] = {0.1, -1.0, 0.0};
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 3, 252.0, &p));
    CHECK_NEAR(p.total_return, -1.0, 0, 0);
    CHECK_NEAR(p.annual_return, -1.0, 0, 0);
    CHECK_NEAR(p.max_drawdown, -1.0, 0, 0);
    CHECK_NEAR(p.calmar, -1.0, 0, 0);
}

static void test_bad_arguments(void) {
    const double r[3] = {0.01, INFINITY, 0.02};
    vp_perf p;
    CHECK_STATUS(vp_perf_compute(r, 3, 252.0, &p), VP_ERR_NUMERIC, "returns[1] is +inf");
    CHECK_STATUS(vp_perf_compute(r, 1, 0.0, &p), VP_ERR_INVALID_ARG, "periods_per_year");
    CHECK_STATUS(vp_perf_compute(r, 1, NAN, &p), VP_ERR_INVALID_ARG, "periods_per_year");
    CHECK_STATUS(vp_perf_compute(NULL, 2, 252.0, &p), VP_ERR_INVALID_ARG, "returns is NULL");
    CHECK_STATUS(vp_perf_compute(r, 1, 252.0, NULL), VP_ERR_INVALID_ARG, "out is NULL");
}

/* A long odd-length random series: the single-pass results match a plain two-pass
 * reference and compounding by logs. */
static void test_long_series_reference(void) {
    enum { N = 100003 };
    static double r[N];
    uint64_t s = 12345;
    double sum = 0, logsum = 0;
    for (int i = 0; i < N; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        r[i] = ((double)(s >> 11) / 9007199254740992.0 - 0.5) * 0.02 + 0.0001;
        sum += r[i];
        logsum += log1p(r[i]);
    }
    double mean = sum / N, ss = 0;
    for (int i = 0; i < N; ++i) ss += (r[i] - mean) * (r[i] - mean);
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, N, 6240.0, &p));
    CHECK_NEAR(p.sharpe, mean / sqrt(ss / (N - 1)) * sqrt(6240.0), 0, 1e-9);
    CHECK_NEAR(log1p(p.total_return), logsum, 1e-9, 1e-9);
    CHECK_NEAR(log1p(p.annual_return), logsum * 6240.0 / N, 1e-9, 1e-9);
}

int main(void) {
    RUN_TEST(test_oracle_empyrical);
    RUN_TEST(test_nan_positions);
    RUN_TEST(test_drawdown_by_hand);
    RUN_TEST(test_constant_returns);
    RUN_TEST(test_empty_all_nan_short);
    RUN_TEST(test_total_loss);
    RUN_TEST(test_bad_arguments);
    RUN_TEST(test_long_series_reference);
    return vpt_finish();
}
