#define _POSIX_C_SOURCE 200809L
/* The risk-free rate in the return metrics: Sharpe, Sortino, downside risk, the Sharpe's
 * standard error and PSR of the excess returns r - rf / ppy, against a case computed by hand
 * and against empyrical's sharpe_ratio(returns, risk_free = rf / ppy) and
 * sortino_ratio(returns, required_return = rf / ppy); the figures that do not depend on the
 * rate; a rate of 0 giving the plain figures bit for bit; the rate stated in the text and
 * the JSON. */
#include <cjson/cJSON.h>

#include "vp_test.h"
#include "vulpes/metrics.h"

/* Four quarterly returns at a yearly rate of 4 %: 1 % a quarter. By hand, the excess returns
 * are x = (1, -1, 0, -2) %, mean -0.5 %, deviations (1.5, -0.5, 0.5, -1.5) %, sum of squares
 * 5e-4, sample variance 5e-4 / 3, so Sharpe = -0.005 / sqrt(5e-4 / 3) x sqrt(4) = -sqrt(0.6);
 * downside risk sqrt((0 + 1e-4 + 0 + 4e-4) / 4) x sqrt(4) = sqrt(5e-4); Sortino
 * -0.005 x 4 / sqrt(5e-4) = -sqrt(0.8). Without the rate: mean 0.5 %, Sharpe +sqrt(0.6),
 * downside sqrt(1e-4 / 4) x 2 = 0.01, Sortino 0.005 x 4 / 0.01 = 2. */
static void test_by_hand(void) {
    const double r[4] = {0.02, 0.0, 0.01, -0.01};
    vp_perf p, z;
    CHECK_OK(vp_perf_compute_rf(r, 4, 4.0, 0.04, &p));
    CHECK_NEAR(p.sharpe, -sqrt(0.6), 0, 1e-12);
    CHECK_NEAR(p.downside_risk, sqrt(5e-4), 0, 1e-12);
    CHECK_NEAR(p.sortino, -sqrt(0.8), 0, 1e-12);
    CHECK(p.risk_free_rate == 0.04, "rate kept: %g", p.risk_free_rate);
    CHECK_OK(vp_perf_compute_rf(r, 4, 4.0, 0.0, &z));
    CHECK_NEAR(z.sharpe, sqrt(0.6), 0, 1e-12);
    CHECK_NEAR(z.downside_risk, 0.01, 0, 1e-12);
    CHECK_NEAR(z.sortino, 2.0, 0, 1e-12);
    // the figures of the plain returns do not move: volatility sqrt(5e-4 / 3) x 2, total
    // return 1.02 x 1.00 x 1.01 x 0.99 - 1, the drawdown of the last quarter, the moments
    CHECK_NEAR(p.annual_volatility, sqrt(5e-4 / 3.0) * 2.0, 0, 1e-12);
    CHECK_NEAR(p.total_return, 1.02 * 1.01 * 0.99 - 1.0, 0, 1e-12);
    CHECK(p.total_return == z.total_return && p.annual_return == z.annual_return &&
              p.max_drawdown == z.max_drawdown && p.calmar == z.calmar && p.annual_volatility == z.annual_volatility,
          "returns, drawdown and volatility depend on the rate");
    CHECK_NEAR(p.skewness, z.skewness, 1e-12, 0);
    CHECK_NEAR(p.kurtosis, z.kurtosis, 0, 1e-12);
    // the SE and PSR follow the excess Sharpe: per-period SR = -sqrt(0.6) / 2
    const double sr = -sqrt(0.6) / 2.0;
    CHECK_NEAR(p.sharpe_se, sqrt(vp_sharpe_variance(sr, p.skewness, p.kurtosis, 4)) * 2.0, 0, 1e-12);
    CHECK_NEAR(p.psr_vs_zero, vp_psr(sr, 0.0, p.skewness, p.kurtosis, 4), 0, 1e-12);
    CHECK(p.psr_vs_zero < 0.5 && z.psr_vs_zero > 0.5, "PSR %g with the rate, %g without", p.psr_vs_zero,
          z.psr_vs_zero);
}

