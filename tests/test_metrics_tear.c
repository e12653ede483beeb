/* Tear-sheet statistics (vp_tear_compute): a case computed by hand, the figures scipy and
 * empyrical give for a series with NaN returns in both the strategy and the benchmark, NaN
 * skipped pairwise (the same figures as the series without them), the edge cases (constant
 * returns, all NaN, one return, none), refused inputs, and the "tear" object of
 * summary.json. */
#include <cjson/cJSON.h>

#include "vp_test.h"
#include "vulpes/metrics.h"

/* The annualisation of a test: ppy bars a year, rate rf. */
static vp_annual annual(double ppy, double rf) {
    vp_annual a;
    CHECK_OK(vp_annual_given(ppy, &a));
    a.risk_free_rate = rf;
    return a;
}

/* Four quarterly returns r = (-2, 6, 0, 0) % against a benchmark b = (0, 2, 0, 0) %, by hand
 * (units of 1 %):
 * - r: mean 1, deviations (-3, 5, -1, -1); m2 = (9 + 25 + 1 + 1) / 4 = 9, m3 = (-27 + 125 - 1
 *   - 1) / 4 = 24, m4 = (81 + 625 + 1 + 1) / 4 = 177: skewness 24 / 9^1.5 = 8/9, excess
 *   kurtosis 177 / 81 - 3 = -22/27.
 * - sorted (-2, 0, 0, 6), position (4 - 1) x 0.05 = 0.15: VaR -2 + 0.15 x 2 = -1.7 %; CVaR
 *   the mean of the int(0.15) + 1 = 1 lowest, -2 %.
 * - b: mean 0.5, deviations (-0.5, 1.5, -0.5, -0.5), var 3 / 4; cov(r, b) = (1.5 + 7.5 + 0.5
 *   + 0.5) / 4 = 2.5: beta 2.5 / 0.75 = 10/3; correlation 2.5 / sqrt(9 x 0.75) = 5 / (3 sqrt 3).
 * - alpha, rate 0: r - 10/3 b = (-2, -2/3, 0, 0), mean -2/3 %: (1 - 0.02 / 3)^4 - 1. At 4 % a
 *   year (1 % a quarter) the mean gains rf (beta - 1) = 7/3 %: 5/3 %, (1 + 0.05 / 3)^4 - 1.
 * - active r - b = (-2, 4, 0, 0): mean 0.5, squared deviations 6.25 + 12.25 + 0.25 + 0.25 = 19,
 *   std (ddof 1) sqrt(19 / 3): tracking error 0.01 sqrt(19 / 3) x 2; information ratio
 *   0.5 / sqrt(19 / 3) x 2 = sqrt(3 / 19). */
static void test_by_hand(void) {
    const double r[4] = {-0.02, 0.06, 0.0, 0.0}, b[4] = {0.0, 0.02, 0.0, 0.0};
    vp_annual a = annual(4.0, 0.0);
    vp_tear t;
    CHECK_OK(vp_tear_compute(r, b, 4, &a, &t));
    CHECK(t.n_returns == 4 && t.n_valid == 4 && t.n_pairs == 4, "counts %lld %lld %lld", (long long)t.n_returns,
          (long long)t.n_valid, (long long)t.n_pairs);
    CHECK_NEAR(t.skewness, 8.0 / 9.0, 0, 1e-12);
    CHECK_NEAR(t.excess_kurtosis, -22.0 / 27.0, 0, 1e-12);
    CHECK_NEAR(t.var_95, -0.017, 0, 1e-12);
    CHECK_NEAR(t.cvar_95, -0.02, 0, 1e-12);
    CHECK_NEAR(t.beta, 10.0 / 3.0, 0, 1e-12);
    CHECK_NEAR(t.correlation, 5.0 / (3.0 * sqrt(3.0)), 0, 1e-12);
    CHECK_NEAR(t.alpha, pow(1.0 - 0.02 / 3.0, 4.0) - 1.0, 0, 1e-12);
    CHECK_NEAR(t.tracking_error, 0.01 * sqrt(19.0 / 3.0) * 2.0, 0, 1e-12);
    CHECK_NEAR(t.information_ratio, sqrt(3.0 / 19.0), 0, 1e-12);
    CHECK(t.periods_per_year == 4.0 && t.risk_free_rate == 0.0, "factor %g, rate %g", t.periods_per_year,
          t.risk_free_rate);
    // the rate moves alpha only
    vp_tear u;
    a = annual(4.0, 0.04);
    CHECK_OK(vp_tear_compute(r, b, 4, &a, &u));
    CHECK_NEAR(u.alpha, pow(1.0 + 0.05 / 3.0, 4.0) - 1.0, 0, 1e-12);
    CHECK(u.beta == t.beta && u.skewness == t.skewness && u.var_95 == t.var_95 && u.cvar_95 == t.cvar_95 &&
              u.correlation == t.correlation && u.tracking_error == t.tracking_error &&
              u.information_ratio == t.information_ratio,
          "the rate moved a figure other than alpha");
    CHECK(u.risk_free_rate == 0.04, "rate kept: %g", u.risk_free_rate);
}

