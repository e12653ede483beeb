/* The input modules strung into the trunk's first layer (model_internal.h): checks, FLOPs,
 * activations, the first layer's forward and backward, and the public calls that read the
 * modules' state (vp_model_commit, vp_model_selection_weights). With every module off the
 * first layer is the plain linear of model_forward.c, call for call. */
#include <math.h>

#include "model/model_input.h"
#include "model/model_input_math.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

/* Fails naming `field` unless lo <= v <= hi. */
#define CHECK_RANGE(field, lo, hi)                                                                 \
    VP_REQUIRE(c->field >= (lo) && c->field <= (hi), VP_ERR_INVALID_ARG,                           \
               "model config: " #field " = %d is outside [%d, %d]", (int)c->field, (int)(lo), (int)(hi))

vp_status vp_model_input_check(const vp_model_cfg* c) {
    CHECK_RANGE(vsn, 0, 1);
    CHECK_RANGE(spectral_norm, 0, 1);
    CHECK_RANGE(kan, 0, 1);
    if (c->vsn) CHECK_RANGE(vsn_hidden, 1, 1 << 16);
    if (c->kan) {
        CHECK_RANGE(kan_grid, 1, 64);
        CHECK_RANGE(kan_order, 0, 5);
        VP_REQUIRE(c->kan_range > 0.0f && isfinite(c->kan_range), VP_ERR_INVALID_ARG,
                   "model config: kan_range = %g must be positive", (double)c->kan_range);
    }
    return VP_OK;
}

double vp_model_input_flops(const vp_model_cfg* c, double R, int backward) {
    const double F = c->n_features, H = c->hidden, VH = c->vsn_hidden;
    const double KC = c->kan_grid + c->kan_order;
    double fwd = 0.0, first_dx = 0.0;
    if (c->vsn) fwd += 2.0 * R * VH * F + 2.0 * R * 2 * F * VH;
    if (c->kan) fwd += 2.0 * R * H * F + 2.0 * R * H * F * KC;
    // backward: a weight gradient per product; the gate's second product and, when the gate
    // is on, the first layer's products need an input gradient too
    double bwd = fwd;
    if (c->vsn) {
        bwd += 2.0 * R * 2 * F * VH;
        first_dx = c->kan ? 2.0 * R * H * F * (1 + KC) : 2.0 * R * H * F;
    }
    return backward ? fwd + bwd + first_dx : fwd;
}

void vp_model_input_layout(vp_model_acts* a, vp_model_take_fn* take, void* ctx) {
    const vp_model_cfg* c = &a->model->cfg;
    const int64_t R = a->max_batch * vp_model_trunk_steps(c), F = c->n_features, H = c->hidden;
    const int64_t VS = c->vsn ? R : 0, BW = a->for_backward, KR = c->kan ? R : 0;
    const int64_t KC = c->kan_grid + c->kan_order, SN = c->spectral_norm, S1 = SN && !c->kan;
    take(ctx, &a->xs, "xs", VS, F);
    take(ctx, &a->vsn_eta, "vsn_eta", VS, c->vsn_hidden);
    take(ctx, &a->vsn_gs, "vsn_gs", VS, 2 * F);
    take(ctx, &a->vsn_pre, "vsn_pre", VS, F);
    take(ctx, &a->vsn_logit, "vsn_logit", VS, F);
    take(ctx, &a->vsn_mean, "vsn_mean", VS, 1);
    take(ctx, &a->vsn_rstd, "vsn_rstd", VS, 1);
    take(ctx, &a->vsn_w, "vsn_w", VS, F);
    take(ctx, &a->vsn_wsum, "vsn_wsum", c->vsn ? 1 : 0, F);
    take(ctx, &a->d_xs, "d_xs", VS * BW, F);
    take(ctx, &a->d_vsn_pre, "d_vsn_pre", VS * BW, F);
    take(ctx, &a->d_vsn_gs, "d_vsn_gs", VS * BW, 2 * F);
    take(ctx, &a->d_vsn_eta, "d_vsn_eta", VS * BW, c->vsn_hidden);
    if (!c->vsn) a->xs = a->x0;
    take(ctx, &a->sn_w1, "sn_w1", S1 ? H : 0, F);
    take(ctx, &a->sn_u1, "sn_u1", S1 ? H : 0, 1);
    take(ctx, &a->sn_v1, "sn_v1", S1 ? F : 0, 1);
    take(ctx, &a->sn_w2, "sn_w2", SN ? H : 0, H);
    take(ctx, &a->sn_u2, "sn_u2", SN ? H : 0, 1);
    take(ctx, &a->sn_v2, "sn_v2", SN ? H : 0, 1);
    take(ctx, &a->sn_sigma, "sn_sigma", SN ? 2 : 0, 1);
    take(ctx, &a->kan_silu, "kan_silu", KR, F);
    take(ctx, &a->kan_basis, "kan_basis", KR, F * KC);
    take(ctx, &a->kan_w, "kan_w", c->kan ? H : 0, F * KC);
    take(ctx, &a->d_kan_w, "d_kan_w", c->kan && BW ? H : 0, F * KC);
    take(ctx, &a->d_kan_silu, "d_kan_silu", KR * BW, F);
    take(ctx, &a->d_kan_basis, "d_kan_basis", KR * BW, F * KC);
}

/* trunk.w1 as the trunk multiplies by it. */
static vp_tensor trunk_w1(const vp_model* m, const vp_tensor* params, const vp_model_acts* a) {
    return m->cfg.spectral_norm ? a->sn_w1 : PV(TRUNK_W1);
}

vp_tensor vp_model_trunk_w2(const vp_model* m, const vp_tensor* params, const vp_model_acts* a) {
    return m->cfg.spectral_norm ? a->sn_w2 : PV(TRUNK_W2);
}

vp_status vp_model_trunk_w2_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a) {
    return m->cfg.spectral_norm ? vp_model_sn_backward(m, params, a, 1) : VP_OK;
}

