/* Variable selection (docs/modules.md, "Variable selection"): per trunk row, a gated residual
 * network over the F features gives softmax weights w, and the first layer sees F w x.
 *   eta = elu(x W1^T + b1)                  [R, VH]
 *   [v, l] = eta W2^T + b2                  [R, 2F]
 *   logit = LayerNorm(x + v * sigmoid(l))   [R, F]
 *   w = softmax(logit), xs = F w x          [R, F]  */
#include "model/model_input.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

vp_status vp_model_vsn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R) {
    vp_backend* be = m->backend;
    const int F = m->cfg.n_features;
    vp_tensor x = vp_acts_rows(&a->x0, R), eta = vp_acts_rows(&a->vsn_eta, R), gs = vp_acts_rows(&a->vsn_gs, R);
    vp_tensor pre = vp_acts_rows(&a->vsn_pre, R), logit = vp_acts_rows(&a->vsn_logit, R);
    vp_tensor mean = vp_acts_vec(&a->vsn_mean, R), rstd = vp_acts_vec(&a->vsn_rstd, R);
    vp_tensor w = vp_acts_rows(&a->vsn_w, R), xs = vp_acts_rows(&a->xs, R), wsum = vp_acts_vec(&a->vsn_wsum, F);
    vp_tensor w1 = PV(VSN_W1), b1 = PV(VSN_B1), w2 = PV(VSN_W2), b2 = PV(VSN_B2);
    vp_tensor lg = PV(VSN_LN_G), lb = PV(VSN_LN_B);
    // the gated residual network: ELU layer, gate layer, residual, LayerNorm
    VP_TRY(vp_model_linear(m, &x, &w1, &b1, VP_EPI_BIAS, 0.0f, &eta));
    VP_TRY(a->inops->vsn_elu(be, R * m->cfg.vsn_hidden, (float*)eta.data));
    VP_TRY(vp_model_linear(m, &eta, &w2, &b2, VP_EPI_BIAS, 0.0f, &gs));
    VP_TRY(a->inops->vsn_gate(be, R, F, (const float*)x.data, (const float*)gs.data, (float*)pre.data));
    VP_TRY(vp_layernorm(be, &pre, &lg, &lb, m->cfg.ln_eps, &logit, &mean, &rstd));
    // softmax weights, the scaled features, and the weights' column sums (feature importance)
    VP_TRY(a->inops->vsn_select(be, R, F, (const float*)logit.data, (const float*)x.data, (float*)w.data,
                                (float*)xs.data));
    return vp_reduce_cols(be, VP_REDUCE_SUM, &w, &wsum);
}

vp_status vp_model_vsn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R) {
    vp_backend* be = m->backend;
    const int F = m->cfg.n_features;
    vp_tensor x = vp_acts_rows(&a->x0, R), eta = vp_acts_rows(&a->vsn_eta, R), gs = vp_acts_rows(&a->vsn_gs, R);
    vp_tensor pre = vp_acts_rows(&a->vsn_pre, R), w = vp_acts_rows(&a->vsn_w, R);
    vp_tensor mean = vp_acts_vec(&a->vsn_mean, R), rstd = vp_acts_vec(&a->vsn_rstd, R);
    vp_tensor d_xs = vp_acts_rows(&a->d_xs, R), d_pre = vp_acts_rows(&a->d_vsn_pre, R);
    vp_tensor d_gs = vp_acts_rows(&a->d_vsn_gs, R), d_eta = vp_acts_rows(&a->d_vsn_eta, R);
    vp_tensor w1 = PV(VSN_W1), w2 = PV(VSN_W2), lg = PV(VSN_LN_G);
    vp_tensor gw1 = GV(VSN_W1), gb1 = GV(VSN_B1), gw2 = GV(VSN_W2), gb2 = GV(VSN_B2);
    vp_tensor glg = GV(VSN_LN_G), glb = GV(VSN_LN_B);
    // softmax and the scale (d logit over d xs, in place), then the LayerNorm
    VP_TRY(a->inops->vsn_select_backward(be, R, F, (const float*)w.data, (const float*)x.data,
                                         (const float*)d_xs.data, (float*)d_xs.data));
    VP_TRY(vp_layernorm_backward(be, &d_xs, &pre, &lg, &mean, &rstd, &d_pre, &glg, &glb));
    // the gate (the residual's x is data: no gradient), the gate layer, the ELU layer
    VP_TRY(a->inops->vsn_gate_backward(be, R, F, (const float*)gs.data, (const float*)d_pre.data,
                                       (float*)d_gs.data));
    VP_TRY(vp_model_linear_backward(m, &eta, &w2, &d_gs, &gw2, &gb2, &d_eta, 0.0f));
    VP_TRY(a->inops->vsn_elu_backward(be, R * m->cfg.vsn_hidden, (const float*)eta.data, (float*)d_eta.data));
    return vp_model_linear_backward(m, &x, &w1, &d_eta, &gw1, &gb1, NULL, 0.0f);
}
