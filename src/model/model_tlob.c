/* The TLOB encoder (Berti & Kasneci 2025; docs/model.md, "TLOB encoder"): the trunk's rows
 * [B, K, H] plus a learned positional embedding, then tlob_blocks blocks, each a temporal
 * sublayer (self-attention over the K time tokens of width H, residual, LayerNorm, MLP
 * W -> TM W -> W with GELU, residual, LayerNorm) followed by the same sublayer over the
 * transposed window (H feature tokens of width K): the dual attention. The encoding is the
 * last time step's row of the last block. Written with the ops (GEMM, attention, LayerNorm,
 * GELU, reductions) and one layout kernel (tlops.h). */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"

/* The extents of one side (0 temporal, 1 feature) over `batch` samples. */
typedef struct side_dims {
    int side;         /* index into vp_model_acts.tl */
    int64_t seqs;     /* B sequences */
    int len;          /* L tokens per sequence: K (temporal) or H (feature) */
    int width;        /* W token width: H or K */
    int heads;        /* NH attention heads (W / NH each) */
    int64_t rows;     /* n = B L rows of this call */
    int64_t max_rows; /* n of the activations' largest batch: the stride between stored blocks */
    int64_t max_seqs; /* the activations' largest batch */
} side_dims;

static side_dims dims_of(const vp_model_cfg* c, int side, int64_t batch, int64_t max_batch) {
    side_dims d;
    d.side = side;
    d.seqs = batch;
    d.len = side ? c->hidden : c->window;
    d.width = side ? c->window : c->hidden;
    d.heads = side ? c->tlob_feature_heads : c->tlob_heads;
    d.rows = batch * d.len;
    d.max_rows = max_batch * d.len;
    d.max_seqs = max_batch;
    return d;
}

/* The attention of a side: every token sees every token of its sequence. */
static vp_attn_desc attn_of(const side_dims* d) {
    vp_attn_desc ad;
    memset(&ad, 0, sizeof ad);
    ad.batch = d->seqs;
    ad.heads = d->heads;
    ad.lq = d->len;
    ad.lk = d->len;
    ad.dim = d->width / d->heads;
    ad.scale = 1.0f / sqrtf((float)ad.dim);
    ad.causal = 0;
    return ad;
}

/* Stored block sb of activation t ([S n_max, cols]): its first d->rows rows. */
static vp_tensor blk_rows(const vp_tensor* t, const side_dims* d, int sb) {
    const int64_t cols = vp_tensor_cols(t);
    return vp_tensor_2d((float*)t->data + (int64_t)sb * d->max_rows * cols, VP_F32, t->mem, d->rows, cols);
}

/* Stored block sb of a per-row statistic ([S n_max, 1]) as a vector of d->rows. */
static vp_tensor blk_vec(const vp_tensor* t, const side_dims* d, int sb) {
    return vp_tensor_1d((float*)t->data + (int64_t)sb * d->max_rows, VP_F32, t->mem, d->rows);
}

/* Rows [r0, r0 + n) of the parameter (or gradient) matrix of side slot `s` in `flat`. */
static vp_tensor prow(const vp_model* m, const vp_tensor* flat, const side_dims* d, vp_tlob_slot s, int64_t r0,
                      int64_t n) {
    const vp_pslot base = d->side ? VP_PS_TLF_QKV_W : VP_PS_TLT_QKV_W;
    return vp_model_slot_rows(m, flat, (vp_pslot)(base + s), r0, n);
}

/* Elements [e0, e0 + n) of the parameter (or gradient) vector of side slot `s` in `flat`. */
static vp_tensor pvec(const vp_model* m, const vp_tensor* flat, const side_dims* d, vp_tlob_slot s, int64_t e0,
                      int64_t n) {
    const vp_pslot base = d->side ? VP_PS_TLF_QKV_W : VP_PS_TLT_QKV_W;
    vp_tensor t = vp_model_slot(m, flat, (vp_pslot)(base + s));
    return vp_tensor_1d((float*)t.data + e0, VP_F32, t.mem, n);
}

