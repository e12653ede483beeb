/* The DQN trainer's set-up: the feature matrix on the backend, the training market and envs,
 * the replay ring, the learner, the collector, the batch and the validation backtest. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/dqn.h"
#include "vulpes/ops.h"

/* The training span's market and its n_envs environments. */
static vp_status envs_init(vp_trainer* t) {
    return vp_algo_train_envs_init(t->backend, t->data, &t->features, &t->parts, t->cfg.env.n_envs, &t->market,
                                   &t->env);
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

vp_status vp_trainer_init(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d) {
    VP_REQUIRE(t != NULL && b != NULL && cfg != NULL && d != NULL, VP_ERR_INVALID_ARG,
               "vp_trainer_init: trainer, backend, config or data is NULL");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->backend = b;
    t->data = d;
    t->best_val_sharpe = NAN;
    t->best_iteration = -1;
    VP_REQUIRE(!(cfg->her.enabled && cfg->curiosity.enabled), VP_ERR_UNSUPPORTED,
               "her.enabled with curiosity.enabled: the forward model predicts the env's portfolio vector, not a "
               "goal-conditioned one; turn one of them off");
    VP_TRY(vp_train_parts_make(cfg, d->n_features, &t->parts));
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
