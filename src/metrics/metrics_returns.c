/* Return metrics of one per-bar return series, with empyrical's definitions and NaN rules;
 * the risk-adjusted ratios of the excess returns over a yearly risk-free rate. */
#include <math.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

double vp_metric_ratio(double num, double den) {
    if (isnan(num) || isnan(den)) return NAN;
    if (den != 0.0) return num / den;
    if (num > 0.0) return INFINITY;
    if (num < 0.0) return -INFINITY;
    return NAN;
}

const char* vp_perf_status_name(vp_perf_status s) {
    switch (s) {
    case VP_PERF_OK: return "ok";
    case VP_PERF_SHORT: return "short";
    case VP_PERF_ALL_NAN: return "all_nan";
    case VP_PERF_EMPTY: return "empty";
    default: return "unknown";
    }
}

/* Sets every metric to NaN (undefined). */
static void perf_undefined(vp_perf* p) {
    p->total_return = p->annual_return = p->annual_volatility = NAN;
    p->sharpe = p->sortino = p->downside_risk = p->max_drawdown = p->calmar = NAN;
    p->skewness = p->kurtosis = p->sharpe_se = p->psr_vs_zero = NAN;
}

vp_status vp_perf_compute(const double* returns, int64_t n, double periods_per_year, vp_perf* out) {
    return vp_perf_compute_rf(returns, n, periods_per_year, 0.0, out);
}

vp_status vp_perf_compute_annual(const double* returns, int64_t n, const vp_annual* a, vp_perf* out) {
    VP_REQUIRE(a, VP_ERR_INVALID_ARG, "vp_perf_compute_annual: the annualisation is NULL");
    return vp_perf_compute_rf(returns, n, a->periods_per_year, a->risk_free_rate, out);
}

vp_status vp_perf_compute_rf(const double* returns, int64_t n, double periods_per_year, double risk_free_rate,
                             vp_perf* out) {
    VP_REQUIRE(out, VP_ERR_INVALID_ARG, "vp_perf_compute: out is NULL");
    VP_REQUIRE(n >= 0 && (returns || n == 0), VP_ERR_INVALID_ARG,
               "vp_perf_compute: returns is NULL or n = %lld is negative", (long long)n);
    VP_REQUIRE(isfinite(periods_per_year) && periods_per_year > 0.0, VP_ERR_INVALID_ARG,
               "vp_perf_compute: periods_per_year = %g must be positive and finite", periods_per_year);
    VP_REQUIRE(isfinite(risk_free_rate), VP_ERR_INVALID_ARG,
               "vp_perf_compute: the risk-free rate (metrics.risk_free_rate) is %g; it must be finite", risk_free_rate);
    memset(out, 0, sizeof *out);
    out->n_returns = n;
    out->periods_per_year = periods_per_year;
    out->risk_free_rate = risk_free_rate;
    // the risk-free return of one bar, simple: the yearly rate spread evenly over the bars
    const double rf_bar = risk_free_rate / periods_per_year;
    perf_undefined(out);
    out->years = (double)n / periods_per_year;
    out->extrapolated = n > 0 && out->years < 1.0;

    // count valid returns; infinities are an upstream error, NaN is skipped
    int64_t n_valid = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
        VP_REQUIRE(!isinf(returns[i]), VP_ERR_NUMERIC, "vp_perf_compute: returns[%lld] is %s", (long long)i,
                   returns[i] > 0 ? "+inf" : "-inf");
        if (isnan(returns[i])) continue;
        if (first < 0) first = i;
        n_valid++;
    }
    out->n_valid = n_valid;
    if (n == 0) {
        out->status = VP_PERF_EMPTY;
        return VP_OK;
    }
    if (n_valid == 0) {
        out->status = VP_PERF_ALL_NAN;
        return VP_OK;
    }
    out->status = n_valid >= 2 ? VP_PERF_OK : VP_PERF_SHORT;

    // compounded curve from 1 (NaN counts as 0): total return and max drawdown
    double v = 1.0, peak = 1.0, mdd = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(returns[i])) continue;
        v *= 1.0 + returns[i];
        if (v > peak) peak = v;
        double dd = (v - peak) / peak;
        if (dd < mdd) mdd = dd;
    }
    out->total_return = v - 1.0;
    out->max_drawdown = mdd;

    // CAGR over n_returns / ppy years (NaN when the curve ends below zero)
    out->annual_return = pow(v, periods_per_year / (double)n) - 1.0;
    out->calmar = mdd < 0.0 ? out->annual_return / fabs(mdd) : vp_metric_ratio(out->annual_return, 0.0);

    // mean and sample deviation of the excess returns x = r - rf_bar, shifted by the first
    // valid one so a constant series has a deviation of exactly 0; downside below rf_bar
    double r0 = returns[first] - rf_bar, sum_d = 0.0, sum_down2 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(returns[i])) continue;
        const double x = returns[i] - rf_bar;
        sum_d += x - r0;
        double down = x < 0.0 ? x : 0.0;
        sum_down2 += down * down;
    }
    double mean_d = sum_d / (double)n_valid, mean = r0 + mean_d;
    out->downside_risk = sqrt(sum_down2 / (double)n_valid) * sqrt(periods_per_year);
    if (n_valid < 2) return VP_OK;
    double ss = 0.0, s3 = 0.0, s4 = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(returns[i])) continue;
        double e = ((returns[i] - rf_bar) - r0) - mean_d, e2 = e * e;
        ss += e2;
        s3 += e2 * e;
        s4 += e2 * e2;
    }
    double std = sqrt(ss / (double)(n_valid - 1));

    // annualised dispersion and the two risk-adjusted ratios (of the excess returns)
    out->annual_volatility = std * sqrt(periods_per_year);
    out->sharpe = vp_metric_ratio(mean, std) * sqrt(periods_per_year);
    out->sortino = vp_metric_ratio(mean * periods_per_year, out->downside_risk);

    // central moments over n_valid (Bailey and Lopez de Prado's skewness and kurtosis), the
    // standard error of the Sharpe and its probability of beating 0, in per-period units
    if (ss > 0.0) {
        double m2 = ss / (double)n_valid;
        out->skewness = (s3 / (double)n_valid) / (m2 * sqrt(m2));
        out->kurtosis = (s4 / (double)n_valid) / (m2 * m2);
        double sr = out->sharpe / sqrt(periods_per_year);
        out->sharpe_se = sqrt(vp_sharpe_variance(sr, out->skewness, out->kurtosis, n_valid)) * sqrt(periods_per_year);
        out->psr_vs_zero = vp_psr(sr, 0.0, out->skewness, out->kurtosis, n_valid);
    }
    return VP_OK;
}
