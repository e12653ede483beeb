/* The backtest of a trained DQN network: the rollout of its greedy policy. */
#include "vulpes/backtest.h"

vp_status vp_backtest_run(vp_backend* b, const vp_model* m, const vp_tensor* params, const vp_rollout_data* data,
                          const vp_rollout_cfg* cfg, vp_rollout_result* out) {
    if (cfg && cfg->forced_actions) return vp_rollout_run(b, NULL, data, cfg, out);
    VP_REQUIRE(m != NULL && params != NULL && data != NULL && data->features != NULL, VP_ERR_INVALID_ARG,
               "vp_backtest_run: model, params or features is NULL (needed without forced actions)");
    const vp_policy pol = vp_model_rollout_policy(m, params);
    return vp_rollout_run(b, &pol, data, cfg, out);
}
