/* The algorithm table's "dqn" entry: a vp_trainer (vulpes/dqn.h) for training, or the bare
 * network and the feature matrix for inference, behind vp_algo_ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/learner_vsn.h"
#include "learn/signal_log.h"
#include "vulpes/algo.h"
#include "vulpes/dqn.h"
#include "vulpes/ops.h"

/* The entry's state. */
typedef struct dqn {
    vp_trainer t;        /* training: everything */
    vp_train_parts parts; /* inference: the network's settings */
    vp_model model;       /* inference: the network */
    int model_on;         /* model is initialised */
    vp_buffer feat_buf;   /* inference: storage of `features` */
    vp_tensor features;   /* inference: [T, F] f32 backend memory */
} dqn;

static dqn* state(const vp_algo* a) { return (dqn*)a->impl; }

/* The network inference runs: the trainer's, or the bare one. */
static const vp_model* model_of(const vp_algo* a) {
    dqn* q = state(a);
    return a->use == VP_ALGO_TRAIN ? &q->t.learner.model : &q->model;
}

/* Parameters `which` of the instance. */
static vp_tensor* params_of(const vp_algo* a, vp_algo_params which) {
    dqn* q = state(a);
    if (a->use != VP_ALGO_TRAIN) return &q->model.params;
    return which == VP_PARAMS_BEST ? &q->t.best_params : &q->t.learner.model.params;
}

static void dqn_free(vp_algo* a) {
    dqn* q = state(a);
    vp_trainer_free(&q->t);
    if (q->model_on) vp_model_free(&q->model);
    if (q->feat_buf.dev) vp_buffer_free(a->backend, &q->feat_buf);
    free(q);
    a->impl = NULL;
}

/* Inference: the network of the config, its precision, and the features on the backend. */
static vp_status infer_init(vp_algo* a, dqn* q) {
    VP_TRY(vp_train_parts_make(&a->cfg, a->data->n_features, &q->parts));
    VP_TRY(vp_model_init(&q->model, a->backend, &q->parts.learner.model, q->parts.learner.seed));
    q->model_on = 1;
    q->model.precision = q->parts.precision;
    VP_TRY(vp_algo_features_upload(a->backend, a->data, &q->feat_buf, &q->features));
    a->features = &q->features;
    a->instrument = q->parts.instrument;
    a->env = q->parts.env;
    return VP_OK;
}

static vp_status dqn_create(vp_algo* a) {
    dqn* q = (dqn*)calloc(1, sizeof *q);
    VP_REQUIRE(q != NULL, VP_ERR_OOM, "dqn: out of host memory");
    a->impl = q;
    vp_status s = VP_OK;
    if (a->use == VP_ALGO_TRAIN) {
        s = vp_trainer_init_rank(&q->t, a->backend, &a->cfg, a->data, a->rank, a->ranks);
        a->features = &q->t.features;
        a->instrument = q->t.parts.instrument;
        a->env = q->t.parts.env;
        a->count = q->t.count;
    } else {
        s = infer_init(a, q);
    }
    if (s != VP_OK) dqn_free(a);
    return s;
}

static vp_status dqn_warmup(vp_algo* a) {
    vp_trainer* t = &state(a)->t;
    vp_status s = vp_trainer_warmup(t);
    a->count = t->count;
    return s;
}

static vp_status dqn_iterate(vp_algo* a, int64_t n) {
    vp_trainer* t = &state(a)->t;
    vp_status s = vp_trainer_iterate(t, n);
    a->count = t->count;
    return s;
}

static vp_status dqn_stats(vp_algo* a, vp_kv_list* out) {
    vp_train_stats st;
    VP_TRY(vp_trainer_stats(&state(a)->t, &st));
    vp_kv_add(out, "epsilon", st.epsilon, 0);
    vp_kv_add(out, "beta", st.beta, 0);
    vp_kv_add(out, "loss", st.learner[VP_STAT_LOSS], 0);
    vp_kv_add(out, "loss_c51", st.learner[VP_STAT_C51], 0);
    vp_kv_add(out, "loss_iqn", st.learner[VP_STAT_IQN], 0);
    vp_kv_add(out, "grad_norm", st.learner[VP_STAT_GRAD_NORM], 0);
    vp_kv_add(out, "q_mean", st.learner[VP_STAT_Q_MEAN], 0);
    vp_kv_add(out, "q_max", st.learner[VP_STAT_Q_MAX], 0);
    const float nan_steps = st.learner[VP_STAT_NAN_STEPS];
    // a count as an integer only when it is one that an int64 holds; else the raw value
    const int whole = nan_steps >= 0.0f && nan_steps < 9.2e18f;
    vp_kv_add(out, "nan_steps", whole ? (double)(int64_t)nan_steps : (double)nan_steps, whole);
    vp_kv_add(out, "replay_size", (double)st.replay_size, 1);
    vp_learner_signal_stats(&state(a)->t.learner, state(a)->t.count.learner_steps, out);
    if (st.curious) {
        vp_kv_add(out, "curiosity_reward", st.curiosity[VP_CUR_STAT_REWARD], 0);
        vp_kv_add(out, "curiosity_loss", st.curiosity[VP_CUR_STAT_LOSS], 0);
    }
    return vp_learner_selection_stats(&state(a)->t.learner, state(a)->t.count.learner_steps, out);
}

