/* Tests of the span encoding with shared rows (vulpes/model_span.h) on the CPU:
 * - vp_model_encode_span's rows equal vp_model_encode's of the same decision bars bit for bit,
 *   for the default network (Mamba2), the default with TLOB and with encoder none, and small
 *   networks with the input modules on (variable selection, spectral norm, KAN) under each
 *   encoder; for spans whose first windows clamp at row 0, partly or not at all; in one chunk,
 *   in chunks that do not divide the span, and one window a chunk; Mamba2 with its conv wider
 *   than the window (every step sees the padding), as wide (K = CW), of width 1 and with K 1,
 *   and TLOB with K 1;
 * - the tables' extents (first bar, rows) and a re-encode after new parameters;
 * - a collector's span table made with shared rows equals the one of each window encoded alone;
 * - the FLOP count: vp_model_span_flops over a window's own Kt rows is vp_model_flops without
 *   the heads; sharing a span's rows cuts the default network's encoder to about a fifth;
 * - bad arguments are refused naming what. */
#include "learn/collect_impl.h"
#include "test_model_util.h"
#include "test_train_util.h"
#include "vp_test.h"

/* Features [T, F] in [-2, 2) from a fixed LCG. */
static float* make_features(int64_t T, int F, uint32_t seed) {
    float* x = (float*)malloc(sizeof(float) * (size_t)(T * F));
    uint32_t s = seed;
    for (int64_t i = 0; i < T * F; ++i) {
        s = s * 1664525u + 1013904223u;
        x[i] = (float)((s >> 8) * (1.0 / 16777216.0) * 4.0 - 2.0);
    }
    return x;
}

/* A small network of encoder `enc` (K 4, H 8) with the input modules vsn, sn, kan. */
static vp_model_cfg small_cfg(vp_model_encoder enc, int vsn, int sn, int kan) {
    return tmu_span_cfg(enc, 8, vsn, sn, kan);
}

/* vp_model_encode_span of `n` windows from `begin` in chunks of `chunk` against vp_model_encode
 * of the same bars in one batch, bit for bit. */
static void check_span(const char* what, const vp_model* m, const vp_tensor* feats, int64_t begin, int64_t n,
                       int64_t chunk) {
    const int64_t H = m->cfg.hidden;
    const int Kt = m->cfg.encoder == VP_ENCODER_NONE ? 1 : m->cfg.window;
    vp_model_span s;
    vp_model_acts *a = NULL, *ref = NULL;
    int32_t* bars = (int32_t*)malloc(sizeof(int32_t) * (size_t)n);
    float* out = (float*)malloc(sizeof(float) * (size_t)(n * H));
    CHECK_OK(vp_model_span_init(&s, m, begin, n));
    CHECK_OK(vp_model_acts_init(&a, m, chunk, 0, 0));
    CHECK_OK(vp_model_acts_init(&ref, m, n, 0, 0));
    if (a && ref && bars && out && s.bars.data) {
        const int64_t first = begin - Kt + 1 > 0 ? begin - Kt + 1 : 0;
        CHECK(s.first == first && s.rows == begin + n - first, "%s: first %lld rows %lld (want %lld, %lld)", what,
              (long long)s.first, (long long)s.rows, (long long)first, (long long)(begin + n - first));
        for (int64_t i = 0; i < n; ++i) bars[i] = (int32_t)(begin + i);
        vp_tensor bt = vp_tensor_1d(bars, VP_I32, VP_MEM_HOST, n), ot = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, n, H);
        memset(out, 0xff, sizeof(float) * (size_t)(n * H));
        CHECK_OK(vp_model_encode_span(m, &m->params, a, &s, feats, chunk, &ot));
        CHECK_OK(vp_model_encode(m, &m->params, ref, feats, &bt, n));
        const float* want = (const float*)vp_model_encoding(ref).data;
        int64_t bad = -1;
        for (int64_t i = 0; i < n && bad < 0; ++i)
            if (memcmp(out + i * H, want + i * H, sizeof(float) * (size_t)H) != 0) bad = i;
        CHECK(bad < 0, "%s (begin %lld, %lld windows, chunk %lld): window of bar %lld differs (first value %.9g vs %.9g)",
              what, (long long)begin, (long long)n, (long long)chunk, (long long)(begin + bad),
              bad >= 0 ? (double)out[bad * H] : 0.0, bad >= 0 ? (double)want[bad * H] : 0.0);
    }
    vp_model_acts_free(a);
    vp_model_acts_free(ref);
    vp_model_span_free(&s);
    free(bars);
    free(out);
}

