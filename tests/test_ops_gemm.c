/* GEMM on the CPU backend against a double loop: every transpose pair, odd shapes,
 * alpha/beta, strided batches (A or B broadcast with stride 0, a bias per batch), each
 * epilogue, BF16 operands,
 * beta == 0 never reading C, and bit-identical repeats. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* One GEMM case. */
typedef struct gemm_case {
    int ta, tb;
    int64_t m, n, k, batch;
    int64_t pad_a, pad_b, pad_c; /* extra elements between batches */
    int bcast_b;                 /* stride_b = 0 */
    float alpha, beta;
    vp_epilogue epi;
    vp_precision prec;
    int bcast_a;         /* stride_a = 0 */
    int64_t stride_bias; /* elements between the batches' biases (0: one bias) */
} gemm_case;

/* Runs a case and checks every element against the double reference with the rigorous
 * dot-product bound (k + 4) * 2^-23 * sum|terms| (FP32 accumulation of k products). */
static void run_case(const gemm_case* c, uint64_t seed) {
    const int64_t sa = c->bcast_a ? 0 : c->m * c->k + c->pad_a, sb = c->bcast_b ? 0 : c->k * c->n + c->pad_b;
    const int64_t sc = c->m * c->n + c->pad_c;
    const int64_t na = (c->batch - 1) * sa + c->m * c->k, nb = (c->batch - 1) * sb + c->k * c->n;
    const int64_t nc = (c->batch - 1) * sc + c->m * c->n;
    float* A = malloc((size_t)na * 4);
    float* B = malloc((size_t)nb * 4);
    float* C0 = malloc((size_t)nc * 4);
    const int64_t nbias = c->stride_bias > 0 ? (c->batch - 1) * c->stride_bias + c->n : c->n;
    float* bias = malloc((size_t)nbias * 4);
    ref_fill_uniform(A, na, seed, 1, -1.0f, 1.0f);
    ref_fill_uniform(B, nb, seed, 2, -1.0f, 1.0f);
    ref_fill_uniform(bias, nbias, seed, 4, -0.5f, 0.5f);
    /* C starts random, or all NaN when beta == 0 (it must not be read) */
    if (c->beta != 0.0f) {
        ref_fill_uniform(C0, nc, seed, 3, -1.0f, 1.0f);
    } else {
        for (int64_t i = 0; i < nc; ++i) C0[i] = NAN;
    }
    float* C = malloc((size_t)nc * 4);
    memcpy(C, C0, (size_t)nc * 4);
    /* operands as the op sees them: f32, or rounded to bf16 */
    double* Ad = ref_dbuf(na);
    double* Bd = ref_dbuf(nb);
    uint16_t* Ah = malloc((size_t)na * 2);
    uint16_t* Bh = malloc((size_t)nb * 2);
    for (int64_t i = 0; i < na; ++i) {
        Ah[i] = ref_f32_to_bf16(A[i]);
        Ad[i] = c->prec == VP_PREC_BF16 ? ref_bf16_to_f32(Ah[i]) : A[i];
    }
    for (int64_t i = 0; i < nb; ++i) {
        Bh[i] = ref_f32_to_bf16(B[i]);
        Bd[i] = c->prec == VP_PREC_BF16 ? ref_bf16_to_f32(Bh[i]) : B[i];
    }
    vp_dtype ab = c->prec == VP_PREC_BF16 ? VP_BF16 : VP_F32;
    vp_tensor tA = vp_tensor_1d(c->prec == VP_PREC_BF16 ? (void*)Ah : (void*)A, ab, VP_MEM_HOST, na);
    vp_tensor tB = vp_tensor_1d(c->prec == VP_PREC_BF16 ? (void*)Bh : (void*)B, ab, VP_MEM_HOST, nb);
    vp_tensor tC = vp_tensor_1d(C, VP_F32, VP_MEM_HOST, nc);
    vp_tensor tbias = vp_tensor_1d(bias, VP_F32, VP_MEM_HOST, nbias);
    vp_gemm_desc d = vp_gemm_plain(c->ta, c->tb, c->m, c->n, c->k);
    d.batch = c->batch;
    d.stride_a = sa;
    d.stride_b = sb;
    d.stride_c = sc;
    d.stride_bias = c->stride_bias;
    d.alpha = c->alpha;
    d.beta = c->beta;
    d.epilogue = c->epi;
    d.precision = c->prec;
    CHECK_OK(vp_gemm(g_b, &d, &tA, &tB, c->epi != VP_EPI_NONE ? &tbias : NULL, &tC));
    /* every batch against the reference; padding between batches untouched */
    double* ref = ref_dbuf(c->m * c->n);
    double* sc_ = ref_dbuf(c->m * c->n);
    int bad = 0;
    for (int64_t bi = 0; bi < c->batch && !bad; ++bi) {
        ref_gemm_one(c->ta, c->tb, c->m, c->n, c->k, c->alpha, Ad + bi * sa, Bd + bi * sb, c->beta, C0 + bi * sc,
                     c->epi, bias + bi * c->stride_bias, ref, sc_);
        for (int64_t i = 0; i < c->m * c->n && !bad; ++i) {
            double got = C[bi * sc + i];
            double tol = (double)(c->k + 4) * 0x1p-23 * sc_[i] + 1e-30;
            if (isnan(got) || fabs(got - ref[i]) > tol) {
                bad = 1;
                CHECK(0, "ta=%d tb=%d m=%lld n=%lld k=%lld batch %lld elem %lld: got %.9g ref %.9g tol %.3g", c->ta,
                      c->tb, (long long)c->m, (long long)c->n, (long long)c->k, (long long)bi, (long long)i, got,
                      ref[i], tol);
            }
        }
        for (int64_t i = c->m * c->n; i < sc && bi + 1 < c->batch; ++i) {
            int same = (isnan(C0[bi * sc + i]) && isnan(C[bi * sc + i])) || C0[bi * sc + i] == C[bi * sc + i];
            CHECK(same, "padding element %lld of batch %lld was written", (long long)i, (long long)bi);
        }
    }
    free(ref);
    free(sc_);
    free(A);
    free(B);
    free(C0);
    free(C);
    free(bias);
    free(Ad);
    free(Bd);
    free(Ah);
    free(Bh);
}