/* empyrical's series (daily returns in %, the first NaN) at 252 a year and a yearly rate of
 * 5 %: empyrical-reloaded 0.7.1 gives sharpe_ratio(r, risk_free=0.05/252, annualization=252)
 * = 1.6691356375620936, sortino_ratio(r, required_return=0.05/252, annualization=252) =
 * 2.516787860769987 and downside_risk(...) = 0.6059310853213674; the SE and PSR of the excess
 * series by an independent computation (numpy: central moments, Mertens' variance) are
 * 6.131290689873162 and 0.6072783132202396. */
static void test_empyrical(void) {
    static const double pct[9] = {NAN, 1, 10, -4, 2, 3, 2, 1, -10};
    double r[9];
    for (int i = 0; i < 9; ++i) r[i] = pct[i] / 100.0;
    vp_annual a;
    CHECK_OK(vp_annual_given(252.0, &a));
    a.risk_free_rate = 0.05;
    vp_perf p;
    CHECK_OK(vp_perf_compute_annual(r, 9, &a, &p));
    CHECK_NEAR(p.sharpe, 1.6691356375620936, 0, 1e-9);
    CHECK_NEAR(p.sortino, 2.516787860769987, 0, 1e-9);
    CHECK_NEAR(p.downside_risk, 0.6059310853213674, 0, 1e-9);
    CHECK_NEAR(p.sharpe_se, 6.131290689873162, 0, 1e-12);
    CHECK_NEAR(p.psr_vs_zero, 0.6072783132202396, 0, 1e-12);
    CHECK(p.risk_free_rate == 0.05 && p.n_valid == 8, "rate %g, %lld valid", p.risk_free_rate, (long long)p.n_valid);
    // the figures the rate does not enter: empyrical's own values
    CHECK_NEAR(p.annual_return, 1.9135925373194, 0, 1e-9);
    CHECK_NEAR(p.annual_volatility, 0.9136465399704637, 0, 1e-9);
    CHECK_NEAR(p.calmar, 19.135925373194, 0, 1e-9);
}

/* A rate of 0 is the plain computation bit for bit, through every entry point. */
static void test_zero_rate_is_plain(void) {
    double r[300];
    for (int i = 0; i < 300; ++i) r[i] = 0.01 * sin(0.37 * i) + (i % 7 == 0 ? NAN : 0.0) + 1e-4;
    vp_perf a, b, c;
    vp_annual an;
    CHECK_OK(vp_annual_given(6280.89, &an));
    CHECK_OK(vp_perf_compute(r, 300, 6280.89, &a));
    CHECK_OK(vp_perf_compute_rf(r, 300, 6280.89, 0.0, &b));
    CHECK_OK(vp_perf_compute_annual(r, 300, &an, &c));
    CHECK(memcmp(&a, &b, sizeof a) == 0 && memcmp(&a, &c, sizeof a) == 0, "rate 0 differs from the plain figures");
    CHECK(a.risk_free_rate == 0.0, "rate %g", a.risk_free_rate);
}

/* The conventions with a rate: flat returns fall short of it with no spread (Sharpe -inf,
 * Sortino -sqrt(ppy): mean -rf/ppy x ppy over downside rf/ppy x sqrt(ppy)); returns equal to
 * the rate per bar have an undefined Sharpe (0 / 0); a rate that is not finite is refused. */
