/* Internal: the Mamba2 mixer's scalar arithmetic on the CPU, shared by the batch kernels
 * (cpu_mamba.c) and the one-bar-at-a-time mixer of the live forward (model_inc_mamba.c), so
 * the two give the same bits. */
#ifndef VULPES_MODEL_CPU_MAMBA_MATH_H
#define VULPES_MODEL_CPU_MAMBA_MATH_H

#include <math.h>
#include <stdint.h>

static inline float sigmoidf_(float x) { return 1.0f / (1.0f + expf(-x)); }

/* log(1 + exp(x)), linear above 20 (as the softplus op). */
static inline float softplusf_(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

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

#endif /* VULPES_MODEL_CPU_MAMBA_MATH_H */
