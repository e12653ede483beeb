/* Tear-sheet statistics of a strategy's per-bar returns: the shape of their distribution
 * (scipy.stats.skew and kurtosis, bias = True), the historical tail at 95 % (empyrical's
 * value_at_risk and conditional_value_at_risk) and the figures against a benchmark over the
 * same bars (empyrical's beta, alpha and excess_sharpe, the correlation, the tracking error).
 * NaN returns are skipped as empyrical skips them: pairwise where both series are used. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

/* The tail: 95 % historical value at risk and the conditional value at risk. */
#define TEAR_CUTOFF 0.05

/* Below this variance of the benchmark, beta is undefined (empyrical's rule). */
#define TEAR_MIN_BENCH_VAR 1.0e-30

/* qsort order of doubles (no NaN reaches it). */
static int cmp_double(const void* a, const void* b) {
    const double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* numpy's linear interpolation between a and b at t in [0, 1] (the form of numpy.percentile:
 * from a below one half, from b above, so the ends are exact). */
static double lerp(double a, double b, double t) {
    const double d = b - a;
    return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

/* VaR and CVaR at 95 % from the m valid values of x, sorted into s [m]. */
static void tear_tail(const double* x, int64_t n, int64_t m, double* s, vp_tear* out) {
    if (m < 2) return;
    int64_t j = 0;
    for (int64_t i = 0; i < n; ++i)
        if (!isnan(x[i])) s[j++] = x[i];
    qsort(s, (size_t)m, sizeof(double), cmp_double);
    // numpy.percentile(x, 5), linear: position (m - 1) x 0.05 between its two neighbours
    const double h = (double)(m - 1) * TEAR_CUTOFF;
    const int64_t k = (int64_t)floor(h);
    out->var_95 = lerp(s[k], s[k + 1], h - (double)k);
    // empyrical's CVaR: the mean of the k + 1 lowest, k = int((m - 1) x cutoff)
    double sum = 0.0;
    for (int64_t i = 0; i <= k; ++i) sum += s[i];
    out->cvar_95 = sum / (double)(k + 1);
}

/* Beta, alpha, correlation, tracking error and information ratio over the p bars where
 * neither r nor b is NaN. */
static void tear_relative(const double* r, const double* b, int64_t n, int64_t p, double ppy, double rf_bar,
                          vp_tear* out) {
    if (p < 2) return;
    double sr = 0.0, sb = 0.0, sa = 0.0;
    double r_lo = INFINITY, r_hi = -INFINITY, b_lo = INFINITY, b_hi = -INFINITY, a_lo = INFINITY, a_hi = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(r[i]) || isnan(b[i])) continue;
        const double a = r[i] - b[i];
        sr += r[i];
        sb += b[i];
        sa += a;
        r_lo = fmin(r_lo, r[i]), r_hi = fmax(r_hi, r[i]);
        b_lo = fmin(b_lo, b[i]), b_hi = fmax(b_hi, b[i]);
        a_lo = fmin(a_lo, a), a_hi = fmax(a_hi, a);
    }
    const double mr = sr / (double)p, mb = sb / (double)p, ma = sa / (double)p;
    double crb = 0.0, crr = 0.0, cbb = 0.0, caa = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(r[i]) || isnan(b[i])) continue;
        const double er = r[i] - mr, eb = b[i] - mb, ea = (r[i] - b[i]) - ma;
        crb += er * eb;
        crr += er * er;
        cbb += eb * eb;
        caa += ea * ea;
    }
    // beta: population covariance over the benchmark's population variance
    const double var_b = cbb / (double)p;
    if (var_b >= TEAR_MIN_BENCH_VAR && b_lo != b_hi) out->beta = (crb / (double)p) / var_b;
    // alpha: the mean per-bar excess over beta times the benchmark's excess, compounded a year
    if (!isnan(out->beta)) {
        double s = 0.0;
        for (int64_t i = 0; i < n; ++i)
            if (!isnan(r[i]) && !isnan(b[i])) s += (r[i] - rf_bar) - out->beta * (b[i] - rf_bar);
        out->alpha = pow(1.0 + s / (double)p, ppy) - 1.0;
    }
    // correlation: undefined when either series is constant
    if (r_lo != r_hi && b_lo != b_hi) out->correlation = crb / sqrt(crr * cbb);
    // active returns r - b: sample deviation (ddof 1), exactly 0 when they are constant
    const double sd_a = a_lo == a_hi ? 0.0 : sqrt(caa / (double)(p - 1));
    out->tracking_error = sd_a * sqrt(ppy);
    out->information_ratio = vp_metric_ratio(a_lo == a_hi ? a_lo : ma, sd_a) * sqrt(ppy);
}

