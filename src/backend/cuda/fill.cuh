/* CUDA fill, copy and f32 <-> bf16 conversion (launchers; arguments checked by ops.c). */
#ifndef VP_CUDA_FILL_CUH
#define VP_CUDA_FILL_CUH

#include "common.cuh"

/* x[:] = value, f32 x. */
vp_status vp_cuda_fill(vp_backend* b, vp_tensor* x, float value);

/* x[:] = value, i32 x. */
vp_status vp_cuda_fill_i32(vp_backend* b, vp_tensor* x, int32_t value);

/* dst[:] = src[:] (same dtype and numel). */
vp_status vp_cuda_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst);

/* dst[:] = convert(src[:]) between f32 and bf16, round to nearest even, NaN kept. */
vp_status vp_cuda_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst);

#endif /* VP_CUDA_FILL_CUH */
