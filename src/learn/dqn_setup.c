/* The DQN trainer's set-up: the feature matrix on the backend, the training market and envs,
 * the replay ring, the learner, the collector, the batch and the validation backtest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/dqn.h"
#include "vulpes/ops.h"

/* The training span's market and its environments: n_envs, or a rank's share of them, which
 * start where the single process's envs of the same global index start. */
static vp_status envs_init(vp_trainer* t) {
    const int64_t n = t->cfg.env.n_envs / t->ranks;
    VP_TRY(vp_algo_train_envs_init(t->backend, t->data, &t->features, &t->parts, n, &t->market, &t->env));
    if (t->ranks == 1) return VP_OK;
    t->env.first_env = (int64_t)t->rank * n;
    return vp_env_reset(&t->env, NULL, NULL);
}

/* The learner's batch as the replay writes it, the sampled slots and priorities, the best
 * parameters. */
static vp_status batch_init(vp_trainer* t) {
    vp_learner* l = &t->learner;
    const int64_t B = l->cfg.batch, W = l->model.n_weights;
    VP_TRY(vp_learner_batch_init(l, &t->batch));
    t->batch.features = t->features;
    VP_TRY(vp_arena_init(&t->arena, t->backend, vp_backend_native_mem(t->backend), (size_t)(2 * B + W) * 4 + 4 * 256));
    VP_TRY(vp_arena_tensor(&t->arena, "train.indices", VP_I32, 1, &B, &t->indices, NULL));
    VP_TRY(vp_arena_tensor(&t->arena, "train.priorities", VP_F32, 1, &B, &t->priorities, NULL));
    VP_TRY(vp_arena_tensor(&t->arena, "train.best_params", VP_F32, 1, &W, &t->best_params, NULL));
    VP_TRY(vp_copy(t->backend, &l->model.params, &t->best_params));
    vp_replay_batch* r = &t->rbatch;
    r->indices = t->indices;
    r->bar_idx = t->batch.bar_idx;
    r->next_bar_idx = t->batch.next_bar_idx;
    r->portfolio = t->batch.portfolio;
    r->next_portfolio = t->batch.next_portfolio;
    r->actions = t->batch.actions;
    r->reward = t->batch.reward;
    r->discount = t->batch.discount;
    r->is_weight = t->batch.is_weight;
    // curiosity's target: the portfolio vector one step after s_t and whether that step ended the episode
    if (t->curiosity) {
        r->portfolio_1 = t->curiosity->port1;
        r->done_1 = t->curiosity->done1;
    }
    return VP_OK;
}

/* The forward model of curiosity (curiosity.enabled), fed by the collector's policy steps. */
static vp_status curiosity_init(vp_trainer* t) {
    const vp_config* cfg = &t->cfg;
    const vp_learner* l = &t->learner;
    vp_curiosity_cfg cc;
    memset(&cc, 0, sizeof cc);
    cc.n_envs = cfg->env.n_envs;
    cc.batch = l->cfg.batch;
    cc.steps_per_iter = cfg->train.collect_steps;
    cc.enc_dim = t->collector.policy.enc_dim;
    cc.n_portfolio = VP_ENV_PORTFOLIO;
    cc.layout = vp_action_layout_env();
    cc.hidden = (int)cfg->curiosity.hidden;
    cc.eta = (float)cfg->curiosity.eta;
    cc.adamw = l->cfg.adamw;
    cc.adamw.lr = (float)cfg->curiosity.lr;
    cc.adamw.weight_decay = 0.0f;
    // the network's GEMM arithmetic, TF32 where it trains in BF16 (the model's tensors are f32)
    cc.precision = t->parts.precision == VP_PREC_BF16 ? VP_PREC_TF32 : t->parts.precision;
    cc.seed = l->cfg.seed;
    t->curiosity = (vp_curiosity*)calloc(1, sizeof *t->curiosity);
    VP_REQUIRE(t->curiosity != NULL, VP_ERR_OOM, "curiosity: out of host memory");
    vp_status s = vp_curiosity_init(t->curiosity, t->backend, &cc, &t->collector.policy);
    if (s != VP_OK) {
        free(t->curiosity);
        t->curiosity = NULL;
        return s;
    }
    t->collector.curiosity = t->curiosity;
    return VP_OK;
}

/* Rank k's key of a stream family: splitmix64 of the single process's key and k (k > 0). */
static uint64_t rank_seed(uint64_t seed, int k) {
    uint64_t z = seed + (uint64_t)k * 0xD1B54A32D192ED03ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* The parts of rank `rank` of `ranks`: those of the rank's share of the config (envs, replay
 * slots, batch rows), the rank's replay and exploration keys. */
