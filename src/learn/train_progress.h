/* Internal: what the training loop shows while it runs (train_progress.c) — its own progress
 * line (vulpes train) or the figures forwarded to a sink (a walk-forward's line), the notes
 * before the first timed iteration (warm-up, graph capture), and the CPU projection. */
#ifndef VP_LEARN_TRAIN_PROGRESS_H
#define VP_LEARN_TRAIN_PROGRESS_H

#include "vulpes/algo.h"

/* The loop's progress: a line of its own on opts->progress, a sink, or nothing. */
typedef struct vp_train_progress {
    const vp_progress_sink* sink; /* forwards everything when set */
    vp_progress line;             /* the own line (when `own`) */
    int own;                      /* 1: the line is drawn on opts->progress */
    int rebased;                  /* 1: the timing counts from after the first iteration */
    double last_loss;             /* loss of the last log (NaN before) */
    double last_val;              /* Sharpe of the last validation (NaN before) */
    double last_eps;              /* exploration rate of the last log (NaN before) */
} vp_train_progress;

/* Starts the progress of a run of cfg->train.iterations iterations from counters `at` on
 * backend b: the first line (within the first second of the job) and `note` (the algorithm's
 * start line: its warm-up or what a resume loads; NULL or "": none); nothing when opts has
 * neither progress nor sink. */
void vp_train_progress_begin(vp_train_progress* p, const vp_train_opts* o, const vp_config* cfg, const vp_backend* b,
                             const vp_train_counters* at, const char* note);

/* Before the first iteration of this process: on CUDA the notice that the iteration graph is
 * captured now; the progress clock restarts after that iteration (vp_train_progress_iteration). */
void vp_train_progress_first(vp_train_progress* p, const vp_backend* b);

/* After every iteration: the counters, the last loss, exploration rate and validation Sharpe. */
void vp_train_progress_iteration(vp_train_progress* p, const vp_train_counters* c);

/* A message on a line of its own (a warning, a stop); when nothing shows progress, `level`
 * sends it to the log instead (VP_LOG_INFO and up; negative: dropped). */
void vp_train_progress_note(vp_train_progress* p, int level, const char* msg);

/* Ends the own line. */
void vp_train_progress_end(vp_train_progress* p);

#endif /* VP_LEARN_TRAIN_PROGRESS_H */
