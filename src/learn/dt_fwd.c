/* The Decision Transformer's activations and forward: the encoder (vp_model_encode), the state
 * input h = e + W_p p + b_p and its linear, the tokens (dt kernels), the input LayerNorm, the
 * pre-LayerNorm blocks (vp_layernorm, the linears of the network's precision, vp_attention with
 * the causal mask, the GELU), the final LayerNorm and the head; and the loss. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dt_acts.h"
#include "vulpes/ops.h"

vp_tensor vp_dt_rows(const vp_tensor* t, int64_t rows) { return vp_tensor_2d(t->data, t->dtype, t->mem, rows, t->shape[1]); }

vp_tensor* vp_dt_stream(vp_dt_acts* a, int l) { return &a->xs[a->for_backward ? l : l % 2]; }

vp_dt_block_acts* vp_dt_block(vp_dt_acts* a, int l) { return &a->blk[a->for_backward ? l : 0]; }

/* One tensor of the activations' arena. */
static vp_status take(vp_dt_acts* a, const char* name, int64_t rows, int64_t cols, vp_tensor* out) {
    const int64_t sh[2] = {rows, cols};
    return vp_arena_tensor(&a->arena, name, VP_F32, cols > 0 ? 2 : 1, sh, out, NULL);
}

/* Floats of the activations of B sequences (and the tensors they are in). */
static int64_t floats_of(const vp_dt_dims* d, int64_t B, int n_blocks, int n_streams, int bwd, int64_t* n_tensors) {
    const int64_t BK = B * d->K, BL = B * d->L, D = d->D;
    const int64_t per_block = 7 * BL * D + 4 * BL + B * d->NH * d->L + 8 * BL * D;
    int64_t f = BK * d->H + BK * D + BL * D + 2 * BL + n_streams * BL * D + n_blocks * per_block + BL * D + 2 * BL +
                BL * d->A;
    if (bwd) f += BL * d->A + 7 * BL * D + 4 * BL * D + BK * D + BK * d->H;
    *n_tensors = 8 + n_streams + 14 * n_blocks + 4 + (bwd ? 11 : 0);
    return f;
}

/* The arena's tensors. */
static vp_status make_tensors(vp_dt_acts* a) {
    const vp_dt_dims* d = &a->net->dims;
    const int64_t B = a->max_b, BK = B * d->K, BL = B * d->L, D = d->D;
    VP_TRY(take(a, "dt.h", BK, d->H, &a->h));
    VP_TRY(take(a, "dt.stok", BK, D, &a->stok));
    VP_TRY(take(a, "dt.x0", BL, D, &a->x0));
    VP_TRY(take(a, "dt.mi", BL, 0, &a->mi));
    VP_TRY(take(a, "dt.ri", BL, 0, &a->ri));
    const int n_streams = a->for_backward ? d->layers + 1 : 2;
    for (int l = 0; l < n_streams; ++l) VP_TRY(take(a, "dt.xs", BL, D, &a->xs[l]));
    for (int l = 0; l < a->n_blocks; ++l) {
        vp_dt_block_acts* k = &a->blk[l];
        VP_TRY(take(a, "dt.ln1", BL, D, &k->ln1));
        VP_TRY(take(a, "dt.q", BL, D, &k->q));
        VP_TRY(take(a, "dt.k", BL, D, &k->k));
        VP_TRY(take(a, "dt.v", BL, D, &k->v));
        VP_TRY(take(a, "dt.att", BL, D, &k->att));
        VP_TRY(take(a, "dt.mid", BL, D, &k->mid));
        VP_TRY(take(a, "dt.ln2", BL, D, &k->ln2));
        VP_TRY(take(a, "dt.m1", BL, 0, &k->m1));
        VP_TRY(take(a, "dt.r1", BL, 0, &k->r1));
        VP_TRY(take(a, "dt.m2", BL, 0, &k->m2));
        VP_TRY(take(a, "dt.r2", BL, 0, &k->r2));
        VP_TRY(take(a, "dt.lse", B * d->NH * d->L, 0, &k->lse));
        VP_TRY(take(a, "dt.fc", BL, 4 * D, &k->fc));
        VP_TRY(take(a, "dt.ge", BL, 4 * D, &k->ge));
    }
    VP_TRY(take(a, "dt.lnf", BL, D, &a->lnf));
    VP_TRY(take(a, "dt.mf", BL, 0, &a->mf));
    VP_TRY(take(a, "dt.rf", BL, 0, &a->rf));
    VP_TRY(take(a, "dt.logits", BL, d->A, &a->logits));
    if (!a->for_backward) return VP_OK;
    VP_TRY(take(a, "dt.d_logits", BL, d->A, &a->d_logits));
    VP_TRY(take(a, "dt.dx", BL, D, &a->dx));
    VP_TRY(take(a, "dt.dt1", BL, D, &a->dt1));
    VP_TRY(take(a, "dt.dt2", BL, D, &a->dt2));
    VP_TRY(take(a, "dt.dq", BL, D, &a->dq));
    VP_TRY(take(a, "dt.dk", BL, D, &a->dk));
    VP_TRY(take(a, "dt.dv", BL, D, &a->dv));
    VP_TRY(take(a, "dt.datt", BL, D, &a->datt));
    VP_TRY(take(a, "dt.dfc", BL, 4 * D, &a->dfc));
    VP_TRY(take(a, "dt.dstok", BK, D, &a->dstok));
    return take(a, "dt.dh", BK, d->H, &a->dh);
}

