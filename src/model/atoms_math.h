/* Internal: the math of the adaptive C51 support (docs/modules.md, "Adaptive atom spacing"),
 * written once (VP_HD) for the CPU loops and the CUDA kernels of the model and the learner.
 *
 * A branch's support of Z atoms comes from Z - 1 spacing logits s: pi = softmax(s),
 * c_0 = 0, c_k = pi_0 + ... + pi_{k-1}, z_k = v_min + (v_max - v_min) c_k, with z_{Z-1} set
 * to v_max exactly (c_{Z-1} = 1 whatever s is). s = 0 gives the uniform support. */
#ifndef VULPES_MODEL_ATOMS_MATH_H
#define VULPES_MODEL_ATOMS_MATH_H

#include <math.h>

#include "vulpes/defs.h"

/* The support z [Z] of spacing logits s [Z - 1] on [v_min, v_max]. */
VP_HD void vp_atoms_support(const float* s, int Z, float v_min, float v_max, float* z) {
    // softmax with the largest logit taken out, then the running sum in atom order
    float mx = s[0];
    for (int i = 1; i < Z - 1; ++i) mx = s[i] > mx ? s[i] : mx;
    float tot = 0.0f;
    for (int i = 0; i < Z - 1; ++i) tot += expf(s[i] - mx);
    const float span = v_max - v_min;
    float c = 0.0f;
    z[0] = v_min;
    for (int k = 1; k < Z - 1; ++k) {
        c += expf(s[k - 1] - mx) / tot;
        z[k] = v_min + span * c;
    }
    z[Z - 1] = v_max;
}

/* Gradient through the support: g [Z] = dL/dz -> ds [Z - 1] = dL/ds. With G_i = (v_max -
 * v_min) sum_{i < k < Z-1} g_k (z_{Z-1} does not move): ds_m = pi_m (G_m - sum_i pi_i G_i). */
VP_HD void vp_atoms_support_backward(const float* s, int Z, float v_min, float v_max, const float* g, float* ds) {
    float mx = s[0];
    for (int i = 1; i < Z - 1; ++i) mx = s[i] > mx ? s[i] : mx;
    float tot = 0.0f;
    for (int i = 0; i < Z - 1; ++i) tot += expf(s[i] - mx);
    const float span = v_max - v_min;
    // G_i from the top down (ds holds G first), and sum_i pi_i G_i
    float acc = 0.0f, mean = 0.0f;
    for (int i = Z - 2; i >= 0; --i) {
        ds[i] = span * acc;
        acc += i >= 1 ? g[i] : 0.0f;
    }
    for (int i = 0; i < Z - 1; ++i) mean += expf(s[i] - mx) / tot * ds[i];
    for (int i = 0; i < Z - 1; ++i) ds[i] = expf(s[i] - mx) / tot * (ds[i] - mean);
}

/* Share of mass at x (already clipped to [g_0, g_{Z-1}]) that lands on atom j of the
 * increasing grid g [Z]: linear interpolation between the two atoms around x, so
 * (x - g_{j-1}) / (g_j - g_{j-1}) rising and (g_{j+1} - x) / (g_{j+1} - g_j) falling. An x on
 * an atom goes whole to the lowest atom at that value (so coinciding atoms lose no mass and
 * gain none). */
VP_HD float vp_grid_hat(float x, const float* g, int Z, int j) {
    const float gj = g[j];
    if (j > 0 && x < gj) {
        const float lo = g[j - 1];
        return x > lo ? (x - lo) / (gj - lo) : 0.0f;
    }
    if (j < Z - 1 && x > gj) {
        const float hi = g[j + 1];
        return x < hi ? (hi - x) / (hi - gj) : 0.0f;
    }
    return (x == gj && (j == 0 || g[j - 1] < x)) ? 1.0f : 0.0f;
}

/* Expected value sum_k z_k exp(logp_k) of one row of log-probabilities logp [Z]. */
VP_HD float vp_atoms_q(const float* z, const float* logp, int Z) {
    float acc = 0.0f;
    for (int k = 0; k < Z; ++k) acc += z[k] * expf(logp[k]);
    return acc;
}

#endif /* VULPES_MODEL_ATOMS_MATH_H */
