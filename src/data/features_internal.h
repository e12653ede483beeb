/* Internal: rolling-window helpers and the raw (unnormalised) feature series. */
#ifndef VP_DATA_FEATURES_INTERNAL_H
#define VP_DATA_FEATURES_INTERNAL_H

#include <stdint.h>

#include "vulpes/features.h"

#define VP_FEAT_MS_PER_DAY INT64_C(86400000)

/* Fraction of the day of a bar time (ms since the epoch, UTC) as an angle in [0, 2 pi). */
static inline double vp_feat_day_angle(int64_t ms) {
    int64_t r = ms % VP_FEAT_MS_PER_DAY;
    if (r < 0) r += VP_FEAT_MS_PER_DAY;
    return 2.0 * 3.14159265358979323846 * (double)r / (double)VP_FEAT_MS_PER_DAY;
}

/* Weekday (Monday 0) of a bar time as an angle in [0, 2 pi). */
static inline double vp_feat_week_angle(int64_t ms) {
    int64_t d = ms >= 0 ? ms / VP_FEAT_MS_PER_DAY : -((-ms + VP_FEAT_MS_PER_DAY - 1) / VP_FEAT_MS_PER_DAY);
    int64_t wd = (d + 3) % 7;
    if (wd < 0) wd += 7;
    return 2.0 * 3.14159265358979323846 * (double)wd / 7.0;
}

/* Series shared by several features, and scratch; all [n]. */
typedef struct vp_feat_ws {
    const vp_bars* b; /* the bars */
    double* lc;       /* [n] log(c[t]) */
    double* r1;       /* [n] log c[t] - log c[t-1], r1[0] = 0 */
    double* lv;       /* [n] log1p(volume) */
    double* atr;      /* [n] mean true range over the last 14 bars (the history there is) */
    double* tmp;      /* [n] scratch */
    double* tmp2;     /* [n] scratch */
    double* tmp3;     /* [n] scratch */
    int64_t* idx;     /* [n] scratch for the rolling extremes */
} vp_feat_ws;

/* Trailing mean and standard deviation of x over windows [max(0, t-w+1), t]; mean or sd
 * may be NULL. Running sums about a shift, recomputed exactly every 1024 bars. */
void vp_roll_moments(const double* x /* [n] */, int64_t n, int w, double* mean /* [n] */, double* sd /* [n] */);

/* Trailing maximum (want_max = 1) or minimum of x over [max(0, t-w+1), t]. */
void vp_roll_extreme(const double* x /* [n] */, int64_t n, int w, int want_max, double* out /* [n] */,
                     int64_t* idx /* [n] scratch */);

/* Fills ws->r1, ws->lv and ws->atr from ws->b. */
void vp_feat_ws_prepare(vp_feat_ws* ws);

/* The raw series of feature id into out [n] (may use ws's scratch). */
void vp_feature_raw(int id, vp_feat_ws* ws, double* out /* [n] */);

#endif /* VP_DATA_FEATURES_INTERNAL_H */
