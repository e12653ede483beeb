/* The feature matrix one bar at a time (features_stream.h): the raw series of
 * features_raw.c and the normalisation of features.c, each written as one step of its
 * recurrence, in the same arithmetic order so that every row equals the batch's bit for bit. */
#include "data/features_stream.h"
#include "data/features_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Running moments are recomputed exactly at bars that are multiples of this (features_raw.c). */
#define RECOMPUTE_EVERY 1024
/* History kept of the bars themselves: the longest look-back (128-bar extremes). */
#define HIST 128

/* Whether each feature is z-scored, from VP_FEATURE_LIST. */
static const int ZSCORED[VP_FEAT_COUNT] = {
#define VP_FEATURE_Z_(id, name, lookback, zscored) zscored,
    VP_FEATURE_LIST(VP_FEATURE_Z_)
#undef VP_FEATURE_Z_
};

/* One vp_roll_moments over a window of w values, stepped: the shift k, the sums s and q
 * about it, and the last w inputs (ring, index t mod w). */
typedef struct roll {
    int w;
    double inv_w;
    double k, s, q;
    double* ring; /* [w] */
} roll;

/* vp_roll_moments' step at bar t for input x: its mean and standard deviation. */
static void roll_step(roll* r, int64_t t, double x, double* mean, double* sd) {
    const int w = r->w;
    const int64_t lo = t - w + 1 > 0 ? t - w + 1 : 0;
    double* slot = r->ring + t % w;
    const double old = *slot; /* x[t - w] once t >= w */
    *slot = x;
    if (t % RECOMPUTE_EVERY == 0) {
        r->k = x;
        r->s = r->q = 0.0;
        for (int64_t i = lo; i <= t; ++i) {
            double d = r->ring[i % w] - r->k;
            r->s += d;
            r->q += d * d;
        }
    } else {
        double d = x - r->k;
        r->s += d;
        r->q += d * d;
        if (t - w >= 0) {
            double e = old - r->k;
            r->s -= e;
            r->q -= e * e;
        }
    }
    double inv = t - lo + 1 == w ? r->inv_w : 1.0 / (double)(t - lo + 1);
    double m = r->s * inv;
    if (mean) *mean = r->k + m;
    if (sd) {
        double var = r->q * inv - m * m;
        *sd = var > 0.0 ? sqrt(var) : 0.0;
    }
}

/* The shared series' running moments. */
enum { R_ATR, R_RV8, R_RV32, R_RV128, R_VOLZ, R_FVB8, R_FV8, R_FB8, R_FVB32, R_FV32, R_FB32, R_MA8, R_MA32, R_MA128,
       R_COUNT };
static const int ROLL_W[R_COUNT] = {14, 8, 32, 128, 32, 8, 8, 8, 32, 32, 32, 8, 32, 128};

struct vp_feat_stream {
    vp_feature_cfg cfg;
    int F;
    int64_t t;                         /* bars taken */
    double close[HIST], high[HIST], low[HIST], lc[HIST], lv[HIST]; /* ring, index t mod HIST */
    roll shared[R_COUNT];
    roll* norm;                        /* [F] the columns' z-score windows (w 0: not z-scored) */
    double* block;                     /* storage of every ring */
};