vp_status vp_dt_acts_init(vp_dt_acts** out, const vp_dt_net* n, int64_t B, int for_backward, int64_t encode_rows,
                          int fp32) {
    VP_REQUIRE(out != NULL && n != NULL && B >= 1 && encode_rows >= 0, VP_ERR_INVALID_ARG,
               "vp_dt_acts_init: bad argument");
    *out = NULL;
    VP_REQUIRE(B <= INT32_MAX / (3 * VP_DT_MAX_CONTEXT), VP_ERR_INVALID_ARG, "dt: %lld sequences in one batch",
               (long long)B);
    vp_dt_acts* a = (vp_dt_acts*)calloc(1, sizeof *a);
    VP_REQUIRE(a != NULL, VP_ERR_OOM, "dt activations: out of host memory");
    a->net = n;
    a->lin = n->enc;
    if (fp32) a->lin.precision = VP_PREC_FP32;
    a->max_b = B;
    a->for_backward = for_backward;
    a->n_blocks = for_backward ? n->dims.layers : 1;
    a->enc_rows = encode_rows;
    int64_t n_t = 0;
    const int64_t f = floats_of(&n->dims, B, a->n_blocks, for_backward ? n->dims.layers + 1 : 2, for_backward, &n_t);
    vp_status s = VP_OK;
    if (encode_rows > 0) s = vp_model_acts_init(&a->enc, &n->enc, encode_rows, 0, for_backward);
    vp_backend* be = n->enc.backend;
    if (s == VP_OK) s = vp_arena_init(&a->arena, be, vp_backend_native_mem(be), sizeof(float) * (size_t)f + (size_t)(n_t + 4) * 256);
    if (s == VP_OK) s = make_tensors(a);
    if (s != VP_OK) {
        vp_dt_acts_free(a);
        return vp_error_context(s, "dt activations for %lld sequences", (long long)B);
    }
    *out = a;
    return VP_OK;
}

void vp_dt_acts_free(vp_dt_acts* a) {
    if (!a) return;
    vp_model_acts_free(a->enc);
    if (a->arena.backend) vp_arena_free(&a->arena);
    free(a);
}

