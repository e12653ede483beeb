/* The backward: heads, portfolio projection, Mamba2 mixer and trunk, in reverse order of
 * the forward. Weight gradients are GEMMs (dW = dY^T X), bias gradients vp_reduce_cols,
 * per-sample partials of the model kernels are summed over the batch by vp_reduce_cols. */
#include <string.h>

#include "model/model_internal.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

/* The Mamba2 extents for `batch` samples. */
static vp_mamba_dims mamba_dims(const vp_model_cfg* c, int64_t batch) {
    vp_mamba_dims d = {batch, c->window, c->hidden, c->mamba_state, c->hidden / c->mamba_head_dim,
                       c->mamba_head_dim, c->mamba_conv};
    return d;
}

vp_status vp_model_combine_backward(const vp_model* m, vp_model_acts* a, const vp_tensor* d_log_probs, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int A = vp_model_cfg_actions(c);
    const vp_branch_map br = vp_model_branch_map(c);
    vp_tensor logp = vp_acts_rows(&a->logp, batch * A), dl = vp_acts_rows(&a->d_logit, batch * A);
    vp_tensor dlp = vp_tensor_2d(d_log_probs->data, VP_F32, d_log_probs->mem, batch * A, c->n_atoms);
    // through log_softmax, then the dueling combine
    VP_TRY(vp_log_softmax_backward(be, &logp, &dlp, &dl));
    return a->mops->dueling_backward(be, batch, c->n_atoms, &br, (const float*)dl.data, (float*)a->d_v.data,
                                     (float*)a->d_adv.data);
}

vp_status vp_model_iqn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* d_iqn,
                                int64_t batch) {
    vp_backend* be = m->backend;
    const int64_t Q = batch * a->n_taus;
    const int A = vp_model_cfg_actions(&m->cfg);
    vp_tensor dzq = vp_tensor_2d(d_iqn->data, VP_F32, d_iqn->mem, Q, A);
    vp_tensor cosf = vp_acts_rows(&a->cosf, Q), phi = vp_acts_rows(&a->phi, Q), mix = vp_acts_rows(&a->mix, Q);
    vp_tensor iq1 = vp_acts_rows(&a->iq1, Q), d_iq1 = vp_acts_rows(&a->d_iq1, Q);
    vp_tensor d_mix = vp_acts_rows(&a->d_mix, Q), d_phi = vp_acts_rows(&a->d_phi, Q);
    vp_tensor w1 = PV(IQN_L1_W), w2 = PV(IQN_L2_W), pw = PV(IQN_PHI_W);
    vp_tensor gw1 = GV(IQN_L1_W), gb1 = GV(IQN_L1_B), gw2 = GV(IQN_L2_W), gb2 = GV(IQN_L2_B);
    vp_tensor gpw = GV(IQN_PHI_W), gpb = GV(IQN_PHI_B);
    vp_tensor p_l1b = vp_acts_rows(&a->p_l1b, batch), p_phib = vp_acts_rows(&a->p_phib, batch);
    vp_tensor p_l2w = vp_acts_rows(&a->p_l2w, (batch + VP_IQN_W2_GROUP - 1) / VP_IQN_W2_GROUP);
    // d iq1 through L1's ReLU with L1's bias partials and L2's weight-gradient partials, one
    // pass over iq1; then L2's weight and bias gradients from their partials
    VP_TRY(a->mops->iqn_l2_backward(be, batch, a->n_taus, (int)vp_tensor_cols(&iq1), A, (const float*)iq1.data,
                                    (const float*)dzq.data, (const float*)w2.data, (float*)d_iq1.data,
                                    (float*)p_l1b.data, (float*)p_l2w.data));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_l2w, &gw2));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &dzq, &gb2));
    // L1's weight gradient on the lane (from here on nothing writes d iq1 or mix), its input
    // gradient here
    vp_backend* ln = a->lane ? a->lane : be;
    vp_gemm_desc gw = vp_gemm_plain(1, 0, vp_tensor_rows(&w1), vp_tensor_cols(&w1), Q);
    gw.precision = m->precision;
    VP_TRY(vp_backend_after(ln, be));
    VP_TRY(vp_gemm(ln, &gw, &d_iq1, &mix, NULL, &gw1));
    vp_gemm_desc gx = vp_gemm_plain(0, 0, Q, vp_tensor_cols(&w1), vp_tensor_rows(&w1));
    gx.precision = m->precision;
    VP_TRY(vp_gemm(be, &gx, &d_iq1, &w1, NULL, &d_mix));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_l1b, &gb1));
    // h * phi and phi's ReLU: d h accumulates into a->d_h, phi's bias partials per sample
    VP_TRY(a->mops->iqn_mix_backward(be, batch, a->n_taus, m->cfg.hidden, (const float*)a->h.data,
                                     (const float*)phi.data, (const float*)d_mix.data, (float*)a->d_h.data,
                                     (float*)d_phi.data, (float*)p_phib.data));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_phib, &gpb));
    // the cosine projection's weight gradient on the lane too (no input gradient: taus are
    // data); vp_model_backward joins the lane at its end
    vp_gemm_desc gp = vp_gemm_plain(1, 0, vp_tensor_rows(&pw), vp_tensor_cols(&pw), Q);
    gp.precision = m->precision;
    VP_TRY(vp_backend_after(ln, be));
    return vp_gemm(ln, &gp, &d_phi, &cosf, NULL, &gpw);
}

