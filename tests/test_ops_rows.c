/* Row ops on the CPU backend against double loops: softmax and log-softmax (incl.
 * large-magnitude rows), LayerNorm and RMSNorm forward with their saved statistics. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

static const int64_t SIZES[][2] = {{1, 1}, {3, 7}, {33, 65}, {129, 257}, {5, 51}};
#define N_SIZES (int)(sizeof SIZES / sizeof SIZES[0])

/* Softmax or log-softmax of x [m, n] by the backend against the double reference. */
static void check_softmax(const float* x, int64_t m, int64_t n, int is_log, const char* what) {
    float* y = ref_nan_buffer(m * n);
    double* xd = ref_dbuf(m * n);
    double* ref = ref_dbuf(m * n);
    ref_to_double(x, m * n, xd);
    for (int64_t i = 0; i < m; ++i) ref_softmax_row(xd + i * n, n, is_log, ref + i * n);
    vp_tensor tx = vp_tensor_2d((void*)x, VP_F32, VP_MEM_HOST, m, n), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, m, n);
    CHECK_OK(is_log ? vp_log_softmax(g_b, &tx, &ty) : vp_softmax(g_b, &tx, &ty));
    /* softmax: a few float roundings relative; log-softmax: relative to max(|y|, 1) */
    int64_t bad = -1;
    for (int64_t i = 0; i < m * n && bad < 0; ++i) {
        double tol = is_log ? 1e-6 * fmax(fabs(ref[i]), 1.0) : 1e-6 * ref[i] + 1e-38;
        if (isnan(y[i]) || fabs(y[i] - ref[i]) > tol) bad = i;
    }
    CHECK(bad < 0, "%s %s [%lld, %lld] elem %lld: got %.9g ref %.9g", is_log ? "log_softmax" : "softmax", what,
          (long long)m, (long long)n, (long long)bad, bad < 0 ? 0 : y[bad], bad < 0 ? 0 : ref[bad]);
    /* rows of a softmax sum to one */
    for (int64_t i = 0; i < m && !is_log; ++i) {
        double s = 0;
        for (int64_t j = 0; j < n; ++j) s += y[i * n + j];
        CHECK_NEAR(s, 1.0, 1e-5, 0);
    }
    free(y);
    free(xd);
    free(ref);
}

static void test_softmax_forward(void) {
    for (int s = 0; s < N_SIZES; ++s) {
        const int64_t m = SIZES[s][0], n = SIZES[s][1];
        float* x = malloc((size_t)(m * n) * 4);
        ref_fill_uniform(x, m * n, 70, (uint64_t)s, -6, 6);
        check_softmax(x, m, n, 0, "uniform");
        check_softmax(x, m, n, 1, "uniform");
        /* large magnitude: the shift by the row max keeps exp in range */
        for (int64_t i = 0; i < m * n; ++i) x[i] = x[i] * 2000.0f + 1e4f;
        check_softmax(x, m, n, 0, "large");
        check_softmax(x, m, n, 1, "large");
        for (int64_t i = 0; i < m * n; ++i) x[i] = -x[i];
        check_softmax(x, m, n, 0, "large negative");
        check_softmax(x, m, n, 1, "large negative");
        free(x);
    }
    /* in place, and a row with one huge entry: exactly one-hot */
    float r[4] = {3e38f, 0.0f, -3e38f, 1.0f};
    vp_tensor tr = vp_tensor_2d(r, VP_F32, VP_MEM_HOST, 1, 4);
    CHECK_OK(vp_softmax(g_b, &tr, &tr));
    CHECK(r[0] == 1.0f && r[1] == 0.0f && r[2] == 0.0f && r[3] == 0.0f, "one-hot row: %g %g %g %g", r[0], r[1], r[2],
          r[3]);
}

