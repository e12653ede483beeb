/* Tests of the feature matrix: the table, every raw formula against a naive loop, the
 * trailing z-score, causality (future bars never change past rows), warm-up, Wilder's ATR. */
#include "test_data_util.h"

#include "vp_test.h"
#include "vulpes/features.h"
#include "vulpes/synth.h"

#define EURUSD "examples/data/eurusd_1h_2017.csv"

static void test_feature_table(void) {
    vp_feature_cfg c = vp_feature_cfg_default();
    CHECK(vp_features_count(&c) == 32 && VP_FEAT_COUNT == VP_FEATURES_DEFAULT, "F = %d", vp_features_count(&c));
    CHECK(vp_features_warmup(&c) == 128 + 255, "warm-up %lld", (long long)vp_features_warmup(&c));
    for (int i = 0; i < VP_FEAT_COUNT; ++i) {
        CHECK(strlen(vp_feature_name(i)) > 2 && strcmp(vp_feature_name(i), "?") != 0, "name %d", i);
        for (int j = 0; j < i; ++j) CHECK(strcmp(vp_feature_name(i), vp_feature_name(j)) != 0, "unique %d %d", i, j);
    }
    CHECK(strcmp(vp_feature_name(-1), "?") == 0 && strcmp(vp_feature_name(VP_FEAT_COUNT), "?") == 0, "bad id");
    c.norm_window = 0;
    CHECK(vp_features_warmup(&c) == 128, "raw warm-up %lld", (long long)vp_features_warmup(&c));
    c = vp_feature_cfg_default();
    c.n_features = 3;
    c.ids[0] = VP_FEAT_TOD_SIN;
    c.ids[1] = VP_FEAT_RET_1;
    c.ids[2] = VP_FEAT_TOD_COS;
    CHECK(vp_features_count(&c) == 3 && vp_features_column_id(&c, 1) == VP_FEAT_RET_1 &&
              vp_features_column_id(&c, 3) == -1,
          "subset");
    CHECK(vp_features_warmup(&c) == 1 + 255, "subset warm-up %lld", (long long)vp_features_warmup(&c));
    c.ids[2] = VP_FEAT_COUNT;
    CHECK(vp_features_count(&c) == 0, "invalid id gives F = 0");
}

/* Trailing window [max(0, t-w+1), t]. */
static int64_t lo_of(int64_t t, int w) { return t - w + 1 > 0 ? t - w + 1 : 0; }
static double r1_of(const vp_bars* b, int64_t t) { return t > 0 ? log(b->close[t] / b->close[t - 1]) : 0.0; }
static double body_of(const vp_bars* b, int64_t t) {
    double r = b->high[t] - b->low[t];
    return r > 0 ? (b->close[t] - b->open[t]) / r : 0.0;
}
static double mean_close(const vp_bars* b, int64_t t, int w) {
    double s = 0;
    for (int64_t i = lo_of(t, w); i <= t; ++i) s += b->close[i];
    return s / (double)(t - lo_of(t, w) + 1);
}
static double atr14(const vp_bars* b, int64_t t) {
    double s = 0;
    for (int64_t i = lo_of(t, 14); i <= t; ++i) {
        double tr = b->high[i] - b->low[i];
        if (i > 0) tr = fmax(tr, fmax(fabs(b->high[i] - b->close[i - 1]), fabs(b->low[i] - b->close[i - 1])));
        s += tr;
    }
    return s / (double)(t - lo_of(t, 14) + 1);
}
static double rvol(const vp_bars* b, int64_t t, int w) {
    double s = 0;
    for (int64_t i = lo_of(t, w); i <= t; ++i) s += r1_of(b, i) * r1_of(b, i);
    return sqrt(s / (double)(t - lo_of(t, w) + 1));
}
static double flow(const vp_bars* b, int64_t t, int w) {
    double sv = 0, v = 0, sb = 0;
    for (int64_t i = lo_of(t, w); i <= t; ++i) {
        sv += b->volume[i] * body_of(b, i);
        v += b->volume[i];
        sb += body_of(b, i);
    }
    return v > 0 ? sv / v : sb / (double)(t - lo_of(t, w) + 1);
}
static double extreme(const vp_bars* b, int64_t t, int w, int hi) {
    double m = hi ? b->high[t] : b->low[t];
    for (int64_t i = lo_of(t, w); i <= t; ++i) m = hi ? fmax(m, b->high[i]) : fmin(m, b->low[i]);
    return m;
}

