/* The IQL trainer's set-up: its settings from the config, the dataset checked against the run's
 * data and uploaded once, the feature matrix on the backend, the network and its target, the
 * batch buffers, the optimiser state and the validation backtest. */
#include <float.h>
#include <math.h>
#include <string.h>

#include "learn/iql_impl.h"
#include "learn/train_checks.h"
#include "vulpes/algo.h"
#include "vulpes/ops.h"

vp_status vp_iql_cfg_make(const vp_config* cfg, vp_iql_cfg* out) {
    VP_REQUIRE(cfg != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_iql_cfg_make: NULL argument");
    memset(out, 0, sizeof *out);
    const vp_config_iql* q = &cfg->iql;
    VP_REQUIRE(q->dataset[0] != '\0', VP_ERR_INVALID_ARG,
               "train.algo = iql learns from a recorded dataset: set iql.dataset to the file `vulpes record` wrote "
               "on the training span");
    VP_REQUIRE(cfg->train.train_steps >= 1, VP_ERR_INVALID_ARG,
               "train.algo = iql: train.train_steps = 0 updates per iteration would train nothing");
    // the DQN learner's switches: IQL has no C51 support, replay or collection to apply them to
    const char* dqn_only = vp_train_dqn_switch(cfg);
    VP_REQUIRE(dqn_only == NULL, VP_ERR_UNSUPPORTED,
               "train.algo = iql: %s is a switch of the DQN learner (docs/modules.md); IQL does not apply it, so "
               "turn it off", dqn_only);
    out->batch = q->batch > 0 ? q->batch : cfg->learn.batch;
    out->updates = cfg->train.train_steps;
    out->expectile = (float)q->expectile;
    out->beta = (float)q->beta;
    out->adv_clip = (float)q->adv_clip;
    out->tau_polyak = (float)q->tau_polyak;
    out->gamma = (float)cfg->learn.gamma;
    out->adamw.lr = (float)cfg->learn.lr;
    out->adamw.beta1 = (float)cfg->learn.beta1;
    out->adamw.beta2 = (float)cfg->learn.beta2;
    out->adamw.eps = (float)cfg->learn.eps;
    out->adamw.weight_decay = (float)cfg->learn.weight_decay;
    out->clip_norm = cfg->learn.clip_norm > 0.0 ? (float)cfg->learn.clip_norm : FLT_MAX; /* 0: no clip */
    return VP_OK;
}

/* The dataset against the run: its bars (vp_offline_check_data, first), then a span inside the
 * training span, the portfolio width, and sizes that index in 32 bits. */
static vp_status check_dataset(const vp_iql_trainer* t, const vp_offline_data* ds) {
    const char* where = "iql.dataset";
    VP_TRY(vp_offline_check_data(ds, t->data, where));
    VP_TRY(vp_offline_check(ds, where));
    const vp_span tr = t->data->split.train, sp = ds->span;
    VP_REQUIRE(sp.begin >= tr.begin && sp.end <= tr.end, VP_ERR_INVALID_ARG,
               "%s: recorded on bars [%lld, %lld), which leave the run's training span [%lld, %lld); a dataset of "
               "the validation or test span would let training see the bars it is scored on (record it on the "
               "training span)", where, (long long)sp.begin, (long long)sp.end, (long long)tr.begin,
               (long long)tr.end);
    VP_REQUIRE(ds->n_portfolio == VP_ENV_PORTFOLIO, VP_ERR_SHAPE, "%s: %d portfolio columns, the network reads %d",
               where, ds->n_portfolio, VP_ENV_PORTFOLIO);
    VP_REQUIRE(ds->steps >= 1 && ds->n_envs >= 1 && ds->n_envs <= INT32_MAX / VP_ENV_PORTFOLIO &&
                   ds->steps + 1 <= INT32_MAX / (ds->n_envs * VP_ENV_PORTFOLIO),
               VP_ERR_SHAPE, "%s: %lld steps of %lld envs: the rows must index in 31 bits", where,
               (long long)ds->steps, (long long)ds->n_envs);
    return VP_OK;
}

/* One f32 or i32 tensor of the given shape from the trainer's arena. */
static vp_status take(vp_iql_trainer* t, const char* name, vp_dtype dt, int64_t rows, int64_t cols, vp_tensor* out) {
    const int64_t sh[2] = {rows, cols};
    return vp_arena_tensor(&t->arena, name, dt, cols > 0 ? 2 : 1, sh, out, NULL);
}

/* The dataset's arrays into their backend tensors (one upload each). */
static vp_status upload_dataset(vp_iql_trainer* t, const vp_offline_data* ds) {
    const size_t T = (size_t)ds->steps, E = (size_t)ds->n_envs, P = VP_ENV_PORTFOLIO, NB = VP_ENV_BRANCHES;
    VP_TRY(vp_upload(t->backend, &t->d_bar, ds->bar, (T + 1) * E * sizeof(int32_t)));
    VP_TRY(vp_upload(t->backend, &t->d_port, ds->portfolio, (T + 1) * E * P * sizeof(float)));
    VP_TRY(vp_upload(t->backend, &t->d_act, ds->action, T * E * NB * sizeof(int32_t)));
    VP_TRY(vp_upload(t->backend, &t->d_reward, ds->reward, T * E * sizeof(float)));
    return vp_upload(t->backend, &t->d_done, ds->done, T * E * sizeof(float));
}

/* Every buffer of the trainer in one arena. */
static vp_status buffers_init(vp_iql_trainer* t, const vp_offline_data* ds) {
    const int64_t T = ds->steps, E = ds->n_envs, B = t->ic.batch;
    const int64_t W = t->net.n_weights, P = VP_ENV_PORTFOLIO, NB = VP_ENV_BRANCHES;
    const int64_t A = vp_model_cfg_actions(&t->net.enc.cfg);
    const int64_t words = 4 * W + 16 + (T + 1) * E * (1 + P) + T * E * (NB + 2) + B * (2 + 2 * P + NB + 2) +
                          B * (VP_IQL_T_COUNT + 3 * A + 1) + VP_IQL_STAT_COUNT;
    VP_TRY(vp_arena_init(&t->arena, t->backend, vp_backend_native_mem(t->backend), (size_t)words * 4 + 40 * 256));
    VP_TRY(take(t, "iql.target", VP_F32, t->net.n_target, 0, &t->target));
    VP_TRY(take(t, "iql.adam_m", VP_F32, W, 0, &t->adam_m));
    VP_TRY(take(t, "iql.adam_v", VP_F32, W, 0, &t->adam_v));
    VP_TRY(take(t, "iql.best_params", VP_F32, W, 0, &t->best_params));
    VP_TRY(take(t, "iql.adam_step", VP_I32, 1, 0, &t->adam_step));
    VP_TRY(take(t, "iql.grad_norm", VP_F32, 1, 0, &t->grad_norm));
    VP_TRY(take(t, "iql.clip_coef", VP_F32, 1, 0, &t->clip_coef));
    VP_TRY(take(t, "iql.counters", VP_I32, 2, 0, &t->ctr));
    VP_TRY(take(t, "iql.d_bar", VP_I32, (T + 1) * E, 0, &t->d_bar));
    VP_TRY(take(t, "iql.d_port", VP_F32, (T + 1) * E, P, &t->d_port));
    VP_TRY(take(t, "iql.d_act", VP_I32, T * E, NB, &t->d_act));
    VP_TRY(take(t, "iql.d_reward", VP_F32, T * E, 0, &t->d_reward));
    VP_TRY(take(t, "iql.d_done", VP_F32, T * E, 0, &t->d_done));
    VP_TRY(take(t, "iql.m_bar", VP_I32, B, 0, &t->m_bar));
    VP_TRY(take(t, "iql.m_port", VP_F32, B, P, &t->m_port));
    VP_TRY(take(t, "iql.m_act", VP_I32, B, NB, &t->m_act));
    VP_TRY(take(t, "iql.m_reward", VP_F32, B, 0, &t->m_reward));
    VP_TRY(take(t, "iql.m_done", VP_F32, B, 0, &t->m_done));
    VP_TRY(take(t, "iql.m_bar1", VP_I32, B, 0, &t->m_bar1));
    VP_TRY(take(t, "iql.m_port1", VP_F32, B, P, &t->m_port1));
    VP_TRY(take(t, "iql.terms", VP_F32, B, VP_IQL_T_COUNT, &t->terms));
    VP_TRY(take(t, "iql.d_q1", VP_F32, B, A, &t->d_q1));
    VP_TRY(take(t, "iql.d_q2", VP_F32, B, A, &t->d_q2));
    VP_TRY(take(t, "iql.d_logits", VP_F32, B, A, &t->d_logits));
    VP_TRY(take(t, "iql.d_v", VP_F32, B, 0, &t->d_v));
    VP_TRY(take(t, "iql.stats", VP_F32, VP_IQL_STAT_COUNT, 0, &t->stats));
    VP_TRY(upload_dataset(t, ds));
    // zero moments, step and counter; the target and the best parameters start as the initial ones
    VP_TRY(vp_fill(t->backend, &t->adam_m, 0.0f));
    VP_TRY(vp_fill(t->backend, &t->adam_v, 0.0f));
    VP_TRY(vp_fill_i32(t->backend, &t->adam_step, 0));
    VP_TRY(vp_fill_i32(t->backend, &t->ctr, 0));
    VP_TRY(vp_fill(t->backend, &t->stats, NAN));
    VP_TRY(vp_fill(t->backend, &t->grad_norm, NAN));
    const vp_tensor q = vp_iql_q_range(&t->net, &t->net.params);
    VP_TRY(vp_copy(t->backend, &q, &t->target));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

vp_status vp_iql_trainer_init(vp_iql_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                              const vp_offline_data* ds) {
    VP_REQUIRE(t != NULL && b != NULL && cfg != NULL && d != NULL && ds != NULL, VP_ERR_INVALID_ARG,
               "vp_iql_trainer_init: trainer, backend, config, data or dataset is NULL");
    memset(t, 0, sizeof *t);
    t->cfg = *cfg;
    t->backend = b;
    t->data = d;
    VP_TRY(check_dataset(t, ds));
    VP_TRY(vp_train_parts_make(cfg, d->n_features, &t->parts));
    VP_TRY(vp_iql_cfg_make(cfg, &t->ic));
    t->steps = ds->steps;
    t->n_envs = ds->n_envs;
    t->ds_data = ds->data;
    memcpy(t->ds_behaviour, ds->behaviour, sizeof t->ds_behaviour);
    t->ds_behaviour[VP_OFFLINE_BEHAVIOUR_MAX - 1] = '\0';
    const int64_t B = t->ic.batch;

    // Data, network, buffers, activations, validation: each on the backend.
    vp_status s = vp_algo_features_upload(b, d, &t->feat_buf, &t->features);
    if (s == VP_OK) s = vp_iql_net_init(&t->net, b, &t->parts.learner.model, t->parts.learner.seed);
    if (s == VP_OK) t->net.enc.precision = t->parts.precision;
    if (s == VP_OK) s = buffers_init(t, ds);
    if (s == VP_OK) s = vp_iql_acts_init(&t->mb, &t->net, B, 1, 0);
    if (s == VP_OK) s = vp_iql_acts_init(&t->nx, &t->net, B, 0, 0);
    if (s == VP_OK) s = vp_validator_init_run(&t->val, b, &t->features, d, &t->parts.instrument, cfg);
    if (s == VP_OK) s = vp_backend_sync(b);
    if (s != VP_OK) {
        vp_iql_trainer_free(t);
        return vp_error_context(s, "setting up IQL training");
    }
    return VP_OK;
}

void vp_iql_trainer_free(vp_iql_trainer* t) {
    if (!t) return;
    vp_graph_free(t->g_all);
    vp_validator_free(t->val);
    vp_iql_acts_free(t->mb);
    vp_iql_acts_free(t->nx);
    if (t->backend) vp_arena_free(&t->arena);
    vp_iql_net_free(&t->net);
    if (t->backend) vp_buffer_free(t->backend, &t->feat_buf);
    memset(t, 0, sizeof *t);
}
