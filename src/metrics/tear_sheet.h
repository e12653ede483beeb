/* Internal to the library: the tear sheet's statistics over time (docs/metrics.md, "The tear
 * sheet"): calendar-period returns (metrics_tear_periods.c), the return histogram
 * (metrics_tear_periods.c), rolling Sharpe and volatility and the worst drawdowns
 * (metrics_tear_rolling.c). report.html shows them; tests/test_tear_sheet.c and
 * python/tests/test_tearsheet.py check them against hand values, numpy and empyrical. */
#ifndef VP_METRICS_TEAR_SHEET_H
#define VP_METRICS_TEAR_SHEET_H

#include <stdint.h>

#include "vulpes/metrics.h"
#include "vulpes/status.h"

/* One calendar period's compounded return. */
typedef struct vp_period_return {
    int32_t year;  /* UTC year */
    int32_t month; /* 1 .. 12; 0 for a whole year */
    int64_t first; /* index of the period's first point (its first return is equity[first] / equity[first - 1]) */
    int64_t last;  /* index of its last point */
    double ret;    /* equity[last] / equity[first - 1] - 1 (NaN when that base is <= 0) */
} vp_period_return;

/* The returns of equity[n] per UTC calendar month (by_year 0) or year (by_year 1), as
 * empyrical.aggregate_returns groups them: the return of point i (equity[i] / equity[i - 1]
 * - 1, i >= 1) belongs to the period holding times_ms[i]. Writes the first min(count, cap)
 * periods in time order to out and their number to *count. */
vp_status vp_tear_period_returns(const int64_t* times_ms /* [n] */, const double* equity /* [n] */, int64_t n,
                                 int by_year, vp_period_return* out /* [cap] */, int64_t cap, int64_t* count);

/* numpy.histogram(x, bins): `bins` equal bins over [min, max] of the finite x, the last one
 * closed; counts[bins] and the range into *lo, *hi (a constant x: [x - 0.5, x + 0.5]). */
vp_status vp_tear_histogram(const double* x /* [n] */, int64_t n, int bins, int64_t* counts /* [bins] */,
                            double* lo, double* hi);

/* The rolling window of the tear sheet: six months of bars (round(periods_per_year / 2)) when
 * the n returns hold at least two such windows, else max(2, n / 4) bars. */
int64_t vp_tear_rolling_window(int64_t n, double periods_per_year);

/* empyrical.roll_sharpe_ratio and roll_annual_volatility over windows of w returns: for each
 * k in [0, n - w], the Sharpe of r[k .. k + w) (mean / std with ddof 1 of r - rf / ppy, times
 * sqrt(ppy): +-inf or NaN for a zero std) and its volatility (std, ddof 1, times sqrt(ppy)).
 * NaN returns are skipped as numpy's nanmean skips them (NaN with fewer than 2 valid). */
vp_status vp_tear_rolling(const double* r /* [n] */, int64_t n, int64_t w, const vp_annual* a,
                          double* sharpe /* [n - w + 1] */, double* vol /* [n - w + 1] */);

/* One drawdown: from a high-water mark down to its trough and back. */
typedef struct vp_drawdown_period {
    int64_t peak;     /* index of the high-water mark */
    int64_t trough;   /* index of the lowest point before the recovery */
    int64_t recovery; /* index of the first point back at the peak's level, -1 when none by the end */
    double depth;     /* equity[trough] / equity[peak] - 1 (< 0) */
} vp_drawdown_period;

/* The k worst drawdowns of equity[n], deepest first (pyfolio's top drawdowns: the underwater
 * spans between a high-water mark and its recovery, which never overlap); *count of them
 * (<= k). */
vp_status vp_tear_worst_drawdowns(const double* equity /* [n] */, int64_t n, int k,
                                  vp_drawdown_period* out /* [k] */, int* count);

#endif /* VP_METRICS_TEAR_SHEET_H */
