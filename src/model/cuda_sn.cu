/* CUDA kernels of the spectral normalisation (inops.h): the power step and the gradient
 * through W / sigma, each one block whose sums run in a fixed order (a tree over the block's
 * threads), so every run gives the same bits. Kernels, then launchers. */
#include "backend/kit.h"
#include "model/inops.h"

#define STREAM(be) vp_cuda_stream_of(be)
#define SN_THREADS 256
#define SN_EPS 1e-12f

/* Sum of v over the block (every thread gets it); sh holds SN_THREADS floats. */
__device__ float sn_block_sum(float v, float* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int o = SN_THREADS / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    const float s = sh[0];
    __syncthreads();
    return s;
}

/* v = normalize(W^T u0), t = W v, u = normalize(t), sigma = u . t, w_sn = W / sigma. */
__global__ void sn_forward_kernel(int64_t rows, int64_t cols, const float* __restrict__ W, const float* __restrict__ u0,
                                  float* u, float* v, float* sigma, float* w_sn) {
    __shared__ float sh[SN_THREADS];
    float part = 0.0f;
    for (int64_t j = threadIdx.x; j < cols; j += SN_THREADS) {
        float acc = 0.0f;
        for (int64_t i = 0; i < rows; ++i) acc += W[i * cols + j] * u0[i];
        v[j] = acc;
        part += acc * acc;
    }
    const float nv = fmaxf(sqrtf(sn_block_sum(part, sh)), SN_EPS);
    for (int64_t j = threadIdx.x; j < cols; j += SN_THREADS) v[j] /= nv;
    __syncthreads();
    part = 0.0f;
    for (int64_t i = threadIdx.x; i < rows; i += SN_THREADS) {
        float acc = 0.0f;
        for (int64_t j = 0; j < cols; ++j) acc += W[i * cols + j] * v[j];
        u[i] = acc;
        part += acc * acc;
    }
    const float nu = fmaxf(sqrtf(sn_block_sum(part, sh)), SN_EPS);
    part = 0.0f;
    for (int64_t i = threadIdx.x; i < rows; i += SN_THREADS) {
        const float t = u[i];
        u[i] = t / nu;
        part += u[i] * t;
    }
    const float s = sn_block_sum(part, sh);
    if (threadIdx.x == 0) *sigma = s;
    for (int64_t e = threadIdx.x; e < rows * cols; e += SN_THREADS) w_sn[e] = W[e] / s;
}

/* g = g / sigma - (sum(g W) / sigma^2) u v^T. */
__global__ void sn_backward_kernel(int64_t rows, int64_t cols, const float* __restrict__ W, const float* __restrict__ u,
                                   const float* __restrict__ v, const float* __restrict__ sigma, float* g) {
    __shared__ float sh[SN_THREADS];
    float part = 0.0f;
    for (int64_t e = threadIdx.x; e < rows * cols; e += SN_THREADS) part += g[e] * W[e];
    const float s = *sigma, k = sn_block_sum(part, sh) / (s * s);
    for (int64_t e = threadIdx.x; e < rows * cols; e += SN_THREADS) g[e] = g[e] / s - k * u[e / cols] * v[e % cols];
}

extern "C" vp_status vp_cuda_sn_forward(vp_backend* be, int64_t rows, int64_t cols, const float* W, const float* u0,
                                        float* u, float* v, float* sigma, float* w_sn) {
    VP_REQUIRE(W && u0 && u && v && sigma && w_sn && rows >= 1 && cols >= 1, VP_ERR_INVALID_ARG,
               "cuda sn_forward: bad arguments");
    sn_forward_kernel<<<1, SN_THREADS, 0, STREAM(be)>>>(rows, cols, W, u0, u, v, sigma, w_sn);
    VP_CUDA_CHECK_LAUNCH("sn_forward_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_sn_backward(vp_backend* be, int64_t rows, int64_t cols, const float* W, const float* u,
                                         const float* v, const float* sigma, float* g) {
    VP_REQUIRE(W && u && v && sigma && g && rows >= 1 && cols >= 1, VP_ERR_INVALID_ARG,
               "cuda sn_backward: bad arguments");
    sn_backward_kernel<<<1, SN_THREADS, 0, STREAM(be)>>>(rows, cols, W, u, v, sigma, g);
    VP_CUDA_CHECK_LAUNCH("sn_backward_kernel");
    return VP_OK;
}
