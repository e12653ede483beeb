/* The risk-budget head: a sigmoid position scaler that multiplies the chosen size,
 *   s = sigmoid(w . h + b)      (h: the heads' input, detached),
 * trained by cross-entropy onto a target read from the IQN's lower quantiles (a CVaR budget,
 * vp_model_rb_loss): the scale at which the size head's expected tail loss at level
 * VP_RISK_ALPHA stays within the budget kappa = risk_budget. Its input is detached, so the
 * C51 and IQN losses and their gradients stay those of the network without it; the
 * environments multiply the size choice's contracts by s before the order's rounding
 * (env_rules.h, vp_env_scaled_contracts). */
#include <string.h>

#include "model/hmops.h"
#include "model/model_internal.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

vp_status vp_model_rb_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    if (!(m->cfg.risk_budget > 0.0f)) return VP_OK;
    vp_tensor h = vp_acts_rows(&a->h, batch), lg = vp_acts_rows(&a->rb_logit, batch), s = vp_acts_rows(&a->rb, batch);
    vp_tensor w = PV(RISK_W), b = PV(RISK_B);
    vp_gemm_desc d = vp_gemm_plain(0, 1, batch, 1, m->cfg.hidden);
    d.epilogue = VP_EPI_BIAS;
    d.precision = m->precision;
    VP_TRY(vp_gemm(m->backend, &d, &h, &w, &b, &lg));
    return vp_unary(m->backend, VP_UNARY_SIGMOID, &lg, &s);
}

vp_status vp_model_rb_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    (void)params;
    if (!(m->cfg.risk_budget > 0.0f)) return VP_OK;
    vp_tensor gw = GV(RISK_W), gb = GV(RISK_B);
    if (!a->rb_dl) {
        VP_TRY(vp_fill(m->backend, &gw, 0.0f));
        return vp_fill(m->backend, &gb, 0.0f);
    }
    vp_tensor dl = vp_tensor_2d(a->rb_dl->data, VP_F32, a->rb_dl->mem, batch, 1), h = vp_acts_rows(&a->h, batch);
    // g w = dl^T h, g b = sum dl (h is detached: no input gradient)
    vp_gemm_desc d = vp_gemm_plain(1, 0, 1, m->cfg.hidden, batch);
    d.precision = m->precision;
    VP_TRY(vp_gemm(m->backend, &d, &dl, &h, NULL, &gw));
    return vp_reduce_cols(m->backend, VP_REDUCE_SUM, &dl, &gb);
}

vp_status vp_model_acts_set_rb_grad(vp_model_acts* a, const vp_tensor* d_logit) {
    VP_REQUIRE(a != NULL && a->model != NULL, VP_ERR_INVALID_ARG, "vp_model_acts_set_rb_grad: activations are NULL");
    const vp_model* m = a->model;
    if (!(m->cfg.risk_budget > 0.0f)) return VP_OK;
    if (d_logit) {
        VP_REQUIRE(a->for_backward, VP_ERR_STATE,
                   "vp_model_acts_set_rb_grad: the risk-budget gradient needs activations made for a backward");
        VP_TRY(vp_tensor_check_numel("vp_model_acts_set_rb_grad", "d_logit", m->backend, d_logit, VP_F32,
                                     a->max_batch));
    }
    a->rb_dl = d_logit;
    return VP_OK;
}

vp_tensor vp_model_risk_scale(const vp_model_acts* a) {
    vp_tensor t;
    memset(&t, 0, sizeof t);
    if (!a || !(a->model->cfg.risk_budget > 0.0f) || !(a->state & VP_ACTS_HEADS)) return t;
    return vp_tensor_1d(a->rb.data, VP_F32, a->rb.mem, a->batch);
}

vp_status vp_model_rb_loss(const vp_model* m, int64_t B, int T, const vp_tensor* iqn, const vp_tensor* taus,
                           const vp_tensor* actions, const vp_tensor* w, const vp_tensor* s, vp_tensor* loss,
                           vp_tensor* d_logit) {
    const char* fn = "vp_model_rb_loss";
    const vp_model_cfg* c = &m->cfg;
    const int A = vp_model_cfg_actions(c), nb = c->n_branches;
    VP_REQUIRE(c->risk_budget > 0.0f && T >= 1, VP_ERR_STATE, "%s: the risk-budget head is off or no taus", fn);
    VP_TRY(vp_tensor_check_numel(fn, "iqn", m->backend, iqn, VP_F32, B * T * A));
    VP_TRY(vp_tensor_check_numel(fn, "taus", m->backend, taus, VP_F32, B * T));
    VP_TRY(vp_tensor_check_numel(fn, "actions", m->backend, actions, VP_I32, B * nb));
    VP_TRY(vp_tensor_check_numel(fn, "w", m->backend, w, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "s", m->backend, s, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "loss", m->backend, loss, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "d_logit", m->backend, d_logit, VP_F32, B));
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(m->backend, &k));
    return k->rb_loss(m->backend, B, T, A, nb, c->branch_sizes[0], c->branch_sizes[1], VP_RISK_ALPHA, c->risk_budget,
                      (const float*)iqn->data, (const float*)taus->data, (const int32_t*)actions->data,
                      (const float*)w->data, (const float*)s->data, (float*)loss->data, (float*)d_logit->data);
}
