/* Time-based splits: one train / val / test split, walk-forward folds, checks. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "vulpes/split.h"

/* a + b for counts a, b >= 0, saturated at INT64_MAX (a sum that large never fits in any data). */
static int64_t sat_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* Bars a fold occupies: warm-up, the three spans and two embargoes (all >= 0), saturated. */
static int64_t fold_need(int64_t warmup, int64_t train, int64_t val, int64_t test, int64_t embargo) {
    return sat_add(sat_add(sat_add(warmup, train), sat_add(val, test)), sat_add(embargo, embargo));
}

/* A bar count for a message: the number, or "more than INT64_MAX" when it saturated. */
static const char* count_text(int64_t n, char* buf, size_t cap) {
    if (n == INT64_MAX) snprintf(buf, cap, "more than %lld", (long long)INT64_MAX);
    else snprintf(buf, cap, "%lld", (long long)n);
    return buf;
}

/* A fold laid out from train.begin with the given lengths. */
static vp_split layout(int64_t begin, int64_t train, int64_t val, int64_t test, int64_t embargo) {
    vp_split s;
    s.train.begin = begin;
    s.train.end = begin + train;
    s.val.begin = s.train.end + embargo;
    s.val.end = s.val.begin + val;
    s.test.begin = s.val.end + embargo;
    s.test.end = s.test.begin + test;
    return s;
}

vp_status vp_split_check(const vp_split* s, int64_t n_bars, int64_t warmup) {
    VP_REQUIRE(s != NULL, VP_ERR_INVALID_ARG, "vp_split_check: NULL split");
    const vp_span* spans[3] = {&s->train, &s->val, &s->test};
    static const char* names[3] = {"train", "val", "test"};
    for (int i = 0; i < 3; ++i) {
        const vp_span* p = spans[i];
        /* Non-empty, inside the bars, after the warm-up. */
        if (p->end <= p->begin)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s span [%lld, %lld) is empty (zero length)", names[i], (long long)p->begin,
                    (long long)p->end);
        if (p->begin < warmup)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s span [%lld, %lld) starts inside the %lld warm-up bars", names[i],
                    (long long)p->begin, (long long)p->end, (long long)warmup);
        if (p->end > n_bars)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s span [%lld, %lld) ends past the last of %lld bars (too little data)",
                    names[i], (long long)p->begin, (long long)p->end, (long long)n_bars);
        /* In time order, no overlap with the previous span. */
        if (i > 0 && p->begin < spans[i - 1]->end)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s span [%lld, %lld) overlaps or precedes %s span [%lld, %lld) (out of order)",
                    names[i], (long long)p->begin, (long long)p->end, names[i - 1], (long long)spans[i - 1]->begin,
                    (long long)spans[i - 1]->end);
    }
    return VP_OK;
}

