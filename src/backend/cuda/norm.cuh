/* CUDA LayerNorm and RMSNorm, forward and backward (launchers; arguments checked by
 * ops.c). Parameter gradients are deterministic column reductions (reduce.cuh). */
#ifndef VP_CUDA_NORM_CUH
#define VP_CUDA_NORM_CUH

#include "common.cuh"

/* y = (x - mean) rstd gamma + beta per row (then max(0, .) when relu); saves mean, rstd [m]. */
vp_status vp_cuda_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,
                            float eps, int relu, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd);

/* dx [m, n]; dgamma, dbeta [n] overwritten. */
vp_status vp_cuda_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                     const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,
                                     vp_tensor* dbeta);

/* y = x rstd gamma per row; saves rstd [m]. */
vp_status vp_cuda_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                          vp_tensor* rstd);

/* dx [m, n]; dgamma [n] overwritten. */
vp_status vp_cuda_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                   const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma);

#endif /* VP_CUDA_NORM_CUH */
