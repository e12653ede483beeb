/* Statistical weight of a Sharpe ratio: its standard error (Mertens 2002), the probabilistic
 * Sharpe ratio (Bailey and Lopez de Prado 2012) and the deflated Sharpe ratio of a selection
 * among trials (Bailey and Lopez de Prado 2014), with the normal CDF and quantile they need. */
#include <math.h>

#include "vulpes/metrics.h"

/* The Euler-Mascheroni constant. */
#define VP_EULER_GAMMA 0.57721566490153286061
/* sqrt(2 pi) and e (C11 has no M_PI, M_E). */
#define VP_SQRT_2PI 2.50662827463100050242
#define VP_E 2.71828182845904523536

double vp_norm_cdf(double x) { return 0.5 * erfc(-x / sqrt(2.0)); }

/* Acklam's rational approximation of Phi^-1 for p in (0, 0.5] (relative error < 1.2e-9). */
static double quantile_start(double p) {
    static const double a[6] = {-3.969683028665376e+01, 2.209460984245205e+02, -2.759285104469687e+02,
                                1.383577518672690e+02,  -3.066479806614716e+01, 2.506628277459239e+00};
    static const double b[5] = {-5.447609879822406e+01, 1.615858368580409e+02, -1.556989798598866e+02,
                                6.680131188771972e+01,  -1.328068155288572e+01};
    static const double c[6] = {-7.784894002430293e-03, -3.223964580411365e-01, -2.400758277161838e+00,
                                -2.549732539343734e+00, 4.374664141464968e+00,  2.938163982698783e+00};
    static const double d[4] = {7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e+00,
                                3.754408661907416e+00};
    if (p < 0.02425) {
        double q = sqrt(-2.0 * log(p));
        return (((((c[0] * q + c[1]) * q + c[2]) * q + c[3]) * q + c[4]) * q + c[5]) /
               ((((d[0] * q + d[1]) * q + d[2]) * q + d[3]) * q + 1.0);
    }
    double q = p - 0.5, r = q * q;
    return (((((a[0] * r + a[1]) * r + a[2]) * r + a[3]) * r + a[4]) * r + a[5]) * q /
           (((((b[0] * r + b[1]) * r + b[2]) * r + b[3]) * r + b[4]) * r + 1.0);
}

double vp_norm_quantile(double p) {
    if (isnan(p) || p < 0.0 || p > 1.0) return NAN;
    if (p == 0.0) return -INFINITY;
    if (p == 1.0) return INFINITY;
    // the upper half by symmetry: 1 - p is exact there, and erfc keeps the lower tail precise
    if (p > 0.5) return -vp_norm_quantile(1.0 - p);
    // one Halley step on Phi(x) - p brings Acklam's start to double precision
    double x = quantile_start(p);
    double e = vp_norm_cdf(x) - p;
    double u = e * VP_SQRT_2PI * exp(0.5 * x * x);
    return x - u / (1.0 + 0.5 * x * u);
}

double vp_sharpe_variance(double sr, double skew, double kurt, int64_t n) {
    if (n < 2 || !isfinite(sr) || !isfinite(skew) || !isfinite(kurt)) return NAN;
    double v = 1.0 - skew * sr + 0.25 * (kurt - 1.0) * sr * sr;
    return v >= 0.0 ? v / (double)(n - 1) : NAN;
}

double vp_psr(double sr, double sr_star, double skew, double kurt, int64_t n) {
    double v = vp_sharpe_variance(sr, skew, kurt, n);
    if (isnan(v) || isnan(sr_star)) return NAN;
    double d = sr - sr_star;
    if (v == 0.0) return d > 0.0 ? 1.0 : d < 0.0 ? 0.0 : NAN;
    return vp_norm_cdf(d / sqrt(v));
}

double vp_perf_psr_vs(const vp_perf* p, const vp_perf* bench) {
    if (!p || !bench || !(p->periods_per_year > 0.0)) return NAN;
    double k = sqrt(p->periods_per_year);
    return vp_psr(p->sharpe / k, bench->sharpe / k, p->skewness, p->kurtosis, p->n_valid);
}

double vp_expected_max_sharpe(double var_sr, int64_t n_trials) {
    if (n_trials < 2 || !(var_sr >= 0.0) || isinf(var_sr)) return NAN;
    double n = (double)n_trials;
    return sqrt(var_sr) * ((1.0 - VP_EULER_GAMMA) * vp_norm_quantile(1.0 - 1.0 / n) +
                           VP_EULER_GAMMA * vp_norm_quantile(1.0 - 1.0 / (n * VP_E)));
}

void vp_selection_add(vp_selection* s, double sharpe) {
    if (!s || !isfinite(sharpe)) return;
    s->n_trials++;
    double d = sharpe - s->mean;
    s->mean += d / (double)s->n_trials;
    s->m2 += d * (sharpe - s->mean);
}

double vp_selection_variance(const vp_selection* s) {
    if (!s || s->n_trials < 2) return NAN;
    return s->m2 / (double)(s->n_trials - 1);
}

double vp_deflated_sharpe_trials(const vp_perf* p, int64_t n_trials, double var_annual, double* sr0_annual) {
    if (sr0_annual) *sr0_annual = NAN;
    if (!p || !(p->periods_per_year > 0.0)) return NAN;
    double ppy = p->periods_per_year;
    // the trials' variance in per-period units: annual variance / ppy
    double sr0 = vp_expected_max_sharpe(var_annual / ppy, n_trials);
    if (isnan(sr0)) return NAN;
    if (sr0_annual) *sr0_annual = sr0 * sqrt(ppy);
    return vp_psr(p->sharpe / sqrt(ppy), sr0, p->skewness, p->kurtosis, p->n_valid);
}

double vp_deflated_sharpe(const vp_selection* s, const vp_perf* best, double* sr0_annual) {
    if (sr0_annual) *sr0_annual = NAN;
    if (!s) return NAN;
    return vp_deflated_sharpe_trials(best, s->n_trials, vp_selection_variance(s), sr0_annual);
}

const char* vp_psr_verdict(double psr) {
    if (isnan(psr)) return "undefined (too few returns or no spread)";
    if (psr >= 0.95) return "a gain distinguishable from noise at 95 %";
    if (psr <= 0.05) return "a loss distinguishable from noise at 95 %";
    return "not distinguishable from noise at 95 %";
}