static const int64_t SHAPES[][3] = {{1, 1, 1}, {3, 7, 5}, {33, 65, 17}, {129, 257, 65}, {2, 1, 300}};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

static gemm_case base_case(int ta, int tb, const int64_t* s) {
    gemm_case c = {ta, tb, s[0], s[1], s[2], 1, 0, 0, 0, 0, 1.0f, 0.0f, VP_EPI_NONE, VP_PREC_FP32, 0, 0};
    return c;
}

static void test_gemm_transposes_shapes(void) {
    for (int t = 0; t < 4; ++t)
        for (int s = 0; s < N_SHAPES; ++s) {
            gemm_case c = base_case(t & 1, t >> 1, SHAPES[s]);
            run_case(&c, 100 + (uint64_t)(t * 10 + s));
            c.prec = VP_PREC_TF32; /* full FP32 on the CPU: same bound */
            run_case(&c, 200 + (uint64_t)(t * 10 + s));
        }
}

static void test_gemm_alpha_beta(void) {
    for (int t = 0; t < 4; ++t) {
        gemm_case c = base_case(t & 1, t >> 1, SHAPES[2]);
        c.alpha = 0.5f;
        c.beta = -1.5f;
        run_case(&c, 300 + (uint64_t)t);
        c.alpha = -2.0f;
        c.beta = 1.0f;
        run_case(&c, 310 + (uint64_t)t);
    }
}

static void test_gemm_epilogues(void) {
    for (int t = 0; t < 4; ++t)
        for (int e = VP_EPI_BIAS; e < VP_EPI_COUNT; ++e) {
            gemm_case c = base_case(t & 1, t >> 1, SHAPES[3]);
            c.epi = (vp_epilogue)e;
            run_case(&c, 400 + (uint64_t)(t * 10 + e));
            c.beta = 0.75f;
            run_case(&c, 450 + (uint64_t)(t * 10 + e));
        }
    /* relu really clamps: C = A I^T + bias with bias [-100, 0.5] zeroes column 0 */
    float a[6] = {1, 2, 3, 4, 5, 6}, eye[4] = {1, 0, 0, 1}, bias[2] = {-100.0f, 0.5f}, c[6];
    vp_tensor tA = vp_tensor_2d(a, VP_F32, VP_MEM_HOST, 3, 2), tB = vp_tensor_2d(eye, VP_F32, VP_MEM_HOST, 2, 2);
    vp_tensor tbias = vp_tensor_1d(bias, VP_F32, VP_MEM_HOST, 2), tC = vp_tensor_2d(c, VP_F32, VP_MEM_HOST, 3, 2);
    vp_gemm_desc d = vp_gemm_plain(0, 1, 3, 2, 2);
    d.epilogue = VP_EPI_BIAS_RELU;
    CHECK_OK(vp_gemm(g_b, &d, &tA, &tB, &tbias, &tC));
    for (int i = 0; i < 3; ++i) {
        CHECK(c[2 * i] == 0.0f, "relu of row %d col 0 = %g", i, c[2 * i]);
        CHECK(c[2 * i + 1] == a[2 * i + 1] + 0.5f, "row %d col 1 = %g", i, c[2 * i + 1]);
    }
}

