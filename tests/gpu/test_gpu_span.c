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
 * - the span kernels (mops.h span_conv, span_scan) alone on the default Mamba2 shape and at the
 *   conv's edges (K < CW, K = CW, CW 1, K 1) and with a window's x rows too large to stage in
 *   shared memory, windows at every bar of the table (the first clamp
 *   at row 0): CUDA against the CPU within 1e-5 (FP32), and CUDA's span_scan against its own
 *   window_index, gather, conv_forward and scan_forward bit for bit (the same operations in the
 *   same order); span_mix (the scan and the gated RMSNorm in one pass) against the CPU's within
 *   1e-5; both again over R - 1 of the windows out of order (pairs swapped every 37 windows),
 *   every row bit for bit that of the same window in order.
 * A failure prints the case, the error and the tolerance, and the program exits non-zero.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L /* lstat (test_train_util.h) */
#include <math.h>

#include "gpu_twin.h"
#include "model/mops.h"
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
    return tmu_span_cfg(enc, 16, vsn, sn, kan);
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

/* The windows of check_kernels in another order, R - 1 of them, pairs swapped every 37
 * windows: every output row of span_scan and span_mix must be bit for bit that of the same
 * window in bar order (y, yn), whatever its neighbours and its place in the grid. */
static void check_order(const char* what, const vp_mamba_dims* d0, const twin* xbcdt,
                        const twin* act, const twin* w, const twin* bias, const twin* alog, const twin* D,
                        const twin* z, const twin* ng, twin* y, twin* yn) {
    const vp_mops* kg = NULL;
    CHECK_OK(vp_mops_get(g_gpu, &kg));
    if (!kg) return;
    const int64_t R = d0->batch, M = R - 1, H = d0->hidden;
    vp_mamba_dims d = *d0;
    d.batch = M;
    twin order, zo, y2, yn2, ys, sz, g, rstd;
    twin_1d(&order, VP_I32, M);
    int32_t* o = (int32_t*)order.h.data;
    for (int64_t b = 0; b < M; ++b) o[b] = (int32_t)b;
    for (int64_t b = 5; b + 1 < M; b += 37) {
        const int32_t t = o[b];
        o[b] = o[b + 1], o[b + 1] = t;
    }
    twin_push(&order);
    // z rows follow their windows
    twin_2d(&zo, VP_F32, M, H);
    for (int64_t b = 0; b < M; ++b)
        memcpy((float*)zo.h.data + b * H, (const float*)z->h.data + (int64_t)o[b] * H, sizeof(float) * (size_t)H);
    twin_push(&zo);
    twin_2d(&y2, VP_F32, M, H), twin_poison(&y2);
    twin_2d(&yn2, VP_F32, M, H), twin_poison(&yn2);
    twin_2d(&ys, VP_F32, M, H), twin_2d(&sz, VP_F32, M, H), twin_2d(&g, VP_F32, M, H), twin_1d(&rstd, VP_F32, M);
    const int32_t* od = (const int32_t*)order.d.data;
    CHECK_OK(kg->span_scan(g_gpu, &d, od, (const float*)xbcdt->d.data, (const float*)act->d.data,
                           (const float*)w->d.data, (const float*)bias->d.data, (const float*)alog->d.data,
                           (const float*)D->d.data, (float*)y2.d.data));
    CHECK_OK(kg->span_mix(g_gpu, &d, od, (const float*)xbcdt->d.data, (const float*)act->d.data,
                          (const float*)w->d.data, (const float*)bias->d.data, (const float*)alog->d.data,
                          (const float*)D->d.data, (const float*)zo.d.data, (const float*)ng->d.data, 1e-5f,
                          (float*)ys.d.data, (float*)sz.d.data, (float*)g.d.data, (float*)rstd.d.data,
                          (float*)yn2.d.data));
    twin* got[2] = {&y2, &yn2};
    twin* want[2] = {y, yn};
    const char* op[2] = {"span_scan bits", "span_mix bits"};
    for (int k = 0; k < 2; ++k) {
        float* a = (float*)twin_fetch(got[k]);
        float* b = (float*)twin_fetch(want[k]);
        if (a && b) {
            int64_t differ = 0, first = -1;
            for (int64_t r = 0; r < M; ++r)
                if (memcmp(a + r * H, b + (int64_t)o[r] * H, sizeof(float) * (size_t)H) != 0) {
                    if (first < 0) first = r;
                    differ++;
                }
            char cas[128];
            snprintf(cas, sizeof cas, "%s, %lld windows out of order vs in order", what, (long long)M);
            twin_row(op[k], cas, (double)differ, 0.0, differ == 0);
            CHECK(differ == 0, "%s %s: %lld of %lld rows differ, first row %lld (window %d)", op[k], cas,
                  (long long)differ, (long long)M, (long long)first, first >= 0 ? o[first] : -1);
        }
        free(a), free(b);
    }
    twin* all[8] = {&order, &zo, &y2, &yn2, &ys, &sz, &g, &rstd};
    for (int i = 0; i < 8; ++i) twin_free(all[i]);
}

