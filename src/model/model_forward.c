/* The forward: trunk, Mamba2 mixer, portfolio projection, C51 and IQN heads, written
 * against the op interface plus the model kernels (mops.h). */
#include <string.h>

#include "model/model_atoms.h"
#include "model/model_internal.h"

vp_mamba_dims vp_model_mamba_dims(const vp_model_cfg* c, int64_t batch) {
    vp_mamba_dims d = {batch, c->window, c->hidden, c->mamba_state, c->hidden / c->mamba_head_dim,
                       c->mamba_head_dim, c->mamba_conv};
    return d;
}

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)

vp_status vp_model_trunk_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                 const vp_tensor* features, const vp_tensor* bar_idx, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int Kt = vp_model_trunk_steps(c);
    const int64_t R = batch * Kt;
    vp_tensor idx = vp_acts_vec(&a->idx, R);
    vp_trunk_views t = vp_model_trunk_views(a, R);
    // window rows t-Kt+1..t of every sample, clamped at row 0, gathered from the features
    VP_TRY(a->mops->window_index(be, batch, Kt, (const int32_t*)bar_idx->data, (int32_t*)idx.data));
    VP_TRY(vp_gather_rows(be, features, &idx, &t.x0));
    return vp_model_trunk_rows(m, params, a, R, &t.h2);
}

vp_status vp_model_trunk_rows(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R,
                              vp_tensor* h2) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    vp_trunk_views t = vp_model_trunk_views(a, R);
    vp_tensor g1 = PV(TRUNK_LN1_G), bt1 = PV(TRUNK_LN1_B);
    vp_tensor w2 = vp_model_trunk_w2(m, params, a), b2 = PV(TRUNK_B2), g2 = PV(TRUNK_LN2_G), bt2 = PV(TRUNK_LN2_B);
    // h1 = relu(LN(W1 f + b1)); the first layer with the input modules (model_input.c)
    VP_TRY(vp_model_first_forward(m, params, a, R));
    VP_TRY(vp_layernorm_relu(be, &t.a1, &g1, &bt1, c->ln_eps, &t.h1, &t.mean1, &t.rstd1));
    // h2 = relu(LN(W2 h1 + b2))
    VP_TRY(vp_model_linear(m, &t.h1, &w2, &b2, VP_EPI_BIAS, 0.0f, &t.a2));
    return vp_layernorm_relu(be, &t.a2, &g2, &bt2, c->ln_eps, h2, &t.mean2, &t.rstd2);
}

vp_status vp_model_gate_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    vp_tensor y = vp_acts_rows(&a->y, batch), z = vp_acts_rows(&a->z, batch), sz = vp_acts_rows(&a->sz, batch);
    vp_tensor g = vp_acts_rows(&a->g, batch), yn = vp_acts_rows(&a->yn, batch);
    vp_tensor rstd = vp_acts_vec(&a->rms_rstd, batch);
    vp_tensor ng = PV(MAMBA_NORM_G);
    // yn = RMSNorm(y * silu(z)) * g
    VP_TRY(vp_unary(be, VP_UNARY_SILU, &z, &sz));
    VP_TRY(vp_binary(be, VP_BINARY_MUL, &y, &sz, &g));
    return vp_rmsnorm(be, &g, &ng, m->cfg.rms_eps, &yn, &rstd);
}

vp_status vp_model_mamba_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t H = c->hidden, R = batch * c->window;
    vp_tensor h2 = vp_acts_rows(&a->h2, R), last = vp_acts_rows(&a->h2_last, batch);
    vp_tensor xbcdt = vp_acts_rows(&a->xbcdt, R), w_rest = vp_model_mamba_w_rest(m, params);
    // in_proj: x, B, C, dt at every step; z at the last step only (the mix)
    VP_TRY(a->mops->take_last(be, batch, c->window, H, (const float*)h2.data, (float*)last.data));
    VP_TRY(vp_model_linear(m, &h2, &w_rest, NULL, VP_EPI_NONE, 0.0f, &xbcdt));
    return vp_model_mamba_mix_forward(m, params, a, batch);
}