static void dqn_info(const vp_algo* a, vp_kv_list* out) {
    vp_kv_add(out, "parameters", (double)model_of(a)->n_weights, 1);
    if (a->use != VP_ALGO_TRAIN) return;
    const vp_trainer* t = &state(a)->t;
    // the run's envs (a data-parallel rank steps its share of them)
    vp_kv_add(out, "n_envs", (double)t->cfg.env.n_envs, 1);
    vp_kv_add(out, "warmup_env_steps", (double)(t->count.warmup_steps * t->cfg.env.n_envs), 1);
}

static vp_status dqn_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out) {
    return vp_trainer_validate(&state(a)->t, which == VP_PARAMS_BEST ? &state(a)->t.best_params : NULL, out);
}

static vp_status dqn_keep_best(vp_algo* a) {
    vp_trainer* t = &state(a)->t;
    return vp_copy(t->backend, &t->learner.model.params, &t->best_params);
}

static vp_status dqn_save(vp_algo* a, const char* path, vp_ckpt_kind kind) {
    vp_trainer* t = &state(a)->t;
    t->best_val_sharpe = a->best_val_sharpe;
    t->best_iteration = a->best_iteration;
    return vp_trainer_save(t, path, kind);
}

static vp_status dqn_load(vp_algo* a, const char* path) {
    vp_trainer* t = &state(a)->t;
    VP_TRY(vp_trainer_load(t, path));
    a->count = t->count;
    a->best_val_sharpe = t->best_val_sharpe;
    a->best_iteration = t->best_iteration;
    return VP_OK;
}

static vp_status dqn_load_params(vp_algo* a, const char* path, vp_algo_params which) {
    return vp_dqn_read_params(a->backend, model_of(a), path, params_of(a, which));
}

static vp_status dqn_warm_start(vp_algo* a, const char* path) {
    // the checkpoint's parameters as online, target and best
    vp_trainer* t = &state(a)->t;
    VP_TRY(vp_trainer_load_params(t, path, &t->learner.model.params));
    VP_TRY(vp_learner_sync_target(&t->learner));
    return vp_copy(t->backend, &t->learner.model.params, &t->best_params);
}

static vp_policy dqn_policy(const vp_algo* a, vp_algo_params which) {
    vp_policy p = vp_model_rollout_policy(model_of(a), params_of(a, which));
    p.goal = (float)a->cfg.her.eval_goal; /* a goal-conditioned network acts towards her.eval_goal */
    return p;
}

/* The warm-up fills the replay ring with random actions; a resume loads it back. */
static void dqn_start_note(const vp_algo* a, int resume, char* buf, size_t n) {
    const vp_config* cfg = &a->cfg;
    if (resume && a->ranks > 1) {
        snprintf(buf, n, "resuming toward iteration %lld on %d ranks: loading last.safetensors, refilling each rank's "
                 "replay shard...", (long long)cfg->train.iterations, a->ranks);
        return;
    }
    if (resume) {
        snprintf(buf, n, "resuming toward iteration %lld: loading last.safetensors (the replay buffer included)...",
                 (long long)cfg->train.iterations);
        return;
    }
    const int64_t envs = cfg->env.n_envs, steps = (cfg->replay.warmup + envs - 1) / envs;
    snprintf(buf, n, "warming up: filling the replay buffer with %lld %s (%lld collection %s of %lld %s, random "
             "actions)...", (long long)cfg->replay.warmup, vp_plural(cfg->replay.warmup, "transition", "transitions"),
             (long long)steps, vp_plural(steps, "step", "steps"), (long long)envs, vp_plural(envs, "env", "envs"));
}

vp_status vp_dqn_algo_set_comm(vp_algo* a, vp_comm* comm) {
    VP_REQUIRE(a != NULL && a->ops == &vp_dqn_algo && a->impl != NULL && a->use == VP_ALGO_TRAIN, VP_ERR_INVALID_ARG,
               "vp_dqn_algo_set_comm: not a DQN training instance");
    return vp_learner_set_comm(&state(a)->t.learner, comm);
}

const vp_algo_ops vp_dqn_algo = {
    "dqn",         dqn_create,   dqn_free,      dqn_warmup, dqn_iterate,     dqn_stats,      dqn_info,
    dqn_validate,  dqn_keep_best, dqn_save,     dqn_load,   dqn_load_params, dqn_warm_start, dqn_policy,
    dqn_start_note,
};