/* LayerNorm (ln = 1) or RMSNorm (ln = 0) forward of an [m, n] input against double. */
static void check_norm(int ln, int64_t m, int64_t n, float shift, uint64_t seed) {
    const float eps = 1e-5f;
    float* x = malloc((size_t)(m * n) * 4);
    float* g = malloc((size_t)n * 4);
    float* be = malloc((size_t)n * 4);
    float* y = ref_nan_buffer(m * n);
    float* mean = ref_nan_buffer(m);
    float* rstd = ref_nan_buffer(m);
    ref_fill_uniform(x, m * n, seed, 1, -2, 2);
    for (int64_t i = 0; i < m * n; ++i) x[i] += shift;
    ref_fill_uniform(g, n, seed, 2, 0.5f, 1.5f);
    ref_fill_uniform(be, n, seed, 3, -0.5f, 0.5f);
    double *xd = ref_dbuf(m * n), *gd = ref_dbuf(n), *bd = ref_dbuf(n), *yd = ref_dbuf(m * n);
    double *md = ref_dbuf(m), *rd = ref_dbuf(m);
    ref_to_double(x, m * n, xd);
    ref_to_double(g, n, gd);
    ref_to_double(be, n, bd);
    vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, m, n), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, m, n);
    vp_tensor tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, n), tb = vp_tensor_1d(be, VP_F32, VP_MEM_HOST, n);
    vp_tensor tm = vp_tensor_1d(mean, VP_F32, VP_MEM_HOST, m), tr = vp_tensor_1d(rstd, VP_F32, VP_MEM_HOST, m);
    if (ln) {
        ref_layernorm(xd, gd, bd, eps, m, n, yd, md, rd);
        CHECK_OK(vp_layernorm(g_b, &tx, &tg, &tb, eps, &ty, &tm, &tr));
        int64_t bad = ref_first_bad(mean, md, m, 1e-6, 1e-6);
        CHECK(bad < 0, "layernorm mean [%lld, %lld] row %lld", (long long)m, (long long)n, (long long)bad);
    } else {
        ref_rmsnorm(xd, gd, eps, m, n, yd, rd);
        CHECK_OK(vp_rmsnorm(g_b, &tx, &tg, eps, &ty, &tr));
    }
    int64_t bad = ref_first_bad(rstd, rd, m, 0, 1e-6);
    CHECK(bad < 0, "%s rstd [%lld, %lld] row %lld: %.9g vs %.9g", ln ? "layernorm" : "rmsnorm", (long long)m,
          (long long)n, (long long)bad, bad < 0 ? 0 : rstd[bad], bad < 0 ? 0 : rd[bad]);
    /* outputs of size ~1: a few float roundings, plus the float mean's rounding (half an
     * ulp of the shift, 2^-24 |shift|, times rstd * gamma <= ~2) */
    bad = ref_first_bad(y, yd, m * n, 2e-6 + 2e-7 * fabs(shift), 1e-6);
    CHECK(bad < 0, "%s y [%lld, %lld] elem %lld: %.9g vs %.9g", ln ? "layernorm" : "rmsnorm", (long long)m,
          (long long)n, (long long)bad, bad < 0 ? 0 : y[bad], bad < 0 ? 0 : yd[bad]);
    free(x);
    free(g);
    free(be);
    free(y);
    free(mean);
    free(rstd);
    free(xd);
    free(gd);
    free(bd);
    free(yd);
    free(md);
    free(rd);
}

