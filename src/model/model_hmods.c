/* The head modules' configuration checks and FLOP count (model_hmods.h). */
#include <math.h>

#include "model/model_internal.h"

vp_status vp_model_hmods_check(const vp_model_cfg* c) {
    VP_REQUIRE(c->stoch_depth >= 0.0f && c->stoch_depth < 1.0f, VP_ERR_INVALID_ARG,
               "model config: stoch_depth = %g must lie in [0, 1)", (double)c->stoch_depth);
    VP_REQUIRE(c->stoch_depth == 0.0f || c->encoder == VP_ENCODER_MAMBA2, VP_ERR_INVALID_ARG,
               "model config: stoch_depth = %g drops the Mamba2 mixer's residual branch, but the encoder is %s, not mamba2",
               (double)c->stoch_depth, vp_model_encoder_name(c->encoder));
    VP_REQUIRE(c->q_denoise == 0 || c->q_denoise == 1, VP_ERR_INVALID_ARG,
               "model config: q_denoise = %d must be 0 or 1", c->q_denoise);
    VP_REQUIRE(c->cross_branch == 0 || c->cross_branch == 1, VP_ERR_INVALID_ARG,
               "model config: cross_branch = %d must be 0 or 1", c->cross_branch);
    VP_REQUIRE(c->risk_budget >= 0.0f && isfinite(c->risk_budget), VP_ERR_INVALID_ARG,
               "model config: risk_budget = %g must be a finite budget >= 0", (double)c->risk_budget);
    VP_REQUIRE(c->risk_budget == 0.0f || c->n_branches >= 2, VP_ERR_INVALID_ARG,
               "model config: risk_budget scales the size branch (branch 1), but the network has %d branch",
               c->n_branches);
    return VP_OK;
}

double vp_model_hmods_flops(const vp_model_cfg* c, int64_t batch, int backward) {
    const double B = (double)batch, A = vp_model_cfg_actions(c);
    double f = 0.0;
    if (c->q_denoise) {
        // A -> 2A -> A; backward: both weight gradients and the hidden layer's input gradient
        const double fwd = 2.0 * (2.0 * B * 2 * A * A);
        f += backward ? fwd + fwd + 2.0 * B * 2 * A * A : fwd;
    }
    // the risk-budget head: one [B, 1] product, its weight gradient in the backward
    if (c->risk_budget > 0.0f) f += (backward ? 2.0 : 1.0) * 2.0 * B * c->hidden;
    if (c->cross_branch) {
        // embeddings and messages (nb + nb^2 products of HH x HH), replacing nothing: the output
        // layer keeps its FLOPs; backward: weight and input gradients of both
        const double nb = c->n_branches, HH = c->head_hidden;
        const double fwd = (nb + nb * nb) * 2.0 * B * HH * HH;
        f += backward ? 3.0 * fwd : fwd;
    }
    return f;
}
