/* Internal: run folders trained as jobs of the job pool (job_pool.h) with one progress line over
 * them, which an ablation's runs and a search's trials share. A job is the training loop
 * (vp_train_run_data, as `vulpes train` runs it) in its own folder, from its start or continued
 * from its last.safetensors, the test span's files written by the same finishing step
 * (vp_backtest_train_finish); its lines are whole and prefixed by its label.
 *
 * Thread safety: vp_pool_runs_train is called from several threads at once for different slots,
 * each with its own backend; the progress stream and the counters are guarded by mu. */
#ifndef VP_EVAL_POOL_RUNS_H
#define VP_EVAL_POOL_RUNS_H

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/dataset.h"
#include "vulpes/train.h"

/* The runs of one job (an ablation, a search) while they run; the caller sets progress, stop,
 * fused, interval_s, n_slots, iters and iter0, and initialises mu. */
typedef struct vp_pool_runs {
    FILE* progress;                    /* the progress stream (NULL: none) */
    const volatile sig_atomic_t* stop; /* non-zero: the runs in progress checkpoint and stop (NULL: none) */
    int fused;                         /* the test backtests' CUDA path (vp_train_opts.fused) */
    _Atomic int halt;                  /* set when a run failed (by the job pool): the runs in progress stop */
    pthread_mutex_t mu;                /* guards the progress stream and the counters below */
    int64_t started;                   /* runs started by this call */
    int64_t done;                      /* runs finished by this call */
    int64_t line_done;                 /* the finished runs the progress line counts (grows with done) */
    int64_t line_total;                /* the runs it counts them out of */
    char line_what[64];                /* what it calls them ("runs", "rung 1: trials") */
    int64_t n_slots;                   /* slots of iters and iter0 (one per run folder) */
    int64_t* iters;                    /* [n_slots] each run's iteration at its loop's last report (NULL: no line) */
    int64_t* iter0;                    /* [n_slots] its iteration at its first report since begin (-1: none yet) */
    int64_t work_total;                /* iterations to run since begin, at most */
    double t0;                         /* clock at begin */
    double last_line;                  /* clock at the last progress line */
    double interval_s;                 /* least seconds between progress lines */
} vp_pool_runs;

/* One job of the pool: a run folder to train. */
typedef struct vp_pool_job {
    vp_pool_runs* p;           /* its pool */
    int64_t slot;              /* its slot of iters / iter0 */
    const char* label;         /* the prefix of its lines ("run 1/4 (base, seed 11)") */
    const char* dir;           /* its run folder */
    int may_continue;          /* 1: continued from dir/last.safetensors when the folder holds one */
    const vp_config* cfg;      /* its config */
    const vp_train_data* data; /* its data */
} vp_pool_job;

/* Starts a stretch of runs: every slot without a report, the clock at 0, the first report
 * printed at once; the line counts line_done of line_total `what` done and work_total
 * iterations ("[ELAPSED] WHAT D/N done, R running | iterations W/T (P %) | ETA S"). */
void vp_pool_runs_begin(vp_pool_runs* p, const char* what, int64_t line_done, int64_t line_total,
                        int64_t work_total);

/* A line on the progress stream (when there is one), whole even with runs in parallel. */
void vp_pool_runs_note(vp_pool_runs* p, const char* msg);

/* "LABEL: MSG" on the progress stream. */
void vp_pool_runs_say(vp_pool_runs* p, const char* label, const char* msg);

/* A line about the pool itself: "OWNER: MSG" in the log (info) and on the progress stream. */
void vp_pool_runs_pool_note(vp_pool_runs* p, const char* owner, const char* msg);

/* Slot `slot`'s loop reached `iteration`: the progress line over every slot when interval_s
 * has passed since the last. */
void vp_pool_runs_progress(vp_pool_runs* p, int64_t slot, int64_t iteration);

/* Trains job j on backend b into *r: says "continuing from its last.safetensors on B" or "training on
 * B" (B the backend's name, "cuda:1 NVIDIA H200"),
 * runs the loop (its notes prefixed by the label, its stop poll p->stop or p->halt); a run left
 * unfinished by a stop says "stopped at iteration I (a resume continues it)", a finished one is
 * counted (done, line_done) and the caller says how it did. Returns the loop's error as it is. */
vp_status vp_pool_runs_train(const vp_pool_job* j, vp_backend* b, vp_train_result* r);

#endif /* VP_EVAL_POOL_RUNS_H */