static void test_norm_forward(void) {
    for (int s = 0; s < N_SIZES; ++s)
        for (int ln = 0; ln < 2; ++ln) {
            check_norm(ln, SIZES[s][0], SIZES[s][1], 0.0f, 80 + (uint64_t)s);
            check_norm(ln, SIZES[s][0], SIZES[s][1], 100.0f, 90 + (uint64_t)s); /* large common offset */
        }
    /* a constant row: LayerNorm gives beta exactly (variance 0, eps keeps rstd finite) */
    float x[5] = {3, 3, 3, 3, 3}, g[5] = {1, 2, 3, 4, 5}, be[5] = {0.5f, -1, 2, 0, 7}, y[5], mu, rs;
    vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, 1, 5), ty = vp_tensor_2d(y, VP_F32, VP_MEM_HOST, 1, 5);
    vp_tensor tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, 5), tb = vp_tensor_1d(be, VP_F32, VP_MEM_HOST, 5);
    vp_tensor tm = vp_tensor_1d(&mu, VP_F32, VP_MEM_HOST, 1), tr = vp_tensor_1d(&rs, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_layernorm(g_b, &tx, &tg, &tb, 1e-5f, &ty, &tm, &tr));
    for (int j = 0; j < 5; ++j) CHECK(y[j] == be[j], "constant row y[%d] = %g, beta %g", j, y[j], be[j]);
    CHECK(mu == 3.0f, "constant row mean %g", mu);
    CHECK_NEAR(rs, 1.0 / sqrt(1e-5), 0, 1e-6);
}

/* vp_layernorm_relu gives the bits of vp_layernorm then the ReLU op, statistics included, and
 * cuts some outputs and keeps others. */
static void test_layernorm_relu(void) {
    const int64_t m = 37, n = 29;
    float *x = (float*)malloc(sizeof(float) * (size_t)(m * n)), g[29], be[29];
    float *y1 = (float*)malloc(sizeof(float) * (size_t)(m * n)), *y2 = (float*)malloc(sizeof(float) * (size_t)(m * n));
    float mu1[37], rs1[37], mu2[37], rs2[37];
    ref_fill_uniform(x, m * n, 5, 1, -2.0f, 2.0f);
    ref_fill_uniform(g, n, 5, 2, 0.5f, 1.5f);
    ref_fill_uniform(be, n, 5, 3, -0.5f, 0.5f);
    vp_tensor tx = vp_tensor_2d(x, VP_F32, VP_MEM_HOST, m, n), tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, n);
    vp_tensor tb = vp_tensor_1d(be, VP_F32, VP_MEM_HOST, n);
    vp_tensor t1 = vp_tensor_2d(y1, VP_F32, VP_MEM_HOST, m, n), t2 = vp_tensor_2d(y2, VP_F32, VP_MEM_HOST, m, n);
    vp_tensor m1 = vp_tensor_1d(mu1, VP_F32, VP_MEM_HOST, m), r1 = vp_tensor_1d(rs1, VP_F32, VP_MEM_HOST, m);
    vp_tensor m2 = vp_tensor_1d(mu2, VP_F32, VP_MEM_HOST, m), r2 = vp_tensor_1d(rs2, VP_F32, VP_MEM_HOST, m);
    CHECK_OK(vp_layernorm(g_b, &tx, &tg, &tb, 1e-5f, &t1, &m1, &r1));
    CHECK_OK(vp_unary(g_b, VP_UNARY_RELU, &t1, &t1));
    CHECK_OK(vp_layernorm_relu(g_b, &tx, &tg, &tb, 1e-5f, &t2, &m2, &r2));
    CHECK(memcmp(y1, y2, sizeof(float) * (size_t)(m * n)) == 0, "layernorm_relu = relu(layernorm) bit for bit");
    CHECK(memcmp(mu1, mu2, sizeof mu1) == 0 && memcmp(rs1, rs2, sizeof rs1) == 0, "same statistics");
    int64_t zeros = 0;
    for (int64_t i = 0; i < m * n; ++i) zeros += y2[i] == 0.0f;
    CHECK(zeros > m * n / 4 && zeros < 3 * m * n / 4, "%lld of %lld outputs cut", (long long)zeros, (long long)(m * n));
    free(x), free(y1), free(y2);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_softmax_forward);
    RUN_TEST(test_layernorm_relu);
    RUN_TEST(test_norm_forward);
    vp_backend_free(g_b);
    return vpt_finish();
}
