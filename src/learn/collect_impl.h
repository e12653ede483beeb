/* Internal: the collection kernels' implementation tables (the kit's pattern, backend/kit.h).
 * collect_act.c checks the arguments and calls the table of the backend's kind with raw
 * pointers, so an implementation may assume valid shapes, dtypes and memory kinds. */
#ifndef VP_LEARN_COLLECT_IMPL_H
#define VP_LEARN_COLLECT_IMPL_H

#include "backend/kit.h"
#include "learn/collect_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the kernels: same meaning as the functions in vulpes/collect.h, arguments checked ---- */

/* vp_collect_act: every env's epsilon-greedy choices (vp_collect_act_index) at collection
 * step step[0]. */
typedef vp_status vp_collect_act_fn(vp_backend* b, const vp_collect_dims* d, const float* q /* [E, A] */,
                                    const int64_t* step /* [1] */, int32_t* actions /* [E, 4] */);

/* vp_collect_tick: step[0] += 1. */
typedef vp_status vp_collect_tick_fn(vp_backend* b, int64_t* step /* [1] */);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_COLLECT_KERNELS(X, f, i) X(f, i, act) X(f, i, tick)

/* One backend's collection kernels. */
typedef struct vp_collect_kernels {
    VP_KERNEL_FIELDS(VP_COLLECT_KERNELS, vp_collect)
} vp_collect_kernels;

/* The CPU loops, vp_collect_cpu_<kernel>, and their table (collect_cpu.c). */
VP_KERNEL_DECLARE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cpu)
extern const vp_collect_kernels vp_collect_cpu;

/* The CUDA kernels' launchers, vp_collect_cuda_<kernel>, and their table (collect_cuda.cu;
 * CUDA builds only). */
VP_KERNEL_DECLARE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cuda)
extern const vp_collect_kernels vp_collect_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_COLLECT_IMPL_H */
