/* CPU kernels of the KAN layer (inops.h): the SiLU branch and the B-spline bases, the
 * input gradient through both, and the spline scaler with its backward. */
#include "model/inops.h"
#include "model/model_input_math.h"

vp_status vp_cpu_kan_basis(vp_backend* be, const vp_kan_dims* d, const float* x, float* silu, float* basis) {
    (void)be;
    const int KC = d->grid + d->order;
    float b[VP_KAN_MAX_KNOTS];
    for (int64_t r = 0; r < d->rows; ++r)
        for (int i = 0; i < d->in; ++i) {
            const float xi = x[r * d->in + i];
            silu[r * d->in + i] = vp_in_silu(xi);
            vp_kan_bases(xi, d->grid, d->order, d->range, b, basis + (r * d->in + i) * KC, NULL);
        }
    return VP_OK;
}

vp_status vp_cpu_kan_input_backward(vp_backend* be, const vp_kan_dims* d, const float* x, const float* d_silu,
                                    const float* d_basis, float* d_x) {
    (void)be;
    const int KC = d->grid + d->order;
    float b[VP_KAN_MAX_KNOTS], val[VP_KAN_MAX_KNOTS], der[VP_KAN_MAX_KNOTS];
    for (int64_t r = 0; r < d->rows; ++r)
        for (int i = 0; i < d->in; ++i) {
            const int64_t e = r * d->in + i;
            vp_kan_bases(x[e], d->grid, d->order, d->range, b, val, der);
            float acc = d_silu[e] * vp_in_silu_grad(x[e]);
            for (int c = 0; c < KC; ++c) acc += d_basis[e * KC + c] * der[c];
            d_x[e] = acc;
        }
    return VP_OK;
}

vp_status vp_cpu_kan_scale(vp_backend* be, int64_t H, int F, int KC, const float* spline_w, const float* scaler,
                           float* w) {
    (void)be;
    for (int64_t o = 0; o < H; ++o)
        for (int i = 0; i < F; ++i)
            for (int c = 0; c < KC; ++c) {
                const int64_t e = (o * F + i) * KC + c;
                w[e] = spline_w[e] * scaler[o * F + i];
            }
    return VP_OK;
}

vp_status vp_cpu_kan_scale_backward(vp_backend* be, int64_t H, int F, int KC, const float* spline_w,
                                    const float* scaler, const float* d_w, float* g_spline, float* g_scaler) {
    (void)be;
    for (int64_t o = 0; o < H; ++o)
        for (int i = 0; i < F; ++i) {
            float acc = 0.0f;
            for (int c = 0; c < KC; ++c) {
                const int64_t e = (o * F + i) * KC + c;
                g_spline[e] = d_w[e] * scaler[o * F + i];
                acc += d_w[e] * spline_w[e];
            }
            g_scaler[o * F + i] = acc;
        }
    return VP_OK;
}