vp_status vp_tear_compute(const double* returns, const double* benchmark, int64_t n, const vp_annual* a,
                          vp_tear* out) {
    VP_REQUIRE(out && a, VP_ERR_INVALID_ARG, "vp_tear_compute: out and the annualisation must not be NULL");
    VP_REQUIRE(n >= 0 && ((returns && benchmark) || n == 0), VP_ERR_INVALID_ARG,
               "vp_tear_compute: returns or benchmark is NULL or n = %lld is negative", (long long)n);
    const double ppy = a->periods_per_year, rf = a->risk_free_rate;
    VP_REQUIRE(isfinite(ppy) && ppy > 0.0, VP_ERR_INVALID_ARG,
               "vp_tear_compute: periods_per_year = %g must be positive and finite", ppy);
    VP_REQUIRE(isfinite(rf), VP_ERR_INVALID_ARG,
               "vp_tear_compute: the risk-free rate (metrics.risk_free_rate) is %g; it must be finite", rf);
    memset(out, 0, sizeof *out);
    out->n_returns = n;
    out->periods_per_year = ppy;
    out->risk_free_rate = rf;
    out->skewness = out->excess_kurtosis = out->var_95 = out->cvar_95 = NAN;
    out->beta = out->alpha = out->correlation = out->tracking_error = out->information_ratio = NAN;

    // count the valid returns and pairs; infinities are an upstream error
    double lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; ++i) {
        VP_REQUIRE(!isinf(returns[i]), VP_ERR_NUMERIC, "tear-sheet statistics: strategy return %lld is %s",
                   (long long)i, returns[i] > 0 ? "+inf" : "-inf");
        VP_REQUIRE(!isinf(benchmark[i]), VP_ERR_NUMERIC, "tear-sheet statistics: benchmark return %lld is %s",
                   (long long)i, benchmark[i] > 0 ? "+inf" : "-inf");
        if (isnan(returns[i])) continue;
        out->n_valid++;
        lo = fmin(lo, returns[i]), hi = fmax(hi, returns[i]);
        if (!isnan(benchmark[i])) out->n_pairs++;
    }
    // skewness and kurtosis: vp_perf's central moments of the valid returns (a constant shift
    // such as the risk-free rate moves neither), NaN for a constant series as scipy says
    if (out->n_valid >= 2 && lo != hi) {
        vp_perf p;
        VP_TRY(vp_perf_compute_rf(returns, n, ppy, 0.0, &p));
        out->skewness = p.skewness;
        out->excess_kurtosis = p.kurtosis - 3.0;
    }
    if (out->n_valid >= 2) {
        double* s = (double*)malloc(sizeof(double) * (size_t)out->n_valid);
        VP_REQUIRE(s != NULL, VP_ERR_OOM, "tear-sheet statistics: a sorted copy of %lld returns",
                   (long long)out->n_valid);
        tear_tail(returns, n, out->n_valid, s, out);
        free(s);
    }
    tear_relative(returns, benchmark, n, out->n_pairs, ppy, rf / ppy, out);
    return VP_OK;
}