/* The raw value of feature id at bar t, computed naively from the definition. */
static double naive(int id, const vp_bars* b, int64_t t) {
    static const int H[6] = {1, 2, 4, 8, 16, 32};
    const double PI2 = 6.283185307179586;
    int64_t t1 = t > 0 ? t - 1 : 0, t8 = t > 8 ? t - 8 : 0;
    double lv = log1p(b->volume[t]), lvp = log1p(b->volume[t1]);
    if (id <= VP_FEAT_RET_32) return log(b->close[t] / b->close[t - H[id] > 0 ? t - H[id] : 0]);
    switch (id) {
    case VP_FEAT_RVOL_8: return rvol(b, t, 8);
    case VP_FEAT_RVOL_32: return rvol(b, t, 32);
    case VP_FEAT_RVOL_128: return rvol(b, t, 128);
    case VP_FEAT_RANGE: return log(b->high[t] / b->low[t]);
    case VP_FEAT_BODY: return body_of(b, t);
    case VP_FEAT_CLOSE_POS:
        return b->high[t] > b->low[t] ? (b->close[t] - b->low[t]) / (b->high[t] - b->low[t]) : 0.5;
    case VP_FEAT_GAP: return t > 0 ? log(b->open[t] / b->close[t - 1]) : 0.0;
    case VP_FEAT_VOL_Z: {
        double s = 0, q = 0;
        int64_t lo = lo_of(t, 32), m = t - lo + 1;
        for (int64_t i = lo; i <= t; ++i) s += log1p(b->volume[i]);
        for (int64_t i = lo; i <= t; ++i) q += pow(log1p(b->volume[i]) - s / m, 2);
        return (lv - s / m) / (sqrt(q / m) + 1e-8);
    }
    case VP_FEAT_VOL_CHG: return lv - lvp;
    case VP_FEAT_FLOW_8: return flow(b, t, 8);
    case VP_FEAT_FLOW_32: return flow(b, t, 32);
    case VP_FEAT_ATR_MOVE_1: return (b->close[t] - b->close[t1]) / atr14(b, t);
    case VP_FEAT_ATR_MOVE_8: return (b->close[t] - b->close[t8]) / atr14(b, t);
    case VP_FEAT_ATR_LEVEL: return log(atr14(b, t) / b->close[t]);
    case VP_FEAT_DIST_HI_32: return log(b->close[t] / extreme(b, t, 32, 1));
    case VP_FEAT_DIST_LO_32: return log(b->close[t] / extreme(b, t, 32, 0));
    case VP_FEAT_DIST_HI_128: return log(b->close[t] / extreme(b, t, 128, 1));
    case VP_FEAT_DIST_LO_128: return log(b->close[t] / extreme(b, t, 128, 0));
    case VP_FEAT_MA_GAP_8: return log(b->close[t] / mean_close(b, t, 8));
    case VP_FEAT_MA_GAP_32: return log(b->close[t] / mean_close(b, t, 32));
    case VP_FEAT_MA_GAP_128: return log(b->close[t] / mean_close(b, t, 128));
    case VP_FEAT_MA_CROSS: return log(mean_close(b, t, 8) / mean_close(b, t, 32));
    case VP_FEAT_TOD_SIN: return sin(PI2 * (double)(b->time_ms[t] % 86400000) / 86400000.0);
    case VP_FEAT_TOD_COS: return cos(PI2 * (double)(b->time_ms[t] % 86400000) / 86400000.0);
    case VP_FEAT_DOW_SIN: return sin(PI2 * (double)((b->time_ms[t] / 86400000 + 3) % 7) / 7.0);
    case VP_FEAT_DOW_COS: return cos(PI2 * (double)((b->time_ms[t] / 86400000 + 3) % 7) / 7.0);
    default: return NAN;
    }
}

