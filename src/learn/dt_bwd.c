/* The Decision Transformer's backward: the head and the final LayerNorm, each block in reverse
 * (the MLP with the GELU, the attention's vp_attention_backward, both LayerNorms with their
 * residual gradients added), the input LayerNorm, the tokens (dt kernels), the state linear, the
 * portfolio projection and the encoder (Mamba2 and the trunk, as PPO's backward runs them). */
#include <math.h>
#include <string.h>

#include "learn/dt_acts.h"
#include "vulpes/ops.h"

/* Block l's backward from dx (the gradient of its output stream, overwritten with that of its
 * input stream). */
static vp_status block_backward(vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, int l, const vp_dt_kernels* kt) {
    const vp_dt_dims* d = &n->dims;
    const vp_model* m = &a->lin;
    vp_backend* be = m->backend;
    const int64_t B = a->b, BL = B * d->L, D = d->D;
    vp_dt_block_acts* k = vp_dt_block(a, l);
    vp_tensor W[VP_DT_BLOCK_COUNT], G[VP_DT_BLOCK_COUNT];
    for (int s = 0; s < VP_DT_BLOCK_COUNT; ++s) {
        W[s] = vp_dt_view(n, params, vp_dt_blk(n, l, (vp_dt_block_slot)s));
        G[s] = vp_dt_view(n, &n->grads, vp_dt_blk(n, l, (vp_dt_block_slot)s));
    }
    vp_tensor dx = vp_dt_rows(&a->dx, BL), t1 = vp_dt_rows(&a->dt1, BL), t2 = vp_dt_rows(&a->dt2, BL);
    vp_tensor dfc = vp_dt_rows(&a->dfc, BL), datt = vp_dt_rows(&a->datt, BL);
    vp_tensor dq = vp_dt_rows(&a->dq, BL), dk = vp_dt_rows(&a->dk, BL), dv = vp_dt_rows(&a->dv, BL);
    vp_tensor ln1 = vp_dt_rows(&k->ln1, BL), mid = vp_dt_rows(&k->mid, BL), ln2 = vp_dt_rows(&k->ln2, BL);
    vp_tensor fc = vp_dt_rows(&k->fc, BL), ge = vp_dt_rows(&k->ge, BL), att = vp_dt_rows(&k->att, BL);
    vp_tensor m1 = vp_dt_vec(&k->m1, 0, BL), r1 = vp_dt_vec(&k->r1, 0, BL), m2 = vp_dt_vec(&k->m2, 0, BL), r2 = vp_dt_vec(&k->r2, 0, BL);
    vp_tensor xin = vp_dt_rows(vp_dt_stream(a, l), BL);
    // the MLP: y = mid + W2 gelu(W1 LN2(mid) + b1) + b2
    VP_TRY(vp_model_linear_backward(m, &ge, &W[VP_DT_FC2_W], &dx, &G[VP_DT_FC2_W], &G[VP_DT_FC2_B], &dfc, 0.0f));
    VP_TRY(kt->gelu_backward(be, BL * 4 * D, (const float*)fc.data, (const float*)dfc.data, (float*)dfc.data));
    VP_TRY(vp_model_linear_backward(m, &ln2, &W[VP_DT_FC_W], &dfc, &G[VP_DT_FC_W], &G[VP_DT_FC_B], &t1, 0.0f));
    VP_TRY(vp_layernorm_backward(be, &t1, &mid, &W[VP_DT_LN2_G], &m2, &r2, &t2, &G[VP_DT_LN2_G], &G[VP_DT_LN2_B]));
    VP_TRY(vp_axpby(be, 1.0f, &t2, 1.0f, &dx));
    // the attention: mid = x + W_o attn(LN1(x)) + b_o
    VP_TRY(vp_model_linear_backward(m, &att, &W[VP_DT_PROJ_W], &dx, &G[VP_DT_PROJ_W], &G[VP_DT_PROJ_B], &datt, 0.0f));
    const vp_attn_desc at = vp_dt_attn_desc(d, B);
    vp_tensor q3 = vp_tensor_3d(k->q.data, VP_F32, k->q.mem, B, d->L, D);
    vp_tensor k3 = vp_tensor_3d(k->k.data, VP_F32, k->k.mem, B, d->L, D);
    vp_tensor v3 = vp_tensor_3d(k->v.data, VP_F32, k->v.mem, B, d->L, D);
    vp_tensor o3 = vp_tensor_3d(k->att.data, VP_F32, k->att.mem, B, d->L, D);
    vp_tensor do3 = vp_tensor_3d(datt.data, VP_F32, datt.mem, B, d->L, D);
    vp_tensor dq3 = vp_tensor_3d(dq.data, VP_F32, dq.mem, B, d->L, D);
    vp_tensor dk3 = vp_tensor_3d(dk.data, VP_F32, dk.mem, B, d->L, D);
    vp_tensor dv3 = vp_tensor_3d(dv.data, VP_F32, dv.mem, B, d->L, D);
    vp_tensor lse = vp_dt_vec(&k->lse, 0, B * d->NH * d->L);
    VP_TRY(vp_attention_backward(be, &at, &q3, &k3, &v3, &o3, &lse, &do3, &dq3, &dk3, &dv3));
    vp_tensor wq = vp_dt_wrows(&W[VP_DT_QKV_W], 0, D), wk = vp_dt_wrows(&W[VP_DT_QKV_W], D, D), wv = vp_dt_wrows(&W[VP_DT_QKV_W], 2 * D, D);
    vp_tensor gq = vp_dt_wrows(&G[VP_DT_QKV_W], 0, D), gk = vp_dt_wrows(&G[VP_DT_QKV_W], D, D), gv = vp_dt_wrows(&G[VP_DT_QKV_W], 2 * D, D);
    vp_tensor gbq = vp_dt_vec(&G[VP_DT_QKV_B], 0, D), gbk = vp_dt_vec(&G[VP_DT_QKV_B], D, D);
    vp_tensor gbv = vp_dt_vec(&G[VP_DT_QKV_B], 2 * D, D);
    VP_TRY(vp_model_linear_backward(m, &ln1, &wq, &dq, &gq, &gbq, &t1, 0.0f));
    VP_TRY(vp_model_linear_backward(m, &ln1, &wk, &dk, &gk, &gbk, &t1, 1.0f));
    VP_TRY(vp_model_linear_backward(m, &ln1, &wv, &dv, &gv, &gbv, &t1, 1.0f));
    VP_TRY(vp_layernorm_backward(be, &t1, &xin, &W[VP_DT_LN1_G], &m1, &r1, &t2, &G[VP_DT_LN1_G], &G[VP_DT_LN1_B]));
    return vp_axpby(be, 1.0f, &t2, 1.0f, &dx);
}

