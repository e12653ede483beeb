/* The CUDA backend of the environment: one thread per env, calling the shared step math
 * (env_step.h), so the GPU rounds exactly as the CPU loop does. Kernels, then launchers. */
#include "env_impl.h"

/* Threads per block: small, so that a few thousand envs still spread over many SMs (the
 * step is a short dependent chain of loads, latency bound at small n). */
#ifndef VP_ENV_BLOCK
#define VP_ENV_BLOCK 64
#endif

/* ---- kernels ------------------------------------------------------------------------------ */

/* Runs one op for env blockIdx.x * blockDim.x + threadIdx.x. The constants arrive by value. */
__global__ void vp_env_kernel(vp_env_op op, vp_env_params p, const vp_env_bar* __restrict__ bars, vp_env_state s,
                              const int32_t* __restrict__ actions, vp_env_outs o, int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    if (op == VP_ENV_OP_STEP)
        vp_env_step_index(&p, bars, &s, actions, &o, i);
    else if (op == VP_ENV_OP_RESET)
        vp_env_reset_index(&p, bars, &s, &o, i);
    else
        vp_env_observe_index(&p, bars, &s, &o, i);
}

/* Writes the random action of env i for draw `counter`. */
__global__ void vp_env_random_actions_kernel(uint64_t seed, uint64_t counter, int32_t* __restrict__ actions,
                                             int64_t n) {
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) vp_env_random_action(seed, counter, i, actions + i * VP_ENV_BRANCHES);
}

/* ---- launchers ---------------------------------------------------------------------------- */

extern "C" vp_status vp_env_cuda_run(vp_backend* b, vp_env_op op, const vp_env_params* p, const vp_env_bar* bars,
                                     const vp_env_state* s, const int32_t* actions, const vp_env_outs* o,
                                     int64_t n) {
    VP_REQUIRE(p != NULL && bars != NULL && s != NULL && o != NULL, VP_ERR_INVALID_ARG,
               "vp_env_cuda_run: params, bars, state or outputs is NULL");
    VP_REQUIRE(op >= 0 && op < VP_ENV_OP_COUNT, VP_ERR_INVALID_ARG, "vp_env_cuda_run: bad op %d", (int)op);
    VP_REQUIRE(op != VP_ENV_OP_STEP || actions != NULL, VP_ERR_INVALID_ARG, "vp_env_cuda_run: actions is NULL");
    VP_REQUIRE(n >= 1 && n <= (int64_t)INT32_MAX * VP_ENV_BLOCK, VP_ERR_INVALID_ARG, "vp_env_cuda_run: n_envs %lld",
               (long long)n);
    unsigned grid = (unsigned)((n + VP_ENV_BLOCK - 1) / VP_ENV_BLOCK);
    vp_env_kernel<<<grid, VP_ENV_BLOCK, 0, vp_cuda_stream_of(b)>>>(op, *p, bars, *s, actions, *o, n);
    VP_CUDA_CHECK_LAUNCH("vp_env_kernel");
    return VP_OK;
}

extern "C" vp_status vp_env_cuda_random_actions(vp_backend* b, uint64_t seed, uint64_t counter, int32_t* actions,
                                                int64_t n) {
    VP_REQUIRE(actions != NULL, VP_ERR_INVALID_ARG, "vp_env_cuda_random_actions: actions is NULL");
    VP_REQUIRE(n >= 1 && n <= (int64_t)INT32_MAX * VP_ENV_BLOCK, VP_ERR_INVALID_ARG,
               "vp_env_cuda_random_actions: n_envs %lld", (long long)n);
    unsigned grid = (unsigned)((n + VP_ENV_BLOCK - 1) / VP_ENV_BLOCK);
    vp_env_random_actions_kernel<<<grid, VP_ENV_BLOCK, 0, vp_cuda_stream_of(b)>>>(seed, counter, actions, n);
    VP_CUDA_CHECK_LAUNCH("vp_env_random_actions_kernel");
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

extern "C" const vp_env_kernels vp_env_cuda = VP_KERNEL_TABLE(VP_ENV_KERNELS, vp_env, vp_env_cuda);
