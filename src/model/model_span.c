/* The market encoding of a span of consecutive windows with shared rows (vulpes/model_span.h):
 * the trunk, Mamba2's in_proj and its conv + SiLU once per distinct bar, then per chunk of
 * windows Mamba2's scan read from the tables by index and the rest of the mixer as
 * vp_model_encode runs it, or TLOB over the rows gathered in vp_model_encode's layout. */
#include <stdlib.h>
#include <string.h>

#include "backend/kit.h"
#include "model/model_internal.h"
#include "vulpes/model_span.h"

int vp_model_span_shares(const vp_model_cfg* c) {
    if (!c || vp_model_cfg_check(c) != VP_OK) return 0;
    // the trunk reads one feature row per output row (model_input.c's modules included), and
    // each encoder reads the window's trunk rows in the order vp_model_encode gathers them
    return c->encoder == VP_ENCODER_MAMBA2 || c->encoder == VP_ENCODER_TLOB || c->encoder == VP_ENCODER_NONE;
}

/* Mamba2's in_proj columns kept per bar: x, B, C, dt (0 without Mamba2). */
static int64_t in_cols(const vp_model_cfg* c) {
    if (c->encoder != VP_ENCODER_MAMBA2) return 0;
    return c->hidden + 2 * (int64_t)c->mamba_state + c->hidden / c->mamba_head_dim;
}

/* Uploads [n] i32 of v0, v0 + 1, ... into t. */
static vp_status upload_ramp(vp_backend* b, vp_tensor* t, int64_t v0, int64_t n) {
    int32_t* h = (int32_t*)malloc((size_t)n * sizeof *h);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "vp_model_span_init: %lld row indices", (long long)n);
    for (int64_t i = 0; i < n; ++i) h[i] = (int32_t)(v0 + i);
    vp_status s = vp_upload(b, t, h, (size_t)n * sizeof *h);
    free(h);
    return s;
}

vp_status vp_model_span_init(vp_model_span* s, const vp_model* m, int64_t begin, int64_t windows) {
    VP_REQUIRE(s != NULL && m != NULL && m->info != NULL, VP_ERR_INVALID_ARG,
               "vp_model_span_init: span or model is NULL or not initialised");
    memset(s, 0, sizeof *s);
    const vp_model_cfg* c = &m->cfg;
    VP_REQUIRE(vp_model_span_shares(c), VP_ERR_INVALID_ARG,
               "vp_model_span_init: the configuration's windows cannot share rows (encoder %d)", (int)c->encoder);
    VP_REQUIRE(begin >= 0 && windows >= 1 && begin + windows <= INT32_MAX, VP_ERR_INVALID_ARG,
               "vp_model_span_init: windows %lld from bar %lld (bars must be i32, begin >= 0, windows >= 1)",
               (long long)windows, (long long)begin);
    const int Kt = vp_model_trunk_steps(c);
    const int64_t H = c->hidden, L = in_cols(c);
    s->begin = begin;
    s->windows = windows;
    s->first = begin - Kt + 1 > 0 ? begin - Kt + 1 : 0;
    s->rows = begin + windows - s->first;
    s->window = Kt;
    s->hidden = (int)H;
    s->in_cols = L;
    // encoder none: the trunk rows are the encodings, written into the caller's table
    const int64_t HR = c->encoder != VP_ENCODER_NONE ? s->rows : 0, NR = s->rows, NW = windows;
    const size_t bytes = (size_t)(NR + NW) * 4 + (size_t)HR * (size_t)H * 4 + 2 * (size_t)NR * (size_t)L * 4 + 5 * 256;
    vp_backend* b = m->backend;
    vp_status st = vp_arena_init(&s->arena, b, vp_backend_native_mem(b), bytes);
    const int64_t bar_shape[1] = {NR}, last_shape[1] = {NW}, h2_shape[2] = {HR, H}, xb_shape[2] = {NR, L};
    if (st == VP_OK) st = vp_arena_tensor(&s->arena, "span.bars", VP_I32, 1, bar_shape, &s->bars, NULL);
    if (st == VP_OK) st = vp_arena_tensor(&s->arena, "span.last", VP_I32, 1, last_shape, &s->last, NULL);
    if (st == VP_OK && HR) st = vp_arena_tensor(&s->arena, "span.h2", VP_F32, 2, h2_shape, &s->h2, NULL);
    if (st == VP_OK && L) st = vp_arena_tensor(&s->arena, "span.xbcdt", VP_F32, 2, xb_shape, &s->xbcdt, NULL);
    if (st == VP_OK && L) st = vp_arena_tensor(&s->arena, "span.act", VP_F32, 2, xb_shape, &s->act, NULL);
    if (st == VP_OK) st = upload_ramp(b, &s->bars, s->first, NR);
    if (st == VP_OK) st = upload_ramp(b, &s->last, begin - s->first, NW);
    if (st != VP_OK) vp_model_span_free(s);
    return st;
}

