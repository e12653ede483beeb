/* Internal: the environment's kernels (the kit's pattern, backend/kit.h). env.c checks
 * arguments and builds the constants, then calls the table of the backend's kind: the CPU
 * loops (env_cpu.c) or the CUDA launchers (env_cuda.cu). */
#ifndef VP_ENV_IMPL_H
#define VP_ENV_IMPL_H

#include "backend/kit.h"
#include "env_step.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What a launcher does for every env. */
typedef enum vp_env_op {
    VP_ENV_OP_STEP = 0, /* vp_env_step_index */
    VP_ENV_OP_RESET,    /* vp_env_reset_index */
    VP_ENV_OP_OBSERVE,  /* vp_env_observe_index */
    VP_ENV_OP_COUNT
} vp_env_op;

/* ---- the kernels: arguments checked by env.c ---------------------------------------------- */

/* Runs `op` over n envs (actions [n, 4] only for VP_ENV_OP_STEP); pointers are the
 * backend's memory. The CPU loop fails on an action outside its branch; CUDA clamps. */
typedef vp_status vp_env_run_fn(vp_backend* b, vp_env_op op, const vp_env_params* p, const vp_env_bar* bars,
                                const vp_env_state* s, const int32_t* actions, const vp_env_outs* o, int64_t n);

/* Fills actions [n, 4] with random choices of draw `counter`. */
typedef vp_status vp_env_random_actions_fn(vp_backend* b, uint64_t seed, uint64_t counter, int32_t* actions,
                                           int64_t n);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_ENV_KERNELS(X, f, i) X(f, i, run) X(f, i, random_actions)

/* One backend's environment kernels. */
typedef struct vp_env_kernels {
    VP_KERNEL_FIELDS(VP_ENV_KERNELS, vp_env)
} vp_env_kernels;

/* The CPU loops, vp_env_cpu_<kernel>, and their table (env_cpu.c). */
VP_KERNEL_DECLARE(VP_ENV_KERNELS, vp_env, vp_env_cpu)
extern const vp_env_kernels vp_env_cpu;

/* The CUDA launchers, vp_env_cuda_<kernel>, one thread per env on the backend's stream,
 * and their table (env_cuda.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_ENV_KERNELS, vp_env, vp_env_cuda)
extern const vp_env_kernels vp_env_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_ENV_IMPL_H */
