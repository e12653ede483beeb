/* CUDA kernels of the stochastic depth (hmops.h): the per-sample scale with the residual,
 * and the scale of the branch's gradient; kernels, then launchers. */
#include "backend/kit.h"
#include "model/hmops.h"

/* e = last + scale_b o, scale_b = (u_b >= p) / (1 - p); one thread per (sample, feature). */
__global__ void sd_forward_kernel(const float* __restrict__ u, const float* __restrict__ last,
                                  const float* __restrict__ o, float* scale, float* e, int64_t B, int64_t H, float p,
                                  float keep) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * H; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / H;
        const float s = u[b] >= p ? keep : 0.0f;
        // rounded as the CPU loop rounds it (a product, then a sum: no fused multiply-add)
        e[i] = __fadd_rn(last[i], __fmul_rn(s, o[i]));
        if (i % H == 0) scale[b] = s;
    }
}

/* d_o = scale_b de; one thread per (sample, feature). */
__global__ void sd_backward_kernel(const float* __restrict__ scale, const float* __restrict__ de, float* d_o,
                                   int64_t B, int64_t H) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * H; i += (int64_t)gridDim.x * blockDim.x)
        d_o[i] = scale[i / H] * de[i];
}

extern "C" vp_status vp_hcuda_sd_forward(vp_backend* be, int64_t B, int64_t H, float p, const float* u,
                                         const float* last, const float* o, float* scale, float* e) {
    VP_REQUIRE(u && last && o && scale && e && B >= 1 && H >= 1 && p >= 0.0f && p < 1.0f, VP_ERR_INVALID_ARG,
               "cuda sd_forward: bad arguments");
    // the host computes 1 / (1 - p) once, so both backends scale by the same float
    const float keep = 1.0f / (1.0f - p);
    sd_forward_kernel<<<vp_cuda_grid(B * H, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        u, last, o, scale, e, B, H, p, keep);
    VP_CUDA_CHECK_LAUNCH("sd_forward_kernel");
    return VP_OK;
}

extern "C" vp_status vp_hcuda_sd_backward(vp_backend* be, int64_t B, int64_t H, const float* scale, const float* de,
                                          float* d_o) {
    VP_REQUIRE(scale && de && d_o && B >= 1 && H >= 1, VP_ERR_INVALID_ARG, "cuda sd_backward: bad arguments");
    sd_backward_kernel<<<vp_cuda_grid(B * H, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(scale, de,
                                                                                                     d_o, B, H);
    VP_CUDA_CHECK_LAUNCH("sd_backward_kernel");
    return VP_OK;
}
