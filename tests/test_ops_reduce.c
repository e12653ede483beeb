/* Reductions (rows, columns, all; sum, sum of squares, max incl. NaN) and row gather on
 * the CPU backend against double loops; repeated reductions give identical bits. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

static const int64_t SIZES[][2] = {{1, 1}, {3, 7}, {33, 65}, {129, 257}, {1000, 3}, {2, 5000}};
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* Reference reduction of n values at stride `step`; `absum` receives sum |term|. */
static double ref_reduce(vp_reduce_op op, const float* x, int64_t n, int64_t step, double* absum) {
    double acc = op == VP_REDUCE_MAX ? -INFINITY : 0.0, a = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        double v = x[i * step];
        if (op == VP_REDUCE_MAX) {
            if (isnan(v) || v > acc) acc = v;
            if (isnan(acc)) break;
        } else {
            double t = op == VP_REDUCE_SUM ? v : v * v;
            acc += t;
            a += fabs(t);
        }
    }
    *absum = a;
    return acc;
}

/* Backend result `got` against the reference: max exact, sums to float rounding. */
static int reduce_ok(vp_reduce_op op, float got, double ref, double absum) {
    if (isnan(ref)) return isnan(got);
    if (op == VP_REDUCE_MAX) return (double)got == ref;
    return !isnan(got) && fabs((double)got - ref) <= 1e-6 * absum + 1e-30;
}

static void check_reductions(const float* x, int64_t m, int64_t n, const char* what) {
    vp_tensor tx = vp_tensor_2d((void*)x, VP_F32, VP_MEM_HOST, m, n);
    float* out = ref_nan_buffer(m > n ? m : n);
    for (int op = 0; op < VP_REDUCE_COUNT; ++op) {
        double ab;
        /* rows */
        vp_tensor tr = vp_tensor_1d(out, VP_F32, VP_MEM_HOST, m);
        CHECK_OK(vp_reduce_rows(g_b, (vp_reduce_op)op, &tx, &tr));
        for (int64_t i = 0; i < m; ++i) {
            double r = ref_reduce((vp_reduce_op)op, x + i * n, n, 1, &ab);
            CHECK(reduce_ok((vp_reduce_op)op, out[i], r, ab), "%s rows op %d [%lld, %lld] row %lld: %.9g vs %.9g",
                  what, op, (long long)m, (long long)n, (long long)i, out[i], r);
        }
        /* columns */
        vp_tensor tc = vp_tensor_1d(out, VP_F32, VP_MEM_HOST, n);
        CHECK_OK(vp_reduce_cols(g_b, (vp_reduce_op)op, &tx, &tc));
        for (int64_t j = 0; j < n; ++j) {
            double r = ref_reduce((vp_reduce_op)op, x + j, m, n, &ab);
            CHECK(reduce_ok((vp_reduce_op)op, out[j], r, ab), "%s cols op %d [%lld, %lld] col %lld: %.9g vs %.9g",
                  what, op, (long long)m, (long long)n, (long long)j, out[j], r);
        }
        /* everything */
        vp_tensor ta = vp_tensor_1d(out, VP_F32, VP_MEM_HOST, 1);
        CHECK_OK(vp_reduce_all(g_b, (vp_reduce_op)op, &tx, &ta));
        double r = ref_reduce((vp_reduce_op)op, x, m * n, 1, &ab);
        CHECK(reduce_ok((vp_reduce_op)op, out[0], r, ab), "%s all op %d [%lld, %lld]: %.9g vs %.9g", what, op,
              (long long)m, (long long)n, out[0], r);
    }
    free(out);
}

static void test_reductions(void) {
    for (int s = 0; s < N_SIZES; ++s) {
        const int64_t m = SIZES[s][0], n = SIZES[s][1];
        float* x = malloc((size_t)(m * n) * 4);
        ref_fill_uniform(x, m * n, 90, (uint64_t)s, -3, 1);
        check_reductions(x, m, n, "uniform");
        /* one NaN: its row, its column and the total become NaN under every op */
        const int64_t k = (m * n) / 2;
        x[k] = NAN;
        check_reductions(x, m, n, "with NaN");
        float o[1];
        vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, m, n), to = vp_tensor_1d(o, VP_F32, VP_MEM_HOST, 1);
        CHECK_OK(vp_reduce_all(g_b, VP_REDUCE_MAX, &tx, &to));
        CHECK(isnan(o[0]), "max over a buffer holding a NaN gave %g", o[0]);
        free(x);
    }
    /* all negative: max is the largest negative, not 0 */
    float neg[3] = {-5, -2, -9}, o;
    vp_tensor tn = vp_tensor_2d(neg, VP_F32, VP_MEM_HOST, 1, 3), to = vp_tensor_1d(&o, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_reduce_rows(g_b, VP_REDUCE_MAX, &tn, &to));
    CHECK(o == -2.0f, "max of negatives %g", o);
}

