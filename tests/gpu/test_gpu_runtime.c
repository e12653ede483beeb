/* The CUDA backend's runtime on a GPU: graph capture and replay against eager runs,
 * kernels writing pinned mapped memory the host reads without a copy, bit-identical
 * repeated reductions, the counters of copies / allocations / syncs, and bad calls
 * returning a status with a message. Runs on a GPU machine only. */
#include "gpu_twin.h"

/* ---- graph capture and replay ------------------------------------------------------ */

/* What the captured body works on (all device tensors of g_gpu). */
typedef struct body_ctx {
    vp_tensor x, w, bias, h, gamma, beta, y, mean, rstd, acc, counter;
    vp_tensor total; /* [1] in mapped memory */
} body_ctx;

/* A learner-like sequence: linear + bias + relu, LayerNorm, softmax, acc += y, the sum of
 * acc into mapped memory, counter += 1. Replaying it N times accumulates. */
static vp_status body(vp_backend* b, void* ctx) {
    body_ctx* c = (body_ctx*)ctx;
    vp_gemm_desc d = vp_gemm_plain(0, 1, c->x.shape[0], c->w.shape[0], c->x.shape[1]);
    d.epilogue = VP_EPI_BIAS_RELU;
    VP_TRY(vp_gemm(b, &d, &c->x, &c->w, &c->bias, &c->h));
    VP_TRY(vp_layernorm(b, &c->h, &c->gamma, &c->beta, 1e-5f, &c->y, &c->mean, &c->rstd));
    VP_TRY(vp_softmax(b, &c->y, &c->y));
    VP_TRY(vp_axpby(b, 1.0f, &c->y, 1.0f, &c->acc));
    VP_TRY(vp_reduce_all(b, VP_REDUCE_SUM, &c->acc, &c->total));
    return vp_step_increment(b, &c->counter);
}

static void test_graph_replay(void) {
    const int64_t m = 1000, k = 96, n = 130;
    const int reps = 25;
    twin x, w, bias, h, gamma, beta, y, mean, rstd, acc, counter;
    twin_2d(&x, VP_F32, m, k), twin_2d(&w, VP_F32, n, k), twin_1d(&bias, VP_F32, n), twin_2d(&h, VP_F32, m, n);
    twin_1d(&gamma, VP_F32, n), twin_1d(&beta, VP_F32, n), twin_2d(&y, VP_F32, m, n);
    twin_1d(&mean, VP_F32, m), twin_1d(&rstd, VP_F32, m), twin_2d(&acc, VP_F32, m, n), twin_1d(&counter, VP_I32, 1);
    twin_rand(&x, -1.0f, 1.0f), twin_rand(&w, -0.3f, 0.3f), twin_rand(&bias, -0.1f, 0.1f);
    twin_rand(&gamma, 0.5f, 1.5f), twin_rand(&beta, -0.5f, 0.5f);
    vp_buffer tb;
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_MAPPED, sizeof(float), &tb));
    body_ctx c = {x.d, w.d, bias.d, h.d, gamma.d, beta.d, y.d, mean.d, rstd.d, acc.d, counter.d,
                  vp_tensor_1d(tb.dev, VP_F32, VP_MEM_MAPPED, 1)};
    /* eager: the body `reps` times */
    CHECK_OK(vp_fill(g_gpu, &acc.d, 0.0f));
    CHECK_OK(vp_fill_i32(g_gpu, &counter.d, 0));
    for (int i = 0; i < reps; ++i) CHECK_OK(body(g_gpu, &c));
    CHECK_OK(vp_backend_sync(g_gpu));
    float* eager_acc = (float*)twin_fetch(&acc);
    const float eager_total = ((float*)tb.host)[0];
    /* captured once, replayed `reps` times on reset state */
    CHECK_OK(vp_fill(g_gpu, &acc.d, 0.0f));
    CHECK_OK(vp_fill_i32(g_gpu, &counter.d, 0));
    ((float*)tb.host)[0] = NAN;
    vp_graph* gr = NULL;
    CHECK_OK(vp_graph_capture(g_gpu, body, &c, &gr));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int i = 0; i < reps && gr; ++i) CHECK_OK(vp_graph_launch(g_gpu, gr));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs,
          "graph launches made copies %lld, allocs %lld, syncs %lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    CHECK_OK(vp_backend_sync(g_gpu));
    float* graph_acc = (float*)twin_fetch(&acc);
    int32_t cnt = -1;
    CHECK_OK(vp_download(g_gpu, &cnt, &counter.d, sizeof cnt));
    const float graph_total = ((float*)tb.host)[0];
    /* the same kernels in the same order: identical bits */
    int same = eager_acc && graph_acc && memcmp(eager_acc, graph_acc, (size_t)(m * n) * sizeof(float)) == 0;
    twin_row("graph replay", "25 replays vs 25 eager runs: acc bits", same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "graph replay differs from the eager sequence");
    CHECK(cnt == reps, "counter after %d replays is %d", reps, cnt);
    CHECK(memcmp(&eager_total, &graph_total, sizeof(float)) == 0 && !isnan(graph_total),
          "mapped total: eager %.9g, graph %.9g", eager_total, graph_total);
    /* and each softmax row sums to 1, so acc sums to reps * m */
    CHECK_NEAR(graph_total, (double)reps * (double)m, 1e-3 * reps * m, 0.0);
    free(eager_acc), free(graph_acc);
    vp_graph_free(gr);
    vp_buffer_free(g_gpu, &tb);
    twin_free(&x), twin_free(&w), twin_free(&bias), twin_free(&h), twin_free(&gamma), twin_free(&beta);
    twin_free(&y), twin_free(&mean), twin_free(&rstd), twin_free(&acc), twin_free(&counter);
}

