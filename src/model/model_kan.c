/* The KAN layer in place of the trunk's first linear layer (docs/modules.md, "KAN input
 * layer"), efficient-kan's KANLinear without bias:
 *   a1 = silu(xs) base_w^T + B(xs) (spline_w * spline_scaler)^T
 * with B(xs) [R, F * KC] the order-k B-spline bases of every feature on the fixed grid. */
#include "model/model_input.h"

#define PV(slot) vp_model_slot(m, params, VP_PS_##slot)
#define GV(slot) vp_model_slot(m, &m->grads, VP_PS_##slot)

/* The grid extents of R rows. */
static vp_kan_dims kan_dims(const vp_model_cfg* c, int64_t R) {
    vp_kan_dims d = {R, c->n_features, c->kan_grid, c->kan_order, c->kan_range};
    return d;
}

vp_status vp_model_kan_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const vp_kan_dims d = kan_dims(c, R);
    const int KC = c->kan_grid + c->kan_order;
    vp_tensor xs = vp_acts_rows(&a->xs, R), silu = vp_acts_rows(&a->kan_silu, R);
    vp_tensor basis = vp_acts_rows(&a->kan_basis, R), a1 = vp_acts_rows(&a->a1, R);
    vp_tensor bw = PV(KAN_BASE_W), sw = PV(KAN_SPLINE_W), sc = PV(KAN_SCALER);
    // the bases and SiLU of every input, the scaled spline weights
    VP_TRY(a->inops->kan_basis(be, &d, (const float*)xs.data, (float*)silu.data, (float*)basis.data));
    VP_TRY(a->inops->kan_scale(be, c->hidden, c->n_features, KC, (const float*)sw.data, (const float*)sc.data,
                               (float*)a->kan_w.data));
    // base branch, then the spline branch added to it
    VP_TRY(vp_model_linear(m, &silu, &bw, NULL, VP_EPI_NONE, 0.0f, &a1));
    return vp_model_linear(m, &basis, &a->kan_w, NULL, VP_EPI_NONE, 1.0f, &a1);
}

vp_status vp_model_kan_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* da,
                                int64_t R, int dx) {
    vp_backend* be = m->backend;
    const vp_model_cfg* c = &m->cfg;
    const vp_kan_dims d = kan_dims(c, R);
    const int KC = c->kan_grid + c->kan_order;
    vp_tensor xs = vp_acts_rows(&a->xs, R), silu = vp_acts_rows(&a->kan_silu, R);
    vp_tensor basis = vp_acts_rows(&a->kan_basis, R);
    vp_tensor d_silu = vp_acts_rows(&a->d_kan_silu, R), d_basis = vp_acts_rows(&a->d_kan_basis, R);
    vp_tensor bw = PV(KAN_BASE_W), sw = PV(KAN_SPLINE_W), sc = PV(KAN_SCALER);
    vp_tensor gbw = GV(KAN_BASE_W), gsw = GV(KAN_SPLINE_W), gsc = GV(KAN_SCALER);
    // both branches' weight gradients (and their input gradients when the gate before learns)
    VP_TRY(vp_model_linear_backward(m, &silu, &bw, da, &gbw, NULL, dx ? &d_silu : NULL, 0.0f));
    VP_TRY(vp_model_linear_backward(m, &basis, &a->kan_w, da, &a->d_kan_w, NULL, dx ? &d_basis : NULL, 0.0f));
    // through the scaler: spline_w and spline_scaler
    VP_TRY(a->inops->kan_scale_backward(be, c->hidden, c->n_features, KC, (const float*)sw.data,
                                        (const float*)sc.data, (const float*)a->d_kan_w.data, (float*)gsw.data,
                                        (float*)gsc.data));
    if (!dx) return VP_OK;
    return a->inops->kan_input_backward(be, &d, (const float*)xs.data, (const float*)d_silu.data,
                                        (const float*)d_basis.data, (float*)a->d_xs.data);
}
