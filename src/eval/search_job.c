/* One trial run of a rung: the trial's data and its config, train.iterations its rung's,
 * trained in its own folder as a pool job (pool_runs.h) — from its start in rung 0, else
 * continued from the last.safetensors of its previous rung — its lines prefixed by the trial. */
#include <stdio.h>
#include <string.h>

#include "eval/search_impl.h"
#include "vulpes/metrics.h"

vp_status vp_search_job_run(vp_search_ctx* c, vp_backend* b, int64_t trial, int* stopped) {
    *stopped = 0;
    const vp_search_trial* t = &c->r->trials[trial];
    // "trial 3 (rung 1, 40 iterations)"
    char label[128];
    snprintf(label, sizeof label, "trial %lld (rung %d, %lld iterations)", (long long)trial, c->rung,
             (long long)c->r->budgets[c->rung]);
    vp_config cfg = c->cfg[trial];
    cfg.train.iterations = c->r->budgets[c->rung];
    // a trial past rung 0, or one a resume finds a checkpoint of, continues; any other starts over
    const vp_pool_job j = {&c->pool, trial, label, t->dir, c->rung > 0 || c->resume, &cfg, c->data[trial]};
    vp_train_result r;
    vp_status s = vp_pool_runs_train(&j, b, &r);
    if (s != VP_OK) return vp_error_context(s, "trial %lld (rung %d) in %s", (long long)trial, c->rung, t->dir);
    *stopped = r.interrupted;
    if (r.interrupted) return VP_OK;
    char msg[256], vs[32], ts[32];
    snprintf(msg, sizeof msg, "done: best validation Sharpe %s, test Sharpe %s",
             vp_metric_format(r.best_val_sharpe, VP_METRIC_UNIT_RATIO, vs, sizeof vs),
             vp_metric_format(r.test.strategy.sharpe, VP_METRIC_UNIT_RATIO, ts, sizeof ts));
    vp_pool_runs_say(&c->pool, label, msg);
    return VP_OK;
}
