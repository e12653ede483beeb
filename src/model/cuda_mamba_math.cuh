/* Internal: the Mamba2 mixer's scalar arithmetic on CUDA, shared by the batch kernels
 * (cuda_mamba.cu) and the span encoding's per-bar and indexed kernels (cuda_span.cu), so the
 * two give the same bits. CUDA translation units only. */
#ifndef VULPES_MODEL_CUDA_MAMBA_MATH_CUH
#define VULPES_MODEL_CUDA_MAMBA_MATH_CUH

#include <stdint.h>

/* 1 / (1 + exp(-x)) without overflow: 1 / (1 + e) for x >= 0, e / (1 + e) below, e = exp(-|x|).
 * One exponential and one division whichever side a lane is on (no divergent branch). */
__device__ __forceinline__ float sigm(float x) {
    const float e = expf(-fabsf(x));
    return (x >= 0.0f ? 1.0f : e) / (1.0f + e);
}

/* log(1 + exp(x)), linear above 20 (as the softplus op). */
__device__ __forceinline__ float softplus_(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* Conv output at step t of channel ch of one sample: in points at the sample's first row. */
__device__ __forceinline__ float conv_at(const float* in, int64_t L, const float* w, float bias, int t, int cw) {
    float acc = bias;
    for (int j = 0; j < cw; ++j) {
        const int s = t - (cw - 1) + j;
        if (s >= 0) acc += w[j] * in[(int64_t)s * L];
    }
    return acc;
}

#endif /* VULPES_MODEL_CUDA_MAMBA_MATH_CUH */
