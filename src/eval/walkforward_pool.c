/* The walk-forward's folds through the job pool (job_pool.h): up to walkforward.parallel
 * unfinished folds at once, each in its own thread on its own backend, the number lowered to
 * what free device memory holds (one fold's algorithm instance measured), 1 with warm start; on
 * CUDA the folds at once spread over run.devices (job_pool.h).
 *
 * Thread safety of a fold: every object it touches is its own (backend, algorithm instance, RNG
 * streams seeded from the config, folder, metrics file, its slots of `finished` and `briefs`) or
 * read-only and shared (the config, the bars, features and ATR of c->data, the fold plan).
 * Process-wide state it meets: the error message is thread-local; the log callback is only read
 * (the callback must be thread-safe); the cache folder's sequence counter is atomic; progress
 * lines are written under flockfile. */
#include <string.h>

#include "eval/job_pool.h"
#include "eval/walkforward_impl.h"

/* What the pool's callbacks see. */
typedef struct wf_jobs {
    vp_wf_ctx* c;
    unsigned char* finished; /* [n_folds] */
    vp_wf_brief* briefs;     /* [n_folds] */
} wf_jobs;

/* A note on the progress stream (when progress is on), and in the log. */
static void note(void* ctx, const char* msg) {
    vp_wf_ctx* c = ((wf_jobs*)ctx)->c;
    vp_log(VP_LOG_INFO, "walk-forward: %s", msg);
    vp_wf_progress_note(c, -1, msg);
}

static int is_done(void* ctx, int64_t k) {
    return vp_wf_fold_is_done(((wf_jobs*)ctx)->c, k);
}

/* One fold; a finished one's slots are set (each fold writes only its own). */
static vp_status run(void* ctx, vp_backend* b, int64_t k, int* stopped) {
    wf_jobs* j = (wf_jobs*)ctx;
    vp_wf_brief brief;
    memset(&brief, 0, sizeof brief);
    VP_TRY(vp_wf_fold_run(j->c, b, k, stopped, &brief));
    if (!*stopped) j->finished[k] = 1, j->briefs[k] = brief;
    return VP_OK;
}

vp_status vp_wf_pool_run(vp_wf_ctx* c, unsigned char* finished, vp_wf_brief* briefs) {
    wf_jobs j = {c, finished, briefs};
    // one fold's config and data view, measured for the device memory of a fold
    vp_train_data view = c->data;
    view.split = c->folds[0];
    const vp_config* probe_cfg[1] = {&c->fold_cfg};
    const vp_train_data* probe_data[1] = {&view};
    vp_job_pool p = {"walk-forward", "fold", "folds", c->n_folds, c->wf->parallel, c->opts->stop_after_folds, &j,
                     is_done, run, note, &c->halt, probe_cfg, probe_data, 1, c->fold_cfg.run.devices};
    if (p.parallel > 1 && c->wf->warm_start) {
        note(&j, "warm start: folds run one after another (each starts from the previous one's parameters)");
        p.parallel = 1;
    }
    VP_TRY(vp_wf_progress_start(c, vp_job_pool_left(&p)));
    vp_status s = vp_job_pool_run(&p, c->b);
    vp_wf_progress_stop(c);
    return s;
}
