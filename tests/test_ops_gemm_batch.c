/* Batch-size independence of the CPU GEMM: with A not transposed, every row of C must have
 * the same bits whether the product has 1 row, a few, or many beside it, whatever BLAS
 * kernel the library picks for the shape (OPENBLAS_CORETYPE, thread count). The shapes are
 * those of the network's layers, and odd ones. */
#include "backend/cpu/cpu_impl.h"
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* C rows [r0, r0 + rows) of A [m, k] B (B [k, n], or [n, k] with trans_b) with epilogue epi. */
static void gemm_rows(const float* A, const float* B, const float* bias, int64_t r0, int64_t rows, int64_t n,
                      int64_t k, int trans_b, vp_epilogue epi, float* C) {
    vp_gemm_desc d = vp_gemm_plain(0, trans_b, rows, n, k);
    d.epilogue = epi;
    d.precision = VP_PREC_FP32;
    vp_tensor ta = vp_tensor_2d((void*)(A + r0 * k), VP_F32, VP_MEM_HOST, rows, k);
    vp_tensor tb = trans_b ? vp_tensor_2d((void*)B, VP_F32, VP_MEM_HOST, n, k)
                           : vp_tensor_2d((void*)B, VP_F32, VP_MEM_HOST, k, n);
    vp_tensor tbias = vp_tensor_1d((void*)bias, VP_F32, VP_MEM_HOST, n);
    vp_tensor tc = vp_tensor_2d(C, VP_F32, VP_MEM_HOST, rows, n);
    CHECK_OK(vp_gemm(g_b, &d, &ta, &tb, epi == VP_EPI_NONE ? NULL : &tbias, &tc));
}

/* Every row of a many-row product equals the same row computed in calls of other sizes. */
static void check_shape(int64_t n, int64_t k, int trans_b, vp_epilogue epi) {
    const int64_t m = 203;
    float* A = (float*)malloc(sizeof(float) * (size_t)(m * k));
    float* B = (float*)malloc(sizeof(float) * (size_t)(k * n));
    float* bias = (float*)malloc(sizeof(float) * (size_t)n);
    float* full = ref_nan_buffer(m * n);
    float* part = ref_nan_buffer(m * n);
    ref_fill_uniform(A, m * k, 7, 1, -1.0f, 1.0f);
    ref_fill_uniform(B, k * n, 7, 2, -0.5f, 0.5f);
    ref_fill_uniform(bias, n, 7, 3, -0.1f, 0.1f);
    gemm_rows(A, B, bias, 0, m, n, k, trans_b, epi, full);
    // calls of 1, 2, 5, 63, 64, 65 and 130 rows at several offsets
    static const int64_t sizes[] = {1, 2, 5, 63, 64, 65, 130};
    int64_t bad_rows = 0, calls = 0;
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; ++si) {
        for (int64_t r0 = 0; r0 + sizes[si] <= m; r0 += sizes[si] * 3 + 1) {
            gemm_rows(A, B, bias, r0, sizes[si], n, k, trans_b, epi, part);
            calls++;
            for (int64_t i = 0; i < sizes[si]; ++i)
                bad_rows += memcmp(part + i * n, full + (r0 + i) * n, sizeof(float) * (size_t)n) != 0;
        }
    }
    CHECK(bad_rows == 0, "n %lld k %lld trans_b %d epi %d: %lld rows of %lld calls differ from the 203-row product",
          (long long)n, (long long)k, trans_b, (int)epi, (long long)bad_rows, (long long)calls);
    free(A), free(B), free(bias), free(full), free(part);
}

static void test_layer_shapes(void) {
    // trunk, Mamba in/out projections, heads (default and the small example network), odd shapes
    static const int64_t shapes[][2] = {{256, 32}, {548, 256}, {256, 256}, {128, 264}, {51, 128}, {663, 128},
                                        {64, 32},  {164, 64},  {64, 64},   {32, 72},   {13, 7},   {1, 1}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; ++i) {
        check_shape(shapes[i][0], shapes[i][1], 1, VP_EPI_BIAS_RELU);
        check_shape(shapes[i][0], shapes[i][1], 0, VP_EPI_NONE);
    }
}

/* The portable build of the row-exact kernel gives the bits of the vectorised one. */
static void test_isa_builds_agree(void) {
    const int64_t m = 37, n = 77, k = 131;
    float* A = (float*)malloc(sizeof(float) * (size_t)(m * k));
    float* B = (float*)malloc(sizeof(float) * (size_t)(k * n));
    float* bias = (float*)malloc(sizeof(float) * (size_t)n);
    float* fast = ref_nan_buffer(m * n);
    float* slow = ref_nan_buffer(m * n);
    ref_fill_uniform(A, m * k, 9, 1, -1.0f, 1.0f);
    ref_fill_uniform(B, k * n, 9, 2, -0.5f, 0.5f);
    ref_fill_uniform(bias, n, 9, 3, -0.1f, 0.1f);
    for (int tb = 0; tb < 2; ++tb) {
        gemm_rows(A, B, bias, 0, m, n, k, tb, VP_EPI_BIAS, fast);
        vp_cpu_gemm_force_portable(1);
        gemm_rows(A, B, bias, 0, m, n, k, tb, VP_EPI_BIAS, slow);
        vp_cpu_gemm_force_portable(0);
        CHECK(memcmp(fast, slow, sizeof(float) * (size_t)(m * n)) == 0,
              "trans_b %d: the portable kernel's bits differ from the vectorised one's", tb);
    }
    free(A), free(B), free(bias), free(fast), free(slow);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_layer_shapes);
    RUN_TEST(test_isa_builds_agree);
    vp_backend_free(g_b);
    return vpt_finish();
}
