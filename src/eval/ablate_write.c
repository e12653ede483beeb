/* The ablation's table written out: the console text, ablate.csv, ablate.json and report.html
 * (one self-contained page: the table, the deflation, a row per run linking its report). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "eval/ablate_impl.h"
#include "eval/job_write.h"
#include "eval/report_internal.h"
#include "vulpes/metrics.h"
#include "vulpes/version.h"

/* What the deflation and the step time are, for every output that states them. */
#define DEFLATION_RULE                                                                                     \
    "every finished run (variants x seeds) is a trial: each run's test Sharpe is tested against SR0, the " \
    "expected best Sharpe of that many unskilled trials whose Sharpes vary as the runs' do (PSR(SR0), "     \
    "Bailey and Lopez de Prado 2014); a variant shows its best seed's"
#define STEP_RULE                                                                                          \
    "ms per learner step: the training loop's wall-clock time over its learner steps (collection and "     \
    "validation included), from the runs' metrics.jsonl timing events; `vulpes bench step --ablate` times " \
    "the learner step alone"

/* A figure for people ("-" for none). */
static const char* fmt(double v, vp_metric_unit u, char* buf, size_t n) {
    return vp_metric_format(v, u, buf, n);
}

/* The figures of row v as text: mean, SE, DSR, best seed, ms, parameters. */
typedef struct row_text {
    char mean[32], se[32], dsr[32], seed[32], ms[32], params[32];
} row_text;

static void row_texts(const vp_ablate_result* r, int v, row_text* t) {
    const vp_ablate_row* w = &r->rows[v];
    fmt(w->sharpe_mean, VP_METRIC_UNIT_RATIO, t->mean, sizeof t->mean);
    fmt(w->sharpe_se, VP_METRIC_UNIT_RATIO, t->se, sizeof t->se);
    fmt(w->deflated_sharpe, VP_METRIC_UNIT_FRAC, t->dsr, sizeof t->dsr);
    if (w->best_seed >= 0) snprintf(t->seed, sizeof t->seed, "%lld", (long long)w->best_seed);
    else snprintf(t->seed, sizeof t->seed, "-");
    if (isfinite(w->step_ms)) snprintf(t->ms, sizeof t->ms, "%.3f", w->step_ms);
    else snprintf(t->ms, sizeof t->ms, "-");
    fmt(w->parameters >= 0 ? (double)w->parameters : NAN, VP_METRIC_UNIT_INT, t->params, sizeof t->params);
}

vp_status vp_ablate_print(const vp_ablate_result* r, FILE* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_ablate_print: NULL argument");
    int wn = 7;
    for (int v = 0; v < r->n_variants; ++v)
        if ((int)strlen(r->variants[v].name) > wn) wn = (int)strlen(r->variants[v].name);
    fprintf(out, "%-*s  %5s  %11s  %9s  %15s  %9s  %14s  %10s\n", wn, "variant", "seeds", "test Sharpe", "+- SE",
            "deflated Sharpe", "best seed", "ms/learn step", "parameters");
    row_text t;
    for (int v = 0; v < r->n_variants; ++v) {
        row_texts(r, v, &t);
        fprintf(out, "%-*s  %5lld  %11s  %9s  %15s  %9s  %14s  %10s\n", wn, r->variants[v].name,
                (long long)r->rows[v].seeds, t.mean, t.se, t.dsr, t.seed, t.ms, t.params);
    }
    char sr0[32], var[32];
    fprintf(out, "\ntest Sharpe: mean over the seeds with a defined one, +- its standard error (sample std / sqrt n)\n"
            "deflated Sharpe over %lld %s: SR0 %s (trials' Sharpe variance %s); %s\n%s\n", (long long)r->n_trials,
            r->n_trials == 1 ? "run" : "runs", fmt(r->expected_max_sharpe, VP_METRIC_UNIT_RATIO, sr0, sizeof sr0),
            fmt(r->trials_sharpe_variance, VP_METRIC_UNIT_RATIO, var, sizeof var), DEFLATION_RULE, STEP_RULE);
    if (r->interrupted)
        fprintf(out, "%lld of %lld runs finished: the table covers those; a resume runs the rest\n",
                (long long)r->n_done, (long long)r->n_runs);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the ablation table failed: %s", strerror(errno));
    return VP_OK;
}