vp_status vp_dt_encode(const vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, const vp_tensor* features,
                       const vp_tensor* bar, int64_t rows) {
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && a->enc != NULL && rows >= 1 && rows <= a->enc_rows,
               VP_ERR_INVALID_ARG, "vp_dt_encode: %lld bars for encoder activations of %lld", (long long)rows,
               a ? (long long)a->enc_rows : 0LL);
    const vp_tensor pe = vp_dt_enc_view(n, params);
    return vp_model_encode(&n->enc, &pe, a->enc, features, bar, rows);
}

vp_tensor vp_dt_encoding(const vp_dt_acts* a) { return vp_model_encoding(a->enc); }

vp_tensor vp_dt_wrows(const vp_tensor* w, int64_t r0, int64_t n) {
    return vp_tensor_2d((float*)w->data + r0 * w->shape[1], VP_F32, w->mem, n, w->shape[1]);
}

vp_tensor vp_dt_vec(const vp_tensor* v, int64_t r0, int64_t n) {
    return vp_tensor_1d((float*)v->data + r0, VP_F32, v->mem, n);
}

void vp_dt_embed_args_of(const vp_dt_acts* a, const vp_tensor* params, vp_dt_embed_args* out) {
    const vp_dt_net* n = a->net;
    memset(out, 0, sizeof *out);
    out->d = n->dims;
    out->lay = vp_action_layout_env();
    out->B = a->b;
    out->stok = (const float*)a->stok.data;
    out->rtg = (const float*)a->x->rtg.data;
    out->act = (const int32_t*)a->x->act.data;
    out->ts = (const int32_t*)a->x->ts.data;
    out->ret_w = (const float*)vp_dt_view(n, params, vp_dt_in(n, VP_DT_RET_W)).data;
    out->ret_b = (const float*)vp_dt_view(n, params, vp_dt_in(n, VP_DT_RET_B)).data;
    out->act_e = (const float*)vp_dt_view(n, params, vp_dt_in(n, VP_DT_ACT_E)).data;
    out->time_e = (const float*)vp_dt_view(n, params, vp_dt_in(n, VP_DT_TIME_E)).data;
}

vp_attn_desc vp_dt_attn_desc(const vp_dt_dims* d, int64_t B) {
    vp_attn_desc at;
    memset(&at, 0, sizeof at);
    at.batch = B;
    at.heads = d->NH;
    at.lq = at.lk = d->L;
    at.dim = d->D / d->NH;
    at.scale = 1.0f / sqrtf((float)at.dim);
    at.causal = 1;
    return at;
}

/* [B, L, D] view of a [BL, D] activation. */
static vp_tensor seq3(const vp_tensor* t, const vp_dt_dims* d, int64_t B) {
    return vp_tensor_3d(t->data, VP_F32, t->mem, B, d->L, d->D);
}

