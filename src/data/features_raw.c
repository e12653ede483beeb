/* The raw feature series: each value at bar t from bars <= t, rows near the start from
 * the history there is. Formulas are in docs/data.md and features.h. */
#include <math.h>

#include "data/features_internal.h"

#define RECOMPUTE_EVERY 1024

void vp_roll_moments(const double* x, int64_t n, int w, double* mean, double* sd) {
    double k = 0.0, s = 0.0, q = 0.0;
    const double inv_w = 1.0 / (double)w;
    for (int64_t t = 0; t < n; ++t) {
        int64_t lo = t - w + 1 > 0 ? t - w + 1 : 0;
        /* Exact sums about a fresh shift every RECOMPUTE_EVERY bars; running sums between. */
        if (t % RECOMPUTE_EVERY == 0) {
            k = x[t];
            s = q = 0.0;
            for (int64_t i = lo; i <= t; ++i) {
                double d = x[i] - k;
                s += d;
                q += d * d;
            }
        } else {
            double d = x[t] - k;
            s += d;
            q += d * d;
            if (t - w >= 0) {
                double e = x[t - w] - k;
                s -= e;
                q -= e * e;
            }
        }
        /* Moments of the window (1/count is constant once the window is full). */
        double inv = t - lo + 1 == w ? inv_w : 1.0 / (double)(t - lo + 1);
        double m = s * inv;
        if (mean) mean[t] = k + m;
        if (sd) {
            double var = q * inv - m * m;
            sd[t] = var > 0.0 ? sqrt(var) : 0.0;
        }
    }
}

void vp_roll_extreme(const double* x, int64_t n, int w, int want_max, double* out, int64_t* idx) {
    int64_t head = 0, tail = 0;
    for (int64_t t = 0; t < n; ++t) {
        /* A monotonic queue of candidate indices inside the window. */
        while (tail > head && (want_max ? x[idx[tail - 1]] <= x[t] : x[idx[tail - 1]] >= x[t])) --tail;
        idx[tail++] = t;
        if (idx[head] <= t - w) ++head;
        out[t] = x[idx[head]];
    }
}

void vp_feat_ws_prepare(vp_feat_ws* ws) {
    const vp_bars* b = ws->b;
    int64_t n = b->n;
    /* One-bar log returns, log volume and the true range (into tmp). */
    for (int64_t t = 0; t < n; ++t) {
        ws->lc[t] = log(b->close[t]);
        ws->r1[t] = t > 0 ? ws->lc[t] - ws->lc[t - 1] : 0.0;
        ws->lv[t] = log1p(b->volume[t]);
        double tr = b->high[t] - b->low[t];
        if (t > 0) {
            double a = fabs(b->high[t] - b->close[t - 1]), c = fabs(b->low[t] - b->close[t - 1]);
            tr = fmax(tr, fmax(a, c));
        }
        ws->tmp[t] = tr;
    }
    /* ATR over 14 bars as a plain trailing mean (a finite window keeps rows exact after warm-up). */
    vp_roll_moments(ws->tmp, n, 14, ws->atr, NULL);
}

/* log c[t] - log c[t-k], c[0] standing in for bars before the first. */
static void log_return(const vp_feat_ws* ws, int k, double* out) {
    for (int64_t t = 0; t < ws->b->n; ++t) out[t] = ws->lc[t] - ws->lc[t - k > 0 ? t - k : 0];
}

/* sqrt of the trailing mean of r1^2 over w. */
static void realised_vol(vp_feat_ws* ws, int w, double* out) {
    int64_t n = ws->b->n;
    for (int64_t t = 0; t < n; ++t) ws->tmp[t] = ws->r1[t] * ws->r1[t];
    vp_roll_moments(ws->tmp, n, w, out, NULL);
    for (int64_t t = 0; t < n; ++t) out[t] = sqrt(fmax(out[t], 0.0));
}

/* Body of bar t as a fraction of its range (0 for a bar with no range). */
static double body_of(const vp_bars* b, int64_t t) {
    double r = b->high[t] - b->low[t];
    return r > 0.0 ? (b->close[t] - b->open[t]) / r : 0.0;
}

/* Volume-weighted mean body over w bars (the plain mean where the window has no volume), in [-1, 1]. */
static void order_flow(vp_feat_ws* ws, int w, double* out) {
    const vp_bars* b = ws->b;
    int64_t n = b->n;
    for (int64_t t = 0; t < n; ++t) ws->tmp[t] = b->volume[t] * body_of(b, t);
    vp_roll_moments(ws->tmp, n, w, ws->tmp2, NULL);
    vp_roll_moments(b->volume, n, w, ws->tmp3, NULL);
    for (int64_t t = 0; t < n; ++t) ws->tmp[t] = body_of(b, t);
    vp_roll_moments(ws->tmp, n, w, out, NULL);
    for (int64_t t = 0; t < n; ++t) {
        double f = ws->tmp3[t] > 0.0 ? ws->tmp2[t] / ws->tmp3[t] : out[t];
        out[t] = fmin(1.0, fmax(-1.0, f));
    }
}

/* ATR with a floor so that bars without any range never divide by zero. */
static inline double atr_floor(const vp_feat_ws* ws, int64_t t) { return fmax(ws->atr[t], 1e-12 * ws->b->close[t]); }

