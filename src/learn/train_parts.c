/* The settings of each part of a run (instrument, env, model, learner, replay,
 * exploration and collection) from the configuration, and the seed of each random stream. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "vulpes/train.h"

/* Seeds of the parts: splitmix64 of run.seed and a part tag, so no two parts share a
 * Philox key (docs/train.md). */
enum { SEED_LEARNER = 1, SEED_ENV = 2, SEED_REPLAY = 3, SEED_COLLECT = 4 };

/* splitmix64 finaliser of seed + tag * golden ratio. */
static uint64_t derive_seed(uint64_t seed, uint64_t tag) {
    uint64_t z = seed + tag * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

vp_status vp_train_parts_make(const vp_config* cfg, int n_features, vp_train_parts* out) {
    VP_REQUIRE(cfg != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_train_parts_make: cfg or out is NULL");
    memset(out, 0, sizeof *out);
    const uint64_t seed = (uint64_t)cfg->run.seed;

    // Instrument: max_position counts whole contracts.
    const double mp = cfg->instrument.max_position;
    VP_REQUIRE(mp >= 1.0 && mp <= (double)(1 << 29) && mp == floor(mp), VP_ERR_INVALID_ARG,
               "instrument.max_position = %g: the environment trades whole contracts (an integer >= 1)", mp);
    out->instrument = vp_instrument_from_config(cfg);

    // Environments.
    VP_REQUIRE(cfg->env.episode_bars <= INT32_MAX && cfg->env.n_envs <= INT32_MAX, VP_ERR_INVALID_ARG,
               "env.episode_bars = %lld and env.n_envs = %lld must fit 32 bits", (long long)cfg->env.episode_bars,
               (long long)cfg->env.n_envs);
    out->env.episode_bars = (int32_t)cfg->env.episode_bars;
    out->env.ruin_fraction = cfg->env.ruin_fraction;
    out->env.reward_scale = cfg->env.reward_scale;
    out->env.drawdown_penalty = cfg->env.drawdown_penalty;
    out->env.turnover_penalty = cfg->env.turnover_penalty;
    out->env.seed = derive_seed(seed, SEED_ENV);

    // Network and learner.
    vp_learner_cfg* l = &out->learner;
    *l = vp_learner_cfg_default();
    vp_model_cfg* m = &l->model;
    m->n_features = n_features;
    // her.enabled: the network also takes the goal, appended to the env's portfolio vector
    m->n_portfolio = VP_ENV_PORTFOLIO + (cfg->her.enabled ? 1 : 0);
    m->window = (int)cfg->model.window;
    m->hidden = (int)cfg->model.hidden;
    m->encoder = (vp_model_encoder)cfg->model.encoder;
    m->mamba_state = (int)cfg->model.mamba_state;
    m->mamba_head_dim = (int)cfg->model.mamba_head_dim;
    m->mamba_conv = (int)cfg->model.mamba_conv;
    m->tlob_blocks = (int)cfg->model.tlob_blocks;
    m->tlob_heads = (int)cfg->model.tlob_heads;
    m->tlob_feature_heads = (int)cfg->model.tlob_feature_heads;
    m->tlob_mlp = (int)cfg->model.tlob_mlp;
    m->head_hidden = (int)cfg->model.head_hidden;
    m->n_atoms = (int)cfg->model.n_atoms;
    m->v_min = (float)cfg->model.v_min;
    m->v_max = (float)cfg->model.v_max;
    m->iqn_cos = (int)cfg->model.iqn_cos;
    m->vsn = cfg->model.vsn ? 1 : 0;
    m->vsn_hidden = (int)cfg->model.vsn_hidden;
    m->spectral_norm = cfg->model.spectral_norm ? 1 : 0;
    m->kan = cfg->model.kan ? 1 : 0;
    m->kan_grid = (int)cfg->model.kan_grid;
    m->kan_order = (int)cfg->model.kan_order;
    m->kan_range = (float)cfg->model.kan_range;
    m->stoch_depth = (float)cfg->model.stoch_depth;
    m->q_denoise = cfg->model.q_denoise ? 1 : 0;
    m->cross_branch = cfg->model.cross_branch ? 1 : 0;
    m->risk_budget = (float)cfg->model.risk_budget;
    m->adaptive_atoms = cfg->learn.adaptive_atoms ? 1 : 0;
    l->batch = cfg->learn.batch;
    l->n_taus = (int)cfg->model.iqn_taus;
    l->n_target_taus = (int)cfg->model.iqn_target_taus;
    l->adamw.lr = (float)cfg->learn.lr;
    l->adamw.beta1 = (float)cfg->learn.beta1;
    l->adamw.beta2 = (float)cfg->learn.beta2;
    l->adamw.eps = (float)cfg->learn.eps;
    l->adamw.weight_decay = (float)cfg->learn.weight_decay;
    l->clip_norm = cfg->learn.clip_norm > 0.0 ? (float)cfg->learn.clip_norm : FLT_MAX; /* 0: no clip */
    l->polyak_tau = (float)cfg->learn.tau;
    l->seed = derive_seed(seed, SEED_LEARNER);
    l->popart = cfg->learn.popart ? 1 : 0;
    l->popart_beta = (float)cfg->learn.popart_beta;
    vp_signals_cfg* sg = &l->signals;
    sg->enable = cfg->signals.enable;
    sg->every = cfg->signals.every;
    sg->fast_rate = (float)cfg->signals.fast_rate;
    sg->slow_rate = (float)cfg->signals.slow_rate;
    sg->adapt_tau = cfg->signals.adapt_tau;
    sg->tau_min = (float)cfg->signals.tau_min;
    sg->tau_max = (float)cfg->signals.tau_max;
    sg->div_ref = (float)cfg->signals.div_ref;
    sg->adapt_epsilon = cfg->signals.adapt_epsilon;
    sg->eps_gain = (float)cfg->signals.eps_gain;
    sg->eps_scale_min = (float)cfg->signals.eps_scale_min;
    sg->eps_scale_max = (float)cfg->signals.eps_scale_max;
    sg->adapt_gamma = cfg->signals.adapt_gamma;
    sg->gamma = (float)cfg->learn.gamma;
    sg->gamma_min = (float)cfg->signals.gamma_min;
    sg->gamma_max = (float)cfg->signals.gamma_max;
    sg->gamma_rate = (float)cfg->signals.gamma_rate;
    sg->n_step = (int)cfg->learn.n_step;
    sg->kelly = cfg->signals.kelly;
    sg->kelly_fraction = (float)cfg->signals.kelly_fraction;
    sg->kelly_min = (float)cfg->signals.kelly_min;
    sg->lr_schedule = (vp_lr_schedule)cfg->learn.lr_schedule;
    sg->warmup_steps = cfg->learn.warmup_steps;
    sg->total_steps = cfg->train.iterations * cfg->train.train_steps;
    VP_TRY(vp_learner_cfg_check(l));

    // Replay ring.
    vp_replay_cfg* r = &out->replay;
    *r = vp_replay_cfg_default();
    VP_REQUIRE(cfg->replay.capacity <= INT32_MAX, VP_ERR_INVALID_ARG, "replay.capacity = %lld must fit 31 bits",
               (long long)cfg->replay.capacity);
    r->capacity = cfg->replay.capacity;
    r->n_envs = (int)cfg->env.n_envs;
    r->n_portfolio = m->n_portfolio;
    r->her = cfg->her.enabled ? 1 : 0;
    r->her_ratio = (float)cfg->her.ratio;
    r->her_lambda = (float)cfg->her.lambda;
    r->her_episodes = (int)cfg->her.episodes;
    VP_REQUIRE(!cfg->her.enabled || cfg->her.episodes * cfg->env.n_envs <= INT32_MAX, VP_ERR_INVALID_ARG,
               "her.episodes x env.n_envs = %lld x %lld: the episode tables hold at most 2^31 - 1 rows",
               (long long)cfg->her.episodes, (long long)cfg->env.n_envs);
    r->n_branches = VP_ENV_BRANCHES;
    r->n_step = (int)cfg->learn.n_step;
    r->gamma = (float)cfg->learn.gamma;
    r->prioritized = cfg->replay.prioritized ? 1 : 0;
    r->alpha = (float)cfg->replay.alpha;
    r->beta0 = (float)cfg->replay.beta0;
    r->beta_steps = cfg->replay.beta_steps;
    r->seed = derive_seed(seed, SEED_REPLAY);
    vp_status s = vp_replay_cfg_check(r);
    if (s != VP_OK) return vp_error_context(s, "replay.capacity / env.n_envs / learn.n_step");

    // Exploration.
    out->collect.epsilon_start = (float)cfg->collect.epsilon_start;
    out->collect.epsilon_end = (float)cfg->collect.epsilon_end;
    out->collect.epsilon_steps = cfg->collect.epsilon_steps;
    out->collect.seed = derive_seed(seed, SEED_COLLECT);
    out->collect.steps = cfg->train.collect_steps;
    out->collect.mode = VP_COLLECT_AUTO;
    out->precision = (vp_precision)cfg->run.precision;
    return VP_OK;
}