/* One block's tensors of a side, from `flat` (the parameters or the gradients). */
typedef struct side_params {
    vp_tensor wq, wk, wv, bq, bk, bv; /* [W, W], [W] */
    vp_tensor wo, bo;                 /* [W, W], [W] */
    vp_tensor g1, b1, g2, b2;         /* [W] LayerNorms */
    vp_tensor w1, c1;                 /* [TM W, W], [TM W] */
    vp_tensor w2, c2;                 /* [W, TM W], [W] */
} side_params;

static side_params params_of(const vp_model* m, const vp_tensor* flat, const side_dims* d, int blk) {
    const int64_t W = d->width, MW = (int64_t)m->cfg.tlob_mlp * W;
    side_params p;
    p.wq = prow(m, flat, d, VP_TLS_QKV_W, blk * 3 * W, W);
    p.wk = prow(m, flat, d, VP_TLS_QKV_W, blk * 3 * W + W, W);
    p.wv = prow(m, flat, d, VP_TLS_QKV_W, blk * 3 * W + 2 * W, W);
    p.bq = pvec(m, flat, d, VP_TLS_QKV_B, blk * 3 * W, W);
    p.bk = pvec(m, flat, d, VP_TLS_QKV_B, blk * 3 * W + W, W);
    p.bv = pvec(m, flat, d, VP_TLS_QKV_B, blk * 3 * W + 2 * W, W);
    p.wo = prow(m, flat, d, VP_TLS_O_W, blk * W, W);
    p.bo = pvec(m, flat, d, VP_TLS_O_B, blk * W, W);
    p.g1 = pvec(m, flat, d, VP_TLS_LN1_G, blk * W, W);
    p.b1 = pvec(m, flat, d, VP_TLS_LN1_B, blk * W, W);
    p.w1 = prow(m, flat, d, VP_TLS_FC1_W, blk * MW, MW);
    p.c1 = pvec(m, flat, d, VP_TLS_FC1_B, blk * MW, MW);
    p.w2 = prow(m, flat, d, VP_TLS_FC2_W, blk * W, W);
    p.c2 = pvec(m, flat, d, VP_TLS_FC2_B, blk * W, W);
    p.g2 = pvec(m, flat, d, VP_TLS_LN2_G, blk * W, W);
    p.b2 = pvec(m, flat, d, VP_TLS_LN2_B, blk * W, W);
    return p;
}

/* Views of one stored block of a side's activations. */
typedef struct side_views {
    vp_tensor x, q, k, v, o, a, y, u, g, z, out;  /* [n, W] ([n, TM W] for u, g) */
    vp_tensor mean1, rstd1, mean2, rstd2;         /* [n] */
    vp_tensor lse;                                /* [B, NH, L] */
} side_views;

static side_views views_of(const vp_model_acts* a, const side_dims* d, int sb) {
    const vp_tlob_side* t = &a->tl[d->side];
    side_views v;
    v.x = blk_rows(&t->x, d, sb), v.q = blk_rows(&t->q, d, sb), v.k = blk_rows(&t->k, d, sb);
    v.v = blk_rows(&t->v, d, sb), v.o = blk_rows(&t->o, d, sb), v.a = blk_rows(&t->a, d, sb);
    v.y = blk_rows(&t->y, d, sb), v.u = blk_rows(&t->u, d, sb), v.g = blk_rows(&t->g, d, sb);
    v.z = blk_rows(&t->z, d, sb), v.out = blk_rows(&t->out, d, sb);
    v.mean1 = blk_vec(&t->mean1, d, sb), v.rstd1 = blk_vec(&t->rstd1, d, sb);
    v.mean2 = blk_vec(&t->mean2, d, sb), v.rstd2 = blk_vec(&t->rstd2, d, sb);
    const int64_t per = d->max_seqs * d->heads * d->len;
    v.lse = vp_tensor_3d((float*)t->lse.data + (int64_t)sb * per, VP_F32, t->lse.mem, d->seqs, d->heads, d->len);
    return v;
}

