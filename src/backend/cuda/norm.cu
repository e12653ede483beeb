/* CUDA LayerNorm and RMSNorm: kernels, then launchers. A group of G threads owns a row
 * (a warp up to VP_CUDA_WARP_ROW_MAX columns, else the block). */
#include "norm.cuh"
#include "reduce.cuh"

/* ---- kernels ------------------------------------------------------------------------------ */

/* LayerNorm (RMS = 0) or RMSNorm (RMS = 1) forward over x [m, n]: y [m, n], mean [m]
 * (LayerNorm only), rstd [m]. Two passes for the variance. */
template <int G, int RMS, int RELU>
__global__ void norm_forward_kernel(const float* x, const float* __restrict__ gamma, const float* __restrict__ beta,
                                    float eps, float* y, float* mean, float* rstd, int64_t m, int64_t n) {
    __shared__ float sh[32];
    const int rpb = blockDim.x / G, t = threadIdx.x % G;
    const float inv_n = 1.0f / (float)n;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / G; r < m; r += (int64_t)gridDim.x * rpb) {
        const float* xr = x + r * n;
        float mu = 0.0f;
        if (!RMS) {
            float s = 0.0f;
            for (int64_t j = t; j < n; j += G) s += xr[j];
            mu = vp_group_reduce<G>(s, 0, sh) * inv_n;
        }
        float q = 0.0f;
        for (int64_t j = t; j < n; j += G) {
            const float d = xr[j] - mu;
            q += d * d;
        }
        const float rs = 1.0f / sqrtf(vp_group_reduce<G>(q, 0, sh) * inv_n + eps);
        float* yr = y + r * n;
        for (int64_t j = t; j < n; j += G) {
            const float v = RMS ? xr[j] * rs * gamma[j] : (xr[j] - mu) * rs * gamma[j] + beta[j];
            yr[j] = RELU && v < 0.0f ? 0.0f : v; // the ReLU of vp_unary: NaN and -0 pass
        }
        if (t == 0) {
            if (!RMS) mean[r] = mu;
            rstd[r] = rs;
        }
    }
}

/* dx of LayerNorm (RMS = 0) or RMSNorm (RMS = 1) per row, with xhat = (x - mean) rstd and
 * g = dy gamma: dx = rstd (g - mean(g) - xhat mean(g xhat)) (RMSNorm drops mean(g)). */
template <int G, int RMS>
__global__ void norm_backward_dx_kernel(const float* dy, const float* x, const float* __restrict__ gamma,
                                        const float* __restrict__ mean, const float* __restrict__ rstd, float* dx,
                                        int64_t m, int64_t n) {
    __shared__ float sh[32];
    const int rpb = blockDim.x / G, t = threadIdx.x % G;
    const float inv_n = 1.0f / (float)n;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / G; r < m; r += (int64_t)gridDim.x * rpb) {
        const float* xr = x + r * n;
        const float* gr = dy + r * n;
        const float mu = RMS ? 0.0f : mean[r], rs = rstd[r];
        float s1 = 0.0f, s2 = 0.0f;
        for (int64_t j = t; j < n; j += G) {
            const float g = gr[j] * gamma[j];
            s1 += g;
            s2 += g * ((xr[j] - mu) * rs);
        }
        if (!RMS) s1 = vp_group_reduce<G>(s1, 0, sh) * inv_n;
        s2 = vp_group_reduce<G>(s2, 0, sh) * inv_n;
        float* dr = dx + r * n;
        for (int64_t j = t; j < n; j += G) {
            const float g = gr[j] * gamma[j];
            const float xhat = (xr[j] - mu) * rs;
            dr[j] = rs * (g - (RMS ? 0.0f : s1) - xhat * s2);
        }
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

/* Launches the forward for RMS = 0 / 1 with a warp or a block per row, the ReLU after it when
 * `relu` (LayerNorm only). */
static vp_status norm_forward(vp_backend* b, int rms, int relu, const vp_tensor* x, const vp_tensor* gamma,
                              const vp_tensor* beta, float eps, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    VP_REQUIRE(vp_tensor_numel(rstd) == m && vp_tensor_numel(gamma) == n, VP_ERR_SHAPE,
               "cuda norm forward: rstd or gamma do not fit x [%lld, %lld]", (long long)m, (long long)n);
    const float* xp = (const float*)x->data;
    const float* gp = (const float*)gamma->data;
    const float* bp = beta ? (const float*)beta->data : NULL;
    float* yp = (float*)y->data;
    float* mp = mean ? (float*)mean->data : NULL;
    float* rp = (float*)rstd->data;
    cudaStream_t st = vp_cuda_of(b)->stream;
    const int warp = n <= VP_CUDA_WARP_ROW_MAX;
    const unsigned g = vp_cuda_row_grid(m, warp ? VP_CUDA_THREADS / 32 : 1);
    if (warp && rms) norm_forward_kernel<32, 1, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    else if (warp && relu)
        norm_forward_kernel<32, 0, 1><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    else if (warp) norm_forward_kernel<32, 0, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    else if (rms)
        norm_forward_kernel<VP_CUDA_THREADS, 1, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    else if (relu)
        norm_forward_kernel<VP_CUDA_THREADS, 0, 1><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    else norm_forward_kernel<VP_CUDA_THREADS, 0, 0><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, bp, eps, yp, mp, rp, m, n);
    VP_CUDA_CHECK_LAUNCH("norm_forward_kernel");
    return VP_OK;
}

