/* Internal: the per-element math of the input modules, written once (VP_HD) for the CPU
 * loops and the CUDA kernels (inops.h), so both backends compute the same function. */
#ifndef VULPES_MODEL_INPUT_MATH_H
#define VULPES_MODEL_INPUT_MATH_H

#include <math.h>

#include "vulpes/defs.h"

/* Most knots a KAN grid may have: G + 2k + 1 with G <= 64, k <= 5 (model_input.c checks). */
#define VP_KAN_MAX_KNOTS 75

/* One row of the selection: w = softmax(l) over the F logits (the row maximum subtracted,
 * sums in order), xs = F w x. */
VP_HD void vp_in_select_row(int F, const float* l, const float* x, float* w, float* xs) {
    float mx = l[0], sum = 0.0f;
    for (int j = 1; j < F; ++j) mx = l[j] > mx ? l[j] : mx;
    for (int j = 0; j < F; ++j) sum += expf(l[j] - mx);
    for (int j = 0; j < F; ++j) {
        const float wj = expf(l[j] - mx) / sum;
        w[j] = wj;
        xs[j] = (float)F * wj * x[j];
    }
}

/* elu(x), alpha 1. */
VP_HD float vp_in_elu(float x) { return x > 0.0f ? x : expm1f(x); }

/* elu'(.) from the ELU's output y: 1 above 0, y + 1 (= exp(x)) elsewhere. */
VP_HD float vp_in_elu_grad(float y) { return y > 0.0f ? 1.0f : y + 1.0f; }

/* 1 / (1 + exp(-x)). */
VP_HD float vp_in_sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }

/* silu(x) = x sigmoid(x). */
VP_HD float vp_in_silu(float x) { return x * vp_in_sigmoid(x); }

/* silu'(x) = s (1 + x (1 - s)), s = sigmoid(x). */
VP_HD float vp_in_silu_grad(float x) {
    const float s = vp_in_sigmoid(x);
    return s * (1.0f + x * (1.0f - s));
}

/* Knot j of the KAN grid: (j - k) h - range, h = 2 range / G (efficient-kan's grid). */
VP_HD float vp_kan_knot(int j, int G, int k, float range) {
    const float h = 2.0f * range / (float)G;
    return (float)(j - k) * h - range;
}

/* The G + k order-k B-spline bases at x into out[0 .. G + k) (Cox-de Boor as efficient-kan's
 * b_splines computes them), and, when d_out is not NULL, their derivatives
 * dB_j/dx = k (B_{j,k-1} / (t_{j+k} - t_j) - B_{j+1,k-1} / (t_{j+k+1} - t_{j+1})). b is scratch of
 * G + 2k floats (out may be b). */
VP_HD void vp_kan_bases(float x, int G, int k, float range, float* b, float* out, float* d_out) {
    const int n0 = G + 2 * k;
    // order 0: the indicator of each knot interval [t_j, t_{j+1})
    for (int j = 0; j < n0; ++j) {
        const float lo = vp_kan_knot(j, G, k, range), hi = vp_kan_knot(j + 1, G, k, range);
        b[j] = (x >= lo && x < hi) ? 1.0f : 0.0f;
    }
    // orders 1..k in place: B_j = (x - t_j) / (t_{j+p} - t_j) B_j + (t_{j+p+1} - x) / (t_{j+p+1} - t_{j+1}) B_{j+1}
    for (int p = 1; p <= k; ++p) {
        if (p == k && d_out) {
            for (int j = 0; j < G + k; ++j) {
                const float tj = vp_kan_knot(j, G, k, range), tjp = vp_kan_knot(j + p, G, k, range);
                const float tj1 = vp_kan_knot(j + 1, G, k, range), tjp1 = vp_kan_knot(j + p + 1, G, k, range);
                d_out[j] = (float)p * (b[j] / (tjp - tj) - b[j + 1] / (tjp1 - tj1));
            }
        }
        for (int j = 0; j < n0 - p; ++j) {
            const float tj = vp_kan_knot(j, G, k, range), tjp = vp_kan_knot(j + p, G, k, range);
            const float tj1 = vp_kan_knot(j + 1, G, k, range), tjp1 = vp_kan_knot(j + p + 1, G, k, range);
            b[j] = (x - tj) / (tjp - tj) * b[j] + (tjp1 - x) / (tjp1 - tj1) * b[j + 1];
        }
    }
    if (k == 0 && d_out)
        for (int j = 0; j < G; ++j) d_out[j] = 0.0f;
    for (int j = 0; j < G + k; ++j) out[j] = b[j];
}

#endif /* VULPES_MODEL_INPUT_MATH_H */
