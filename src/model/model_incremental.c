/* The forward one bar at a time (model_internal.h, "the forward one bar at a time"). The
 * trunk sees one bar per row and in_proj is a per-row product too, so a new bar costs its own
 * trunk row, in_proj row and conv row (vp_model_inc_push), kept in a ring of the last K bars;
 * a decision then runs the rest of the Mamba2 mixer over the K cached rows (conv where the
 * window's start cuts it, scan, gate, out_proj: vp_model_inc_encode) and the heads
 * (vp_model_inc_heads). The arithmetic is
 * the batch forward's (model_forward.c), op for op, on one row or one sample: on the CPU a
 * GEMM row does not depend on the rows beside it, so the results equal vp_model_encode's and
 * vp_model_heads' bit for bit. The weights are laid out [in, out] once, the layout the CPU's
 * row-exact kernel computes in, so no call transposes a weight matrix. */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "model/model_atoms.h"
#include "model/model_internal.h"

/* The slots laid out [in, out], in the order of vp_model_inc's fields. */
static const vp_pslot SLOTS[VP_MODEL_INC_WEIGHTS] = {VP_PS_TRUNK_W1, VP_PS_TRUNK_W2, VP_PS_MAMBA_IN_W,
                                                     VP_PS_MAMBA_IN_W, VP_PS_MAMBA_OUT_W, VP_PS_PORT_W,
                                                     VP_PS_C51_V1_W, VP_PS_C51_V2_W, VP_PS_C51_A1_W, VP_PS_C51_A2_W,
                                                     VP_PS_MAMBA_CONV_W};

/* y [1, out] = epi(x [1, in] Wt + beta y) with Wt [in, out], bias [out] or NULL: the batch
 * forward's linear for one row, in FP32 (vp_model_row_gemm: the row-exact kernel's bits). */
static vp_status linear_t(const vp_model_inc* w, const vp_tensor* x, const vp_tensor* Wt, const vp_tensor* bias,
                          vp_epilogue epi, float beta, vp_tensor* y) {
    const int64_t k = vp_tensor_rows(Wt), n = vp_tensor_cols(Wt);
    VP_REQUIRE(vp_tensor_rows(x) == 1 && vp_tensor_cols(x) == k && vp_tensor_numel(y) == n &&
                   (epi == VP_EPI_NONE || (bias && vp_tensor_numel(bias) == n)),
               VP_ERR_SHAPE, "vp_model_inc: a one-row product of [1, %lld] by [%lld, %lld] got x [%lld, %lld], y of "
               "%lld", (long long)k, (long long)k, (long long)n, (long long)vp_tensor_rows(x),
               (long long)vp_tensor_cols(x), (long long)vp_tensor_numel(y));
    vp_model_row_gemm(k, n, (const float*)x->data, (const float*)Wt->data, bias ? (const float*)bias->data : NULL,
                      epi, beta, (float*)y->data, w->acc, w->finite);
    return VP_OK;
}

#define PV(slot) vp_model_slot(m, w->params, VP_PS_##slot)

/* relu in place over one row, the CPU op's rule (x < 0: 0; a NaN stays a NaN), in a loop the
 * compiler vectorises. */
static void relu_row(vp_tensor* t) {
    float* v = (float*)t->data;
    const int64_t n = vp_tensor_numel(t);
    for (int64_t i = 0; i < n; ++i) v[i] = v[i] < 0.0f ? 0.0f : v[i];
}