static vp_status write_csv(FILE* out, const void* ctx) {
    const vp_ablate_result* r = (const vp_ablate_result*)ctx;
    fputs("variant,key,value,seeds,defined,sharpe_mean,sharpe_se,deflated_sharpe_best_seed,best_seed,"
          "learner_step_ms,parameters\n", out);
    for (int v = 0; v < r->n_variants; ++v) {
        const vp_ablate_variant* x = &r->variants[v];
        const vp_ablate_row* w = &r->rows[v];
        vp_csv_write_field(out, x->name);
        fputc(',', out);
        vp_csv_write_field(out, x->key ? x->key->name : "");
        fputc(',', out);
        vp_csv_write_field(out, x->value);
        fprintf(out, ",%lld,%lld,", (long long)w->seeds, (long long)w->defined);
        vp_job_csv_num(out, w->sharpe_mean);
        fputc(',', out);
        vp_job_csv_num(out, w->sharpe_se);
        fputc(',', out);
        vp_job_csv_num(out, w->deflated_sharpe);
        fputc(',', out);
        if (w->best_seed >= 0) fprintf(out, "%lld", (long long)w->best_seed);
        fputc(',', out);
        vp_job_csv_num(out, w->step_ms);
        fputc(',', out);
        if (w->parameters >= 0) fprintf(out, "%lld", (long long)w->parameters);
        fputc('\n', out);
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing ablate.csv failed: %s", strerror(errno));
    return VP_OK;
}

/* The table as JSON: the deflation, a row per variant and a row per run. */
static vp_status write_json(FILE* out, const void* ctx) {
    const vp_ablate_result* r = (const vp_ablate_result*)ctx;
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "ablate.json: out of memory");
    cJSON_AddStringToObject(root, "vulpes_version", VP_VERSION_STRING);
    cJSON_AddNumberToObject(root, "seeds", (double)r->seeds);
    cJSON_AddNumberToObject(root, "base_seed", (double)r->base_seed);
    cJSON_AddNumberToObject(root, "runs", (double)r->n_runs);
    cJSON_AddNumberToObject(root, "runs_finished", (double)r->n_done);
    cJSON* d = cJSON_AddObjectToObject(root, "deflation");
    vp_status s = d ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "ablate.json: out of memory");
    if (s == VP_OK) {
        cJSON_AddNumberToObject(d, "trials", (double)r->n_trials);
        s = vp_metric_json_add(d, "trials_sharpe_variance", r->trials_sharpe_variance);
        if (s == VP_OK) s = vp_metric_json_add(d, "expected_max_sharpe_ratio", r->expected_max_sharpe);
        cJSON_AddStringToObject(d, "rule", DEFLATION_RULE);
        cJSON_AddStringToObject(root, "learner_step_ms_rule", STEP_RULE);
    }
    cJSON* vars = cJSON_AddArrayToObject(root, "variants");
    for (int v = 0; s == VP_OK && v < r->n_variants; ++v) {
        const vp_ablate_variant* x = &r->variants[v];
        const vp_ablate_row* w = &r->rows[v];
        cJSON* o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(vars, o)) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "ablate.json: out of memory");
        if (s != VP_OK) break;
        cJSON_AddStringToObject(o, "variant", x->name);
        if (x->key) cJSON_AddStringToObject(o, "key", x->key->name), cJSON_AddStringToObject(o, "value", x->value);
        else cJSON_AddNullToObject(o, "key"), cJSON_AddNullToObject(o, "value");
        cJSON_AddNumberToObject(o, "seeds", (double)w->seeds);
        cJSON_AddNumberToObject(o, "defined", (double)w->defined);
        s = vp_metric_json_add(o, "sharpe_mean_ratio", w->sharpe_mean);
        if (s == VP_OK) s = vp_metric_json_add(o, "sharpe_se_ratio", w->sharpe_se);
        if (s == VP_OK) s = vp_metric_json_add(o, "deflated_sharpe_frac", w->deflated_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(o, "best_seed", w->best_seed >= 0 ? (double)w->best_seed : NAN);
        if (s == VP_OK) s = vp_metric_json_add(o, "learner_step_ms", w->step_ms);
        if (s == VP_OK) s = vp_metric_json_add(o, "parameters", w->parameters >= 0 ? (double)w->parameters : NAN);
    }
    cJSON* runs = cJSON_AddArrayToObject(root, "runs");
    for (int64_t i = 0; s == VP_OK && i < r->n_runs; ++i) {
        const vp_ablate_trial* x = &r->runs[i];
        cJSON* o = cJSON_CreateObject();
        if (!o || !cJSON_AddItemToArray(runs, o)) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "ablate.json: out of memory");
        if (s != VP_OK) break;
        cJSON_AddStringToObject(o, "variant", r->variants[x->variant].name);
        cJSON_AddNumberToObject(o, "seed", (double)x->seed);
        cJSON_AddStringToObject(o, "dir", x->dir);
        cJSON_AddBoolToObject(o, "finished", x->finished);
        s = vp_metric_json_add(o, "sharpe_ratio", x->sharpe);
        if (s == VP_OK) s = vp_metric_json_add(o, "deflated_sharpe_frac", x->deflated_sharpe);
        if (s == VP_OK) s = vp_metric_json_add(o, "learner_step_ms", x->step_ms);
        if (s == VP_OK) s = vp_metric_json_add(o, "parameters", x->parameters >= 0 ? (double)x->parameters : NAN);
    }
    return vp_job_json_write(out, root, s, "ablate.json");
}

