/* GEMM on the CPU: cblas_sgemm per batch (row-major), then the epilogue. FP32 and TF32
 * both run in full FP32. BF16 operands are widened to float in a plain loop: a
 * correctness reference, not a fast path.
 *
 * A row of C = op(A) op(B) with A not transposed depends on one row of A only, and its
 * bits must not depend on how many rows the call has: a window of a rollout gives the same
 * result alone or beside others, on every machine. BLAS libraries do not promise that
 * (OpenBLAS turns a one-row product into a GEMV, and its kernels treat rows differently by
 * their position in a register tile: on Haswell-class kernels rows 0-5 and 6-11 of a tile
 * round differently). Such products therefore run through the kernel below: every element
 * is sum_p a[i,p] b[p,j] accumulated in order of p from 0 by correctly rounded fused
 * multiply-adds, vectorised across columns only. The bits are the same for any row count,
 * row offset, thread count, BLAS kernel or instruction set.
 * Products with A transposed (weight gradients, where rows are not samples) use BLAS. */
#include <cblas.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

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

/* A growable scratch block per thread for B laid out [k, n] (grown to the largest shape a
 * thread meets, then reused; freed when the thread ends). */
typedef struct scratch_block {
    size_t n;   /* floats held */
    float* p;   /* [n] */
} scratch_block;

static pthread_key_t g_scratch_key;
static pthread_once_t g_scratch_once = PTHREAD_ONCE_INIT;

static void scratch_free(void* v) {
    scratch_block* s = (scratch_block*)v;
    if (s) free(s->p);
    free(s);
}

static void scratch_key_make(void) { (void)pthread_key_create(&g_scratch_key, scratch_free); }

