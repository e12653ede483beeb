/* Internal: the kernels of the head modules (model_hmods.h), one table per backend kind in
 * the kit's pattern (backend/kit.h, as mops.h): CPU in cpu_stochdepth.c / cpu_qdenoise.c /
 * cpu_xbranch.c, CUDA in cuda_stochdepth.cu / cuda_qdenoise.cu / cuda_xbranch.cu. Pointers are the backend's memory,
 * row-major, f32 unless marked i32; the model code checks shapes before calling. */
#ifndef VULPES_MODEL_HMOPS_H
#define VULPES_MODEL_HMOPS_H

#include <stdint.h>

#include "backend/kit.h"
#include "model/mops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Stochastic depth forward: scale[b] = (u[b] >= p ? 1 / (1 - p) : 0) (f32 arithmetic) and
 * e[b, j] = last[b, j] + scale[b] * o[b, j]; u, scale [B]; last, o, e [B, H]. */
typedef vp_status vp_hmops_sd_forward_fn(vp_backend* be, int64_t B, int64_t H, float p, const float* u,
                                         const float* last, const float* o, float* scale, float* e);

/* Its backward: d_o[b, j] = scale[b] * de[b, j]; scale [B]; de, d_o [B, H]. */
typedef vp_status vp_hmops_sd_backward_fn(vp_backend* be, int64_t B, int64_t H, const float* scale,
                                          const float* de, float* d_o);

/* The Q-denoise loss (model_hmods.h, vp_model_qd_loss): proj [B, nb, Z], actions [B, nb] i32,
 * w [B], q [B, A] -> loss [B], d_q [B, A]; atoms z_j = v_min + j (v_max - v_min) / (Z - 1)
 * (f32, as c51_q). An action outside its branch makes the sample's loss NaN. */
typedef vp_status vp_hmops_qd_loss_fn(vp_backend* be, int64_t B, int Z, float v_min, float v_max,
                                      const vp_branch_map* br, const float* proj, const int32_t* actions,
                                      const float* w, const float* q, float* loss, float* d_q);

/* The cross-branch blocks and the advantage layout: blocks holds branch k's [B, n_k Z]
 * matrix at element offset B * o_k * Z (o_k: its first action), adv is [B, A * Z] with
 * branch k's columns [o_k Z, (o_k + n_k) Z). to_adv 1: adv = blocks rearranged; 0: blocks =
 * adv rearranged. */
typedef vp_status vp_hmops_xb_pack_fn(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, int to_adv,
                                      const float* src, float* dst);

/* The risk-budget loss (model_hmods.h, vp_model_rb_loss): iqn [B, T, A], taus [B, T], actions
 * [B, nb] i32, w [B], s [B] -> loss [B], d_logit [B]; `head0` is the size branch's first head,
 * `n_size` its choices, `nb` the branches (the size choice is actions[b, 1]). An out-of-range
 * size makes the sample's loss NaN and its gradient 0. */
typedef vp_status vp_hmops_rb_loss_fn(vp_backend* be, int64_t B, int T, int A, int nb, int head0, int n_size,
                                      float alpha, float kappa, const float* iqn, const float* taus,
                                      const int32_t* actions, const float* w, const float* s, float* loss,
                                      float* d_logit);

/* Every kernel by name, in table order. */
#define VP_HMOPS_KERNELS(X, f, i) \
    X(f, i, sd_forward) X(f, i, sd_backward) X(f, i, qd_loss) X(f, i, xb_pack) X(f, i, rb_loss)

/* One backend's head-module kernels. */
typedef struct vp_hmops {
    VP_KERNEL_FIELDS(VP_HMOPS_KERNELS, vp_hmops)
} vp_hmops;

/* The CPU kernels vp_hcpu_<kernel> and their table (hmops.c). */
VP_KERNEL_DECLARE(VP_HMOPS_KERNELS, vp_hmops, vp_hcpu)
extern const vp_hmops vp_hmops_cpu;

/* The CUDA launchers vp_hcuda_<kernel> and their table (cuda_qdenoise.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_HMOPS_KERNELS, vp_hmops, vp_hcuda)
extern const vp_hmops vp_hmops_cuda;

/* The table for a backend; VP_ERR_UNSUPPORTED when its kind has none. */
vp_status vp_hmops_get(const vp_backend* be, const vp_hmops** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_HMOPS_H */
