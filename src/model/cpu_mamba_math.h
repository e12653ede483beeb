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

/* The last-step scan of head h's channels 16 at a time: scan_forward's recurrence with its
 * products and sums lane by lane (separate multiplies and adds, as the scalar code rounds them,
 * so the same bits). Step t's x and B are row xr[t] (x at [0, H), B at [H, H + N)), its step size
 * dt[t] and its decay decay[t] = exp(dt[t] A); y[h PD + p] = Dh x_K[p] + s_K . cc. Returns the
 * first channel not done (the last PD % 16 are the scalar loop's). N <= 64; AVX-512F only. */
__attribute__((target("avx512f"))) static inline int scan_head_avx512(int K, int N, int PD, int H, int h,
                                                                      const float* const* xr, const float* cc,
                                                                      const float* dt, const float* decay, float Dh,
                                                                      float* y) {
    int p0 = 0;
    __m512 s[64];
    for (; p0 + 16 <= PD; p0 += 16) {
        const int col = h * PD + p0;
        for (int n = 0; n < N; ++n) s[n] = _mm512_setzero_ps();
        for (int t = 0; t < K; ++t) {
            const __m512 at = _mm512_set1_ps(decay[t]);
            const __m512 u = _mm512_mul_ps(_mm512_set1_ps(dt[t]), _mm512_loadu_ps(xr[t] + col));
            const float* Bt = xr[t] + H;
            for (int n = 0; n < N; ++n)
                s[n] = _mm512_add_ps(_mm512_mul_ps(at, s[n]), _mm512_mul_ps(u, _mm512_set1_ps(Bt[n])));
        }
        __m512 acc = _mm512_mul_ps(_mm512_set1_ps(Dh), _mm512_loadu_ps(xr[K - 1] + col));
        for (int n = 0; n < N; ++n) acc = _mm512_add_ps(acc, _mm512_mul_ps(s[n], _mm512_set1_ps(cc[n])));
        _mm512_storeu_ps(y + col, acc);
    }
    return p0;
}

/* The same 8 channels at a time (AVX2: the same multiplies and adds lane by lane, so the same
 * bits). N <= 64. */
__attribute__((target("avx2"))) static inline int scan_head_avx2(int K, int N, int PD, int H, int h,
                                                                 const float* const* xr, const float* cc,
                                                                 const float* dt, const float* decay, float Dh,
                                                                 float* y) {
    int p0 = 0;
    __m256 s[64];
    for (; p0 + 8 <= PD; p0 += 8) {
        const int col = h * PD + p0;
        for (int n = 0; n < N; ++n) s[n] = _mm256_setzero_ps();
        for (int t = 0; t < K; ++t) {
            const __m256 at = _mm256_set1_ps(decay[t]);
            const __m256 u = _mm256_mul_ps(_mm256_set1_ps(dt[t]), _mm256_loadu_ps(xr[t] + col));
            const float* Bt = xr[t] + H;
            for (int n = 0; n < N; ++n)
                s[n] = _mm256_add_ps(_mm256_mul_ps(at, s[n]), _mm256_mul_ps(u, _mm256_set1_ps(Bt[n])));
        }
        __m256 acc = _mm256_mul_ps(_mm256_set1_ps(Dh), _mm256_loadu_ps(xr[K - 1] + col));
        for (int n = 0; n < N; ++n) acc = _mm256_add_ps(acc, _mm256_mul_ps(s[n], _mm256_set1_ps(cc[n])));
        _mm256_storeu_ps(y + col, acc);
    }
    return p0;
}
#endif

#endif /* VULPES_MODEL_CPU_MAMBA_MATH_H */
