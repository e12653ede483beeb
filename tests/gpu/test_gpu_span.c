/* GPU test: the span encoding with shared rows (vulpes/model_span.h) on CUDA.
 * - for the default network (Mamba2), the default with TLOB and with encoder none, and small
 *   networks with the input modules on, 3000 windows from bar 5 (the first windows clamp at row 0)
 *   in chunks of 1024: vp_model_encode_span on CUDA against vp_model_encode of the same bars on
 *   CUDA (in the same chunks), norm-wise within 1e-5 with FP32 GEMMs and 1e-2 with TF32 (the
 *   network tests' TF32 tolerance: the two paths run their GEMMs on other row counts), and against
 *   the CPU's vp_model_encode_span within 1e-5 (FP32);
 * - a training collector on CUDA (encode once): its table with shared rows against each window
 *   encoded alone within 1e-5 (FP32); the span encoding captured as a graph gives the same bits
 *   as run directly and its 5 launches copy, allocate and synchronise nothing.
 * A failure prints the case, the error and the tolerance, and the program exits non-zero.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L /* lstat (test_train_util.h) */
#include <math.h>

#include "gpu_twin.h"
#include "learn/collect_impl.h"
#include "test_model_util.h"
#include "test_train_util.h"

enum { NW = 3000, BEGIN = 5, CHUNK = 1024 };

/* ||a - b|| / ||b|| over n floats (NaN anywhere: infinity). */
static double rel(const float* a, const float* b, int64_t n) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(a[i]) || isnan(b[i])) return INFINITY;
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return sqrt(num / (den > 0 ? den : 1));
}

/* Prints the row and fails beyond tol. */
static void judge(const char* op, const char* cas, double err, double tol) {
    twin_row(op, cas, err, tol, err <= tol);
    CHECK(err <= tol, "%s %s: relative error %.3e over tolerance %.1e", op, cas, err, tol);
}

/* The span's encodings on backend b at precision p: shared rows (span) and each window alone (alone). */
static void encode_both(vp_backend* b, const vp_model_cfg* c, vp_precision p, const float* feats, int64_t T,
                        float* span, float* alone) {
    const int64_t H = c->hidden, F = c->n_features;
    vp_model m;
    vp_model_span s;
    vp_model_acts* a = NULL;
    vp_buffer fb, ob, bb;
    memset(&s, 0, sizeof s);
    CHECK_OK(vp_model_init(&m, b, c, 17));
    m.precision = p;
    const vp_mem mem = vp_backend_native_mem(b);
    CHECK_OK(vp_buffer_alloc(b, mem, (size_t)(T * F) * 4, &fb));
    CHECK_OK(vp_buffer_alloc(b, mem, (size_t)(NW * H) * 4, &ob));
    CHECK_OK(vp_buffer_alloc(b, mem, (size_t)NW * 4, &bb));
    vp_tensor f = vp_tensor_2d(fb.dev, VP_F32, mem, T, F), o = vp_tensor_2d(ob.dev, VP_F32, mem, NW, H);
    CHECK_OK(vp_upload(b, &f, feats, (size_t)(T * F) * 4));
    int32_t bars[NW];
    for (int i = 0; i < NW; ++i) bars[i] = BEGIN + i;
    vp_tensor bt = vp_tensor_1d(bb.dev, VP_I32, mem, NW);
    CHECK_OK(vp_upload(b, &bt, bars, sizeof bars));
    CHECK_OK(vp_model_span_init(&s, &m, BEGIN, NW));
    CHECK_OK(vp_model_acts_init(&a, &m, CHUNK, 0, 0));
    CHECK_OK(vp_fill(b, &o, NAN));
    CHECK_OK(vp_model_encode_span(&m, &m.params, a, &s, &f, CHUNK, &o));
    CHECK_OK(vp_download(b, span, &o, (size_t)(NW * H) * 4));
    // each window alone, in chunks of CHUNK (vp_model_encode), copied out
    for (int64_t off = 0; off < NW && alone; off += CHUNK) {
        const int64_t n = NW - off < CHUNK ? NW - off : CHUNK;
        vp_tensor bv = vp_tensor_1d((int32_t*)bb.dev + off, VP_I32, mem, n);
        CHECK_OK(vp_model_encode(&m, &m.params, a, &f, &bv, n));
        const vp_tensor e = vp_model_encoding(a);
        CHECK_OK(vp_download(b, alone + off * H, &e, (size_t)(n * H) * 4));
    }
    vp_model_acts_free(a);
    vp_model_span_free(&s);
    vp_buffer_free(b, &fb), vp_buffer_free(b, &ob), vp_buffer_free(b, &bb);
    vp_model_free(&m);
}