/* Every span shape and chunking for network cfg. */
static void check_cfg(const char* what, vp_backend* b, vp_model_cfg c) {
    vp_model m;
    CHECK(vp_model_span_shares(&c), "%s: the configuration shares rows", what);
    CHECK_OK(vp_model_init(&m, b, &c, 7));
    if (!m.params.data) return;
    const int64_t n = 23, T = 2 * c.window + n + 4;
    float* x = make_features(T, c.n_features, 11);
    vp_tensor f = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, T, c.n_features);
    const int64_t begins[3] = {0, c.window / 2, c.window + 3}; /* clamped, partly, not at all */
    const int64_t chunks[3] = {n, 5, 1};
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 3; ++j) check_span(what, &m, &f, begins[i], n, chunks[j]);
    free(x);
    vp_model_free(&m);
}

static void test_small_networks(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    static const char* enc_name[3] = {"mamba2", "tlob", "none"};
    const vp_model_encoder enc[3] = {VP_ENCODER_MAMBA2, VP_ENCODER_TLOB, VP_ENCODER_NONE};
    // modules off; variable selection with spectral norm; KAN with variable selection; KAN with spectral norm
    const int mods[4][3] = {{0, 0, 0}, {1, 1, 0}, {1, 0, 1}, {0, 1, 1}};
    for (int e = 0; e < 3; ++e)
        for (int k = 0; k < 4; ++k) {
            char what[64];
            snprintf(what, sizeof what, "%s vsn %d sn %d kan %d", enc_name[e], mods[k][0], mods[k][1], mods[k][2]);
            check_cfg(what, b, small_cfg(enc[e], mods[k][0], mods[k][1], mods[k][2]));
        }
    vp_backend_free(b);
}

static void test_default_networks(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg c = vp_model_cfg_default();
    check_cfg("default mamba2", b, c);
    c.encoder = VP_ENCODER_TLOB;
    check_cfg("default tlob", b, c);
    c.encoder = VP_ENCODER_NONE;
    check_cfg("default none", b, c);
    vp_backend_free(b);
}

/* Mamba2 at the edges of the shared conv: steps t < CW - 1 are computed per window. */
static void test_conv_edges(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    const int kc[4][2] = {{2, 4}, {4, 4}, {5, 1}, {1, 3}}; /* K, CW */
    for (int i = 0; i < 4; ++i) {
        vp_model_cfg c = small_cfg(VP_ENCODER_MAMBA2, i == 1, 0, i == 2);
        c.window = kc[i][0], c.mamba_conv = kc[i][1];
        char what[64];
        snprintf(what, sizeof what, "mamba2 K %d CW %d", kc[i][0], kc[i][1]);
        check_cfg(what, b, c);
    }
    vp_model_cfg t = small_cfg(VP_ENCODER_TLOB, 0, 0, 0); /* a mixer of one bar */
    t.window = 1;
    check_cfg("tlob K 1", b, t);
    vp_backend_free(b);
}

/* New parameters: the same tables give the new encodings (nothing of the old ones kept). */
static void test_new_params(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg c = small_cfg(VP_ENCODER_MAMBA2, 0, 0, 0);
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &c, 3));
    const int64_t n = 9, T = 20, H = c.hidden;
    float* x = make_features(T, c.n_features, 5);
    vp_tensor f = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, T, c.n_features);
    vp_model_span s;
    vp_model_acts *a = NULL, *ref = NULL;
    CHECK_OK(vp_model_span_init(&s, &m, 2, n));
    CHECK_OK(vp_model_acts_init(&a, &m, 4, 0, 0));
    CHECK_OK(vp_model_acts_init(&ref, &m, n, 0, 0));
    float out[9 * 8];
    vp_tensor ot = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, n, H);
    CHECK_OK(vp_model_encode_span(&m, &m.params, a, &s, &f, 4, &ot));
    CHECK_OK(vp_model_init_params(&m, &m.params, 99));
    CHECK_OK(vp_model_encode_span(&m, &m.params, a, &s, &f, 4, &ot));
    int32_t bars[9];
    for (int i = 0; i < 9; ++i) bars[i] = 2 + i;
    vp_tensor bt = vp_tensor_1d(bars, VP_I32, VP_MEM_HOST, n);
    CHECK_OK(vp_model_encode(&m, &m.params, ref, &f, &bt, n));
    CHECK(memcmp(out, vp_model_encoding(ref).data, sizeof out) == 0, "the re-encode after new parameters differs");
    vp_model_acts_free(a), vp_model_acts_free(ref);
    vp_model_span_free(&s);
    vp_model_free(&m);
    free(x);
    vp_backend_free(b);
}

/* A collector of 5 envs on the test data forced to encode once: its table with shared rows
 * against the same collector's table with each window encoded alone. */