/* Block l from stream x into stream y. */
static vp_status block_forward(const vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, int l, const vp_tensor* x,
                               vp_tensor* y) {
    const vp_dt_dims* d = &n->dims;
    const vp_model* m = &a->lin;
    vp_backend* be = m->backend;
    const int64_t B = a->b, BL = B * d->L, D = d->D;
    vp_dt_block_acts* k = vp_dt_block(a, l);
    vp_tensor W[VP_DT_BLOCK_COUNT];
    for (int s = 0; s < VP_DT_BLOCK_COUNT; ++s) W[s] = vp_dt_view(n, params, vp_dt_blk(n, l, (vp_dt_block_slot)s));
    vp_tensor ln1 = vp_dt_rows(&k->ln1, BL), q = vp_dt_rows(&k->q, BL), kk = vp_dt_rows(&k->k, BL);
    vp_tensor v = vp_dt_rows(&k->v, BL), att = vp_dt_rows(&k->att, BL), mid = vp_dt_rows(&k->mid, BL);
    vp_tensor ln2 = vp_dt_rows(&k->ln2, BL), fc = vp_dt_rows(&k->fc, BL), ge = vp_dt_rows(&k->ge, BL);
    vp_tensor m1 = vp_dt_vec(&k->m1, 0, BL), r1 = vp_dt_vec(&k->r1, 0, BL), m2 = vp_dt_vec(&k->m2, 0, BL), r2 = vp_dt_vec(&k->r2, 0, BL);
    vp_tensor lse = vp_dt_vec(&k->lse, 0, B * d->NH * d->L);
    // causal self-attention over LayerNorm(x), added to x
    VP_TRY(vp_layernorm(be, x, &W[VP_DT_LN1_G], &W[VP_DT_LN1_B], d->ln_eps, &ln1, &m1, &r1));
    vp_tensor wq = vp_dt_wrows(&W[VP_DT_QKV_W], 0, D), wk = vp_dt_wrows(&W[VP_DT_QKV_W], D, D), wv = vp_dt_wrows(&W[VP_DT_QKV_W], 2 * D, D);
    vp_tensor bq = vp_dt_vec(&W[VP_DT_QKV_B], 0, D), bk = vp_dt_vec(&W[VP_DT_QKV_B], D, D), bv = vp_dt_vec(&W[VP_DT_QKV_B], 2 * D, D);
    VP_TRY(vp_model_linear(m, &ln1, &wq, &bq, VP_EPI_BIAS, 0.0f, &q));
    VP_TRY(vp_model_linear(m, &ln1, &wk, &bk, VP_EPI_BIAS, 0.0f, &kk));
    VP_TRY(vp_model_linear(m, &ln1, &wv, &bv, VP_EPI_BIAS, 0.0f, &v));
    const vp_attn_desc at = vp_dt_attn_desc(d, B);
    vp_tensor q3 = seq3(&q, d, B), k3 = seq3(&kk, d, B), v3 = seq3(&v, d, B), o3 = seq3(&att, d, B);
    VP_TRY(vp_attention(be, &at, &q3, &k3, &v3, &o3, &lse));
    VP_TRY(vp_copy(be, x, &mid));
    VP_TRY(vp_model_linear(m, &att, &W[VP_DT_PROJ_W], &W[VP_DT_PROJ_B], VP_EPI_BIAS, 1.0f, &mid));
    // the MLP over LayerNorm(mid), added to mid
    VP_TRY(vp_layernorm(be, &mid, &W[VP_DT_LN2_G], &W[VP_DT_LN2_B], d->ln_eps, &ln2, &m2, &r2));
    VP_TRY(vp_model_linear(m, &ln2, &W[VP_DT_FC_W], &W[VP_DT_FC_B], VP_EPI_BIAS, 0.0f, &fc));
    const vp_dt_kernels* kt = NULL;
    VP_TRY(vp_dt_kernels_of("vp_dt_forward", be, &kt));
    VP_TRY(kt->gelu(be, BL * 4 * D, (const float*)fc.data, (float*)ge.data));
    VP_TRY(vp_copy(be, &mid, y));
    return vp_model_linear(m, &ge, &W[VP_DT_FC2_W], &W[VP_DT_FC2_B], VP_EPI_BIAS, 1.0f, y);
}

/* Checks the batch's tensors for B sequences. */
static vp_status check_batch(const char* fn, const vp_backend* be, const vp_dt_dims* d, const vp_dt_batch* x, int64_t B) {
    const int64_t BK = B * d->K;
    VP_TRY(vp_tensor_check_min_rows(fn, "batch port", be, &x->port, VP_F32, BK, d->P));
    VP_TRY(vp_tensor_check_min_rows(fn, "batch act", be, &x->act, VP_I32, BK, 4));
    VP_REQUIRE(vp_tensor_numel(&x->rtg) >= BK && vp_tensor_numel(&x->ts) >= BK && vp_tensor_numel(&x->valid) >= BK,
               VP_ERR_SHAPE, "%s: batch rtg, ts or valid holds fewer than %lld steps", fn, (long long)BK);
    VP_TRY(vp_tensor_check(fn, "batch rtg", be, &x->rtg, VP_F32));
    VP_TRY(vp_tensor_check(fn, "batch ts", be, &x->ts, VP_I32));
    return vp_tensor_check(fn, "batch valid", be, &x->valid, VP_F32);
}

