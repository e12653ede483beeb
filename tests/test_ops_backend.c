/* The CPU backend's own services: its name, host memory (aligned, zero-filled, mapped
 * memory with one address), transfers, sync, counters, and graphs that run their body
 * at every launch. */
#include "vp_test.h"

static vp_backend* g_b;

static void test_identity(void) {
    CHECK(vp_backend_get_kind(g_b) == VP_BACKEND_CPU, "kind %d", (int)vp_backend_get_kind(g_b));
    CHECK(strncmp(vp_backend_name(g_b), "cpu (OpenBLAS, ", 15) == 0, "name '%s'", vp_backend_name(g_b));
    // the thread count, singular for one: "cpu (OpenBLAS, 1 thread)", "cpu (OpenBLAS, 2 threads)"
    const char* name = vp_backend_name(g_b);
    const char* comma = strrchr(name, ',');
    long nt = comma ? strtol(comma + 1, NULL, 10) : 0;
    CHECK(nt >= 1 && strstr(name, nt == 1 ? " 1 thread)" : " threads)") != NULL, "name '%s'", name);
    CHECK(vp_backend_native_mem(g_b) == VP_MEM_HOST, "native memory");
    CHECK(vp_backend_can_read(g_b, VP_MEM_HOST) && vp_backend_can_read(g_b, VP_MEM_MAPPED) &&
              !vp_backend_can_read(g_b, VP_MEM_DEVICE),
          "readable memory kinds");
    CHECK_OK(vp_backend_sync(g_b));
}

static void test_memory(void) {
    const size_t sizes[4] = {1, 3, 4096, 100003};
    for (int i = 0; i < 4; ++i)
        for (int mk = 0; mk < 2; ++mk) {
            vp_mem mem = mk ? VP_MEM_MAPPED : VP_MEM_HOST;
            vp_buffer buf;
            CHECK_OK(vp_buffer_alloc(g_b, mem, sizes[i], &buf));
            if (!buf.dev) continue;
            CHECK(buf.host == buf.dev, "%s buffer: host %p dev %p", vp_mem_name(mem), buf.host, buf.dev);
            CHECK(((uintptr_t)buf.dev % 64) == 0, "buffer of %zu not 64-byte aligned", sizes[i]);
            CHECK(buf.bytes == sizes[i] && buf.mem == mem, "buffer records %zu bytes, kind %d", buf.bytes, (int)buf.mem);
            size_t nz = 0;
            for (size_t k = 0; k < sizes[i]; ++k) nz += ((unsigned char*)buf.host)[k] != 0;
            CHECK(nz == 0, "%zu non-zero bytes in a fresh buffer", nz);
            memset(buf.host, 0xab, sizes[i]); /* the whole size is writable */
            vp_buffer_free(g_b, &buf);
            CHECK(buf.dev == NULL && buf.host == NULL, "freed buffer not cleared");
            /* the same size again (likely the same memory, still dirty): zero-filled */
            CHECK_OK(vp_buffer_alloc(g_b, mem, sizes[i], &buf));
            nz = 0;
            for (size_t k = 0; buf.host && k < sizes[i]; ++k) nz += ((unsigned char*)buf.host)[k] != 0;
            CHECK(nz == 0, "%zu non-zero bytes in a reused buffer", nz);
            vp_buffer_free(g_b, &buf);
        }
}

static void test_transfers(void) {
    vp_arena a;
    CHECK_OK(vp_arena_init(&a, g_b, VP_MEM_MAPPED, 1 << 16));
    vp_tensor t;
    void* host = NULL;
    int64_t shape[2] = {3, 7};
    CHECK_OK(vp_arena_tensor(&a, "t", VP_F32, 2, shape, &t, &host));
    CHECK(host == t.data, "mapped arena tensor: host alias %p, data %p", host, t.data);
    float src[21], dst[21];
    for (int i = 0; i < 21; ++i) src[i] = (float)i * 0.5f - 3.0f;
    vp_runtime_counters c0, c1;
    vp_backend_counters(g_b, &c0);
    CHECK_OK(vp_upload(g_b, &t, src, sizeof src));
    /* an op writes through the backend alias; the host alias sees it without a copy */
    CHECK_OK(vp_unary(g_b, VP_UNARY_RELU, &t, &t));
    CHECK(((float*)host)[0] == 0.0f && ((float*)host)[20] == 7.0f, "host alias sees %g %g", ((float*)host)[0],
          ((float*)host)[20]);
    CHECK_OK(vp_download(g_b, dst, &t, sizeof dst));
    for (int i = 0; i < 21; ++i) CHECK(dst[i] == (src[i] > 0 ? src[i] : 0.0f), "element %d: %g", i, dst[i]);
    vp_backend_counters(g_b, &c1);
    CHECK(c1.copies == c0.copies + 2, "copies counted %lld -> %lld", (long long)c0.copies, (long long)c1.copies);
    vp_arena_free(&a);
}

/* A graph body: x = 2 x + 1 via ops, and a count of runs. */
typedef struct body_ctx {
    vp_tensor x, one;
    int runs;
    int fail;
} body_ctx;

static vp_status body(vp_backend* b, void* p) {
    body_ctx* c = p;
    c->runs++;
    if (c->fail) return vp_set_error(VP_ERR_STATE, VP_WHERE, "graph body asked to fail");
    VP_TRY(vp_axpby(b, 1.0f, &c->x, 1.0f, &c->x));
    return vp_binary(b, VP_BINARY_ADD, &c->x, &c->one, &c->x);
}

static void test_graphs(void) {
    float x[5] = {0, 1, 2, 3, 4}, one = 1.0f;
    body_ctx c = {vp_tensor_2d(x, VP_F32, VP_MEM_HOST, 5, 1), vp_tensor_1d(&one, VP_F32, VP_MEM_HOST, 1), 0, 0};
    vp_graph* g = NULL;
    CHECK_OK(vp_graph_capture(g_b, body, &c, &g));
    CHECK(g != NULL && c.runs == 0, "capture ran the body %d times on the CPU", c.runs);
    /* three launches: the body runs each time */
    for (int i = 0; i < 3; ++i) CHECK_OK(vp_graph_launch(g_b, g));
    CHECK(c.runs == 3, "body ran %d times", c.runs);
    for (int i = 0; i < 5; ++i) CHECK(x[i] == (float)i * 8.0f + 7.0f, "x[%d] = %g after 3 launches", i, x[i]);
    /* a failing body's status comes back from the launch */
    c.fail = 1;
    CHECK_STATUS(vp_graph_launch(g_b, g), VP_ERR_STATE, "graph body asked to fail");
    /* a graph belongs to the backend that captured it */
    vp_backend* other = NULL;
    CHECK_OK(vp_backend_cpu_init(&other));
    CHECK_STATUS(vp_graph_launch(other, g), VP_ERR_INVALID_ARG, "vp_graph_launch: graph was captured");
    vp_graph* none = NULL;
    CHECK_STATUS(vp_graph_capture(g_b, NULL, &c, &none), VP_ERR_INVALID_ARG, "vp_graph_capture: backend, body");
    CHECK(none == NULL, "a failed capture returned a graph");
    vp_backend_free(other);
    vp_graph_free(g);
    vp_graph_free(NULL);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_identity);
    RUN_TEST(test_memory);
    RUN_TEST(test_transfers);
    RUN_TEST(test_graphs);
    vp_backend_free(g_b);
    return vpt_finish();
}
