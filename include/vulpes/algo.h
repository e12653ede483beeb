/* vulpes: the algorithm table — what `vulpes train`, walk-forward and a search drive.
 *
 * An algorithm is a table of functions (vp_algo_ops) over an instance (vp_algo): create it
 * on a run's config, backend and data, warm it up, run iterations, read generic key/value
 * statistics for the logs, score its parameters on the validation span, keep the best,
 * save and load checkpoints, and hand out its greedy policy (vulpes/policy.h) for the
 * rollouts of validation, the test span and backtests. The training loop (vp_train_run),
 * walk-forward and the backtest job use only these functions and the instance's generic
 * fields; what an algorithm keeps beyond them is its own (the DQN entry's: vp_trainer,
 * vulpes/dqn.h).
 *
 * The algorithms are one list (src/learn/algo.c); config key train.algo names one ("dqn" by
 * default). docs/architecture.md ("Add an algorithm") lists the files a new entry touches. */
#ifndef VULPES_ALGO_H
#define VULPES_ALGO_H

#include <stdint.h>

#include "vulpes/policy.h"
#include "vulpes/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- key/value statistics --------------------------------------------------------------------- */

/* Most entries of a key/value list. */
#define VP_KV_MAX 128

/* One statistic: a name (static text), a value, and whether it is a count. */
typedef struct vp_kv {
    const char* key; /* "loss" */
    double value;    /* the value (a count: an integer below 2^53) */
    int integer;     /* 1: written as an integer */
} vp_kv;

/* An ordered list of statistics (written to metrics.jsonl in this order). */
typedef struct vp_kv_list {
    int n;                  /* entries used */
    vp_kv items[VP_KV_MAX]; /* [n] */
} vp_kv_list;

/* Appends key = value (a count when `integer`); beyond VP_KV_MAX entries it is dropped. */
void vp_kv_add(vp_kv_list* l, const char* key, double value, int integer);

/* The value of `key` in l, NaN when absent. */
double vp_kv_get(const vp_kv_list* l, const char* key);

/* ---- the table -------------------------------------------------------------------------------- */

/* What an instance is made for. */
typedef enum vp_algo_use {
    VP_ALGO_TRAIN = 0, /* everything training needs */
    VP_ALGO_INFER,     /* the policy only (parameters from a checkpoint): backtests */
    VP_ALGO_USE_COUNT
} vp_algo_use;

/* Which parameters of an instance. */
typedef enum vp_algo_params {
    VP_PARAMS_ONLINE = 0, /* the ones being trained (an inference instance's only ones) */
    VP_PARAMS_BEST,       /* the best validation's so far (training only) */
    VP_PARAMS_COUNT
} vp_algo_params;

typedef struct vp_algo vp_algo;

/* The functions of an algorithm. Each takes the instance; a function an inference instance
 * lacks is refused by the vp_algo_* wrappers, which also check the arguments. */
