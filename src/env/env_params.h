/* Internal: the step's constants (vp_env_params, env_rules.h) from an instrument and episode
 * settings, computed in one place for every caller of the step: the environment (env.c) and
 * the rollout (src/rollout/rollout.c). */
#ifndef VP_ENV_PARAMS_H
#define VP_ENV_PARAMS_H

#include "env/env_rules.h"
#include "vulpes/env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The constants of a step set under instrument `in` and settings `cfg`, with financing rates
 * per bar from bars_per_year (> 0; ignored when both rates are 0). The episode starts (begin,
 * n_starts) depend on the market and are left 0 for the caller. */
vp_env_params vp_env_params_make(const vp_instrument* in, const vp_env_config* cfg, double bars_per_year);

/* Checks the instrument's fields (finite, in range) for function `fn`'s messages, and that a
 * financing rate comes with bars_per_year > 0. */
vp_status vp_env_instrument_check(const char* fn, const vp_instrument* in, double bars_per_year);

#ifdef __cplusplus
}
#endif
#endif /* VP_ENV_PARAMS_H */
