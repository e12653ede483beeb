/* The encoder one bar at a time: the trunk sees one bar per row, so a new bar costs its own
 * trunk row (vp_model_trunk_row); a decision window is then the last K of those rows, kept by
 * the caller, and the Mamba2 mixer runs over them (vp_model_encode_window). The ops are those
 * of the batch forward (model_forward.c) on one row or one sample, whose results do not
 * depend on the rows computed beside them (row-exact GEMM on the CPU), so the encoding equals
 * vp_model_encode's for the same window bit for bit on the CPU. */
#include <string.h>

#include "model/model_internal.h"

/* y [rows, out] = epi(x [rows, in] W^T + bias), as the batch forward's linear. */
static vp_status linear(const vp_model* m, const vp_tensor* x, const vp_tensor* W, const vp_tensor* bias,
                        vp_epilogue epi, vp_tensor* y) {
    vp_gemm_desc d = vp_gemm_plain(0, 1, vp_tensor_rows(x), vp_tensor_rows(W), vp_tensor_cols(x));
    d.beta = 0.0f;
    d.epilogue = epi;
    d.precision = m->precision;
    return vp_gemm(m->backend, &d, x, W, bias, y);
}

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)

/* Checks the model and activations of an incremental call. */
static vp_status check_inc(const char* fn, const vp_model* m, const vp_tensor* params, const vp_model_acts* a) {
    VP_REQUIRE(m != NULL && m->info != NULL && a != NULL && a->model != NULL, VP_ERR_INVALID_ARG,
               "%s: model or activations are NULL", fn);
    VP_REQUIRE(a->model->cfg.hidden == m->cfg.hidden && a->model->n_weights == m->n_weights, VP_ERR_INVALID_ARG,
               "%s: activations were made for another model", fn);
    return vp_tensor_check_numel(fn, "params", m->backend, params, VP_F32, m->n_weights);
}

vp_status vp_model_trunk_row(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const float* x,
                             float* out) {
    VP_TRY(check_inc("vp_model_trunk_row", m, params, a));
    VP_REQUIRE(x != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_model_trunk_row: x or out is NULL");
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    vp_trunk_views t = vp_model_trunk_views(a, 1);
    vp_tensor w1 = PV(TRUNK_W1), b1 = PV(TRUNK_B1), g1 = PV(TRUNK_LN1_G), bt1 = PV(TRUNK_LN1_B);
    vp_tensor w2 = PV(TRUNK_W2), b2 = PV(TRUNK_B2), g2 = PV(TRUNK_LN2_G), bt2 = PV(TRUNK_LN2_B);
    a->state = 0;
    VP_TRY(vp_upload(be, &t.x0, x, sizeof(float) * (size_t)c->n_features));
    // h1 = relu(LN(W1 f + b1)), h2 = relu(LN(W2 h1 + b2)), as vp_model_trunk_forward
    VP_TRY(linear(m, &t.x0, &w1, &b1, VP_EPI_BIAS, &t.a1));
    VP_TRY(vp_layernorm(be, &t.a1, &g1, &bt1, c->ln_eps, &t.h1, &t.mean1, &t.rstd1));
    VP_TRY(vp_unary(be, VP_UNARY_RELU, &t.h1, &t.h1));
    VP_TRY(linear(m, &t.h1, &w2, &b2, VP_EPI_BIAS, &t.a2));
    VP_TRY(vp_layernorm(be, &t.a2, &g2, &bt2, c->ln_eps, &t.h2, &t.mean2, &t.rstd2));
    VP_TRY(vp_unary(be, VP_UNARY_RELU, &t.h2, &t.h2));
    return vp_download(be, out, &t.h2, sizeof(float) * (size_t)c->hidden);
}

vp_status vp_model_encode_window(const vp_model* m, const vp_tensor* params, vp_model_acts* a, const float* ring,
                                 int oldest) {
    VP_TRY(check_inc("vp_model_encode_window", m, params, a));
    const int Kt = vp_model_trunk_steps(&m->cfg);
    const int64_t H = m->cfg.hidden;
    VP_REQUIRE(ring != NULL && oldest >= 0 && oldest < Kt, VP_ERR_INVALID_ARG,
               "vp_model_encode_window: ring is NULL or its oldest row %d is outside [0, %d)", oldest, Kt);
    vp_backend* be = m->backend;
    a->state = 0;
    // the window's trunk rows in time order into h2 [Kt, H]: the ring from its oldest row, then its start
    vp_tensor h2 = vp_acts_rows(&a->h2, Kt);
    const size_t row = sizeof(float) * (size_t)H;
    vp_tensor head = vp_tensor_2d(h2.data, VP_F32, h2.mem, Kt - oldest, H);
    VP_TRY(vp_upload(be, &head, ring + (int64_t)oldest * H, row * (size_t)(Kt - oldest)));
    if (oldest > 0) {
        vp_tensor tail = vp_tensor_2d((float*)h2.data + (int64_t)(Kt - oldest) * H, VP_F32, h2.mem, oldest, H);
        VP_TRY(vp_upload(be, &tail, ring, row * (size_t)oldest));
    }
    a->batch = 1;
    if (m->cfg.use_mamba) VP_TRY(vp_model_mamba_forward(m, params, a, 1));
    a->state = VP_ACTS_ENCODED;
    return VP_OK;
}
