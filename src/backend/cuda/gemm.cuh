/* CUDA GEMM through cuBLASLt with a plan cache (launcher; arguments checked by ops.c). */
#ifndef VP_CUDA_GEMM_CUH
#define VP_CUDA_GEMM_CUH

#include "common.cuh"

/* Plans the table holds (distinct descriptors of one run). */
#define VP_CUDA_GEMM_PLANS 512

/* Makes an empty plan table (host memory, taken once at init). */
vp_status vp_cuda_gemm_cache_create(vp_cuda_gemm_cache** out);

/* Frees a plan table and every cuBLASLt object in it (NULL is a no-op). */
void vp_cuda_gemm_cache_free(vp_cuda_gemm_cache* cache);

/* C = epi(alpha op(A) op(B) + beta C), row-major, strided batches. */
vp_status vp_cuda_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                       const vp_tensor* bias, vp_tensor* C);

#endif /* VP_CUDA_GEMM_CUH */
