/* GPU parity of vp_gemm: cuBLASLt against the CPU (OpenBLAS / widened bf16 loops) on
 * fresh random inputs, every transpose pair, odd shapes, strided and broadcast batches,
 * alpha / beta, the bias and bias+ReLU epilogues, and beta == 0 over a NaN-poisoned C.
 * Tolerances (norm-wise relative): FP32 1e-5, TF32 1e-3, BF16 operands 1e-2. */
#include "gpu_twin.h"

static const char* PREC_NAME[VP_PREC_COUNT] = {"fp32", "tf32", "bf16"};
static const double PREC_TOL[VP_PREC_COUNT] = {1e-5, 1e-3, 1e-2};

/* Runs one descriptor on both backends and compares C. A and B get fresh numbers; C is
 * poisoned with NaN when beta == 0 (it must not be read), else random on both sides. */
static void gemm_case(const vp_gemm_desc* d, const char* note) {
    const vp_dtype ab = d->precision == VP_PREC_BF16 ? VP_BF16 : VP_F32;
    const int64_t span_a = (d->batch - 1) * d->stride_a + d->m * d->k;
    const int64_t span_b = (d->batch - 1) * d->stride_b + d->k * d->n;
    const int64_t span_c = (d->batch - 1) * d->stride_c + d->m * d->n;
    const int64_t span_bias = d->stride_bias > 0 ? (d->batch - 1) * d->stride_bias + d->n : d->n;
    twin A, B, C, bias;
    twin_1d(&A, ab, span_a), twin_1d(&B, ab, span_b), twin_1d(&C, VP_F32, span_c);
    twin_1d(&bias, VP_F32, span_bias);
    twin_rand(&A, -1.0f, 1.0f), twin_rand(&B, -1.0f, 1.0f), twin_rand(&bias, -1.0f, 1.0f);
    if (d->beta == 0.0f) twin_poison(&C);
    else twin_rand(&C, -1.0f, 1.0f);
    CHECK_OK(vp_gemm(g_cpu, d, &A.h, &B.h, &bias.h, &C.h));
    CHECK_OK(vp_gemm(g_gpu, d, &A.d, &B.d, &bias.d, &C.d));
    char op[32], cas[96];
    snprintf(op, sizeof op, "gemm %s", PREC_NAME[d->precision]);
    snprintf(cas, sizeof cas, "%c%c m%lld n%lld k%lld b%lld %s", d->trans_a ? 'T' : 'N', d->trans_b ? 'T' : 'N',
             (long long)d->m, (long long)d->n, (long long)d->k, (long long)d->batch, note);
    /* gaps between strided batches of C are never written: NaN there on both sides is
     * right (the CPU writes every element outside the gaps, so a NaN pair is a gap) */
    const int gaps = d->batch > 1 && d->stride_c > d->m * d->n && d->beta == 0.0f;
    twin_check_ex(op, cas, &C, PREC_TOL[d->precision], gaps);
    twin_free(&A), twin_free(&B), twin_free(&C), twin_free(&bias);
}

/* Every precision x transpose pair over odd and layer-like shapes, plain. */
static void test_gemm_shapes(void) {
    static const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {65, 129, 257}, {300, 548, 256}, {1000, 51, 128}};
    for (int p = 0; p < VP_PREC_COUNT; ++p)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s)
            for (int t = 0; t < 4; ++t) {
                vp_gemm_desc d = vp_gemm_plain(t & 1, (t >> 1) & 1, shapes[s][0], shapes[s][1], shapes[s][2]);
                d.precision = (vp_precision)p;
                gemm_case(&d, "");
            }
}

/* A linear layer: forward, dX and dW, TF32 at the learner's batch of 8192 and BF16 at
 * 1024 rows (its CPU reference is a plain loop). */
static void test_gemm_layer(void) {
    const int64_t in = 256, out = 548;
    for (int p = VP_PREC_TF32; p <= VP_PREC_BF16; ++p) {
        const int64_t B = p == VP_PREC_TF32 ? 8192 : 1024;
        vp_gemm_desc fwd = vp_gemm_plain(0, 1, B, out, in); /* y = x W^T */
        vp_gemm_desc dx = vp_gemm_plain(0, 0, B, in, out);  /* dX = dY W */
        vp_gemm_desc dw = vp_gemm_plain(1, 0, out, in, B);  /* dW = dY^T X */
        fwd.precision = dx.precision = dw.precision = (vp_precision)p;
        fwd.epilogue = VP_EPI_BIAS_RELU;
        gemm_case(&fwd, "linear fwd +bias relu");
        gemm_case(&dx, "linear dX");
        gemm_case(&dw, "linear dW");
    }
}

