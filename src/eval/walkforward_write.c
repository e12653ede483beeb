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
#include "eval/walkforward_impl.h"
#include "vulpes/data.h"
#include "vulpes/report.h"

/* The stitched equity.csv's columns. */
enum { WF_TIME = 0, WF_BAR, WF_FOLD, WF_EQUITY, WF_POSITION, WF_DRAWDOWN, WF_BUY_HOLD, WF_COL_COUNT };
static const char* const WF_EQUITY_COLUMNS[WF_COL_COUNT] = {"bar_open_time", "bar",      "fold",           "equity",
                                                            "position",      "drawdown", "buy_hold_equity"};
static const vp_csv_schema WF_EQUITY_FILE = {"equity.csv", WF_EQUITY_COLUMNS, WF_COL_COUNT};

/* equity.csv: bar open time, bar, fold, stitched equity, position, drawdown, stitched
 * buy-and-hold (marked at the bar's close). */
static vp_status write_equity(const vp_wf_ctx* c, const vp_wf_result* r, const double* dd) {
    char path[VP_RUN_PATH_MAX + 16], tb[32], e[3][32], n[3][24];
    VP_TRY(vp_wf_top_file(c, WF_EQUITY_FILE.file, path, sizeof path));
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    vp_csv_write_header(f.f, &WF_EQUITY_FILE, "");
    const char* fl[WF_COL_COUNT];
    for (int64_t j = 0; j < r->n_curve; ++j) {
        snprintf(n[0], sizeof n[0], "%lld", (long long)r->bar[j]);
        snprintf(n[1], sizeof n[1], "%d", (int)r->fold[j]);
        snprintf(n[2], sizeof n[2], "%.0f", r->position[j]);
        fl[WF_TIME] = vp_time_format_iso(c->data.bars.time_ms[r->bar[j]], tb, 32);
        fl[WF_BAR] = n[0];
        fl[WF_FOLD] = n[1];
        fl[WF_EQUITY] = vp_eval_format_exact(r->equity[j], e[0]);
        fl[WF_POSITION] = n[2];
        fl[WF_DRAWDOWN] = vp_eval_format_exact(dd[j], e[1]);
        fl[WF_BUY_HOLD] = vp_eval_format_exact(r->benchmark[j], e[2]);
        vp_csv_write_row(f.f, &WF_EQUITY_FILE, "", (const char* const*)fl);
    }
    return vp_atomic_file_commit(&f);
}

/* One fold's trades.csv row into the stitched file, its fold number first. */
typedef struct trade_copy {
    FILE* out;
    char prefix[24]; /* "K," */
} trade_copy;

static vp_status copy_trade(void* ctx, char** fields) {
    const trade_copy* t = (const trade_copy*)ctx;
    vp_csv_write_row(t->out, &vp_trades_schema, t->prefix, (const char* const*)fields);
    return VP_OK;
}

/* trades.csv: the folds' trades.csv rows, each with its fold number first. */
static vp_status write_trades(const vp_wf_ctx* c, const vp_wf_result* r) {
    char path[VP_RUN_PATH_MAX + 16], src[VP_RUN_PATH_MAX];
    VP_TRY(vp_wf_top_file(c, vp_trades_schema.file, path, sizeof path));
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    vp_csv_write_header(f.f, &vp_trades_schema, "fold,");
    vp_status s = VP_OK;
    for (int64_t k = 0; k < r->n_done && s == VP_OK; ++k) {
        trade_copy t = {f.f, ""};
        snprintf(t.prefix, sizeof t.prefix, "%lld,", (long long)k);
        s = vp_wf_fold_file(c, k, vp_trades_schema.file, src, sizeof src);
        if (s == VP_OK) s = vp_csv_read(src, &vp_trades_schema, copy_trade, &t);
    }
    if (s != VP_OK) {
        vp_atomic_file_abort(&f);
        return s;
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
    s = vp_wf_top_file(c, "summary.json", path, sizeof path);
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
                     c->config_yaml, 0, NAN, NULL, 0, NULL, 0, {0, 0, 0}};
    if (s == VP_OK) s = vp_wf_top_file(c, "report.html", path, sizeof path);
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
