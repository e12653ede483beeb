/* CUDA optimiser ops: fused AdamW, the device step counter, and the global grad-norm
 * clip coefficient (launchers; arguments checked by ops.c). */
#ifndef VP_CUDA_OPTIM_CUH
#define VP_CUDA_OPTIM_CUH

#include "common.cuh"

/* One AdamW update; step [1] i32, grad_scale [1] f32 (may be NULL) and lr [1] f32 (NULL:
 * cfg->lr) read on the device. */
vp_status vp_cuda_adamw(vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr, vp_tensor* param,
                        const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,
                        const vp_tensor* grad_scale);

/* counter[0] += 1 on the device. */
vp_status vp_cuda_step_increment(vp_backend* b, vp_tensor* counter);

/* norm[0] = ||x||_2, coef[0] = min(1, max_norm / (norm + 1e-6)), both on the device; the
 * threshold is max_norm_t[0] (read on the device) when max_norm_t is not NULL. */
vp_status vp_cuda_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, const vp_tensor* max_norm_t,
                            vp_tensor* norm, vp_tensor* coef);

#endif /* VP_CUDA_OPTIM_CUH */
