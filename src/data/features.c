/* The feature matrix: configuration, warm-up, and the trailing z-score normalisation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "data/features_internal.h"

/* Name, look-back and normalisation flag of every feature, from VP_FEATURE_LIST. */
typedef struct feature_info {
    const char* name; /* column name */
    int lookback;     /* bars before t the raw value reads */
    int zscored;      /* 1: trailing z-score; 0: already bounded, passed through */
} feature_info;

static const feature_info FEATURES[VP_FEAT_COUNT] = {
#define VP_FEATURE_INFO_(id, name, lookback, zscored) {name, lookback, zscored},
    VP_FEATURE_LIST(VP_FEATURE_INFO_)
#undef VP_FEATURE_INFO_
};

vp_feature_cfg vp_feature_cfg_default(void) {
    vp_feature_cfg c;
    memset(&c, 0, sizeof c);
    c.norm_window = 256;
    c.norm_eps = 1e-8;
    c.clip = 5.0f;
    c.n_features = 0;
    return c;
}

/* 1 when cfg is usable. */
static int cfg_valid(const vp_feature_cfg* c) {
    if (!c || c->norm_window < 0 || !(c->norm_eps >= 0.0) || !(c->clip > 0.0f)) return 0;
    if (c->n_features < 0 || c->n_features > VP_FEAT_COUNT) return 0;
    for (int j = 0; j < c->n_features; ++j)
        if (c->ids[j] < 0 || c->ids[j] >= VP_FEAT_COUNT) return 0;
    return 1;
}

int vp_features_count(const vp_feature_cfg* cfg) {
    if (!cfg_valid(cfg)) return 0;
    return cfg->n_features ? cfg->n_features : VP_FEAT_COUNT;
}

int vp_features_column_id(const vp_feature_cfg* cfg, int col) {
    int f = vp_features_count(cfg);
    if (col < 0 || col >= f) return -1;
    return cfg->n_features ? cfg->ids[col] : col;
}

int64_t vp_features_warmup(const vp_feature_cfg* cfg) {
    int f = vp_features_count(cfg);
    int64_t lb = 0;
    for (int j = 0; j < f; ++j) {
        const feature_info* fi = &FEATURES[vp_features_column_id(cfg, j)];
        int64_t need = fi->lookback + (fi->zscored && cfg->norm_window > 0 ? cfg->norm_window - 1 : 0);
        if (need > lb) lb = need;
    }
    return lb;
}

const char* vp_feature_name(int id) { return id >= 0 && id < VP_FEAT_COUNT ? FEATURES[id].name : "?"; }

/* Normalises a raw series into col [n]: z-scored over the trailing window and clipped, or passed through. */
static void normalise(const vp_feature_cfg* cfg, int id, vp_feat_ws* ws, const double* raw, float* col) {
    int64_t n = ws->b->n;
    if (!FEATURES[id].zscored || cfg->norm_window == 0) {
        for (int64_t t = 0; t < n; ++t) col[t] = (float)raw[t];
        return;
    }
    vp_roll_moments(raw, n, cfg->norm_window, ws->tmp, ws->tmp2);
    double clip = cfg->clip;
    for (int64_t t = 0; t < n; ++t) {
        double z = (raw[t] - ws->tmp[t]) / (ws->tmp2[t] + cfg->norm_eps);
        z = z > clip ? clip : z < -clip ? -clip : z;
        col[t] = (float)z;
    }
}

/* Columns per transposition group: contiguous columns are interleaved into the row-major
 * matrix GROUP at a time, so each row is written in a few wide pieces, not F scattered floats. */
#define GROUP 8

vp_status vp_features_compute(const vp_bars* b, const vp_feature_cfg* cfg, float* out, int64_t out_len) {
    VP_REQUIRE(b != NULL && cfg != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_features_compute: NULL argument");
    VP_REQUIRE(cfg_valid(cfg), VP_ERR_INVALID_ARG,
               "vp_features_compute: invalid cfg (norm_window %d, eps %g, clip %g, n_features %d; ids must be in "
               "[0, %d))",
               cfg->norm_window, cfg->norm_eps, (double)cfg->clip, cfg->n_features, VP_FEAT_COUNT);
    VP_REQUIRE(b->n >= 1 && b->close && b->open && b->high && b->low && b->volume && b->time_ms, VP_ERR_INVALID_ARG,
               "vp_features_compute: empty bars");
    int F = vp_features_count(cfg);
    VP_REQUIRE(out_len >= b->n * F, VP_ERR_SHAPE, "vp_features_compute: out holds %lld floats, [%lld, %d] needs %lld",
               (long long)out_len, (long long)b->n, F, (long long)(b->n * F));

    /* Workspace: shared series and scratch (one block), and GROUP float columns. */
    int64_t n = b->n;
    double* block = (double*)malloc((size_t)n * 9 * sizeof(double));
    float* cols = (float*)malloc((size_t)n * GROUP * sizeof(float));
    if (!block || !cols) {
        free(block);
        free(cols);
        VP_FAIL(VP_ERR_OOM, "vp_features_compute: workspace for %lld bars", (long long)n);
    }
    vp_feat_ws ws = {b,           block,         block + n,     block + 2 * n,           block + 3 * n,
                     block + 4 * n, block + 5 * n, block + 6 * n, (int64_t*)(block + 7 * n)};
    double* raw = block + 8 * n;
    vp_feat_ws_prepare(&ws);

    /* Groups of columns: each raw series, its normalisation, then the group into the rows. */
    for (int j0 = 0; j0 < F; j0 += GROUP) {
        int g = F - j0 < GROUP ? F - j0 : GROUP;
        for (int k = 0; k < g; ++k) {
            int id = vp_features_column_id(cfg, j0 + k);
            vp_feature_raw(id, &ws, raw);
            normalise(cfg, id, &ws, raw, cols + (size_t)k * n);
        }
        if (g == GROUP) {
            for (int64_t t = 0; t < n; ++t)
                for (int k = 0; k < GROUP; ++k) out[t * F + j0 + k] = cols[(size_t)k * n + t];
        } else {
            for (int64_t t = 0; t < n; ++t)
                for (int k = 0; k < g; ++k) out[t * F + j0 + k] = cols[(size_t)k * n + t];
        }
    }
    free(cols);
    free(block);
    return VP_OK;
}