/* ---- mapped memory ------------------------------------------------------------------- */

static void test_mapped_scalar(void) {
    const int64_t n = 300007;
    twin x;
    twin_1d(&x, VP_F32, n);
    twin_rand(&x, 0.0f, 1.0f);
    vp_buffer mb;
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_MAPPED, 2 * sizeof(float), &mb));
    if (!mb.host) return;
    float* host = (float*)mb.host;
    vp_tensor sum_t = vp_tensor_1d(mb.dev, VP_F32, VP_MEM_MAPPED, 1);
    vp_tensor scale_t = vp_tensor_1d((float*)mb.dev + 1, VP_F32, VP_MEM_MAPPED, 1);
    /* the host writes a scalar the kernels read; a kernel writes the scalar the host reads */
    host[0] = NAN;
    host[1] = 2.5f;
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_scale_by(g_gpu, &x.d, &scale_t));
    CHECK_OK(vp_reduce_all(g_gpu, VP_REDUCE_SUM, &x.d, &sum_t));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.copies == before.copies, "mapped scalars needed %lld copies", (long long)(after.copies - before.copies));
    CHECK(after.syncs == before.syncs + 1, "one sync counted, got %lld", (long long)(after.syncs - before.syncs));
    /* reference: the same on the CPU */
    float s = 2.5f, ref = 0.0f;
    vp_tensor sh = vp_tensor_1d(&s, VP_F32, VP_MEM_HOST, 1), rh = vp_tensor_1d(&ref, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_scale_by(g_cpu, &x.h, &sh));
    CHECK_OK(vp_reduce_all(g_cpu, VP_REDUCE_SUM, &x.h, &rh));
    const double err = fabs((double)host[0] - ref) / fabs((double)ref);
    twin_row("mapped memory", "kernel writes a sum, host reads it", err, 1e-5, err <= 1e-5 && !isnan(host[0]));
    CHECK(!isnan(host[0]) && err <= 1e-5, "mapped sum %.9g vs CPU %.9g", host[0], ref);
    vp_buffer_free(g_gpu, &mb);
    twin_free(&x);
}

/* ---- determinism ----------------------------------------------------------------------- */

