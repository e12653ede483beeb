/* Internal: the per-element math of the losses, written once (VP_HD) for the CPU loops
 * and the CUDA kernels, so both backends compute the same function. */
#ifndef VP_LEARN_LOSS_MATH_H
#define VP_LEARN_LOSS_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* Share of an atom at x (already clipped to the support) that lands on the support atom
 * at zj with spacing dz: Dopamine's hat function clip(1 - |x - zj| / dz, 0, 1). */
VP_HD float vp_c51_hat(float x, float zj, float dz) {
    float w = 1.0f - fabsf(x - zj) / dz;
    return w > 0.0f ? w : 0.0f;
}

/* Support atom j of Z atoms on [v_min, v_max]. */
VP_HD float vp_c51_atom(float v_min, float dz, int j) { return v_min + (float)j * dz; }

/* x clipped to [lo, hi]. */
VP_HD float vp_clampf(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* Mass that Dopamine's projection puts on support atom j: probs [n] at atoms src [n]
 * (any order, any spacing) clipped to [v_min, v_max], spread by the hat function. */
VP_HD float vp_c51_project_atom(const float* src, const float* probs, int n, float v_min,
                                float v_max, float dz, int j) {
    float zj = vp_c51_atom(v_min, dz, j);
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) acc += probs[i] * vp_c51_hat(vp_clampf(src[i], v_min, v_max), zj, dz);
    return acc;
}

/* The same for the Bellman target: atoms r + discount * z_i of the support itself. */
VP_HD float vp_c51_target_atom(float r, float discount, const float* probs, int Z, float v_min,
                               float v_max, float dz, int j) {
    float zj = vp_c51_atom(v_min, dz, j);
    float acc = 0.0f;
    for (int i = 0; i < Z; ++i) {
        float tz = vp_clampf(r + discount * vp_c51_atom(v_min, dz, i), v_min, v_max);
        acc += probs[i] * vp_c51_hat(tz, zj, dz);
    }
    return acc;
}

/* Quantile Huber term for one pair: |tau - 1{delta < 0}| * huber_kappa(delta) / kappa with
 * delta = target - online; *d_delta receives its derivative w.r.t. delta. */
VP_HD float vp_quantile_huber(float delta, float tau, float kappa, float* d_delta) {
    float ad = fabsf(delta);
    float wt = fabsf(tau - (delta < 0.0f ? 1.0f : 0.0f));
    float hub = ad <= kappa ? 0.5f * delta * delta : kappa * (ad - 0.5f * kappa);
    *d_delta = wt * vp_clampf(delta, -kappa, kappa) / kappa;
    return wt * hub / kappa;
}

/* A uniform in the open interval (0, 1) from one random word (24 bits, centred). */
VP_HD float vp_u32_to_open_unit(uint32_t x) { return ((float)(x >> 8) + 0.5f) * (1.0f / 16777216.0f); }

#endif /* VP_LEARN_LOSS_MATH_H */
