/* Internal: the search's parts, bottom up — each file calls only the ones listed before it:
 *   search_space.c    the space read from YAML and checked (vulpes/search.h)
 *   search_sample.c   a trial's values drawn and set into its config
 *   search_halving.c  the rungs' iterations and the trials a rung promotes
 *   search_plan.c     search.json (the plan) and rungs.json (the finished rungs), written and read back
 *   search_collect.c  the trials read back from their folders, the winner and its deflation
 *   search_write.c    the table as text, results.csv, results.json and best.yaml
 *   search_report.c   report.html: the scores, a scatter per key, the winner
 *   search_job.c      one trial trained to its rung's iterations in its folder as a pool job (pool_runs.h)
 *   search.c          the driver: the plan, the checks, the folder, the rungs through the job pool. */
#ifndef VP_EVAL_SEARCH_IMPL_H
#define VP_EVAL_SEARCH_IMPL_H

#include "eval/pool_runs.h"
#include "vulpes/dataset.h"
#include "vulpes/search.h"

/* One search while it runs. */
typedef struct vp_search_ctx {
    const vp_search_opts* opts;   /* folder, progress, stop */
    vp_search_result* r;          /* the plan, the trials and their folders */
    vp_config* cfg;               /* [n_trials] each trial's config (train.iterations: its rung's) */
    const vp_train_data** data;   /* [n_trials] the data each trains on (shared where the warm-up is the same) */
    int resume;                   /* 1: finished trial runs are skipped, interrupted ones continued */
    int rung;                     /* the rung running */
    const int64_t* members;       /* its trials (pool.line_total of them) */
    vp_pool_runs pool;            /* the trial runs through the job pool: the progress stream, the stop, the
                                     counters (its line over the running rung) */
} vp_search_ctx;

/* ---- search_plan.c ------------------------------------------------------------------------ */

/* Writes DIR/search.json (the plan of r) and DIR/space.yaml (its space), each atomically. */
vp_status vp_search_plan_write(const vp_search_result* r);

/* Reads the plan of the search in r->dir (search.json, space.yaml read against r->base) into
 * r: seed, trials, eta, min_iterations, the space and the rungs' iterations (which must be
 * those the base's train.iterations gives). */
vp_status vp_search_plan_read(vp_search_result* r);

/* Writes DIR/rungs.json: the finished rungs 0 .. r->rungs_done - 1, each with its trials, their
 * scores and the trials it promoted. */
vp_status vp_search_rungs_write(const vp_search_result* r);

/* Reads DIR/rungs.json (absent: no rung finished) into r->rungs_done and each trial's scores
 * and rung, checking that every rung holds the trials its previous one promoted. */
vp_status vp_search_rungs_read(vp_search_result* r);

/* The trials of rung `rung` of r, from the scores of the rung before (rung 0: every trial),
 * into out[n_trials]; returns their count (-1: out of memory). */
int64_t vp_search_rung_members(const vp_search_result* r, int rung, int64_t* out);

/* ---- search_collect.c --------------------------------------------------------------------- */

/* Whether the run in folder dir is finished with at least `iterations` iterations. */
int vp_search_run_done(const char* dir, int64_t iterations);

/* The best validation Sharpe of the run in dir (summary.json best_validation.sharpe; NaN: none). */
double vp_search_run_score(const char* dir);

/* Reads every trial's folder into r->trials, then the winner (the last rung's best score once
 * every rung is done, a tie to the lower index) and its deflated Sharpe over the trials. */
vp_status vp_search_collect(vp_search_result* r);

/* ---- search_write.c ----------------------------------------------------------------------- */

/* What the deflated Sharpe of the winner is, for every output that states it. */
#define VP_SEARCH_DEFLATION_RULE                                                                      \
    "every finished trial is a trial of the deflation: the winner's test-span returns are tested "      \
    "against SR0, the expected best Sharpe of that many unskilled trials whose test Sharpes vary as "   \
    "the trials' do (PSR(SR0), Bailey and Lopez de Prado 2014)"

/* Why the winner's test Sharpe is out of sample only once, for every output that states it. */
#define VP_SEARCH_SELECTION_NOTE                                                                      \
    "the winner was chosen by validation Sharpe, never by the test span: its test Sharpe is out of "   \
    "sample this once; choosing among the trials by their test Sharpes would make it in-sample"

/* Writes DIR/results.csv, results.json, report.html and, when there is a winner, best.yaml
 * (each atomically). */
vp_status vp_search_write(const vp_search_result* r);

/* ---- search_report.c ---------------------------------------------------------------------- */

/* Writes report.html of r to out: the table, a scatter of the score against each key, the
 * winner and its deflated Sharpe. */
vp_status vp_search_report_write(FILE* out, const vp_search_result* r);

/* ---- search_job.c ------------------------------------------------------------------------- */

/* Trains trial `trial` on backend b to its rung's iterations in its folder: from its start (rung
 * 0, no checkpoint), else from its last.safetensors; *stopped set when a stop request left it
 * unfinished. Safe to call from several threads at once for different trials. */
vp_status vp_search_job_run(vp_search_ctx* c, vp_backend* b, int64_t trial, int* stopped);

#endif /* VP_EVAL_SEARCH_IMPL_H */
