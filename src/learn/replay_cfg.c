/* The replay ring's configuration: SPEC's defaults and the checks that name the bad field
 * (the ring itself: replay.c). */
#include <stdint.h>
#include <string.h>

#include "learn/replay_impl.h"

vp_replay_cfg vp_replay_cfg_default(void) {
    vp_replay_cfg c;
    memset(&c, 0, sizeof c);
    c.capacity = 1000000;
    c.n_envs = 1;
    c.n_portfolio = 8;
    c.n_branches = 4;
    c.n_step = 3;
    c.gamma = 0.99f;
    c.prioritized = 1;
    c.alpha = 0.6f;
    c.priority_eps = 1e-6f;
    c.beta0 = 0.4f;
    c.beta_steps = 100000;
    c.seed = 0;
    c.rng_stream = 0x5245504Cu; /* "REPL" */
    return c;
}

vp_status vp_replay_cfg_check(const vp_replay_cfg* c) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_replay_cfg_check: cfg is NULL");
    VP_REQUIRE(c->n_envs >= 1, VP_ERR_INVALID_ARG, "replay: n_envs is %d, must be >= 1", c->n_envs);
    VP_REQUIRE(c->n_step >= 1 && c->n_step <= VP_REPLAY_MAX_NSTEP, VP_ERR_INVALID_ARG,
               "replay: n_step is %d, must be in 1..%d", c->n_step, VP_REPLAY_MAX_NSTEP);
    VP_REQUIRE(c->n_portfolio >= 1, VP_ERR_INVALID_ARG, "replay: n_portfolio is %d, must be >= 1", c->n_portfolio);
    VP_REQUIRE(c->n_branches >= 1 && c->n_branches <= VP_REPLAY_MAX_BRANCHES, VP_ERR_INVALID_ARG,
               "replay: n_branches is %d, must be in 1..%d", c->n_branches, VP_REPLAY_MAX_BRANCHES);
    VP_REQUIRE(c->capacity >= 1 && c->capacity <= INT32_MAX, VP_ERR_INVALID_ARG,
               "replay: capacity is %lld, must be in 1..%d", (long long)c->capacity, INT32_MAX);
    VP_REQUIRE(c->capacity >= (int64_t)c->n_envs * c->n_step, VP_ERR_INVALID_ARG,
               "replay: capacity %lld is below n_envs * n_step = %lld (one push may write that many)",
               (long long)c->capacity, (long long)c->n_envs * c->n_step);
    VP_REQUIRE(c->gamma >= 0.0f && c->gamma <= 1.0f, VP_ERR_INVALID_ARG, "replay: gamma is %g, must be in [0, 1]",
               (double)c->gamma);
    VP_REQUIRE(c->alpha >= 0.0f && c->alpha <= 8.0f, VP_ERR_INVALID_ARG, "replay: alpha is %g, must be in [0, 8]",
               (double)c->alpha);
    VP_REQUIRE(c->priority_eps >= 0.0f && c->priority_eps < 1e30f, VP_ERR_INVALID_ARG,
               "replay: priority_eps is %g, must be >= 0 and finite", (double)c->priority_eps);
    VP_REQUIRE(c->beta0 >= 0.0f && c->beta0 <= 1.0f, VP_ERR_INVALID_ARG, "replay: beta0 is %g, must be in [0, 1]",
               (double)c->beta0);
    VP_REQUIRE(c->beta_steps >= 1, VP_ERR_INVALID_ARG, "replay: beta_steps is %lld, must be >= 1",
               (long long)c->beta_steps);
    if (c->her) {
        VP_REQUIRE(c->her_ratio >= 0.0f && c->her_ratio <= 1.0f, VP_ERR_INVALID_ARG,
                   "replay: her_ratio is %g, must be in [0, 1]", (double)c->her_ratio);
        VP_REQUIRE(c->her_lambda >= 0.0f && c->her_lambda < 1e30f, VP_ERR_INVALID_ARG,
                   "replay: her_lambda is %g, must be >= 0 and finite", (double)c->her_lambda);
        VP_REQUIRE(c->her_episodes >= 1 && (int64_t)c->her_episodes * c->n_envs <= INT32_MAX, VP_ERR_INVALID_ARG,
                   "replay: her_episodes is %d, must be >= 1 with her_episodes * n_envs <= %d", c->her_episodes,
                   INT32_MAX);
        VP_REQUIRE(c->n_portfolio >= 2, VP_ERR_INVALID_ARG,
                   "replay: n_portfolio is %d, must be >= 2 with her (the last entry is the goal)", c->n_portfolio);
    }
    return VP_OK;
}
