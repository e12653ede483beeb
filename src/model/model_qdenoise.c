/* Q-denoise refinement: a residual MLP over the action-value vector, A -> 2A -> A,
 *   q = q_c51 + W2 relu(W1 q_c51 + b1) + b2,
 * applied to the C51 expected values that actions are chosen by. Its input is detached: the
 * refinement learns from its own loss (vp_model_qd_loss: regression of the refined Q of the
 * taken head onto the C51 expectation of the projected target), and the C51 and IQN losses
 * and their gradients stay those of the network without it. W2 and b2 start at zero, so the
 * refinement starts as the identity. Written with the ops, so both backends run it. */
#include "model/hmops.h"
#include "model/model_internal.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

vp_status vp_model_qd_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    if (!m->cfg.q_denoise) return VP_OK;
    vp_tensor q = vp_acts_rows(&a->q, batch), qc = vp_acts_rows(&a->q_c51, batch), h = vp_acts_rows(&a->qd_h, batch);
    vp_tensor w1 = PV(QD_W1), b1 = PV(QD_B1), w2 = PV(QD_W2), b2 = PV(QD_B2);
    // keep the C51 values, then q += W2 relu(W1 q + b1) + b2
    VP_TRY(vp_copy(m->backend, &q, &qc));
    VP_TRY(vp_model_linear(m, &qc, &w1, &b1, VP_EPI_BIAS_RELU, 0.0f, &h));
    return vp_model_linear(m, &h, &w2, &b2, VP_EPI_BIAS, 1.0f, &q);
}

vp_status vp_model_qd_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    if (!m->cfg.q_denoise) return VP_OK;
    vp_backend* be = m->backend;
    vp_tensor gw1 = GV(QD_W1), gb1 = GV(QD_B1), gw2 = GV(QD_W2), gb2 = GV(QD_B2);
    if (!a->qd_dq) {
        vp_tensor g[4] = {gw1, gb1, gw2, gb2};
        for (int i = 0; i < 4; ++i) VP_TRY(vp_fill(be, &g[i], 0.0f));
        return VP_OK;
    }
    const int64_t A = vp_model_cfg_actions(&m->cfg);
    vp_tensor dq = vp_tensor_2d(a->qd_dq->data, VP_F32, a->qd_dq->mem, batch, A);
    vp_tensor qc = vp_acts_rows(&a->q_c51, batch), h = vp_acts_rows(&a->qd_h, batch);
    vp_tensor dh = vp_acts_rows(&a->qd_dh, batch), w1 = PV(QD_W1), w2 = PV(QD_W2);
    // output layer, then through the relu to the hidden layer (the input q_c51 is detached)
    VP_TRY(vp_model_linear_backward(m, &h, &w2, &dq, &gw2, &gb2, &dh, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &h, &dh, &dh));
    return vp_model_linear_backward(m, &qc, &w1, &dh, &gw1, &gb1, NULL, 0.0f);
}

vp_status vp_model_acts_set_qd_grad(vp_model_acts* a, const vp_tensor* d_q) {
    VP_REQUIRE(a != NULL && a->model != NULL, VP_ERR_INVALID_ARG, "vp_model_acts_set_qd_grad: activations are NULL");
    const vp_model* m = a->model;
    if (!m->cfg.q_denoise) return VP_OK;
    if (d_q) {
        VP_REQUIRE(a->for_backward, VP_ERR_STATE,
                   "vp_model_acts_set_qd_grad: the Q-denoise gradient needs activations made for a backward");
        VP_TRY(vp_tensor_check_numel("vp_model_acts_set_qd_grad", "d_q", m->backend, d_q, VP_F32,
                                     a->max_batch * vp_model_cfg_actions(&m->cfg)));
    }
    a->qd_dq = d_q;
    return VP_OK;
}

vp_tensor vp_model_q_c51(const vp_model_acts* a) {
    if (a && a->model->cfg.q_denoise && (a->state & VP_ACTS_HEADS)) return vp_acts_rows(&a->q_c51, a->batch);
    return vp_model_q(a);
}

vp_status vp_model_qd_loss(const vp_model* m, int64_t B, const vp_tensor* proj, const vp_tensor* actions,
                           const vp_tensor* w, const vp_tensor* q, vp_tensor* loss, vp_tensor* d_q) {
    const char* fn = "vp_model_qd_loss";
    const vp_model_cfg* c = &m->cfg;
    const int64_t A = vp_model_cfg_actions(c), nb = c->n_branches;
    VP_TRY(vp_tensor_check_numel(fn, "proj", m->backend, proj, VP_F32, B * nb * c->n_atoms));
    VP_TRY(vp_tensor_check_numel(fn, "actions", m->backend, actions, VP_I32, B * nb));
    VP_TRY(vp_tensor_check_numel(fn, "w", m->backend, w, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "q", m->backend, q, VP_F32, B * A));
    VP_TRY(vp_tensor_check_numel(fn, "loss", m->backend, loss, VP_F32, B));
    VP_TRY(vp_tensor_check_numel(fn, "d_q", m->backend, d_q, VP_F32, B * A));
    const vp_hmops* k = NULL;
    VP_TRY(vp_hmops_get(m->backend, &k));
    vp_branch_map br = {c->n_branches, {0}};
    for (int i = 0; i < c->n_branches; ++i) br.size[i] = c->branch_sizes[i];
    return k->qd_loss(m->backend, B, c->n_atoms, c->v_min, c->v_max, &br, (const float*)proj->data,
                      (const int32_t*)actions->data, (const float*)w->data, (const float*)q->data,
                      (float*)loss->data, (float*)d_q->data);
}
