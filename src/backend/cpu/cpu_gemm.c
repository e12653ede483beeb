/* GEMM on the CPU: cblas_sgemm per batch (row-major), then the epilogue. FP32 and TF32
 * both run in full FP32. BF16 operands are widened to float in a plain loop: a
 * correctness reference, not a fast path. */
#include <cblas.h>

#include "cpu_impl.h"

/* Element (r, c) of op(X) for a bf16 matrix stored [rows, cols] or transposed. */
static inline float bf16_at(const uint16_t* x, int trans, int64_t ld, int64_t r, int64_t c) {
    return vp_cpu_bf16_to_f32(trans ? x[c * ld + r] : x[r * ld + c]);
}

/* One product C = alpha * op(A) op(B) + beta * C with bf16 A [m, k] and B [k, n] (FP32
 * accumulation); with beta == 0, C is not read. */
static void gemm_bf16_one(const vp_gemm_desc* d, const uint16_t* A, const uint16_t* B,
                          float* C) {
    const int64_t m = d->m, n = d->n, k = d->k;
    const int64_t lda = d->trans_a ? m : k, ldb = d->trans_b ? k : n;
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            float acc = 0.0f;
            for (int64_t p = 0; p < k; ++p)
                acc += bf16_at(A, d->trans_a, lda, i, p) * bf16_at(B, d->trans_b, ldb, p, j);
            float prev = d->beta != 0.0f ? d->beta * C[i * n + j] : 0.0f;
            C[i * n + j] = d->alpha * acc + prev;
        }
    }
}

/* C[i, j] = epi(C[i, j] + bias[j]) over one [m, n] product. */
static void apply_epilogue(vp_epilogue epi, const float* bias, int64_t m, int64_t n, float* C) {
    if (epi == VP_EPI_NONE) return;
    for (int64_t i = 0; i < m; ++i) {
        float* row = C + i * n;
        for (int64_t j = 0; j < n; ++j) {
            float v = row[j] + bias[j];
            /* relu keeps a NaN a NaN */
            row[j] = (epi == VP_EPI_BIAS_RELU && v < 0.0f) ? 0.0f : v;
        }
    }
}

vp_status vp_cpu_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                      const vp_tensor* bias, vp_tensor* C) {
    (void)b;
    const int64_t m = d->m, n = d->n, k = d->k;
    VP_REQUIRE(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX, VP_ERR_SHAPE,
               "vp_gemm: m=%lld n=%lld k=%lld exceed the CPU BLAS's int range", (long long)m, (long long)n,
               (long long)k);
    float* c = (float*)C->data;                                  /* [batch, m, n] at stride_c */
    const float* bv = (const float*)(bias ? bias->data : NULL); /* [n] */
    for (int64_t i = 0; i < d->batch; ++i) {
        float* ci = c + i * d->stride_c;
        if (d->precision == VP_PREC_BF16) {
            /* bf16 operands: widened on the fly */
            const uint16_t* a = (const uint16_t*)A->data + i * d->stride_a; /* [m, k] or [k, m] */
            const uint16_t* bb = (const uint16_t*)B->data + i * d->stride_b; /* [k, n] or [n, k] */
            gemm_bf16_one(d, a, bb, ci);
        } else {
            /* f32 operands: one sgemm; beta == 0 makes BLAS write C without reading it */
            const float* a = (const float*)A->data + i * d->stride_a;
            const float* bb = (const float*)B->data + i * d->stride_b;
            cblas_sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,
                        d->trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, d->alpha, a,
                        (int)(d->trans_a ? m : k), bb, (int)(d->trans_b ? k : n), d->beta, ci, (int)n);
        }
        apply_epilogue(d->epilogue, bv, m, n, ci);
    }
    return VP_OK;
}