/* Launches the deterministic parameter-gradient reduction, then the dx pass. */
static vp_status norm_backward(vp_backend* b, int rms, const vp_tensor* dy, const vp_tensor* x,
                               const vp_tensor* gamma, const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx,
                               vp_tensor* dgamma, vp_tensor* dbeta) {
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    VP_REQUIRE(vp_tensor_numel(rstd) == m && vp_tensor_numel(dgamma) == n, VP_ERR_SHAPE,
               "cuda norm backward: rstd or dgamma do not fit x [%lld, %lld]", (long long)m, (long long)n);
    const float* gp = (const float*)dy->data;
    const float* xp = (const float*)x->data;
    const float* wp = (const float*)gamma->data;
    const float* mp = mean ? (const float*)mean->data : NULL;
    const float* rp = (const float*)rstd->data;
    float* dp = (float*)dx->data;
    /* parameter gradients first: they read dy and x, which dx may overwrite */
    VP_TRY(vp_cuda_col_reduce(b, rms ? VP_CUDA_COL_RMS : VP_CUDA_COL_LN, xp, gp, mp, rp, m, n,
                              (float*)dgamma->data, dbeta ? (float*)dbeta->data : NULL));
    cudaStream_t st = vp_cuda_of(b)->stream;
    const int warp = n <= VP_CUDA_WARP_ROW_MAX;
    const unsigned g = vp_cuda_row_grid(m, warp ? VP_CUDA_THREADS / 32 : 1);
    if (warp && rms) norm_backward_dx_kernel<32, 1><<<g, VP_CUDA_THREADS, 0, st>>>(gp, xp, wp, mp, rp, dp, m, n);
    else if (warp) norm_backward_dx_kernel<32, 0><<<g, VP_CUDA_THREADS, 0, st>>>(gp, xp, wp, mp, rp, dp, m, n);
    else if (rms)
        norm_backward_dx_kernel<VP_CUDA_THREADS, 1><<<g, VP_CUDA_THREADS, 0, st>>>(gp, xp, wp, mp, rp, dp, m, n);
    else norm_backward_dx_kernel<VP_CUDA_THREADS, 0><<<g, VP_CUDA_THREADS, 0, st>>>(gp, xp, wp, mp, rp, dp, m, n);
    VP_CUDA_CHECK_LAUNCH("norm_backward_dx_kernel");
    return VP_OK;
}

vp_status vp_cuda_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,
                            float eps, int relu, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    return norm_forward(b, 0, relu, x, gamma, beta, eps, y, mean, rstd);
}

vp_status vp_cuda_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                     const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,
                                     vp_tensor* dbeta) {
    return norm_backward(b, 0, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

vp_status vp_cuda_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                          vp_tensor* rstd) {
    return norm_forward(b, 1, 0, x, gamma, NULL, eps, y, NULL, rstd);
}

vp_status vp_cuda_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                   const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma) {
    return norm_backward(b, 1, dy, x, gamma, NULL, rstd, dx, dgamma, NULL);
}
