/* CUDA kernels of the KAN layer (inops.h): SiLU and B-spline bases, the input gradient
 * through both, and the spline scaler with its backward, on model_input_math.h's math; one
 * thread per (row, feature) or (output, feature). Kernels, then launchers. */
#include "backend/kit.h"
#include "model/inops.h"
#include "model/model_input_math.h"

#define STREAM(be) vp_cuda_stream_of(be)

/* silu and the bases of x (backward 0), or d_x through both (backward 1). */
__global__ void kan_basis_kernel(vp_kan_dims d, const float* __restrict__ x, float* silu, float* basis,
                                 const float* __restrict__ d_silu, const float* __restrict__ d_basis, float* d_x,
                                 int backward) {
    const int KC = d.grid + d.order;
    float b[VP_KAN_MAX_KNOTS], val[VP_KAN_MAX_KNOTS], der[VP_KAN_MAX_KNOTS];
    const int64_t n = d.rows * d.in;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const float xe = x[e];
        if (!backward) {
            silu[e] = vp_in_silu(xe);
            vp_kan_bases(xe, d.grid, d.order, d.range, b, basis + e * KC, NULL);
        } else {
            vp_kan_bases(xe, d.grid, d.order, d.range, b, val, der);
            float acc = d_silu[e] * vp_in_silu_grad(xe);
            for (int c = 0; c < KC; ++c) acc += d_basis[e * KC + c] * der[c];
            d_x[e] = acc;
        }
    }
}

/* w = spline_w * scaler (backward 0), or g_spline, g_scaler from d_w (backward 1). */
__global__ void kan_scale_kernel(int64_t H, int F, int KC, const float* __restrict__ sw, const float* __restrict__ sc,
                                 const float* __restrict__ d_w, float* w_or_gs, float* g_sc, int backward) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < H * F; e += (int64_t)gridDim.x * blockDim.x) {
        float acc = 0.0f;
        for (int c = 0; c < KC; ++c) {
            const int64_t k = e * KC + c;
            if (backward) {
                w_or_gs[k] = d_w[k] * sc[e];
                acc += d_w[k] * sw[k];
            } else {
                w_or_gs[k] = sw[k] * sc[e];
            }
        }
        if (backward) g_sc[e] = acc;
    }
}

extern "C" vp_status vp_cuda_kan_basis(vp_backend* be, const vp_kan_dims* d, const float* x, float* silu,
                                       float* basis) {
    VP_REQUIRE(d && x && silu && basis && d->rows >= 1 && d->in >= 1 && d->grid + 2 * d->order + 1 <= VP_KAN_MAX_KNOTS,
               VP_ERR_INVALID_ARG, "cuda kan_basis: bad arguments");
    kan_basis_kernel<<<vp_cuda_grid(d->rows * d->in, 128), 128, 0, STREAM(be)>>>(*d, x, silu, basis, NULL, NULL, NULL,
                                                                                 0);
    VP_CUDA_CHECK_LAUNCH("kan_basis_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_kan_input_backward(vp_backend* be, const vp_kan_dims* d, const float* x,
                                                const float* d_silu, const float* d_basis, float* d_x) {
    VP_REQUIRE(d && x && d_silu && d_basis && d_x && d->rows >= 1 && d->grid + 2 * d->order + 1 <= VP_KAN_MAX_KNOTS,
               VP_ERR_INVALID_ARG, "cuda kan_input_backward: bad arguments");
    kan_basis_kernel<<<vp_cuda_grid(d->rows * d->in, 128), 128, 0, STREAM(be)>>>(*d, x, NULL, NULL, d_silu, d_basis,
                                                                                 d_x, 1);
    VP_CUDA_CHECK_LAUNCH("kan_basis_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_kan_scale(vp_backend* be, int64_t H, int F, int KC, const float* spline_w,
                                       const float* scaler, float* w) {
    VP_REQUIRE(spline_w && scaler && w && H >= 1 && F >= 1 && KC >= 1, VP_ERR_INVALID_ARG,
               "cuda kan_scale: bad arguments");
    kan_scale_kernel<<<vp_cuda_grid(H * F, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(H, F, KC, spline_w,
                                                                                           scaler, NULL, w, NULL, 0);
    VP_CUDA_CHECK_LAUNCH("kan_scale_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_kan_scale_backward(vp_backend* be, int64_t H, int F, int KC, const float* spline_w,
                                                const float* scaler, const float* d_w, float* g_spline,
                                                float* g_scaler) {
    VP_REQUIRE(spline_w && scaler && d_w && g_spline && g_scaler && H >= 1 && F >= 1 && KC >= 1, VP_ERR_INVALID_ARG,
               "cuda kan_scale_backward: bad arguments");
    kan_scale_kernel<<<vp_cuda_grid(H * F, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(
        H, F, KC, spline_w, scaler, d_w, g_spline, g_scaler, 1);
    VP_CUDA_CHECK_LAUNCH("kan_scale_kernel");
    return VP_OK;
}