static void test_gemm_strided_batches(void) {
    for (int t = 0; t < 4; ++t) {
        gemm_case c = base_case(t & 1, t >> 1, SHAPES[2]);
        c.batch = 3;
        c.pad_a = 5;
        c.pad_b = 3;
        c.pad_c = 7;
        run_case(&c, 500 + (uint64_t)t);
        /* B shared by every batch (stride 0), with bias and beta */
        c.bcast_b = 1;
        c.beta = 0.5f;
        c.epi = VP_EPI_BIAS;
        run_case(&c, 510 + (uint64_t)t);
        /* A shared by every batch, each batch its own bias (two layers on one input) */
        c.bcast_b = 0;
        c.bcast_a = 1;
        c.beta = 0.0f;
        c.epi = VP_EPI_BIAS_RELU;
        c.stride_bias = c.n + 9;
        run_case(&c, 530 + (uint64_t)t);
    }
    gemm_case one = base_case(0, 1, SHAPES[0]);
    one.batch = 5;
    run_case(&one, 520);
}

static void test_gemm_bf16(void) {
    for (int t = 0; t < 4; ++t)
        for (int s = 0; s < N_SHAPES; ++s) {
            gemm_case c = base_case(t & 1, t >> 1, SHAPES[s]);
            c.prec = VP_PREC_BF16;
            run_case(&c, 600 + (uint64_t)(t * 10 + s));
        }
    gemm_case c = base_case(1, 0, SHAPES[2]);
    c.prec = VP_PREC_BF16;
    c.batch = 2;
    c.bcast_b = 1;
    c.beta = 2.0f;
    c.alpha = 0.25f;
    c.epi = VP_EPI_BIAS_RELU;
    run_case(&c, 650);
}

/* Same inputs, same bits: a multi-threaded size twice. */
static void test_gemm_deterministic(void) {
    const int64_t m = 257, n = 190, k = 333;
    float* A = malloc((size_t)(m * k) * 4);
    float* B = malloc((size_t)(k * n) * 4);
    float* C1 = malloc((size_t)(m * n) * 4);
    float* C2 = malloc((size_t)(m * n) * 4);
    ref_fill_uniform(A, m * k, 7, 1, -1, 1);
    ref_fill_uniform(B, k * n, 7, 2, -1, 1);
    vp_tensor tA = vp_tensor_2d(A, VP_F32, VP_MEM_HOST, m, k), tB = vp_tensor_2d(B, VP_F32, VP_MEM_HOST, n, k);
    vp_tensor t1 = vp_tensor_2d(C1, VP_F32, VP_MEM_HOST, m, n), t2 = vp_tensor_2d(C2, VP_F32, VP_MEM_HOST, m, n);
    vp_gemm_desc d = vp_gemm_plain(0, 1, m, n, k);
    CHECK_OK(vp_gemm(g_b, &d, &tA, &tB, NULL, &t1));
    CHECK_OK(vp_gemm(g_b, &d, &tA, &tB, NULL, &t2));
    CHECK(memcmp(C1, C2, (size_t)(m * n) * 4) == 0, "two identical GEMMs differ in their bits");
    free(A);
    free(B);
    free(C1);
    free(C2);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_gemm_transposes_shapes);
    RUN_TEST(test_gemm_alpha_beta);
    RUN_TEST(test_gemm_epilogues);
    RUN_TEST(test_gemm_strided_batches);
    RUN_TEST(test_gemm_bf16);
    RUN_TEST(test_gemm_deterministic);
    vp_backend_free(g_b);
    return vpt_finish();
}
