/* CUDA GEMM through cuBLASLt. Row-major C [m, n] = op(A) op(B) is computed as the
 * column-major product C^T = op(B)^T op(A)^T: cuBLASLt's first operand is our B, its
 * second our A, its output [n, m] with leading dimension n. A plan (matmul descriptor,
 * three layouts with strided-batch attributes, and the algorithm the heuristic picks) is
 * made on a descriptor's first use and found again by its key in a fixed table. */
#include <stdlib.h>

#include "gemm.cuh"

/* Everything a plan depends on. Zeroed before filling, so it compares with memcmp. */
typedef struct gemm_key {
    int32_t trans_a, trans_b, epilogue, precision, beta_zero;
    uint32_t align_a, align_b, align_c, align_bias; /* pointer alignment, bytes (<= 256) */
    int64_t m, n, k, batch, stride_a, stride_b, stride_c, stride_bias;
} gemm_key;

typedef struct gemm_plan {
    int used;                      /* slot holds a plan */
    gemm_key key;                  /* what it was made for */
    cublasLtMatmulDesc_t desc;     /* compute type, transposes, epilogue */
    cublasLtMatrixLayout_t lay_b;  /* cuBLASLt's A: our B */
    cublasLtMatrixLayout_t lay_a;  /* cuBLASLt's B: our A */
    cublasLtMatrixLayout_t lay_c;  /* C and D: [n, m] column-major */
    cublasLtMatmulAlgo_t algo;     /* chosen once */
} gemm_plan;

struct vp_cuda_gemm_cache {
    gemm_plan plans[VP_CUDA_GEMM_PLANS]; /* open addressing by key hash */
    int count;                           /* slots used */
};

/* ---- plan table ------------------------------------------------------------------------------ */

vp_status vp_cuda_gemm_cache_create(vp_cuda_gemm_cache** out) {
    *out = (vp_cuda_gemm_cache*)calloc(1, sizeof **out);
    VP_REQUIRE(*out != NULL, VP_ERR_OOM, "vp_cuda_gemm_cache_create: out of host memory");
    return VP_OK;
}

/* Releases the cuBLASLt objects of one plan. */
static void plan_release(gemm_plan* p) {
    if (p->lay_c) cublasLtMatrixLayoutDestroy(p->lay_c);
    if (p->lay_a) cublasLtMatrixLayoutDestroy(p->lay_a);
    if (p->lay_b) cublasLtMatrixLayoutDestroy(p->lay_b);
    if (p->desc) cublasLtMatmulDescDestroy(p->desc);
    memset(p, 0, sizeof *p);
}

void vp_cuda_gemm_cache_free(vp_cuda_gemm_cache* cache) {
    if (!cache) return;
    for (int i = 0; i < VP_CUDA_GEMM_PLANS; ++i)
        if (cache->plans[i].used) plan_release(&cache->plans[i]);
    free(cache);
}

/* FNV-1a over the key's bytes. */
static uint32_t key_hash(const gemm_key* k) {
    const unsigned char* p = (const unsigned char*)k;
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < sizeof *k; ++i) h = (h ^ p[i]) * 16777619u;
    return h;
}

/* Largest power of two <= 256 dividing the address of every batch's matrix. */
static uint32_t align_of(const void* p, int64_t batch, int64_t stride, size_t esize) {
    uint32_t a = 256;
    while (a > 1 && ((uintptr_t)p % a) != 0) a >>= 1;
    if (batch > 1 && stride > 0)
        while (a > 1 && ((uint64_t)stride * esize) % a != 0) a >>= 1;
    return a;
}

/* Column-major layout rows x cols (leading dimension ld) of `type`, batched. */
static vp_status make_layout(cublasLtMatrixLayout_t* l, cudaDataType_t type, int64_t rows, int64_t cols, int64_t ld,
                             int64_t batch, int64_t stride) {
    VP_CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, type, (uint64_t)rows, (uint64_t)cols, ld));
    if (batch > 1) {
        int32_t bc = (int32_t)batch;
        VP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &bc, sizeof bc));
        VP_CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                         sizeof stride));
    }
    return VP_OK;
}

