/* Internal: the per-env math of collection, written once (VP_HD) for the CPU loop
 * (collect_cpu.c) and the CUDA kernel (collect_cuda.cu). Float arithmetic goes through
 * the rounded helpers below so nvcc cannot contract it into FMAs and both backends compute
 * the same epsilon bit for bit. */
#ifndef VP_LEARN_COLLECT_MATH_H
#define VP_LEARN_COLLECT_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/collect.h"
#include "vulpes/defs.h"
#include "vulpes/env.h"
#include "vulpes/rng.h"

/* Shapes and settings of an act launch, passed by value. */
typedef struct vp_collect_dims {
    int64_t n_envs;                   /* E */
    vp_action_layout layout;          /* branches, choices and heads (A = layout.n_heads: row width of q) */
    float eps_start, eps_end;         /* the anneal's ends */
    int64_t eps_steps;                /* its length in collection steps */
    uint64_t seed;                    /* Philox key */
    const float* eps_scale;           /* [1] backend memory or NULL: factor on epsilon */
} vp_collect_dims;

/* Shapes of a gather launch, passed by value. */
typedef struct vp_collect_gather_dims {
    int64_t n;     /* rows written (envs) */
    int64_t rows;  /* R: table rows */
    int64_t width; /* W: floats per row */
    int64_t begin; /* bar of table row 0 */
} vp_collect_gather_dims;

/* A hand-over done by a gather's kernel (vp_collect_handover_gather): bar = next_bar, port =
 * next_port ([n, VP_ENV_PORTFOLIO]), step[0] + 1; the gather then reads next_bar. */
typedef struct vp_collect_hand {
    const int32_t* next_bar; /* [n] */
    const float* next_port;  /* [n, VP_ENV_PORTFOLIO] */
    int32_t* bar;            /* [n] */
    float* port;             /* [n, VP_ENV_PORTFOLIO] */
    int64_t* step;           /* [1] */
} vp_collect_hand;

/* Element (i, j) of a gather: table[bar - begin, j], NaN for a bar without a row (never
 * read out of bounds). */
VP_HD float vp_collect_gather_elem(const vp_collect_gather_dims* d, const float* table, int32_t bar, int64_t j) {
    const int64_t r = (int64_t)bar - d->begin;
#if defined(__CUDA_ARCH__)
    if (r < 0 || r >= d->rows) return __int_as_float(0x7fc00000);
#else
    if (r < 0 || r >= d->rows) return NAN;
#endif
    return table[r * d->width + j];
}

/* a * b rounded to nearest, never contracted. */
VP_HD float vp_collect_mul(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fmul_rn(a, b);
#else
    return a * b;
#endif
}

/* a + b rounded to nearest, never contracted. */
VP_HD float vp_collect_add(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fadd_rn(a, b);
#else
    return a + b;
#endif
}

/* a / b rounded to nearest. */
VP_HD float vp_collect_div(float a, float b) {
#if defined(__CUDA_ARCH__)
    return __fdiv_rn(a, b);
#else
    return a / b;
#endif
}

/* Epsilon at collection step `step`: start + (end - start) * step / steps, then end (start
 * for a step below 0, so the rate stays between the two ends). */
VP_HD float vp_collect_eps_at(float start, float end, int64_t steps, int64_t step) {
    if (steps <= 0 || step >= steps) return end;
    if (step <= 0) return start;
    float frac = vp_collect_div((float)step, (float)steps);
    return vp_collect_add(start, vp_collect_mul(vp_collect_add(end, -start), frac));
}

/* Epsilon eps times the factor s, capped at 1 (a NaN factor gives 1). */
VP_HD float vp_collect_eps_scaled(float eps, float s) {
    const float x = vp_collect_mul(eps, s);
    return x < 1.0f ? x : 1.0f;
}

/* Epsilon-greedy choices of env i at collection step `step` from its Q row q [A]. */
VP_HD void vp_collect_act_index(const vp_collect_dims* d, const float* q /* [A] */, int64_t step, int64_t i,
                                int32_t* a /* [VP_ENV_BRANCHES] */) {
    float eps = vp_collect_eps_at(d->eps_start, d->eps_end, d->eps_steps, step);
    if (d->eps_scale) eps = vp_collect_eps_scaled(eps, d->eps_scale[0]);
    vp_u32x4 coin = vp_rng_draw(d->seed, VP_COLLECT_STREAM + (uint64_t)i, 2u * (uint64_t)step);
    vp_u32x4 pick = vp_rng_draw(d->seed, VP_COLLECT_STREAM + (uint64_t)i, 2u * (uint64_t)step + 1u);
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) {
        const int n = d->layout.size[br];
        if (vp_u32_to_unit(coin.v[br]) < eps) {
            /* explore: a uniform choice in the branch */
            a[br] = (int32_t)(((uint64_t)pick.v[br] * (uint64_t)n) >> 32);
            continue;
        }
        /* exploit: the branch's argmax (vulpes/action.h) */
        a[br] = vp_action_argmax(q + d->layout.offset[br], n);
    }
}

#endif /* VP_LEARN_COLLECT_MATH_H */
