/* Element-wise ops on the CPU backend: fill, copy, f32 <-> bf16, unary functions (incl.
 * large |x|), binary with row broadcast, axpby and scale_by, against double loops. */
#include <float.h>

#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* Odd sizes used throughout. */
static const int64_t SIZES[][2] = {{1, 1}, {3, 7}, {33, 65}, {129, 257}};
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

static void test_fill_copy(void) {
    for (int s = 0; s < N_SIZES; ++s) {
        const int64_t n = SIZES[s][0] * SIZES[s][1];
        float* x = ref_nan_buffer(n);
        float* y = ref_nan_buffer(n);
        int32_t* k = calloc((size_t)n, 4);
        vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, SIZES[s][0], SIZES[s][1]);
        vp_tensor ty = vp_tensor_1d(y, VP_F32, VP_MEM_HOST, n); /* shapes may differ */
        vp_tensor tk = vp_tensor_1d(k, VP_I32, VP_MEM_HOST, n);
        CHECK_OK(vp_fill(g_b, &tx, -2.5f));
        CHECK_OK(vp_fill_i32(g_b, &tk, -7));
        int bad = 0;
        for (int64_t i = 0; i < n; ++i) bad += x[i] != -2.5f || k[i] != -7;
        CHECK(bad == 0, "%d elements not filled (n=%lld)", bad, (long long)n);
        ref_fill_uniform(x, n, 11, (uint64_t)s, -3, 3);
        CHECK_OK(vp_copy(g_b, &tx, &ty));
        CHECK(memcmp(x, y, (size_t)n * 4) == 0, "copy differs (n=%lld)", (long long)n);
        free(x);
        free(y);
        free(k);
    }
}

static void test_convert_bf16(void) {
    /* hand-picked values: ties to even both ways, NaN with a low-bit payload, inf, -0,
     * overflow past the largest bf16, subnormals */
    const uint32_t bits[] = {0x3f800000u, 0x3f808000u, 0x3f818000u, 0x3f808001u, 0x7f800001u, 0xff800000u,
                             0x80000000u, 0x7f7fffffu, 0x7f7f7fffu, 0x00018000u, 0xbf7fffffu, 0x7fc00000u};
    const uint16_t want[] = {0x3f80, 0x3f80, 0x3f82, 0x3f81, 0, 0xff80, 0x8000, 0x7f80, 0x7f7f, 0x0002, 0xbf80, 0};
    const int nb = (int)(sizeof bits / sizeof bits[0]);
    float x[16];
    uint16_t h[16];
    float back[16];
    memcpy(x, bits, sizeof bits);
    vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, nb), th = vp_tensor_1d(h, VP_BF16, VP_MEM_HOST, nb);
    vp_tensor tb = vp_tensor_1d(back, VP_F32, VP_MEM_HOST, nb);
    CHECK_OK(vp_convert(g_b, &tx, &th));
    CHECK_OK(vp_convert(g_b, &th, &tb));
    for (int i = 0; i < nb; ++i) {
        if (isnan(x[i])) {
            CHECK(isnan(back[i]), "NaN %08x became %04x (not NaN)", bits[i], h[i]);
        } else {
            CHECK(h[i] == want[i], "%08x -> %04x, expected %04x", bits[i], h[i], want[i]);
            CHECK(h[i] == ref_f32_to_bf16(x[i]), "%08x: reference rounding disagrees", bits[i]);
            CHECK(memcmp(&back[i], &(uint32_t){(uint32_t)h[i] << 16}, 4) == 0, "bf16 -> f32 of %04x not exact", h[i]);
        }
    }
    /* random values over a wide range against the reference rounding */
    const int64_t n = 33 * 65;
    float* r = malloc((size_t)n * 4);
    uint16_t* rh = malloc((size_t)n * 2);
    ref_fill_uniform(r, n, 12, 0, -1.0f, 1.0f);
    for (int64_t i = 0; i < n; ++i) r[i] = ldexpf(r[i], (int)(i % 60) - 30);
    vp_tensor tr = vp_tensor_2d(r, VP_F32, VP_MEM_HOST, 33, 65), trh = vp_tensor_1d(rh, VP_BF16, VP_MEM_HOST, n);
    CHECK_OK(vp_convert(g_b, &tr, &trh));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += rh[i] != ref_f32_to_bf16(r[i]);
    CHECK(bad == 0, "%lld of %lld random values rounded differently", (long long)bad, (long long)n);
    free(r);
    free(rh);
}

