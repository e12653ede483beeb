/* vulpes: the training loop (SPEC sections 1, 5, 6 and 8) and `vulpes train`.
 *
 * One iteration = `collect_steps` collection steps (vp_collector_step), then
 * `train_steps` learner steps (replay sample, tau draws, vp_learner_step, priority update;
 * the learner does the Polyak update). The iteration is ops only: on CUDA it is captured
 * once as a graph and replayed, on the CPU the same body runs each time; nothing is
 * copied, allocated or synchronised inside it (vp_backend_counters proves it). Epsilon
 * and beta follow counters kept in backend memory that the ops themselves advance.
 *
 * Every `eval_every` iterations a segment-parallel greedy backtest of the validation span
 * scores the network (Sharpe of the stitched per-bar returns, empyrical definition); the
 * best parameters are kept and written to best.safetensors beside last.safetensors, which
 * holds everything a resume needs (parameters, target, AdamW moments, counters, the env
 * state and the replay ring), so a resumed run continues bit for bit. docs/train.md has
 * the details: the loop, the graph, the run folder, resume and determinism. */
#ifndef VULPES_TRAIN_H
#define VULPES_TRAIN_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/backend.h"
#include "vulpes/collect.h"
#include "vulpes/config.h"
#include "vulpes/data.h"
#include "vulpes/dataset.h"
#include "vulpes/env.h"
#include "vulpes/learner.h"
#include "vulpes/metrics.h"
#include "vulpes/replay.h"
#include "vulpes/run.h"
#include "vulpes/split.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The instrument, env settings, model, learner, replay and exploration settings of a run;
 * each random stream gets its own seed derived from run.seed. Fails on values the parts
 * cannot take (a fractional max_position, say), naming the key. */
typedef struct vp_train_parts {
    vp_instrument instrument; /* instrument.* */
    vp_env_config env;        /* env.*, seed derived from run.seed */
    vp_learner_cfg learner;   /* model.*, learn.*, seed derived from run.seed */
    vp_replay_cfg replay;     /* replay.*, learn.gamma, learn.n_step */
    vp_collect_cfg collect;   /* collect.* */
    vp_precision precision;   /* run.precision */
} vp_train_parts;

/* Fills the parts of a run from its configuration and its feature count F. */
vp_status vp_train_parts_make(const vp_config* cfg, int n_features, vp_train_parts* out);

/* ---- validation: a segment-parallel greedy backtest over one span ----------------------------- */

/* Metrics of one backtest of a span. */
typedef struct vp_eval_result {
    int64_t windows;          /* segments run side by side */
    int64_t window_bars;      /* decisions per segment */
    int64_t ruined;           /* segments that ended in ruin */
    vp_perf strategy;         /* the agent's stitched per-bar returns */
    vp_perf buy_hold;         /* buy-and-hold over the same segments, same costs */
    vp_perf flat;             /* flat over the same bars */
    double exposure;          /* fraction of bars with a position */
    double turnover;          /* contracts traded / max_position, summed */
} vp_eval_result;

typedef struct vp_validator vp_validator;

/* Validation of `span` of the run's bars: the rollout (vulpes/rollout.h) of the network's
 * greedy policy over N = floor((len - 1) / window_bars) windows of the span (window_bars <= 0
 * or longer than the span: one window, the exact backtest), side by side, each starting flat,
 * with the training costs; the portfolio vector measures time in episodes of window_bars.
 * features [T, F] in backend memory; d and features outlive the validator. */
vp_status vp_validator_init(vp_validator** out, vp_backend* b, const vp_model* m, const vp_tensor* features,
                            const vp_train_data* d, vp_span span, const vp_instrument* inst, int64_t window_bars);

/* Frees a validator (NULL is a no-op). */
void vp_validator_free(vp_validator* v);

/* Runs the rollout with parameters `params` ([n_weights], backend memory) into *out
 * (allocates, uploads and downloads: not for inside an iteration). */
vp_status vp_validator_run(vp_validator* v, const vp_tensor* params, vp_eval_result* out);

/* ---- the trainer ------------------------------------------------------------------------------- */

/* Counters of a run, kept on the host (functions of the iteration count and the config). */
typedef struct vp_train_counters {
    int64_t iteration;     /* iterations done */
    int64_t warmup_steps;  /* warm-up collection steps done (random actions) */
    int64_t collect_steps; /* policy collection steps done */
    int64_t env_steps;     /* env steps summed over envs, warm-up included */
    int64_t learner_steps; /* learner steps done */
} vp_train_counters;

