/* Internal: the environment's backend entry points. env.c checks arguments and builds the
 * constants, then calls the CPU loop (env_cpu.c) or the CUDA launchers (env_cuda.cu). */
#ifndef VP_ENV_IMPL_H
#define VP_ENV_IMPL_H

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

/* Runs `op` over n envs on the CPU (actions [n, 4] only for VP_ENV_OP_STEP). */
void vp_env_cpu_run(vp_env_op op, const vp_env_params* p, const vp_env_bar* bars, const vp_env_state* s,
                    const int32_t* actions, const vp_env_outs* o, int64_t n);

/* Fills actions [n, 4] with random choices on the CPU. */
void vp_env_cpu_random_actions(uint64_t seed, uint64_t counter, int32_t* actions, int64_t n);

#ifdef VP_HAVE_CUDA
/* Launches `op` over n envs, one thread each, on `stream` (a cudaStream_t); pointers are
 * device (or mapped) memory. */
vp_status vp_env_cuda_run(void* stream, vp_env_op op, const vp_env_params* p, const vp_env_bar* bars,
                          const vp_env_state* s, const int32_t* actions, const vp_env_outs* o, int64_t n);

/* Launches the random-action fill of actions [n, 4] on `stream`. */
vp_status vp_env_cuda_random_actions(void* stream, uint64_t seed, uint64_t counter, int32_t* actions, int64_t n);

#endif

#ifdef __cplusplus
}
#endif
#endif /* VP_ENV_IMPL_H */