static void test_raw_formulas(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b;
    CHECK_OK(vp_bars_load_csv(EURUSD, &o, &b, NULL));
    vp_feature_cfg c = vp_feature_cfg_default();
    c.norm_window = 0;
    int F = vp_features_count(&c);
    float* x = (float*)malloc(sizeof(float) * (size_t)(b.n * F));
    CHECK_OK(vp_features_compute(&b, &c, x, b.n * F));
    /* Every feature, every bar, against the naive definition. */
    for (int j = 0; j < F; ++j) {
        int bad = 0;
        int64_t first_bad = -1;
        for (int64_t t = 0; t < b.n; ++t) {
            double e = naive(j, &b, t), v = x[t * F + j];
            if (!(fabs(v - e) <= 2e-6 + 2e-5 * fabs(e)) && bad++ == 0) first_bad = t;
        }
        CHECK(bad == 0, "%s: %d rows differ, first t = %lld: %.9g vs %.9g", vp_feature_name(j), bad,
              (long long)first_bad, first_bad >= 0 ? (double)x[first_bad * F + j] : 0.0,
              first_bad >= 0 ? naive(j, &b, first_bad) : 0.0);
    }
    /* A known calendar point: 2017-01-02 is a Monday (weekday 0); 06:00 is a quarter day. */
    int64_t t6 = -1;
    for (int64_t t = 0; t < b.n; ++t)
        if (b.time_ms[t] == INT64_C(1483315200000) + 6 * 3600000) t6 = t;
    CHECK(t6 > 0, "bar at 2017-01-02T06:00Z");
    if (t6 > 0) {
        CHECK_NEAR(x[t6 * F + VP_FEAT_TOD_SIN], 1.0, 1e-6, 0);
        CHECK_NEAR(x[t6 * F + VP_FEAT_DOW_SIN], 0.0, 1e-6, 0);
        CHECK_NEAR(x[t6 * F + VP_FEAT_DOW_COS], 1.0, 1e-6, 0);
    }
    free(x);
    vp_bars_free(&b);
}

static void test_zscore(void) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_REGIME);
    vp_bars b;
    CHECK_OK(vp_synth_generate(&sc, 2500, &b, NULL));
    /* One spike at bar 1500 so the clip is reached. */
    for (int64_t t = 1500; t < b.n; ++t) {
        b.open[t] *= t == 1500 ? 1.0 : 1.3;
        b.high[t] *= 1.3;
        b.low[t] *= t == 1500 ? 1.0 : 1.3;
        b.close[t] *= 1.3;
    }
    vp_feature_cfg raw = vp_feature_cfg_default(), z = raw;
    raw.norm_window = 0;
    z.norm_window = 50;
    z.clip = 4.0f;
    int64_t n = b.n;
    float* xr = (float*)malloc(sizeof(float) * (size_t)(n * 32));
    float* xz = (float*)malloc(sizeof(float) * (size_t)(n * 32));
    CHECK_OK(vp_features_compute(&b, &raw, xr, n * 32));
    CHECK_OK(vp_features_compute(&b, &z, xz, n * 32));
    /* z[t] = (x[t] - mean) / (sd + eps) over the trailing 50 raw values, clipped to +-4. */
    int bad = 0, clipped = 0;
    for (int j = 0; j < VP_FEAT_TOD_SIN; ++j) {
        for (int64_t t = 0; t < n; ++t) {
            int64_t lo = lo_of(t, 50), m = t - lo + 1;
            double s = 0, q = 0;
            for (int64_t i = lo; i <= t; ++i) s += xr[i * 32 + j];
            for (int64_t i = lo; i <= t; ++i) q += pow(xr[i * 32 + j] - s / m, 2);
            double e = (xr[t * 32 + j] - s / m) / (sqrt(q / m) + 1e-8);
            e = fmax(-4.0, fmin(4.0, e));
            if (fabs(xz[t * 32 + j] - e) > 2e-3 + 1e-3 * fabs(e)) bad++;
            if (fabs(xz[t * 32 + j]) == 4.0f) clipped++;
            if (t == 0 && xz[j] != 0.0f) bad++;
        }
    }
    CHECK(bad == 0, "%d z-scores differ from the naive trailing window", bad);
    CHECK(clipped > 0, "the spike reaches the clip");
    CHECK(xz[1500 * 32 + VP_FEAT_RET_1] == 4.0f, "spike return clipped to +4: %g", (double)xz[1500 * 32]);
    /* Calendar columns pass through unnormalised. */
    CHECK(xz[7 * 32 + VP_FEAT_TOD_COS] == xr[7 * 32 + VP_FEAT_TOD_COS], "calendar not z-scored");
    free(xr);
    free(xz);
    vp_bars_free(&b);
}

