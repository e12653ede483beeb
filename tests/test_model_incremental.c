#include <math.h>
/* The forward one bar at a time (model_incremental.c) against the batch forward: for every
 * bar of a feature matrix, its trunk and in_proj rows pushed into a ring of the last K bars
 * and the window encoded from the ring give the encoding vp_model_encode gives for that bar
 * among all of them in one batch, and the heads the same Q values, bit for bit on the CPU; for the
 * default network (Mamba2 over 8 bars, width 256; with the portable, AVX2 and AVX-512 loops
 * where the processor has them), a tiny one, one whose window is shorter than the conv and
 * one without Mamba2, and with the TLOB encoder (the whole window's trunk rows from the ring). The first K - 1 bars read bar 0 below their window's start, as the
 * batch encoder clamps. */
#include "model/model_internal.h"
#include "vp_test.h"

enum { T = 40 };

/* uniform floats in [-1, 1) from a small LCG */
static float lcg(uint64_t* s) {
    *s = *s * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((double)(*s >> 40) / (double)(1ull << 24)) * 2.0f - 1.0f;
}

static void check_model(const vp_model_cfg* cfg, const char* what) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, cfg, 5));
    // adaptive atoms: spacing logits away from zero, so each branch's support is its own
    const vp_param_info* sp = vp_model_find_param(&m, "c51.atoms");
    uint64_t ss = 7;
    for (int64_t i = 0; sp && i < sp->numel; ++i) ((float*)m.params.data)[sp->offset + i] = lcg(&ss);
    const int F = cfg->n_features, H = cfg->hidden, A = vp_model_cfg_actions(cfg), P = cfg->n_portfolio;
    float* feat = (float*)malloc(sizeof(float) * (size_t)(T * F));
    float* port = (float*)malloc(sizeof(float) * (size_t)(T * P));
    int32_t idx[T];
    uint64_t seed = 99;
    for (int i = 0; i < T * F; ++i) feat[i] = 2.0f * lcg(&seed);
    for (int i = 0; i < T * P; ++i) port[i] = lcg(&seed);
    for (int t = 0; t < T; ++t) idx[t] = t;
    vp_tensor ft = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, T, F), it = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, T);
    vp_tensor pt = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, T, P);
    // the batch: every bar's window in one call, then the heads on all of them
    vp_model_acts *full = NULL, *one = NULL;
    CHECK_OK(vp_model_acts_init(&full, &m, T, 0, 0));
    CHECK_OK(vp_model_acts_init(&one, &m, 1, 0, 0));
    CHECK_OK(vp_model_encode(&m, &m.params, full, &ft, &it, T));
    float* enc = (float*)malloc(sizeof(float) * (size_t)(T * H));
    float* q = (float*)malloc(sizeof(float) * (size_t)(T * A));
    vp_tensor e = vp_model_encoding(full);
    memcpy(enc, e.data, sizeof(float) * (size_t)(T * H));
    CHECK_OK(vp_model_heads(&m, &m.params, full, NULL, &pt, NULL, T));
    memcpy(q, vp_model_q(full).data, sizeof(float) * (size_t)(T * A));
    // one bar at a time: its trunk and in_proj rows into the ring, the window from the ring, the heads
    vp_model_inc w;
    CHECK_OK(vp_model_inc_init(&w, &m, &m.params));
    const int64_t L = w.L;
    CHECK(L == (cfg->encoder == VP_ENCODER_MAMBA2 ? H + 2 * cfg->mamba_state + H / cfg->mamba_head_dim : 0), "%s: L %lld", what,
          (long long)L);
    vp_model_inc_ring ring;
    CHECK_OK(vp_model_inc_ring_init(&ring, &w));
    CHECK_STATUS(vp_model_inc_encode(&w, one, &ring), VP_ERR_STATE, "holds no bar");
    int bad_enc = 0, bad_q = 0, first = -1;
    for (int t = 0; t < T; ++t) {
        CHECK_OK(vp_model_inc_push(&w, one, &ring, feat + t * F));
        CHECK_OK(vp_model_inc_encode(&w, one, &ring));
        vp_tensor e1 = vp_model_encoding(one);
        CHECK(e1.data != NULL && vp_tensor_rows(&e1) == 1, "%s: one encoding row", what);
        if (memcmp(e1.data, enc + t * H, sizeof(float) * (size_t)H) != 0 && bad_enc++ == 0) first = t;
        vp_tensor p1 = vp_tensor_2d(port + t * P, VP_F32, VP_MEM_HOST, 1, P);
        CHECK_OK(vp_model_inc_heads(&w, one, &p1));
        if (memcmp(vp_model_q(one).data, q + t * A, sizeof(float) * (size_t)A) != 0) bad_q++;
    }
    CHECK(bad_enc == 0 && bad_q == 0, "%s: %d encodings (first at bar %d) and %d Q rows differ from the batch's", what,
          bad_enc, first, bad_q);
    vp_model_inc_ring_free(&ring);
    vp_model_inc_free(&w);
    free(q);
    free(enc);
    free(feat);
    free(port);
    vp_model_acts_free(full);
    vp_model_acts_free(one);
    vp_model_free(&m);
    vp_backend_free(b);
}

