/* Spectral normalisation of the trunk's linear layers (docs/modules.md, "Spectral
 * normalisation"), torch.nn.utils.spectral_norm with one power iteration: every forward runs
 * the power step from the kept u of the parameters it is given and multiplies by W / sigma;
 * vp_model_commit keeps the step's u and v (once per learner step). The gradient treats u and
 * v as constants, as PyTorch's does. trunk.w1 is normalised only when it exists (no KAN). */
#include "model/model_input.h"


/* One weight's power step: W [rows, cols] and its kept u -> a's u, v, sigma[which], W / sigma. */
static vp_status power_step(const vp_model* m, const vp_tensor* params, vp_model_acts* a, vp_pslot w, vp_pslot u0,
                            vp_tensor* u, vp_tensor* v, int which, vp_tensor* w_sn) {
    vp_tensor W = vp_model_slot(m, params, w), U0 = vp_model_slot(m, params, u0);
    const int64_t rows = vp_tensor_rows(&W), cols = vp_tensor_cols(&W);
    return a->inops->sn_forward(m->backend, rows, cols, (const float*)W.data, (const float*)U0.data, (float*)u->data,
                                (float*)v->data, (float*)a->sn_sigma.data + which, (float*)w_sn->data);
}

vp_status vp_model_sn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a) {
    if (m->slot[VP_PS_SN_U1] >= 0)
        VP_TRY(power_step(m, params, a, VP_PS_TRUNK_W1, VP_PS_SN_U1, &a->sn_u1, &a->sn_v1, 0, &a->sn_w1));
    return power_step(m, params, a, VP_PS_TRUNK_W2, VP_PS_SN_U2, &a->sn_u2, &a->sn_v2, 1, &a->sn_w2);
}

vp_status vp_model_sn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int which) {
    const vp_pslot ws = which ? VP_PS_TRUNK_W2 : VP_PS_TRUNK_W1;
    vp_tensor W = vp_model_slot(m, params, ws), G = vp_model_slot(m, &m->grads, ws);
    const vp_tensor* u = which ? &a->sn_u2 : &a->sn_u1;
    const vp_tensor* v = which ? &a->sn_v2 : &a->sn_v1;
    return a->inops->sn_backward(m->backend, vp_tensor_rows(&W), vp_tensor_cols(&W), (const float*)W.data,
                                 (const float*)u->data, (const float*)v->data, (const float*)a->sn_sigma.data + which,
                                 (float*)G.data);
}

vp_status vp_model_sn_zero_grads(vp_model* m) {
    // u and v are buffers, not parameters: their slots of the gradient are zero (AdamW leaves them)
    const vp_pslot s[4] = {VP_PS_SN_U1, VP_PS_SN_V1, VP_PS_SN_U2, VP_PS_SN_V2};
    for (int i = 0; i < 4; ++i) {
        if (m->slot[s[i]] < 0) continue;
        vp_tensor g = vp_model_slot(m, &m->grads, s[i]);
        VP_TRY(vp_fill(m->backend, &g, 0.0f));
    }
    return VP_OK;
}
