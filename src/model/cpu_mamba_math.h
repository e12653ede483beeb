/* Internal: the Mamba2 mixer's scalar arithmetic on the CPU, shared by the batch kernels
 * (cpu_mamba.c) and the one-bar-at-a-time mixer of the live forward (model_inc_mamba.c), so
 * the two give the same bits. */
#ifndef VULPES_MODEL_CPU_MAMBA_MATH_H
#define VULPES_MODEL_CPU_MAMBA_MATH_H

#include <math.h>
#include <stdint.h>

#include "backend/cpu/cpu_exp.h"

/* log(1 + exp(x)), linear above 20 (as the softplus op). */
static inline float softplusf_(float x) { return x > 20.0f ? x : log1pf(vp_cpu_expf(x)); }

/* Conv output at step t of one channel: in [K] with stride ld, w [CW]. */
static inline float conv_at(const float* in, int64_t ld, const float* w, float bias, int t, int cw) {
    float acc = bias;
    for (int j = 0; j < cw; ++j) {
        int s = t - (cw - 1) + j;
        if (s >= 0) acc += w[j] * in[(int64_t)s * ld];
    }
    return acc;
}

/* conv_at over rows picked by index: step s of the window is in[row[s] * ld] (the same
 * operations in the same order, so the same bits as conv_at over the gathered rows). */
static inline float conv_at_rows(const float* in, int64_t ld, const int32_t* row, const float* w, float bias, int t,
                                 int cw) {
    float acc = bias;
    for (int j = 0; j < cw; ++j) {
        int s = t - (cw - 1) + j;
        if (s >= 0) acc += w[j] * in[(int64_t)row[s] * ld];
    }
    return acc;
}

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define VP_MAMBA_X86 1

/* The last-step scan of head h's channels L at a time, in vectors of W bits (L = W / 32): scan_forward's
 * recurrence with its products and sums lane by lane (separate multiplies and adds, as the scalar
 * code rounds them, so the same bits at every width). Step t's x and B are row xr[t] (x at [0, H),
 * B at [H, H + N)), its step size dt[t] and its decay decay[t] = exp(dt[t] A); y[h PD + p] = Dh
 * x_K[p] + s_K . cc. Returns the first channel not done (the last PD % L are the scalar loop's).
 * N <= 64. Written once here; scan_head_avx512 and scan_head_avx2 below are its two widths. */
#define VP_SCAN_HEAD_BODY(W, L)                                                                              \
    int p0 = 0;                                                                                               \
    __m##W s[64];                                                                                             \
    for (; p0 + (L) <= PD; p0 += (L)) {                                                                      \
        const int col = h * PD + p0;                                                                          \
        for (int n = 0; n < N; ++n) s[n] = _mm##W##_setzero_ps();                                             \
        for (int t = 0; t < K; ++t) {                                                                         \
            const __m##W at = _mm##W##_set1_ps(decay[t]);                                                    \
            const __m##W u = _mm##W##_mul_ps(_mm##W##_set1_ps(dt[t]), _mm##W##_loadu_ps(xr[t] + col));      \
            const float* Bt = xr[t] + H;                                                                      \
            for (int n = 0; n < N; ++n)                                                                       \
                s[n] = _mm##W##_add_ps(_mm##W##_mul_ps(at, s[n]), _mm##W##_mul_ps(u, _mm##W##_set1_ps(Bt[n]))); \
        }                                                                                                     \
        __m##W acc = _mm##W##_mul_ps(_mm##W##_set1_ps(Dh), _mm##W##_loadu_ps(xr[K - 1] + col));              \
        for (int n = 0; n < N; ++n) acc = _mm##W##_add_ps(acc, _mm##W##_mul_ps(s[n], _mm##W##_set1_ps(cc[n]))); \
        _mm##W##_storeu_ps(y + col, acc);                                                                     \
    }                                                                                                         \
    return p0;

/* 16 channels at a time (AVX-512F). */
__attribute__((target("avx512f"))) static inline int scan_head_avx512(int K, int N, int PD, int H, int h,
                                                                      const float* const* xr, const float* cc,
                                                                      const float* dt, const float* decay, float Dh,
                                                                      float* y) {
    VP_SCAN_HEAD_BODY(512, 16)
}

/* 8 channels at a time (AVX2). */
__attribute__((target("avx2"))) static inline int scan_head_avx2(int K, int N, int PD, int H, int h,
                                                                 const float* const* xr, const float* cc,
                                                                 const float* dt, const float* decay, float Dh,
                                                                 float* y) {
    VP_SCAN_HEAD_BODY(256, 8)
}
#undef VP_SCAN_HEAD_BODY
#endif

#endif /* VULPES_MODEL_CPU_MAMBA_MATH_H */