static void test_determinism(void) {
    const int64_t m = 65536, n = 256;
    twin x, dy, g, mu, rs, dx, dg, db, all, cols;
    twin_2d(&x, VP_F32, m, n), twin_2d(&dy, VP_F32, m, n), twin_1d(&g, VP_F32, n), twin_1d(&mu, VP_F32, m);
    twin_1d(&rs, VP_F32, m), twin_2d(&dx, VP_F32, m, n), twin_1d(&dg, VP_F32, n), twin_1d(&db, VP_F32, n);
    twin_1d(&all, VP_F32, 1), twin_1d(&cols, VP_F32, n);
    twin_rand(&x, -1.0f, 1.0f), twin_rand(&dy, -1.0f, 1.0f), twin_rand(&g, 0.5f, 1.5f);
    twin_rand(&mu, -0.1f, 0.1f), twin_rand(&rs, 0.5f, 2.0f);
    void* first[4] = {NULL, NULL, NULL, NULL};
    int same = 1;
    for (int run = 0; run < 2; ++run) {
        twin_poison(&all), twin_poison(&cols), twin_poison(&dg), twin_poison(&db);
        CHECK_OK(vp_reduce_all(g_gpu, VP_REDUCE_SUM, &x.d, &all.d));
        CHECK_OK(vp_reduce_cols(g_gpu, VP_REDUCE_SUM, &x.d, &cols.d));
        CHECK_OK(vp_layernorm_backward(g_gpu, &dy.d, &x.d, &g.d, &mu.d, &rs.d, &dx.d, &dg.d, &db.d));
        twin* outs[4] = {&all, &cols, &dg, &db};
        for (int i = 0; i < 4; ++i) {
            void* got = twin_fetch(outs[i]);
            if (run == 0) first[i] = got;
            else {
                same = same && got && first[i] && memcmp(got, first[i], (size_t)outs[i]->n * 4) == 0;
                free(got);
            }
        }
    }
    twin_row("determinism", "reduce_all, reduce_cols, LN dgamma/dbeta x2", same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "a repeated reduction gave different bits");
    for (int i = 0; i < 4; ++i) free(first[i]);
    twin_free(&x), twin_free(&dy), twin_free(&g), twin_free(&mu), twin_free(&rs), twin_free(&dx);
    twin_free(&dg), twin_free(&db), twin_free(&all), twin_free(&cols);
}

/* ---- bad calls ----------------------------------------------------------------------------- */

static vp_status failing_body(vp_backend* b, void* ctx) {
    (void)b;
    (void)ctx;
    VP_FAIL(VP_ERR_STATE, "failing_body: planned failure");
}

static vp_status syncing_body(vp_backend* b, void* ctx) {
    vp_tensor* t = (vp_tensor*)ctx;
    VP_TRY(vp_fill(b, t, 1.0f));
    return vp_backend_sync(b); /* not allowed inside a capture */
}

