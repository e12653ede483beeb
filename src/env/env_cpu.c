/* The CPU backend of the environment: a loop over envs calling the shared step math. */
#include "env_impl.h"
#include "vulpes/action.h"

/* Every action index inside its branch (the CUDA kernel clamps instead of checking). */
static vp_status check_actions(const int32_t* a, int64_t n) {
    const vp_action_layout l = vp_action_layout_env();
    const int* choices = l.size;
    static const char* branch[VP_ENV_BRANCHES] = {"direction", "size", "take-profit", "stop-loss"};
    for (int64_t i = 0; i < n; ++i)
        for (int j = 0; j < VP_ENV_BRANCHES; ++j) {
            int32_t v = a[i * VP_ENV_BRANCHES + j];
            VP_REQUIRE(v >= 0 && v < choices[j], VP_ERR_INVALID_ARG, "vp_env_step: env %lld %s choice %d is not in "
                       "0..%d", (long long)i, branch[j], (int)v, (int)choices[j] - 1);
        }
    return VP_OK;
}

vp_status vp_env_cpu_run(vp_backend* b, vp_env_op op, const vp_env_params* p, const vp_env_bar* bars,
                         const vp_env_state* s, const int32_t* actions, const vp_env_outs* o, int64_t n) {
    /* one loop per op, so the branch is taken once, not per env */
    switch (op) {
    case VP_ENV_OP_STEP:
        VP_TRY(check_actions(actions, n));
        for (int64_t i = 0; i < n; ++i) vp_env_step_index(p, bars, s, actions, o, i);
        break;
    case VP_ENV_OP_RESET:
        for (int64_t i = 0; i < n; ++i) vp_env_reset_index(p, bars, s, o, i);
        break;
    case VP_ENV_OP_OBSERVE:
        for (int64_t i = 0; i < n; ++i) vp_env_observe_index(p, bars, s, o, i);
        break;
    default:
        break;
    }
    return VP_OK;
}

vp_status vp_env_cpu_random_actions(vp_backend* b, uint64_t seed, uint64_t counter, int32_t* actions, int64_t n) {
    for (int64_t i = 0; i < n; ++i) vp_env_random_action(seed, counter, i, actions + i * VP_ENV_BRANCHES);
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

const vp_env_kernels vp_env_cpu = VP_KERNEL_TABLE(VP_ENV_KERNELS, vp_env, vp_env_cpu);