vp_status vp_model_inc_init(vp_model_inc* w, const vp_model* m, const vp_tensor* params) {
    VP_REQUIRE(w != NULL && m != NULL && m->info != NULL, VP_ERR_INVALID_ARG, "vp_model_inc_init: NULL argument");
    memset(w, 0, sizeof *w);
    VP_TRY(vp_tensor_check_numel("vp_model_inc_init", "params", m->backend, params, VP_F32, m->n_weights));
    VP_REQUIRE(vp_backend_native_mem(m->backend) == VP_MEM_HOST, VP_ERR_UNSUPPORTED,
               "vp_model_inc_init: the forward one bar at a time runs on the CPU, not on backend %s",
               vp_backend_name(m->backend));
    const vp_model_cfg* c = &m->cfg;
    VP_REQUIRE(!c->vsn && !c->spectral_norm && !c->kan, VP_ERR_UNSUPPORTED,
               "the forward one bar at a time (live trading) does not run the input modules: this network has %s on",
               c->vsn ? "model.vsn" : c->spectral_norm ? "model.spectral_norm" : "model.kan");
    const int64_t H = c->hidden;
    w->m = m;
    w->params = params;
    const int MB = c->encoder == VP_ENCODER_MAMBA2;
    w->L = MB ? H + 2 * c->mamba_state + H / c->mamba_head_dim : 0;
    // each weight's view [out, in] (in_proj split into its x, B, C, dt rows and its z rows)
    vp_tensor src[VP_MODEL_INC_WEIGHTS];
    int64_t total = 0;
    for (int i = 0; i < VP_MODEL_INC_WEIGHTS; ++i) {
        const int mamba = SLOTS[i] == VP_PS_MAMBA_IN_W || SLOTS[i] == VP_PS_MAMBA_OUT_W || SLOTS[i] == VP_PS_MAMBA_CONV_W;
        memset(&src[i], 0, sizeof src[i]);
        if (mamba && !MB) continue;
        src[i] = i == 2   ? vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, H, w->L)
                 : i == 3 ? vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, 0, H)
                          : vp_model_slot(m, params, SLOTS[i]);
        total += vp_tensor_numel(&src[i]);
    }
    // the accumulators of the widest product: every output width is at most one of these
    int64_t widest = H > w->L ? H : w->L;
    const int64_t AZ = (int64_t)vp_model_cfg_actions(c) * c->n_atoms;
    widest = widest > AZ ? widest : AZ;
    widest = widest > c->head_hidden ? widest : c->head_hidden;
    VP_TRY(vp_buffer_alloc(m->backend, VP_MEM_HOST, sizeof(float) * (size_t)(total + widest), &w->buf));
    float* p = (float*)w->buf.dev;
    w->acc = p + total;
    vp_tensor* dst[VP_MODEL_INC_WEIGHTS] = {&w->w1, &w->w2, &w->w_rest, &w->w_z, &w->w_out,
                                            &w->w_port, &w->w_v1, &w->w_v2, &w->w_a1, &w->w_a2, &w->w_convt};
    for (int i = 0; i < VP_MODEL_INC_WEIGHTS; ++i) {
        if (!src[i].data) continue;
        const int64_t out = vp_tensor_rows(&src[i]), in = vp_tensor_cols(&src[i]);
        const float* s = (const float*)src[i].data;
        for (int64_t o = 0; o < out; ++o)
            for (int64_t k = 0; k < in; ++k) p[k * out + o] = s[o * in + k];
        *dst[i] = vp_tensor_2d(p, VP_F32, VP_MEM_HOST, in, out);
        p += in * out;
    }
    // zero inputs' terms may be skipped only where no weight is NaN or infinite (0 x inf is NaN)
    w->finite = 1;
    for (const float* q = (const float*)w->buf.dev; q < w->acc && w->finite; ++q) w->finite = isfinite(*q) != 0;
    return VP_OK;
}

void vp_model_inc_free(vp_model_inc* w) {
    if (!w) return;
    if (w->buf.dev) vp_buffer_free(w->m->backend, &w->buf);
    memset(w, 0, sizeof *w);
}

/* Checks the activations of a call: made for w's model, one sample at least. */
static vp_status check_acts(const char* fn, const vp_model_inc* w, const vp_model_acts* a) {
    VP_REQUIRE(w != NULL && w->m != NULL && a != NULL && a->model != NULL, VP_ERR_INVALID_ARG,
               "%s: weights or activations are NULL", fn);
    VP_REQUIRE(a->model->cfg.hidden == w->m->cfg.hidden && a->model->n_weights == w->m->n_weights, VP_ERR_INVALID_ARG,
               "%s: activations were made for another model", fn);
    return VP_OK;
}

vp_status vp_model_inc_ring_init(vp_model_inc_ring* r, const vp_model_inc* w) {
    VP_REQUIRE(r != NULL && w != NULL && w->m != NULL, VP_ERR_INVALID_ARG, "vp_model_inc_ring_init: NULL argument");
    memset(r, 0, sizeof *r);
    const vp_model_cfg* c = &w->m->cfg;
    const int64_t K = c->window, H = c->hidden, XB = c->encoder == VP_ENCODER_MAMBA2 ? H + c->mamba_state : 0;
    const int64_t TR = c->encoder == VP_ENCODER_TLOB ? K * H : 0;
    const size_t floats = (size_t)(K * w->L + K * XB + H + TR);
    r->block = calloc(floats, sizeof(float));
    VP_REQUIRE(r->block != NULL, VP_ERR_OOM, "vp_model_inc_ring_init: %zu floats", floats);
    r->K = (int)K;
    r->xbcdt = (float*)r->block;
    r->xb = r->xbcdt + K * w->L;
    r->h2 = r->xb + K * XB;
    r->rows = TR ? r->h2 + H : NULL;
    return VP_OK;
}

