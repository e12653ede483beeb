/* CUDA element-wise ops: unary forward / backward, binary with row broadcast, axpby,
 * scale by a device scalar (launchers; arguments checked by ops.c). */
#ifndef VP_CUDA_ELEMENTWISE_CUH
#define VP_CUDA_ELEMENTWISE_CUH

#include "common.cuh"

/* y = f(x); y may alias x. */
vp_status vp_cuda_unary(vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y);

/* dx = dy * f'(x); dx may alias dy. */
vp_status vp_cuda_unary_backward(vp_backend* b, vp_unary_op op, const vp_tensor* x, const vp_tensor* dy,
                                 vp_tensor* dx);

/* c = a op bb, bb full-size or one row broadcast over a's rows. */
vp_status vp_cuda_binary(vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c);

/* y = alpha x + beta y (y not read when beta == 0). */
vp_status vp_cuda_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y);

/* x *= s[0], s read on the device. */
vp_status vp_cuda_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s);

#endif /* VP_CUDA_ELEMENTWISE_CUH */
