/* The annualisation factor: bars per calendar year measured over the span of the bar times,
 * or given by the caller. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

#define MS_PER_DAY 86400000.0
#define DAYS_PER_YEAR 365.25

/* qsort order of int64 values. */
static int cmp_i64(const void* a, const void* b) {
    int64_t x = *(const int64_t*)a, y = *(const int64_t*)b;
    return (x > y) - (x < y);
}

vp_status vp_annual_measure(const int64_t* times_ms, int64_t n, vp_annual* out) {
    VP_REQUIRE(times_ms && out, VP_ERR_INVALID_ARG, "vp_annual_measure: times_ms and out must not be NULL");
    VP_REQUIRE(n >= 2, VP_ERR_INVALID_ARG, "vp_annual_measure: %lld bar times; the bar spacing needs at least 2",
               (long long)n);

    // spacings between consecutive bars, each positive
    int64_t* gaps = malloc((size_t)(n - 1) * sizeof *gaps);
    VP_REQUIRE(gaps, VP_ERR_OOM, "vp_annual_measure: no memory for %lld spacings", (long long)(n - 1));
    for (int64_t i = 1; i < n; ++i) {
        if (times_ms[i] <= times_ms[i - 1]) {
            free(gaps);
            VP_FAIL(VP_ERR_INVALID_ARG, "vp_annual_measure: bar times not strictly increasing at %lld (%lld after %lld ms)",
                    (long long)i, (long long)times_ms[i], (long long)times_ms[i - 1]);
        }
        gaps[i - 1] = times_ms[i] - times_ms[i - 1];
    }

    // median spacing (the mean of the middle two for an even count)
    qsort(gaps, (size_t)(n - 1), sizeof *gaps, cmp_i64);
    int64_t m = n - 1;
    double median_ms = m % 2 ? (double)gaps[m / 2] : 0.5 * ((double)gaps[m / 2 - 1] + (double)gaps[m / 2]);
    free(gaps);

    // n bars, each standing for one median spacing at the end of the span
    double span_ms = (double)(times_ms[n - 1] - times_ms[0]) + median_ms;
    memset(out, 0, sizeof *out);
    out->method = VP_ANNUAL_MEASURED;
    out->n_bars = n;
    out->median_interval_s = median_ms / 1000.0;
    out->span_days = span_ms / MS_PER_DAY;
    out->periods_per_year = (double)n * DAYS_PER_YEAR / out->span_days;
    return VP_OK;
}

vp_status vp_annual_given(double periods_per_year, vp_annual* out) {
    VP_REQUIRE(out, VP_ERR_INVALID_ARG, "vp_annual_given: out is NULL");
    VP_REQUIRE(isfinite(periods_per_year) && periods_per_year > 0.0, VP_ERR_INVALID_ARG,
               "vp_annual_given: periods_per_year = %g must be positive and finite", periods_per_year);
    memset(out, 0, sizeof *out);
    out->method = VP_ANNUAL_GIVEN;
    out->periods_per_year = periods_per_year;
    return VP_OK;
}

const char* vp_annual_describe(const vp_annual* a, char* buf, size_t n) {
    if (!buf || n == 0) return "";
    char rf[64];
    if (a) vp_risk_free_describe(a->risk_free_rate, rf, sizeof rf);
    if (!a) {
        snprintf(buf, n, "annualisation unknown");
    } else if (a->method == VP_ANNUAL_MEASURED) {
        snprintf(buf, n, "%.2f periods/year (measured: %lld bars over %.1f days, median bar spacing %g s); %s",
                 a->periods_per_year, (long long)a->n_bars, a->span_days, a->median_interval_s, rf);
    } else {
        snprintf(buf, n, "%.2f periods/year (given); %s", a->periods_per_year, rf);
    }
    return buf;
}

const char* vp_risk_free_describe(double risk_free_rate, char* buf, size_t n) {
    if (!buf || n == 0) return "";
    // a percentage with up to 4 significant digits, 0 as "0 %"
    double pct = 100.0 * risk_free_rate;
    snprintf(buf, n, "risk-free rate %.4g %% a year", pct == 0.0 ? 0.0 : pct);
    return buf;
}
