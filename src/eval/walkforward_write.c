/* What a walk-forward writes at its top: equity.csv (the stitched curve), trades.csv (every
 * fold's test trades), summary.json (the plan, the per-fold table, the stitched metrics) and
 * report.html (the curve against buy-and-hold, the per-fold table, the metrics); and the
 * per-fold table as text. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "vulpes/backtest.h"
#include "vulpes/data.h"
#include "eval/walkforward_impl.h"
#include "vulpes/report.h"

/* DIR/file into out[n]. */
static vp_status top_file(const vp_wf_ctx* c, const char* file, char* out, size_t n) {
    VP_REQUIRE(snprintf(out, n, "%s/%s", c->opts->dir, file) < (int)n, VP_ERR_INVALID_ARG, "path %s/%s is too long",
               c->opts->dir, file);
    return VP_OK;
}

/* equity.csv: time, bar, fold, stitched equity, position, drawdown, stitched buy-and-hold. */
static vp_status write_equity(const vp_wf_ctx* c, const vp_wf_result* r, const double* dd) {
    char path[VP_RUN_PATH_MAX + 16], tb[32], e[3][32];
    VP_TRY(top_file(c, "equity.csv", path, sizeof path));
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    fprintf(f.f, "time,bar,fold,equity,position,drawdown,buy_hold_equity\n");
    for (int64_t j = 0; j < r->n_curve; ++j)
        fprintf(f.f, "%s,%lld,%d,%s,%.0f,%s,%s\n", vp_time_format_iso(c->data.bars.time_ms[r->bar[j]], tb, 32),
                (long long)r->bar[j], (int)r->fold[j], vp_eval_format_exact(r->equity[j], e[0]), r->position[j],
                vp_eval_format_exact(dd[j], e[1]), vp_eval_format_exact(r->benchmark[j], e[2]));
    return vp_atomic_file_commit(&f);
}

/* trades.csv: the folds' trades.csv rows, each with its fold number first. */
static vp_status write_trades(const vp_wf_ctx* c, const vp_wf_result* r) {
    char path[VP_RUN_PATH_MAX + 16], src[VP_RUN_PATH_MAX], line[1024];
    VP_TRY(top_file(c, "trades.csv", path, sizeof path));
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    for (int64_t k = 0; k < r->n_done; ++k) {
        vp_status s = vp_wf_fold_file(c, k, "trades.csv", src, sizeof src);
        FILE* in = s == VP_OK ? fopen(src, "r") : NULL;
        if (!in) {
            vp_atomic_file_abort(&f);
            VP_FAIL(VP_ERR_IO, "cannot read %s", src);
        }
        for (int64_t ln = 0; fgets(line, sizeof line, in); ++ln) {
            if (ln == 0 && k == 0) fprintf(f.f, "fold,%s", line);
            if (ln > 0) fprintf(f.f, "%lld,%s", (long long)k, line);
        }
        fclose(in);
    }
    return vp_atomic_file_commit(&f);
}

/* {first_bar, last_bar, first_time, last_time} of span s into obj[key]. */
static void add_span(const vp_wf_ctx* c, cJSON* obj, const char* key, vp_span s) {
    char t[32];
    cJSON* o = cJSON_AddObjectToObject(obj, key);
    cJSON_AddNumberToObject(o, "first_bar", (double)s.begin);
    cJSON_AddNumberToObject(o, "last_bar", (double)(s.end - 1));
    cJSON_AddStringToObject(o, "first_time", vp_time_format_iso(c->data.bars.time_ms[s.begin], t, sizeof t));
    cJSON_AddStringToObject(o, "last_time", vp_time_format_iso(c->data.bars.time_ms[s.end - 1], t, sizeof t));
}

/* summary.json: the stitched metrics, then "walkforward" with the settings and the folds. */
static vp_status write_summary(const vp_wf_ctx* c, const vp_wf_result* r) {
    cJSON* root = NULL;
    VP_TRY(vp_metrics_to_json(&r->summary, &root));
    cJSON* wf = cJSON_AddObjectToObject(root, "walkforward");
    cJSON_AddStringToObject(wf, "data", c->data.source);
    cJSON_AddNumberToObject(wf, "n_folds", (double)r->n_folds);
    cJSON_AddNumberToObject(wf, "n_folds_done", (double)r->n_done);
    cJSON_AddBoolToObject(wf, "interrupted", r->interrupted);
    cJSON_AddBoolToObject(wf, "warm_start", c->wf->warm_start);
    cJSON_AddBoolToObject(wf, "anchored", c->wf->anchored);
    cJSON_AddNumberToObject(wf, "iterations_per_fold", (double)c->cfg->train.iterations);
    vp_status s = VP_OK;
    cJSON* arr = cJSON_AddArrayToObject(wf, "folds");
    for (int64_t k = 0; s == VP_OK && k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        cJSON* o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddNumberToObject(o, "fold", (double)k);
        add_span(c, o, "train_span", f->split.train);
        add_span(c, o, "val_span", f->split.val);
        add_span(c, o, "test_span", f->split.test);
        s = vp_metric_json_add(o, "val_sharpe_ratio", f->val_sharpe);
        cJSON_AddNumberToObject(o, "best_iteration", (double)f->best_iteration);
        cJSON_AddNumberToObject(o, "start_equity_ccy", f->start_equity);
        cJSON_AddNumberToObject(o, "end_equity_ccy", f->end_equity);
        if (s == VP_OK) s = vp_perf_to_json(&f->test, cJSON_AddObjectToObject(o, "strategy"));
        if (s == VP_OK) s = vp_perf_to_json(&f->buy_hold, cJSON_AddObjectToObject(o, "buy_and_hold"));
        if (s == VP_OK) s = vp_trade_stats_to_json(&f->trades, cJSON_AddObjectToObject(o, "trades"));
    }
    char* text = s == VP_OK ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    VP_TRY(s);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "summary.json: out of memory");
    char path[VP_RUN_PATH_MAX + 16];
    s = top_file(c, "summary.json", path, sizeof path);
    if (s == VP_OK) s = vp_file_write_atomic(path, text, strlen(text));
    free(text);
    return s;
}