/* The one-row product with zero inputs' terms left out: the same bits as with every term, at
 * every instruction set and at widths that take every column path (128-blocks, 16s, masked
 * lanes); with an infinite weight in a zero input's row the full product is NaN there, which
 * is why the live forward skips only when its weights are finite. */
static void test_row_gemm_zero_terms(void) {
    enum { K = 37, N = 150 };
    static float x[K], W[K * N], bias[N], y0[N], y1[N], acc[N];
    for (int p = 0; p < K; ++p) x[p] = p % 3 == 0 ? 0.0f : (p % 5 == 0 ? -0.0f : 0.37f * (float)(p % 7) - 1.1f);
    for (int i = 0; i < K * N; ++i) W[i] = 0.013f * (float)((i * 7919) % 201) - 1.3f;
    for (int j = 0; j < N; ++j) bias[j] = 0.01f * (float)j - 0.7f;
    for (int isa = VP_MODEL_INC_ISA_PORTABLE; isa <= VP_MODEL_INC_ISA_BEST; ++isa) {
        vp_model_inc_limit_isa(isa);
        for (int n = 1; n <= N; n += 37) {
            vp_model_row_gemm(K, n, x, W, bias, VP_EPI_BIAS_RELU, 0.0f, y0, acc, 0);
            vp_model_row_gemm(K, n, x, W, bias, VP_EPI_BIAS_RELU, 0.0f, y1, acc, 1);
            CHECK(memcmp(y0, y1, (size_t)n * sizeof(float)) == 0, "isa %d, n %d: skipping zero terms changed a bit",
                  isa, n);
        }
    }
    vp_model_inc_limit_isa(VP_MODEL_INC_ISA_BEST);
    W[0 * N + 5] = INFINITY; /* x[0] is 0: 0 x inf */
    vp_model_row_gemm(K, N, x, W, bias, VP_EPI_NONE, 0.0f, y0, acc, 0);
    vp_model_row_gemm(K, N, x, W, bias, VP_EPI_NONE, 0.0f, y1, acc, 1);
    CHECK(isnan(y0[5]) && !isnan(y1[5]), "an infinite weight under a zero input: full %g, skipped %g", (double)y0[5],
          (double)y1[5]);
}

static void test_default_model(void) {
    vp_model_cfg c = vp_model_cfg_default();
    check_model(&c, "default network");
    // the same bits from every build of the loops this processor runs
    static const char* names[3] = {"default network, portable loops", "default network, AVX2 loops",
                                   "default network, AVX-512 loops"};
    for (int isa = VP_MODEL_INC_ISA_PORTABLE; isa <= VP_MODEL_INC_ISA_BEST; ++isa) {
        vp_model_inc_limit_isa(isa);
        if (vp_model_inc_isa() == isa) check_model(&c, names[isa]);
    }
    vp_model_inc_limit_isa(VP_MODEL_INC_ISA_BEST);
}

static void test_tiny_model(void) {
    vp_model_cfg c = vpt_tiny_model(32);
    check_model(&c, "tiny network");
}

static void test_short_window(void) {
    vp_model_cfg c = vpt_tiny_model(32);
    c.window = 3; /* shorter than the conv: no window position reads a whole conv */
    check_model(&c, "tiny network, window 3 under conv width 4");
}

static void test_no_mamba(void) {
    vp_model_cfg c = vpt_tiny_model(32);
    c.encoder = VP_ENCODER_NONE;
    check_model(&c, "tiny network without Mamba2");
}

static void test_tlob(void) {
    vp_model_cfg c = vpt_tiny_model(32);
    c.encoder = VP_ENCODER_TLOB;
    c.tlob_feature_heads = c.window % 2 == 0 ? 2 : 1;
    check_model(&c, "tiny network with the TLOB encoder");
    c = vp_model_cfg_default();
    c.encoder = VP_ENCODER_TLOB;
    check_model(&c, "default network with the TLOB encoder");
}

static void test_adaptive_atoms(void) {
    vp_model_cfg c = vpt_tiny_model(32);
    c.adaptive_atoms = 1;
    check_model(&c, "tiny network with adaptive atoms");
}

int main(void) {
    RUN_TEST(test_default_model);
    RUN_TEST(test_tiny_model);
    RUN_TEST(test_short_window);
    RUN_TEST(test_no_mamba);
    RUN_TEST(test_tlob);
    RUN_TEST(test_adaptive_atoms);
    RUN_TEST(test_row_gemm_zero_terms);
    return vpt_finish();
}
