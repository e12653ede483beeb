/* vulpes: the training loop (SPEC sections 1, 5, 6 and 8) and `vulpes train`.
 *
 * One loop serves `vulpes train` and every walk-forward fold: it drives an algorithm
 * instance (vulpes/algo.h; train.algo, "dqn" by default) through warm-up and iterations,
 * logs its statistics, and every `eval_every` iterations scores it with a segment-parallel
 * greedy backtest of the validation span (Sharpe of the stitched per-bar returns, empyrical
 * definition); the best parameters are kept and written to best.safetensors beside
 * last.safetensors, which holds everything a resume needs, so a resumed run continues bit
 * for bit. At the end the exact backtest (one window, vulpes/rollout.h) of the test span with
 * the selected parameters is the run's one test-span result. docs/train.md has the details:
 * the loop, the graph, the run folder, resume and determinism. */
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
#include "vulpes/policy.h"
#include "vulpes/replay.h"
#include "vulpes/rollout.h"
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
 * with the training costs and ruin rule (ruin_fraction: the run's env.ruin_fraction; a window
 * that ruins is closed out and counted in vp_eval_result.ruined); the portfolio vector
 * measures time in episodes of window_bars. features [T, F] in backend memory; d and
 * features outlive the validator. */
vp_status vp_validator_init(vp_validator** out, vp_backend* b, const vp_tensor* features, const vp_train_data* d,
                            vp_span span, const vp_instrument* inst, int64_t window_bars, double ruin_fraction);

/* Frees a validator (NULL is a no-op). */
void vp_validator_free(vp_validator* v);

/* Sets the yearly risk-free rate the validation Sharpe is in excess of (metrics.risk_free_rate;
 * 0 after init). */
void vp_validator_set_risk_free(vp_validator* v, double risk_free_rate);

/* The validator of a training run: vp_validator_init over d's validation span with cfg's
 * env.episode_bars and env.ruin_fraction, then cfg's metrics.risk_free_rate. What every
 * algorithm's setup makes. */
vp_status vp_validator_init_run(vp_validator** out, vp_backend* b, const vp_tensor* features, const vp_train_data* d,
                                const vp_instrument* inst, const vp_config* cfg);

/* Scores policy `pol` (computing on the validator's backend) by the rollout into *out
 * (allocates, uploads and downloads: not for inside an iteration). */
vp_status vp_validator_run(vp_validator* v, const vp_policy* pol, vp_eval_result* out);

/* ---- counters and checkpoints of a run ------------------------------------------------------- */

/* Counters of a run, kept on the host (functions of the iteration count and the config). */
typedef struct vp_train_counters {
    int64_t iteration;     /* iterations done */
    int64_t warmup_steps;  /* warm-up collection steps done (random actions) */
    int64_t collect_steps; /* policy collection steps done */
    int64_t env_steps;     /* env steps summed over envs, warm-up included */
    int64_t learner_steps; /* learner steps done */
} vp_train_counters;

/* What a checkpoint holds. */
typedef enum vp_ckpt_kind {
    VP_CKPT_RESUME = 0, /* everything a bit-identical resume needs (last.safetensors) */
    VP_CKPT_BEST,       /* the best validation parameters and the config (best.safetensors) */
    VP_CKPT_KIND_COUNT
} vp_ckpt_kind;

/* ---- the whole job: the one training loop -------------------------------------------------------- */

struct cJSON;
struct vp_algo;

/* What a finished run hands its finishing step. */
typedef struct vp_train_end {
    struct vp_algo* algo;           /* the run's algorithm instance (its selection in best_iteration) */
    const vp_rollout_result* test;  /* the exact backtest of the test span with the selected parameters */
    const char* run_dir;            /* the run folder */
    const char* checkpoint;         /* the file of the selected parameters ("best.safetensors", ...) */
    int64_t val_trials;             /* validations the parameters were selected among */
    double deflated_sharpe;         /* deflated Sharpe of that selection (NaN: none) */
} vp_train_end;