static void test_collector_table(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    memset(&d, 0, sizeof d);
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 0, NULL) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "set-up: %s", vp_last_error());
        vp_backend_free(b);
        return;
    }
    const int64_t T = d.bars.n;
    vp_tensor feats = vp_tensor_2d(d.features, VP_F32, VP_MEM_HOST, T, d.n_features);
    vp_env_market_desc md = {T, d.bars.open, d.bars.high, d.bars.low, d.bars.close, d.atr,
                             d.split.train.begin, d.split.train.end, &feats, d.bars.spread, 0.0, d.periods_per_year};
    vp_model_cfg mc = small_cfg(VP_ENCODER_MAMBA2, 0, 0, 0);
    mc.n_features = d.n_features;
    vp_env_market mk;
    vp_model m;
    vp_env env;
    vp_collector c;
    memset(&c, 0, sizeof c);
    vp_instrument inst = vpt_instrument_emini();
    vp_env_config ec = vp_env_config_default();
    ec.episode_bars = 5;
    CHECK_OK(vp_env_market_init(&mk, b, &md));
    CHECK_OK(vp_model_init(&m, b, &mc, 21));
    CHECK_OK(vp_env_init(&env, b, &mk, &inst, &ec, 5));
    const vp_policy pol = vp_model_policy(&m, &m.params);
    vp_collect_cfg cc = {1.0f, 0.05f, 30, 5, 4, VP_COLLECT_ENCODE_ONCE};
    CHECK_OK(vp_collector_init(&c, b, &pol, &feats, &env, NULL, &cc));
    CHECK(c.encode_once && c.span_shared && c.span.windows == c.span_rows && c.span.begin == c.span_begin,
          "the DQN collector encodes once with shared rows (once %d, shared %d)", c.encode_once, c.span_shared);
    if (c.span_shared) {
        const size_t bytes = vp_tensor_bytes(&c.span_enc);
        float* shared = (float*)malloc(bytes);
        CHECK_OK(vp_collector_encode_span(&c));
        memcpy(shared, c.span_enc.data, bytes);
        c.span_shared = 0; /* each window alone, vp_policy_encode */
        memset(c.span_enc.data, 0, bytes);
        CHECK_OK(vp_collector_encode_span(&c));
        CHECK(memcmp(shared, c.span_enc.data, bytes) == 0, "the shared-row table differs from each window alone");
        c.span_shared = 1;
        free(shared);
    }
    vp_collector_free(&c);
    vp_env_free(&env);
    vp_model_free(&m);
    vp_env_market_free(&mk);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

static void test_flops(void) {
    const vp_model_cfg cs[4] = {vp_model_cfg_default(), small_cfg(VP_ENCODER_TLOB, 1, 1, 0),
                                small_cfg(VP_ENCODER_NONE, 0, 1, 1), small_cfg(VP_ENCODER_MAMBA2, 1, 0, 1)};
    for (int i = 0; i < 4; ++i) {
        const vp_model_cfg* c = &cs[i];
        const double H = c->hidden, P = c->n_portfolio, HH = c->head_hidden, Z = c->n_atoms;
        const double heads = 2.0 * (H * P + 2.0 * HH * H + Z * HH + vp_model_cfg_actions(c) * Z * HH);
        const int Kt = c->encoder == VP_ENCODER_NONE ? 1 : c->window;
        const double own = vp_model_span_flops(c, 1, Kt), all = vp_model_flops(c, 1, 0, 0);
        CHECK(own > 0 && fabs(own + heads - all) <= 1e-9 * all, "config %d: a window's own rows %.0f + heads %.0f != %.0f",
              i, own, heads, all);
        CHECK(fabs(vp_model_span_flops(c, 10, 10 * Kt) - 10 * own) <= 1e-9 * own, "config %d: linear in windows", i);
    }
    // the default network over 140 000 windows: (R + 7) per-bar rows instead of 8 R
    const vp_model_cfg* c = &cs[0];
    const double R = 140000, per_old = vp_model_span_flops(c, 1, 8), per_new = vp_model_span_flops(c, 140000, 140007) / R;
    const double H = c->hidden, F = c->n_features, L = H + 2.0 * c->mamba_state + H / c->mamba_head_dim;
    CHECK_NEAR(per_old, 8 * (2 * H * F + 2 * H * H + 2 * L * H) + 4 * H * H, 0, 1e-12);
    CHECK_NEAR(per_new, (R + 7) / R * (2 * H * F + 2 * H * H + 2 * L * H) + 4 * H * H, 0, 1e-12);
    CHECK(per_new < 0.22 * per_old, "shared rows: %.3f MFLOP per window against %.3f", per_new * 1e-6, per_old * 1e-6);
    CHECK(vp_model_span_flops(c, 0, 8) == 0.0 && vp_model_span_flops(NULL, 1, 8) == 0.0, "bad counts are 0");
}