static void test_bad_calls(void) {
    float host[16] = {0};
    vp_tensor h = vp_tensor_1d(host, VP_F32, VP_MEM_HOST, 16);
    twin d, small;
    twin_2d(&d, VP_F32, 4, 4), twin_1d(&small, VP_F32, 3);
    vp_gemm_desc gd = vp_gemm_plain(0, 0, 4, 4, 4);
    /* host tensors on the CUDA backend */
    CHECK_STATUS(vp_fill(g_gpu, &h, 1.0f), VP_ERR_DEVICE, "host memory");
    CHECK_STATUS(vp_gemm(g_gpu, &gd, &h, &d.d, NULL, &d.d), VP_ERR_DEVICE, "host memory");
    CHECK_STATUS(vp_softmax(g_gpu, &d.d, &h), VP_ERR_DEVICE, "host");
    /* shapes, NULLs, memory kinds */
    CHECK_STATUS(vp_copy(g_gpu, &d.d, &small.d), VP_ERR_SHAPE, "differ in size");
    CHECK_STATUS(vp_gemm(g_gpu, &gd, &d.d, &small.d, NULL, &d.d), VP_ERR_SHAPE, "B");
    CHECK_STATUS(vp_unary(g_gpu, VP_UNARY_RELU, NULL, &d.d), VP_ERR_INVALID_ARG, "x is NULL");
    vp_buffer hb;
    CHECK_STATUS(vp_buffer_alloc(g_gpu, VP_MEM_HOST, 64, &hb), VP_ERR_DEVICE, "cannot make host memory");
    vp_backend* other = NULL;
    CHECK_STATUS(vp_backend_cuda_init(&other, 99), VP_ERR_UNSUPPORTED, "device 99");
    CHECK(other == NULL, "no backend on failure");
    /* a failing capture body reports its own error and leaves the backend usable */
    vp_graph* gr = NULL;
    CHECK_STATUS(vp_graph_capture(g_gpu, failing_body, NULL, &gr), VP_ERR_STATE, "planned failure");
    CHECK(gr == NULL, "no graph on failure");
    CHECK_STATUS(vp_graph_capture(g_gpu, syncing_body, &d.d, &gr), VP_ERR_CUDA, "cudaStreamSynchronize");
    CHECK(gr == NULL, "no graph on failure");
    CHECK_OK(vp_fill(g_gpu, &d.d, 3.0f));
    CHECK_OK(vp_fill(g_cpu, &d.h, 3.0f));
    twin_check_bits("after failed captures", "fill still works", &d);
    twin_row("bad calls", "statuses and messages", 0.0, 0.0, 1);
    twin_free(&d), twin_free(&small);
}

/* ---- lanes --------------------------------------------------------------------------- */

/* What the lanes' body works on: x filled on the backend, products of x on two lanes at the
 * same time, then their sums on the backend. */
typedef struct lanes_ctx {
    vp_backend* lane[2];
    vp_tensor x, w, y0, y1, sum0, sum1;
    float value;
} lanes_ctx;

/* x = value on the backend; beside each other y0 = x w^T on lane 0 and y1 = 2 x w^T on lane
 * 1 (each GEMM in its own lane's workspace); joined, the sums of y0 and y1 on the backend.
 * Without the orderings a lane reads x before its fill or the sums read y before it is made. */
static vp_status lanes_body(vp_backend* b, void* ctx) {
    lanes_ctx* c = (lanes_ctx*)ctx;
    VP_TRY(vp_fill(b, &c->x, c->value));
    for (int k = 0; k < 2; ++k) VP_TRY(vp_backend_after(c->lane[k], b));
    vp_gemm_desc d = vp_gemm_plain(0, 1, c->x.shape[0], c->w.shape[0], c->x.shape[1]);
    VP_TRY(vp_gemm(c->lane[0], &d, &c->x, &c->w, NULL, &c->y0));
    d.alpha = 2.0f;
    VP_TRY(vp_gemm(c->lane[1], &d, &c->x, &c->w, NULL, &c->y1));
    for (int k = 0; k < 2; ++k) VP_TRY(vp_backend_after(b, c->lane[k]));
    VP_TRY(vp_reduce_all(b, VP_REDUCE_SUM, &c->y0, &c->sum0));
    return vp_reduce_all(b, VP_REDUCE_SUM, &c->y1, &c->sum1);
}

/* Lanes eager and inside a captured graph against the same work on the backend alone, bit
 * for bit; the graph's launches make no copy, allocation or synchronisation; a lane of the
 * CPU is the CPU itself. */