/* empyrical's series, daily returns in % r = (NaN, 1, 10, -4, 2, 3, 2, 1, -10) against
 * b = (2, -1, 5, -3, NaN, 1, 2, 0, -6) at 252 a year and 5 % a year (NaN: 7 pairs, 8 strategy
 * returns). scipy 1.17.1 and empyrical-reloaded 0.7.1 (numpy 2.4) give, with v the valid r:
 * skew(v, bias=True) = -0.3650572690177865, kurtosis(v, bias=True) = 0.11953473165699213,
 * value_at_risk(v) = -0.079 (position 7 x 0.05 = 0.35 between -10 and -4 %),
 * conditional_value_at_risk(r) = -0.1, beta(r, b) = 1.7083333333333335,
 * alpha(r, b, risk_free=0.05/252, annualization=252) = 9.325011773210024 (8.968964926763054
 * at rate 0), numpy.corrcoef over the pairs 0.9789185405952129, nanstd(r - b, ddof=1) x
 * sqrt(252) = 0.446318272088428 and excess_sharpe(r, b) x sqrt(252) = 4.032996434533986. */
static void test_empyrical(void) {
    static const double rp[9] = {NAN, 1, 10, -4, 2, 3, 2, 1, -10}, bp[9] = {2, -1, 5, -3, NAN, 1, 2, 0, -6};
    double r[9], b[9];
    for (int i = 0; i < 9; ++i) r[i] = rp[i] / 100.0, b[i] = bp[i] / 100.0;
    vp_annual a = annual(252.0, 0.05);
    vp_tear t;
    CHECK_OK(vp_tear_compute(r, b, 9, &a, &t));
    CHECK(t.n_returns == 9 && t.n_valid == 8 && t.n_pairs == 7, "counts %lld %lld %lld", (long long)t.n_returns,
          (long long)t.n_valid, (long long)t.n_pairs);
    CHECK_NEAR(t.skewness, -0.3650572690177865, 0, 1e-12);
    CHECK_NEAR(t.excess_kurtosis, 0.11953473165699213, 0, 1e-12);
    CHECK_NEAR(t.var_95, -0.079, 0, 1e-12);
    CHECK_NEAR(t.cvar_95, -0.1, 0, 1e-12);
    CHECK_NEAR(t.beta, 1.7083333333333335, 0, 1e-12);
    CHECK_NEAR(t.alpha, 9.325011773210024, 0, 1e-12);
    CHECK_NEAR(t.correlation, 0.9789185405952129, 0, 1e-12);
    CHECK_NEAR(t.tracking_error, 0.446318272088428, 0, 1e-12);
    CHECK_NEAR(t.information_ratio, 4.032996434533986, 0, 1e-12);
    a = annual(252.0, 0.0);
    CHECK_OK(vp_tear_compute(r, b, 9, &a, &t));
    CHECK_NEAR(t.alpha, 8.968964926763054, 0, 1e-12);
}

/* NaN is skipped pairwise: the series above with its NaN bars taken out gives the same
 * benchmark-relative figures, and the strategy's own figures are those of its valid returns
 * whatever the benchmark holds there. */
