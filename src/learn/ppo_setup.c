/* The PPO trainer's set-up: its settings from the config, the feature matrix on the backend,
 * the training market and envs, the actor-critic, the rollout and minibatch buffers, the
 * optimiser state and the validation backtest. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "learn/ppo_impl.h"
#include "learn/train_checks.h"
#include "vulpes/algo.h"
#include "vulpes/ops.h"
#include "vulpes/ppo.h"

vp_status vp_ppo_cfg_make(const vp_config* cfg, vp_ppo_cfg* out) {
    VP_REQUIRE(cfg != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_ppo_cfg_make: NULL argument");
    memset(out, 0, sizeof *out);
    const vp_config_ppo* p = &cfg->ppo;
    const int64_t E = cfg->env.n_envs, T = p->rollout_steps;
    VP_REQUIRE(E >= 1 && T >= 1 && E <= INT32_MAX / T, VP_ERR_INVALID_ARG,
               "env.n_envs x ppo.rollout_steps = %lld x %lld rows must fit 31 bits", (long long)E, (long long)T);
    VP_REQUIRE((E * T) % p->minibatches == 0 && p->minibatches <= E * T, VP_ERR_INVALID_ARG,
               "ppo.minibatches = %lld does not divide the rollout's env.n_envs x ppo.rollout_steps = %lld x %lld = "
               "%lld rows", (long long)p->minibatches, (long long)E, (long long)T, (long long)(E * T));
    VP_REQUIRE(p->epochs <= VP_CONFIG_INT_MAX / p->minibatches, VP_ERR_INVALID_ARG,
               "ppo.epochs x ppo.minibatches = %lld x %lld updates per iteration: at most 10^9",
               (long long)p->epochs, (long long)p->minibatches);
    // the DQN learner's switches: PPO has no C51 support, replay or Polyak target to apply them to
    const char* dqn_only = vp_train_dqn_switch(cfg);
    VP_REQUIRE(dqn_only == NULL, VP_ERR_UNSUPPORTED,
               "train.algo = ppo: %s is a switch of the DQN learner (docs/modules.md); PPO does not apply it, so "
               "turn it off", dqn_only);
    out->rollout_steps = T;
    out->epochs = p->epochs;
    out->minibatches = p->minibatches;
    out->clip = (float)p->clip;
    out->vf_clip = (float)p->vf_clip;
    out->ent_coef = (float)p->ent_coef;
    out->vf_coef = (float)p->vf_coef;
    out->gamma = (float)cfg->learn.gamma;
    out->gae_lambda = (float)p->gae_lambda;
    out->target_kl = (float)p->target_kl;
    out->norm_adv = p->norm_adv ? 1 : 0;
    out->adamw.lr = (float)cfg->learn.lr;
    out->adamw.beta1 = (float)cfg->learn.beta1;
    out->adamw.beta2 = (float)cfg->learn.beta2;
    out->adamw.eps = (float)cfg->learn.eps;
    out->adamw.weight_decay = (float)cfg->learn.weight_decay;
    out->clip_norm = cfg->learn.clip_norm > 0.0 ? (float)cfg->learn.clip_norm : FLT_MAX; /* 0: no clip */
    return VP_OK;
}

/* The training span's market and its n_envs environments. */
static vp_status envs_init(vp_ppo_trainer* t) {
    VP_TRY(vp_algo_train_envs_init(t->backend, t->data, &t->features, &t->parts, t->cfg.env.n_envs, &t->market,
                                   &t->env));
    return vp_env_reset(&t->env, &t->obs_bar, &t->obs_port);
}

/* One f32 or i32 tensor of the given shape from the trainer's arena. */
static vp_status take(vp_ppo_trainer* t, const char* name, vp_dtype dt, int64_t rows, int64_t cols, vp_tensor* out) {
    const int64_t sh[2] = {rows, cols};
    return vp_arena_tensor(&t->arena, name, dt, cols > 0 ? 2 : 1, sh, out, NULL);
}