static void test_lanes(void) {
    const int64_t m = 4096, k = 256, n = 512;
    twin x, w, y0, y1, sum0, sum1;
    twin_2d(&x, VP_F32, m, k), twin_2d(&w, VP_F32, n, k), twin_2d(&y0, VP_F32, m, n), twin_2d(&y1, VP_F32, m, n);
    twin_1d(&sum0, VP_F32, 1), twin_1d(&sum1, VP_F32, 1);
    twin_rand(&w, -0.5f, 0.5f);
    lanes_ctx c = {{NULL, NULL}, x.d, w.d, y0.d, y1.d, sum0.d, sum1.d, 0.0f};
    CHECK_OK(vp_backend_lane(g_gpu, &c.lane[0]));
    CHECK_OK(vp_backend_lane(g_gpu, &c.lane[1]));
    CHECK(c.lane[0] && c.lane[1] && c.lane[0] != g_gpu && c.lane[0] != c.lane[1], "two lanes of their own");
    // the reference: the same body with the backend as both lanes
    lanes_ctx r = c;
    r.lane[0] = r.lane[1] = g_gpu;
    float want[3][2], got[3][2];
    for (int i = 0; i < 3; ++i) {
        r.value = 0.25f * (float)(i + 1);
        CHECK_OK(lanes_body(g_gpu, &r));
        CHECK_OK(vp_download(g_gpu, &want[i][0], &sum0.d, sizeof(float)));
        CHECK_OK(vp_download(g_gpu, &want[i][1], &sum1.d, sizeof(float)));
    }
    for (int i = 0; i < 3; ++i) {
        c.value = 0.25f * (float)(i + 1);
        CHECK_OK(lanes_body(g_gpu, &c));
        CHECK_OK(vp_download(g_gpu, &got[i][0], &sum0.d, sizeof(float)));
        CHECK_OK(vp_download(g_gpu, &got[i][1], &sum1.d, sizeof(float)));
        CHECK(memcmp(got[i], want[i], sizeof got[i]) == 0, "eager lanes, fill %g: sums %.9g %.9g, alone %.9g %.9g",
              (double)c.value, got[i][0], got[i][1], want[i][0], want[i][1]);
    }
    // captured: one graph of the body, launched with the last fill value
    vp_graph* gr = NULL;
    CHECK_OK(vp_graph_capture(g_gpu, lanes_body, &c, &gr));
    CHECK_OK(vp_fill(g_gpu, &y0.d, 0.0f));
    CHECK_OK(vp_fill(g_gpu, &y1.d, 0.0f));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int i = 0; i < 5 && gr; ++i) CHECK_OK(vp_graph_launch(g_gpu, gr));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs,
          "graph launches with lanes made copies / allocations / syncs");
    float g2[2];
    CHECK_OK(vp_download(g_gpu, &g2[0], &sum0.d, sizeof(float)));
    CHECK_OK(vp_download(g_gpu, &g2[1], &sum1.d, sizeof(float)));
    CHECK(memcmp(g2, want[2], sizeof g2) == 0, "captured lanes: sums %.9g %.9g, alone %.9g %.9g", g2[0], g2[1],
          want[2][0], want[2][1]);
    vp_graph_free(gr);
    // a lane of the CPU is the CPU; ordering a backend after itself is a no-op
    vp_backend* cl = NULL;
    CHECK_OK(vp_backend_lane(g_cpu, &cl));
    CHECK(cl == g_cpu, "a CPU lane is the CPU backend");
    CHECK_OK(vp_backend_after(g_cpu, cl));
    CHECK_STATUS(vp_backend_after(g_gpu, g_cpu), VP_ERR_INVALID_ARG, "cannot wait on");
    vp_backend_lane_free(g_cpu, cl);
    for (int i = 0; i < 2; ++i) vp_backend_lane_free(g_gpu, c.lane[i]);
    twin_row("lanes", "eager and captured, against one stream", 0.0, 0.0, 1);
    twin_free(&x), twin_free(&w), twin_free(&y0), twin_free(&y1), twin_free(&sum0), twin_free(&sum1);
}

int main(void) {
    gpu_setup("test_gpu_runtime");
    RUN_TEST(test_lanes);
    RUN_TEST(test_graph_replay);
    RUN_TEST(test_mapped_scalar);
    RUN_TEST(test_determinism);
    RUN_TEST(test_bad_calls);
    gpu_teardown();
    return vpt_finish();
}
