/* The search's table, read back from the trial folders: each trial's iterations, best
 * validation Sharpe and test-span figures from its summary.json; then the winner (the best
 * score of the last rung) and its deflated Sharpe with every finished trial as a trial. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_read.h"
#include "eval/search_impl.h"
#include "vulpes/metrics.h"

int vp_search_run_done(const char* dir, int64_t iterations) {
    cJSON* j = vp_job_summary(dir);
    const int done = j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "finished")) &&
                     vp_job_figure(j, "iterations") >= (double)iterations;
    cJSON_Delete(j);
    return done;
}

double vp_search_run_score(const char* dir) {
    cJSON* j = vp_job_summary(dir);
    const double v = vp_job_figure(cJSON_GetObjectItemCaseSensitive(j, "best_validation"), "sharpe");
    cJSON_Delete(j);
    return v;
}

/* One trial's figures from its summary.json (none when it has no finished one). */
static void read_trial(vp_search_trial* t) {
    t->finished = 0, t->iterations = 0;
    t->val_sharpe = t->test_sharpe = t->periods_per_year = t->skewness = t->kurtosis = NAN;
    t->n_returns = 0;
    cJSON* j = vp_job_summary(t->dir);
    if (!j) return;
    const double it = vp_job_figure(j, "iterations");
    t->iterations = isfinite(it) && it >= 0 ? (int64_t)it : 0;
    t->val_sharpe = vp_job_figure(cJSON_GetObjectItemCaseSensitive(j, "best_validation"), "sharpe");
    t->finished = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "finished"));
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "test"), "strategy");
    if (t->finished && cJSON_IsObject(st)) {
        t->test_sharpe = vp_job_figure(st, "sharpe_ratio");
        t->periods_per_year = vp_job_figure(st, "periods_per_year");
        t->skewness = vp_job_figure(st, "skewness_ratio");
        t->kurtosis = vp_job_figure(st, "kurtosis_ratio");
        const double n = vp_job_figure(st, "n_valid_returns");
        t->n_returns = isfinite(n) && n >= 0 ? (int64_t)n : 0;
    }
    cJSON_Delete(j);
}

vp_status vp_search_collect(vp_search_result* r) {
    VP_REQUIRE(r != NULL && r->trials != NULL, VP_ERR_INVALID_ARG, "vp_search_collect: NULL argument");
    vp_selection all = {0};
    r->dsr_trials = 0;
    for (int64_t i = 0; i < r->n_trials; ++i) {
        read_trial(&r->trials[i]);
        if (!r->trials[i].finished) continue;
        r->dsr_trials++;
        vp_selection_add(&all, r->trials[i].test_sharpe);
    }
    r->interrupted = r->rungs_done < r->n_rungs;
    r->trials_sharpe_variance = vp_selection_variance(&all);
    r->expected_max_sharpe = r->deflated_sharpe = NAN;
    r->best = -1;
    if (r->interrupted) return VP_OK;
    // the winner: the best score of the last rung (vp_search_promote's order, one trial)
    int64_t* m = (int64_t*)malloc((size_t)r->n_trials * sizeof *m);
    double* sc = (double*)malloc((size_t)r->n_trials * sizeof *sc);
    const int g = r->n_rungs - 1;
    const int64_t n = m && sc ? vp_search_rung_members(r, g, m) : -1;
    for (int64_t i = 0; i < n; ++i) sc[i] = r->trials[m[i]].score[g];
    int64_t best = -1;
    if (n > 0 && vp_search_promote(m, sc, n, n, &best) != 1) best = -1;
    free(m);
    free(sc);
    VP_REQUIRE(n > 0 && best >= 0, VP_ERR_OOM, "search: out of memory choosing the winner");
    r->best = best;
    // its test-span returns against SR0 of that many unskilled trials
    const vp_search_trial* w = &r->trials[best];
    vp_perf p;
    memset(&p, 0, sizeof p);
    p.sharpe = w->test_sharpe, p.periods_per_year = w->periods_per_year;
    p.skewness = w->skewness, p.kurtosis = w->kurtosis, p.n_valid = w->n_returns;
    r->deflated_sharpe = vp_deflated_sharpe_trials(&p, r->dsr_trials, r->trials_sharpe_variance,
                                                   &r->expected_max_sharpe);
    return VP_OK;
}