/* report.html: the stitched curve, the per-fold table, the metrics and the config. */
static vp_status write_report(const vp_wf_ctx* c, const vp_wf_result* r, const double* dd) {
    int64_t* times = (int64_t*)malloc(sizeof(int64_t) * (size_t)r->n_curve);
    vp_report_fold* rows = (vp_report_fold*)calloc((size_t)r->n_done, sizeof(vp_report_fold));
    vp_status s = times && rows ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "report.html: out of memory");
    for (int64_t j = 0; s == VP_OK && j < r->n_curve; ++j) times[j] = c->data.bars.time_ms[r->bar[j]];
    for (int64_t k = 0; s == VP_OK && k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        vp_report_fold* x = &rows[k];
        x->index = (int32_t)k;
        x->train_start_ms = c->data.bars.time_ms[f->split.train.begin];
        x->test_start_ms = c->data.bars.time_ms[f->split.test.begin];
        x->test_end_ms = c->data.bars.time_ms[f->split.test.end - 1];
        x->val_score = f->val_sharpe;
        x->test = f->test;
        x->buy_hold = f->buy_hold;
        x->trades = f->trades;
    }
    char title[96], path[VP_RUN_PATH_MAX + 16];
    snprintf(title, sizeof title, "walk-forward: %lld of %lld folds", (long long)r->n_done, (long long)r->n_folds);
    vp_report rep = {title, r->n_curve, times, r->equity, r->benchmark, dd, &r->summary, rows, r->n_done,
                     c->config_yaml};
    if (s == VP_OK) s = top_file(c, "report.html", path, sizeof path);
    if (s == VP_OK) s = vp_report_write(path, &rep);
    free(times);
    free(rows);
    return s;
}

vp_status vp_wf_write(const vp_wf_ctx* c, const vp_wf_result* r) {
    double* dd = (double*)malloc(sizeof(double) * (size_t)r->n_curve);
    VP_REQUIRE(dd != NULL, VP_ERR_OOM, "walk-forward: drawdown of %lld points", (long long)r->n_curve);
    vp_status s = vp_drawdown_series(r->equity, r->n_curve, dd);
    if (s == VP_OK) s = write_equity(c, r, dd);
    if (s == VP_OK) s = write_trades(c, r);
    if (s == VP_OK) s = write_summary(c, r);
    if (s == VP_OK) s = write_report(c, r, dd);
    free(dd);
    return s;
}

vp_status vp_wf_print(const vp_wf_result* r, FILE* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_wf_print: NULL argument");
    fprintf(out, "%-5s %-20s %-20s %11s %11s %12s %12s %7s %14s\n", "fold", "test from", "test to", "val Sharpe",
            "test Sharpe", "test return", "B&H return", "trades", "end equity");
    char b[6][32];
    for (int64_t k = 0; k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        fprintf(out, "%-5lld %-20s %-20s %11s %11s %12s %12s %7lld %14.2f\n", (long long)k,
                vp_time_format_iso(f->test_first_ms, b[4], 32), vp_time_format_iso(f->test_last_ms, b[5], 32),
                vp_metric_format(f->val_sharpe, VP_METRIC_UNIT_RATIO, b[0], 32),
                vp_metric_format(f->test.sharpe, VP_METRIC_UNIT_RATIO, b[1], 32),
                vp_metric_format(f->test.total_return, VP_METRIC_UNIT_FRAC, b[2], 32),
                vp_metric_format(f->buy_hold.total_return, VP_METRIC_UNIT_FRAC, b[3], 32),
                (long long)f->trades.n_trades, f->end_equity);
    }
    fprintf(out, "\nstitched out-of-sample curve: %lld of %lld folds%s\n", (long long)r->n_done,
            (long long)r->n_folds, r->interrupted ? " (interrupted: --resume continues)" : "");
    return vp_metrics_print(&r->summary, out);
}