/* (c[t] - c[t-k]) / atr_14. */
static void atr_move(vp_feat_ws* ws, int k, double* out) {
    const vp_bars* b = ws->b;
    for (int64_t t = 0; t < b->n; ++t) out[t] = (b->close[t] - b->close[t - k > 0 ? t - k : 0]) / atr_floor(ws, t);
}

/* log(c / rolling max of high) or log(c / rolling min of low) over w. */
static void dist_extreme(vp_feat_ws* ws, int w, int want_max, double* out) {
    const vp_bars* b = ws->b;
    vp_roll_extreme(want_max ? b->high : b->low, b->n, w, want_max, out, ws->idx);
    for (int64_t t = 0; t < b->n; ++t) out[t] = log(b->close[t] / out[t]);
}

/* log(c / trailing mean of c over w). */
static void ma_gap(vp_feat_ws* ws, int w, double* out) {
    const vp_bars* b = ws->b;
    vp_roll_moments(b->close, b->n, w, out, NULL);
    for (int64_t t = 0; t < b->n; ++t) out[t] = log(b->close[t] / out[t]);
}

void vp_feature_raw(int id, vp_feat_ws* ws, double* out) {
    const vp_bars* b = ws->b;
    int64_t n = b->n;
    switch (id) {
    case VP_FEAT_RET_1: log_return(ws, 1, out); break;
    case VP_FEAT_RET_2: log_return(ws, 2, out); break;
    case VP_FEAT_RET_4: log_return(ws, 4, out); break;
    case VP_FEAT_RET_8: log_return(ws, 8, out); break;
    case VP_FEAT_RET_16: log_return(ws, 16, out); break;
    case VP_FEAT_RET_32: log_return(ws, 32, out); break;
    case VP_FEAT_RVOL_8: realised_vol(ws, 8, out); break;
    case VP_FEAT_RVOL_32: realised_vol(ws, 32, out); break;
    case VP_FEAT_RVOL_128: realised_vol(ws, 128, out); break;
    case VP_FEAT_RANGE:
        for (int64_t t = 0; t < n; ++t) out[t] = log(b->high[t] / b->low[t]);
        break;
    case VP_FEAT_BODY:
        for (int64_t t = 0; t < n; ++t) out[t] = body_of(b, t);
        break;
    case VP_FEAT_CLOSE_POS:
        for (int64_t t = 0; t < n; ++t) {
            double r = b->high[t] - b->low[t];
            out[t] = r > 0.0 ? (b->close[t] - b->low[t]) / r : 0.5;
        }
        break;
    case VP_FEAT_GAP:
        for (int64_t t = 0; t < n; ++t) out[t] = t > 0 ? log(b->open[t] / b->close[t - 1]) : 0.0;
        break;
    case VP_FEAT_VOL_Z:
        vp_roll_moments(ws->lv, n, 32, ws->tmp, ws->tmp2);
        for (int64_t t = 0; t < n; ++t) out[t] = (ws->lv[t] - ws->tmp[t]) / (ws->tmp2[t] + 1e-8);
        break;
    case VP_FEAT_VOL_CHG:
        for (int64_t t = 0; t < n; ++t) out[t] = t > 0 ? ws->lv[t] - ws->lv[t - 1] : 0.0;
        break;
    case VP_FEAT_FLOW_8: order_flow(ws, 8, out); break;
    case VP_FEAT_FLOW_32: order_flow(ws, 32, out); break;
    case VP_FEAT_ATR_MOVE_1: atr_move(ws, 1, out); break;
    case VP_FEAT_ATR_MOVE_8: atr_move(ws, 8, out); break;
    case VP_FEAT_ATR_LEVEL:
        for (int64_t t = 0; t < n; ++t) out[t] = log(atr_floor(ws, t) / b->close[t]);
        break;
    case VP_FEAT_DIST_HI_32: dist_extreme(ws, 32, 1, out); break;
    case VP_FEAT_DIST_LO_32: dist_extreme(ws, 32, 0, out); break;
    case VP_FEAT_DIST_HI_128: dist_extreme(ws, 128, 1, out); break;
    case VP_FEAT_DIST_LO_128: dist_extreme(ws, 128, 0, out); break;
    case VP_FEAT_MA_GAP_8: ma_gap(ws, 8, out); break;
    case VP_FEAT_MA_GAP_32: ma_gap(ws, 32, out); break;
    case VP_FEAT_MA_GAP_128: ma_gap(ws, 128, out); break;
    case VP_FEAT_MA_CROSS:
        vp_roll_moments(b->close, n, 8, out, NULL);
        vp_roll_moments(b->close, n, 32, ws->tmp, NULL);
        for (int64_t t = 0; t < n; ++t) out[t] = log(out[t] / ws->tmp[t]);
        break;
    case VP_FEAT_TOD_SIN:
        for (int64_t t = 0; t < n; ++t) out[t] = sin(vp_feat_day_angle(b->time_ms[t]));
        break;
    case VP_FEAT_TOD_COS:
        for (int64_t t = 0; t < n; ++t) out[t] = cos(vp_feat_day_angle(b->time_ms[t]));
        break;
    case VP_FEAT_DOW_SIN:
        for (int64_t t = 0; t < n; ++t) out[t] = sin(vp_feat_week_angle(b->time_ms[t]));
        break;
    case VP_FEAT_DOW_COS:
        for (int64_t t = 0; t < n; ++t) out[t] = cos(vp_feat_week_angle(b->time_ms[t]));
        break;
    default:
        for (int64_t t = 0; t < n; ++t) out[t] = 0.0;
        break;
    }
}