/* The encoder's backward from d h [BK, H]: the portfolio projection, then (on its own encoding)
 * vp_model_encoder_backward_from. */
static vp_status encoder_backward(vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, const vp_tensor* dh) {
    vp_model* m = &n->enc;
    const vp_model_cfg* c = &m->cfg;
    const int64_t BK = a->b * n->dims.K;
    const vp_tensor pe = vp_dt_enc_view(n, params);
    vp_tensor port = vp_tensor_2d(a->x->port.data, VP_F32, a->x->port.mem, BK, c->n_portfolio);
    vp_tensor pw = vp_model_slot(m, &pe, VP_PS_PORT_W);
    vp_tensor gpw = vp_model_slot(m, &m->grads, VP_PS_PORT_W), gpb = vp_model_slot(m, &m->grads, VP_PS_PORT_B);
    VP_TRY(vp_model_linear_backward(&a->lin, &port, &pw, dh, &gpw, &gpb, NULL, 0.0f));
    return a->own_enc ? vp_model_encoder_backward_from(m, &pe, a->enc, dh, BK) : VP_OK;
}

vp_status vp_dt_backward(vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a) {
    const char* fn = "vp_dt_backward";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && a->for_backward && a->x != NULL && a->b >= 1, VP_ERR_STATE,
               "%s: no forward with backward activations precedes it", fn);
    VP_REQUIRE(!a->own_enc || a->enc != NULL, VP_ERR_STATE, "%s: the encoder's activations are missing", fn);
    const vp_dt_dims* d = &n->dims;
    const vp_model* m = &a->lin;
    vp_backend* be = m->backend;
    const int64_t BK = a->b * d->K, BL = a->b * d->L;
    const vp_dt_kernels* kt = NULL;
    VP_TRY(vp_dt_kernels_of(fn, be, &kt));
    // the head and the final LayerNorm into dx
    vp_tensor lnf = vp_dt_rows(&a->lnf, BL), dl = vp_dt_rows(&a->d_logits, BL), t1 = vp_dt_rows(&a->dt1, BL);
    vp_tensor dx = vp_dt_rows(&a->dx, BL);
    const int ih = vp_dt_out(n, VP_DT_HEAD_W), ibh = vp_dt_out(n, VP_DT_HEAD_B);
    const int ig = vp_dt_out(n, VP_DT_LNF_G), ib = vp_dt_out(n, VP_DT_LNF_B);
    vp_tensor hw = vp_dt_view(n, params, ih), ghw = vp_dt_view(n, &n->grads, ih), ghb = vp_dt_view(n, &n->grads, ibh);
    VP_TRY(vp_model_linear_backward(m, &lnf, &hw, &dl, &ghw, &ghb, &t1, 0.0f));
    vp_tensor xl = vp_dt_rows(vp_dt_stream(a, d->layers), BL);
    vp_tensor gf = vp_dt_view(n, params, ig), ggf = vp_dt_view(n, &n->grads, ig), gbf = vp_dt_view(n, &n->grads, ib);
    vp_tensor mf = vp_dt_vec(&a->mf, 0, BL), rf = vp_dt_vec(&a->rf, 0, BL);
    VP_TRY(vp_layernorm_backward(be, &t1, &xl, &gf, &mf, &rf, &dx, &ggf, &gbf));
    // the blocks in reverse, then the input LayerNorm into d x0 (dt2)
    for (int l = d->layers - 1; l >= 0; --l) VP_TRY(block_backward(n, params, a, l, kt));
    vp_tensor x0 = vp_dt_rows(&a->x0, BL), dx0 = vp_dt_rows(&a->dt2, BL);
    const int iig = vp_dt_in(n, VP_DT_LNI_G), iib = vp_dt_in(n, VP_DT_LNI_B);
    vp_tensor gi = vp_dt_view(n, params, iig), ggi = vp_dt_view(n, &n->grads, iig), gbi = vp_dt_view(n, &n->grads, iib);
    vp_tensor mi = vp_dt_vec(&a->mi, 0, BL), ri = vp_dt_vec(&a->ri, 0, BL);
    VP_TRY(vp_layernorm_backward(be, &dx, &x0, &gi, &mi, &ri, &dx0, &ggi, &gbi));
    // the tokens, then the state linear into d h
    vp_dt_embed_args ea;
    vp_dt_embed_args_of(a, params, &ea);
    vp_tensor dstok = vp_dt_rows(&a->dstok, BK), dh = vp_dt_rows(&a->dh, BK), h = vp_dt_rows(&a->h, BK);
    float* g_ret_w = (float*)vp_dt_view(n, &n->grads, vp_dt_in(n, VP_DT_RET_W)).data;
    float* g_ret_b = (float*)vp_dt_view(n, &n->grads, vp_dt_in(n, VP_DT_RET_B)).data;
    float* g_act = (float*)vp_dt_view(n, &n->grads, vp_dt_in(n, VP_DT_ACT_E)).data;
    float* g_time = (float*)vp_dt_view(n, &n->grads, vp_dt_in(n, VP_DT_TIME_E)).data;
    VP_TRY(kt->embed_backward(be, &ea, (const float*)dx0.data, (float*)dstok.data, g_ret_w, g_ret_b, g_act, g_time));
    const int isw = vp_dt_in(n, VP_DT_ST_W), isb = vp_dt_in(n, VP_DT_ST_B);
    vp_tensor sw = vp_dt_view(n, params, isw), gsw = vp_dt_view(n, &n->grads, isw), gsb = vp_dt_view(n, &n->grads, isb);
    VP_TRY(vp_model_linear_backward(m, &h, &sw, &dstok, &gsw, &gsb, &dh, 0.0f));
    return encoder_backward(n, params, a, &dh);
}

vp_tensor vp_dt_d_encoding(const vp_dt_acts* a) { return vp_dt_rows(&a->dh, a->b * a->net->dims.K); }
