/* The feature stream: each bar's row, stepped one bar at a time, equals the batch matrix
 * vp_features_compute writes over the same bars, bit for bit, past several exact recomputes
 * of the running sums (bars 1024, 2048, 3072), for the default features, raw values (window
 * 0), a short window and a chosen subset of columns; bars with no range and no volume
 * included. */
#include "data/features_stream.h"
#include "test_backtest_util.h"
#include "vp_test.h"

enum { N = 3300 };

/* Bars of a synthetic market with flat bars (no range) and bars without volume mixed in. */
static void make_bars(vp_bars* b, uint64_t seed) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_OU);
    sc.seed = seed;
    sc.sigma = 0.004;
    CHECK_OK(vp_synth_generate(&sc, N, b, NULL));
    for (int64_t t = 5; t < N; t += 97) b->open[t] = b->high[t] = b->low[t] = b->close[t];
    for (int64_t t = 11; t < N; t += 53) b->volume[t] = 0.0;
    for (int64_t t = 600; t < 640; ++t) b->volume[t] = 0.0; /* a stretch without volume: flow's fallback */
}

/* Compares the stream's rows with the batch matrix under cfg. */
static void check_cfg(const vp_bars* b, const vp_feature_cfg* fc, const char* what) {
    const int F = vp_features_count(fc);
    float* want = (float*)malloc(sizeof(float) * (size_t)(N * F));
    float* row = (float*)malloc(sizeof(float) * (size_t)F);
    CHECK(want && row, "memory");
    CHECK_OK(vp_features_compute(b, fc, want, (int64_t)N * F));
    vp_feat_stream* s = NULL;
    CHECK_OK(vp_feat_stream_init(&s, fc));
    CHECK(vp_feat_stream_width(s) == F, "%s: width %d, want %d", what, vp_feat_stream_width(s), F);
    int64_t bad = 0, first_t = -1, first_j = -1;
    float first_got = 0.0f;
    for (int64_t t = 0; t < N; ++t) {
        const vp_feat_bar fb = {b->time_ms[t], b->open[t], b->high[t], b->low[t], b->close[t], b->volume[t]};
        vp_feat_stream_push(s, &fb, row);
        for (int j = 0; j < F; ++j)
            if (memcmp(&row[j], &want[t * F + j], sizeof(float)) != 0 && bad++ == 0) first_t = t, first_j = j, first_got = row[j];
    }
    CHECK(bad == 0, "%s: %lld values differ; first at bar %lld column %lld (%s): %.9g, batch %.9g", what,
          (long long)bad, (long long)first_t, (long long)first_j,
          first_j >= 0 ? vp_feature_name(vp_features_column_id(fc, (int)first_j)) : "-",
          (double)first_got, first_t >= 0 ? (double)want[first_t * F + first_j] : 0.0);
    CHECK(vp_feat_stream_count(s) == N, "%s: count %lld", what, (long long)vp_feat_stream_count(s));
    vp_feat_stream_free(s);
    free(want);
    free(row);
}

static void test_stream_equals_batch(void) {
    vp_bars b;
    make_bars(&b, 17);
    vp_feature_cfg fc = vp_feature_cfg_default();
    check_cfg(&b, &fc, "default (window 256)");
    fc.norm_window = 0;
    check_cfg(&b, &fc, "raw values (window 0)");
    fc.norm_window = 64;
    check_cfg(&b, &fc, "window 64");
    fc.n_features = 4;
    fc.ids[0] = VP_FEAT_DOW_COS, fc.ids[1] = VP_FEAT_FLOW_32, fc.ids[2] = VP_FEAT_DIST_LO_128, fc.ids[3] = VP_FEAT_RET_1;
    check_cfg(&b, &fc, "four chosen columns");
    vp_bars_free(&b);
}

static void test_stream_bad_cfg(void) {
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = -1;
    vp_feat_stream* s = NULL;
    CHECK_STATUS(vp_feat_stream_init(&s, &fc), VP_ERR_INVALID_ARG, "norm_window -1");
    CHECK(s == NULL, "a refused stream is NULL");
}

int main(void) {
    RUN_TEST(test_stream_equals_batch);
    RUN_TEST(test_stream_bad_cfg);
    return vpt_finish();
}
