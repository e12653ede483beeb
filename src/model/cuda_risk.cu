/* CUDA kernel of the risk-budget head's loss (hmops.h): one thread per sample running the
 * shared math of risk_math.h; kernel, then launcher. */
#include "backend/kit.h"
#include "model/hmops.h"
#include "model/risk_math.h"

__global__ void rb_loss_kernel(int64_t B, int T, int A, int nb, int head0, int n_size, float alpha, float kappa,
                               const float* __restrict__ iqn, const float* __restrict__ taus,
                               const int32_t* __restrict__ actions, const float* __restrict__ w,
                               const float* __restrict__ s, float* loss, float* d_logit) {
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < B; b += (int64_t)gridDim.x * blockDim.x)
        vp_risk_loss_one(b, B, T, A, nb, head0, n_size, alpha, kappa, iqn, taus, actions, w, s, loss, d_logit);
}

extern "C" vp_status vp_hcuda_rb_loss(vp_backend* be, int64_t B, int T, int A, int nb, int head0, int n_size,
                                      float alpha, float kappa, const float* iqn, const float* taus,
                                      const int32_t* actions, const float* w, const float* s, float* loss,
                                      float* d_logit) {
    VP_REQUIRE(iqn && taus && actions && w && s && loss && d_logit && B >= 1 && T >= 1 && nb >= 2 && n_size >= 1 &&
                   head0 >= 0 && head0 + n_size <= A,
               VP_ERR_INVALID_ARG, "cuda rb_loss: bad arguments");
    rb_loss_kernel<<<vp_cuda_grid(B, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        B, T, A, nb, head0, n_size, alpha, kappa, iqn, taus, actions, w, s, loss, d_logit);
    VP_CUDA_CHECK_LAUNCH("rb_loss_kernel");
    return VP_OK;
}
