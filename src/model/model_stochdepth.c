/* Stochastic depth on the Mamba2 mixer's residual branch (Huang et al. 2016, "Deep Networks
 * with Stochastic Depth"; torchvision's stochastic_depth in "row" mode): in a training
 * forward, sample b's branch out_proj(yn) survives with probability 1 - p and is then scaled
 * by 1 / (1 - p), so its expected value is the branch itself; an inference forward is the
 * identity (the plain mixer, bit for bit). The uniforms come from the learner's Philox
 * stream (learner.c), one per sample per step. */
#include "model/hmops.h"
#include "model/model_internal.h"

vp_status vp_model_acts_set_drop(vp_model_acts* a, const vp_tensor* u) {
    VP_REQUIRE(a != NULL && a->model != NULL, VP_ERR_INVALID_ARG, "vp_model_acts_set_drop: activations are NULL");
    const vp_model* m = a->model;
    if (m->cfg.stoch_depth <= 0.0f) return VP_OK;
    if (u) {
        VP_REQUIRE(a->for_backward, VP_ERR_STATE,
                   "vp_model_acts_set_drop: stochastic depth needs activations made for a backward");
        VP_TRY(vp_tensor_check_numel("vp_model_acts_set_drop", "u", m->backend, u, VP_F32, a->max_batch));
    }
    a->sd_u = u;
    return VP_OK;
}

int vp_model_sd_active(const vp_model* m, const vp_model_acts* a) {
    return m->cfg.stoch_depth > 0.0f && m->cfg.encoder == VP_ENCODER_MAMBA2 && a->sd_u != NULL;
}

vp_status vp_model_sd_forward(const vp_model* m, vp_model_acts* a, const vp_tensor* yn, const vp_tensor* W,
                              const vp_tensor* last, vp_tensor* e, int64_t batch) {
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(m->backend, &k));
    const int64_t H = m->cfg.hidden;
    vp_tensor o = vp_acts_rows(&a->sd_o, batch);
    // o = yn W^T, the branch, then e = last + scale_b o
    vp_gemm_desc d = vp_gemm_plain(0, 1, batch, H, H);
    d.precision = m->precision;
    VP_TRY(vp_gemm(m->backend, &d, yn, W, NULL, &o));
    return k->sd_forward(m->backend, batch, H, m->cfg.stoch_depth, (const float*)a->sd_u->data,
                         (const float*)last->data, (const float*)o.data, (float*)a->sd_scale.data, (float*)e->data);
}

vp_status vp_model_sd_backward(const vp_model* m, vp_model_acts* a, const vp_tensor* de, vp_tensor* d_o,
                               int64_t batch) {
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(m->backend, &k));
    *d_o = vp_acts_rows(&a->sd_d, batch);
    return k->sd_backward(m->backend, batch, m->cfg.hidden, (const float*)a->sd_scale.data, (const float*)de->data,
                          (float*)d_o->data);
}