/* The span kernels on one shape: R windows at bars 0 .. R - 1 of an R-bar table. */
static void check_kernels(const char* what, int K, int NH, int PD, int N, int CW, int64_t R) {
    const int H = NH * PD;
    const int64_t CH = H + 2 * (int64_t)N, L = CH + NH, XB = H + N;
    const vp_mops *kc = NULL, *kg = NULL;
    CHECK_OK(vp_mops_get(g_cpu, &kc));
    CHECK_OK(vp_mops_get(g_gpu, &kg));
    if (!kc || !kg) return;
    const vp_mamba_dims d = {R, K, H, N, NH, PD, CW};
    twin xbcdt, w, bias, dtb, alog, D, last, act, y, idx, win, xb, cc, dt, y_ref;
    twin_2d(&xbcdt, VP_F32, R, L), twin_rand(&xbcdt, -1.5f, 1.5f);
    twin_2d(&w, VP_F32, CH, CW), twin_rand(&w, -0.8f, 0.8f);
    twin_1d(&bias, VP_F32, CH), twin_rand(&bias, -0.3f, 0.3f);
    twin_1d(&dtb, VP_F32, NH), twin_rand(&dtb, -1.0f, 0.5f);
    twin_1d(&alog, VP_F32, NH), twin_rand(&alog, -1.0f, 1.0f);
    twin_1d(&D, VP_F32, NH), twin_rand(&D, -1.0f, 1.0f);
    twin_1d(&last, VP_I32, R);
    for (int64_t b = 0; b < R; ++b) ((int32_t*)last.h.data)[b] = (int32_t)b;
    twin_push(&last);
    twin_2d(&act, VP_F32, R, L), twin_poison(&act);
    twin_2d(&y, VP_F32, R, H), twin_poison(&y);
    twin_1d(&idx, VP_I32, R * K);
    twin_2d(&win, VP_F32, R * K, L), twin_2d(&xb, VP_F32, R * K, XB), twin_2d(&cc, VP_F32, R, N);
    twin_2d(&dt, VP_F32, R * K, NH), twin_2d(&y_ref, VP_F32, R, H), twin_poison(&y_ref);
    const float *xh = (const float*)xbcdt.h.data, *xd = (const float*)xbcdt.d.data;
    CHECK_OK(kc->span_conv(g_cpu, &d, R, xh, (const float*)w.h.data, (const float*)bias.h.data,
                           (const float*)dtb.h.data, (float*)act.h.data));
    CHECK_OK(kg->span_conv(g_gpu, &d, R, xd, (const float*)w.d.data, (const float*)bias.d.data,
                           (const float*)dtb.d.data, (float*)act.d.data));
    CHECK_OK(kc->span_scan(g_cpu, &d, (const int32_t*)last.h.data, xh, (const float*)act.h.data,
                           (const float*)w.h.data, (const float*)bias.h.data, (const float*)alog.h.data,
                           (const float*)D.h.data, (float*)y.h.data));
    CHECK_OK(kg->span_scan(g_gpu, &d, (const int32_t*)last.d.data, xd, (const float*)act.d.data,
                           (const float*)w.d.data, (const float*)bias.d.data, (const float*)alog.d.data,
                           (const float*)D.d.data, (float*)y.d.data));
    char cas[96];
    snprintf(cas, sizeof cas, "%s, CUDA vs CPU", what);
    twin_check("span_conv", cas, &act, 1e-5);
    twin_check("span_scan", cas, &y, 1e-5);
    // CUDA's gathered path: window_index, the rows gathered, conv_forward, scan_forward
    CHECK_OK(kg->window_index(g_gpu, R, K, (const int32_t*)last.d.data, (int32_t*)idx.d.data));
    CHECK_OK(vp_gather_rows(g_gpu, &xbcdt.d, &idx.d, &win.d));
    CHECK_OK(kg->conv_forward(g_gpu, &d, (const float*)win.d.data, (const float*)w.d.data,
                              (const float*)bias.d.data, NULL, (float*)xb.d.data, NULL, (float*)cc.d.data));
    CHECK_OK(kg->scan_forward(g_gpu, &d, (const float*)xb.d.data, (const float*)cc.d.data, (const float*)win.d.data,
                              (const float*)dtb.d.data, (const float*)alog.d.data, (const float*)D.d.data,
                              (float*)dt.d.data, (float*)y_ref.d.data));
    float* gy = (float*)twin_fetch(&y);
    float* gr = (float*)twin_fetch(&y_ref);
    if (gy && gr) {
        double worst = 0.0;
        int64_t differ = 0, first = -1;
        for (int64_t i = 0; i < R * H; ++i)
            if (memcmp(gy + i, gr + i, sizeof(float)) != 0) {
                const double e = fabs((double)gy[i] - gr[i]);
                if (first < 0) first = i;
                differ++;
                worst = e > worst || isnan(e) ? e : worst;
            }
        snprintf(cas, sizeof cas, "%s, CUDA vs gathered CUDA", what);
        twin_row("span_scan bits", cas, worst, 0.0, differ == 0);
        CHECK(differ == 0, "%s: %lld of %lld values differ from the gathered path, first at window %lld channel %lld "
              "(%.9g vs %.9g), worst %.3e", cas, (long long)differ, (long long)(R * H), (long long)(first / H),
              (long long)(first % H), first >= 0 ? (double)gy[first] : 0.0, first >= 0 ? (double)gr[first] : 0.0,
              worst);
    }
    free(gy), free(gr);
    // span_mix: the scan and the gated RMSNorm in one pass against the CPU's span_scan and gate ops
    twin z, ng, yn, ys, sz, g, rstd;
    twin_2d(&z, VP_F32, R, H), twin_rand(&z, -2.0f, 2.0f);
    twin_1d(&ng, VP_F32, H), twin_rand(&ng, 0.5f, 1.5f);
    twin_2d(&yn, VP_F32, R, H), twin_poison(&yn);
    twin_2d(&ys, VP_F32, R, H), twin_2d(&sz, VP_F32, R, H), twin_2d(&g, VP_F32, R, H), twin_1d(&rstd, VP_F32, R);
    CHECK_OK(kc->span_mix(g_cpu, &d, (const int32_t*)last.h.data, xh, (const float*)act.h.data,
                          (const float*)w.h.data, (const float*)bias.h.data, (const float*)alog.h.data,
                          (const float*)D.h.data, (const float*)z.h.data, (const float*)ng.h.data, 1e-5f,
                          (float*)ys.h.data, (float*)sz.h.data, (float*)g.h.data, (float*)rstd.h.data,
                          (float*)yn.h.data));
    CHECK_OK(kg->span_mix(g_gpu, &d, (const int32_t*)last.d.data, xd, (const float*)act.d.data,
                          (const float*)w.d.data, (const float*)bias.d.data, (const float*)alog.d.data,
                          (const float*)D.d.data, (const float*)z.d.data, (const float*)ng.d.data, 1e-5f,
                          (float*)ys.d.data, (float*)sz.d.data, (float*)g.d.data, (float*)rstd.d.data,
                          (float*)yn.d.data));
    snprintf(cas, sizeof cas, "%s, CUDA vs CPU", what);
    twin_check("span_mix", cas, &yn, 1e-5);
    check_order(what, &d, &xbcdt, &act, &w, &bias, &alog, &D, &z, &ng, &y, &yn);
    twin* all[22] = {&xbcdt, &w, &bias, &dtb, &alog, &D, &last, &act, &y, &idx, &win, &xb, &cc, &dt, &y_ref,
                     &z, &ng, &yn, &ys, &sz, &g, &rstd};
    for (int i = 0; i < 22; ++i) twin_free(all[i]);
}

static void test_kernels(void) {
    check_kernels("default K 8 H 256 N 16 CW 4", 8, 4, 64, 16, 4, 3000);
    check_kernels("K 2 CW 4 (every step padded)", 2, 2, 16, 4, 4, 500);
    check_kernels("K 4 CW 4", 4, 2, 32, 8, 4, 500);
    check_kernels("K 5 CW 1 (no padding)", 5, 3, 8, 4, 1, 500);
    check_kernels("K 1 CW 3", 1, 1, 32, 2, 3, 300);
    check_kernels("K 16 H 512 N 32 CW 4", 16, 8, 64, 32, 4, 1000);
    // a window's x rows past 48 KiB of shared memory: read from the tables at the sum
    check_kernels("K 32 H 512 N 16 CW 4 (x not staged)", 32, 8, 64, 16, 4, 400);
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
    RUN_TEST(test_kernels);
    RUN_TEST(test_networks);
    RUN_TEST(test_collector);
    gpu_teardown();
    return vpt_finish();
}