/* Unary forward against double at every size, inputs over [-lo, hi]. */
static void check_unary(vp_unary_op op, float lo, float hi, uint64_t seed) {
    for (int s = 0; s < N_SIZES; ++s) {
        const int64_t n = SIZES[s][0] * SIZES[s][1];
        float* x = malloc((size_t)n * 4);
        float* y = ref_nan_buffer(n);
        double* ref = ref_dbuf(n);
        ref_fill_uniform(x, n, seed, (uint64_t)s, lo, hi);
        for (int64_t i = 0; i < n; ++i) ref[i] = ref_unary(op, x[i]);
        vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, SIZES[s][0], SIZES[s][1]);
        vp_tensor ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, SIZES[s][0], SIZES[s][1]);
        CHECK_OK(vp_unary(g_b, op, &tx, &ty));
        /* float libm: a few ulp; absolute floor for results in the subnormal range */
        int64_t bad = ref_first_bad(y, ref, n, 1e-37, 4e-7);
        CHECK(bad < 0, "op %d n=%lld: x=%.9g got %.9g ref %.9g", (int)op, (long long)n, bad < 0 ? 0 : x[bad],
              bad < 0 ? 0 : y[bad], bad < 0 ? 0 : ref[bad]);
        /* in place (y aliases x) gives the same bits */
        CHECK_OK(vp_unary(g_b, op, &tx, &tx));
        CHECK(memcmp(x, y, (size_t)n * 4) == 0, "op %d in place differs", (int)op);
        free(x);
        free(y);
        free(ref);
    }
}

static void test_unary_forward(void) {
    for (int op = 0; op < VP_UNARY_COUNT; ++op) {
        check_unary((vp_unary_op)op, -8.0f, 8.0f, 20 + (uint64_t)op);
        if (op != VP_UNARY_EXP) check_unary((vp_unary_op)op, -90.0f, 90.0f, 30 + (uint64_t)op);
    }
    check_unary(VP_UNARY_EXP, -80.0f, 80.0f, 40);
}

/* Values at large |x|: finite, exact limits, softplus linear above 20. */
static void test_unary_extremes(void) {
    float x[8] = {-1000.0f, -100.0f, -30.0f, 20.5f, 30.0f, 1000.0f, FLT_MAX, -FLT_MAX};
    float y[8], dx[8], dy[8] = {1, 1, 1, 1, 1, 1, 1, 1};
    vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, 8), ty = vp_tensor_1d(y, VP_F32, VP_MEM_HOST, 8);
    vp_tensor tdx = vp_tensor_1d(dx, VP_F32, VP_MEM_HOST, 8), tdy = vp_tensor_1d(dy, VP_F32, VP_MEM_HOST, 8);
    const vp_unary_op ops[4] = {VP_UNARY_SILU, VP_UNARY_SOFTPLUS, VP_UNARY_SIGMOID, VP_UNARY_TANH};
    for (int o = 0; o < 4; ++o) {
        CHECK_OK(vp_unary(g_b, ops[o], &tx, &ty));
        CHECK_OK(vp_unary_backward(g_b, ops[o], &tx, &tdy, &tdx));
        for (int i = 0; i < 8; ++i) {
            CHECK(!isnan(y[i]) && !isnan(dx[i]) && isfinite(dx[i]), "op %d x=%g: y=%g dx=%g", (int)ops[o], x[i], y[i],
                  dx[i]);
            CHECK(isfinite(y[i]), "op %d x=%g: y=%g not finite", (int)ops[o], x[i], y[i]);
        }
    }
    /* the limits, exactly */
    CHECK_OK(vp_unary(g_b, VP_UNARY_SOFTPLUS, &tx, &ty));
    CHECK(y[0] == 0.0f && y[3] == 20.5f && y[4] == 30.0f && y[5] == 1000.0f, "softplus %g %g %g %g", y[0], y[3], y[4],
          y[5]);
    CHECK_NEAR(y[1], exp(-100.0), 1e-45, 1e-5);
    CHECK_OK(vp_unary(g_b, VP_UNARY_SIGMOID, &tx, &ty));
    CHECK(y[0] == 0.0f && y[5] == 1.0f, "sigmoid %g %g", y[0], y[5]);
    CHECK_OK(vp_unary(g_b, VP_UNARY_SILU, &tx, &ty));
    CHECK(y[0] == 0.0f && y[5] == 1000.0f, "silu %g %g", y[0], y[5]);
    CHECK_OK(vp_unary_backward(g_b, VP_UNARY_SOFTPLUS, &tx, &tdy, &tdx));
    CHECK(dx[3] == 1.0f && dx[5] == 1.0f && dx[0] == 0.0f, "softplus' %g %g %g", dx[3], dx[5], dx[0]);
    /* derivatives in the tails against closed forms (no cancellation to zero) */
    CHECK_OK(vp_unary_backward(g_b, VP_UNARY_SIGMOID, &tx, &tdy, &tdx));
    for (int i = 1; i < 5; ++i) {
        double e = exp(-fabs((double)x[i]));
        CHECK_NEAR(dx[i], e / ((1 + e) * (1 + e)), 1e-40, 1e-5);
    }
    CHECK_OK(vp_unary_backward(g_b, VP_UNARY_TANH, &tx, &tdy, &tdx));
    for (int i = 2; i < 5; ++i) CHECK_NEAR(dx[i], 1.0 / pow(cosh((double)x[i]), 2.0), 1e-40, 1e-5);
    CHECK_OK(vp_unary_backward(g_b, VP_UNARY_SILU, &tx, &tdy, &tdx));
    for (int i = 1; i < 5; ++i) {
        double xv = x[i], s = 1.0 / (1.0 + exp(-xv));
        CHECK_NEAR(dx[i], s * (1.0 + xv * (1.0 - s)), 1e-40, 1e-5);
    }
    /* NaN goes through every op */
    float nan_in = NAN, out;
    vp_tensor tn = vp_tensor_1d(&nan_in, VP_F32, VP_MEM_HOST, 1), to = vp_tensor_1d(&out, VP_F32, VP_MEM_HOST, 1);
    for (int op = 0; op < VP_UNARY_COUNT; ++op) {
        CHECK_OK(vp_unary(g_b, (vp_unary_op)op, &tn, &to));
        CHECK(isnan(out), "op %d of NaN gave %g", op, out);
    }
}

