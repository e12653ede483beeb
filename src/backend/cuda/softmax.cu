/* CUDA row softmax: kernels, then launchers. A group of G threads owns a row (G = 32,
 * a warp, for rows up to VP_CUDA_WARP_ROW_MAX wide; G = the block otherwise); the group
 * reduces in a fixed order, so results are deterministic. */
#include "softmax.cuh"

/* ---- kernels ------------------------------------------------------------------------------ */

/* y[r, :] = softmax(x[r, :]) (LOG: log_softmax); x [m, n], y [m, n], y may alias x. */
template <int G, int LOG>
__global__ void softmax_kernel(const float* x, float* y, int64_t m, int64_t n) {
    __shared__ float sh[32];
    const int rpb = blockDim.x / G, t = threadIdx.x % G;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / G; r < m; r += (int64_t)gridDim.x * rpb) {
        const float* xr = x + r * n;
        float mx = -INFINITY;
        for (int64_t j = t; j < n; j += G) mx = vp_nan_max(mx, xr[j]);
        mx = vp_group_reduce<G>(mx, 1, sh);
        float s = 0.0f;
        for (int64_t j = t; j < n; j += G) s += expf(xr[j] - mx);
        s = vp_group_reduce<G>(s, 0, sh);
        float* yr = y + r * n;
        if (LOG) {
            const float ls = logf(s);
            for (int64_t j = t; j < n; j += G) yr[j] = xr[j] - mx - ls;
        } else {
            const float inv = 1.0f / s;
            for (int64_t j = t; j < n; j += G) yr[j] = expf(xr[j] - mx) * inv;
        }
    }
}

/* softmax: dx = y (dy - sum(dy y)); log_softmax: dx = dy - exp(y) sum(dy). [m, n] each. */
template <int G, int LOG>
__global__ void softmax_backward_kernel(const float* y, const float* dy, float* dx, int64_t m, int64_t n) {
    __shared__ float sh[32];
    const int rpb = blockDim.x / G, t = threadIdx.x % G;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / G; r < m; r += (int64_t)gridDim.x * rpb) {
        const float* yr = y + r * n;
        const float* gr = dy + r * n;
        float s = 0.0f;
        for (int64_t j = t; j < n; j += G) s += LOG ? gr[j] : gr[j] * yr[j];
        s = vp_group_reduce<G>(s, 0, sh);
        float* dr = dx + r * n;
        for (int64_t j = t; j < n; j += G) dr[j] = LOG ? gr[j] - expf(yr[j]) * s : yr[j] * (gr[j] - s);
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

vp_status vp_cuda_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y, int log) {
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    VP_REQUIRE(m * n == vp_tensor_numel(y), VP_ERR_SHAPE, "cuda softmax: x and y differ in size");
    const float* xp = (const float*)x->data;
    float* yp = (float*)y->data;
    cudaStream_t st = vp_cuda_of(b)->stream;
    if (n <= VP_CUDA_WARP_ROW_MAX) {
        const unsigned g = vp_cuda_row_grid(m, VP_CUDA_THREADS / 32);
        if (log) softmax_kernel<32, 1><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, m, n);
        else softmax_kernel<32, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, m, n);
    } else {
        const unsigned g = vp_cuda_row_grid(m, 1);
        if (log) softmax_kernel<VP_CUDA_THREADS, 1><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, m, n);
        else softmax_kernel<VP_CUDA_THREADS, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, m, n);
    }
    VP_CUDA_CHECK_LAUNCH("softmax_kernel");
    return VP_OK;
}

vp_status vp_cuda_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx, int log) {
    const int64_t m = vp_tensor_rows(y), n = vp_tensor_cols(y);
    VP_REQUIRE(m * n == vp_tensor_numel(dy) && m * n == vp_tensor_numel(dx), VP_ERR_SHAPE,
               "cuda softmax_backward: y, dy and dx differ in size");
    const float* yp = (const float*)y->data;
    const float* gp = (const float*)dy->data;
    float* dp = (float*)dx->data;
    cudaStream_t st = vp_cuda_of(b)->stream;
    if (n <= VP_CUDA_WARP_ROW_MAX) {
        const unsigned g = vp_cuda_row_grid(m, VP_CUDA_THREADS / 32);
        if (log) softmax_backward_kernel<32, 1><<<g, VP_CUDA_THREADS, 0, st>>>(yp, gp, dp, m, n);
        else softmax_backward_kernel<32, 0><<<g, VP_CUDA_THREADS, 0, st>>>(yp, gp, dp, m, n);
    } else {
        const unsigned g = vp_cuda_row_grid(m, 1);
        if (log) softmax_backward_kernel<VP_CUDA_THREADS, 1><<<g, VP_CUDA_THREADS, 0, st>>>(yp, gp, dp, m, n);
        else softmax_backward_kernel<VP_CUDA_THREADS, 0><<<g, VP_CUDA_THREADS, 0, st>>>(yp, gp, dp, m, n);
    }
    VP_CUDA_CHECK_LAUNCH("softmax_backward_kernel");
    return VP_OK;
}