/* Statistics read at a log point (after a wait for the backend). */
typedef struct vp_train_stats {
    float learner[VP_STAT_COUNT]; /* the learner's statistics block (vp_stat) */
    float epsilon;                /* exploration rate of the next collection step */
    float beta;                   /* PER beta of the last sample */
    int64_t replay_size;          /* transitions in the ring */
} vp_train_stats;

/* Everything one run trains with. */
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
} vp_trainer;

/* Builds every part of a run from cfg and the prepared data on backend b. */
vp_status vp_trainer_init(vp_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d);

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

/* What a checkpoint holds. */
typedef enum vp_ckpt_kind {
    VP_CKPT_RESUME = 0, /* everything a bit-identical resume needs (last.safetensors) */
    VP_CKPT_BEST,       /* the best validation parameters and the config (best.safetensors) */
    VP_CKPT_KIND_COUNT
} vp_ckpt_kind;

/* Writes a checkpoint of `kind` to `path` atomically (waits for the backend first). */
vp_status vp_trainer_save(vp_trainer* t, const char* path, vp_ckpt_kind kind);

/* Restores a VP_CKPT_RESUME checkpoint: every tensor, the counters and the best score. The
 * file's config must equal t->cfg except the keys a resume may change (train.iterations,
 * train.checkpoint_every, train.log_every, run.out, run.name, run.backend); the message
 * names the first key that differs. */
vp_status vp_trainer_load(vp_trainer* t, const char* path);

/* Loads the parameters of a checkpoint of either kind into dst ([n_weights], backend memory). */
vp_status vp_trainer_load_params(vp_trainer* t, const char* path, vp_tensor* dst);

/* ---- the whole job ------------------------------------------------------------------------------ */

struct cJSON;

/* A step added to the end of a finished run (vp_train_opts.finish), after the test span's
 * validation score and before summary.json is written: `params` ([n_weights], backend memory)
 * are the parameters the test span is scored with, `run_dir` the run folder, `summary`
 * summary.json's object, to which it adds keys (never replaces them). The layers above learn
 * plug in here: vp_backtest_train_finish (vulpes/backtest.h) writes the exact backtest. */
typedef vp_status (*vp_train_finish_fn)(void* ctx, const vp_trainer* t, const vp_tensor* params, const char* run_dir,
                                        struct cJSON* summary);

/* How vp_train_run reports and when it stops. */
typedef struct vp_train_opts {
    FILE* progress;                      /* progress lines (NULL: none) */
    int progress_tty;                    /* 1: one redrawn line; 0: plain periodic lines */
    double progress_interval_s;          /* least seconds between progress prints */
    const volatile sig_atomic_t* stop;   /* non-zero: checkpoint and stop between iterations (NULL: none) */
    int64_t stop_after;                  /* stop as on an interrupt once this many iterations are done (0: never) */
    vp_run_mode mode;                    /* VP_RUN_CREATE, VP_RUN_FORCE or VP_RUN_RESUME */
    const char* run_dir;                 /* the run folder (resume: required; else NULL: run.out or runs/...) */
    const char* config_path;             /* names the default run folder (may be NULL) */
    vp_train_finish_fn finish;           /* run at the end of a finished run, not an interrupted one (NULL: none) */
    void* finish_ctx;                    /* finish's first argument */
} vp_train_opts;

/* Defaults: no progress, no stop flag, VP_RUN_CREATE. */
vp_train_opts vp_train_opts_default(void);

/* What a run did. */
typedef struct vp_train_result {
    char run_dir[VP_RUN_PATH_MAX]; /* the run folder */
    int interrupted;               /* 1: stopped early (checkpoint written, resume continues it) */
    vp_train_counters count;       /* counters at the end */
    vp_eval_result final_val;      /* validation of the final parameters (when finished) */
    double best_val_sharpe;        /* best validation Sharpe (NaN: none) */
    int64_t best_iteration;        /* its iteration (-1: none) */
    vp_eval_result test;           /* the test span with the best parameters (when finished) */
} vp_train_result;

/* Trains under cfg on backend b: data, run folder (config.yaml, metrics.jsonl), warm-up,
 * the loop with logs, validations and checkpoints, then the test span, opts->finish and summary.json.
 * With opts->mode VP_RUN_RESUME it continues the run in opts->run_dir from last.safetensors. */
vp_status vp_train_run(const vp_config* cfg, vp_backend* b, const vp_train_opts* opts, vp_train_result* out);

/* Rewrites DIR/metrics.jsonl keeping the lines of iterations <= `iteration` (a resume drops
 * what an interrupted run logged after its checkpoint). A missing file is not an error. */
vp_status vp_train_trim_metrics(const char* path, int64_t iteration);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_TRAIN_H */
