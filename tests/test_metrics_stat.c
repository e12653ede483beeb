/* Statistical weight of a Sharpe ratio against the papers' worked numbers: the normal
 * quantile, Mertens' standard error, the probabilistic Sharpe ratio (Bailey and Lopez de
 * Prado 2012) and the deflated Sharpe ratio's numerical example (Bailey and Lopez de Prado
 * 2014), then the fields vp_perf_compute fills and the extrapolation flag. */
#include "vp_test.h"
#include "vulpes/metrics.h"

/* Phi^-1 against quantiles to 1e-14 (values of Wichura's AS241, Python's NormalDist), both
 * tails, the switch points of the approximation and the ends. */
static void test_norm_quantile(void) {
    static const double p[] = {0.5, 0.975, 0.99, 0.995, 0.95, 1e-10, 0.02425, 0.3};
    static const double x[] = {0.0, 1.9599639845400536, 2.3263478740408408, 2.5758293035489,
                               1.6448536269514715, -6.361340902404056, -1.9729610513118845,
                               -0.5244005127080407};
    for (int i = 0; i < 8; ++i) CHECK_NEAR(vp_norm_quantile(p[i]), x[i], 1e-14, 1e-14);
    // Phi(Phi^-1(p)) = p across the range, lower tail in relative terms (the rounding of x
    // is amplified by x^2, about 1400 at 1e-300)
    for (double q = 1e-300; q < 0.5; q *= 7.0) CHECK_NEAR(vp_norm_cdf(vp_norm_quantile(q)), q, 0, 1e-12);
    CHECK_NEAR(vp_norm_cdf(1.959963984540054), 0.975, 1e-15, 0);
    CHECK(isinf(vp_norm_quantile(0.0)) && vp_norm_quantile(0.0) < 0, "Phi^-1(0) = -inf");
    CHECK(isinf(vp_norm_quantile(1.0)) && vp_norm_quantile(1.0) > 0, "Phi^-1(1) = +inf");
    CHECK(isnan(vp_norm_quantile(-0.1)) && isnan(vp_norm_quantile(1.5)) && isnan(vp_norm_quantile(NAN)),
          "outside [0, 1] is NaN");
}

/* Normal returns (skew 0, kurtosis 3): Mertens' variance is Lo's (1 + SR^2 / 2) / (n - 1);
 * the PSR is Phi(SR / SE); skew and fat tails widen it as the formula says. */
static void test_sharpe_se(void) {
    CHECK_NEAR(vp_sharpe_variance(0.1, 0.0, 3.0, 101), (1.0 + 0.005) / 100.0, 0, 1e-15);
    CHECK_NEAR(vp_sharpe_variance(0.2, -1.0, 6.0, 51), (1.0 + 0.2 + 1.25 * 0.04) / 50.0, 0, 1e-15);
    CHECK_NEAR(vp_psr(0.1, 0.0, 0.0, 3.0, 101), vp_norm_cdf(0.1 / sqrt(1.005 / 100.0)), 0, 1e-15);
    CHECK_NEAR(vp_psr(0.0, 0.0, 0.0, 3.0, 101), 0.5, 0, 1e-15);
    CHECK(isnan(vp_sharpe_variance(0.1, 0.0, 3.0, 1)), "n = 1: undefined");
    CHECK(isnan(vp_psr(NAN, 0.0, 0.0, 3.0, 100)), "NaN Sharpe: undefined PSR");
}

/* The DSR paper's numerical example: N = 100 trials, V[SR_n] = 1/2 (annualised), selected
 * SR 2.5 annualised over T = 1250 daily returns (250 a year), skew -3, kurtosis 10: the paper
 * prints SR0 = 0.1132 (per day) and DSR = 0.9004. */
static void test_dsr_paper_example(void) {
    const double ppy = 250.0;
    double sr0 = vp_expected_max_sharpe(0.5 / ppy, 100);
    CHECK_NEAR(sr0, 0.1132, 5e-5, 0);
    double dsr = vp_psr(2.5 / sqrt(ppy), sr0, -3.0, 10.0, 1250);
    CHECK_NEAR(dsr, 0.9004, 5e-5, 0);
    // the same through a selection and a series summary, annualised units in
    vp_selection s = {0};
    vp_selection_add(&s, 1.0);
    vp_selection_add(&s, NAN); /* not a trial */
    vp_selection_add(&s, 2.0);
    CHECK(s.n_trials == 2, "trials %lld", (long long)s.n_trials);
    CHECK_NEAR(vp_selection_variance(&s), 0.5, 0, 1e-15);
    vp_selection hundred = {.n_trials = 100, .mean = 0.0, .m2 = 0.5 * 99.0};
    vp_perf best = {.n_valid = 1250, .periods_per_year = ppy, .sharpe = 2.5, .skewness = -3.0, .kurtosis = 10.0};
    double sr0_annual;
    CHECK_NEAR(vp_deflated_sharpe(&hundred, &best, &sr0_annual), 0.9004, 5e-5, 0);
    CHECK_NEAR(sr0_annual, 0.1132 * sqrt(ppy), 5e-5 * sqrt(ppy), 0);
    vp_selection one = {.n_trials = 1};
    CHECK(isnan(vp_deflated_sharpe(&one, &best, NULL)), "one trial: no DSR");
}

/* vp_perf_compute on empyrical's series: skewness and kurtosis (central moments over the 8
 * valid returns), the annualised SE and the PSR against 0, from an independent computation. */
static void test_perf_fields(void) {
    static const double pct[9] = {NAN, 1, 10, -4, 2, 3, 2, 1, -10};
    double r[9];
    for (int i = 0; i < 9; ++i) r[i] = pct[i] / 100.0;
    vp_perf p;
    CHECK_OK(vp_perf_compute(r, 9, 252.0, &p));
    CHECK_NEAR(p.skewness, -0.3650572690177865, 0, 1e-12);
    CHECK_NEAR(p.kurtosis, 3.119534731656992, 0, 1e-12);
    CHECK_NEAR(p.sharpe_se, 6.136129669606653, 0, 1e-12);
    CHECK_NEAR(p.psr_vs_zero, 0.6106203604025079, 0, 1e-12);
    // 9 bars at 252 a year: annualised from 0.0357 years, extrapolated
    CHECK_NEAR(p.years, 9.0 / 252.0, 0, 1e-15);
    CHECK(p.extrapolated == 1, "9 daily bars are extrapolated");
    // against itself the PSR is one half; against a higher benchmark below it
    CHECK_NEAR(vp_perf_psr_vs(&p, &p), 0.5, 0, 1e-15);
    vp_perf hi = p;
    hi.sharpe = 3.0;
    CHECK(vp_perf_psr_vs(&p, &hi) < 0.5, "PSR against a higher Sharpe is below 0.5");
    // a year of bars is not extrapolated; a constant series has no moments and no SE
    double flat[252];
    for (int i = 0; i < 252; ++i) flat[i] = 0.001;
    CHECK_OK(vp_perf_compute(flat, 252, 252.0, &p));
    CHECK(p.extrapolated == 0, "a full year is not extrapolated");
    CHECK(isnan(p.skewness) && isnan(p.sharpe_se) && isnan(p.psr_vs_zero), "constant series: undefined");
}

int main(void) {
    RUN_TEST(test_norm_quantile);
    RUN_TEST(test_sharpe_se);
    RUN_TEST(test_dsr_paper_example);
    RUN_TEST(test_perf_fields);
    return vpt_finish();
}