static void test_nan_pairwise(void) {
    const double r[6] = {-0.02, NAN, 0.06, 0.0, 0.0, 0.05}, b[6] = {0.0, 0.3, 0.02, 0.0, 0.0, NAN};
    const double rc[4] = {-0.02, 0.06, 0.0, 0.0}, bc[4] = {0.0, 0.02, 0.0, 0.0};
    const double rv[5] = {-0.02, 0.06, 0.0, 0.0, 0.05}, bz[5] = {0};
    vp_annual a = annual(4.0, 0.04);
    vp_tear t, c, v;
    CHECK_OK(vp_tear_compute(r, b, 6, &a, &t));
    CHECK_OK(vp_tear_compute(rc, bc, 4, &a, &c));
    CHECK_OK(vp_tear_compute(rv, bz, 5, &a, &v));
    CHECK(t.n_returns == 6 && t.n_valid == 5 && t.n_pairs == 4, "counts %lld %lld %lld", (long long)t.n_returns,
          (long long)t.n_valid, (long long)t.n_pairs);
    CHECK_NEAR(t.beta, c.beta, 0, 1e-14);
    CHECK_NEAR(t.alpha, c.alpha, 0, 1e-14);
    CHECK_NEAR(t.correlation, c.correlation, 0, 1e-14);
    CHECK_NEAR(t.tracking_error, c.tracking_error, 0, 1e-14);
    CHECK_NEAR(t.information_ratio, c.information_ratio, 0, 1e-14);
    CHECK(t.skewness == v.skewness && t.excess_kurtosis == v.excess_kurtosis && t.var_95 == v.var_95 &&
              t.cvar_95 == v.cvar_95,
          "the strategy's own figures depend on the benchmark's NaN");
}

/* Edge cases. Constant returns (1 % a bar) against a moving benchmark: no shape (skewness and
 * kurtosis NaN, as scipy gives), VaR = CVaR = 1 %, beta 0 / var = 0, alpha (1 + 0.01)^4 - 1,
 * correlation undefined. Identical series: beta 1, tracking error 0 and the information ratio
 * 0 / 0, undefined; a constant active return of +12.5 % (exact in binary) has an information ratio of +inf. A
 * constant benchmark leaves beta, alpha and the correlation undefined. All NaN, one return
 * and none: every figure undefined. */
static void test_edges(void) {
    const double c[4] = {0.01, 0.01, 0.01, 0.01}, b[4] = {0.0, 0.5, -0.25, 0.75};
    double up[4];
    for (int i = 0; i < 4; ++i) up[i] = b[i] + 0.125;
    vp_annual a = annual(4.0, 0.0);
    vp_tear t;
    CHECK_OK(vp_tear_compute(c, b, 4, &a, &t));
    CHECK(isnan(t.skewness) && isnan(t.excess_kurtosis), "constant: skewness %g, kurtosis %g", t.skewness,
          t.excess_kurtosis);
    CHECK(t.var_95 == 0.01 && t.cvar_95 == 0.01, "constant: VaR %.17g, CVaR %.17g", t.var_95, t.cvar_95);
    CHECK_NEAR(t.beta, 0.0, 1e-15, 0);
    CHECK_NEAR(t.alpha, pow(1.01, 4.0) - 1.0, 0, 1e-12);
    CHECK(isnan(t.correlation), "constant: correlation %g", t.correlation);
    CHECK_OK(vp_tear_compute(b, b, 4, &a, &t));
    CHECK(t.beta == 1.0 && t.tracking_error == 0.0 && isnan(t.information_ratio), "identical: beta %.17g, TE %g, IR %g",
          t.beta, t.tracking_error, t.information_ratio);
    CHECK_NEAR(t.correlation, 1.0, 0, 1e-15);
    CHECK_OK(vp_tear_compute(up, b, 4, &a, &t));
    CHECK(t.tracking_error == 0.0 && isinf(t.information_ratio) && t.information_ratio > 0, "+12.5 %%: TE %g, IR %g",
          t.tracking_error, t.information_ratio);
    CHECK_OK(vp_tear_compute(b, c, 4, &a, &t));
    CHECK(isnan(t.beta) && isnan(t.alpha) && isnan(t.correlation), "constant benchmark: beta %g, alpha %g, corr %g",
          t.beta, t.alpha, t.correlation);
    CHECK(!isnan(t.skewness) && !isnan(t.var_95), "constant benchmark: the strategy's own figures are defined");

    const double nan4[4] = {NAN, NAN, NAN, NAN}, one[1] = {0.01};
    const double* cases[3] = {nan4, one, NULL};
    const int64_t lens[3] = {4, 1, 0};
    for (int k = 0; k < 3; ++k) {
        CHECK_OK(vp_tear_compute(cases[k], k == 0 ? b : one, lens[k], &a, &t));
        CHECK(isnan(t.skewness) && isnan(t.excess_kurtosis) && isnan(t.var_95) && isnan(t.cvar_95) && isnan(t.beta) &&
                  isnan(t.alpha) && isnan(t.correlation) && isnan(t.tracking_error) && isnan(t.information_ratio),
              "case %d (n = %lld): a figure is defined", k, (long long)lens[k]);
        CHECK(t.n_returns == lens[k] && t.n_valid == (k == 1) && t.n_pairs == (k == 1), "case %d counts", k);
    }
}

