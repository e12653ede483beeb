/* One ablation run: its variant's data and its config (its variant with its run.seed) trained
 * in its own folder as a pool job (pool_runs.h), its lines prefixed by the run; a resume
 * continues a run whose folder holds a checkpoint. */
#include <stdio.h>
#include <string.h>

#include "eval/ablate_impl.h"
#include "vulpes/metrics.h"

/* "run K/N (VARIANT, seed S)" of run k into buf[n]. */
static const char* run_label(const vp_ablate_ctx* c, int64_t k, char* buf, size_t n) {
    const vp_ablate_trial* r = &c->r->runs[k];
    snprintf(buf, n, "run %lld/%lld (%s, seed %lld)", (long long)(k + 1), (long long)c->r->n_runs,
             c->r->variants[r->variant].name, (long long)r->seed);
    return buf;
}

vp_status vp_ablate_job_run(vp_ablate_ctx* c, vp_backend* b, int64_t k, int* stopped) {
    *stopped = 0;
    const vp_ablate_trial* run = &c->r->runs[k];
    char label[VP_ABLATE_NAME_MAX + 64];
    run_label(c, k, label, sizeof label);
    const vp_pool_job j = {&c->pool, k, label, run->dir, c->resume, &c->run_cfg[k], c->data[run->variant]};
    vp_train_result r;
    vp_status s = vp_pool_runs_train(&j, b, &r);
    if (s != VP_OK) return vp_error_context(s, "%s in %s", label, run->dir);
    *stopped = r.interrupted;
    if (r.interrupted) return VP_OK;
    c->finished_now[k] = 1;
    char msg[256], ts[32];
    snprintf(msg, sizeof msg, "done: test Sharpe %s, total return %.2f %%",
             vp_metric_format(r.test.strategy.sharpe, VP_METRIC_UNIT_RATIO, ts, sizeof ts),
             100.0 * r.test.strategy.total_return);
    vp_pool_runs_say(&c->pool, label, msg);
    return VP_OK;
}