/* One sublayer of block `blk` (stored block sb): x -> out. */
static vp_status side_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const side_dims* d,
                              int blk, int sb) {
    vp_backend* be = m->backend;
    const float eps = m->cfg.ln_eps;
    side_views v = views_of(a, d, sb);
    side_params p = params_of(m, params, d, blk);
    // q, k, v projections and the attention over each sequence's tokens
    VP_TRY(vp_model_linear(m, &v.x, &p.wq, &p.bq, VP_EPI_BIAS, 0.0f, &v.q));
    VP_TRY(vp_model_linear(m, &v.x, &p.wk, &p.bk, VP_EPI_BIAS, 0.0f, &v.k));
    VP_TRY(vp_model_linear(m, &v.x, &p.wv, &p.bv, VP_EPI_BIAS, 0.0f, &v.v));
    const vp_attn_desc ad = attn_of(d);
    VP_TRY(vp_attention(be, &ad, &v.q, &v.k, &v.v, &v.o, &v.lse));
    // a = x + o Wo^T + bo, y = LayerNorm(a)
    VP_TRY(vp_copy(be, &v.x, &v.a));
    VP_TRY(vp_model_linear(m, &v.o, &p.wo, &p.bo, VP_EPI_BIAS, 1.0f, &v.a));
    VP_TRY(vp_layernorm(be, &v.a, &p.g1, &p.b1, eps, &v.y, &v.mean1, &v.rstd1));
    // z = y + fc2(gelu(fc1(y))), out = LayerNorm(z)
    VP_TRY(vp_model_linear(m, &v.y, &p.w1, &p.c1, VP_EPI_BIAS, 0.0f, &v.u));
    VP_TRY(vp_unary(be, VP_UNARY_GELU, &v.u, &v.g));
    VP_TRY(vp_copy(be, &v.y, &v.z));
    VP_TRY(vp_model_linear(m, &v.g, &p.w2, &p.c2, VP_EPI_BIAS, 1.0f, &v.z));
    return vp_layernorm(be, &v.z, &p.g2, &p.b2, eps, &v.out, &v.mean2, &v.rstd2);
}

/* Its backward from d out in `dd` [n, W], which ends holding d x; the block's gradients. */
static vp_status side_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const side_dims* d, int blk,
                               int sb, vp_tensor* dd) {
    vp_backend* be = m->backend;
    const int64_t n = d->rows, W = d->width, MW = (int64_t)m->cfg.tlob_mlp * W;
    side_views v = views_of(a, d, sb);
    side_params p = params_of(m, params, d, blk), g = params_of(m, &m->grads, d, blk);
    vp_tensor da = vp_tensor_2d(a->tl_da.data, VP_F32, a->tl_da.mem, n, W);
    vp_tensor dy = vp_tensor_2d(a->tl_dy.data, VP_F32, a->tl_dy.mem, n, W);
    vp_tensor du = vp_tensor_2d(a->tl_du.data, VP_F32, a->tl_du.mem, n, MW);
    vp_tensor d_o = vp_tensor_2d(a->tl_do.data, VP_F32, a->tl_do.mem, n, W);
    vp_tensor dq = vp_tensor_2d(a->tl_dq.data, VP_F32, a->tl_dq.mem, n, W);
    vp_tensor dk = vp_tensor_2d(a->tl_dk.data, VP_F32, a->tl_dk.mem, n, W);
    vp_tensor dv = vp_tensor_2d(a->tl_dv.data, VP_F32, a->tl_dv.mem, n, W);
    // the second LayerNorm (d z into da), fc2, GELU, fc1; d y = d z + fc1's input gradient
    VP_TRY(vp_layernorm_backward(be, dd, &v.z, &p.g2, &v.mean2, &v.rstd2, &da, &g.g2, &g.b2));
    VP_TRY(vp_model_linear_backward(m, &v.g, &p.w2, &da, &g.w2, &g.c2, &du, 0.0f));
    VP_TRY(vp_unary_backward(be, VP_UNARY_GELU, &v.u, &du, &du));
    VP_TRY(vp_copy(be, &da, &dy));
    VP_TRY(vp_model_linear_backward(m, &v.y, &p.w1, &du, &g.w1, &g.c1, &dy, 1.0f));
    // the first LayerNorm (d a into da), the output projection, the attention
    VP_TRY(vp_layernorm_backward(be, &dy, &v.a, &p.g1, &v.mean1, &v.rstd1, &da, &g.g1, &g.b1));
    VP_TRY(vp_model_linear_backward(m, &v.o, &p.wo, &da, &g.wo, &g.bo, &d_o, 0.0f));
    const vp_attn_desc ad = attn_of(d);
    VP_TRY(vp_attention_backward(be, &ad, &v.q, &v.k, &v.v, &v.o, &v.lse, &d_o, &dq, &dk, &dv));
    // d x = d a (the residual) + the input gradients of the q, k, v projections
    VP_TRY(vp_copy(be, &da, dd));
    VP_TRY(vp_model_linear_backward(m, &v.x, &p.wq, &dq, &g.wq, &g.bq, dd, 1.0f));
    VP_TRY(vp_model_linear_backward(m, &v.x, &p.wk, &dk, &g.wk, &g.bk, dd, 1.0f));
    return vp_model_linear_backward(m, &v.x, &p.wv, &dv, &g.wv, &g.bv, dd, 1.0f);
}