/* Refused inputs: infinities (naming the series and the bar), NULL arrays, a bad factor. */
static void test_refused(void) {
    const double r[3] = {0.01, INFINITY, 0.0}, b[3] = {0.0, 0.0, -INFINITY}, z[3] = {0};
    vp_annual a = annual(252.0, 0.0);
    vp_tear t;
    CHECK_STATUS(vp_tear_compute(r, z, 3, &a, &t), VP_ERR_NUMERIC, "strategy return 1 is +inf");
    CHECK_STATUS(vp_tear_compute(z, b, 3, &a, &t), VP_ERR_NUMERIC, "benchmark return 2 is -inf");
    CHECK_STATUS(vp_tear_compute(NULL, z, 3, &a, &t), VP_ERR_INVALID_ARG, "is NULL");
    CHECK_STATUS(vp_tear_compute(z, z, 3, NULL, &t), VP_ERR_INVALID_ARG, "annualisation");
    a.periods_per_year = 0.0;
    CHECK_STATUS(vp_tear_compute(z, z, 3, &a, &t), VP_ERR_INVALID_ARG, "periods_per_year = 0");
}

/* summary.json: the "tear" object with its counts, its factor and rate and every figure under
 * a key with its unit; absent when the summary has none (has_tear 0). */
static void test_json(void) {
    const double r[4] = {-0.02, 0.06, 0.0, 0.0}, b[4] = {0.0, 0.02, 0.0, 0.0};
    vp_metrics_summary s;
    memset(&s, 0, sizeof s);
    s.annual = annual(4.0, 0.0);
    CHECK_OK(vp_perf_compute_annual(r, 4, &s.annual, &s.strategy));
    CHECK_OK(vp_perf_compute_annual(b, 4, &s.annual, &s.buy_hold));
    CHECK_OK(vp_perf_compute_annual(b, 4, &s.annual, &s.flat));
    cJSON* root = NULL;
    CHECK_OK(vp_metrics_to_json(&s, &root));
    CHECK(root && !cJSON_HasObjectItem(root, "tear"), "a tear object without has_tear");
    cJSON_Delete(root);
    CHECK_OK(vp_tear_compute(r, b, 4, &s.annual, &s.tear));
    s.has_tear = 1;
    CHECK_OK(vp_metrics_to_json(&s, &root));
    const cJSON* t = cJSON_GetObjectItemCaseSensitive(root, "tear");
    CHECK(cJSON_IsObject(t), "no tear object");
    const cJSON* bench = cJSON_GetObjectItemCaseSensitive(t, "benchmark");
    CHECK(cJSON_IsString(bench) && strcmp(bench->valuestring, "buy_and_hold") == 0, "benchmark named");
    static const char* keys[] = {"n_returns", "n_valid_returns", "n_valid_pairs", "periods_per_year",
                                 "risk_free_rate_frac", "skewness_ratio", "excess_kurtosis_ratio", "var_95_frac",
                                 "cvar_95_frac", "beta_ratio", "alpha_annual_frac", "correlation_ratio",
                                 "tracking_error_annual_frac", "information_ratio"};
    const double want[] = {4, 4, 4, 4, 0, s.tear.skewness, s.tear.excess_kurtosis, s.tear.var_95, s.tear.cvar_95,
                           s.tear.beta, s.tear.alpha, s.tear.correlation, s.tear.tracking_error,
                           s.tear.information_ratio};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; ++i) {
        const cJSON* v = cJSON_GetObjectItemCaseSensitive(t, keys[i]);
        CHECK(cJSON_IsNumber(v) && v->valuedouble == want[i], "tear.%s = %g, expected %.17g", keys[i],
              cJSON_IsNumber(v) ? v->valuedouble : NAN, want[i]);
    }
    CHECK(cJSON_GetArraySize(t) == 15, "tear has %d keys", cJSON_GetArraySize(t));
    // an undefined figure is null
    const double c[4] = {0.01, 0.01, 0.01, 0.01};
    CHECK_OK(vp_tear_compute(c, b, 4, &s.annual, &s.tear));
    cJSON_Delete(root);
    CHECK_OK(vp_metrics_to_json(&s, &root));
    t = cJSON_GetObjectItemCaseSensitive(root, "tear");
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(t, "skewness_ratio")), "constant skewness not null");
    cJSON_Delete(root);
}

int main(void) {
    RUN_TEST(test_by_hand);
    RUN_TEST(test_empyrical);
    RUN_TEST(test_nan_pairwise);
    RUN_TEST(test_edges);
    RUN_TEST(test_refused);
    RUN_TEST(test_json);
    return vpt_finish();
}