vp_tensor vp_model_mamba_w_rest(const vp_model* m, const vp_tensor* params) {
    const vp_model_cfg* c = &m->cfg;
    const int64_t H = c->hidden, L = H + 2 * c->mamba_state + H / c->mamba_head_dim;
    return vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, H, L);
}

vp_status vp_model_mamba_mix_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const vp_mamba_dims d = vp_model_mamba_dims(c, batch);
    const int64_t H = c->hidden;
    vp_tensor last = vp_acts_rows(&a->h2_last, batch), z = vp_acts_rows(&a->z, batch);
    vp_tensor xbcdt = vp_acts_rows(&a->xbcdt, batch * c->window);
    vp_tensor yn = vp_acts_rows(&a->yn, batch), e = vp_acts_rows(&a->e, batch);
    vp_tensor w_z = vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, 0, H);
    vp_tensor out_w = PV(MAMBA_OUT_W);
    VP_TRY(vp_model_linear(m, &last, &w_z, NULL, VP_EPI_NONE, 0.0f, &z));
    // causal conv + SiLU, then the scan to the last step's y
    vp_tensor cw = PV(MAMBA_CONV_W), cb = PV(MAMBA_CONV_B);
    VP_TRY(a->mops->conv_forward(be, &d, (const float*)xbcdt.data, (const float*)cw.data, (const float*)cb.data,
                                 (float*)a->xb_pre.data, (float*)a->xb.data, (float*)a->c_pre.data,
                                 (float*)a->c.data));
    vp_tensor dtb = PV(MAMBA_DT_BIAS), alog = PV(MAMBA_A_LOG), dd = PV(MAMBA_D);
    VP_TRY(a->mops->scan_forward(be, &d, (const float*)a->xb.data, (const float*)a->c.data,
                                 (const float*)xbcdt.data, (const float*)dtb.data, (const float*)alog.data,
                                 (const float*)dd.data, (float*)a->dt.data, (float*)a->y.data));
    // gated RMSNorm, out_proj and the residual: e = h2_K + out_proj(yn)
    VP_TRY(vp_model_gate_forward(m, params, a, batch));
    if (vp_model_sd_active(m, a)) return vp_model_sd_forward(m, a, &yn, &out_w, &last, &e, batch);
    VP_TRY(vp_copy(be, &last, &e));
    return vp_model_linear(m, &yn, &out_w, NULL, VP_EPI_NONE, 1.0f, &e);
}

vp_status vp_model_encoder_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    switch (m->cfg.encoder) {
    case VP_ENCODER_MAMBA2: return vp_model_mamba_forward(m, params, a, batch);
    case VP_ENCODER_TLOB: return vp_model_tlob_forward(m, params, a, batch);
    default: return VP_OK; // none: e aliases h2, the last bar's trunk output
    }
}

vp_status vp_model_combine_forward(const vp_model* m, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int A = vp_model_cfg_actions(c);
    const vp_branch_map br = vp_model_branch_map(c);
    vp_tensor logp = vp_acts_rows(&a->logp, batch * A);
    // logits of the dueling branches, log-probabilities over atoms, expected values
    if (!c->adaptive_atoms) {
        // the padded heads' rows (vp_model_heads_out_padded) or the dense ones
        const int pad = a->pad_heads;
        const vp_tensor *v = pad ? &a->v_pad : &a->v, *adv = pad ? &a->adv_pad : &a->adv;
        return a->mops->c51_head(be, batch, c->n_atoms, &br, c->v_min, c->v_max, (const float*)v->data,
                                 vp_tensor_cols(v), (const float*)adv->data, vp_tensor_cols(adv),
                                 a->q_only && pad ? NULL : (float*)logp.data, (float*)a->q.data);
    }
    // a learned support: its own expected values (model_atoms.c)
    VP_TRY(a->mops->dueling_forward(be, batch, c->n_atoms, &br, (const float*)a->v.data, (const float*)a->adv.data,
                                    (float*)logp.data));
    VP_TRY(vp_log_softmax(be, &logp, &logp));
    return vp_model_atoms_q(m, a, batch);
}

