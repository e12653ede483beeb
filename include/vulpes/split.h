/* vulpes: time-based splits of a bar series into train / validation / test spans and
 * walk-forward folds.
 *
 * A span is a half-open range [begin, end) of bar indices. A fold is
 * [warm-up | train | embargo | val | embargo | test]: spans in time order, never
 * overlapping, separated by `embargo` unused bars. Warm-up bars for features are taken
 * from before a span (bars [begin - warmup, begin)), never after it, so the first span
 * starts at index >= warmup. */
#ifndef VULPES_SPLIT_H
#define VULPES_SPLIT_H

#include <stdint.h>

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bars [begin, end). */
typedef struct vp_span {
    int64_t begin; /* first bar index */
    int64_t end;   /* one past the last */
} vp_span;

/* One fold: three spans in time order. */
typedef struct vp_split {
    vp_span train; /* fit here */
    vp_span val;   /* select here */
    vp_span test;  /* report here */
} vp_split;

/* A single train / val / test split, by fractions or by lengths. */
typedef struct vp_split_cfg {
    double train_frac, val_frac, test_frac; /* shares of n - warmup - 2 embargo; used when all lengths are 0 */
    int64_t train_len, val_len, test_len;   /* explicit lengths in bars; all three set, or all 0 */
    int64_t embargo;                        /* unused bars between train and val and between val and test (>= 0) */
    int64_t warmup;                         /* bars reserved before train for feature warm-up (>= 0) */
} vp_split_cfg;

/* Walk-forward folds: fold k starts at warmup + k step (or at warmup with a train span
 * growing by `step` per fold when anchored); folds are made while the test span fits. */
typedef struct vp_walkforward_cfg {
    int64_t train_len, val_len, test_len; /* span lengths in bars (> 0) */
    int64_t step;                         /* bars between folds (>= test_len: test spans never overlap) */
    int64_t embargo;                      /* unused bars between the spans of a fold (>= 0) */
    int64_t warmup;                       /* bars reserved before the first train span (>= 0) */
    int anchored;                         /* 1: every train span starts at warmup and grows; 0: rolling */
} vp_walkforward_cfg;

/* Length of a span (end - begin). */
static inline int64_t vp_span_len(vp_span s) { return s.end - s.begin; }

/* Makes the single split of n_bars bars described by cfg into *out; fails with a message
 * on zero lengths, bad fractions, or too little data. When fractions are used, the bars
 * left over by rounding go to test. */
vp_status vp_split_make(int64_t n_bars, const vp_split_cfg* cfg, vp_split* out);

/* Checks a split against n_bars bars and a warm-up: every span non-empty, inside
 * [warmup, n_bars), in order train < val < test, not overlapping; fails naming the span. */
vp_status vp_split_check(const vp_split* s, int64_t n_bars, int64_t warmup);

/* Makes the walk-forward folds of n_bars bars. With folds NULL only counts them; else
 * writes up to cap folds. *n_folds receives the number of folds that fit (> 0, or the
 * call fails with "too little data"), which may exceed cap. */
vp_status vp_walkforward_make(int64_t n_bars, const vp_walkforward_cfg* cfg, vp_split* folds /* [cap] */, int64_t cap,
                              int64_t* n_folds);

/* The span extended backwards by its warm-up: [begin - warmup, end); fails when fewer
 * than warmup bars precede the span (warm-up never comes from after a span). */
vp_status vp_span_with_warmup(vp_span s, int64_t warmup, vp_span* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_SPLIT_H */