void vp_model_span_free(vp_model_span* s) {
    if (!s) return;
    if (s->arena.backend) vp_arena_free(&s->arena);
    memset(s, 0, sizeof *s);
}

/* Checks a call's arguments against the model, the span and the activations. */
static vp_status check_call(const vp_model* m, const vp_tensor* params, const vp_model_acts* a, const vp_model_span* s,
                            const vp_tensor* features, int64_t chunk, const vp_tensor* out) {
    static const char* fn = "vp_model_encode_span";
    VP_REQUIRE(m != NULL && m->info != NULL && a != NULL && a->model != NULL && s != NULL && s->bars.data != NULL,
               VP_ERR_INVALID_ARG, "%s: model, activations or span is NULL or not initialised", fn);
    const vp_model_cfg* c = &m->cfg;
    VP_REQUIRE(a->model->cfg.hidden == c->hidden && a->model->n_weights == m->n_weights, VP_ERR_INVALID_ARG,
               "%s: activations were made for another model", fn);
    VP_REQUIRE(s->window == vp_model_trunk_steps(c) && s->hidden == c->hidden && s->in_cols == in_cols(c),
               VP_ERR_INVALID_ARG, "%s: the span was made for another network shape (Kt %d, H %d, L %lld)", fn,
               s->window, s->hidden, (long long)s->in_cols);
    VP_REQUIRE((s->h2.data != NULL) == (c->encoder != VP_ENCODER_NONE), VP_ERR_INVALID_ARG,
               "%s: the span was made for another encoder (trunk-row table %s)", fn, s->h2.data ? "kept" : "absent");
    VP_REQUIRE(chunk >= 1 && chunk <= a->max_batch, VP_ERR_SHAPE, "%s: chunk %lld outside [1, %lld] of the activations",
               fn, (long long)chunk, (long long)a->max_batch);
    VP_TRY(vp_tensor_check_numel(fn, "params", m->backend, params, VP_F32, m->n_weights));
    VP_TRY(vp_tensor_check_min_rows(fn, "features", m->backend, features, VP_F32, s->begin + s->windows,
                                    c->n_features));
    return vp_tensor_check_min_rows(fn, "out", m->backend, out, VP_F32, s->windows, c->hidden);
}

/* The trunk of every bar of the span (and with Mamba2 its in_proj x, B, C, dt), `per` bars a call,
 * then Mamba2's conv + SiLU and dt of every bar in one call; encoder none writes the rows straight
 * into out. */
static vp_status bar_rows(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_model_span* s,
                          const vp_tensor* features, int64_t per, vp_tensor* out) {
    vp_backend* be = m->backend;
    const int64_t H = s->hidden, L = s->in_cols;
    const vp_tensor w_rest = L ? vp_model_mamba_w_rest(m, params) : (vp_tensor){0};
    float* h2_base = (float*)(s->h2.data ? s->h2.data : out->data);
    const vp_mem h2_mem = s->h2.data ? s->h2.mem : out->mem;
    for (int64_t off = 0; off < s->rows; off += per) {
        const int64_t n = s->rows - off < per ? s->rows - off : per;
        vp_tensor bars = vp_tensor_1d((int32_t*)s->bars.data + off, VP_I32, s->bars.mem, n);
        vp_tensor x0 = vp_acts_rows(&a->x0, n), h2 = vp_tensor_2d(h2_base + off * H, VP_F32, h2_mem, n, H);
        VP_TRY(vp_gather_rows(be, features, &bars, &x0));
        VP_TRY(vp_model_trunk_rows(m, params, a, n, &h2));
        if (!L) continue;
        vp_tensor xr = vp_tensor_2d((float*)s->xbcdt.data + off * L, VP_F32, s->xbcdt.mem, n, L);
        VP_TRY(vp_model_linear(m, &h2, &w_rest, NULL, VP_EPI_NONE, 0.0f, &xr));
    }
    if (!L) return VP_OK;
    const vp_mamba_dims d = vp_model_mamba_dims(&m->cfg, 1);
    const vp_tensor cw = vp_model_slot(m, params, VP_PS_MAMBA_CONV_W);
    const vp_tensor cb = vp_model_slot(m, params, VP_PS_MAMBA_CONV_B);
    const vp_tensor dtb = vp_model_slot(m, params, VP_PS_MAMBA_DT_BIAS);
    return a->mops->span_conv(be, &d, s->rows, (const float*)s->xbcdt.data, (const float*)cw.data,
                              (const float*)cb.data, (const float*)dtb.data, (float*)s->act.data);
}

/* Mamba2's mixer of windows [off, off + n): z of each window's last bar, the scan from the tables
 * by index and the gate (span_mix) into a->yn, then out rows = the last bar's trunk row +
 * out_proj(yn), the last bars' rows read in place (consecutive table rows).
 * vp_model_mamba_mix_forward's ops in its order on the same rows (on CUDA the scan and the gate
 * in one pass). */
