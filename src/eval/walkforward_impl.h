/* Internal: the walk-forward's shared state and its parts, bottom up — each file calls only
 * the ones listed before it:
 *   walkforward_dir.c     the folder's paths, fold markers, file reading, span text (calls nothing here)
 *   walkforward_progress.c the progress line over the folds and the fold lines (thread-safe)
 *   walkforward_fold.c    one fold through the training loop (vp_train_run_data) and its files
 *   walkforward_pool.c    the unfinished folds, up to walkforward.parallel at once (calls fold, through
 *                         the job pool of job_pool.h, which the ablation shares)
 *   walkforward_stitch.c  the finished folds read back (the backtest files' schema, eval_impl.h)
 *   walkforward_print.c   the ruin line, the per-fold table and the stitched Sharpe's weight as text
 *   walkforward_write.c   the walk-forward's own files (the report's warning: the ruin line)
 *   walkforward.c         the driver: the plan, the folder, then pool, stitch and write. */
#ifndef VP_EVAL_WALKFORWARD_IMPL_H
#define VP_EVAL_WALKFORWARD_IMPL_H

#include <pthread.h>

#include "vulpes/rollout.h"
#include "vulpes/train.h"
#include "vulpes/walkforward.h"

/* The progress line over the folds: the folds' figures summed under a lock, since folds in
 * parallel report from their own threads. */
typedef struct vp_wf_progress {
    int on;                  /* 1: opts->progress is set and the line is drawn */
    pthread_mutex_t mu;      /* guards everything below and the stream */
    vp_progress line;        /* the printer: work = iterations over every fold of this call */
    int rebased;             /* the clock restarted after the first iteration */
    int64_t done;            /* folds finished (by earlier calls too) */
    int64_t running;         /* folds training now */
    int64_t work;            /* iterations done by this call over every fold */
    int64_t env_steps;       /* env steps done by this call over every fold */
    int64_t* iters;          /* [n_folds] iterations of each fold in this call */
    int64_t* env;            /* [n_folds] env steps of each fold in this call */
} vp_wf_progress;

/* One walk-forward run. */
typedef struct vp_wf_ctx {
    const vp_config* cfg;             /* resolved configuration */
    const vp_config_walkforward* wf;  /* the fold settings: cfg->walkforward */
    vp_config fold_cfg;               /* what a fold trains with: cfg with walkforward.parallel 1 (a fold is one
                                         training), so its files are the same bytes however many run at once */
    vp_backend* b;                    /* where it computes */
    const vp_wf_opts* opts;           /* folder, progress, stop */
    vp_train_data data;               /* every bar, the features, ATR, warm-up */
    vp_annual annual;                 /* bars per year, measured over the whole file */
    int64_t n_folds;                  /* folds planned */
    vp_split* folds;                  /* [n_folds] */
    char* config_yaml;                /* cfg as YAML (for the reports) */
    int64_t done_this_call;           /* folds finished by this call */
    _Atomic int halt;                 /* set when a fold failed: the folds in progress stop, no more start */
    vp_wf_progress prog;              /* the progress line (prog.on 0: none) */
} vp_wf_ctx;

/* What a finished fold reports to the walk-forward's metrics.jsonl. */
typedef struct vp_wf_brief {
    double val_sharpe;      /* best validation Sharpe (NaN: none) */
    int64_t best_iteration; /* its iteration (-1: the final parameters) */
    double test_sharpe;     /* Sharpe of the test span */
    double test_return;     /* total return of the test span */
    int64_t test_trades;    /* trades on the test span */
    int test_ruined;        /* 1: the test window ruined */
    vp_rollout_ruin ruin;   /* how (when test_ruined) */
} vp_wf_brief;

/* ---- walkforward_dir.c ------------------------------------------------------------------------ */

/* Removes the files of a folder, one level deep (fold folders hold files only). */
void vp_wf_empty_dir(const char* dir);

/* DIR/FILE of the walk-forward folder into out[n]. */
vp_status vp_wf_top_file(const vp_wf_ctx* c, const char* file, char* out, size_t n);

/* DIR/folds/fold_NNN of plan fold k (0-based) into out[n]: NNN = k + 1, the fold's number. */
vp_status vp_wf_fold_dir(const vp_wf_ctx* c, int64_t k, char* out, size_t n);