/* This thread's scratch of at least n floats, or NULL when out of memory. */
static float* scratch(size_t n) {
    (void)pthread_once(&g_scratch_once, scratch_key_make);
    scratch_block* s = (scratch_block*)pthread_getspecific(g_scratch_key);
    if (!s) {
        s = (scratch_block*)calloc(1, sizeof *s);
        if (!s || pthread_setspecific(g_scratch_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    if (n <= s->n) return s->p;
    float* p = (float*)realloc(s->p, n * sizeof(float));
    if (!p) return NULL;
    s->p = p;
    s->n = n;
    return p;
}

/* Register tile of the row-exact kernel: TR rows x TC columns. */
#define TR 4
#define TC 32

/* The row-exact kernel: acc = A [m, k] Bp [k, n] with every element accumulated as
 * acc = fmaf(a[i,p], b[p,j], acc) for p = 0 .. k-1 from 0 (one correctly rounded fused
 * multiply-add per term, the same bits in hardware and in libm), then C = alpha acc + beta C.
 * Full TR x TC tiles keep their accumulators in registers, vectorised across columns; the
 * edges run the same per-element arithmetic, so an element's bits depend on neither the
 * tile it falls in nor the instruction set. */
#define VP_EXACT_TILES_BODY                                                                       \
    for (int64_t i0 = 0; i0 < m; i0 += TR) {                                                      \
        const int64_t rows = m - i0 < TR ? m - i0 : TR;                                           \
        for (int64_t j0 = 0; j0 < n; j0 += TC) {                                                  \
            const int64_t cols = n - j0 < TC ? n - j0 : TC;                                       \
            float acc[TR][TC];                                                                    \
            if (rows == TR && cols == TC) {                                                       \
                float c0[TC], c1[TC], c2[TC], c3[TC];                                             \
                for (int c = 0; c < TC; ++c) c0[c] = c1[c] = c2[c] = c3[c] = 0.0f;                 \
                const float *a0 = A + i0 * k, *a1 = a0 + k, *a2 = a1 + k, *a3 = a2 + k;           \
                for (int64_t p = 0; p < k; ++p) {                                                 \
                    const float* b = Bp + p * n + j0;                                             \
                    const float x0 = a0[p], x1 = a1[p], x2 = a2[p], x3 = a3[p];                   \
                    for (int c = 0; c < TC; ++c) {                                                \
                        c0[c] = fmaf(x0, b[c], c0[c]);                                            \
                        c1[c] = fmaf(x1, b[c], c1[c]);                                            \
                        c2[c] = fmaf(x2, b[c], c2[c]);                                            \
                        c3[c] = fmaf(x3, b[c], c3[c]);                                            \
                    }                                                                             \
                }                                                                                 \
                memcpy(acc[0], c0, sizeof c0);                                                    \
                memcpy(acc[1], c1, sizeof c1);                                                    \
                memcpy(acc[2], c2, sizeof c2);                                                    \
                memcpy(acc[3], c3, sizeof c3);                                                    \
            } else {                                                                              \
                for (int64_t r = 0; r < rows; ++r)                                                \
                    for (int64_t c = 0; c < cols; ++c) acc[r][c] = 0.0f;                          \
                for (int64_t p = 0; p < k; ++p) {                                                 \
                    const float* b = Bp + p * n + j0;                                             \
                    for (int64_t r = 0; r < rows; ++r) {                                          \
                        const float x = A[(i0 + r) * k + p];                                      \
                        for (int64_t c = 0; c < cols; ++c) acc[r][c] = fmaf(x, b[c], acc[r][c]);  \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
            /* C = alpha acc + beta C (C not read when beta is 0) */                              \
            for (int64_t r = 0; r < rows; ++r) {                                                  \
                float* cr = C + (i0 + r) * n + j0;                                                \
                for (int64_t c = 0; c < cols; ++c) {                                              \
                    float v = alpha == 1.0f ? acc[r][c] : alpha * acc[r][c];                      \
                    cr[c] = beta != 0.0f ? v + beta * cr[c] : v;                                  \
                }                                                                                 \
            }                                                                                     \
        }                                                                                         \
    }

#define VP_EXACT_TILES_ARGS                                                                       \
    (int64_t m, int64_t n, int64_t k, const float* A /* [m, k] */, const float* Bp /* [k, n] */, \
     float alpha, float beta, float* C /* [m, n] */)

/* The portable build of the kernel (fmaf from libm where the processor has no FMA). */
static void exact_tiles_portable VP_EXACT_TILES_ARGS { VP_EXACT_TILES_BODY }

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
/* The same source for processors with AVX-512 and with AVX2, each with FMA. */
__attribute__((target("avx512f,fma"))) static void exact_tiles_avx512 VP_EXACT_TILES_ARGS { VP_EXACT_TILES_BODY }
__attribute__((target("avx2,fma"))) static void exact_tiles_avx2 VP_EXACT_TILES_ARGS { VP_EXACT_TILES_BODY }
#endif

/* Set by vp_cpu_gemm_force_portable (tests). */
static int g_force_portable = 0;

void vp_cpu_gemm_force_portable(int on) { g_force_portable = on != 0; }

/* The build of the kernel this processor runs best (every build gives the same bits). */
static void exact_tiles VP_EXACT_TILES_ARGS {
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
    if (g_force_portable) {
        exact_tiles_portable(m, n, k, A, Bp, alpha, beta, C);
        return;
    }
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
        exact_tiles_avx512(m, n, k, A, Bp, alpha, beta, C);
        return;
    }
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        exact_tiles_avx2(m, n, k, A, Bp, alpha, beta, C);
        return;
    }
#endif
    exact_tiles_portable(m, n, k, A, Bp, alpha, beta, C);
}

/* C [m, n] = alpha A [m, k] op(B) + beta C by the row-exact kernel (B laid out [k, n] first
 * when stored transposed). */
static vp_status gemm_rows_exact(const vp_gemm_desc* d, const float* a, const float* bb, float* c) {
    const int64_t n = d->n, k = d->k;
    const float* bp = bb;
    if (d->trans_b) {
        // B is stored [n, k]: lay it out [k, n]
        float* t = scratch((size_t)(n * k));
        VP_REQUIRE(t != NULL, VP_ERR_OOM, "vp_gemm: %lld floats of scratch", (long long)(n * k));
        for (int64_t j = 0; j < n; ++j)
            for (int64_t p = 0; p < k; ++p) t[p * n + j] = bb[j * k + p];
        bp = t;
    }
    exact_tiles(d->m, n, k, a, bp, d->alpha, d->beta, c);
    return VP_OK;
}

vp_status vp_cpu_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                      const vp_tensor* bias, vp_tensor* C) {
    (void)b;
    const int64_t m = d->m, n = d->n, k = d->k;
    VP_REQUIRE(m <= INT32_MAX && n <= INT32_MAX && k <= INT32_MAX, VP_ERR_SHAPE,
               "vp_gemm: m=%lld n=%lld k=%lld exceed the CPU BLAS's int range", (long long)m, (long long)n,
               (long long)k);
    float* c = (float*)C->data;                                  /* [batch, m, n] at stride_c */
    const float* bias0 = (const float*)(bias ? bias->data : NULL); /* [n] at stride_bias */
    for (int64_t i = 0; i < d->batch; ++i) {
        float* ci = c + i * d->stride_c;
        const float* bv = bias0 ? bias0 + i * d->stride_bias : NULL;
        if (d->precision == VP_PREC_BF16) {
            /* bf16 operands: widened on the fly */
            const uint16_t* a = (const uint16_t*)A->data + i * d->stride_a; /* [m, k] or [k, m] */
            const uint16_t* bb = (const uint16_t*)B->data + i * d->stride_b; /* [k, n] or [n, k] */
            gemm_bf16_one(d, a, bb, ci);
        } else {
            /* f32 operands: one sgemm; beta == 0 makes BLAS write C without reading it */
            const float* a = (const float*)A->data + i * d->stride_a;
            const float* bb = (const float*)B->data + i * d->stride_b;
            if (!d->trans_a && k > 0) {
                VP_TRY(gemm_rows_exact(d, a, bb, ci));
                apply_epilogue(d->epilogue, bv, m, n, ci);
                continue;
            }
            cblas_sgemm(CblasRowMajor, d->trans_a ? CblasTrans : CblasNoTrans,
                        d->trans_b ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k, d->alpha, a,
                        (int)(d->trans_a ? m : k), bb, (int)(d->trans_b ? k : n), d->beta, ci, (int)n);
        }
        apply_epilogue(d->epilogue, bv, m, n, ci);
    }
    return VP_OK;
}