static vp_status mamba_chunk(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_model_span* s,
                             int64_t off, int64_t n, vp_tensor* rows) {
    vp_backend* be = m->backend;
    const int64_t H = s->hidden;
    const int32_t* last = (const int32_t*)s->last.data + off;
    const vp_mamba_dims d = vp_model_mamba_dims(&m->cfg, n);
    vp_tensor h2 = vp_tensor_2d((float*)s->h2.data + (s->begin - s->first + off) * H, VP_F32, s->h2.mem, n, H);
    vp_tensor z = vp_acts_rows(&a->z, n), yn = vp_acts_rows(&a->yn, n);
    vp_tensor w_z = vp_model_slot_rows(m, params, VP_PS_MAMBA_IN_W, 0, H);
    vp_tensor out_w = vp_model_slot(m, params, VP_PS_MAMBA_OUT_W);
    vp_tensor cw = vp_model_slot(m, params, VP_PS_MAMBA_CONV_W), cb = vp_model_slot(m, params, VP_PS_MAMBA_CONV_B);
    vp_tensor alog = vp_model_slot(m, params, VP_PS_MAMBA_A_LOG), dd = vp_model_slot(m, params, VP_PS_MAMBA_D);
    VP_TRY(vp_model_linear(m, &h2, &w_z, NULL, VP_EPI_NONE, 0.0f, &z));
    vp_tensor ng = vp_model_slot(m, params, VP_PS_MAMBA_NORM_G);
    VP_TRY(a->mops->span_mix(be, &d, last, (const float*)s->xbcdt.data, (const float*)s->act.data,
                             (const float*)cw.data, (const float*)cb.data, (const float*)alog.data,
                             (const float*)dd.data, (const float*)z.data, (const float*)ng.data, m->cfg.rms_eps,
                             (float*)a->y.data, (float*)a->sz.data, (float*)a->g.data, (float*)a->rms_rstd.data,
                             (float*)yn.data));
    if (vp_model_sd_active(m, a)) return vp_model_sd_forward(m, a, &yn, &out_w, &h2, rows, n);
    VP_TRY(vp_copy(be, &h2, rows));
    return vp_model_linear(m, &yn, &out_w, NULL, VP_EPI_NONE, 1.0f, rows);
}

/* The encodings of windows [off, off + n) into out's rows: Mamba2 from the tables, TLOB over its
 * windows' rows gathered. */
static vp_status window_chunk(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_model_span* s,
                              int64_t off, int64_t n, vp_tensor* out) {
    vp_backend* be = m->backend;
    const int K = s->window;
    const int64_t H = s->hidden;
    vp_tensor rows = vp_tensor_2d((float*)out->data + off * H, VP_F32, out->mem, n, H);
    if (s->in_cols) return mamba_chunk(m, params, a, s, off, n, &rows);
    // TLOB: each window's rows t-K+1 .. t as table rows (clamped at 0: the table starts at bar 0
    // then) in time order, then its blocks
    const int32_t* last = (const int32_t*)s->last.data + off;
    vp_tensor idx = vp_acts_vec(&a->idx, n * K), e = vp_acts_rows(&a->e, n), h2 = vp_acts_rows(&a->h2, n * K);
    VP_TRY(a->mops->window_index(be, n, K, last, (int32_t*)idx.data));
    VP_TRY(vp_gather_rows(be, &s->h2, &idx, &h2));
    VP_TRY(vp_model_tlob_forward(m, params, a, n));
    return vp_copy(be, &e, &rows);
}

vp_status vp_model_encode_span(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_model_span* s,
                               const vp_tensor* features, int64_t chunk, vp_tensor* out) {
    VP_TRY(check_call(m, params, a, s, features, chunk, out));
    a->state = 0;
    a->batch = 0;
    VP_TRY(bar_rows(m, params, a, s, features, chunk * s->window, out));
    if (m->cfg.encoder != VP_ENCODER_NONE) // a mixer, at any K (1 included)
        for (int64_t off = 0; off < s->windows; off += chunk) {
            const int64_t n = s->windows - off < chunk ? s->windows - off : chunk;
            VP_TRY(window_chunk(m, params, a, s, off, n, out));
        }
    return VP_OK;
}

double vp_model_span_flops(const vp_model_cfg* c, int64_t windows, int64_t rows) {
    if (!vp_model_span_shares(c) || windows < 1 || rows < 1) return 0.0;
    const double W = (double)windows, R = (double)rows, F = c->n_features, H = c->hidden;
    const double L = (double)in_cols(c);
    // per bar: the first layer (a KAN counts among the input modules), trunk.w2, in_proj's x, B, C, dt
    double f = R * (2.0 * (c->kan ? 0.0 : H * F) + 2.0 * H * H + 2.0 * L * H) + vp_model_input_flops(c, R, 0);
    // per window: z and out_proj (Mamba2), the TLOB blocks
    if (L > 0) f += W * 2.0 * (2.0 * H * H);
    return f + vp_model_tlob_flops(c, W);
}