vp_status vp_model_first_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R) {
    const vp_model_cfg* c = &m->cfg;
    vp_tensor xs = vp_acts_rows(&a->xs, R), a1 = vp_acts_rows(&a->a1, R);
    // the selection gate and the spectral norms' power step
    if (c->vsn) VP_TRY(vp_model_vsn_forward(m, params, a, R));
    if (c->spectral_norm) VP_TRY(vp_model_sn_forward(m, params, a));
    // a1 = KAN(xs), or xs W1^T + b1
    if (c->kan) return vp_model_kan_forward(m, params, a, R);
    vp_tensor w1 = trunk_w1(m, params, a), b1 = PV(TRUNK_B1);
    return vp_model_linear(m, &xs, &w1, &b1, VP_EPI_BIAS, 0.0f, &a1);
}

vp_status vp_model_first_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* da,
                                  int64_t R) {
    const vp_model_cfg* c = &m->cfg;
    vp_tensor xs = vp_acts_rows(&a->xs, R), d_xs = vp_acts_rows(&a->d_xs, R);
    // the first layer; its input gradient only when the gate before it learns
    if (c->kan) {
        VP_TRY(vp_model_kan_backward(m, params, a, da, R, c->vsn));
    } else {
        vp_tensor w1 = trunk_w1(m, params, a), gw1 = GV(TRUNK_W1), gb1 = GV(TRUNK_B1);
        VP_TRY(vp_model_linear_backward(m, &xs, &w1, da, &gw1, &gb1, c->vsn ? &d_xs : NULL, 0.0f));
        if (c->spectral_norm) VP_TRY(vp_model_sn_backward(m, params, a, 0));
    }
    if (c->spectral_norm) VP_TRY(vp_model_sn_zero_grads(m));
    return c->vsn ? vp_model_vsn_backward(m, params, a, R) : VP_OK;
}

vp_status vp_model_commit(const vp_model* m, vp_tensor* params, const vp_model_acts* a) {
    VP_REQUIRE(m != NULL && m->info != NULL && a != NULL && a->model == m, VP_ERR_INVALID_ARG,
               "vp_model_commit: model or activations are NULL, or the activations are another model's");
    VP_TRY(vp_tensor_check_numel("vp_model_commit", "params", m->backend, params, VP_F32, m->n_weights));
    if (!m->cfg.spectral_norm) return VP_OK;
    VP_REQUIRE(a->state & VP_ACTS_ENCODED, VP_ERR_STATE, "vp_model_commit: the activations hold no forward");
    // the power step's u and v become the kept ones (PyTorch's weight_u, weight_v)
    const vp_pslot dst[4] = {VP_PS_SN_U1, VP_PS_SN_V1, VP_PS_SN_U2, VP_PS_SN_V2};
    const vp_tensor* src[4] = {&a->sn_u1, &a->sn_v1, &a->sn_u2, &a->sn_v2};
    for (int i = 0; i < 4; ++i) {
        if (m->slot[dst[i]] < 0) continue;
        vp_tensor d = vp_model_slot(m, params, dst[i]), s = vp_acts_vec(src[i], vp_tensor_numel(&d));
        VP_TRY(vp_copy(m->backend, &s, &d));
    }
    return VP_OK;
}

vp_status vp_model_selection_weights(const vp_model_acts* a, float* out) {
    VP_REQUIRE(a != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_model_selection_weights: NULL argument");
    const vp_model* m = a->model;
    VP_REQUIRE(m->cfg.vsn, VP_ERR_STATE, "vp_model_selection_weights: the network has no variable selection");
    VP_REQUIRE(a->state & VP_ACTS_ENCODED, VP_ERR_STATE, "vp_model_selection_weights: the activations hold no forward");
    const int F = m->cfg.n_features;
    VP_TRY(vp_download(m->backend, out, &a->vsn_wsum, sizeof(float) * (size_t)F));
    const double rows = (double)(a->batch * vp_model_trunk_steps(&m->cfg));
    for (int j = 0; j < F; ++j) out[j] = (float)(out[j] / rows);
    return VP_OK;
}