int vp_model_heads_padded(const vp_model_cfg* c) {
    const int A = vp_model_cfg_actions(c);
    return !c->cross_branch && !c->adaptive_atoms && (c->n_atoms % 4 != 0 || (A * c->n_atoms) % 4 != 0);
}

vp_status vp_model_heads_out_padded(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    const vp_model_cfg* c = &m->cfg;
    const int64_t Z = c->n_atoms, AZ = (int64_t)vp_model_cfg_actions(c) * Z, HH = c->head_hidden;
    const int64_t Zp = vp_tensor_cols(&a->v_pad), AZp = vp_tensor_cols(&a->adv_pad);
    float* w = (float*)a->head_w_pad.data;
    vp_tensor v2w = PV(C51_V2_W), v2b = PV(C51_V2_B), a2w = PV(C51_A2_W), a2b = PV(C51_A2_B);
    // the copy, unless one from these parameters is held (vp_model_acts_hold_params)
    if (!(a->params_held && a->pad_of == params->data)) {
        VP_TRY(a->mops->c51_pad(m->backend, (int)Z, (int)AZ, (int)HH, (const float*)v2w.data,
                                (const float*)v2b.data, (const float*)a2w.data, (const float*)a2b.data, w));
        a->pad_of = params->data;
    }
    const vp_mem mem = a->head_w_pad.mem;
    vp_tensor pv2w = vp_tensor_2d(w, VP_F32, mem, Zp, HH), pv2b = vp_tensor_1d(w + Zp * HH, VP_F32, mem, Zp);
    vp_tensor pa2w = vp_tensor_2d(w + Zp * HH + Zp, VP_F32, mem, AZp, HH);
    vp_tensor pa2b = vp_tensor_1d(w + Zp * HH + Zp + AZp * HH, VP_F32, mem, AZp);
    vp_tensor v1 = vp_acts_rows(&a->v1, batch), ah = vp_acts_rows(&a->ah, batch);
    vp_tensor v = vp_acts_rows(&a->v_pad, batch), adv = vp_acts_rows(&a->adv_pad, batch);
    VP_TRY(vp_model_linear(m, &v1, &pv2w, &pv2b, VP_EPI_BIAS, 0.0f, &v));
    return vp_model_linear(m, &ah, &pa2w, &pa2b, VP_EPI_BIAS, 0.0f, &adv);
}

/* Whether the IQN embedding runs as the one-pass CUDA kernel: TF32 products on a CUDA backend
 * at the widths it is built for (mops.h). The CPU keeps the op path, whose row-exact products
 * the rollouts rely on; FP32 runs keep it too. */
static int iqn_embed_one_pass(const vp_model* m) {
    return vp_backend_get_kind(m->backend) == VP_BACKEND_CUDA && m->precision == VP_PREC_TF32 &&
           m->cfg.iqn_cos == VP_IQN_EMBED_NC && m->cfg.hidden == VP_IQN_EMBED_H;
}