/* A step added to the end of a finished run (vp_train_opts.finish), after the test span's
 * exact backtest and before summary.json is written: `test` is summary.json's "test" object
 * (the backtest's metrics), to which it may add keys (never replace them). The layers above
 * learn plug in here: vp_backtest_train_finish (vulpes/backtest.h) writes the test span's
 * files; a walk-forward fold writes its own. */
typedef vp_status (*vp_train_finish_fn)(void* ctx, const vp_train_end* end, struct cJSON* test);

/* Called after each validation: its iteration, its result and whether it is a new best. */
typedef void (*vp_train_eval_fn)(void* ctx, int64_t iteration, const vp_eval_result* r, int best);

/* Polled between iterations: non-zero stops the run as an interrupt does. */
typedef int (*vp_train_stop_fn)(void* ctx);

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
    const char* init_params;             /* a checkpoint whose parameters training starts from (NULL: fresh) */
    int checkpoints;                     /* 1 (default): last.safetensors (periodic, final, on a stop); 0: none */
    int summary;                         /* 1 (default): summary.json; 0: none (the finishing step writes its own) */
    int fused;                           /* the test span's CUDA rollout path (vp_rollout_cfg.fused; default 1) */
    vp_train_finish_fn finish;           /* run at the end of a finished run, not an interrupted one (NULL: none) */
    vp_train_eval_fn on_eval;            /* after each validation (NULL: none) */
    vp_train_stop_fn should_stop;        /* polled like `stop` (NULL: none) */
    void* ctx;                           /* the first argument of finish, on_eval and should_stop */
    const vp_progress_sink* progress_sink; /* where progress goes instead of `progress` (a walk-forward's
                                              line over its folds; NULL: none) */
    vp_comm* comm;                       /* a data-parallel run's communicator (NULL: none): the learner's
                                            (vp_algo_set_comm); with more than one rank each rank trains its
                                            share and rank 0 alone writes the run folder (docs/distributed.md) */
} vp_train_opts;

/* Defaults: no progress, no stop flag, VP_RUN_CREATE, checkpoints and summary on, fused. */
vp_train_opts vp_train_opts_default(void);

/* What a run did. */
typedef struct vp_train_result {
    char run_dir[VP_RUN_PATH_MAX]; /* the run folder */
    int interrupted;               /* 1: stopped early (checkpoint written, resume continues it) */
    vp_train_counters count;       /* counters at the end */
    vp_eval_result final_val;      /* validation of the final parameters (when finished) */
    double best_val_sharpe;        /* best validation Sharpe (NaN: none) */
    int64_t best_iteration;        /* its iteration (-1: none) */
    int64_t val_trials;            /* validations compared by this process (the selection's trials) */
    double best_val_deflated_sharpe; /* deflated Sharpe of the selection (NaN: < 2 trials or best from before a resume) */
    vp_eval_result test;           /* the test span's exact backtest (one window) with the selected
                                      parameters (when finished) */
} vp_train_result;

/* Trains under cfg on backend b: data, run folder (config.yaml, metrics.jsonl), the algorithm
 * of train.algo, warm-up, the loop with logs, validations and checkpoints, then the exact
 * backtest of the test span, opts->finish and summary.json. With opts->mode VP_RUN_RESUME it
 * continues the run in opts->run_dir from last.safetensors. */
vp_status vp_train_run(const vp_config* cfg, vp_backend* b, const vp_train_opts* opts, vp_train_result* out);

/* vp_train_run on prepared data d (its split is the run's; d outlives the call). */
vp_status vp_train_run_data(const vp_config* cfg, vp_backend* b, const vp_train_data* d, const vp_train_opts* opts,
                            vp_train_result* out);

/* Rewrites DIR/metrics.jsonl keeping the lines of iterations <= `iteration` (a resume drops
 * what an interrupted run logged after its checkpoint, and a last line cut short). A
 * complete line holding a NUL byte or no JSON event with an iteration is refused
 * (VP_ERR_PARSE, naming the file and line) and the file is left as it was. A missing file
 * is not an error. */
vp_status vp_train_trim_metrics(const char* path, int64_t iteration);

#ifdef __cplusplus
}
#endif

#endif /* VULPES_TRAIN_H */