/* One configuration: CUDA shared vs CUDA alone (FP32, TF32), CUDA shared vs CPU shared (FP32). */
static void check_cfg(const char* what, vp_model_cfg c) {
    const int64_t T = BEGIN + NW + 3, H = c.hidden, n = NW * H;
    float* feats = (float*)malloc(sizeof(float) * (size_t)(T * c.n_features));
    uint32_t st = (uint32_t)(g_seed * 2654435761u + 1);
    for (int64_t i = 0; i < T * c.n_features; ++i) {
        st = st * 1664525u + 1013904223u;
        feats[i] = (float)((st >> 8) * (1.0 / 16777216.0) * 4.0 - 2.0);
    }
    float* gs = (float*)malloc(sizeof(float) * (size_t)n);
    float* ga = (float*)malloc(sizeof(float) * (size_t)n);
    float* cs = (float*)malloc(sizeof(float) * (size_t)n);
    char cas[96];
    encode_both(g_gpu, &c, VP_PREC_FP32, feats, T, gs, ga);
    snprintf(cas, sizeof cas, "%s, FP32, shared vs alone", what);
    judge("encode_span", cas, rel(gs, ga, n), 1e-5);
    encode_both(g_cpu, &c, VP_PREC_FP32, feats, T, cs, NULL);
    snprintf(cas, sizeof cas, "%s, FP32, CUDA vs CPU", what);
    judge("encode_span", cas, rel(gs, cs, n), 1e-5);
    encode_both(g_gpu, &c, VP_PREC_TF32, feats, T, gs, ga);
    snprintf(cas, sizeof cas, "%s, TF32, shared vs alone", what);
    judge("encode_span", cas, rel(gs, ga, n), 1e-2);
    free(feats), free(gs), free(ga), free(cs);
}

/* A small network of encoder `enc` with the input modules on (K 4, H 16). */
static vp_model_cfg small_cfg(vp_model_encoder enc, int vsn, int sn, int kan) {
    vp_model_cfg c = tmu_cfg((tmu_dims){.F = 5, .K = 4, .H = 16, .head_dim = 4, .N = 2, .conv = 3, .head_hidden = 6,
                                        .Z = 5, .n_cos = 4});
    c.encoder = enc;
    c.tlob_blocks = 2, c.tlob_heads = 2, c.tlob_feature_heads = 1, c.tlob_mlp = 2;
    c.vsn = vsn, c.vsn_hidden = 3;
    c.spectral_norm = sn;
    c.kan = kan;
    return c;
}

static void test_networks(void) {
    vp_model_cfg c = vp_model_cfg_default();
    check_cfg("default mamba2", c);
    c.encoder = VP_ENCODER_TLOB;
    check_cfg("default tlob", c);
    c.encoder = VP_ENCODER_NONE;
    check_cfg("default none", c);
    check_cfg("mamba2 vsn sn", small_cfg(VP_ENCODER_MAMBA2, 1, 1, 0));
    check_cfg("mamba2 vsn kan", small_cfg(VP_ENCODER_MAMBA2, 1, 0, 1));
    check_cfg("tlob vsn sn", small_cfg(VP_ENCODER_TLOB, 1, 1, 0));
    check_cfg("none kan sn", small_cfg(VP_ENCODER_NONE, 0, 1, 1));
}

/* The graph body: the span encoding. */
static vp_status span_body(vp_backend* b, void* ctx) {
    (void)b;
    return vp_collector_encode_span((vp_collector*)ctx);
}

static void test_collector(void) {
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    const char* over[] = {"env.n_envs=4099", "train.collect_steps=16", "replay.capacity=70001",
                          "replay.warmup=12297", "run.precision=fp32"};
    if (!vpt_train_cfg(&cfg, 5, over) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "set-up: %s", vp_last_error());
        return;
    }
    if (vp_trainer_init(&t, g_gpu, &cfg, &d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(&d);
        return;
    }
    vp_collector* c = &t.collector;
    CHECK(c->encode_once && c->span_shared, "the collector encodes once with shared rows (once %d, shared %d)",
          c->encode_once, c->span_shared);
    const size_t bytes = vp_tensor_bytes(&c->span_enc);
    const int64_t n = (int64_t)(bytes / 4);
    float* shared = (float*)malloc(bytes);
    float* alone = (float*)malloc(bytes);
    float* graph = (float*)malloc(bytes);
    CHECK_OK(vp_collector_encode_span(c));
    CHECK_OK(vp_download(g_gpu, shared, &c->span_enc, bytes));
    c->span_shared = 0;
    CHECK_OK(vp_fill(g_gpu, &c->span_enc, NAN));
    CHECK_OK(vp_collector_encode_span(c));
    CHECK_OK(vp_download(g_gpu, alone, &c->span_enc, bytes));
    c->span_shared = 1;
    judge("collector span_enc", "4099 envs, FP32, shared vs alone", rel(shared, alone, n), 1e-5);
    // captured: the same bits, nothing copied, allocated or synchronised across launches
    CHECK_OK(vp_fill(g_gpu, &c->span_enc, NAN));
    vp_graph* g = NULL;
    vp_status s = vp_graph_capture(g_gpu, span_body, c, &g);
    CHECK_OK(s);
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int r = 0; r < 5 && s == VP_OK; ++r) s = vp_graph_launch(g_gpu, g);
    vp_backend_counters(g_gpu, &after);
    CHECK_OK(s);
    CHECK_OK(vp_download(g_gpu, graph, &c->span_enc, bytes));
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    const int same = memcmp(graph, shared, bytes) == 0;
    twin_row("collector span_enc", "graph: 5 launches, same bits, no copies", 0, 0, zero && same);
    CHECK(zero, "5 span encodings: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    CHECK(same, "the captured span encoding differs from the direct one");
    vp_graph_free(g);
    free(shared), free(alone), free(graph);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
}

int main(void) {
    gpu_setup("test_gpu_span");
    RUN_TEST(test_networks);
    RUN_TEST(test_collector);
    gpu_teardown();
    return vpt_finish();
}
