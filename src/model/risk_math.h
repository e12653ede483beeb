/* Internal: the risk-budget loss of one sample (model_hmods.h, vp_model_rb_loss), written once
 * (VP_HD) for the CPU loop and the CUDA kernel, so both backends compute the same function. */
#ifndef VULPES_MODEL_RISK_MATH_H
#define VULPES_MODEL_RISK_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/defs.h"

/* Sample b's loss into loss[b] and d_logit[b] (arguments as vp_hmops_rb_loss_fn). */
VP_HD void vp_risk_loss_one(int64_t b, int64_t B, int T, int A, int nb, int head0, int n_size, float alpha,
                            float kappa, const float* iqn, const float* taus, const int32_t* actions, const float* w,
                            const float* s, float* loss, float* d_logit) {
    const int32_t k = actions[b * nb + 1];
    if (k < 0 || k >= n_size) {
        loss[b] = NAN;
        d_logit[b] = 0.0f;
        return;
    }
    // CVaR: mean of the taken size head's quantiles at taus <= alpha, else the lowest tau's
    const int64_t h = head0 + k;
    float sum = 0.0f, low_tau = 2.0f, low_q = 0.0f;
    int n = 0;
    for (int j = 0; j < T; ++j) {
        const float tau = taus[b * T + j], q = iqn[(b * T + j) * A + h];
        if (tau <= alpha) {
            sum += q;
            n++;
        }
        if (tau < low_tau) {
            low_tau = tau;
            low_q = q;
        }
    }
    const float cvar = n > 0 ? sum / (float)n : low_q;
    // the scale that holds the tail loss at the budget, then the cross-entropy on the logit
    const float tail = cvar < 0.0f ? -cvar : 0.0f;
    const float t = tail <= kappa ? 1.0f : kappa / tail;
    const float sb = s[b], lo = 1e-7f, hi = 1.0f - 1e-7f;
    const float sc = sb < lo ? lo : (sb > hi ? hi : sb);
    loss[b] = -(t * logf(sc) + (1.0f - t) * logf(1.0f - sc));
    d_logit[b] = w[b] / (float)B * (sb - t);
}

#endif /* VULPES_MODEL_RISK_MATH_H */
