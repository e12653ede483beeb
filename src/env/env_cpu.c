/* The CPU backend of the environment: a loop over envs calling the shared step math. */
#include "env_impl.h"

void vp_env_cpu_run(vp_env_op op, const vp_env_params* p, const vp_env_bar* bars, const vp_env_state* s,
                    const int32_t* actions, const vp_env_outs* o, int64_t n) {
    /* one loop per op, so the branch is taken once, not per env */
    switch (op) {
    case VP_ENV_OP_STEP:
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
}

void vp_env_cpu_random_actions(uint64_t seed, uint64_t counter, int32_t* actions, int64_t n) {
    for (int64_t i = 0; i < n; ++i) vp_env_random_action(seed, counter, i, actions + i * VP_ENV_BRANCHES);
}
