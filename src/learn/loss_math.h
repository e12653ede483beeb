/* Internal: the per-element math of the losses, written once (VP_HD) for the CPU loops
 * and the CUDA kernels, so both backends compute the same function. */
#ifndef VP_LEARN_LOSS_MATH_H
#define VP_LEARN_LOSS_MATH_H

#include <math.h>
#include <stdint.h>

#include "learn/loss.h"
#include "model/atoms_math.h"
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

/* A Bellman target value in PopArt's normalised units: (r + discount (sigma v + mu) - mu) /
 * sigma for a next-state value v in those units (mu 0, sigma 1: r + discount v). */
VP_HD float vp_popart_target(float r, float discount, float v, float mu, float sigma) {
    return (r + discount * (sigma * v + mu) - mu) / sigma;
}

/* Mass on atom j of the increasing grid [Z] from the Bellman target of probs [Z] at atoms
 * src [Z] (the target net's support), normalised by (mu, sigma), clipped to the grid's ends and
 * split by vp_grid_hat. */
VP_HD float vp_c51_target_atom_grid(float r, float discount, const float* probs, const float* src, const float* grid,
                                    int Z, float mu, float sigma, int j) {
    float acc = 0.0f;
    for (int i = 0; i < Z; ++i) {
        float tz = vp_clampf(vp_popart_target(r, discount, src[i], mu, sigma), grid[0], grid[Z - 1]);
        acc += probs[i] * vp_grid_hat(tz, grid, Z, j);
    }
    return acc;
}

/* PopArt's state st [VP_POPART_N] (loss.h) moved towards the batch moments m1, m2 of the
 * targets at rate beta, in double arithmetic; sigma clamped. */
VP_HD void vp_popart_moments(float* st, double m1, double m2, float beta) {
    const double mu = (1.0 - (double)beta) * (double)st[VP_POPART_MU] + (double)beta * m1;
    const double nu = (1.0 - (double)beta) * (double)st[VP_POPART_NU] + (double)beta * m2;
    double var = nu - mu * mu;
    const double lo = (double)VP_POPART_SIGMA_MIN * VP_POPART_SIGMA_MIN, hi = VP_POPART_SIGMA_MAX * VP_POPART_SIGMA_MAX;
    var = var < lo ? lo : (var > hi ? hi : var);
    st[VP_POPART_MU] = (float)mu;
    st[VP_POPART_NU] = (float)nu;
    st[VP_POPART_SIGMA] = (float)sqrt(var);
}

/* Quantile Huber term for one pair: |tau - 1{delta < 0}| * huber_kappa(delta) / kappa with
 * delta = target - online, the division as a product with inv_kappa = 1 / kappa, formed once
 * by the caller (exact for the learner's kappa of 1); *d_delta receives its derivative
 * w.r.t. delta. */
VP_HD float vp_quantile_huber(float delta, float tau, float kappa, float inv_kappa, float* d_delta) {
    float ad = fabsf(delta);
    float wt = fabsf(tau - (delta < 0.0f ? 1.0f : 0.0f));
    float hub = ad <= kappa ? 0.5f * delta * delta : kappa * (ad - 0.5f * kappa);
    *d_delta = wt * vp_clampf(delta, -kappa, kappa) * inv_kappa;
    return wt * hub * inv_kappa;
}

/* A uniform in the open interval (0, 1) from one random word (24 bits, centred). */
VP_HD float vp_u32_to_open_unit(uint32_t x) { return ((float)(x >> 8) + 0.5f) * (1.0f / 16777216.0f); }

#endif /* VP_LEARN_LOSS_MATH_H */
