/* The bar container: allocation, copies, views, invariants and spacing statistics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/data.h"

vp_status vp_bars_alloc(vp_bars* b, int64_t n) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "vp_bars_alloc: b is NULL");
    memset(b, 0, sizeof *b);
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_bars_alloc: n = %lld, need n >= 1", (long long)n);
    VP_REQUIRE(n <= INT64_MAX / 48, VP_ERR_INVALID_ARG, "vp_bars_alloc: n = %lld is too large", (long long)n);

    /* One block: the int64 times, then five double columns. */
    char* block = (char*)calloc((size_t)n, 6 * sizeof(double));
    if (!block) VP_FAIL(VP_ERR_OOM, "vp_bars_alloc: %lld bars (%lld bytes)", (long long)n, (long long)n * 48);
    b->n = n;
    b->time_ms = (int64_t*)block;
    b->open = (double*)(block + (size_t)n * 8);
    b->high = b->open + n;
    b->low = b->high + n;
    b->close = b->low + n;
    b->volume = b->close + n;
    b->owner = 1;
    return VP_OK;
}

vp_status vp_bars_alloc_spread(vp_bars* b) {
    VP_REQUIRE(b != NULL && b->owner && b->n >= 1, VP_ERR_INVALID_ARG, "vp_bars_alloc_spread: bars are NULL, empty "
               "or not owned");
    if (b->spread) return VP_OK;
    b->spread = (double*)calloc((size_t)b->n, sizeof(double));
    if (!b->spread) VP_FAIL(VP_ERR_OOM, "vp_bars_alloc_spread: %lld bars", (long long)b->n);
    return VP_OK;
}