/* A cell of escaped text. */
static void cell(FILE* out, const char* cls, const char* text) {
    fprintf(out, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    vp_html_escape_write(out, text);
    fputs("</td>", out);
}

static vp_status write_html(FILE* out, const void* ctx) {
    const vp_ablate_result* r = (const vp_ablate_result*)ctx;
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>vulpes ablation</title>\n<style>body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;"
          "color:#1d1d1d}table{border-collapse:collapse;font-size:13px;margin-bottom:16px}th,td{border:1px solid "
          "#c8c8c8;padding:3px 8px}th{background:#eef1f6;white-space:nowrap}td{text-align:right;white-space:nowrap;"
          "font-variant-numeric:tabular-nums}td.l{text-align:left}.note{color:#555;font-size:12px;max-width:60em}"
          "</style>\n</head>\n<body>\n",
          out);
    fprintf(out, "<h1>Ablation: %d variant%s x %lld seed%s</h1>\n", r->n_variants, r->n_variants == 1 ? "" : "s",
            (long long)r->seeds, r->seeds == 1 ? "" : "s");
    if (r->interrupted)
        fprintf(out, "<p><b>%lld of %lld runs finished</b>: the table covers those; a resume runs the rest.</p>\n",
                (long long)r->n_done, (long long)r->n_runs);
    fputs("<table class=\"ablate\">\n<tr><th>variant</th><th>seeds</th><th>test Sharpe</th><th>+- SE</th>"
          "<th>deflated Sharpe (best seed)</th><th>best seed</th><th>ms / learner step</th><th>parameters</th></tr>\n",
          out);
    row_text t;
    char n[32];
    for (int v = 0; v < r->n_variants; ++v) {
        row_texts(r, v, &t);
        snprintf(n, sizeof n, "%lld", (long long)r->rows[v].seeds);
        fputs("<tr>", out);
        cell(out, "l", r->variants[v].name);
        cell(out, NULL, n), cell(out, NULL, t.mean), cell(out, NULL, t.se), cell(out, NULL, t.dsr);
        cell(out, NULL, t.seed), cell(out, NULL, t.ms), cell(out, NULL, t.params);
        fputs("</tr>\n", out);
    }
    char sr0[32], var[32];
    fprintf(out, "</table>\n<p class=\"note\">Test Sharpe: mean over the seeds with a defined one, +- its standard "
            "error (sample std / sqrt n). Deflated Sharpe over %lld runs: SR0 %s, trials' Sharpe variance %s; ",
            (long long)r->n_trials, fmt(r->expected_max_sharpe, VP_METRIC_UNIT_RATIO, sr0, sizeof sr0),
            fmt(r->trials_sharpe_variance, VP_METRIC_UNIT_RATIO, var, sizeof var));
    vp_html_escape_write(out, DEFLATION_RULE ". " STEP_RULE ".");
    fputs("</p>\n<h2>Runs</h2>\n<table class=\"runs\">\n<tr><th>variant</th><th>seed</th><th>status</th>"
          "<th>test Sharpe</th><th>deflated Sharpe</th><th>ms / learner step</th><th>report</th></tr>\n",
          out);
    const size_t root = strlen(r->dir);
    for (int64_t i = 0; i < r->n_runs; ++i) {
        const vp_ablate_trial* x = &r->runs[i];
        char seed[32], sh[32], dsr[32], ms[32];
        snprintf(seed, sizeof seed, "%lld", (long long)x->seed);
        if (isfinite(x->step_ms)) snprintf(ms, sizeof ms, "%.3f", x->step_ms);
        else snprintf(ms, sizeof ms, "-");
        fputs("<tr>", out);
        cell(out, "l", r->variants[x->variant].name);
        cell(out, NULL, seed);
        cell(out, "l", x->finished ? "finished" : "unfinished");
        cell(out, NULL, fmt(x->sharpe, VP_METRIC_UNIT_RATIO, sh, sizeof sh));
        cell(out, NULL, fmt(x->deflated_sharpe, VP_METRIC_UNIT_FRAC, dsr, sizeof dsr));
        cell(out, NULL, ms);
        // the run's own page, relative to this one (the folder can move)
        const char* rel = strncmp(x->dir, r->dir, root) == 0 && x->dir[root] == '/' ? x->dir + root + 1 : x->dir;
        fputs("<td class=\"l\">", out);
        if (x->finished) {
            fputs("<a href=\"", out);
            vp_html_escape_write(out, rel);
            fputs("/report.html\">", out);
            vp_html_escape_write(out, rel);
            fputs("/report.html</a>", out);
        } else {
            fputs("-", out);
        }
        fputs("</td></tr>\n", out);
    }
    fprintf(out, "</table>\n<p class=\"note\">Each run is a <code>vulpes train</code> run folder; its figures come "
            "from its summary.json (the test span's exact backtest) and metrics.jsonl. Written by vulpes %s.</p>\n"
            "</body>\n</html>\n", VP_VERSION_STRING);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the ablation page failed: %s", strerror(errno));
    return VP_OK;
}

vp_status vp_ablate_write(const vp_ablate_result* r) {
    VP_REQUIRE(r != NULL, VP_ERR_INVALID_ARG, "vp_ablate_write: NULL argument");
    static const char* const names[3] = {"ablate.csv", "ablate.json", "report.html"};
    static const vp_job_writer writers[3] = {write_csv, write_json, write_html};
    return vp_job_write_files(r->dir, names, writers, 3, r);
}
