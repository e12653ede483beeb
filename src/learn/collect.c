/* The collector: buffers between the network and the environments, and one collection
 * step as a sequence of backend ops (encode, heads, act, env step, replay push). The
 * encode-once path of vp_collector_collect is collect_span.c's. */
#include <string.h>

#include "backend/kit.h"
#include "learn/collect_impl.h"
#include "vulpes/curiosity.h"
#include "vulpes/ops.h"

/* Takes an i32 or f32 tensor [rows] or [rows, cols] from the collector's arena. */
static vp_status take(vp_collector* c, const char* name, vp_dtype dt, int64_t rows, int64_t cols, vp_tensor* out) {
    int64_t shape[2] = {rows, cols};
    return vp_arena_tensor(&c->arena, name, dt, cols > 0 ? 2 : 1, shape, out, NULL);
}

/* Every buffer of a collector of E envs. */
static vp_status collector_alloc(vp_collector* c) {
    const int64_t E = c->n_envs, P = VP_ENV_PORTFOLIO;
    const int goal = c->policy.n_portfolio == P + 1;
    size_t bytes = (size_t)E * (4 * 4 + 2 * P * 4 + VP_ENV_BRANCHES * 4 + 8) + 16 * 256;
    if (goal) bytes += (size_t)E * 2 * (P + 1) * 4 + 2 * 256;
    VP_TRY(vp_arena_init(&c->arena, c->backend, vp_backend_native_mem(c->backend), bytes));
    VP_TRY(take(c, "collect.obs_bar", VP_I32, E, 0, &c->obs_bar));
    VP_TRY(take(c, "collect.portfolio", VP_F32, E, P, &c->portfolio));
    VP_TRY(take(c, "collect.next_bar", VP_I32, E, 0, &c->next_bar));
    VP_TRY(take(c, "collect.next_portfolio", VP_F32, E, P, &c->next_portfolio));
    VP_TRY(take(c, "collect.window_end", VP_I32, E, 0, &c->window_end));
    VP_TRY(take(c, "collect.actions", VP_I32, E, VP_ENV_BRANCHES, &c->actions));
    VP_TRY(take(c, "collect.reward", VP_F32, E, 0, &c->reward));
    VP_TRY(take(c, "collect.done", VP_F32, E, 0, &c->done));
    VP_TRY(take(c, "collect.step", VP_I32, 2, 0, &c->step));
    if (goal) {
        VP_TRY(take(c, "collect.goal_portfolio", VP_F32, E, P + 1, &c->goal_portfolio));
        VP_TRY(take(c, "collect.goal_next", VP_F32, E, P + 1, &c->goal_next));
    }
    VP_TRY(vp_policy_work_init(&c->policy, E, &c->work));
    // the risk-budget head's scales of the envs' sizes, refilled by each score
    c->env->size_scale = vp_policy_size_scale(&c->policy, c->work);
    return VP_OK;
}