vp_status vp_model_iqn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* taus,
                               int64_t batch, int n_taus) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t Q = batch * n_taus;
    vp_tensor cosf = vp_acts_rows(&a->cosf, Q), phi = vp_acts_rows(&a->phi, Q), mix = vp_acts_rows(&a->mix, Q);
    vp_tensor iq1 = vp_acts_rows(&a->iq1, Q), zq = vp_acts_rows(&a->zq, Q);
    vp_tensor pw = PV(IQN_PHI_W), pb = PV(IQN_PHI_B), w1 = PV(IQN_L1_W), b1 = PV(IQN_L1_B);
    vp_tensor w2 = PV(IQN_L2_W), b2 = PV(IQN_L2_B);
    if (iqn_embed_one_pass(m)) {
        // h * relu(Linear(cos(pi i tau))) in one kernel; cosines and phi kept only for a backward
        const vp_iqn_dims d = {batch, n_taus, c->iqn_cos, c->hidden};
        const int keep = a->for_backward;
        VP_TRY(a->mops->iqn_embed(be, &d, (const float*)taus->data, (const float*)a->h.data, (const float*)pw.data,
                                  (const float*)pb.data, keep ? (float*)cosf.data : NULL,
                                  keep ? (float*)phi.data : NULL, (float*)mix.data));
    } else {
        // phi(tau) = relu(Linear(cos(pi i tau))), then h * phi
        VP_TRY(a->mops->iqn_cos(be, Q, c->iqn_cos, (const float*)taus->data, (float*)cosf.data));
        VP_TRY(vp_model_linear(m, &cosf, &pw, &pb, VP_EPI_BIAS_RELU, 0.0f, &phi));
        VP_TRY(a->mops->iqn_mix_forward(be, batch, n_taus, c->hidden, (const float*)a->h.data,
                                        (const float*)phi.data, (float*)mix.data));
    }
    // Z_tau = L2(relu(L1(h * phi)))
    VP_TRY(vp_model_linear(m, &mix, &w1, &b1, VP_EPI_BIAS_RELU, 0.0f, &iq1));
    return vp_model_linear(m, &iq1, &w2, &b2, VP_EPI_BIAS, 0.0f, &zq);
}

/* v1 = relu(h V1^T + b_v1) and ah = relu(h A1^T + b_a1): one product of two batches (h
 * broadcast) where the two layers' weights and biases lie the same distance apart in the
 * parameters (their layout puts v2 between them, so they do), else two. Each batch is the
 * layer's own product. */
static vp_status hidden_pair(const vp_model* m, vp_model_acts* a, const vp_tensor* h, const vp_tensor* v1w,
                             const vp_tensor* v1b, const vp_tensor* a1w, const vp_tensor* a1b, int64_t batch) {
    vp_tensor v1 = vp_acts_rows(&a->v1, batch), ah = vp_acts_rows(&a->ah, batch);
    const float *vw = (const float*)v1w->data, *aw = (const float*)a1w->data;
    const float *vb = (const float*)v1b->data, *ab = (const float*)a1b->data;
    const int64_t HH = vp_tensor_rows(v1w), H = vp_tensor_cols(v1w), sw = aw - vw;
    const int64_t sc = (const float*)ah.data - (const float*)v1.data;
    if (sw <= 0 || ab - vb != sw || sc < batch * HH) {
        VP_TRY(vp_model_linear(m, h, v1w, v1b, VP_EPI_BIAS_RELU, 0.0f, &v1));
        return vp_model_linear(m, h, a1w, a1b, VP_EPI_BIAS_RELU, 0.0f, &ah);
    }
    vp_gemm_desc d = vp_gemm_plain(0, 1, batch, HH, H);
    d.batch = 2;
    d.stride_a = 0;
    d.stride_b = sw;
    d.stride_bias = sw;
    d.stride_c = sc;
    d.epilogue = VP_EPI_BIAS_RELU;
    d.precision = m->precision;
    vp_tensor W = vp_tensor_1d((void*)vw, VP_F32, v1w->mem, sw + HH * H);
    vp_tensor bias = vp_tensor_1d((void*)vb, VP_F32, v1b->mem, sw + HH);
    vp_tensor C = vp_tensor_1d(v1.data, VP_F32, v1.mem, sc + batch * HH);
    return vp_gemm(m->backend, &d, h, &W, &bias, &C);
}

/* Whether a's forward takes Q from the folded output layers: marked so (vp_model_acts_fold_heads),
 * laid out for them (CUDA, forward only, heads c51_fold_q serves) and TF32 products. */
static int fold_serves(const vp_model* m, const vp_model_acts* a) {
    return a->fold_heads && a->head_fold.data != NULL && m->precision == VP_PREC_TF32;
}