vp_status vp_dt_forward(const vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, const vp_tensor* enc,
                        const vp_dt_batch* x, int64_t B) {
    const char* fn = "vp_dt_forward";
    VP_REQUIRE(n != NULL && params != NULL && a != NULL && x != NULL && B >= 1 && B <= a->max_b, VP_ERR_INVALID_ARG,
               "%s: %lld sequences for activations of %lld", fn, (long long)B, a ? (long long)a->max_b : 0LL);
    const vp_dt_dims* d = &n->dims;
    const vp_model* m = &a->lin;
    vp_backend* be = m->backend;
    const int64_t BK = B * d->K, BL = B * d->L;
    VP_TRY(vp_tensor_check_numel(fn, "params", be, params, VP_F32, n->n_weights));
    VP_TRY(check_batch(fn, be, d, x, B));
    if (enc) {
        VP_TRY(vp_tensor_check_min_rows(fn, "enc", be, enc, VP_F32, BK, d->H));
    } else {
        VP_REQUIRE(a->enc != NULL && a->enc_rows >= BK, VP_ERR_STATE, "%s: no encoding of %lld bars precedes it", fn,
                   (long long)BK);
    }
    const vp_dt_kernels* kt = NULL;
    VP_TRY(vp_dt_kernels_of(fn, be, &kt));
    a->b = B;
    a->x = x;
    a->own_enc = enc == NULL;
    const vp_tensor ev = enc ? vp_dt_rows(enc, BK) : vp_dt_rows(&a->enc->e, BK);
    a->e_in = ev;
    const vp_tensor pe = vp_dt_enc_view(n, params);
    // the state input h = e + W_p p + b_p and the state linear
    vp_tensor h = vp_dt_rows(&a->h, BK), stok = vp_dt_rows(&a->stok, BK);
    vp_tensor port = vp_tensor_2d(x->port.data, VP_F32, x->port.mem, BK, d->P);
    vp_tensor pw = vp_model_slot(&n->enc, &pe, VP_PS_PORT_W), pb = vp_model_slot(&n->enc, &pe, VP_PS_PORT_B);
    VP_TRY(vp_copy(be, &ev, &h));
    VP_TRY(vp_model_linear(m, &port, &pw, &pb, VP_EPI_BIAS, 1.0f, &h));
    vp_tensor sw = vp_dt_view(n, params, vp_dt_in(n, VP_DT_ST_W)), sb = vp_dt_view(n, params, vp_dt_in(n, VP_DT_ST_B));
    VP_TRY(vp_model_linear(m, &h, &sw, &sb, VP_EPI_BIAS, 0.0f, &stok));
    // the tokens and the input LayerNorm
    vp_dt_embed_args ea;
    vp_dt_embed_args_of(a, params, &ea);
    vp_tensor x0 = vp_dt_rows(&a->x0, BL);
    VP_TRY(kt->embed(be, &ea, (float*)x0.data));
    vp_tensor gi = vp_dt_view(n, params, vp_dt_in(n, VP_DT_LNI_G)), bi = vp_dt_view(n, params, vp_dt_in(n, VP_DT_LNI_B));
    vp_tensor mi = vp_dt_vec(&a->mi, 0, BL), ri = vp_dt_vec(&a->ri, 0, BL);
    vp_tensor s0 = vp_dt_rows(vp_dt_stream(a, 0), BL);
    VP_TRY(vp_layernorm(be, &x0, &gi, &bi, d->ln_eps, &s0, &mi, &ri));
    // the blocks, then the final LayerNorm and the head
    for (int l = 0; l < d->layers; ++l) {
        vp_tensor xin = vp_dt_rows(vp_dt_stream(a, l), BL), xout = vp_dt_rows(vp_dt_stream(a, l + 1), BL);
        VP_TRY(block_forward(n, params, a, l, &xin, &xout));
    }
    vp_tensor xl = vp_dt_rows(vp_dt_stream(a, d->layers), BL), lnf = vp_dt_rows(&a->lnf, BL);
    vp_tensor gf = vp_dt_view(n, params, vp_dt_out(n, VP_DT_LNF_G)), bf = vp_dt_view(n, params, vp_dt_out(n, VP_DT_LNF_B));
    vp_tensor mf = vp_dt_vec(&a->mf, 0, BL), rf = vp_dt_vec(&a->rf, 0, BL);
    VP_TRY(vp_layernorm(be, &xl, &gf, &bf, d->ln_eps, &lnf, &mf, &rf));
    vp_tensor hw = vp_dt_view(n, params, vp_dt_out(n, VP_DT_HEAD_W)), hb = vp_dt_view(n, params, vp_dt_out(n, VP_DT_HEAD_B));
    vp_tensor lg = vp_dt_rows(&a->logits, BL);
    return vp_model_linear(m, &lnf, &hw, &hb, VP_EPI_BIAS, 0.0f, &lg);
}