vp_status vp_feat_stream_init(vp_feat_stream** out, const vp_feature_cfg* cfg) {
    VP_REQUIRE(out != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_feat_stream_init: NULL argument");
    *out = NULL;
    const int F = vp_features_count(cfg);
    VP_REQUIRE(F > 0, VP_ERR_INVALID_ARG, "vp_feat_stream_init: invalid feature cfg (norm_window %d, eps %g, clip %g, "
               "n_features %d)", cfg->norm_window, cfg->norm_eps, (double)cfg->clip, cfg->n_features);
    vp_feat_stream* s = (vp_feat_stream*)calloc(1, sizeof *s);
    roll* norm = (roll*)calloc((size_t)F, sizeof *norm);
    int64_t total = 0;
    for (int r = 0; r < R_COUNT; ++r) total += ROLL_W[r];
    for (int j = 0; j < F; ++j)
        if (ZSCORED[vp_features_column_id(cfg, j)] && cfg->norm_window > 0) total += cfg->norm_window;
    double* block = (double*)calloc((size_t)total, sizeof(double));
    if (!s || !norm || !block) {
        free(s);
        free(norm);
        free(block);
        VP_FAIL(VP_ERR_OOM, "vp_feat_stream_init: %lld values of history", (long long)total);
    }
    s->cfg = *cfg;
    s->F = F;
    s->norm = norm;
    s->block = block;
    double* p = block;
    for (int r = 0; r < R_COUNT; ++r) {
        s->shared[r] = (roll){ROLL_W[r], 1.0 / (double)ROLL_W[r], 0.0, 0.0, 0.0, p};
        p += ROLL_W[r];
    }
    for (int j = 0; j < F; ++j) {
        if (!(ZSCORED[vp_features_column_id(cfg, j)] && cfg->norm_window > 0)) continue;
        norm[j] = (roll){cfg->norm_window, 1.0 / (double)cfg->norm_window, 0.0, 0.0, 0.0, p};
        p += cfg->norm_window;
    }
    *out = s;
    return VP_OK;
}

void vp_feat_stream_free(vp_feat_stream* s) {
    if (!s) return;
    free(s->norm);
    free(s->block);
    free(s);
}

int vp_feat_stream_width(const vp_feat_stream* s) { return s ? s->F : 0; }

int64_t vp_feat_stream_count(const vp_feat_stream* s) { return s ? s->t : 0; }

/* What one bar's raw features read: the bar, the shared series and their moments at t. */
typedef struct bar_ctx {
    const vp_feat_bar* b;
    const vp_feat_stream* s;
    int64_t t;
    double lc, r1, lv, lv_prev, c_prev;
    double atr;                      /* the 14-bar mean true range */
    double rv[3];                    /* mean r1^2 over 8, 32, 128 */
    double volz_mean, volz_sd;       /* lv over 32 */
    double flow[2][3];               /* [8, 32] means of v * body, v, body */
    double ma[3];                    /* mean close over 8, 32, 128 */
} bar_ctx;

/* A value k bars back (clamped at the first bar) of a history ring. */
static double back(const double* ring, int64_t t, int k) { return ring[(t - k > 0 ? t - k : 0) % HIST]; }

/* Body of the bar as a fraction of its range (0 for a bar with no range). */
static double body_of(const vp_feat_bar* b) {
    double r = b->high - b->low;
    return r > 0.0 ? (b->close - b->open) / r : 0.0;
}

static double atr_floor(const bar_ctx* c) { return fmax(c->atr, 1e-12 * c->b->close); }

/* Trailing max (want_max) of high or min of low over w bars, this bar included. */
static double extreme(const bar_ctx* c, int w, int want_max) {
    const double* ring = want_max ? c->s->high : c->s->low;
    const int64_t lo = c->t - w + 1 > 0 ? c->t - w + 1 : 0;
    double v = ring[lo % HIST];
    for (int64_t i = lo + 1; i <= c->t; ++i) {
        double x = ring[i % HIST];
        v = want_max ? (x >= v ? x : v) : (x <= v ? x : v);
    }
    return v;
}

/* The volume-weighted mean body of flow window f, in [-1, 1]. */
static double flow(const bar_ctx* c, int f) {
    double v = c->flow[f][1] > 0.0 ? c->flow[f][0] / c->flow[f][1] : c->flow[f][2];
    return fmin(1.0, fmax(-1.0, v));
}

/* The raw value of feature id at the bar. */
static double raw_of(const bar_ctx* c, int id) {
    const vp_feat_bar* b = c->b;
    const vp_feat_stream* s = c->s;
    const int64_t t = c->t;
    const double r = b->high - b->low;
    switch (id) {
    case VP_FEAT_RET_1: return c->lc - back(s->lc, t, 1);
    case VP_FEAT_RET_2: return c->lc - back(s->lc, t, 2);
    case VP_FEAT_RET_4: return c->lc - back(s->lc, t, 4);
    case VP_FEAT_RET_8: return c->lc - back(s->lc, t, 8);
    case VP_FEAT_RET_16: return c->lc - back(s->lc, t, 16);
    case VP_FEAT_RET_32: return c->lc - back(s->lc, t, 32);
    case VP_FEAT_RVOL_8: return sqrt(fmax(c->rv[0], 0.0));
    case VP_FEAT_RVOL_32: return sqrt(fmax(c->rv[1], 0.0));
    case VP_FEAT_RVOL_128: return sqrt(fmax(c->rv[2], 0.0));
    case VP_FEAT_RANGE: return log(b->high / b->low);
    case VP_FEAT_BODY: return body_of(b);
    case VP_FEAT_CLOSE_POS: return r > 0.0 ? (b->close - b->low) / r : 0.5;
    case VP_FEAT_GAP: return t > 0 ? log(b->open / c->c_prev) : 0.0;
    case VP_FEAT_VOL_Z: return (c->lv - c->volz_mean) / (c->volz_sd + 1e-8);
    case VP_FEAT_VOL_CHG: return t > 0 ? c->lv - c->lv_prev : 0.0;
    case VP_FEAT_FLOW_8: return flow(c, 0);
    case VP_FEAT_FLOW_32: return flow(c, 1);
    case VP_FEAT_ATR_MOVE_1: return (b->close - back(s->close, t, 1)) / atr_floor(c);
    case VP_FEAT_ATR_MOVE_8: return (b->close - back(s->close, t, 8)) / atr_floor(c);
    case VP_FEAT_ATR_LEVEL: return log(atr_floor(c) / b->close);
    case VP_FEAT_DIST_HI_32: return log(b->close / extreme(c, 32, 1));
    case VP_FEAT_DIST_LO_32: return log(b->close / extreme(c, 32, 0));
    case VP_FEAT_DIST_HI_128: return log(b->close / extreme(c, 128, 1));
    case VP_FEAT_DIST_LO_128: return log(b->close / extreme(c, 128, 0));
    case VP_FEAT_MA_GAP_8: return log(b->close / c->ma[0]);
    case VP_FEAT_MA_GAP_32: return log(b->close / c->ma[1]);
    case VP_FEAT_MA_GAP_128: return log(b->close / c->ma[2]);
    case VP_FEAT_MA_CROSS: return log(c->ma[0] / c->ma[1]);
    case VP_FEAT_TOD_SIN: return sin(vp_feat_day_angle(b->time_ms));
    case VP_FEAT_TOD_COS: return cos(vp_feat_day_angle(b->time_ms));
    case VP_FEAT_DOW_SIN: return sin(vp_feat_week_angle(b->time_ms));
    case VP_FEAT_DOW_COS: return cos(vp_feat_week_angle(b->time_ms));
    default: return 0.0;
    }
}

/* The shared series of the bar (vp_feat_ws_prepare's, and the moments the features read). */
static void shared_step(vp_feat_stream* s, const vp_feat_bar* b, bar_ctx* c) {
    const int64_t t = s->t;
    roll* R = s->shared;
    c->b = b;
    c->s = s;
    c->t = t;
    c->c_prev = t > 0 ? s->close[(t - 1) % HIST] : 0.0;
    c->lv_prev = t > 0 ? s->lv[(t - 1) % HIST] : 0.0;
    c->lc = log(b->close);
    c->r1 = t > 0 ? c->lc - s->lc[(t - 1) % HIST] : 0.0;
    c->lv = log1p(b->volume);
    double tr = b->high - b->low;
    if (t > 0) {
        double a = fabs(b->high - c->c_prev), d = fabs(b->low - c->c_prev);
        tr = fmax(tr, fmax(a, d));
    }
    // the bar into the history rings (the look-backs above read the previous bars first)
    const int64_t h = t % HIST;
    s->close[h] = b->close, s->high[h] = b->high, s->low[h] = b->low, s->lc[h] = c->lc, s->lv[h] = c->lv;
    roll_step(&R[R_ATR], t, tr, &c->atr, NULL);
    const double r2 = c->r1 * c->r1, body = body_of(b), vb = b->volume * body;
    roll_step(&R[R_RV8], t, r2, &c->rv[0], NULL);
    roll_step(&R[R_RV32], t, r2, &c->rv[1], NULL);
    roll_step(&R[R_RV128], t, r2, &c->rv[2], NULL);
    roll_step(&R[R_VOLZ], t, c->lv, &c->volz_mean, &c->volz_sd);
    roll_step(&R[R_FVB8], t, vb, &c->flow[0][0], NULL);
    roll_step(&R[R_FV8], t, b->volume, &c->flow[0][1], NULL);
    roll_step(&R[R_FB8], t, body, &c->flow[0][2], NULL);
    roll_step(&R[R_FVB32], t, vb, &c->flow[1][0], NULL);
    roll_step(&R[R_FV32], t, b->volume, &c->flow[1][1], NULL);
    roll_step(&R[R_FB32], t, body, &c->flow[1][2], NULL);
    roll_step(&R[R_MA8], t, b->close, &c->ma[0], NULL);
    roll_step(&R[R_MA32], t, b->close, &c->ma[1], NULL);
    roll_step(&R[R_MA128], t, b->close, &c->ma[2], NULL);
}

void vp_feat_stream_push(vp_feat_stream* s, const vp_feat_bar* bar, float* row) {
    bar_ctx c;
    shared_step(s, bar, &c);
    const double clip = s->cfg.clip;
    for (int j = 0; j < s->F; ++j) {
        const int id = vp_features_column_id(&s->cfg, j);
        const double raw = raw_of(&c, id);
        if (s->norm[j].w == 0) {
            row[j] = (float)raw;
            continue;
        }
        double mean, sd;
        roll_step(&s->norm[j], s->t, raw, &mean, &sd);
        double z = (raw - mean) / (sd + s->cfg.norm_eps);
        z = z > clip ? clip : z < -clip ? -clip : z;
        row[j] = (float)z;
    }
    s->t += 1;
}