vp_status vp_model_gate_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    vp_tensor y = vp_acts_rows(&a->y, batch), z = vp_acts_rows(&a->z, batch), sz = vp_acts_rows(&a->sz, batch);
    vp_tensor g = vp_acts_rows(&a->g, batch), d_yn = vp_acts_rows(&a->d_yn, batch);
    vp_tensor d_g = vp_acts_rows(&a->d_g, batch), d_y = vp_acts_rows(&a->d_y, batch);
    vp_tensor d_z = vp_acts_rows(&a->d_z, batch);
    vp_tensor rstd = vp_acts_vec(&a->rms_rstd, batch);
    vp_tensor ng = PV(MAMBA_NORM_G), gng = GV(MAMBA_NORM_G);
    // RMSNorm, then g = y * silu(z)
    VP_TRY(vp_rmsnorm_backward(be, &d_yn, &g, &ng, &rstd, &d_g, &gng));
    VP_TRY(vp_binary(be, VP_BINARY_MUL, &d_g, &sz, &d_y));
    VP_TRY(vp_binary(be, VP_BINARY_MUL, &d_g, &y, &d_z));
    return vp_unary_backward(be, VP_UNARY_SILU, &z, &d_z, &d_z);
}

vp_status vp_model_mamba_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const vp_mamba_dims d = mamba_dims(c, batch);
    const int64_t H = c->hidden, R = batch * c->window, L = H + 2 * d.state + d.heads;
    vp_tensor de = vp_acts_rows(&a->d_h, batch), yn = vp_acts_rows(&a->yn, batch);
    vp_tensor d_yn = vp_acts_rows(&a->d_yn, batch), d_z = vp_acts_rows(&a->d_z, batch);
    vp_tensor d_last = vp_acts_rows(&a->d_last, batch), last = vp_acts_rows(&a->h2_last, batch);
    vp_tensor h2 = vp_acts_rows(&a->h2, R), d_xbcdt = vp_acts_rows(&a->d_xbcdt, R), d_t1 = vp_acts_rows(&a->d_t1, R);
    vp_tensor out_w = PV(MAMBA_OUT_W), g_out_w = GV(MAMBA_OUT_W);
    // out_proj (through the stochastic depth's scale when it dropped) and the gated RMSNorm
    vp_tensor d_o = de;
    if (vp_model_sd_active(m, a)) VP_TRY(vp_model_sd_backward(m, a, &de, &d_o, batch));
    VP_TRY(vp_model_linear_backward(m, &yn, &out_w, &d_o, &g_out_w, NULL, &d_yn, 0.0f));
    VP_TRY(vp_model_gate_backward(m, params, a, batch));
    // scan: input gradients and per-sample head partials, summed over the batch
    vp_tensor dtb = PV(MAMBA_DT_BIAS), alog = PV(MAMBA_A_LOG), dd = PV(MAMBA_D);
    VP_TRY(a->mops->scan_backward(be, &d, (const float*)a->xb.data, (const float*)a->c.data,
                                  (const float*)a->xbcdt.data, (const float*)a->dt.data, (const float*)dtb.data,
                                  (const float*)alog.data, (const float*)dd.data, (const float*)a->d_y.data,
                                  (float*)a->d_xb.data, (float*)a->d_c.data, (float*)d_xbcdt.data,
                                  (float*)a->p_alog.data, (float*)a->p_d.data, (float*)a->p_dtb.data));
    vp_tensor p_alog = vp_acts_rows(&a->p_alog, batch), p_d = vp_acts_rows(&a->p_d, batch);
    vp_tensor p_dtb = vp_acts_rows(&a->p_dtb, batch);
    vp_tensor g_alog = GV(MAMBA_A_LOG), g_d = GV(MAMBA_D), g_dtb = GV(MAMBA_DT_BIAS);
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_alog, &g_alog));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_d, &g_d));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_dtb, &g_dtb));
    // conv + SiLU
    vp_tensor cw = PV(MAMBA_CONV_W), g_cw = GV(MAMBA_CONV_W), g_cb = GV(MAMBA_CONV_B);
    VP_TRY(a->mops->conv_backward(be, &d, (const float*)a->xbcdt.data, (const float*)cw.data,
                                  (const float*)a->xb_pre.data, (const float*)a->c_pre.data,
                                  (const float*)a->d_xb.data, (const float*)a->d_c.data, (float*)d_xbcdt.data,
                                  (float*)a->p_convw.data, (float*)a->p_convb.data));
    vp_tensor p_cw = vp_acts_rows(&a->p_convw, batch), p_cb = vp_acts_rows(&a->p_convb, batch);
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_cw, &g_cw));
    VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, &p_cb, &g_cb));
    // in_proj: rows H.. saw every step, rows 0..H (z) the last step only
    vp_tensor w_z = vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, 0, H);
    vp_tensor w_rest = vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, H, L);
    vp_tensor g_z = vp_model_slot_rows(m, &m->grads, VP_PS_MAMBA_IN_W, 0, H);
    vp_tensor g_rest = vp_model_slot_rows(m, &m->grads, VP_PS_MAMBA_IN_W, H, L);
    VP_TRY(vp_model_linear_backward(m, &h2, &w_rest, &d_xbcdt, &g_rest, NULL, &d_t1, 0.0f));
    // the last step also gets the residual and z: d h2_K += de + dz W_z
    VP_TRY(vp_copy(be, &de, &d_last));
    VP_TRY(vp_model_linear_backward(m, &last, &w_z, &d_z, &g_z, NULL, &d_last, 1.0f));
    return a->mops->add_last(be, batch, c->window, H, (const float*)d_last.data, (float*)d_t1.data);
}