/* q from v1 and ah through the folded output layers, folded again unless held ones are these
 * parameters' (vp_model_acts_hold_params). */
static vp_status fold_q(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    const vp_model_cfg* c = &m->cfg;
    const vp_branch_map br = vp_model_branch_map(c);
    const int HH = c->head_hidden;
    float* fold = (float*)a->head_fold.data;
    if (!(a->params_held && a->fold_of == params->data)) {
        vp_tensor v2w = PV(C51_V2_W), v2b = PV(C51_V2_B), a2w = PV(C51_A2_W), a2b = PV(C51_A2_B);
        VP_TRY(a->mops->c51_fold(m->backend, HH, c->n_atoms, &br, (const float*)v2w.data, (const float*)v2b.data,
                                 (const float*)a2w.data, (const float*)a2b.data, fold));
        a->fold_of = params->data;
    }
    return a->mops->c51_fold_q(m->backend, batch, HH, c->n_atoms, &br, c->v_min, c->v_max, (const float*)a->v1.data,
                               (const float*)a->ah.data, HH, fold, (float*)a->q.data);
}

/* Checks the model, parameters, activations and batch of a public call. */
static vp_status check_call(const char* fn, const vp_model* m, const vp_tensor* params, const vp_model_acts* a,
                            int64_t batch) {
    VP_REQUIRE(m != NULL && m->info != NULL, VP_ERR_INVALID_ARG, "%s: model is NULL or not initialised", fn);
    VP_REQUIRE(a != NULL && a->model != NULL, VP_ERR_INVALID_ARG, "%s: activations are NULL", fn);
    VP_REQUIRE(a->model->cfg.hidden == m->cfg.hidden && a->model->n_weights == m->n_weights, VP_ERR_INVALID_ARG,
               "%s: activations were made for another model", fn);
    VP_TRY(vp_tensor_check_numel(fn, "params", m->backend, params, VP_F32, m->n_weights));
    VP_REQUIRE(batch >= 1 && batch <= a->max_batch, VP_ERR_SHAPE, "%s: batch %lld outside [1, %lld] of the activations",
               fn, (long long)batch, (long long)a->max_batch);
    return VP_OK;
}

vp_status vp_model_encode(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* features,
                          const vp_tensor* bar_idx, int64_t batch) {
    const char* fn = "vp_model_encode";
    VP_TRY(check_call(fn, m, params, a, batch));
    VP_TRY(vp_tensor_check_min_rows(fn, "features", m->backend, features, VP_F32, 1, m->cfg.n_features));
    VP_TRY(vp_tensor_check_min_rows(fn, "bar_idx", m->backend, bar_idx, VP_I32, batch, 0));
    a->state = 0;
    a->batch = batch;
    VP_TRY(vp_model_trunk_forward(m, params, a, features, bar_idx, batch));
    VP_TRY(vp_model_encoder_forward(m, params, a, batch));
    a->state = VP_ACTS_ENCODED;
    return VP_OK;
}