static void test_binary(void) {
    for (int s = 0; s < N_SIZES; ++s) {
        const int64_t m = SIZES[s][0], n = SIZES[s][1];
        float* a = malloc((size_t)(m * n) * 4);
        float* bf = malloc((size_t)(m * n) * 4);
        float* c = ref_nan_buffer(m * n);
        ref_fill_uniform(a, m * n, 50, (uint64_t)s, -2, 2);
        ref_fill_uniform(bf, m * n, 51, (uint64_t)s, -2, 2);
        vp_tensor ta = vp_tensor_2d(a, VP_F32, VP_MEM_HOST, m, n), tc = vp_tensor_2d(c, VP_F32, VP_MEM_HOST, m, n);
        vp_tensor tfull = vp_tensor_2d(bf, VP_F32, VP_MEM_HOST, m, n), trow = vp_tensor_1d(bf, VP_F32, VP_MEM_HOST, n);
        for (int op = 0; op < VP_BINARY_COUNT; ++op)
            for (int bc = 0; bc < 2; ++bc) {
                CHECK_OK(vp_binary(g_b, (vp_binary_op)op, &ta, bc ? &trow : &tfull, &tc));
                int64_t bad = 0;
                for (int64_t i = 0; i < m * n; ++i) {
                    float u = a[i], v = bf[bc ? i % n : i];
                    float w = op == VP_BINARY_ADD ? u + v : op == VP_BINARY_SUB ? u - v : u * v;
                    bad += c[i] != w;
                }
                CHECK(bad == 0, "binary op %d broadcast %d [%lld, %lld]: %lld wrong", op, bc, (long long)m,
                      (long long)n, (long long)bad);
            }
        /* in place: a = a * b[row] */
        memcpy(c, a, (size_t)(m * n) * 4);
        CHECK_OK(vp_binary(g_b, VP_BINARY_MUL, &ta, &trow, &ta));
        int64_t bad = 0;
        for (int64_t i = 0; i < m * n; ++i) bad += a[i] != c[i] * bf[i % n];
        CHECK(bad == 0, "in-place broadcast multiply: %lld wrong", (long long)bad);
        free(a);
        free(bf);
        free(c);
    }
}

static void test_axpby_scale(void) {
    const int64_t n = 129 * 257;
    float* x = malloc((size_t)n * 4);
    float* y = malloc((size_t)n * 4);
    float* y0 = malloc((size_t)n * 4);
    ref_fill_uniform(x, n, 60, 0, -1, 1);
    ref_fill_uniform(y0, n, 61, 0, -1, 1);
    memcpy(y, y0, (size_t)n * 4);
    vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, n), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, 129, 257);
    CHECK_OK(vp_axpby(g_b, 0.3f, &tx, -1.25f, &ty));
    int64_t bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += fabs((double)y[i] - (0.3 * x[i] - 1.25 * y0[i])) > 4e-7 * 3;
    CHECK(bad == 0, "axpby: %lld elements off", (long long)bad);
    /* beta == 0: y is not read, so NaN in y does not leak */
    for (int64_t i = 0; i < n; ++i) y[i] = NAN;
    CHECK_OK(vp_axpby(g_b, 2.0f, &tx, 0.0f, &ty));
    bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += y[i] != 2.0f * x[i];
    CHECK(bad == 0, "axpby beta=0: %lld elements wrong (NaN leaked?)", (long long)bad);
    /* scale_by a scalar held in backend memory */
    float s = -0.5f;
    vp_tensor ts = vp_tensor_1d(&s, VP_F32, VP_MEM_HOST, 1);
    memcpy(y, x, (size_t)n * 4);
    CHECK_OK(vp_scale_by(g_b, &ty, &ts));
    bad = 0;
    for (int64_t i = 0; i < n; ++i) bad += y[i] != -0.5f * x[i];
    CHECK(bad == 0, "scale_by: %lld wrong", (long long)bad);
    free(x);
    free(y);
    free(y0);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_fill_copy);
    RUN_TEST(test_convert_bf16);
    RUN_TEST(test_unary_forward);
    RUN_TEST(test_unary_extremes);
    RUN_TEST(test_binary);
    RUN_TEST(test_axpby_scale);
    vp_backend_free(g_b);
    return vpt_finish();
}
