/* CUDA row softmax / log-softmax, forward and backward (launchers; arguments checked by
 * ops.c). */
#ifndef VP_CUDA_SOFTMAX_CUH
#define VP_CUDA_SOFTMAX_CUH

#include "common.cuh"

/* y = softmax(x) per row, or log_softmax when `log` (y may alias x). */
vp_status vp_cuda_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y, int log);

/* dx from y = (log_)softmax(x) and dy, per row. */
vp_status vp_cuda_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx, int log);

#endif /* VP_CUDA_SOFTMAX_CUH */
