/* Tests of the core runtime: status messages, tensors, Philox, arenas. */
#include "vp_test.h"

static void test_status_messages(void) {
    vp_clear_error();
    CHECK(strcmp(vp_last_error(), "") == 0, "cleared message is '%s'", vp_last_error());
    vp_status s = vp_set_error(VP_ERR_SHAPE, "file.c:12", "x is %d wide", 7);
    CHECK(s == VP_ERR_SHAPE, "status passes through");
    CHECK(strstr(vp_last_error(), "x is 7 wide") != NULL, "message: %s", vp_last_error());
    CHECK(strstr(vp_last_error(), "file.c:12") != NULL, "where: %s", vp_last_error());
    CHECK(strstr(vp_last_error(), "VP_ERR_SHAPE") != NULL, "code: %s", vp_last_error());
    vp_error_context(s, "loading %s", "a.csv");
    CHECK(strncmp(vp_last_error(), "loading a.csv: x is 7 wide", 26) == 0, "context: %s", vp_last_error());
    CHECK(strcmp(vp_status_name((vp_status)999), "VP_ERR_UNKNOWN") == 0, "unknown code name");
}

static int g_logged = 0;
static void capture_log(vp_log_level level, const char* msg, void* user) {
    (void)msg;
    if (level == VP_LOG_WARN) *(int*)user += 1;
}

static void test_log_callback(void) {
    vp_log_set_callback(capture_log, &g_logged);
    vp_log(VP_LOG_WARN, "hello %d", 1);
    vp_log(VP_LOG_INFO, "info");
    vp_log_set_callback(NULL, NULL);
    CHECK(g_logged == 1, "callback saw %d warnings", g_logged);
}

static void test_tensor_views(void) {
    float buf[24];
    vp_tensor t = vp_tensor_3d(buf, VP_F32, VP_MEM_HOST, 2, 3, 4);
    CHECK(vp_tensor_numel(&t) == 24, "numel");
    CHECK(vp_tensor_rows(&t) == 6 && vp_tensor_cols(&t) == 4, "rows/cols");
    CHECK(vp_tensor_bytes(&t) == 96, "bytes");
    char d[64];
    CHECK(strcmp(vp_tensor_describe(&t, d, sizeof d), "f32[2, 3, 4]@host") == 0, "describe: %s", d);
    CHECK(vp_dtype_size(VP_BF16) == 2 && vp_dtype_size(VP_I32) == 4, "dtype sizes");
}

/* Known-answer vectors of Philox4x32-10 (Random123's kat_vectors). */
static void test_philox_known_answers(void) {
    vp_u32x4 c0 = {{0, 0, 0, 0}};
    vp_u32x4 r0 = vp_philox4x32_10(c0, 0, 0);
    const uint32_t e0[4] = {0x6627e8d5u, 0xe169c58du, 0xbc57ac4cu, 0x9b00dbd8u};
    vp_u32x4 c1 = {{0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu}};
    vp_u32x4 r1 = vp_philox4x32_10(c1, 0xffffffffu, 0xffffffffu);
    const uint32_t e1[4] = {0x408f276du, 0x41c83b0eu, 0xa20bc7c6u, 0x6d5451fdu};
    vp_u32x4 c2 = {{0x243f6a88u, 0x85a308d3u, 0x13198a2eu, 0x03707344u}};
    vp_u32x4 r2 = vp_philox4x32_10(c2, 0xa4093822u, 0x299f31d0u);
    const uint32_t e2[4] = {0xd16cfe09u, 0x94fdccebu, 0x5001e420u, 0x24126ea1u};
    for (int i = 0; i < 4; ++i) {
        CHECK(r0.v[i] == e0[i], "zero vector word %d: %08x vs %08x", i, r0.v[i], e0[i]);
        CHECK(r1.v[i] == e1[i], "ones vector word %d: %08x vs %08x", i, r1.v[i], e1[i]);
        CHECK(r2.v[i] == e2[i], "pi vector word %d: %08x vs %08x", i, r2.v[i], e2[i]);
    }
}

static void test_rng_uniform_moments(void) {
    double sum = 0, sumsq = 0, nsum = 0, nsq = 0;
    const int n = 200000;
    float lo = 1, hi = 0;
    for (int i = 0; i < n; ++i) {
        float u = vp_rng_uniform(42, 7, (uint64_t)i);
        sum += u;
        sumsq += (double)u * u;
        lo = u < lo ? u : lo;
        hi = u > hi ? u : hi;
        float z = vp_rng_normal(42, 8, (uint64_t)i);
        nsum += z;
        nsq += (double)z * z;
    }
    CHECK(lo >= 0.0f && hi < 1.0f, "uniform range [%g, %g]", lo, hi);
    CHECK_NEAR(sum / n, 0.5, 0.005, 0);
    CHECK_NEAR(sumsq / n - (sum / n) * (sum / n), 1.0 / 12.0, 0.002, 0);
    CHECK_NEAR(nsum / n, 0.0, 0.01, 0);
    CHECK_NEAR(nsq / n, 1.0, 0.02, 0);
    CHECK(vp_rng_uniform(1, 2, 3) == vp_rng_uniform(1, 2, 3), "pure function");
    CHECK(vp_rng_uniform(1, 2, 3) != vp_rng_uniform(2, 2, 3), "seed changes the draw");
}

static void test_arena(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    vp_arena a;
    CHECK_OK(vp_arena_init(&a, b, VP_MEM_HOST, 4096));
    vp_tensor t1, t2, t3;
    int64_t s1[2] = {3, 5};
    CHECK_OK(vp_arena_tensor(&a, "first", VP_F32, 2, s1, &t1, NULL));
    CHECK_OK(vp_arena_tensor(&a, "second", VP_I32, 1, s1, &t2, NULL));
    CHECK(((uintptr_t)t2.data % 256) == 0, "aligned");
    CHECK((char*)t2.data >= (char*)t1.data + 60, "no overlap");
    int64_t big[1] = {4096};
    CHECK_STATUS(vp_arena_tensor(&a, "too_big", VP_F32, 1, big, &t3, NULL), VP_ERR_OOM, "too_big");
    int64_t bad[1] = {0};
    CHECK_STATUS(vp_arena_tensor(&a, "empty", VP_F32, 1, bad, &t3, NULL), VP_ERR_SHAPE, "empty");
    vp_arena_reset(&a);
    CHECK(a.used == 0 && a.peak > 0, "reset keeps the peak");
    vp_arena_free(&a);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_status_messages);
    RUN_TEST(test_log_callback);
    RUN_TEST(test_tensor_views);
    RUN_TEST(test_philox_known_answers);
    RUN_TEST(test_rng_uniform_moments);
    RUN_TEST(test_arena);
    return vpt_finish();
}