void vp_model_inc_ring_free(vp_model_inc_ring* r) {
    if (!r) return;
    free(r->block);
    memset(r, 0, sizeof *r);
}

vp_status vp_model_inc_push(const vp_model_inc* w, vp_model_acts* a, vp_model_inc_ring* r, const float* x) {
    VP_TRY(check_acts("vp_model_inc_push", w, a));
    VP_REQUIRE(r != NULL && r->block != NULL && x != NULL, VP_ERR_INVALID_ARG, "vp_model_inc_push: ring or x is NULL");
    const vp_model* m = w->m;
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    vp_trunk_views t = vp_model_trunk_views(a, 1);
    vp_tensor b1 = PV(TRUNK_B1), g1 = PV(TRUNK_LN1_G), bt1 = PV(TRUNK_LN1_B);
    vp_tensor b2 = PV(TRUNK_B2), g2 = PV(TRUNK_LN2_G), bt2 = PV(TRUNK_LN2_B);
    a->state = 0;
    memcpy(t.x0.data, x, sizeof(float) * (size_t)c->n_features);
    // h1 = relu(LN(W1 f + b1)), h2 = relu(LN(W2 h1 + b2)), as vp_model_trunk_forward
    VP_TRY(linear_t(w, &t.x0, &w->w1, &b1, VP_EPI_BIAS, 0.0f, &t.a1));
    VP_TRY(vp_layernorm(be, &t.a1, &g1, &bt1, c->ln_eps, &t.h1, &t.mean1, &t.rstd1));
    relu_row(&t.h1);
    VP_TRY(linear_t(w, &t.h1, &w->w2, &b2, VP_EPI_BIAS, 0.0f, &t.a2));
    VP_TRY(vp_layernorm(be, &t.a2, &g2, &bt2, c->ln_eps, &t.h2, &t.mean2, &t.rstd2));
    relu_row(&t.h2);
    memcpy(r->h2, t.h2.data, sizeof(float) * (size_t)c->hidden);
    r->n += 1;
    if (r->rows) {
        // TLOB keeps every bar's trunk row; the first bar stands for the bars before it
        const int64_t H = c->hidden;
        if (r->n == 1)
            for (int64_t j = 0; j < r->K; ++j) memcpy(r->rows + j * H, r->h2, sizeof(float) * (size_t)H);
        else
            memcpy(r->rows + ((r->n - 1) % r->K) * H, r->h2, sizeof(float) * (size_t)H);
    }
    if (w->L == 0) return VP_OK;
    // in_proj's x, B, C, dt columns of this bar, as vp_model_mamba_forward computes them for every row
    const int64_t L = w->L, K = r->K;
    float* xr = r->xbcdt + ((r->n - 1) % K) * L;
    vp_tensor row = vp_tensor_2d(xr, VP_F32, VP_MEM_HOST, 1, L);
    VP_TRY(linear_t(w, &t.h2, &w->w_rest, NULL, VP_EPI_NONE, 0.0f, &row));
    if (r->n == 1)
        for (int64_t j = 1; j < K; ++j) memcpy(r->xbcdt + j * L, xr, sizeof(float) * (size_t)L);
    vp_model_inc_conv_row(w, r);
    // the first bar's conv row also stands for the bars before it (each reads the first bar only)
    const int64_t XB = c->hidden + c->mamba_state;
    if (r->n == 1)
        for (int64_t j = 1; j < K; ++j) memcpy(r->xb + j * XB, r->xb, sizeof(float) * (size_t)XB);
    return VP_OK;
}

