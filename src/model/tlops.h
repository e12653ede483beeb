/* Internal: the TLOB encoder's own kernels (model_tlob.c), one table per backend kind in the
 * kit's pattern (backend/kit.h, as mops.h): CPU in cpu_tlob.c, CUDA in cuda_tlob.cu. Pointers
 * are the backend's memory, row-major f32; the model code checks shapes before calling. */
#ifndef VULPES_MODEL_TLOPS_H
#define VULPES_MODEL_TLOPS_H

#include <stdint.h>

#include "backend/kit.h"

#ifdef __cplusplus
extern "C" {
#endif

/* dst[b, j, i] = src[b, i, j]: each of B matrices [r, c] transposed; src [B, r, c], dst
 * [B, c, r] (no aliasing). */
typedef vp_status vp_tlops_transpose_fn(vp_backend* be, int64_t B, int64_t r, int64_t c, const float* src,
                                        float* dst);

/* Every kernel by name, in table order. */
#define VP_TLOPS_KERNELS(X, f, i) X(f, i, transpose)

/* One backend's TLOB kernels. */
typedef struct vp_tlops {
    VP_KERNEL_FIELDS(VP_TLOPS_KERNELS, vp_tlops)
} vp_tlops;

/* The CPU kernels vp_tlcpu_<kernel> and their table (cpu_tlob.c). */
VP_KERNEL_DECLARE(VP_TLOPS_KERNELS, vp_tlops, vp_tlcpu)
extern const vp_tlops vp_tlops_cpu;

/* The CUDA launchers vp_tlcuda_<kernel> and their table (cuda_tlob.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_TLOPS_KERNELS, vp_tlops, vp_tlcuda)
extern const vp_tlops vp_tlops_cuda;

/* The table for a backend; VP_ERR_UNSUPPORTED when its kind has none. */
vp_status vp_tlops_get(const vp_backend* be, const vp_tlops** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_TLOPS_H */
