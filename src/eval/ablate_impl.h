/* Internal: the ablation's parts, bottom up — each file calls only the ones listed before it:
 *   ablate_switch.c   a switch read against the base config (vulpes/ablate.h)
 *   ablate_collect.c  the finished runs read back from their folders, the table computed
 *   ablate_write.c    the table as text, CSV, JSON and the HTML page
 *   ablate_job.c      one run through the training loop (vp_train_run_data) in its folder
 *   ablate.c          the driver: the plan, the checks, the folder, the job pool, the table. */
#ifndef VP_EVAL_ABLATE_IMPL_H
#define VP_EVAL_ABLATE_IMPL_H

#include <pthread.h>

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
    _Atomic int halt;             /* set when a run failed: the runs in progress stop */
    pthread_mutex_t mu;           /* guards the progress stream and the counters below */
    int64_t started;              /* runs started by this call */
    int64_t done;                 /* runs finished by this call */
    int64_t* iters;               /* [n_runs] each run's iteration at its loop's last report */
    int64_t* iter0;               /* [n_runs] its iteration at its first report in this call (-1: none yet) */
    int64_t work_total;           /* iterations this call has to run, at most: train.iterations x the runs it runs */
    double t0;                    /* clock at the start of the runs */
    double last_line;             /* clock at the last progress line */
    double interval_s;            /* least seconds between progress lines */
} vp_ablate_ctx;

/* ---- ablate_collect.c ----------------------------------------------------------------------- */

/* Whether the run in folder dir is finished: its summary.json holds "finished": true. */
int vp_ablate_run_is_finished(const char* dir);

/* ---- ablate_job.c ------------------------------------------------------------------------------ */

/* A line on the progress stream (when there is one), whole even with runs in parallel. */
void vp_ablate_note(vp_ablate_ctx* c, const char* msg);

/* Run k's loop reached `iteration`: a progress line over every run of this call when
 * interval_s has passed since the last ("[ELAPSED] runs D/N done, R running | iterations W/T
 * (P %) | ETA S"). */
void vp_ablate_progress(vp_ablate_ctx* c, int64_t k, int64_t iteration);

/* Runs run k on backend b in its folder: from its start, or (resuming, when the folder holds
 * last.safetensors) from there; *stopped set when a stop request left it unfinished. Safe to
 * call from several threads at once for different runs, each with its own backend. */
vp_status vp_ablate_job_run(vp_ablate_ctx* c, vp_backend* b, int64_t k, int* stopped);

#endif /* VP_EVAL_ABLATE_IMPL_H */