vp_status vp_model_inc_encode(const vp_model_inc* w, vp_model_acts* a, const vp_model_inc_ring* r) {
    VP_TRY(check_acts("vp_model_inc_encode", w, a));
    VP_REQUIRE(r != NULL && r->n >= 1, VP_ERR_STATE, "vp_model_inc_encode: the ring holds no bar");
    const vp_model* m = w->m;
    const vp_model_cfg* c = &m->cfg;
    const int K = r->K;
    const int64_t H = c->hidden, L = w->L;
    vp_backend* be = m->backend;
    a->state = 0;
    a->batch = 1;
    vp_tensor e = vp_acts_rows(&a->e, 1);
    if (r->rows) {
        // TLOB: the window's trunk rows in time order (the ring from its oldest row), then the blocks
        const int oldest = (int)(r->n % K);
        float* h2 = (float*)a->h2.data;
        memcpy(h2, r->rows + (int64_t)oldest * H, sizeof(float) * (size_t)((K - oldest) * H));
        memcpy(h2 + (int64_t)(K - oldest) * H, r->rows, sizeof(float) * (size_t)(oldest * H));
        VP_TRY(vp_model_tlob_forward(m, w->params, a, 1));
        a->state = VP_ACTS_ENCODED;
        return VP_OK;
    }
    if (L == 0) {
        // without a mixer the encoding is the last bar's trunk output (e aliases h2)
        memcpy(e.data, r->h2, sizeof(float) * (size_t)H);
        a->state = VP_ACTS_ENCODED;
        return VP_OK;
    }
    // the window's in_proj rows in time order: the ring from its oldest row (bar n - K), then its start
    const int oldest = (int)(r->n % K);
    float* xb = (float*)a->xbcdt.data;
    memcpy(xb, r->xbcdt + (int64_t)oldest * L, sizeof(float) * (size_t)((K - oldest) * L));
    memcpy(xb + (int64_t)(K - oldest) * L, r->xbcdt, sizeof(float) * (size_t)(oldest * L));
    vp_tensor last = vp_acts_rows(&a->h2_last, 1), z = vp_acts_rows(&a->z, 1);
    memcpy(last.data, r->h2, sizeof(float) * (size_t)H);
    VP_TRY(linear_t(w, &last, &w->w_z, NULL, VP_EPI_NONE, 0.0f, &z));
    // conv + SiLU, the scan to the last step's y (model_inc_mamba.c), the gated RMSNorm
    vp_model_inc_mix(w, a, r);
    VP_TRY(vp_model_gate_forward(m, w->params, a, 1));
    // e = h2_K + out_proj(yn)
    vp_tensor yn = vp_acts_rows(&a->yn, 1);
    VP_TRY(vp_copy(be, &last, &e));
    VP_TRY(linear_t(w, &yn, &w->w_out, NULL, VP_EPI_NONE, 1.0f, &e));
    a->state = VP_ACTS_ENCODED;
    return VP_OK;
}

vp_status vp_model_inc_heads(const vp_model_inc* w, vp_model_acts* a, const vp_tensor* portfolio) {
    VP_TRY(check_acts("vp_model_inc_heads", w, a));
    VP_REQUIRE((a->state & VP_ACTS_ENCODED) && a->batch == 1 && portfolio != NULL, VP_ERR_STATE,
               "vp_model_inc_heads: no encoding of one sample in the activations, or no portfolio");
    const vp_model* m = w->m;
    VP_TRY(vp_tensor_check_min_rows("vp_model_inc_heads", "portfolio", m->backend, portfolio, VP_F32, 1,
                                    m->cfg.n_portfolio));
    vp_backend* be = m->backend;
    // h = e + Wp p + bp, then the C51 value and advantage streams, as vp_model_heads
    vp_tensor e = vp_acts_rows(&a->e, 1), port = vp_acts_rows(&a->port, 1), h = vp_acts_rows(&a->h, 1);
    vp_tensor pin = vp_acts_rows(portfolio, 1), pb = PV(PORT_B);
    VP_TRY(vp_copy(be, &pin, &port));
    VP_TRY(vp_copy(be, &e, &h));
    VP_TRY(linear_t(w, &port, &w->w_port, &pb, VP_EPI_BIAS, 1.0f, &h));
    VP_TRY(vp_model_rb_forward(m, w->params, a, 1));
    vp_tensor v1 = vp_acts_rows(&a->v1, 1), ah = vp_acts_rows(&a->ah, 1);
    vp_tensor v = vp_acts_rows(&a->v, 1), adv = vp_acts_rows(&a->adv, 1);
    vp_tensor v1b = PV(C51_V1_B), v2b = PV(C51_V2_B), a1b = PV(C51_A1_B), a2b = PV(C51_A2_B);
    VP_TRY(linear_t(w, &h, &w->w_v1, &v1b, VP_EPI_BIAS_RELU, 0.0f, &v1));
    VP_TRY(linear_t(w, &v1, &w->w_v2, &v2b, VP_EPI_BIAS, 0.0f, &v));
    VP_TRY(linear_t(w, &h, &w->w_a1, &a1b, VP_EPI_BIAS_RELU, 0.0f, &ah));
    if (m->cfg.cross_branch)
        VP_TRY(vp_model_xb_forward(m, w->params, a, 1));
    else
        VP_TRY(linear_t(w, &ah, &w->w_a2, &a2b, VP_EPI_BIAS, 0.0f, &adv));
    VP_TRY(vp_model_atoms_support(m, w->params, a));
    VP_TRY(vp_model_combine_forward(m, a, 1));
    VP_TRY(vp_model_qd_forward(m, w->params, a, 1));
    a->state |= VP_ACTS_HEADS;
    a->n_taus = 0;
    return VP_OK;
}