/* Fills plan p for key k: descriptor, layouts, then the heuristic's first algorithm. */
static vp_status plan_make(vp_cuda* c, gemm_plan* p, const gemm_key* k, const void* bias) {
    const int bf16 = k->precision == VP_PREC_BF16;
    const cudaDataType_t tab = bf16 ? CUDA_R_16BF : CUDA_R_32F;
    const cublasComputeType_t ct = k->precision == VP_PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    /* descriptor: cuBLASLt's op(A) is our B^T, its op(B) our A^T */
    VP_CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->desc, ct, CUDA_R_32F));
    const int32_t op_first = k->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
    const int32_t op_second = k->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
    VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSA, &op_first, sizeof op_first));
    VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_TRANSB, &op_second, sizeof op_second));
    if (k->epilogue != VP_EPI_NONE) {
        const uint32_t epi = k->epilogue == VP_EPI_BIAS ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_RELU_BIAS;
        const int32_t bt = CUDA_R_32F;
        VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
        VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt));
        VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias));
        if (k->stride_bias > 0)
            VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE,
                                                           &k->stride_bias, sizeof k->stride_bias));
    }
    /* layouts: B stored [k, n] is column-major [n, k]; stored [n, k] (trans_b) is [k, n] */
    VP_TRY(make_layout(&p->lay_b, tab, k->trans_b ? k->k : k->n, k->trans_b ? k->n : k->k, k->trans_b ? k->k : k->n,
                       k->batch, k->stride_b));
    VP_TRY(make_layout(&p->lay_a, tab, k->trans_a ? k->m : k->k, k->trans_a ? k->k : k->m, k->trans_a ? k->m : k->k,
                       k->batch, k->stride_a));
    VP_TRY(make_layout(&p->lay_c, CUDA_R_32F, k->n, k->m, k->n, k->batch, k->stride_c));
    /* the algorithm, for this workspace and these alignments, picked once */
    cublasLtMatmulPreference_t pref = NULL;
    VP_CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    const uint64_t ws = VP_CUDA_LT_WORKSPACE_BYTES;
    cublasStatus_t s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof ws);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &k->align_b,
                                                 sizeof k->align_b);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &k->align_a,
                                                 sizeof k->align_a);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &k->align_c,
                                                 sizeof k->align_c);
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &k->align_c,
                                                 sizeof k->align_c);
    cublasLtMatmulHeuristicResult_t res;
    memset(&res, 0, sizeof res);
    int found = 0;
    if (s == CUBLAS_STATUS_SUCCESS)
        s = cublasLtMatmulAlgoGetHeuristic(c->lt, p->desc, p->lay_b, p->lay_a, p->lay_c, p->lay_c, pref, 1, &res,
                                           &found);
    cublasLtMatmulPreferenceDestroy(pref);
    VP_CUBLAS_CHECK(s);
    VP_REQUIRE(found > 0, VP_ERR_UNSUPPORTED,
               "cuda gemm: cuBLASLt has no algorithm for m=%lld n=%lld k=%lld batch=%lld trans_a=%d trans_b=%d "
               "precision=%d epilogue=%d",
               (long long)k->m, (long long)k->n, (long long)k->k, (long long)k->batch, k->trans_a, k->trans_b,
               k->precision, k->epilogue);
    p->algo = res.algo;
    return VP_OK;
}

/* Finds the plan for key k, making it on first use. */
static vp_status plan_get(vp_cuda* c, const gemm_key* k, const void* bias, gemm_plan** out) {
    vp_cuda_gemm_cache* t = c->gemm;
    uint32_t h = key_hash(k) % VP_CUDA_GEMM_PLANS;
    for (int probe = 0; probe < VP_CUDA_GEMM_PLANS; ++probe, h = (h + 1) % VP_CUDA_GEMM_PLANS) {
        gemm_plan* p = &t->plans[h];
        if (p->used && memcmp(&p->key, k, sizeof *k) == 0) {
            *out = p;
            return VP_OK;
        }
        if (p->used) continue;
        /* an empty slot: the key is new */
        VP_REQUIRE(t->count < VP_CUDA_GEMM_PLANS - 1, VP_ERR_OOM, "cuda gemm: plan table full (%d shapes)",
                   VP_CUDA_GEMM_PLANS - 1);
        p->key = *k;
        vp_status s = plan_make(c, p, k, bias);
        if (s != VP_OK) {
            plan_release(p);
            return s;
        }
        p->used = 1;
        t->count++;
        *out = p;
        return VP_OK;
    }
    VP_FAIL(VP_ERR_OOM, "cuda gemm: plan table full");
}

/* ---- launcher ------------------------------------------------------------------------------ */

vp_status vp_cuda_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                       const vp_tensor* bias, vp_tensor* C) {
    vp_cuda* c = vp_cuda_of(b);
    VP_REQUIRE(d->batch <= INT32_MAX, VP_ERR_SHAPE, "cuda gemm: batch %lld exceeds cuBLASLt's limit",
               (long long)d->batch);
    const size_t es = d->precision == VP_PREC_BF16 ? 2 : 4;
    const void* bp = d->epilogue != VP_EPI_NONE ? bias->data : NULL;
    /* the key: the whole descriptor plus what the algorithm choice depends on */
    gemm_key k;
    memset(&k, 0, sizeof k);
    k.trans_a = d->trans_a != 0;
    k.trans_b = d->trans_b != 0;
    k.epilogue = (int32_t)d->epilogue;
    k.precision = (int32_t)d->precision;
    k.beta_zero = d->beta == 0.0f;
    k.m = d->m, k.n = d->n, k.k = d->k, k.batch = d->batch;
    k.stride_a = d->batch > 1 ? d->stride_a : 0;
    k.stride_b = d->batch > 1 ? d->stride_b : 0;
    k.stride_c = d->batch > 1 ? d->stride_c : 0;
    k.stride_bias = d->batch > 1 && bp ? d->stride_bias : 0;
    k.align_a = align_of(A->data, d->batch, d->stride_a, es);
    k.align_b = align_of(B->data, d->batch, d->stride_b, es);
    k.align_c = align_of(C->data, d->batch, d->stride_c, 4);
    k.align_bias = bp ? align_of(bp, d->batch, k.stride_bias, 4) : 0;
    gemm_plan* p = NULL;
    VP_TRY(plan_get(c, &k, bp, &p));
    /* the bias pointer is per call; the rest of the plan is fixed */
    if (bp)
        VP_CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bp, sizeof bp));
    const float alpha = d->alpha, beta = d->beta;
    VP_CUBLAS_CHECK(cublasLtMatmul(c->lt, p->desc, &alpha, B->data, p->lay_b, A->data, p->lay_a, &beta, C->data,
                                   p->lay_c, C->data, p->lay_c, &p->algo, c->lt_workspace, VP_CUDA_LT_WORKSPACE_BYTES,
                                   c->stream));
    return VP_OK;
}