vp_tensor vp_dt_logits(const vp_dt_acts* a) { return vp_dt_rows(&a->logits, a->b * a->net->dims.L); }

vp_status vp_dt_loss(const vp_dt_net* n, vp_dt_acts* a, const vp_dt_batch* x, vp_tensor* terms, vp_tensor* count) {
    const char* fn = "vp_dt_loss";
    VP_REQUIRE(n != NULL && a != NULL && x != NULL && terms != NULL && count != NULL && a->for_backward && a->x == x,
               VP_ERR_STATE, "%s: no forward of this batch with backward activations precedes it", fn);
    const vp_dt_dims* d = &n->dims;
    vp_backend* be = n->enc.backend;
    const int64_t BK = a->b * d->K;
    VP_TRY(vp_tensor_check_numel(fn, "terms", be, terms, VP_F32, BK));
    VP_TRY(vp_tensor_check_numel(fn, "count", be, count, VP_F32, 1));
    const vp_dt_kernels* kt = NULL;
    VP_TRY(vp_dt_kernels_of(fn, be, &kt));
    const vp_action_layout lay = vp_action_layout_env();
    VP_TRY(kt->count(be, BK, (const float*)x->valid.data, (float*)count->data));
    return kt->loss(be, d, &lay, a->b, (const float*)a->logits.data, (const int32_t*)x->act.data,
                    (const float*)x->valid.data, (const float*)count->data, (float*)terms->data,
                    (float*)a->d_logits.data);
}

vp_status vp_dt_batch_init(vp_dt_batch* out, vp_arena* ar, const vp_dt_dims* d, int64_t B) {
    VP_REQUIRE(out != NULL && ar != NULL && d != NULL && B >= 1, VP_ERR_INVALID_ARG, "vp_dt_batch_init: bad argument");
    const int64_t BK = B * d->K;
    const int64_t s1[1] = {BK}, sp[2] = {BK, d->P}, sa[2] = {BK, 4};
    VP_TRY(vp_arena_tensor(ar, "dt.batch.bar", VP_I32, 1, s1, &out->bar, NULL));
    VP_TRY(vp_arena_tensor(ar, "dt.batch.port", VP_F32, 2, sp, &out->port, NULL));
    VP_TRY(vp_arena_tensor(ar, "dt.batch.act", VP_I32, 2, sa, &out->act, NULL));
    VP_TRY(vp_arena_tensor(ar, "dt.batch.rtg", VP_F32, 1, s1, &out->rtg, NULL));
    VP_TRY(vp_arena_tensor(ar, "dt.batch.ts", VP_I32, 1, s1, &out->ts, NULL));
    return vp_arena_tensor(ar, "dt.batch.valid", VP_F32, 1, s1, &out->valid, NULL);
}
