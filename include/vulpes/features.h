/* vulpes: the causal feature matrix [T, F] computed from bars.
 *
 * Every feature at bar t uses bars <= t only, and so does the normalisation (a trailing
 * rolling z-score over the last `norm_window` raw values, clipped). Rows near the start
 * that lack history are computed from the history there is (never from later bars);
 * vp_features_warmup says from which row on the full history is used. The formulas and
 * look-backs are listed in docs/data.md. */
#ifndef VULPES_FEATURES_H
#define VULPES_FEATURES_H

#include <stdint.h>

#include "vulpes/data.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The features: X(ID, name, look-back in bars, z-scored?). The order is the default
 * column order of the matrix. */
#define VP_FEATURE_LIST(X)                                                     \
    X(RET_1, "ret_1", 1, 1)             /* log(c[t] / c[t-1]) */             \
    X(RET_2, "ret_2", 2, 1)             /* log(c[t] / c[t-2]) */             \
    X(RET_4, "ret_4", 4, 1)             /* log(c[t] / c[t-4]) */             \
    X(RET_8, "ret_8", 8, 1)             /* log(c[t] / c[t-8]) */             \
    X(RET_16, "ret_16", 16, 1)          /* log(c[t] / c[t-16]) */            \
    X(RET_32, "ret_32", 32, 1)          /* log(c[t] / c[t-32]) */            \
    X(RVOL_8, "rvol_8", 8, 1)           /* sqrt(mean of ret_1^2 over 8) */   \
    X(RVOL_32, "rvol_32", 32, 1)        /* same over 32 */                   \
    X(RVOL_128, "rvol_128", 128, 1)     /* same over 128 */                  \
    X(RANGE, "log_range", 0, 1)         /* log(h / l) */                     \
    X(BODY, "body", 0, 1)               /* (c - o) / (h - l) */              \
    X(CLOSE_POS, "close_pos", 0, 1)     /* (c - l) / (h - l) */              \
    X(GAP, "gap", 1, 1)                 /* log(o[t] / c[t-1]) */             \
    X(VOL_Z, "volume_z_32", 31, 1)      /* z-score of log1p(v) over 32 */    \
    X(VOL_CHG, "log_volume_chg", 1, 1)  /* log1p(v[t]) - log1p(v[t-1]) */    \
    X(FLOW_8, "flow_8", 7, 1)           /* sum v*body / sum v over 8 */      \
    X(FLOW_32, "flow_32", 31, 1)        /* same over 32 */                   \
    X(ATR_MOVE_1, "atr_move_1", 14, 1)  /* (c[t] - c[t-1]) / atr_14 */       \
    X(ATR_MOVE_8, "atr_move_8", 14, 1)  /* (c[t] - c[t-8]) / atr_14 */       \
    X(ATR_LEVEL, "log_atr_14", 14, 1)   /* log(atr_14 / c) */                \
    X(DIST_HI_32, "dist_high_32", 31, 1)   /* log(c / max h over 32) */     \
    X(DIST_LO_32, "dist_low_32", 31, 1)    /* log(c / min l over 32) */     \
    X(DIST_HI_128, "dist_high_128", 127, 1) /* same over 128 */             \
    X(DIST_LO_128, "dist_low_128", 127, 1)  /* same over 128 */             \
    X(MA_GAP_8, "ma_gap_8", 7, 1)       /* log(c / mean c over 8) */         \
    X(MA_GAP_32, "ma_gap_32", 31, 1)    /* log(c / mean c over 32) */        \
    X(MA_GAP_128, "ma_gap_128", 127, 1) /* log(c / mean c over 128) */       \
    X(MA_CROSS, "ma_cross_8_32", 31, 1) /* log(mean c 8 / mean c 32) */      \
    X(TOD_SIN, "tod_sin", 0, 0)         /* sin(2 pi time-of-day / 24h) */    \
    X(TOD_COS, "tod_cos", 0, 0)         /* cos(2 pi time-of-day / 24h) */    \
    X(DOW_SIN, "dow_sin", 0, 0)         /* sin(2 pi weekday / 7) */          \
    X(DOW_COS, "dow_cos", 0, 0)         /* cos(2 pi weekday / 7) */

/* Feature identifiers, in default column order. */
typedef enum vp_feature_id {
#define VP_FEATURE_ENUM_(id, name, lookback, zscored) VP_FEAT_##id,
    VP_FEATURE_LIST(VP_FEATURE_ENUM_)
#undef VP_FEATURE_ENUM_
    VP_FEAT_COUNT
} vp_feature_id;

#define VP_FEATURES_DEFAULT 32 /* F of the default configuration (all features) */

/* How to compute the matrix; start from vp_feature_cfg_default(). */
typedef struct vp_feature_cfg {
    int norm_window;           /* trailing z-score window in bars (default 256); 0: raw values */
    double norm_eps;           /* added to the window's standard deviation (default 1e-8) */
    float clip;                /* z-scores clipped to [-clip, clip] (default 5) */
    int n_features;            /* 0 (default): all VP_FEAT_COUNT features in order; else ids[0..n) */
    int ids[VP_FEAT_COUNT];    /* the chosen vp_feature_id values, when n_features > 0 */
} vp_feature_cfg;

/* The default configuration: all 32 features, window 256, eps 1e-8, clip 5. */
vp_feature_cfg vp_feature_cfg_default(void);

/* F: the number of columns cfg produces (0 for an invalid cfg). */
int vp_features_count(const vp_feature_cfg* cfg);

/* Bars of history a row needs before it is computed from full history: the largest
 * look-back of the chosen features plus norm_window - 1. Rows t >= warm-up are exact
 * functions of bars [t - warm-up, t]; earlier rows use the history there is. */
int64_t vp_features_warmup(const vp_feature_cfg* cfg);

/* Name of feature `id` ("ret_1"); "?" for an invalid id. */
const char* vp_feature_name(int id);

/* The id of column `col` under cfg (-1 when out of range). */
int vp_features_column_id(const vp_feature_cfg* cfg, int col);

/* Computes the feature matrix of bars b (b->n rows) into out, row-major [b->n, F] with
 * F = vp_features_count(cfg); out_len is the number of floats out holds (>= b->n F). */
vp_status vp_features_compute(const vp_bars* b, const vp_feature_cfg* cfg, float* out /* [b->n, F] */,
                              int64_t out_len);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_FEATURES_H */