/* Every buffer of the trainer in one arena. */
static vp_status buffers_init(vp_ppo_trainer* t) {
    const int64_t E = t->cfg.env.n_envs, N = E * t->pc.rollout_steps, M = N / t->pc.minibatches;
    const int64_t W = t->net.n_weights, P = VP_ENV_PORTFOLIO, NB = VP_ENV_BRANCHES;
    const int64_t A = vp_model_cfg_actions(&t->net.enc.cfg);
    const int64_t words = 3 * W + 16 + E * (1 + P + NB + 1) + N * (1 + P + NB + 6 + 1) + M * (1 + P + NB + 4) +
                          M * (VP_PPO_T_COUNT + A + 1) + VP_PPO_STAT_COUNT;
    VP_TRY(vp_arena_init(&t->arena, t->backend, vp_backend_native_mem(t->backend), (size_t)words * 4 + 48 * 256));
    VP_TRY(take(t, "ppo.adam_m", VP_F32, W, 0, &t->adam_m));
    VP_TRY(take(t, "ppo.adam_v", VP_F32, W, 0, &t->adam_v));
    VP_TRY(take(t, "ppo.best_params", VP_F32, W, 0, &t->best_params));
    VP_TRY(take(t, "ppo.adam_step", VP_I32, 1, 0, &t->adam_step));
    VP_TRY(take(t, "ppo.grad_norm", VP_F32, 1, 0, &t->grad_norm));
    VP_TRY(take(t, "ppo.clip_coef", VP_F32, 1, 0, &t->clip_coef));
    VP_TRY(take(t, "ppo.counters", VP_I32, 2 * VP_PPO_CTR_COUNT, 0, &t->ctr));
    VP_TRY(take(t, "ppo.obs_bar", VP_I32, E, 0, &t->obs_bar));
    VP_TRY(take(t, "ppo.obs_port", VP_F32, E, P, &t->obs_port));
    VP_TRY(take(t, "ppo.actions", VP_I32, E, NB, &t->actions));
    VP_TRY(take(t, "ppo.last_value", VP_F32, E, 0, &t->last_value));
    VP_TRY(take(t, "ppo.r_bar", VP_I32, N, 0, &t->r_bar));
    VP_TRY(take(t, "ppo.r_port", VP_F32, N, P, &t->r_port));
    VP_TRY(take(t, "ppo.r_act", VP_I32, N, NB, &t->r_act));
    VP_TRY(take(t, "ppo.r_logp", VP_F32, N, 0, &t->r_logp));
    VP_TRY(take(t, "ppo.r_value", VP_F32, N, 0, &t->r_value));
    VP_TRY(take(t, "ppo.r_reward", VP_F32, N, 0, &t->r_reward));
    VP_TRY(take(t, "ppo.r_done", VP_F32, N, 0, &t->r_done));
    VP_TRY(take(t, "ppo.r_adv", VP_F32, N, 0, &t->r_adv));
    VP_TRY(take(t, "ppo.r_ret", VP_F32, N, 0, &t->r_ret));
    VP_TRY(take(t, "ppo.perm", VP_I32, N, 0, &t->perm));
    VP_TRY(take(t, "ppo.m_bar", VP_I32, M, 0, &t->m_bar));
    VP_TRY(take(t, "ppo.m_port", VP_F32, M, P, &t->m_port));
    VP_TRY(take(t, "ppo.m_act", VP_I32, M, NB, &t->m_act));
    VP_TRY(take(t, "ppo.m_logp", VP_F32, M, 0, &t->m_logp));
    VP_TRY(take(t, "ppo.m_value", VP_F32, M, 0, &t->m_value));
    VP_TRY(take(t, "ppo.m_adv", VP_F32, M, 0, &t->m_adv));
    VP_TRY(take(t, "ppo.m_ret", VP_F32, M, 0, &t->m_ret));
    VP_TRY(take(t, "ppo.terms", VP_F32, M, VP_PPO_T_COUNT, &t->terms));
    VP_TRY(take(t, "ppo.d_logits", VP_F32, M, A, &t->d_logits));
    VP_TRY(take(t, "ppo.d_values", VP_F32, M, 0, &t->d_values));
    VP_TRY(take(t, "ppo.stats", VP_F32, VP_PPO_STAT_COUNT, 0, &t->stats));
    // zero moments, step and counters; the best parameters start as the initial ones
    VP_TRY(vp_fill(t->backend, &t->adam_m, 0.0f));
    VP_TRY(vp_fill(t->backend, &t->adam_v, 0.0f));
    VP_TRY(vp_fill_i32(t->backend, &t->adam_step, 0));
    VP_TRY(vp_fill_i32(t->backend, &t->ctr, 0));
    VP_TRY(vp_fill(t->backend, &t->stats, NAN));
    VP_TRY(vp_fill(t->backend, &t->grad_norm, NAN));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

vp_status vp_ppo_trainer_init(vp_ppo_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    VP_REQUIRE(t != NULL && b != NULL && cfg != NULL && d != NULL, VP_ERR_INVALID_ARG,
               "vp_ppo_trainer_init: trainer, backend, config or data is NULL");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->backend = b;
    t->data = d;
    VP_TRY(vp_train_parts_make(cfg, d->n_features, &t->parts));
    VP_TRY(vp_ppo_cfg_make(cfg, &t->pc));
    const int64_t E = cfg->env.n_envs, M = E * t->pc.rollout_steps / t->pc.minibatches;

    // Data, network, buffers, envs, activations, validation: each on the backend.
    vp_status s = vp_algo_features_upload(b, d, &t->feat_buf, &t->features);
    if (s == VP_OK) s = vp_ppo_net_init(&t->net, b, &t->parts.learner.model, t->parts.learner.seed);
    if (s == VP_OK) t->net.enc.precision = t->parts.precision;
    if (s == VP_OK) s = buffers_init(t);
    if (s == VP_OK) s = envs_init(t);
    if (s == VP_OK) s = vp_ppo_acts_init(&t->col, &t->net, E, 0, 0);
    if (s == VP_OK) s = vp_ppo_acts_init(&t->mb, &t->net, M, 1, 0);
    if (s == VP_OK) s = vp_ppo_span_init(t);
    if (s == VP_OK) s = vp_validator_init_run(&t->val, b, &t->features, d, &t->parts.instrument, cfg);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s != VP_OK) {
        vp_ppo_trainer_free(t);
        return vp_error_context(s, "setting up PPO training");
    }
    return VP_OK;
}

void vp_ppo_trainer_free(vp_ppo_trainer* t) {
    if (!t) return;
    vp_graph_free(t->g_all);
    vp_graph_free(t->g_collect);
    vp_graph_free(t->g_epoch);
    vp_validator_free(t->val);
    vp_ppo_span_free(t);
    vp_ppo_acts_free(t->col);
    vp_ppo_acts_free(t->mb);
    vp_env_free(&t->env);
    vp_env_market_free(&t->market);
    if (t->backend) vp_arena_free(&t->arena);
    vp_ppo_net_free(&t->net);
    if (t->backend) vp_buffer_free(t->backend, &t->feat_buf);
    memset(t, 0, sizeof *t);
}
