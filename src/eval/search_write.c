/* The search's table written out: the console text, results.csv, results.json, best.yaml (the
 * winner's whole config, loadable by `vulpes train`) and report.html. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "eval/job_write.h"
#include "eval/search_impl.h"
#include "vulpes/metrics.h"
#include "vulpes/run.h"
#include "vulpes/version.h"

/* A figure for people ("-" for none). */
static const char* fmt(double v, vp_metric_unit u, char* buf, size_t n) {
    return vp_metric_format(v, u, buf, n);
}

vp_status vp_search_print(const vp_search_result* r, FILE* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_search_print: NULL argument");
    fprintf(out, "%5s  %4s  %10s  %10s  %11s", "trial", "rung", "iterations", "val Sharpe", "test Sharpe");
    for (int p = 0; p < r->space.n_params; ++p) fprintf(out, "  %s", r->space.params[p].key->name);
    fputc('\n', out);
    char a[32], b[32];
    for (int64_t i = 0; i < r->n_trials; ++i) {
        const vp_search_trial* t = &r->trials[i];
        fprintf(out, "%5lld  %4d  %10lld  %10s  %11s", (long long)i, t->rung, (long long)t->iterations,
                fmt(t->val_sharpe, VP_METRIC_UNIT_RATIO, a, sizeof a), fmt(t->test_sharpe, VP_METRIC_UNIT_RATIO, b, sizeof b));
        for (int p = 0; p < r->space.n_params; ++p)
            fprintf(out, "  %*s", (int)strlen(r->space.params[p].key->name), t->draw.values[p]);
        fputs(i == r->best ? "  <- best\n" : "\n", out);
    }
    fputs("\nrungs:", out);
    for (int g = 0; g < r->n_rungs; ++g)
        fprintf(out, "%s %lld %s x %lld %s", g ? "," : "", (long long)r->rung_size[g],
                vp_plural(r->rung_size[g], "trial", "trials"), (long long)r->budgets[g],
                vp_plural(r->budgets[g], "iteration", "iterations"));
    fprintf(out, " (eta %lld; %d of %d done)\n", (long long)r->eta, r->rungs_done, r->n_rungs);
    if (r->best >= 0) {
        const vp_search_trial* w = &r->trials[r->best];
        char d[32], s0[32], v[32];
        fprintf(out, "best: trial %lld (%s), validation Sharpe %s, test Sharpe %s\n", (long long)r->best, w->dir,
                fmt(w->val_sharpe, VP_METRIC_UNIT_RATIO, a, sizeof a), fmt(w->test_sharpe, VP_METRIC_UNIT_RATIO, b, sizeof b));
        fprintf(out, "deflated Sharpe of the best over %lld trials: %s (SR0 %s, trials' test Sharpe variance %s); %s\n%s\n",
                (long long)r->dsr_trials, fmt(r->deflated_sharpe, VP_METRIC_UNIT_FRAC, d, sizeof d),
                fmt(r->expected_max_sharpe, VP_METRIC_UNIT_RATIO, s0, sizeof s0),
                fmt(r->trials_sharpe_variance, VP_METRIC_UNIT_RATIO, v, sizeof v), VP_SEARCH_DEFLATION_RULE,
                VP_SEARCH_SELECTION_NOTE);
    } else {
        fprintf(out, "the search is unfinished: no winner yet; a resume runs the rest\n");
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the search table failed: %s", strerror(errno));
    return VP_OK;
}

static vp_status write_csv(FILE* out, const void* ctx) {
    const vp_search_result* r = (const vp_search_result*)ctx;
    fputs("trial,rung,iterations,finished", out);
    for (int p = 0; p < r->space.n_params; ++p) {
        fputc(',', out);
        vp_csv_write_field(out, r->space.params[p].key->name);
    }
    fputs(",val_sharpe,test_sharpe,best,dir\n", out);
    for (int64_t i = 0; i < r->n_trials; ++i) {
        const vp_search_trial* t = &r->trials[i];
        fprintf(out, "%lld,%d,%lld,%d", (long long)i, t->rung, (long long)t->iterations, t->finished);
        for (int p = 0; p < r->space.n_params; ++p) {
            fputc(',', out);
            vp_csv_write_field(out, t->draw.values[p]);
        }
        fputc(',', out);
        vp_job_csv_num(out, t->val_sharpe);
        fputc(',', out);
        vp_job_csv_num(out, t->test_sharpe);
        fprintf(out, ",%d,", i == r->best);
        vp_csv_write_field(out, t->dir);
        fputc('\n', out);
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing results.csv failed: %s", strerror(errno));
    return VP_OK;
}

/* A drawn value as JSON: a number for a number key, true / false for a bool, else text. */
static cJSON* value_json(const vp_config_key* k, const char* v) {
    if (k->kind == VP_CONFIG_INT || k->kind == VP_CONFIG_FLOAT) return cJSON_CreateNumber(strtod(v, NULL));
    if (k->kind == VP_CONFIG_BOOL) return cJSON_CreateBool(strcmp(v, "true") == 0);
    return cJSON_CreateString(v);
}

/* The trial's values as an object of o. */
static vp_status add_params(cJSON* o, const vp_search_result* r, const vp_search_draw* d) {
    cJSON* p = cJSON_AddObjectToObject(o, "params");
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "results.json: out of memory");
    for (int i = 0; i < r->space.n_params; ++i)
        cJSON_AddItemToObject(p, r->space.params[i].key->name, value_json(r->space.params[i].key, d->values[i]));
    return VP_OK;
}

/* The table as JSON: the plan, the winner and its deflation, a row per trial. */
static vp_status write_json(FILE* out, const void* ctx) {
    const vp_search_result* r = (const vp_search_result*)ctx;
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "results.json: out of memory");
    cJSON_AddStringToObject(root, "vulpes_version", VP_VERSION_STRING);
    cJSON_AddNumberToObject(root, "seed", (double)r->seed);
    cJSON_AddNumberToObject(root, "trials", (double)r->n_trials);
    cJSON_AddNumberToObject(root, "eta", (double)r->eta);
    cJSON* ri = cJSON_AddArrayToObject(root, "rung_iterations");
    cJSON* rt = cJSON_AddArrayToObject(root, "rung_trials");
    for (int g = 0; ri && rt && g < r->n_rungs; ++g) {
        cJSON_AddItemToArray(ri, cJSON_CreateNumber((double)r->budgets[g]));
        cJSON_AddItemToArray(rt, cJSON_CreateNumber((double)r->rung_size[g]));
    }
    cJSON_AddNumberToObject(root, "rungs_done", r->rungs_done);
    cJSON_AddBoolToObject(root, "finished", !r->interrupted);
    vp_status s = VP_OK;
    cJSON* best = r->best >= 0 ? cJSON_AddObjectToObject(root, "best") : cJSON_AddNullToObject(root, "best");
    if (!best) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "results.json: out of memory");
    if (s == VP_OK && r->best >= 0) {
        const vp_search_trial* w = &r->trials[r->best];
        cJSON_AddNumberToObject(best, "trial", (double)r->best);
        cJSON_AddStringToObject(best, "dir", w->dir);
        s = add_params(best, r, &w->draw);
        if (s == VP_OK) s = vp_metric_json_add(best, "val_sharpe_ratio", w->val_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(best, "test_sharpe_ratio", w->test_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(best, "deflated_sharpe_frac", r->deflated_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(best, "deflation_trials", (double)r->dsr_trials);
        if (s == VP_OK) s = vp_metric_json_add(best, "trials_sharpe_variance", r->trials_sharpe_variance);
        if (s == VP_OK) s = vp_metric_json_add(best, "expected_max_sharpe_ratio", r->expected_max_sharpe);
        cJSON_AddStringToObject(best, "deflation_rule", VP_SEARCH_DEFLATION_RULE);
        cJSON_AddStringToObject(best, "selection_note", VP_SEARCH_SELECTION_NOTE);
    }
    cJSON* rows = cJSON_AddArrayToObject(root, "rows");
    for (int64_t i = 0; s == VP_OK && i < r->n_trials; ++i) {
        const vp_search_trial* t = &r->trials[i];
        cJSON* o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(rows, o)) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "results.json: out of memory");
        if (s != VP_OK) break;
        cJSON_AddNumberToObject(o, "trial", (double)i);
        cJSON_AddStringToObject(o, "dir", t->dir);
        cJSON_AddNumberToObject(o, "rung", t->rung);
        cJSON_AddNumberToObject(o, "iterations", (double)t->iterations);
        cJSON_AddBoolToObject(o, "finished", t->finished);
        s = add_params(o, r, &t->draw);
        if (s == VP_OK) s = vp_metric_json_add(o, "val_sharpe_ratio", t->val_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(o, "test_sharpe_ratio", t->test_sharpe);
        cJSON* sc = s == VP_OK ? cJSON_AddArrayToObject(o, "rung_scores") : NULL;
        for (int g = 0; sc && g < r->rungs_done && g <= t->rung; ++g)
            cJSON_AddItemToArray(sc, isfinite(t->score[g]) ? cJSON_CreateNumber(t->score[g]) : cJSON_CreateNull());
    }
    return vp_job_json_write(out, root, s, "results.json");
}

static vp_status write_html(FILE* out, const void* ctx) {
    return vp_search_report_write(out, (const vp_search_result*)ctx);
}

vp_status vp_search_write(const vp_search_result* r) {
    VP_REQUIRE(r != NULL, VP_ERR_INVALID_ARG, "vp_search_write: NULL argument");
    static const char* const names[3] = {"results.csv", "results.json", "report.html"};
    static const vp_job_writer writers[3] = {write_csv, write_json, write_html};
    VP_TRY(vp_job_write_files(r->dir, names, writers, 3, r));
    char path[VP_RUN_PATH_MAX + 32];
    // the winner's whole config: the base with its values, train.iterations the last rung's
    snprintf(path, sizeof path, "%s/best.yaml", r->dir);
    if (r->best < 0) {
        remove(path); // an earlier search's winner is not this one's
        return VP_OK;
    }
    vp_config best = r->base;
    VP_TRY(vp_search_apply(&r->space, &r->trials[r->best].draw, r->best, &best));
    return vp_config_write_yaml(&best, path);
}
