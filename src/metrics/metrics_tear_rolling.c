/* The tear sheet's rolling Sharpe and volatility, and the worst drawdowns
 * (metrics/tear_sheet.h). */
#include <math.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "metrics/tear_sheet.h"

int64_t vp_tear_rolling_window(int64_t n, double periods_per_year) {
    int64_t half = (int64_t)llround(periods_per_year / 2.0);
    if (half >= 2 && n >= 2 * half) return half;
    return n / 4 > 2 ? n / 4 : 2;
}

/* Sums of the valid x - c over [a, b): count, sum and sum of squares. */
typedef struct roll_sums {
    int64_t n;
    double s1, s2;
} roll_sums;

static void sums_add(roll_sums* s, double v, double c, int sign) {
    if (isnan(v)) return;
    const double d = v - c;
    s->n += sign;
    s->s1 += sign * d;
    s->s2 += sign * d * d;
}

vp_status vp_tear_rolling(const double* r, int64_t n, int64_t w, const vp_annual* a, double* sharpe, double* vol) {
    VP_REQUIRE(a && sharpe && vol && r && w >= 2 && n >= w, VP_ERR_INVALID_ARG,
               "vp_tear_rolling: returns, annualisation and outputs must be given, 2 <= w = %lld <= n = %lld",
               (long long)w, (long long)n);
    const double ppy = a->periods_per_year, rf_bar = a->risk_free_rate / ppy, root = sqrt(ppy);
    // a shift near the values keeps the sums small; they are summed anew every w windows, so
    // rounding cannot pile up over a long series
    double c = 0.0;
    for (int64_t i = 0; i < n; ++i)
        if (!isnan(r[i])) {
            c = r[i];
            break;
        }
    roll_sums s = {0, 0.0, 0.0};
    for (int64_t k = 0; k + w <= n; ++k) {
        if (k % w == 0) {
            s = (roll_sums){0, 0.0, 0.0};
            for (int64_t i = k; i < k + w; ++i) sums_add(&s, r[i], c, +1);
        } else {
            sums_add(&s, r[k - 1], c, -1);
            sums_add(&s, r[k + w - 1], c, +1);
        }
        if (s.n < 2) {
            sharpe[k] = vol[k] = NAN;
            continue;
        }
        const double mean = c + s.s1 / (double)s.n;
        double var = (s.s2 - s.s1 * s.s1 / (double)s.n) / (double)(s.n - 1);
        // what is left of a constant window's variance after rounding is none
        if (var < 1e-26 * (mean * mean + 1e-300)) var = 0.0;
        const double sd = sqrt(var);
        vol[k] = sd * root;
        sharpe[k] = vp_metric_ratio(mean - rf_bar, sd) * root;
    }
    return VP_OK;
}

/* Inserts d among the count worst of out[k] (deepest first). */
static void keep_worst(vp_drawdown_period* out, int k, int* count, const vp_drawdown_period* d) {
    int at = *count;
    while (at > 0 && out[at - 1].depth > d->depth) --at;
    if (at >= k) return;
    int last = *count < k ? *count : k - 1;
    memmove(out + at + 1, out + at, sizeof *out * (size_t)(last - at));
    out[at] = *d;
    if (*count < k) ++*count;
}

vp_status vp_tear_worst_drawdowns(const double* equity, int64_t n, int k, vp_drawdown_period* out, int* count) {
    VP_REQUIRE(count && k >= 1 && out && n >= 0 && (equity || n == 0), VP_ERR_INVALID_ARG,
               "vp_tear_worst_drawdowns: equity, out and count must be given, k >= 1 (got %d)", k);
    *count = 0;
    // walk the curve: a point at or above the high-water mark ends the span under it
    int64_t peak = 0;
    int under = 0;
    vp_drawdown_period cur = {0, 0, -1, 0.0};
    for (int64_t i = 1; i < n; ++i) {
        if (equity[i] >= equity[peak]) {
            if (under) {
                cur.recovery = i;
                keep_worst(out, k, count, &cur);
                under = 0;
            }
            peak = i;
            continue;
        }
        const double depth = equity[peak] > 0.0 ? equity[i] / equity[peak] - 1.0 : -1.0;
        if (!under) cur = (vp_drawdown_period){peak, i, -1, depth}, under = 1;
        else if (depth < cur.depth) cur.trough = i, cur.depth = depth;
    }
    if (under) keep_worst(out, k, count, &cur);
    return VP_OK;
}