vp_status vp_split_make(int64_t n_bars, const vp_split_cfg* c, vp_split* out) {
    VP_REQUIRE(c != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_split_make: NULL argument");
    VP_REQUIRE(c->embargo >= 0 && c->warmup >= 0, VP_ERR_INVALID_ARG,
               "vp_split_make: embargo %lld and warmup %lld must be >= 0", (long long)c->embargo, (long long)c->warmup);
    memset(out, 0, sizeof *out);
    int by_len = c->train_len != 0 || c->val_len != 0 || c->test_len != 0;
    char need_text[64];

    /* Explicit lengths: all three positive, placed so that test ends at the last bar. */
    if (by_len) {
        VP_REQUIRE(c->train_len > 0 && c->val_len > 0 && c->test_len > 0, VP_ERR_INVALID_ARG,
                   "vp_split_make: lengths train %lld, val %lld, test %lld: all three must be > 0 (zero length)",
                   (long long)c->train_len, (long long)c->val_len, (long long)c->test_len);
        int64_t need = fold_need(c->warmup, c->train_len, c->val_len, c->test_len, c->embargo);
        VP_REQUIRE(need <= n_bars, VP_ERR_INVALID_ARG,
                   "vp_split_make: too little data: %lld bars, the split needs %s (warm-up %lld, train %lld, val "
                   "%lld, test %lld, embargo 2 x %lld)",
                   (long long)n_bars, count_text(need, need_text, sizeof need_text), (long long)c->warmup,
                   (long long)c->train_len,
                   (long long)c->val_len, (long long)c->test_len, (long long)c->embargo);
        *out = layout(n_bars - need + c->warmup, c->train_len, c->val_len, c->test_len, c->embargo);
        return vp_split_check(out, n_bars, c->warmup);
    }

    /* Fractions of the usable bars; rounding leftovers go to test when they sum to 1. */
    double f[3] = {c->train_frac, c->val_frac, c->test_frac};
    for (int i = 0; i < 3; ++i)
        VP_REQUIRE(f[i] > 0.0 && f[i] <= 1.0, VP_ERR_INVALID_ARG,
                   "vp_split_make: fractions train %g, val %g, test %g must each be in (0, 1] (zero length)", f[0],
                   f[1], f[2]);
    double sum = f[0] + f[1] + f[2];
    VP_REQUIRE(sum <= 1.0 + 1e-9, VP_ERR_INVALID_ARG, "vp_split_make: fractions sum to %g > 1 (overlapping spans)",
               sum);
    // the bars left after the warm-up and the two embargoes ("none" when those alone exceed the data)
    int64_t reserved = fold_need(c->warmup, 0, 0, 0, c->embargo);
    int64_t usable = reserved <= n_bars ? n_bars - reserved : -1;
    char left[32];
    if (usable >= 0) snprintf(left, sizeof left, "%lld", (long long)usable);
    else snprintf(left, sizeof left, "none");
    VP_REQUIRE(usable >= 3, VP_ERR_INVALID_ARG,
               "vp_split_make: too little data: %lld bars leave %s after warm-up %lld and embargo 2 x %lld",
               (long long)n_bars, left, (long long)c->warmup, (long long)c->embargo);
    int64_t tr = (int64_t)floor((double)usable * f[0]);
    int64_t va = (int64_t)floor((double)usable * f[1]);
    int64_t te = fabs(sum - 1.0) <= 1e-9 ? usable - tr - va : (int64_t)floor((double)usable * f[2]);
    VP_REQUIRE(tr > 0 && va > 0 && te > 0, VP_ERR_INVALID_ARG,
               "vp_split_make: too little data: %lld usable bars give train %lld, val %lld, test %lld (zero length)",
               (long long)usable, (long long)tr, (long long)va, (long long)te);
    *out = layout(c->warmup, tr, va, te, c->embargo);
    return vp_split_check(out, n_bars, c->warmup);
}

vp_status vp_walkforward_make(int64_t n_bars, const vp_walkforward_cfg* c, vp_split* folds, int64_t cap,
                              int64_t* n_folds) {
    VP_REQUIRE(c != NULL && n_folds != NULL, VP_ERR_INVALID_ARG, "vp_walkforward_make: NULL argument");
    *n_folds = 0;
    VP_REQUIRE(c->train_len > 0 && c->val_len > 0 && c->test_len > 0 && c->step > 0, VP_ERR_INVALID_ARG,
               "vp_walkforward_make: train %lld, val %lld, test %lld and step %lld must all be > 0 (zero length)",
               (long long)c->train_len, (long long)c->val_len, (long long)c->test_len, (long long)c->step);
    VP_REQUIRE(c->embargo >= 0 && c->warmup >= 0, VP_ERR_INVALID_ARG,
               "vp_walkforward_make: embargo %lld and warmup %lld must be >= 0", (long long)c->embargo,
               (long long)c->warmup);
    VP_REQUIRE(c->step >= c->test_len, VP_ERR_INVALID_ARG,
               "vp_walkforward_make: step %lld < test length %lld: test spans of consecutive folds would overlap",
               (long long)c->step, (long long)c->test_len);
    VP_REQUIRE(folds != NULL || cap == 0, VP_ERR_INVALID_ARG, "vp_walkforward_make: folds is NULL but cap is %lld",
               (long long)cap);

    /* The first fold fits; fold k ends k steps later (rolling or anchored), so the folds
     * that fit are the k with k * step <= n_bars - one. */
    char need_text[64];
    int64_t one = fold_need(c->warmup, c->train_len, c->val_len, c->test_len, c->embargo);
    VP_REQUIRE(one <= n_bars, VP_ERR_INVALID_ARG,
               "vp_walkforward_make: too little data: %lld bars, one fold needs %s (warm-up %lld, train %lld, val "
               "%lld, test %lld, embargo 2 x %lld)",
               (long long)n_bars, count_text(one, need_text, sizeof need_text), (long long)c->warmup,
               (long long)c->train_len, (long long)c->val_len, (long long)c->test_len, (long long)c->embargo);
    int64_t count = (n_bars - one) / c->step + 1;
    for (int64_t k = 0; folds && k < count && k < cap; ++k) {
        int64_t shift = k * c->step;
        folds[k] = c->anchored ? layout(c->warmup, c->train_len + shift, c->val_len, c->test_len, c->embargo)
                               : layout(c->warmup + shift, c->train_len, c->val_len, c->test_len, c->embargo);
    }
    *n_folds = count;
    return VP_OK;
}

vp_status vp_span_with_warmup(vp_span s, int64_t warmup, vp_span* out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_span_with_warmup: out is NULL");
    VP_REQUIRE(warmup >= 0 && s.end > s.begin, VP_ERR_INVALID_ARG,
               "vp_span_with_warmup: span [%lld, %lld) with warm-up %lld", (long long)s.begin, (long long)s.end,
               (long long)warmup);
    VP_REQUIRE(s.begin >= warmup, VP_ERR_INVALID_ARG,
               "vp_span_with_warmup: span [%lld, %lld) has only %lld bars before it, the warm-up needs %lld "
               "(too little data; warm-up is never taken from after a span)",
               (long long)s.begin, (long long)s.end, (long long)s.begin, (long long)warmup);
    out->begin = s.begin - warmup;
    out->end = s.end;
    return VP_OK;
}