vp_status vp_model_tlob_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t K = c->window, H = c->hidden;
    const side_dims dt = dims_of(c, 0, batch, a->max_batch), df = dims_of(c, 1, batch, a->max_batch);
    // the first block's input: each trunk row plus the positional embedding of its step
    vp_tensor h2 = vp_tensor_2d(a->h2.data, VP_F32, a->h2.mem, batch, K * H);
    vp_tensor x0 = vp_tensor_2d(a->tl[0].x.data, VP_F32, a->tl[0].x.mem, batch, K * H);
    vp_tensor pos = vp_model_slot(m, params, VP_PS_TLOB_POS);
    vp_tensor pos1 = vp_tensor_1d(pos.data, VP_F32, pos.mem, K * H);
    VP_TRY(vp_binary(be, VP_BINARY_ADD, &h2, &pos1, &x0));
    for (int b = 0; b < c->tlob_blocks; ++b) {
        const int sb = a->tl_stored > 1 ? b : 0, next = a->tl_stored > 1 ? b + 1 : 0;
        // temporal sublayer, then its output [B, K, H] as H feature tokens of width K per sample
        VP_TRY(side_forward(m, params, a, &dt, b, sb));
        side_views tv = views_of(a, &dt, sb), fv = views_of(a, &df, sb);
        VP_TRY(a->tlops->transpose(be, batch, K, H, (const float*)tv.out.data, (float*)fv.x.data));
        // feature sublayer, back to time-major: the next block's input or the encoder's output
        VP_TRY(side_forward(m, params, a, &df, b, sb));
        float* dst = b + 1 < c->tlob_blocks ? (float*)views_of(a, &dt, next).x.data : (float*)a->tl_out.data;
        VP_TRY(a->tlops->transpose(be, batch, H, K, (const float*)fv.out.data, dst));
    }
    // e = the last step's row of the last block
    return a->mops->take_last(be, batch, (int)K, H, (const float*)a->tl_out.data, (float*)a->e.data);
}