static void test_bad_calls(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg c = small_cfg(VP_ENCODER_MAMBA2, 0, 0, 0), c2 = small_cfg(VP_ENCODER_TLOB, 0, 0, 0);
    vp_model m, m2;
    CHECK_OK(vp_model_init(&m, b, &c, 1));
    CHECK_OK(vp_model_init(&m2, b, &c2, 1));
    vp_model_span s, s2;
    memset(&s, 0, sizeof s);
    CHECK_STATUS(vp_model_span_init(&s, &m, -1, 4), VP_ERR_INVALID_ARG, "begin >= 0");
    CHECK_STATUS(vp_model_span_init(&s, &m, 0, 0), VP_ERR_INVALID_ARG, "windows >= 1");
    CHECK_STATUS(vp_model_span_init(&s, NULL, 0, 4), VP_ERR_INVALID_ARG, "not initialised");
    vp_model_cfg bad = c;
    bad.encoder = (vp_model_encoder)7;
    CHECK(!vp_model_span_shares(&bad) && !vp_model_span_shares(NULL), "an invalid configuration does not share");
    CHECK_OK(vp_model_span_init(&s, &m, 3, 6));
    CHECK_OK(vp_model_span_init(&s2, &m2, 3, 6));
    vp_model_acts* a = NULL;
    CHECK_OK(vp_model_acts_init(&a, &m, 2, 0, 0));
    float* x = make_features(12, c.n_features, 1);
    float out[6 * 8];
    vp_tensor f = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, 12, c.n_features), fs = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, 8, c.n_features);
    vp_tensor o = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, 6, 8), os = vp_tensor_2d(out, VP_F32, VP_MEM_HOST, 5, 8);
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, a, &s, &f, 3, &o), VP_ERR_SHAPE, "chunk 3 outside [1, 2]");
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, a, &s, &f, 0, &o), VP_ERR_SHAPE, "chunk 0 outside");
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, a, &s2, &f, 2, &o), VP_ERR_INVALID_ARG, "another network shape");
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, a, &s, &fs, 2, &o), VP_ERR_SHAPE, "features");
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, a, &s, &f, 2, &os), VP_ERR_SHAPE, "out");
    CHECK_STATUS(vp_model_encode_span(&m, &m.params, NULL, &s, &f, 2, &o), VP_ERR_INVALID_ARG, "activations");
    CHECK_OK(vp_model_encode_span(&m, &m.params, a, &s, &f, 2, &o));
    vp_policy other = vp_model_policy(&m, &m.params);
    vp_policy_ops ops = *other.ops;
    ops.name = "other";
    other.ops = &ops;
    CHECK_STATUS(vp_model_policy_encode_span(&other, (vp_policy_work*)a, &s, &f, 2, &o), VP_ERR_INVALID_ARG,
                 "not a DQN network's (other)");
    // a span of encoder none (no trunk-row table) for a TLOB network of one bar: the same extents
    vp_model_cfg c3 = small_cfg(VP_ENCODER_NONE, 0, 0, 0), c4 = small_cfg(VP_ENCODER_TLOB, 0, 0, 0);
    c4.window = 1;
    vp_model m3, m4;
    vp_model_span s3;
    vp_model_acts* a4 = NULL;
    CHECK_OK(vp_model_init(&m3, b, &c3, 1));
    CHECK_OK(vp_model_init(&m4, b, &c4, 1));
    CHECK_OK(vp_model_span_init(&s3, &m3, 3, 6));
    CHECK_OK(vp_model_acts_init(&a4, &m4, 2, 0, 0));
    CHECK_STATUS(vp_model_encode_span(&m4, &m4.params, a4, &s3, &f, 2, &o), VP_ERR_INVALID_ARG, "another encoder");
    vp_model_acts_free(a4);
    vp_model_span_free(&s3);
    vp_model_free(&m3), vp_model_free(&m4);
    free(x);
    vp_model_acts_free(a);
    vp_model_span_free(&s), vp_model_span_free(&s2);
    vp_model_span_free(&s); /* freeing twice is a no-op */
    vp_model_free(&m), vp_model_free(&m2);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_small_networks);
    RUN_TEST(test_default_networks);
    RUN_TEST(test_conv_edges);
    RUN_TEST(test_new_params);
    RUN_TEST(test_collector_table);
    RUN_TEST(test_flops);
    RUN_TEST(test_bad_calls);
    return vpt_finish();
}