static vp_status rank_parts(vp_trainer* t, const vp_config* cfg, const vp_train_data* d, int rank, int ranks) {
    const char* fn = "vp_trainer_init";
    if (ranks == 1) return vp_train_parts_make(cfg, d->n_features, &t->parts);
    VP_REQUIRE(cfg->env.n_envs % ranks == 0 && cfg->learn.batch % ranks == 0, VP_ERR_INVALID_ARG,
               "%s: env.n_envs = %lld and learn.batch = %lld must both be divisible by the %d ranks", fn,
               (long long)cfg->env.n_envs, (long long)cfg->learn.batch, ranks);
    VP_REQUIRE(!cfg->curiosity.enabled, VP_ERR_UNSUPPORTED,
               "%s: curiosity.enabled: the forward model learns each rank's own batch and would drift apart across "
               "the ranks; it runs on one rank only (%d ranks here)", fn, ranks);
    vp_config share = *cfg;
    share.env.n_envs = cfg->env.n_envs / ranks;
    share.learn.batch = cfg->learn.batch / ranks;
    share.replay.capacity = cfg->replay.capacity / ranks;
    share.replay.warmup = (cfg->replay.warmup + ranks - 1) / ranks;
    vp_status s = vp_train_parts_make(&share, d->n_features, &t->parts);
    if (s != VP_OK)
        return vp_error_context(s, "rank %d of %d: its share of %lld envs, a replay shard of %lld slots, %lld rows per "
                                "step", rank, ranks, (long long)share.env.n_envs, (long long)share.replay.capacity,
                                (long long)share.learn.batch);
    if (rank > 0) {
        t->parts.replay.seed = rank_seed(t->parts.replay.seed, rank);
        t->parts.collect.seed = rank_seed(t->parts.collect.seed, rank);
    }
    return VP_OK;
}

vp_status vp_trainer_init(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    return vp_trainer_init_rank(t, b, cfg, d, 0, 1);
}

vp_status vp_trainer_init_rank(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d, int rank,
                               int ranks) {
    VP_REQUIRE(t != NULL && b != NULL && cfg != NULL && d != NULL, VP_ERR_INVALID_ARG,
               "vp_trainer_init: trainer, backend, config or data is NULL");
    VP_REQUIRE(ranks >= 1 && rank >= 0 && rank < ranks, VP_ERR_INVALID_ARG, "vp_trainer_init: rank %d of %d", rank,
               ranks);
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->backend = b;
    t->data = d;
    t->best_val_sharpe = NAN;
    t->best_iteration = -1;
    t->rank = rank;
    t->ranks = ranks;
    VP_REQUIRE(!(cfg->her.enabled && cfg->curiosity.enabled), VP_ERR_UNSUPPORTED,
               "her.enabled with curiosity.enabled: the forward model predicts the env's portfolio vector, not a "
               "goal-conditioned one; turn one of them off");
    VP_TRY(rank_parts(t, cfg, d, rank, ranks));
    t->parts.replay.intrinsic = cfg->curiosity.enabled ? 1 : 0;

    // Data and envs, replay, learner, collector, batch, validation: each on the backend.
    vp_status s = vp_algo_features_upload(b, d, &t->feat_buf, &t->features);
    if (s == VP_OK) s = envs_init(t);
    if (s == VP_OK) s = vp_replay_init(&t->replay, b, &t->parts.replay);
    if (s == VP_OK) s = vp_learner_init(&t->learner, b, &t->parts.learner);
    if (s == VP_OK) t->learner.model.precision = t->parts.precision;
    {
        vp_policy pol = vp_model_policy(&t->learner.model, &t->learner.model.params);
        pol.goal = (float)cfg->her.goal; /* a goal-conditioned network (her.enabled) collects towards her.goal */
        if (s == VP_OK) s = vp_collector_init(&t->collector, b, &pol, &t->features, &t->env, t->replay, &t->parts.collect);
    }
    // the signal bus's epsilon rule and Kelly cap: factors the collection and its env read on the device
    if (s == VP_OK && t->parts.learner.signals.adapt_epsilon)
        t->collector.eps_scale = vp_learner_control(&t->learner, VP_CTL_EPS_SCALE);
    if (s == VP_OK && t->parts.learner.signals.kelly)
        t->env.size_cap = (const float*)vp_learner_control(&t->learner, VP_CTL_KELLY_CAP).data;
    if (s == VP_OK && cfg->curiosity.enabled) s = curiosity_init(t);
    if (s == VP_OK) s = batch_init(t);
    if (s == VP_OK) s = vp_validator_init_run(&t->val, b, &t->features, d, &t->parts.instrument, cfg);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s != VP_OK) {
        vp_trainer_free(t);
        return vp_error_context(s, "setting up training");
    }
    return VP_OK;
}

void vp_trainer_free(vp_trainer* t) {
    if (!t) return;
    vp_graph_free(t->graph);
    vp_validator_free(t->val);
    vp_curiosity_free(t->curiosity);
    free(t->curiosity);
    vp_collector_free(&t->collector);
    if (t->backend) vp_arena_free(&t->arena);
    vp_learner_free(&t->learner);
    vp_replay_free(t->replay);
    vp_env_free(&t->env);
    vp_env_market_free(&t->market);
    if (t->backend) vp_buffer_free(t->backend, &t->feat_buf);
    memset(t, 0, sizeof *t);
}