vp_status vp_collector_init(vp_collector* c, vp_backend* b, const vp_policy* pol, const vp_tensor* features,
                            vp_env* env, vp_replay* replay, const vp_collect_cfg* cfg) {
    VP_REQUIRE(c != NULL && b != NULL && pol != NULL && features != NULL && env != NULL && cfg != NULL,
               VP_ERR_INVALID_ARG, "vp_collector_init: collector, backend, policy, features, env or cfg is NULL");
    memset(c, 0, sizeof *c);
    VP_TRY(vp_policy_check(pol));
    VP_REQUIRE(env->backend == b && pol->backend == b, VP_ERR_INVALID_ARG,
               "vp_collector_init: env and policy must live on backend %s", vp_backend_name(b));
    // f32 [T, F] with a row for every bar of the market, readable by b
    VP_TRY(vp_tensor_check_min_rows("vp_collector_init", "features", b, features, VP_F32, env->market->n_bars,
                                    pol->n_features));
    if (replay) {
        const vp_replay_cfg* rc = vp_replay_get_cfg(replay);
        VP_REQUIRE(rc->n_envs == env->n_envs && rc->n_portfolio == pol->n_portfolio &&
                       rc->n_branches == VP_ENV_BRANCHES,
                   VP_ERR_INVALID_ARG, "vp_collector_init: the replay takes %d envs, %d portfolio floats, %d branches; "
                   "the env has %lld, %d, %d", rc->n_envs, rc->n_portfolio, rc->n_branches, (long long)env->n_envs,
                   pol->n_portfolio, VP_ENV_BRANCHES);
        // a goal-conditioned policy's rows go into a HER ring, which relabels their last entry
        VP_REQUIRE(pol->n_portfolio == VP_ENV_PORTFOLIO || rc->her, VP_ERR_INVALID_ARG,
                   "vp_collector_init: the policy takes a goal (%d portfolio floats) but the replay does no "
                   "hindsight relabelling (her 0)", pol->n_portfolio);
    }
    c->backend = b;
    c->policy = *pol;
    c->features = *features;
    c->env = env;
    c->replay = replay;
    c->cfg = *cfg;
    c->n_envs = env->n_envs;
    VP_REQUIRE(cfg->steps >= 0 && cfg->mode >= VP_COLLECT_AUTO && cfg->mode < VP_COLLECT_MODE_COUNT,
               VP_ERR_INVALID_ARG, "vp_collector_init: %lld steps per collection (>= 0), mode %d (0 auto, 1 step by "
               "step, 2 encode once)", (long long)cfg->steps, (int)cfg->mode);
    vp_status s = collector_alloc(c);
    if (s == VP_OK) s = vp_collector_span_init(c);
    if (s == VP_OK) s = vp_collector_reset(c);
    if (s != VP_OK) {
        vp_collector_free(c);
        return vp_error_context(s, "vp_collector_init (%lld envs)", (long long)env->n_envs);
    }
    return VP_OK;
}

void vp_collector_free(vp_collector* c) {
    if (!c) return;
    vp_collector_span_free(c);
    if (c->env && c->work && c->env->size_scale == vp_policy_size_scale(&c->policy, c->work)) c->env->size_scale = NULL;
    vp_policy_work_free(&c->policy, c->work);
    vp_arena_free(&c->arena);
    memset(c, 0, sizeof *c);
}

vp_status vp_collector_reset(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->env != NULL, VP_ERR_INVALID_ARG, "vp_collector_reset: collector is not initialised");
    VP_TRY(vp_env_reset(c->env, &c->obs_bar, &c->portfolio));
    return vp_collector_set_step(c, 0);
}

vp_status vp_collector_observe(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->env != NULL, VP_ERR_INVALID_ARG, "vp_collector_observe: collector is not initialised");
    return vp_env_observe(c->env, &c->obs_bar, &c->portfolio);
}

vp_status vp_collector_set_step(vp_collector* c, int64_t step) {
    VP_REQUIRE(c != NULL && c->step.data != NULL, VP_ERR_INVALID_ARG, "vp_collector_set_step: collector is not initialised");
    return vp_upload(c->backend, &c->step, &step, sizeof step);
}

vp_status vp_collector_get_step(vp_collector* c, int64_t* step) {
    VP_REQUIRE(c != NULL && c->step.data != NULL && step != NULL, VP_ERR_INVALID_ARG,
               "vp_collector_get_step: collector is not initialised or step is NULL");
    return vp_download(c->backend, step, &c->step, sizeof *step);
}