vp_status vp_model_tlob_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const int64_t K = c->window, H = c->hidden, R = batch * K;
    VP_REQUIRE(a->tl_stored == c->tlob_blocks, VP_ERR_STATE,
               "vp_model_tlob_backward: the activations keep %d of the %d TLOB blocks (made for forward only)",
               a->tl_stored, c->tlob_blocks);
    const side_dims dt = dims_of(c, 0, batch, a->max_batch), df = dims_of(c, 1, batch, a->max_batch);
    // d out of the last block: d e at the last step, zero elsewhere (d_t1 holds the time-major gradient)
    vp_tensor dx = vp_acts_rows(&a->d_t1, R);
    vp_tensor dtr = vp_tensor_2d(a->tl_dt.data, VP_F32, a->tl_dt.mem, batch * H, K);
    VP_TRY(vp_fill(be, &dx, 0.0f));
    VP_TRY(a->mops->add_last(be, batch, (int)K, H, (const float*)a->d_h.data, (float*)dx.data));
    for (int b = c->tlob_blocks - 1; b >= 0; --b) {
        // the feature sublayer in its layout, then the temporal sublayer
        VP_TRY(a->tlops->transpose(be, batch, K, H, (const float*)dx.data, (float*)dtr.data));
        VP_TRY(side_backward(m, params, a, &df, b, b, &dtr));
        VP_TRY(a->tlops->transpose(be, batch, H, K, (const float*)dtr.data, (float*)dx.data));
        VP_TRY(side_backward(m, params, a, &dt, b, b, &dx));
    }
    // d h2 = d x0 (left in d_t1); the positional embedding's gradient sums it over the samples
    vp_tensor dx2 = vp_tensor_2d(dx.data, VP_F32, dx.mem, batch, K * H);
    vp_tensor gpos = vp_model_slot(m, &m->grads, VP_PS_TLOB_POS);
    vp_tensor gpos1 = vp_tensor_1d(gpos.data, VP_F32, gpos.mem, K * H);
    return vp_reduce_cols(be, VP_REDUCE_SUM, &dx2, &gpos1);
}

void vp_model_tlob_layout(vp_model_acts* a, vp_model_take_fn* take, void* ctx) {
    const vp_model_cfg* c = &a->model->cfg;
    const int on = c->encoder == VP_ENCODER_TLOB;
    const int64_t S = on ? (a->for_backward ? c->tlob_blocks : 1) : 0, B = a->max_batch;
    const int64_t K = c->window, H = c->hidden, TM = c->tlob_mlp, BW = a->for_backward ? 1 : 0;
    a->tl_stored = (int)S;
    for (int side = 0; side < 2; ++side) {
        vp_tlob_side* t = &a->tl[side];
        const int64_t L = side ? H : K, W = side ? K : H, n = S * B * L;
        const int64_t NH = side ? c->tlob_feature_heads : c->tlob_heads;
        take(ctx, &t->x, "tl_x", n, W);
        take(ctx, &t->out, "tl_out_side", n, W);
        take(ctx, &t->lse, "tl_lse", S * B * NH, L);
        take(ctx, &t->mean1, "tl_mean1", n, 1);
        take(ctx, &t->rstd1, "tl_rstd1", n, 1);
        take(ctx, &t->mean2, "tl_mean2", n, 1);
        take(ctx, &t->rstd2, "tl_rstd2", n, 1);
        if (!BW && side == 1) {
            // forward only: the feature side runs after the temporal one is done, on rows of the
            // same count (B H x K = B K x H), so it reuses the temporal side's scratch
            const vp_tlob_side* t0 = &a->tl[0];
            t->q = vp_tensor_2d(t0->q.data, VP_F32, t0->q.mem, t0->q.data ? n : 0, W);
            t->k = vp_tensor_2d(t0->k.data, VP_F32, t0->k.mem, t0->k.data ? n : 0, W);
            t->v = vp_tensor_2d(t0->v.data, VP_F32, t0->v.mem, t0->v.data ? n : 0, W);
            t->o = vp_tensor_2d(t0->o.data, VP_F32, t0->o.mem, t0->o.data ? n : 0, W);
            t->a = vp_tensor_2d(t0->a.data, VP_F32, t0->a.mem, t0->a.data ? n : 0, W);
            t->y = vp_tensor_2d(t0->y.data, VP_F32, t0->y.mem, t0->y.data ? n : 0, W);
            t->u = vp_tensor_2d(t0->u.data, VP_F32, t0->u.mem, t0->u.data ? n : 0, TM * W);
            t->g = t->u;
            t->z = t->a;
            continue;
        }
        take(ctx, &t->q, "tl_q", n, W);
        take(ctx, &t->k, "tl_k", n, W);
        take(ctx, &t->v, "tl_v", n, W);
        take(ctx, &t->o, "tl_o", n, W);
        take(ctx, &t->a, "tl_a", n, W);
        take(ctx, &t->y, "tl_y", n, W);
        take(ctx, &t->u, "tl_u", n, TM * W);
        if (BW) {
            take(ctx, &t->g, "tl_g", n, TM * W);
            take(ctx, &t->z, "tl_z", n, W);
            continue;
        }
        // forward only: GELU in place and z over a (the backward alone reads u and a)
        t->g = t->u;
        t->z = t->a;
    }
    const int64_t R = on ? B * K : 0, RB = R * BW;
    take(ctx, &a->tl_out, "tl_out", R, H);
    take(ctx, &a->tl_dt, "tl_dt", RB, H);
    take(ctx, &a->tl_da, "tl_da", RB, H);
    take(ctx, &a->tl_dy, "tl_dy", RB, H);
    take(ctx, &a->tl_do, "tl_do", RB, H);
    take(ctx, &a->tl_dq, "tl_dq", RB, H);
    take(ctx, &a->tl_dk, "tl_dk", RB, H);
    take(ctx, &a->tl_dv, "tl_dv", RB, H);
    take(ctx, &a->tl_du, "tl_du", RB, TM * H);
}