/* Same inputs, same bits, for a long sum whose order matters. */
static void test_reduce_deterministic(void) {
    const int64_t n = 1 << 20;
    float* x = malloc((size_t)n * 4);
    ref_fill_uniform(x, n, 91, 0, -1e3f, 1e3f);
    float a[2], c1[64], c2[64];
    vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, n), tx2 = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, n / 64, 64);
    vp_tensor t0 = vp_tensor_1d(&a[0], VP_F32, VP_MEM_HOST, 1), t1 = vp_tensor_1d(&a[1], VP_F32, VP_MEM_HOST, 1);
    vp_tensor tc1 = vp_tensor_1d(c1, VP_F32, VP_MEM_HOST, 64), tc2 = vp_tensor_1d(c2, VP_F32, VP_MEM_HOST, 64);
    CHECK_OK(vp_reduce_all(g_b, VP_REDUCE_SUM, &tx, &t0));
    CHECK_OK(vp_reduce_all(g_b, VP_REDUCE_SUM, &tx, &t1));
    CHECK(memcmp(&a[0], &a[1], 4) == 0, "reduce_all twice: %.9g vs %.9g", a[0], a[1]);
    CHECK_OK(vp_reduce_cols(g_b, VP_REDUCE_SUMSQ, &tx2, &tc1));
    CHECK_OK(vp_reduce_cols(g_b, VP_REDUCE_SUMSQ, &tx2, &tc2));
    CHECK(memcmp(c1, c2, sizeof c1) == 0, "reduce_cols twice differ");
    free(x);
}

static void test_gather(void) {
    const int64_t r = 37, n = 65, m = 129;
    float* src = malloc((size_t)(r * n) * 4);
    float* out = ref_nan_buffer(m * n);
    int32_t* idx = malloc((size_t)m * 4);
    ref_fill_uniform(src, r * n, 95, 0, -1, 1);
    for (int64_t i = 0; i < m; ++i) idx[i] = (int32_t)((i * 7 + 3) % r);
    idx[5] = -1; /* out of range both ways */
    idx[6] = (int32_t)r;
    idx[7] = INT32_MAX;
    idx[8] = INT32_MIN;
    vp_tensor ts = vp_tensor_2d(src, VP_F32, VP_MEM_HOST, r, n), ti = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, m);
    vp_tensor to = vp_tensor_3d(out, VP_F32, VP_MEM_HOST, 3, 43, n);
    CHECK_OK(vp_gather_rows(g_b, &ts, &ti, &to));
    for (int64_t i = 0; i < m; ++i) {
        int in_range = idx[i] >= 0 && idx[i] < r;
        int64_t bad = 0;
        for (int64_t j = 0; j < n; ++j)
            bad += in_range ? out[i * n + j] != src[(int64_t)idx[i] * n + j] : !isnan(out[i * n + j]);
        CHECK(bad == 0, "row %lld (index %d): %lld elements wrong", (long long)i, idx[i], (long long)bad);
    }
    /* a single row and column */
    float one = 4.5f, got = 0;
    int32_t zero = 0;
    vp_tensor t1 = vp_tensor_2d(&one, VP_F32, VP_MEM_HOST, 1, 1), tz = vp_tensor_1d(&zero, VP_I32, VP_MEM_HOST, 1);
    vp_tensor tg = vp_tensor_1d(&got, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_gather_rows(g_b, &t1, &tz, &tg));
    CHECK(got == 4.5f, "1x1 gather %g", got);
    free(src);
    free(out);
    free(idx);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_reductions);
    RUN_TEST(test_reduce_deterministic);
    RUN_TEST(test_gather);
    vp_backend_free(g_b);
    return vpt_finish();
}
