/* The tear sheet's calendar-period returns (monthly, yearly) and the return histogram
 * (metrics/tear_sheet.h). */
#include <math.h>
#include <string.h>

#include "metrics/tear_sheet.h"
#include "vulpes/data.h"

#define MS_PER_DAY 86400000LL

/* The UTC year and month of a Unix ms time. */
static void year_month(int64_t ms, int32_t* year, int32_t* month) {
    // floor division, so times before 1970 land on the right day
    int64_t days = ms / MS_PER_DAY;
    if (ms % MS_PER_DAY < 0) days -= 1;
    int64_t y;
    int m, d;
    vp_civil_from_days(days, &y, &m, &d);
    *year = (int32_t)y;
    *month = (int32_t)m;
}

vp_status vp_tear_period_returns(const int64_t* times_ms, const double* equity, int64_t n, int by_year,
                                 vp_period_return* out, int64_t cap, int64_t* count) {
    VP_REQUIRE(count && n >= 0 && ((times_ms && equity) || n == 0) && cap >= 0 && (out || cap == 0),
               VP_ERR_INVALID_ARG, "vp_tear_period_returns: times, equity, out and count must be given (n = %lld)",
               (long long)n);
    *count = 0;
    // runs of returns (points 1 .. n-1) that share a year (and month)
    int64_t i = 1;
    while (i < n) {
        int32_t y, m;
        year_month(times_ms[i], &y, &m);
        int64_t j = i + 1;
        for (; j < n; ++j) {
            int32_t yj, mj;
            year_month(times_ms[j], &yj, &mj);
            if (yj != y || (!by_year && mj != m)) break;
        }
        if (*count < cap) {
            vp_period_return* p = &out[*count];
            p->year = y;
            p->month = by_year ? 0 : m;
            p->first = i;
            p->last = j - 1;
            p->ret = equity[i - 1] > 0.0 ? equity[j - 1] / equity[i - 1] - 1.0 : NAN;
        }
        ++*count;
        i = j;
    }
    return VP_OK;
}

vp_status vp_tear_histogram(const double* x, int64_t n, int bins, int64_t* counts, double* lo, double* hi) {
    VP_REQUIRE(counts && lo && hi && bins >= 1 && n >= 0 && (x || n == 0), VP_ERR_INVALID_ARG,
               "vp_tear_histogram: x, counts, lo and hi must be given, bins >= 1 (got %d)", bins);
    memset(counts, 0, sizeof *counts * (size_t)bins);
    double a = INFINITY, b = -INFINITY;
    for (int64_t i = 0; i < n; ++i)
        if (isfinite(x[i])) a = fmin(a, x[i]), b = fmax(b, x[i]);
    if (a > b) {
        *lo = 0.0, *hi = 1.0;
        return VP_OK;
    }
    // numpy widens a zero range to [x - 0.5, x + 0.5]
    if (a == b) a -= 0.5, b += 0.5;
    *lo = a, *hi = b;
    // numpy's bin of v: (v - lo) / (hi - lo) x bins truncated, the maximum in the last bin, then
    // moved by one where v falls on the other side of an edge of numpy.linspace(lo, hi, bins + 1)
    const double step = (b - a) / (double)bins;
    for (int64_t i = 0; i < n; ++i) {
        const double v = x[i];
        if (!isfinite(v)) continue;
        int64_t k = (int64_t)((v - a) / (b - a) * (double)bins);
        if (k >= bins) k = bins - 1;
        if (k < 0) k = 0;
        if (v < (double)k * step + a) --k;
        else if (k != bins - 1 && v >= ((k + 1 == bins) ? b : (double)(k + 1) * step + a)) ++k;
        counts[k]++;
    }
    return VP_OK;
}