static void test_conventions(void) {
    double flat[50], at_rate[50];
    for (int i = 0; i < 50; ++i) flat[i] = 0.0, at_rate[i] = 0.03 / 252.0;
    vp_perf p;
    CHECK_OK(vp_perf_compute_rf(flat, 50, 252.0, 0.03, &p));
    CHECK(isinf(p.sharpe) && p.sharpe < 0, "flat below the rate: Sharpe %g", p.sharpe);
    CHECK_NEAR(p.sortino, -sqrt(252.0), 0, 1e-12);
    CHECK(p.total_return == 0.0 && p.max_drawdown == 0.0, "flat: total %g, drawdown %g", p.total_return,
          p.max_drawdown);
    CHECK_OK(vp_perf_compute_rf(at_rate, 50, 252.0, 0.03, &p));
    CHECK(isnan(p.sharpe) && isnan(p.sortino), "returns at the rate: Sharpe %g, Sortino %g", p.sharpe, p.sortino);
    CHECK_OK(vp_perf_compute_rf(flat, 50, 252.0, -0.01, &p));
    CHECK(isinf(p.sharpe) && p.sharpe > 0, "flat above a negative rate: Sharpe %g", p.sharpe);
    CHECK_STATUS(vp_perf_compute_rf(flat, 50, 252.0, NAN, &p), VP_ERR_INVALID_ARG, "risk-free rate");
    CHECK_STATUS(vp_perf_compute_rf(flat, 50, 252.0, INFINITY, &p), VP_ERR_INVALID_ARG, "must be finite");
    CHECK_STATUS(vp_perf_compute_annual(flat, 50, NULL, &p), VP_ERR_INVALID_ARG, "annualisation is NULL");
}

/* The rate is stated: the annualisation line, the table, the annualisation object and each
 * series object of summary.json. */
static void test_stated(void) {
    char buf[300];
    CHECK(strcmp(vp_risk_free_describe(0.0, buf, sizeof buf), "risk-free rate 0 % a year") == 0, "'%s'", buf);
    CHECK(strcmp(vp_risk_free_describe(0.0425, buf, sizeof buf), "risk-free rate 4.25 % a year") == 0, "'%s'", buf);
    vp_metrics_summary s;
    memset(&s, 0, sizeof s);
    CHECK_OK(vp_annual_given(252.0, &s.annual));
    s.annual.risk_free_rate = 0.02;
    CHECK(strcmp(vp_annual_describe(&s.annual, buf, sizeof buf), "252.00 periods/year (given); risk-free rate 2 % a year") ==
              0,
          "'%s'", buf);
    const double r[3] = {0.01, -0.005, 0.002};
    CHECK_OK(vp_perf_compute_annual(r, 3, &s.annual, &s.strategy));
    CHECK_OK(vp_perf_compute_annual(r, 3, &s.annual, &s.buy_hold));
    CHECK_OK(vp_perf_compute_annual(r, 3, &s.annual, &s.flat));
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    CHECK_OK(vp_metrics_print(&s, f));
    fclose(f);
    CHECK(text && strstr(text, "annualisation: 252.00 periods/year (given); risk-free rate 2 % a year\n"), "table:\n%s",
          text ? text : "");
    free(text);
    cJSON* root = NULL;
    CHECK_OK(vp_metrics_to_json(&s, &root));
    const cJSON* an = cJSON_GetObjectItemCaseSensitive(root, "annualisation");
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(root, "strategy");
    const cJSON* rule = cJSON_GetObjectItemCaseSensitive(an, "risk_free_rule");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(an, "risk_free_rate_frac")) == 0.02,
          "annualisation.risk_free_rate_frac");
    CHECK(cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(st, "risk_free_rate_frac")) == 0.02,
          "strategy.risk_free_rate_frac");
    CHECK(cJSON_IsString(rule) && strstr(rule->valuestring, "r - risk_free_rate / periods_per_year"), "rule");
    cJSON_Delete(root);
}

int main(void) {
    RUN_TEST(test_by_hand);
    RUN_TEST(test_empyrical);
    RUN_TEST(test_zero_rate_is_plain);
    RUN_TEST(test_conventions);
    RUN_TEST(test_stated);
    return vpt_finish();
}