vp_status vp_model_trunk_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, vp_tensor* d_h2,
                                  int64_t batch) {
    vp_backend* be = m->backend;
    const int64_t R = batch * vp_model_trunk_steps(&m->cfg);
    vp_trunk_views t = vp_model_trunk_views(a, R);
    vp_tensor dx = vp_acts_rows(d_h2, R), da = vp_acts_rows(&a->d_t2, R);
    vp_tensor g1 = PV(TRUNK_LN1_G), w2 = vp_model_trunk_w2(m, params, a), g2 = PV(TRUNK_LN2_G);
    vp_tensor gg1 = GV(TRUNK_LN1_G), gbt1 = GV(TRUNK_LN1_B);
    vp_tensor gw2 = GV(TRUNK_W2), gb2 = GV(TRUNK_B2), gg2 = GV(TRUNK_LN2_G), gbt2 = GV(TRUNK_LN2_B);
    // second block: relu, LayerNorm, linear
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &t.h2, &dx, &dx));
    VP_TRY(vp_layernorm_backward(be, &dx, &t.a2, &g2, &t.mean2, &t.rstd2, &da, &gg2, &gbt2));
    VP_TRY(vp_model_linear_backward(m, &t.h1, &w2, &da, &gw2, &gb2, &dx, 0.0f));
    VP_TRY(vp_model_trunk_w2_backward(m, params, a));
    // first block (features need no gradient) and the input modules (model_input.c)
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &t.h1, &dx, &dx));
    VP_TRY(vp_layernorm_backward(be, &dx, &t.a1, &g1, &t.mean1, &t.rstd1, &da, &gg1, &gbt1));
    return vp_model_first_backward(m, params, a, &da, R);
}