vp_status vp_bars_copy(const vp_bars* src, int64_t begin, int64_t end, vp_bars* out) {
    VP_REQUIRE(src != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_bars_copy: NULL argument");
    VP_REQUIRE(begin >= 0 && begin < end && end <= src->n, VP_ERR_INVALID_ARG,
               "vp_bars_copy: [%lld, %lld) is not a non-empty range inside [0, %lld)", (long long)begin,
               (long long)end, (long long)src->n);
    const int64_t n = end - begin;
    VP_TRY(vp_bars_alloc(out, n));
    if (src->spread) {
        vp_status s = vp_bars_alloc_spread(out);
        if (s != VP_OK) {
            vp_bars_free(out);
            return s;
        }
        memcpy(out->spread, src->spread + begin, (size_t)n * sizeof(double));
    }
    memcpy(out->time_ms, src->time_ms + begin, (size_t)n * sizeof(int64_t));
    memcpy(out->open, src->open + begin, (size_t)n * sizeof(double));
    memcpy(out->high, src->high + begin, (size_t)n * sizeof(double));
    memcpy(out->low, src->low + begin, (size_t)n * sizeof(double));
    memcpy(out->close, src->close + begin, (size_t)n * sizeof(double));
    memcpy(out->volume, src->volume + begin, (size_t)n * sizeof(double));
    return VP_OK;
}

void vp_bars_free(vp_bars* b) {
    if (!b) return;
    if (b->owner) {
        free(b->time_ms);
        free(b->spread);
    }
    memset(b, 0, sizeof *b);
}

vp_status vp_bars_slice(const vp_bars* b, int64_t begin, int64_t end, vp_bars* view) {
    VP_REQUIRE(b != NULL && view != NULL, VP_ERR_INVALID_ARG, "vp_bars_slice: NULL argument");
    VP_REQUIRE(begin >= 0 && begin < end && end <= b->n, VP_ERR_INVALID_ARG,
               "vp_bars_slice: [%lld, %lld) is not a non-empty range inside [0, %lld)", (long long)begin,
               (long long)end, (long long)b->n);
    view->n = end - begin;
    view->time_ms = b->time_ms + begin;
    view->open = b->open + begin;
    view->high = b->high + begin;
    view->low = b->low + begin;
    view->close = b->close + begin;
    view->volume = b->volume + begin;
    view->spread = b->spread ? b->spread + begin : NULL;
    view->owner = 0;
    return VP_OK;
}

vp_status vp_bars_validate(const vp_bars* b) {
    VP_REQUIRE(b != NULL && b->n >= 1 && b->time_ms && b->open && b->high && b->low && b->close && b->volume,
               VP_ERR_INVALID_ARG, "vp_bars_validate: NULL or empty bars");
    for (int64_t t = 0; t < b->n; ++t) {
        double o = b->open[t], h = b->high[t], l = b->low[t], c = b->close[t], v = b->volume[t];
        /* Finite and positive prices, non-negative volume. */
        if (!isfinite(o) || !isfinite(h) || !isfinite(l) || !isfinite(c) || !isfinite(v))
            VP_FAIL(VP_ERR_NUMERIC, "bar %lld: a value is not finite (non-finite price or volume)", (long long)t);
        if (!(l > 0.0))
            VP_FAIL(VP_ERR_NUMERIC, "bar %lld: low %.17g is not positive (non-positive price)", (long long)t, l);
        if (v < 0.0) VP_FAIL(VP_ERR_NUMERIC, "bar %lld: volume %.17g (negative volume)", (long long)t, v);
        /* Ordering inside the bar and in time. */
        if (h < l) VP_FAIL(VP_ERR_NUMERIC, "bar %lld: high %.17g < low %.17g (high < low)", (long long)t, h, l);
        if (o < l || o > h) VP_FAIL(VP_ERR_NUMERIC, "bar %lld: open %.17g outside [low, high]", (long long)t, o);
        if (c < l || c > h) VP_FAIL(VP_ERR_NUMERIC, "bar %lld: close %.17g outside [low, high]", (long long)t, c);
        if (b->spread && !(isfinite(b->spread[t]) && b->spread[t] >= 0.0))
            VP_FAIL(VP_ERR_NUMERIC, "bar %lld: spread %.17g (non-finite or negative spread)", (long long)t,
                    b->spread[t]);
        if (t > 0 && b->time_ms[t] <= b->time_ms[t - 1])
            VP_FAIL(VP_ERR_NUMERIC, "bar %lld: time %lld is not after %lld (time not increasing)", (long long)t,
                    (long long)b->time_ms[t], (long long)b->time_ms[t - 1]);
    }
    return VP_OK;
}

/* The k-th smallest of a[0, n) (a is reordered). */
static int64_t select_kth(int64_t* a, int64_t n, int64_t k) {
    int64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        int64_t pivot = a[lo + (hi - lo) / 2];
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] < pivot) ++i;
            while (a[j] > pivot) --j;
            if (i <= j) {
                int64_t tmp = a[i];
                a[i] = a[j];
                a[j] = tmp;
                ++i;
                --j;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            return a[k];
    }
    return a[k];
}

vp_status vp_bars_spacing(const vp_bars* b, vp_bar_spacing* out) {
    VP_REQUIRE(b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_bars_spacing: NULL argument");
    memset(out, 0, sizeof *out);
    if (b->n < 2) return VP_OK;

    /* Median spacing (the lower median for an even count). */
    int64_t m = b->n - 1;
    int64_t* d = (int64_t*)malloc((size_t)m * sizeof *d);
    if (!d) VP_FAIL(VP_ERR_OOM, "vp_bars_spacing: %lld spacings", (long long)m);
    for (int64_t t = 1; t < b->n; ++t) d[t - 1] = b->time_ms[t] - b->time_ms[t - 1];
    out->interval_ms = select_kth(d, m, (m - 1) / 2);
    free(d);

    /* Gaps: spacings above 1.5 x the interval, and the longest spacing. */
    for (int64_t t = 1; t < b->n; ++t) {
        int64_t s = b->time_ms[t] - b->time_ms[t - 1];
        if (2 * s > 3 * out->interval_ms) out->gaps++;
        if (s > out->largest_gap_ms) {
            out->largest_gap_ms = s;
            out->largest_gap_index = t;
        }
    }
    return VP_OK;
}