/* DIR/folds/fold_NNN/FILE of plan fold k into out[n]. */
vp_status vp_wf_fold_file(const vp_wf_ctx* c, int64_t k, const char* file, char* out, size_t n);

/* Whether fold k has its done marker. */
int vp_wf_fold_is_done(const vp_wf_ctx* c, int64_t k);

/* The whole file at path, NUL-terminated, into *text (caller frees); VP_ERR_IO when unreadable. */
vp_status vp_wf_read_file(const char* path, char** text);

/* Span s as the times of its first and last bars and its bar indices, "2017-03-01T00:00:00Z ..
 * 2017-04-12T23:00:00Z [1200, 1500)", into buf[n]. */
const char* vp_wf_span_text(const vp_wf_ctx* c, vp_span s, char* buf, size_t n);

/* ---- walkforward_progress.c --------------------------------------------------------------------- */

/* Starts the progress line for `to_run` folds (of train.iterations each) with its first line
 * (when opts->progress; a no-op otherwise). */
vp_status vp_wf_progress_start(vp_wf_ctx* c, int64_t to_run);

/* Ends the line and frees its arrays. */
void vp_wf_progress_stop(vp_wf_ctx* c);

/* A whole line of its own: "fold K/N: msg" for plan fold k >= 0, "walk-forward: msg" for k < 0. */
void vp_wf_progress_note(vp_wf_ctx* c, int64_t k, const char* msg);

/* Plan fold k starts training. */
void vp_wf_progress_fold_begin(vp_wf_ctx* c, int64_t k);

/* Plan fold k's training loop reports its figures (after every iteration). */
void vp_wf_progress_fold_update(vp_wf_ctx* c, int64_t k, const vp_progress_stats* st);

/* Plan fold k stopped (finished 1: done, 0: left unfinished). */
void vp_wf_progress_fold_end(vp_wf_ctx* c, int64_t k, int finished);

/* ---- walkforward_fold.c ----------------------------------------------------------------------- */

/* Trains fold k on backend b from scratch (or from fold k-1's best parameters), selects on
 * validation, backtests the test span and writes the fold's folder, done.json last; *brief
 * receives its figures. *stopped is set when a stop request (opts->stop or c->halt) left the
 * fold unfinished. Safe to call from several threads at once for different folds, each with
 * its own backend. */
vp_status vp_wf_fold_run(vp_wf_ctx* c, vp_backend* b, int64_t k, int* stopped, vp_wf_brief* brief);

/* ---- walkforward_pool.c ----------------------------------------------------------------------- */

/* Runs the unfinished folds, up to walkforward.parallel at once (lowered to what free device
 * memory holds; 1 with warm start); finished[k] is set to 1 and briefs[k] filled for each fold
 * this call finished. Stops claiming folds once one was stopped or failed, or
 * opts->stop_after_folds were claimed; a failure is returned after every running fold has
 * returned. */
vp_status vp_wf_pool_run(vp_wf_ctx* c, unsigned char* finished, vp_wf_brief* briefs); // [n_folds], [n_folds]

/* ---- walkforward_stitch.c, walkforward_print.c, walkforward_write.c --------------------------- */

/* Reads folds 0 .. n_done-1 back from their folders and stitches their test spans into *out. */
vp_status vp_wf_stitch(const vp_wf_ctx* c, int64_t n_done, vp_wf_result* out);

/* One line saying that r's stitched account ruined (r->ruined_fold > 0): "RUINED: fold K's test
 * window at the close of bar B (the bar opened T): ...", the stitched equity at it and after the
 * close-out beside the fold's own, below zero, and the folds left out. Into buf[n]; returns buf
 * ("" when nothing ruined). */
const char* vp_wf_ruin_line(const vp_wf_result* r, char* buf, size_t n);

/* Writes the walk-forward's equity.csv, trades.csv, summary.json and report.html. */
vp_status vp_wf_write(const vp_wf_ctx* c, const vp_wf_result* r);

/* How the stitched Sharpe is deflated over the folds, for the outputs that state it. */
#define VP_WF_DEFLATION_RULE                                                                              \
    "each finished fold made one selection (its best validation), so the folds are the trials: the "   \
    "stitched out-of-sample Sharpe is tested against SR0, the expected best Sharpe of that many unskilled " \
    "trials whose Sharpes vary as the folds' test Sharpes do (PSR(SR0), Bailey and Lopez de Prado 2014)"

#endif /* VP_EVAL_WALKFORWARD_IMPL_H */