vp_status vp_model_heads(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* enc,
                         const vp_tensor* portfolio, const vp_tensor* taus, int64_t batch) {
    const char* fn = "vp_model_heads";
    VP_TRY(check_call(fn, m, params, a, batch));
    const vp_model_cfg* c = &m->cfg;
    if (enc) {
        VP_TRY(vp_tensor_check_min_rows(fn, "enc", m->backend, enc, VP_F32, batch, c->hidden));
    } else {
        VP_REQUIRE((a->state & VP_ACTS_ENCODED) && a->batch == batch, VP_ERR_STATE,
                   "%s: enc is NULL but the activations hold no encoding of %lld samples", fn, (long long)batch);
    }
    VP_TRY(vp_tensor_check_min_rows(fn, "portfolio", m->backend, portfolio, VP_F32, batch, c->n_portfolio));
    int n_taus = 0;
    if (taus) {
        n_taus = (int)vp_tensor_cols(taus);
        VP_TRY(vp_tensor_check_min_rows(fn, "taus", m->backend, taus, VP_F32, batch, n_taus));
        VP_REQUIRE(n_taus <= a->max_taus, VP_ERR_SHAPE, "%s: %d taus per sample, the activations hold %d", fn, n_taus,
                   a->max_taus);
    }
    vp_backend* be = m->backend;
    int own = enc == NULL;
    vp_tensor e = own ? vp_acts_rows(&a->e, batch) : vp_acts_rows(enc, batch);
    a->state = own ? (a->state & VP_ACTS_ENCODED) | VP_ACTS_OWN_ENC : 0;
    a->batch = batch;
    a->n_taus = 0;
    // h = e + Wp p + bp (the portfolio is kept for the backward; a forward-only pass reads
    // the caller's rows in place: the same values, one copy fewer)
    vp_tensor port = vp_acts_rows(&a->port, batch), h = vp_acts_rows(&a->h, batch);
    vp_tensor pin = vp_acts_rows(portfolio, batch), pw = PV(PORT_W), pb = PV(PORT_B);
    if (a->for_backward) VP_TRY(vp_copy(be, &pin, &port));
    else port = pin;
    VP_TRY(a->mops->port_add(be, batch, (int)c->hidden, c->n_portfolio, (const float*)e.data, (const float*)port.data,
                             (const float*)pw.data, (const float*)pb.data, (float*)h.data));
    VP_TRY(vp_model_rb_forward(m, params, a, batch));
    // C51 value and advantage streams, combined
    vp_tensor v1 = vp_acts_rows(&a->v1, batch), ah = vp_acts_rows(&a->ah, batch);
    vp_tensor v = vp_acts_rows(&a->v, batch), adv = vp_acts_rows(&a->adv, batch);
    vp_tensor v1w = PV(C51_V1_W), v1b = PV(C51_V1_B), v2w = PV(C51_V2_W), v2b = PV(C51_V2_B);
    vp_tensor a1w = PV(C51_A1_W), a1b = PV(C51_A1_B), a2w = PV(C51_A2_W), a2b = PV(C51_A2_B);
    VP_TRY(hidden_pair(m, a, &h, &v1w, &v1b, &a1w, &a1b, batch));
    if (fold_serves(m, a)) {
        // Q alone from the folded output layers (vp_model_acts_fold_heads)
        VP_TRY(fold_q(m, params, a, batch));
    } else {
        // the output layers: at padded widths (CUDA), or dense, the advantages by cross-branch messages
        if (a->pad_heads) {
            VP_TRY(vp_model_heads_out_padded(m, params, a, batch));
        } else {
            VP_TRY(vp_model_linear(m, &v1, &v2w, &v2b, VP_EPI_BIAS, 0.0f, &v));
            if (c->cross_branch)
                VP_TRY(vp_model_xb_forward(m, params, a, batch));
            else
                VP_TRY(vp_model_linear(m, &ah, &a2w, &a2b, VP_EPI_BIAS, 0.0f, &adv));
        }
        VP_TRY(vp_model_atoms_support(m, params, a));
        VP_TRY(vp_model_combine_forward(m, a, batch));
    }
    VP_TRY(vp_model_qd_forward(m, params, a, batch));
    a->state |= VP_ACTS_HEADS;
    // IQN beside it
    if (taus) {
        VP_TRY(vp_model_iqn_forward(m, params, a, taus, batch, n_taus));
        a->n_taus = n_taus;
        a->state |= VP_ACTS_IQN;
    }
    return VP_OK;
}

vp_status vp_model_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* features,
                           const vp_tensor* bar_idx, const vp_tensor* portfolio, const vp_tensor* taus,
                           int64_t batch) {
    VP_TRY(vp_model_encode(m, params, a, features, bar_idx, batch));
    return vp_model_heads(m, params, a, NULL, portfolio, taus, batch);
}