/* Perturbs bars t+1..n-1 (prices scaled, volumes changed, times pushed later). */
static void perturb_after(vp_bars* b, int64_t t, uint64_t seed) {
    for (int64_t i = t + 1; i < b->n; ++i) {
        double u = vp_rng_uniform(seed, 99, (uint64_t)i);
        double f = 0.7 + 0.6 * u;
        b->open[i] *= f;
        b->high[i] *= f * 1.01;
        b->low[i] *= f * 0.99;
        b->close[i] *= f;
        b->volume[i] = b->volume[i] * 3.0 + 1.0;
        b->time_ms[i] += (i - t) * 1800000;
    }
}

static void causality_on(const vp_bars* src, const char* what) {
    vp_feature_cfg c = vp_feature_cfg_default();
    int64_t n = src->n;
    int F = vp_features_count(&c);
    float* x = (float*)malloc(sizeof(float) * (size_t)(n * F));
    float* y = (float*)malloc(sizeof(float) * (size_t)(n * F));
    CHECK_OK(vp_features_compute(src, &c, x, n * F));
    vp_bars p;
    CHECK_OK(vp_bars_alloc(&p, n));
    int checked = 0;
    /* Many cut points, including the start, around the warm-up and the end. */
    for (int k = 0; k < 48; ++k) {
        int64_t t = k < 8 ? (int64_t[]){0, 1, 2, 382, 383, 384, n - 2, n - 3}[k] : (k * 7919) % (n - 1);
        memcpy(p.time_ms, src->time_ms, (size_t)n * 48);
        perturb_after(&p, t, (uint64_t)k);
        CHECK_OK(vp_bars_validate(&p));
        CHECK_OK(vp_features_compute(&p, &c, y, n * F));
        CHECK(memcmp(x, y, sizeof(float) * (size_t)((t + 1) * F)) == 0, "%s: rows 0..%lld changed by later bars",
              what, (long long)t);
        CHECK(memcmp(x + (t + 1) * F, y + (t + 1) * F, sizeof(float) * (size_t)F) != 0,
              "%s: row %lld unchanged by its own perturbed bar", what, (long long)(t + 1));
        ++checked;
    }
    CHECK(checked == 48, "cut points %d", checked);
    vp_bars_free(&p);
    free(x);
    free(y);
}

static void test_causality(void) {
    vp_load_opts o = tdu_nocache();
    vp_bars b, v;
    CHECK_OK(vp_bars_load_csv(EURUSD, &o, &b, NULL));
    CHECK_OK(vp_bars_slice(&b, 0, 1500, &v));
    vp_bars copy;
    CHECK_OK(vp_bars_alloc(&copy, v.n));
    memcpy(copy.time_ms, v.time_ms, (size_t)v.n * 8);
    memcpy(copy.open, v.open, (size_t)v.n * 8);
    memcpy(copy.high, v.high, (size_t)v.n * 8);
    memcpy(copy.low, v.low, (size_t)v.n * 8);
    memcpy(copy.close, v.close, (size_t)v.n * 8);
    memcpy(copy.volume, v.volume, (size_t)v.n * 8);
    causality_on(&copy, "EURUSD");
    vp_bars_free(&copy);
    vp_bars_free(&b);
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_REGIME);
    CHECK_OK(vp_synth_generate(&sc, 1201, &b, NULL));
    causality_on(&b, "regime");
    vp_bars_free(&b);
}