/* alpha, beta, epilogues and batches. */
static void test_gemm_options(void) {
    for (int p = 0; p < VP_PREC_COUNT; ++p) {
        for (int e = 0; e < VP_EPI_COUNT; ++e) {
            for (int t = 0; t < 4; ++t) {
                vp_gemm_desc d = vp_gemm_plain(t & 1, (t >> 1) & 1, 37, 45, 29);
                d.precision = (vp_precision)p;
                d.epilogue = (vp_epilogue)e;
                d.alpha = 0.75f;
                d.beta = -1.25f;
                gemm_case(&d, e == VP_EPI_NONE ? "alpha beta" : e == VP_EPI_BIAS ? "alpha beta +bias" : "alpha beta +bias relu");
                d.beta = 0.0f;
                gemm_case(&d, e == VP_EPI_NONE ? "beta=0 over NaN C" : "beta=0 NaN C, epilogue");
            }
        }
        /* strided batches with gaps, and a broadcast B (stride 0) */
        vp_gemm_desc d = vp_gemm_plain(0, 1, 33, 17, 40);
        d.precision = (vp_precision)p;
        d.batch = 5;
        d.stride_a = 33 * 40 + 8;
        d.stride_b = 17 * 40 + 4;
        d.stride_c = 33 * 17 + 12;
        gemm_case(&d, "strided batch with gaps");
        d.stride_b = 0;
        d.epilogue = VP_EPI_BIAS;
        d.beta = 0.5f;
        gemm_case(&d, "batch, B broadcast, +bias, beta");
        /* a layer pair sharing its input: A broadcast, each batch its own weights and bias
         * (the C51 hidden layers, model_forward.c) */
        d = vp_gemm_plain(0, 1, 300, 128, 256);
        d.precision = (vp_precision)p;
        d.batch = 2;
        d.stride_a = 0;
        d.stride_b = 128 * 256 + 128 + 51 * 128 + 51;
        d.stride_bias = d.stride_b;
        d.stride_c = 300 * 128 + 64;
        d.epilogue = VP_EPI_BIAS_RELU;
        gemm_case(&d, "batch, A broadcast, bias per batch, relu");
        d = vp_gemm_plain(1, 0, 64, 13, 32);
        d.precision = (vp_precision)p;
        d.batch = 13;
        d.stride_a = 64 * 32;
        d.stride_b = 32 * 13;
        d.stride_c = 64 * 13;
        gemm_case(&d, "packed batch");
    }
}

/* Misaligned operands (views one element in) take an algorithm that allows them. */
static void test_gemm_misaligned(void) {
    for (int p = 0; p < VP_PREC_COUNT; ++p) {
        const int64_t m = 31, n = 47, k = 33;
        const vp_dtype ab = p == VP_PREC_BF16 ? VP_BF16 : VP_F32;
        const size_t es = vp_dtype_size(ab);
        twin A, B, C;
        twin_1d(&A, ab, m * k + 1), twin_1d(&B, ab, k * n + 1), twin_1d(&C, VP_F32, m * n + 1);
        twin_rand(&A, -1.0f, 1.0f), twin_rand(&B, -1.0f, 1.0f);
        twin_poison(&C);
        vp_gemm_desc d = vp_gemm_plain(0, 0, m, n, k);
        d.precision = (vp_precision)p;
        vp_tensor ah = vp_tensor_1d((char*)A.h.data + es, ab, VP_MEM_HOST, m * k);
        vp_tensor ad = vp_tensor_1d((char*)A.d.data + es, ab, VP_MEM_DEVICE, m * k);
        vp_tensor bh = vp_tensor_1d((char*)B.h.data + es, ab, VP_MEM_HOST, k * n);
        vp_tensor bd = vp_tensor_1d((char*)B.d.data + es, ab, VP_MEM_DEVICE, k * n);
        vp_tensor ch = vp_tensor_1d((float*)C.h.data + 1, VP_F32, VP_MEM_HOST, m * n);
        vp_tensor cd = vp_tensor_1d((float*)C.d.data + 1, VP_F32, VP_MEM_DEVICE, m * n);
        CHECK_OK(vp_gemm(g_cpu, &d, &ah, &bh, NULL, &ch));
        CHECK_OK(vp_gemm(g_gpu, &d, &ad, &bd, NULL, &cd));
        /* element 0 of C stays the NaN poison on both sides: compare the rest */
        ((float*)C.h.data)[0] = 0.0f;
        CHECK_OK(vp_upload(g_gpu, &C.d, C.h.data, 4));
        char op[32];
        snprintf(op, sizeof op, "gemm %s", PREC_NAME[p]);
        twin_check(op, "NN m31 n47 k33, operands offset 1 element", &C, PREC_TOL[p]);
        twin_free(&A), twin_free(&B), twin_free(&C);
    }
}

int main(void) {
    gpu_setup("test_gpu_gemm");
    RUN_TEST(test_gemm_shapes);
    RUN_TEST(test_gemm_layer);
    RUN_TEST(test_gemm_options);
    RUN_TEST(test_gemm_misaligned);
    gpu_teardown();
    return vpt_finish();
}