typedef struct vp_algo_ops {
    const char* name; /* the value of train.algo: "dqn" */
    /* Makes a->impl for a->use from a->cfg, a->backend and a->data, and sets a->features,
     * a->instrument and a->env; on failure frees what it made. */
    vp_status (*create)(vp_algo* a);
    /* Frees a->impl (never NULL when called). */
    void (*free)(vp_algo* a);
    /* The collection before the first iteration (random actions); advances a->count. */
    vp_status (*warmup)(vp_algo* a);
    /* n iterations (asynchronous on CUDA); advances a->count. */
    vp_status (*iterate)(vp_algo* a, int64_t n);
    /* Waits for the backend and appends the statistics of the last iteration to *out (the
     * "train" event's fields after the counters). */
    vp_status (*stats)(vp_algo* a, vp_kv_list* out);
    /* Appends what the run is made of to *out (the "run" event's fields: sizes, envs). */
    void (*info)(const vp_algo* a, vp_kv_list* out);
    /* Scores parameters `which` on the validation span into *out. */
    vp_status (*validate)(vp_algo* a, vp_algo_params which, vp_eval_result* out);
    /* Copies the online parameters into the best ones. */
    vp_status (*keep_best)(vp_algo* a);
    /* Writes a checkpoint of `kind` to path atomically (the counters and a->best_* with it). */
    vp_status (*save)(vp_algo* a, const char* path, vp_ckpt_kind kind);
    /* Restores a VP_CKPT_RESUME checkpoint: state, a->count and a->best_*; the file's config
     * must equal a->cfg but for the keys a resume may change (vp_trainer_load). */
    vp_status (*load)(vp_algo* a, const char* path);
    /* Loads the parameters of a checkpoint of either kind into parameters `which`. */
    vp_status (*load_params)(vp_algo* a, const char* path, vp_algo_params which);
    /* Starts training from the parameters of checkpoint path (online, best, and any copy the
     * algorithm keeps of them, such as a target network). */
    vp_status (*warm_start)(vp_algo* a, const char* path);
    /* The greedy policy of parameters `which` (valid while the instance lives). */
    vp_policy (*policy)(const vp_algo* a, vp_algo_params which);
    /* The line shown before a run's first iteration into buf[n]: what its warm-up does (a fresh
     * run) or what a resume loads; NULL: vp_algo_start_note's generic line. */
    void (*start_note)(const vp_algo* a, int resume, char* buf, size_t n);
} vp_algo_ops;

/* One algorithm instance: its functions, what it was made from, and the generic state the
 * training loop reads. */
struct vp_algo {
    const vp_algo_ops* ops;       /* the functions */
    vp_algo_use use;              /* training or inference */
    vp_config cfg;                /* resolved configuration */
    vp_backend* backend;          /* where it computes */
    const vp_train_data* data;    /* bars, features, split (caller-owned, outlives the instance) */
    void* impl;                   /* the algorithm's own state */
    const vp_tensor* features;    /* [T, F] f32 the feature matrix in backend memory */
    vp_instrument instrument;     /* the contract and costs (instrument.*) */
    vp_env_config env;            /* the environment's settings (env.*) */
    vp_train_counters count;      /* counters, kept by the algorithm */
    double best_val_sharpe;       /* best validation Sharpe (NaN: none), kept by the loop, checkpointed */
    int64_t best_iteration;       /* its iteration (-1: none) */
    int rank;                     /* this rank of a data-parallel run (0: the single process) */
    int ranks;                    /* ranks of the run (1: the single process; vp_algo_create_rank) */
};

/* The algorithm named `name`, into *out; an unknown name fails listing the known ones. */
vp_status vp_algo_find(const char* name, const vp_algo_ops** out);

/* Number of algorithms in the table. */
int vp_algo_count(void);

/* Algorithm i of the table (0 <= i < vp_algo_count()), NULL out of range. */
const vp_algo_ops* vp_algo_at(int i);

/* Attaches a data-parallel run's communicator to a DQN training instance's learner
 * (vp_learner_set_comm: one rank steps exactly as without; more ranks average the gradient);
 * the instance must have been made for the communicator's rank and size
 * (vp_algo_create_rank). Any other algorithm is refused. */
vp_status vp_algo_set_comm(vp_algo* a, vp_comm* comm);

/* vp_algo_create for rank `rank` of `ranks` of a data-parallel run (docs/distributed.md): DQN
 * training only when ranks > 1 (each rank its share of the envs, replay and batch:
 * vp_trainer_init_rank); ranks 1 is vp_algo_create. */
vp_status vp_algo_create_rank(vp_algo* a, const vp_config* cfg, vp_backend* b, const vp_train_data* d,
                              vp_algo_use use, int rank, int ranks);

/* Makes an instance of cfg->train.algo for `use` on backend b over data d (d outlives it).
 * Free with vp_algo_free (also after a failure). */
vp_status vp_algo_create(vp_algo* a, const vp_config* cfg, vp_backend* b, const vp_train_data* d, vp_algo_use use);

