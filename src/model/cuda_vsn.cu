/* CUDA kernels of the variable selection network (inops.h): ELU, the gated residual and the
 * softmax selection with its backward, on model_input_math.h's per-element math. Kernels,
 * then launchers. */
#include "backend/kit.h"
#include "model/inops.h"
#include "model/model_input_math.h"

#define STREAM(be) vp_cuda_stream_of(be)

/* ---- kernels ------------------------------------------------------------------------------ */

/* x = elu(x) (backward 0) or d *= elu'(y) (backward 1), element-wise. */
__global__ void vsn_elu_kernel(int64_t n, const float* __restrict__ y, float* x, int backward) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x)
        x[i] = backward ? x[i] * vp_in_elu_grad(y[i]) : vp_in_elu(x[i]);
}

/* pre = x + v sigmoid(l), or its backward to d_gs; one thread per (row, feature). */
__global__ void vsn_gate_kernel(int64_t R, int F, const float* __restrict__ x, const float* __restrict__ gs,
                                const float* __restrict__ d_pre, float* out, int backward) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < R * F; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = e / F, j = e % F;
        const float v = gs[r * 2 * F + j], s = vp_in_sigmoid(gs[r * 2 * F + F + j]);
        if (backward) {
            out[r * 2 * F + j] = d_pre[e] * s;
            out[r * 2 * F + F + j] = d_pre[e] * v * s * (1.0f - s);
        } else {
            out[e] = x[e] + v * s;
        }
    }
}

/* Softmax of a row and the scaled features; one thread per row, the row's sums in order. */
__global__ void vsn_select_kernel(int64_t R, int F, const float* __restrict__ logit, const float* __restrict__ x,
                                  float* w, float* xs) {
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < R; r += (int64_t)gridDim.x * blockDim.x)
        vp_in_select_row(F, logit + r * F, x + r * F, w + r * F, xs + r * F);
}

/* d_logit = w (g - w . g), g = F x d_xs; one thread per row (d_logit may alias d_xs). */
__global__ void vsn_select_backward_kernel(int64_t R, int F, const float* __restrict__ w, const float* __restrict__ x,
                                           const float* d_xs, float* d_logit) {
    for (int64_t r = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; r < R; r += (int64_t)gridDim.x * blockDim.x) {
        float dot = 0.0f;
        for (int j = 0; j < F; ++j) dot += w[r * F + j] * ((float)F * x[r * F + j] * d_xs[r * F + j]);
        for (int j = 0; j < F; ++j) {
            const float g = (float)F * x[r * F + j] * d_xs[r * F + j];
            d_logit[r * F + j] = w[r * F + j] * (g - dot);
        }
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_cuda_vsn_elu(vp_backend* be, int64_t n, float* x) {
    VP_REQUIRE(x && n >= 1, VP_ERR_INVALID_ARG, "cuda vsn_elu: bad arguments");
    vsn_elu_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(n, NULL, x, 0);
    VP_CUDA_CHECK_LAUNCH("vsn_elu_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_vsn_elu_backward(vp_backend* be, int64_t n, const float* y, float* d) {
    VP_REQUIRE(y && d && n >= 1, VP_ERR_INVALID_ARG, "cuda vsn_elu_backward: bad arguments");
    vsn_elu_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(n, y, d, 1);
    VP_CUDA_CHECK_LAUNCH("vsn_elu_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_vsn_gate(vp_backend* be, int64_t R, int F, const float* x, const float* gs, float* pre) {
    VP_REQUIRE(x && gs && pre && R >= 1 && F >= 1, VP_ERR_INVALID_ARG, "cuda vsn_gate: bad arguments");
    vsn_gate_kernel<<<vp_cuda_grid(R * F, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(R, F, x, gs, NULL, pre,
                                                                                          0);
    VP_CUDA_CHECK_LAUNCH("vsn_gate_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_vsn_gate_backward(vp_backend* be, int64_t R, int F, const float* gs, const float* d_pre,
                                               float* d_gs) {
    VP_REQUIRE(gs && d_pre && d_gs && R >= 1 && F >= 1, VP_ERR_INVALID_ARG, "cuda vsn_gate_backward: bad arguments");
    vsn_gate_kernel<<<vp_cuda_grid(R * F, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(R, F, NULL, gs, d_pre,
                                                                                          d_gs, 1);
    VP_CUDA_CHECK_LAUNCH("vsn_gate_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_vsn_select(vp_backend* be, int64_t R, int F, const float* logit, const float* x, float* w,
                                        float* xs) {
    VP_REQUIRE(logit && x && w && xs && R >= 1 && F >= 1, VP_ERR_INVALID_ARG, "cuda vsn_select: bad arguments");
    vsn_select_kernel<<<vp_cuda_grid(R, 128), 128, 0, STREAM(be)>>>(R, F, logit, x, w, xs);
    VP_CUDA_CHECK_LAUNCH("vsn_select_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_vsn_select_backward(vp_backend* be, int64_t R, int F, const float* w, const float* x,
                                                 const float* d_xs, float* d_logit) {
    VP_REQUIRE(w && x && d_xs && d_logit && R >= 1 && F >= 1, VP_ERR_INVALID_ARG,
               "cuda vsn_select_backward: bad arguments");
    vsn_select_backward_kernel<<<vp_cuda_grid(R, 128), 128, 0, STREAM(be)>>>(R, F, w, x, d_xs, d_logit);
    VP_CUDA_CHECK_LAUNCH("vsn_select_backward_kernel");
    return VP_OK;
}