/* Fails naming `field` unless lo <= v <= hi. */
#define TL_RANGE(field, lo, hi)                                                                    \
    VP_REQUIRE(c->field >= (lo) && c->field <= (hi), VP_ERR_INVALID_ARG,                           \
               "model config: " #field " = %d is outside [%d, %d]", (int)c->field, (int)(lo), (int)(hi))

vp_status vp_model_tlob_check(const vp_model_cfg* c) {
    TL_RANGE(tlob_blocks, 1, 16);
    TL_RANGE(tlob_mlp, 1, 16);
    TL_RANGE(tlob_heads, 1, c->hidden);
    TL_RANGE(tlob_feature_heads, 1, c->window);
    // the temporal attention: K tokens of width H in tlob_heads heads
    VP_REQUIRE(c->hidden % c->tlob_heads == 0 && c->hidden / c->tlob_heads <= VP_ATTN_MAX_DIM, VP_ERR_INVALID_ARG,
               "model config: TLOB's temporal attention needs tlob_heads (%d) dividing hidden (%d) into heads of at "
               "most %d", c->tlob_heads, c->hidden, VP_ATTN_MAX_DIM);
    // the feature attention: H tokens of width K in tlob_feature_heads heads
    VP_REQUIRE(c->hidden <= VP_ATTN_MAX_LEN, VP_ERR_INVALID_ARG,
               "model config: TLOB's feature attention has hidden = %d tokens, at most %d", c->hidden,
               VP_ATTN_MAX_LEN);
    VP_REQUIRE(c->window % c->tlob_feature_heads == 0 && c->window / c->tlob_feature_heads <= VP_ATTN_MAX_DIM,
               VP_ERR_INVALID_ARG,
               "model config: TLOB's feature attention needs tlob_feature_heads (%d) dividing window (%d) into heads "
               "of at most %d", c->tlob_feature_heads, c->window, VP_ATTN_MAX_DIM);
    return VP_OK;
}

/* Forward GEMM FLOPs of one side of one block: rows n = B L of width W. */
static double side_flops(double n, double L, double W, double TM) {
    // q, k, v, output projection, the MLP's two layers, then q k^T and p v
    return 2.0 * n * (4.0 * W * W + 2.0 * TM * W * W) + 4.0 * n * L * W;
}

double vp_model_tlob_flops(const vp_model_cfg* c, double batch) {
    if (!c || c->encoder != VP_ENCODER_TLOB) return 0.0;
    const double K = c->window, H = c->hidden, TM = c->tlob_mlp;
    return c->tlob_blocks * (side_flops(batch * K, K, H, TM) + side_flops(batch * H, H, K, TM));
}
