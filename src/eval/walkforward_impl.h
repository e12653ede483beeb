/* Internal: the walk-forward's shared state — the plan and the folder (walkforward.c), one
 * fold's training and test (walkforward_fold.c), and the stitching of the finished folds
 * read back from their files (walkforward_stitch.c, walkforward_write.c). */
#ifndef VP_EVAL_WALKFORWARD_IMPL_H
#define VP_EVAL_WALKFORWARD_IMPL_H

#include "vulpes/train.h"
#include "vulpes/walkforward.h"

/* One walk-forward run. */
typedef struct vp_wf_ctx {
    const vp_config* cfg;      /* resolved configuration */
    vp_config fold_cfg;        /* what a fold trains with: cfg with walkforward.parallel 1 (a fold is one
                                  training), so its files are the same bytes however many run at once */
    vp_backend* b;             /* where it computes */
    const vp_wf_cfg* wf;       /* fold settings */
    const vp_wf_opts* opts;    /* folder, progress, stop */
    vp_train_data data;        /* every bar, the features, ATR, warm-up */
    vp_annual annual;          /* bars per year, measured over the whole file */
    int64_t n_folds;           /* folds planned */
    vp_split* folds;           /* [n_folds] */
    char* config_yaml;         /* cfg as YAML (for the reports) */
    int64_t done_this_call;    /* folds finished by this call */
    _Atomic int halt;          /* set when a fold failed: the folds in progress stop, no more start */
} vp_wf_ctx;

/* Removes the files of a folder, one level deep (fold folders hold files only). */
void vp_wf_empty_dir(const char* dir);

/* DIR/folds/fold_NNN into out[n]. */
vp_status vp_wf_fold_dir(const vp_wf_ctx* c, int64_t k, char* out, size_t n);

/* DIR/folds/fold_NNN/FILE into out[n]. */
vp_status vp_wf_fold_file(const vp_wf_ctx* c, int64_t k, const char* file, char* out, size_t n);

/* Whether fold k has its done marker. */
int vp_wf_fold_is_done(const vp_wf_ctx* c, int64_t k);

/* What a finished fold reports to the walk-forward's metrics.jsonl. */
typedef struct vp_wf_brief {
    double val_sharpe;      /* best validation Sharpe (NaN: none) */
    int64_t best_iteration; /* its iteration (-1: the final parameters) */
    double test_sharpe;     /* Sharpe of the test span */
    double test_return;     /* total return of the test span */
    int64_t test_trades;    /* trades on the test span */
} vp_wf_brief;

/* Trains fold k on backend b from scratch (or from fold k-1's best parameters), selects on
 * validation, backtests the test span and writes the fold's folder, done.json last; *brief
 * receives its figures. *stopped is set when a stop request (opts->stop or c->halt) left the
 * fold unfinished. Safe to call from several threads at once for different folds, each with
 * its own backend. */
vp_status vp_wf_fold_run(vp_wf_ctx* c, vp_backend* b, int64_t k, int* stopped, vp_wf_brief* brief);

/* Runs the unfinished folds, up to opts->parallel at once (lowered to what free device memory
 * holds; 1 with warm start); finished[k] is set to 1 and briefs[k] filled for each fold this
 * call finished. Stops claiming folds once one was stopped or failed, or opts->stop_after_folds
 * were claimed; a failure is returned after every running fold has returned. */
vp_status vp_wf_pool_run(vp_wf_ctx* c, unsigned char* finished, vp_wf_brief* briefs); // [n_folds], [n_folds]

/* Reads folds 0 .. n_done-1 back from their folders and stitches their test spans into *out. */
vp_status vp_wf_stitch(const vp_wf_ctx* c, int64_t n_done, vp_wf_result* out);

/* Writes the walk-forward's equity.csv, trades.csv, summary.json and report.html. */
vp_status vp_wf_write(const vp_wf_ctx* c, const vp_wf_result* r);

/* Splits a CSV line in place into at most cap fields; returns their number. */
int vp_wf_csv_fields(char* line, char** fields, int cap);

#endif /* VP_EVAL_WALKFORWARD_IMPL_H */
