/* vulpes: the action layout of the environment — its branches, the choices of each, and
 * where each branch's heads sit in a row of per-head scores — and the one greedy choice per
 * branch with the margin it won by, written once (VP_HD) for C and CUDA code. Every part
 * that reads or writes actions (the env, collection, the losses, the rollout, the policies)
 * takes its layout from here. */
#ifndef VULPES_ACTION_H
#define VULPES_ACTION_H

#include <stdint.h>

#include "vulpes/defs.h"
#include "vulpes/env.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Branches, choices per branch and each branch's first head in a score row. */
typedef struct vp_action_layout {
    int n_branches;              /* branches (VP_ENV_BRANCHES) */
    int n_heads;                 /* A: choices summed over the branches (13) */
    int size[VP_ENV_BRANCHES];   /* choices of each branch: direction 3, size 4, take-profit 3, stop-loss 3 */
    int offset[VP_ENV_BRANCHES]; /* first head of each branch in a row of A scores */
} vp_action_layout;

/* The environment's layout: direction (short, flat, long), size (VP_ENV_SIZE_CHOICES fractions
 * of max_position), take-profit and stop-loss (none, 1, 2 x ATR). */
VP_HD vp_action_layout vp_action_layout_env(void) {
    vp_action_layout l;
    l.n_branches = VP_ENV_BRANCHES;
    l.size[0] = VP_ENV_DIR_COUNT;
    l.size[1] = VP_ENV_SIZE_CHOICES;
    l.size[2] = VP_ENV_LEVEL_CHOICES;
    l.size[3] = VP_ENV_LEVEL_CHOICES;
    l.n_heads = 0;
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) {
        l.offset[br] = l.n_heads;
        l.n_heads += l.size[br];
    }
    return l;
}

/* Index of the largest of v[0 .. n): ties go to the lowest index, a NaN never wins over a
 * number (all NaN: 0). The one branch argmax of collection, the losses and the rollout. */
VP_HD int vp_action_argmax(const float* v /* [n] */, int n) {
    int best = 0;
    float bv = v[0];
    for (int j = 1; j < n; ++j) {
        float x = v[j];
        if (x == x && (bv != bv || x > bv)) {
            best = j;
            bv = x;
        }
    }
    return best;
}

/* The greedy choice of every branch from one score row q [A] into a [n_branches]. */
VP_HD void vp_action_greedy(const vp_action_layout* l, const float* q /* [A] */, int32_t* a /* [n_branches] */) {
    for (int br = 0; br < l->n_branches; ++br) a[br] = vp_action_argmax(q + l->offset[br], l->size[br]);
}

/* Relative Q margin under which a decision is fragile: a rounding difference between two
 * machines (another BLAS kernel, CPU and GPU) may flip it. */
#define VP_ACTION_FRAGILE_MARGIN 1e-4

/* How clearly choice `best` (vp_action_argmax of v) won its branch v[0 .. n): (v[best] -
 * second) / max(|v[best]|, |second|, 1e-12), in double, `second` the largest other value
 * that is a number. 0 (a tie) when fewer than two values are numbers or the difference is
 * not a number. Only subtractions and a division, each correctly rounded on both C and
 * CUDA, so both give the same bits for the same scores. */
VP_HD double vp_action_margin(const float* v /* [n] */, int n, int best) {
    float second = 0.0f;
    int have = 0;
    for (int j = 0; j < n; ++j) {
        const float x = v[j];
        if (j != best && x == x && (!have || x > second)) {
            second = x;
            have = 1;
        }
    }
    const double b = (double)v[best], s = (double)second;
    if (!have || b != b) return 0.0;
    const double ab = b < 0.0 ? -b : b, as = s < 0.0 ? -s : s;
    double den = ab > as ? ab : as;
    den = den > 1e-12 ? den : 1e-12;
#if defined(__CUDA_ARCH__)
    const double m = __ddiv_rn(__dsub_rn(b, s), den);
#else
    const double m = (b - s) / den;
#endif
    return m >= 0.0 ? m : 0.0;
}

/* vp_action_greedy, and the margin of the decision: the smallest vp_action_margin of its
 * branches, taken in branch order (the fused rollout kernel takes the same minimum). A
 * decision is fragile when this is below VP_ACTION_FRAGILE_MARGIN. */
VP_HD double vp_action_greedy_margin(const vp_action_layout* l, const float* q /* [A] */,
                                     int32_t* a /* [n_branches] */) {
    double m = 0.0;
    for (int br = 0; br < l->n_branches; ++br) {
        a[br] = vp_action_argmax(q + l->offset[br], l->size[br]);
        const double x = vp_action_margin(q + l->offset[br], l->size[br], a[br]);
        m = (br == 0 || x < m) ? x : m;
    }
    return m;
}

/* Checks that a network's branches (n_branches, sizes[n_branches]) are the environment's; the
 * message starts with `who` and names the first branch that differs. */
vp_status vp_action_layout_check(const char* who, int n_branches, const int* sizes);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ACTION_H */
