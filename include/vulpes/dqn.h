/* vulpes: the DQN trainer — the state behind the algorithm table's "dqn" entry (vp_dqn_algo,
 * vulpes/algo.h), and what benchmarks and tests drive directly.
 *
 * One iteration = `collect_steps` collection steps (vp_collector_collect: the span encoded
 * once where that is fewer rows than step by step, docs/collect.md), then
 * `train_steps` learner steps (replay sample, tau draws, vp_learner_step, priority update;
 * the learner does the Polyak update). The iteration is ops only: on CUDA it is captured
 * once as a graph and replayed, on the CPU the same body runs each time; nothing is
 * copied, allocated or synchronised inside it (vp_backend_counters proves it). Epsilon
 * and beta follow counters kept in backend memory that the ops themselves advance.
 * last.safetensors holds parameters, target, AdamW moments, counters, the env state, the
 * replay ring and, with curiosity, the forward model's state. */
#ifndef VULPES_DQN_H
#define VULPES_DQN_H

#include "vulpes/curiosity.h"
#include "vulpes/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Statistics read at a log point (after a wait for the backend). */
typedef struct vp_train_stats {
    float learner[VP_STAT_COUNT]; /* the learner's statistics block (vp_stat) */
    float epsilon;                /* exploration rate of the next collection step */
    float beta;                   /* PER beta of the last sample */
    int64_t replay_size;          /* transitions in the ring */
    int curious;                  /* 1 when the run has curiosity (the next field is set) */
    float curiosity[VP_CUR_STAT_COUNT]; /* its statistics block (vp_curiosity_stat) */
} vp_train_stats;

/* Everything one DQN run trains with. */
typedef struct vp_trainer {
    vp_config cfg;               /* resolved configuration */
    vp_train_parts parts;        /* what cfg makes */
    vp_backend* backend;         /* where it runs */
    const vp_train_data* data;   /* bars, features, split (caller-owned, outlives the trainer) */
    vp_buffer feat_buf;          /* storage of `features` */
    vp_tensor features;          /* [T, F] f32 backend memory */
    vp_env_market market;        /* the training span */
    vp_env env;                  /* n_envs training envs */
    vp_replay* replay;           /* the ring */
    vp_learner learner;          /* online, target, optimiser */
    vp_collector collector;      /* envs <-> network */
    vp_curiosity* curiosity;     /* the forward model of the intrinsic reward (NULL: curiosity.enabled false) */
    vp_batch batch;              /* the learner's batch tensors */
    vp_replay_batch rbatch;      /* the same tensors as the replay writes them, plus indices */
    vp_arena arena;              /* indices, priorities, best parameters */
    vp_tensor indices;           /* [B] i32 sampled slots */
    vp_tensor priorities;        /* [B] f32 per-sample C51 loss */
    vp_tensor best_params;       /* [n_weights] parameters of the best validation so far */
    vp_validator* val;           /* the validation span's backtest */
    vp_graph* graph;             /* one iteration (captured at the first vp_trainer_iterate) */
    vp_train_counters count;     /* host counters */
    double best_val_sharpe;      /* best validation Sharpe so far (NaN: none yet) */
    int64_t best_iteration;      /* iteration of the best validation (-1: none) */
    int rank;                    /* this rank of a data-parallel run (0 for the single process) */
    int ranks;                   /* ranks of the run (1: the single process) */
} vp_trainer;

/* Builds every part of a run from cfg and the prepared data on backend b. */
vp_status vp_trainer_init(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d);

/* vp_trainer_init for rank `rank` of `ranks` of a data-parallel run (docs/distributed.md):
 * cfg is the run's (global) config, and t->cfg keeps it, so the counters, the warm-up step
 * count and the checkpoints are the run's; the rank's parts are its share: env.n_envs / ranks
 * envs, the global envs [rank E / ranks, (rank + 1) E / ranks) with their episode-start
 * streams, a replay shard of replay.capacity / ranks slots, learn.batch / ranks rows per
 * step. Rank 0 keeps the single process's replay and exploration keys; rank k > 0 derives its
 * own from them and k. ranks 1 is vp_trainer_init. Refused: env.n_envs or learn.batch not
 * divisible by ranks, curiosity.enabled with ranks > 1 (its forward model would learn each
 * rank's own batch apart). */
vp_status vp_trainer_init_rank(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d, int rank,
                               int ranks);

/* Frees everything the trainer holds (a zeroed trainer is a no-op). */
void vp_trainer_free(vp_trainer* t);

/* Collects replay.warmup transitions with random actions (ceil(warmup / n_envs) steps). */
vp_status vp_trainer_warmup(vp_trainer* t);

/* Runs n iterations (graph launches; asynchronous on CUDA). */
vp_status vp_trainer_iterate(vp_trainer* t, int64_t n);

/* The body of one iteration (what the graph holds); ops only. */
vp_status vp_trainer_iteration_body(vp_backend* b, void* trainer);

/* Waits for the backend and reads the statistics of the last iteration. */
vp_status vp_trainer_stats(vp_trainer* t, vp_train_stats* out);

/* Scores `params` (NULL: the online parameters) on the validation span. */
vp_status vp_trainer_validate(vp_trainer* t, const vp_tensor* params, vp_eval_result* out);

/* Writes a checkpoint of `kind` to `path` atomically (waits for the backend first). */
vp_status vp_trainer_save(vp_trainer* t, const char* path, vp_ckpt_kind kind);

/* Restores a VP_CKPT_RESUME checkpoint: every tensor, the counters and the best score. The
 * file's config must equal t->cfg except the keys a resume may change (train.iterations,
 * train.checkpoint_every, train.log_every, run.out, run.name, run.backend); the message
 * names the first key that differs. Every restored value is checked before it is used
 * (src/learn/dqn_check.c); after a refusal t's tensors may hold part of the file: free t or
 * load again before using it. */
vp_status vp_trainer_load(vp_trainer* t, const char* path);

/* Loads the parameters of a checkpoint of either kind into dst ([n_weights], backend memory). */
vp_status vp_trainer_load_params(vp_trainer* t, const char* path, vp_tensor* dst);

/* Reads the parameters of network m from checkpoint `path` into dst ([n_weights], b's memory). */
vp_status vp_dqn_read_params(vp_backend* b, const vp_model* m, const char* path, vp_tensor* dst);

struct vp_algo;

/* Attaches comm to the learner of DQN training instance a (vp_learner_set_comm; vp_algo_set_comm
 * calls it). */
vp_status vp_dqn_algo_set_comm(struct vp_algo* a, vp_comm* comm);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DQN_H */
