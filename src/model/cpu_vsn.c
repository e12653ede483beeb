/* CPU kernels of the variable selection network (inops.h): ELU, the gated residual, and the
 * softmax selection with its backward. */
#include "model/inops.h"
#include "model/model_input_math.h"

vp_status vp_cpu_vsn_elu(vp_backend* be, int64_t n, float* x) {
    (void)be;
    for (int64_t i = 0; i < n; ++i) x[i] = vp_in_elu(x[i]);
    return VP_OK;
}

vp_status vp_cpu_vsn_elu_backward(vp_backend* be, int64_t n, const float* y, float* d) {
    (void)be;
    for (int64_t i = 0; i < n; ++i) d[i] *= vp_in_elu_grad(y[i]);
    return VP_OK;
}

vp_status vp_cpu_vsn_gate(vp_backend* be, int64_t R, int F, const float* x, const float* gs, float* pre) {
    (void)be;
    for (int64_t r = 0; r < R; ++r)
        for (int j = 0; j < F; ++j)
            pre[r * F + j] = x[r * F + j] + gs[r * 2 * F + j] * vp_in_sigmoid(gs[r * 2 * F + F + j]);
    return VP_OK;
}

vp_status vp_cpu_vsn_gate_backward(vp_backend* be, int64_t R, int F, const float* gs, const float* d_pre,
                                   float* d_gs) {
    (void)be;
    for (int64_t r = 0; r < R; ++r)
        for (int j = 0; j < F; ++j) {
            const float v = gs[r * 2 * F + j], s = vp_in_sigmoid(gs[r * 2 * F + F + j]), d = d_pre[r * F + j];
            d_gs[r * 2 * F + j] = d * s;
            d_gs[r * 2 * F + F + j] = d * v * s * (1.0f - s);
        }
    return VP_OK;
}

vp_status vp_cpu_vsn_select(vp_backend* be, int64_t R, int F, const float* logit, const float* x, float* w,
                            float* xs) {
    (void)be;
    for (int64_t r = 0; r < R; ++r) vp_in_select_row(F, logit + r * F, x + r * F, w + r * F, xs + r * F);
    return VP_OK;
}

vp_status vp_cpu_vsn_select_backward(vp_backend* be, int64_t R, int F, const float* w, const float* x,
                                     const float* d_xs, float* d_logit) {
    (void)be;
    for (int64_t r = 0; r < R; ++r) {
        float dot = 0.0f;
        for (int j = 0; j < F; ++j) dot += w[r * F + j] * ((float)F * x[r * F + j] * d_xs[r * F + j]);
        for (int j = 0; j < F; ++j) {
            const float g = (float)F * x[r * F + j] * d_xs[r * F + j];
            d_logit[r * F + j] = w[r * F + j] * (g - dot);
        }
    }
    return VP_OK;
}
