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

/* The causal conv of one channel at steps 0 .. T - 1, its width CW known when compiled:
 * pre[t] = bias + sum_j w[j] x[t - (CW - 1) + j] over the taps at steps >= 0 (the ones before
 * are the zero padding), in j order, each a fused multiply-add (what conv_at's loop compiles
 * to: the same bits). */
template <int CW, int T>
__device__ __forceinline__ void conv_taps(const float (&w)[CW], const float* x, float bias, float* pre) {
#pragma unroll
    for (int t = 0; t < T; ++t) {
        float acc = bias;
#pragma unroll
        for (int j = 0; j < CW; ++j) {
            const int s = t - (CW - 1) + j;
            if (s >= 0) acc = __fmaf_rn(w[j], x[s], acc);
        }
        pre[t] = acc;
    }
}

/* The SiLU'd conv of a window's first P steps (P <= CW - 1) of channel ch, step s read from
 * xbcdt row max(base + s, 0): the weights, bias and the P rows' inputs loaded once, then
 * conv_taps (the taps before the window's first row skipped). v[0 .. CW - 2] (past P: unused). */
template <int CW>
__device__ __forceinline__ void silu_conv_first(const float* __restrict__ xbcdt, int64_t L, int base,
                                                const float* __restrict__ w, const float* __restrict__ bias,
                                                int64_t ch, int P, float* v) {
    float wr[CW], xr[CW - 1];
#pragma unroll
    for (int j = 0; j < CW; ++j) wr[j] = w[ch * CW + j];
    const float bc = bias[ch];
#pragma unroll
    for (int s = 0; s < CW - 1; ++s) {
        const int r = base + s;
        xr[s] = s < P ? xbcdt[(int64_t)(r > 0 ? r : 0) * L + ch] : 0.0f;
    }
    conv_taps<CW, CW - 1>(wr, xr, bc, v);
#pragma unroll
    for (int t = 0; t < CW - 1; ++t) v[t] = v[t] * sigm(v[t]);
}

#endif /* VULPES_MODEL_CUDA_MAMBA_MATH_CUH */