/* Frees an instance (a zeroed one is a no-op). */
void vp_algo_free(vp_algo* a);

/* ops->warmup, training instances only. */
vp_status vp_algo_warmup(vp_algo* a);

/* ops->iterate (n >= 0), training instances only. */
vp_status vp_algo_iterate(vp_algo* a, int64_t n);

/* ops->stats into *out (emptied first), training instances only. */
vp_status vp_algo_stats(vp_algo* a, vp_kv_list* out);

/* ops->info into *out (emptied first). */
vp_status vp_algo_info(const vp_algo* a, vp_kv_list* out);

/* The line before a run's first iteration into buf[n] (ops->start_note, or generic: a resume
 * loads last.safetensors; a fresh run shows nothing, buf ""). */
void vp_algo_start_note(const vp_algo* a, int resume, char* buf, size_t n);

/* ops->validate, training instances only. */
vp_status vp_algo_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out);

/* ops->keep_best, training instances only. */
vp_status vp_algo_keep_best(vp_algo* a);

/* ops->save, training instances only. */
vp_status vp_algo_save(vp_algo* a, const char* path, vp_ckpt_kind kind);

/* ops->load, training instances only. */
vp_status vp_algo_load(vp_algo* a, const char* path);

/* ops->load_params (VP_PARAMS_BEST: training instances only). */
vp_status vp_algo_load_params(vp_algo* a, const char* path, vp_algo_params which);

/* ops->warm_start, training instances only. */
vp_status vp_algo_warm_start(vp_algo* a, const char* path);

/* ops->policy of `which` into *out (VP_PARAMS_BEST: training instances only). */
vp_status vp_algo_policy(const vp_algo* a, vp_algo_params which, vp_policy* out);

/* The parameters a finished run is tested with: the best ones when a validation scored,
 * else the online (final) ones. */
vp_algo_params vp_algo_selected(const vp_algo* a);

/* Puts data's feature matrix [T, F] where backend b reads it: in place on the CPU, else a
 * copy in *buf (free with vp_buffer_free); *out views it. For algorithms' create. */
vp_status vp_algo_features_upload(vp_backend* b, const vp_train_data* d, vp_buffer* buf, vp_tensor* out);

/* The training span's market *market over data d (features [T, F] on backend b) and n_envs
 * environments *env on it with p's instrument and env settings; a failure names
 * env.episode_bars against the span. For algorithms' create (free both also after a failure). */
vp_status vp_algo_train_envs_init(vp_backend* b, const vp_train_data* d, const vp_tensor* features,
                                  const vp_train_parts* p, int64_t n_envs, vp_env_market* market, vp_env* env);

/* Sets a->features to `features` (the instance's matrix, which must outlive a) and a->instrument
 * and a->env to p's settings. For algorithms' create. */
void vp_algo_bind(vp_algo* a, const vp_tensor* features, const vp_train_parts* p);

/* ops->warmup of an algorithm that collects nothing before its first iteration: does nothing. */
vp_status vp_algo_no_warmup(vp_algo* a);

/* ---- the entries ------------------------------------------------------------------------------ */

/* The algorithms, in table order: X(name) for each, its table vp_<name>_algo. dqn: the DQN
 * agent (C51 + IQN heads on a Mamba2 encoder, prioritised replay; src/learn/dqn_*.c); ppo:
 * PPO, an actor-critic on the same encoder (src/learn/ppo_*.c, docs/ppo.md); iql: IQL, offline
 * from a recorded dataset (src/learn/iql_*.c, docs/iql.md); dt: the Decision Transformer, offline
 * from a recorded dataset (src/learn/dt_*.c, docs/dt.md). */
#define VP_ALGOS(X) X(dqn) X(ppo) X(iql) X(dt)

#define VP_ALGO_EXTERN_(name) extern const vp_algo_ops vp_##name##_algo;
VP_ALGOS(VP_ALGO_EXTERN_)
#undef VP_ALGO_EXTERN_

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ALGO_H */