/* Rows from the warm-up on depend only on the last warm-up bars: a slice starting
 * warm-up bars earlier gives the same rows (up to float rounding of running sums). */
static void test_warmup(void) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_TREND);
    vp_bars b, v;
    CHECK_OK(vp_synth_generate(&sc, 3001, &b, NULL));
    vp_feature_cfg c = vp_feature_cfg_default();
    int64_t w = vp_features_warmup(&c), n = b.n, s = 1777;
    float* x = (float*)malloc(sizeof(float) * (size_t)(n * 32));
    float* y = (float*)malloc(sizeof(float) * (size_t)(n * 32));
    CHECK_OK(vp_features_compute(&b, &c, x, n * 32));
    CHECK_OK(vp_bars_slice(&b, s - w, n, &v));
    CHECK_OK(vp_features_compute(&v, &c, y, v.n * 32));
    double worst = 0;
    for (int64_t t = s; t < n; ++t)
        for (int j = 0; j < 32; ++j) worst = fmax(worst, fabs((double)x[t * 32 + j] - y[(t - s + w) * 32 + j]));
    CHECK(worst < 1e-4, "rows after the warm-up differ by %g", worst);
    /* Warm-up rows are defined: finite, within the clip, and the first row's z-scores are 0. */
    int bad = 0;
    for (int64_t i = 0; i < w * 32; ++i) bad += !isfinite(x[i]) || fabs(x[i]) > 5.0f;
    for (int j = 0; j < VP_FEAT_TOD_SIN; ++j) bad += x[j] != 0.0f;
    CHECK(bad == 0, "%d bad warm-up values", bad);
    /* Errors. */
    CHECK_STATUS(vp_features_compute(&b, &c, x, n * 32 - 1), VP_ERR_SHAPE, "needs");
    c.clip = 0.0f;
    CHECK_STATUS(vp_features_compute(&b, &c, x, n * 32), VP_ERR_INVALID_ARG, "invalid cfg");
    free(x);
    free(y);
    vp_bars_free(&b);
}

static void test_atr(void) {
    vp_bars b;
    CHECK_OK(vp_bars_alloc(&b, 5));
    const double h[5] = {10, 11, 13, 12, 15}, l[5] = {8, 9, 10, 11, 14}, c[5] = {9, 10, 12, 11.5, 14.5};
    for (int t = 0; t < 5; ++t) {
        b.time_ms[t] = t;
        b.high[t] = h[t];
        b.low[t] = l[t];
        b.close[t] = b.open[t] = c[t];
    }
    double a[5];
    CHECK_OK(vp_atr(&b, 3, a));
    /* TR = 2, 2, 3, 1, 3.5: means while t < 3, then Wilder's (prev * 2 + TR) / 3. */
    const double e[5] = {2.0, 2.0, 7.0 / 3.0, 17.0 / 9.0, 65.5 / 27.0};
    for (int t = 0; t < 5; ++t) CHECK_NEAR(a[t], e[t], 1e-12, 0);
    CHECK_STATUS(vp_atr(&b, 0, a), VP_ERR_INVALID_ARG, "period");
    vp_bars_free(&b);

    /* Causal on real data: later bars do not change earlier values. */
    vp_load_opts o = tdu_nocache();
    CHECK_OK(vp_bars_load_csv(EURUSD, &o, &b, NULL));
    double* x = (double*)malloc(sizeof(double) * (size_t)b.n);
    double* y = (double*)malloc(sizeof(double) * (size_t)b.n);
    CHECK_OK(vp_atr(&b, 14, x));
    perturb_after(&b, 3000, 5);
    CHECK_OK(vp_atr(&b, 14, y));
    CHECK(memcmp(x, y, 3001 * sizeof(double)) == 0 && x[3001] != y[3001], "ATR causal");
    free(x);
    free(y);
    vp_bars_free(&b);
}

int main(void) {
    RUN_TEST(test_feature_table);
    RUN_TEST(test_raw_formulas);
    RUN_TEST(test_zscore);
    RUN_TEST(test_causality);
    RUN_TEST(test_warmup);
    RUN_TEST(test_atr);
    return vpt_finish();
}