vp_status vp_collector_env_push(vp_collector* c, const vp_tensor* enc) {
    VP_TRY(vp_env_step(c->env, &c->actions, &c->reward, &c->done, &c->next_bar, &c->next_portfolio));
    if (!c->replay) return VP_OK;
    // (s_t, a, r, done, s_t+1) into the replay's pending windows, with curiosity's r_int of a policy step.
    vp_replay_step rs = {c->obs_bar, c->window_end, c->portfolio, c->actions,      c->reward,
                         c->done,    c->next_bar,   c->next_portfolio, {0}};
    if (c->goal_portfolio.data) {
        // a goal-conditioned policy: its goal appended to both portfolio rows (the ring relabels it)
        vp_tensor rows;
        VP_TRY(vp_policy_goal_rows(&c->policy, c->work, &c->portfolio, c->n_envs, &rows));
        VP_TRY(vp_copy(c->backend, &rows, &c->goal_portfolio));
        VP_TRY(vp_policy_goal_rows(&c->policy, c->work, &c->next_portfolio, c->n_envs, &rows));
        VP_TRY(vp_copy(c->backend, &rows, &c->goal_next));
        rs.portfolio = c->goal_portfolio;
        rs.next_portfolio = c->goal_next;
    }
    if (c->curiosity && enc)
        VP_TRY(vp_curiosity_reward(c->curiosity, enc, &c->portfolio, &c->actions, &c->next_portfolio, &c->done,
                                   &rs.reward_int));
    return vp_replay_push(c->replay, &rs);
}

vp_status vp_collector_step_env(vp_collector* c, const vp_tensor* enc) {
    vp_backend* b = c->backend;
    vp_env* e = c->env;
    // The window end of s_t, before an auto-reset can change it.
    vp_tensor wend = vp_tensor_1d(e->state.window_end, VP_I32, e->storage.mem, c->n_envs);
    VP_TRY(vp_copy(b, &wend, &c->window_end));
    VP_TRY(vp_collector_env_push(c, enc));
    // The next observation becomes the current one.
    VP_TRY(vp_copy(b, &c->next_bar, &c->obs_bar));
    return vp_copy(b, &c->next_portfolio, &c->portfolio);
}

/* The policy's scores of every env's current observation into *q ([E, A] view), their
 * encodings into *enc ([E, H] view of the workspace). */
static vp_status score(vp_collector* c, vp_tensor* q, vp_tensor* enc) {
    // market encoding of each env's window, then the decision part with its portfolio
    VP_TRY(vp_policy_encode(&c->policy, c->work, &c->features, &c->obs_bar, c->n_envs, enc));
    return vp_policy_score(&c->policy, c->work, enc, &c->portfolio, c->n_envs, q);
}

vp_status vp_collector_score(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->work != NULL, VP_ERR_INVALID_ARG, "vp_collector_score: collector is not initialised");
    vp_tensor q, enc;
    if (!c->encode_once) return score(c, &q, &enc);
    // the encode-once forward: the span's encoding, each env's row, the heads
    VP_TRY(vp_collector_encode_span(c));
    VP_TRY(vp_collect_gather(c->backend, &c->span_enc, c->span_begin, &c->obs_bar, &c->enc, NULL, NULL));
    return vp_policy_score(&c->policy, c->work, &c->enc, &c->portfolio, c->n_envs, &q);
}

vp_status vp_collector_step(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->work != NULL, VP_ERR_INVALID_ARG, "vp_collector_step: collector is not initialised");
    vp_tensor q, enc;
    VP_TRY(score(c, &q, &enc));
    // Epsilon-greedy choices straight into the env's action buffer.
    VP_TRY(vp_collect_act_scaled(c->backend, &c->cfg, &c->policy.layout, &q, &c->step,
                                 c->eps_scale.data ? &c->eps_scale : NULL, &c->actions));
    VP_TRY(vp_collector_step_env(c, &enc));
    return vp_collect_tick(c->backend, &c->step);
}

vp_status vp_collector_random_step(vp_collector* c, uint64_t counter) {
    VP_REQUIRE(c != NULL && c->work != NULL, VP_ERR_INVALID_ARG,
               "vp_collector_random_step: collector is not initialised");
    VP_TRY(vp_env_random_actions(c->backend, c->cfg.seed, counter, &c->actions));
    return vp_collector_step_env(c, NULL);
}
