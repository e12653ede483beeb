/* The ablation's table, read back from the run folders: each finished run's test-span figures
 * from its summary.json ("test"."strategy"), its parameter count from the "run" event of its
 * metrics.jsonl and its ms per learner step from the "timing" events there; then the deflation
 * over every finished run as a trial and one row per variant. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/ablate_impl.h"
#include "eval/job_read.h"
#include "vulpes/metrics.h"

int vp_ablate_run_is_finished(const char* dir) {
    cJSON* j = vp_job_summary(dir);
    const int done = j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "finished"));
    cJSON_Delete(j);
    return done;
}

/* The test-span figures of a finished run's summary.json; VP_ERR_PARSE when they are missing. */
static vp_status read_summary(vp_ablate_trial* run) {
    cJSON* j = vp_job_summary(run->dir);
    run->finished = j && cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(j, "finished"));
    if (!run->finished) {
        cJSON_Delete(j);
        return VP_OK;
    }
    const cJSON* test = cJSON_GetObjectItemCaseSensitive(j, "test");
    const cJSON* st = cJSON_GetObjectItemCaseSensitive(test, "strategy");
    const double n = vp_job_figure(st, "n_valid_returns"), ppy = vp_job_figure(st, "periods_per_year");
    if (!cJSON_IsObject(st) || !isfinite(n) || !(ppy > 0)) {
        cJSON_Delete(j);
        VP_FAIL(VP_ERR_PARSE, "ablation: %s/summary.json has no test-span figures (test.strategy)", run->dir);
    }
    run->sharpe = vp_job_figure(st, "sharpe_ratio");
    run->periods_per_year = ppy;
    run->skewness = vp_job_figure(st, "skewness_ratio");
    run->kurtosis = vp_job_figure(st, "kurtosis_ratio");
    run->n_returns = (int64_t)n;
    cJSON_Delete(j);
    return VP_OK;
}

/* The parameter count and ms per learner step of a run's metrics.jsonl: the last "run" event's
 * "parameters"; the loop's wall time over its learner steps, summed over the "timing" events
 * (each covers the interval since the one before, or since its process's loop started). */
static void read_metrics(vp_ablate_trial* run) {
    run->parameters = -1;
    run->step_ms = NAN;
    char* text = vp_job_read_text(run->dir, "metrics.jsonl");
    if (!text) return;
    double prev = 0.0, wall = 0.0, steps = 0.0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        cJSON* e = cJSON_Parse(line);
        const cJSON* ev = cJSON_GetObjectItemCaseSensitive(e, "event");
        if (cJSON_IsString(ev) && strcmp(ev->valuestring, "run") == 0) {
            const double p = vp_job_figure(e, "parameters");
            if (isfinite(p)) run->parameters = (int64_t)p;
            prev = 0.0; // a resumed process's loop clock starts again
        } else if (cJSON_IsString(ev) && strcmp(ev->valuestring, "timing") == 0) {
            const double w = vp_job_figure(e, "wall_s"), rate = vp_job_figure(e, "learner_steps_per_s");
            if (isfinite(w) && isfinite(rate) && w > prev) {
                wall += w - prev;
                steps += rate * (w - prev);
            }
            if (isfinite(w)) prev = w;
        }
        cJSON_Delete(e);
    }
    free(text);
    if (steps > 0.5) run->step_ms = 1e3 * wall / steps;
}

/* One variant's row from its finished runs. */
static void fill_row(vp_ablate_result* r, int v) {
    vp_ablate_row* row = &r->rows[v];
    memset(row, 0, sizeof *row);
    row->sharpe_mean = row->sharpe_se = row->deflated_sharpe = row->step_ms = NAN;
    row->best_seed = -1, row->parameters = -1;
    vp_selection sel = {0};
    double ms = 0.0, best = -INFINITY;
    int64_t n_ms = 0;
    for (int64_t i = 0; i < r->n_runs; ++i) {
        const vp_ablate_trial* run = &r->runs[i];
        if (run->variant != v || !run->finished) continue;
        row->seeds++;
        vp_selection_add(&sel, run->sharpe);
        if (isfinite(run->step_ms)) ms += run->step_ms, n_ms++;
        if (row->parameters < 0) row->parameters = run->parameters;
        if (isfinite(run->sharpe) && run->sharpe > best) {
            best = run->sharpe;
            row->best_seed = run->seed;
            row->deflated_sharpe = run->deflated_sharpe;
        }
    }
    row->defined = sel.n_trials;
    if (sel.n_trials > 0) row->sharpe_mean = sel.mean;
    if (sel.n_trials > 1) row->sharpe_se = sqrt(vp_selection_variance(&sel) / (double)sel.n_trials);
    if (n_ms > 0) row->step_ms = ms / (double)n_ms;
}

vp_status vp_ablate_collect(vp_ablate_result* r) {
    VP_REQUIRE(r != NULL && r->runs != NULL && r->rows != NULL, VP_ERR_INVALID_ARG, "vp_ablate_collect: NULL argument");
    // each run's files
    r->n_done = 0;
    vp_selection all = {0};
    for (int64_t i = 0; i < r->n_runs; ++i) {
        vp_ablate_trial* run = &r->runs[i];
        run->finished = 0;
        run->sharpe = run->periods_per_year = run->skewness = run->kurtosis = run->deflated_sharpe = NAN;
        run->n_returns = 0;
        VP_TRY(read_summary(run));
        read_metrics(run);
        if (!run->finished) continue;
        r->n_done++;
        vp_selection_add(&all, run->sharpe);
    }
    r->interrupted = r->n_done < r->n_runs;
    // every finished run is a trial: its Sharpe against the best of that many unskilled ones
    r->n_trials = r->n_done;
    r->trials_sharpe_variance = vp_selection_variance(&all);
    r->expected_max_sharpe = NAN;
    for (int64_t i = 0; i < r->n_runs; ++i) {
        vp_ablate_trial* run = &r->runs[i];
        if (!run->finished) continue;
        vp_perf p;
        memset(&p, 0, sizeof p);
        p.sharpe = run->sharpe, p.periods_per_year = run->periods_per_year;
        p.skewness = run->skewness, p.kurtosis = run->kurtosis, p.n_valid = run->n_returns;
        double sr0 = NAN;
        run->deflated_sharpe = vp_deflated_sharpe_trials(&p, r->n_trials, r->trials_sharpe_variance, &sr0);
        if (isfinite(sr0)) r->expected_max_sharpe = sr0;
    }
    for (int v = 0; v < r->n_variants; ++v) fill_row(r, v);
    return VP_OK;
}