/* Zeroes the gradients of the IQN head (a backward without d iqn). */
static vp_status zero_iqn_grads(vp_model* m) {
    const vp_pslot s[6] = {VP_PS_IQN_PHI_W, VP_PS_IQN_PHI_B, VP_PS_IQN_L1_W, VP_PS_IQN_L1_B, VP_PS_IQN_L2_W,
                           VP_PS_IQN_L2_B};
    for (int i = 0; i < 6; ++i) {
        vp_tensor g = vp_model_slot(m, &m->grads, s[i]);
        VP_TRY(vp_fill(m->backend, &g, 0.0f));
    }
    return VP_OK;
}

vp_status vp_model_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* d_log_probs,
                            const vp_tensor* d_iqn) {
    const char* fn = "vp_model_backward";
    VP_REQUIRE(m != NULL && m->info != NULL && a != NULL, VP_ERR_INVALID_ARG, "%s: model or activations are NULL", fn);
    VP_TRY(vp_tensor_check_numel(fn, "params", m->backend, params, VP_F32, m->n_weights));
    VP_REQUIRE(a->for_backward, VP_ERR_STATE, "%s: the activations were made for forward only", fn);
    const int need = VP_ACTS_ENCODED | VP_ACTS_HEADS | VP_ACTS_OWN_ENC;
    VP_REQUIRE((a->state & need) == need, VP_ERR_STATE,
               "%s: no forward with the activations' own encoding precedes this backward", fn);
    const vp_model_cfg* c = &m->cfg;
    const int64_t B = a->batch, A = vp_model_cfg_actions(c);
    char ds[96];
    VP_TRY(vp_tensor_check(fn, "d_log_probs", m->backend, d_log_probs, VP_F32));
    VP_REQUIRE(vp_tensor_numel(d_log_probs) == B * A * c->n_atoms, VP_ERR_SHAPE,
               "%s: d_log_probs is %s, expected [%lld, %lld, %d]", fn, vp_tensor_describe(d_log_probs, ds, sizeof ds),
               (long long)B, (long long)A, c->n_atoms);
    if (d_iqn) {
        VP_REQUIRE(a->state & VP_ACTS_IQN, VP_ERR_STATE, "%s: d_iqn given but the forward ran no IQN head", fn);
        VP_TRY(vp_tensor_check(fn, "d_iqn", m->backend, d_iqn, VP_F32));
        VP_REQUIRE(vp_tensor_numel(d_iqn) == B * a->n_taus * A, VP_ERR_SHAPE,
                   "%s: d_iqn is %s, expected [%lld, %d, %lld]", fn, vp_tensor_describe(d_iqn, ds, sizeof ds),
                   (long long)B, a->n_taus, (long long)A);
    }
    vp_backend* be = m->backend;
    vp_tensor h = vp_acts_rows(&a->h, B), d_h = vp_acts_rows(&a->d_h, B);
    // C51: combine, value and advantage streams; d h is written by the value stream
    VP_TRY(vp_model_combine_backward(m, a, d_log_probs, B));
    vp_tensor v1 = vp_acts_rows(&a->v1, B), ah = vp_acts_rows(&a->ah, B);
    vp_tensor d_v = vp_acts_rows(&a->d_v, B), d_adv = vp_acts_rows(&a->d_adv, B);
    vp_tensor d_v1 = vp_acts_rows(&a->d_v1, B), d_ah = vp_acts_rows(&a->d_ah, B);
    vp_tensor v1w = PV(C51_V1_W), v2w = PV(C51_V2_W), a1w = PV(C51_A1_W), a2w = PV(C51_A2_W);
    vp_tensor gv1w = GV(C51_V1_W), gv1b = GV(C51_V1_B), gv2w = GV(C51_V2_W), gv2b = GV(C51_V2_B);
    vp_tensor ga1w = GV(C51_A1_W), ga1b = GV(C51_A1_B), ga2w = GV(C51_A2_W), ga2b = GV(C51_A2_B);
    VP_TRY(vp_model_linear_backward(m, &v1, &v2w, &d_v, &gv2w, &gv2b, &d_v1, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &v1, &d_v1, &d_v1));
    VP_TRY(vp_model_linear_backward(m, &h, &v1w, &d_v1, &gv1w, &gv1b, &d_h, 0.0f));
    if (c->cross_branch)
        VP_TRY(vp_model_xb_backward(m, params, a, B));
    else
        VP_TRY(vp_model_linear_backward(m, &ah, &a2w, &d_adv, &ga2w, &ga2b, &d_ah, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_RELU, &ah, &d_ah, &d_ah));
    VP_TRY(vp_model_linear_backward(m, &h, &a1w, &d_ah, &ga1w, &ga1b, &d_h, 1.0f));
    // the Q-denoise refinement and the risk-budget head (both detached), then IQN adds its share of d h
    VP_TRY(vp_model_qd_backward(m, params, a, B));
    VP_TRY(vp_model_rb_backward(m, params, a, B));
    if (d_iqn) {
        VP_TRY(vp_model_iqn_backward(m, params, a, d_iqn, B));
    } else {
        VP_TRY(zero_iqn_grads(m));
    }
    // portfolio projection: d e = d h
    vp_tensor port = vp_acts_rows(&a->port, B), pw = PV(PORT_W), gpw = GV(PORT_W), gpb = GV(PORT_B);
    VP_TRY(vp_model_linear_backward(m, &port, &pw, &d_h, &gpw, &gpb, NULL, 0.0f));
    // the encoder (d e = d h), then the trunk; the IQN weight gradients' lane joined
    const vp_status st = vp_model_encoder_backward(m, params, a, B);
    const vp_status j = a->lane && d_iqn ? vp_backend_after(m->backend, a->lane) : VP_OK;
    VP_TRY(st);
    return j;
}

vp_status vp_model_encoder_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    // Mamba2 and TLOB leave d h2 in d_t1; without a mixer d h2 (last bar only) is d e
    switch (m->cfg.encoder) {
    case VP_ENCODER_MAMBA2: VP_TRY(vp_model_mamba_backward(m, params, a, batch)); break;
    case VP_ENCODER_TLOB: VP_TRY(vp_model_tlob_backward(m, params, a, batch)); break;
    default: {
        vp_tensor d_h = vp_acts_rows(&a->d_h, batch), d_t1 = vp_acts_rows(&a->d_t1, batch);
        VP_TRY(vp_copy(m->backend, &d_h, &d_t1));
    }
    }
    return vp_model_trunk_backward(m, params, a, &a->d_t1, batch);
}

vp_status vp_model_encoder_backward_from(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* d_e,
                                         int64_t batch) {
    vp_tensor de = vp_acts_rows(&a->d_h, batch);
    VP_TRY(vp_copy(m->backend, d_e, &de));
    return vp_model_encoder_backward(m, params, a, batch);
}
