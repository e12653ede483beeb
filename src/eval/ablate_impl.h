/* Internal: the ablation's parts, bottom up — each file calls only the ones listed before it:
 *   ablate_switch.c   a switch read against the base config (vulpes/ablate.h)
 *   ablate_collect.c  the finished runs read back from their folders, the table computed
 *   ablate_write.c    the table as text, CSV, JSON and the HTML page
 *   ablate_job.c      one run trained in its folder as a pool job (pool_runs.h)
 *   ablate.c          the driver: the plan, the checks, the folder, the job pool, the table. */
#ifndef VP_EVAL_ABLATE_IMPL_H
#define VP_EVAL_ABLATE_IMPL_H

#include "eval/pool_runs.h"
#include "vulpes/ablate.h"
#include "vulpes/dataset.h"

/* One ablation while it runs. */
typedef struct vp_ablate_ctx {
    const vp_ablate_opts* opts;   /* folder, progress, stop */
    vp_ablate_result* r;          /* variants, runs and their folders */
    vp_config* run_cfg;           /* [n_runs] each run's config: its variant with its run.seed */
    const vp_train_data** data;   /* [n_variants] the data each variant trains on (shared where the warm-up is the same) */
    int resume;                   /* 1: finished runs are skipped, interrupted ones continued */
    unsigned char* finished_now;  /* [n_runs] 1: finished by this call */
    vp_pool_runs pool;            /* the runs through the job pool: the progress stream, the stop, the counters */
} vp_ablate_ctx;

/* ---- ablate_collect.c ----------------------------------------------------------------------- */

/* Whether the run in folder dir is finished: its summary.json holds "finished": true. */
int vp_ablate_run_is_finished(const char* dir);

/* ---- ablate_job.c ------------------------------------------------------------------------------ */

/* Runs run k on backend b in its folder: from its start, or (resuming, when the folder holds
 * last.safetensors) from there; *stopped set when a stop request left it unfinished. Safe to
 * call from several threads at once for different runs, each with its own backend. */
vp_status vp_ablate_job_run(vp_ablate_ctx* c, vp_backend* b, int64_t k, int* stopped);

#endif /* VP_EVAL_ABLATE_IMPL_H */
