/* Memory bandwidth the CUDA backend's own streaming kernels reach on 2 GiB f32 buffers
 * (the copy ceiling docs/perf.md quotes beside PyTorch's): vp_copy (bytes read +
 * written), vp_fill (written), vp_reduce_all (read), vp_axpby (two read, one written).
 * Each is validated first, then timed as a graph of 10 calls, median of 5 launches
 * between syncs. Prints a table and JSON lines; exits non-zero on a failed check. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <time.h>

#include "gpu_twin.h"

#define BW_N ((int64_t)1 << 29) /* floats per buffer: 2 GiB */
#define BW_CHUNK ((int64_t)1 << 24)
#define BW_ITERS 10
#define BW_REPS 5

typedef struct bw_ctx {
    int which; /* 0 copy, 1 fill, 2 reduce_all, 3 axpby */
    vp_tensor src, dst, out;
} bw_ctx;

static vp_status bw_body(vp_backend* b, void* p) {
    bw_ctx* c = (bw_ctx*)p;
    for (int i = 0; i < BW_ITERS; ++i) {
        if (c->which == 0) VP_TRY(vp_copy(b, &c->src, &c->dst));
        else if (c->which == 1) VP_TRY(vp_fill(b, &c->dst, 0.5f));
        else if (c->which == 2) VP_TRY(vp_reduce_all(b, VP_REDUCE_SUM, &c->src, &c->out));
        else VP_TRY(vp_axpby(b, 1.0f, &c->src, 0.5f, &c->dst));
    }
    return VP_OK;
}

static int cmp_d(const void* a, const void* b) {
    double x = *(const double*)a, y = *(const double*)b;
    return (x > y) - (x < y);
}

/* Milliseconds per call: median of BW_REPS launches of a graph of BW_ITERS calls. */
static double bw_time(bw_ctx* c) {
    vp_graph* g = NULL;
    CHECK_OK(vp_graph_capture(g_gpu, bw_body, c, &g));
    if (!g) return NAN;
    CHECK_OK(vp_graph_launch(g_gpu, g));
    CHECK_OK(vp_backend_sync(g_gpu));
    double t[BW_REPS];
    for (int r = 0; r < BW_REPS; ++r) {
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        CHECK_OK(vp_graph_launch(g_gpu, g));
        CHECK_OK(vp_backend_sync(g_gpu));
        clock_gettime(CLOCK_MONOTONIC, &b);
        t[r] = ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) * 1e-6) / BW_ITERS;
    }
    vp_graph_free(g);
    qsort(t, BW_REPS, sizeof t[0], cmp_d);
    return t[BW_REPS / 2];
}

static void test_bandwidth(void) {
    vp_buffer sb, db;
    float* chunk = (float*)malloc((size_t)BW_CHUNK * sizeof(float));
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_DEVICE, (size_t)BW_N * 4, &sb));
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_DEVICE, (size_t)BW_N * 4, &db));
    if (!chunk || !sb.dev || !db.dev) return;
    /* random source: one uploaded chunk, doubled on the device up to 2 GiB */
    for (int64_t i = 0; i < BW_CHUNK; ++i) chunk[i] = vp_rng_uniform(g_seed, 1, (uint64_t)i) - 0.5f;
    vp_tensor first = vp_tensor_1d(sb.dev, VP_F32, VP_MEM_DEVICE, BW_CHUNK);
    CHECK_OK(vp_upload(g_gpu, &first, chunk, (size_t)BW_CHUNK * 4));
    for (int64_t off = BW_CHUNK; off < BW_N; off *= 2) {
        vp_tensor a = vp_tensor_1d(sb.dev, VP_F32, VP_MEM_DEVICE, off);
        vp_tensor b = vp_tensor_1d((float*)sb.dev + off, VP_F32, VP_MEM_DEVICE, off);
        CHECK_OK(vp_copy(g_gpu, &a, &b));
    }
    vp_buffer ob;
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_MAPPED, sizeof(float), &ob));
    bw_ctx c = {0, vp_tensor_1d(sb.dev, VP_F32, VP_MEM_DEVICE, BW_N), vp_tensor_1d(db.dev, VP_F32, VP_MEM_DEVICE, BW_N),
                vp_tensor_1d(ob.dev, VP_F32, VP_MEM_MAPPED, 1)};
    /* validate the copy on 64 sampled elements */
    CHECK_OK(vp_fill(g_gpu, &c.dst, NAN));
    CHECK_OK(vp_copy(g_gpu, &c.src, &c.dst));
    int bad = 0;
    for (int s = 0; s < 64; ++s) {
        int64_t i = (int64_t)(vp_rng_draw(g_seed, 2, (uint64_t)s).v[0] % (uint32_t)BW_N);
        float v = NAN;
        vp_tensor one = vp_tensor_1d((float*)db.dev + i, VP_F32, VP_MEM_DEVICE, 1);
        CHECK_OK(vp_download(g_gpu, &v, &one, 4));
        bad += memcmp(&v, &chunk[i % BW_CHUNK], 4) != 0;
    }
    CHECK(bad == 0, "copy: %d of 64 sampled elements wrong", bad);
    twin_row("bandwidth", "vp_copy validated on 64 samples", (double)bad, 0.0, bad == 0);
    static const char* names[4] = {"vp_copy", "vp_fill", "vp_reduce_all sum", "vp_axpby"};
    static const double passes[4] = {2.0, 1.0, 1.0, 3.0}; /* buffers moved per call */
    printf("\n%-20s %12s %10s %10s\n", "kernel", "bytes", "ms", "TB/s");
    char json[4][256];
    for (int w = 0; w < 4; ++w) {
        c.which = w;
        const double ms = bw_time(&c), bytes = passes[w] * (double)BW_N * 4.0;
        printf("%-20s %12.0f %10.4f %10.3f\n", names[w], bytes, ms, bytes / ms / 1e9);
        snprintf(json[w], sizeof json[w],
                 "{\"figure\":\"bandwidth\",\"kernel\":\"%s\",\"device\":\"%s\",\"bytes\":%.0f,\"ms\":%.5f,\"tb_per_s\":%.4f}",
                 names[w], vp_backend_name(g_gpu), bytes, ms, bytes / ms / 1e9);
        CHECK(ms > 0.0 && !isnan(ms), "%s timing failed", names[w]);
    }
    for (int w = 0; w < 4; ++w) printf("%s\n", json[w]);
    /* the reduction over the whole source stays a finite number */
    CHECK_OK(vp_backend_sync(g_gpu));
    CHECK(!isnan(((float*)ob.host)[0]), "reduce_all wrote NaN");
    vp_buffer_free(g_gpu, &ob);
    vp_buffer_free(g_gpu, &sb);
    vp_buffer_free(g_gpu, &db);
    free(chunk);
}

int main(void) {
    gpu_setup("ceil_bandwidth");
    RUN_TEST(test_bandwidth);
    gpu_teardown();
    return vpt_finish();
}
