/* What a backtest writes: trades.csv, equity.csv, summary.json and report.html, each
 * atomically (NAME.tmp, then renamed over NAME). Numbers in the CSV files read back bit for
 * bit: each is written with 15 significant digits, or 17 when 15 do not read back. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/eval_impl.h"
#include "vulpes/backtest.h"
#include "vulpes/data.h"
#include "vulpes/report.h"
#include "vulpes/run.h"

/* Makes `dir` and its parents. */
static vp_status make_dir(const char* dir) {
    char path[VP_RUN_PATH_MAX];
    VP_REQUIRE(snprintf(path, sizeof path, "%s", dir) < (int)sizeof path, VP_ERR_INVALID_ARG,
               "backtest output folder '%.60s...' is too long", dir);
    for (char* p = path + 1;; ++p) {
        const char c = *p;
        if (c != '/' && c != '\0') continue;
        *p = '\0';
        VP_REQUIRE(mkdir(path, 0777) == 0 || errno == EEXIST, VP_ERR_IO, "cannot make folder %s: %s", path,
                   strerror(errno));
        *p = c;
        if (c == '\0') break;
    }
    return VP_OK;
}

/* DIR/name into out[n]. */
static vp_status join(const char* dir, const char* name, char* out, size_t n) {
    VP_REQUIRE(snprintf(out, n, "%s/%s", dir, name) < (int)n, VP_ERR_INVALID_ARG, "path %s/%s is too long", dir, name);
    return VP_OK;
}

/* ISO time of bar i, or "" without bars. */
static const char* bar_time(const vp_backtest_info* info, int64_t i, char* buf) {
    buf[0] = '\0';
    if (info->bars && i >= 0 && i < info->bars->n) vp_time_format_iso(info->bars->time_ms[i], buf, 32);
    return buf;
}

const char* vp_eval_format_exact(double v, char* buf) {
    snprintf(buf, 32, "%.15g", v);
    if (strtod(buf, NULL) != v) snprintf(buf, 32, "%.17g", v);
    return buf;
}

/* trades.csv: one row per closed trade. */
static vp_status write_trades(const vp_rollout_result* r, const vp_backtest_info* info, const char* path) {
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    fprintf(f.f, "window,side,size,entry_time,entry_bar,entry_price,exit_time,exit_bar,exit_price,pnl,costs,"
                 "bars_held,exit_reason\n");
    char t0[32], t1[32], x[4][32];
    for (int64_t i = 0; i < r->n_trades; ++i) {
        const vp_rollout_trade* t = &r->trades[i];
        fprintf(f.f, "%d,%s,%d,%s,%lld,%s,%s,%lld,%s,%s,%s,%lld,%s\n", (int)t->window, t->side > 0 ? "long" : "short",
                (int)t->size, bar_time(info, t->entry_bar, t0), (long long)t->entry_bar,
                vp_eval_format_exact(t->entry_price, x[0]), bar_time(info, t->exit_bar, t1), (long long)t->exit_bar,
                vp_eval_format_exact(t->exit_price, x[1]), vp_eval_format_exact(t->pnl, x[2]),
                vp_eval_format_exact(t->costs, x[3]), (long long)t->bars_held, vp_exit_reason_name(t->reason));
    }
    return vp_atomic_file_commit(&f);
}

/* equity.csv: one row per bar of the span — the stitched curve, its drawdown, the position,
 * buy-and-hold, and the choices decided at the bar (-1: none). */
static vp_status write_equity(const vp_rollout_result* r, const char* path) {
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    fprintf(f.f, "time,bar,window,equity,position,drawdown,buy_hold_equity,direction,size,take_profit,stop_loss\n");
    char tb[32], e0[32], e1[32], e2[32];
    int64_t w = 0;
    for (int64_t j = 0; j < r->n_curve; ++j) {
        const int64_t bar = r->span.begin + j;
        // the window deciding at this bar (the last one at the final bar)
        while (w + 1 < r->n_windows && r->windows[w + 1].begin <= bar) ++w;
        const vp_rollout_window* x = &r->windows[w];
        const int64_t k = bar - x->begin;
        const int32_t* a = k + 1 < x->n_points ? r->action + (x->offset + k) * 4 : NULL;
        fprintf(f.f, "%s,%lld,%lld,%s,%.0f,%s,%s,%d,%d,%d,%d\n", vp_time_format_iso(r->curve_time_ms[j], tb, 32),
                (long long)bar, (long long)w, vp_eval_format_exact(r->curve_equity[j], e0), r->curve_position[j],
                vp_eval_format_exact(r->curve_drawdown[j], e1), vp_eval_format_exact(r->curve_benchmark[j], e2),
                a ? a[0] : -1, a ? a[1] : -1, a ? a[2] : -1, a ? a[3] : -1);
    }
    return vp_atomic_file_commit(&f);
}

/* Adds {begin_bar, end_bar, first_time, last_time, bars} of bars [b0, b1] to obj under key. */
static void add_span(cJSON* obj, const char* key, const vp_backtest_info* info, int64_t b0, int64_t b1) {
    char t[32];
    cJSON* s = cJSON_AddObjectToObject(obj, key);
    cJSON_AddNumberToObject(s, "first_bar", (double)b0);
    cJSON_AddNumberToObject(s, "last_bar", (double)b1);
    cJSON_AddStringToObject(s, "first_time", bar_time(info, b0, t));
    cJSON_AddStringToObject(s, "last_time", bar_time(info, b1, t));
    cJSON_AddNumberToObject(s, "n_bars", (double)(b1 - b0 + 1));
}

vp_status vp_backtest_summary_json(const vp_rollout_result* r, const vp_backtest_info* info, cJSON** out) {
    VP_REQUIRE(r != NULL && info != NULL && out != NULL && r->n_windows >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_summary_json: NULL argument or empty result");
    cJSON* root = NULL;
    VP_TRY(vp_metrics_to_json(&r->summary, &root));
    // what ran, over which bars
    cJSON* bt = cJSON_CreateObject();
    cJSON_AddItemToObject(root, "backtest", bt);
    cJSON_AddStringToObject(bt, "mode", r->n_windows == 1 ? "sequential" : "segments");
    cJSON_AddNumberToObject(bt, "n_windows", (double)r->n_windows);
    cJSON_AddStringToObject(bt, "path", r->path ? r->path : "");
    if (info->checkpoint) cJSON_AddStringToObject(bt, "checkpoint", info->checkpoint);
    if (info->data) cJSON_AddStringToObject(bt, "data", info->data);
    add_span(bt, "span", info, r->span.begin, r->span.end - 1);
    cJSON_AddNumberToObject(bt, "n_decisions", (double)(r->span.end - r->span.begin - 1));
    cJSON_AddNumberToObject(bt, "n_trades", (double)r->n_trades);
    // wall-clock figures (the only values that differ between identical runs)
    cJSON* tm = cJSON_AddObjectToObject(root, "timing");
    cJSON_AddNumberToObject(tm, "encode_s", r->encode_s);
    cJSON_AddNumberToObject(tm, "sequential_s", r->sequential_s);
    // the windows, each with its own metrics and buy-and-hold
    if (r->n_windows > 1) {
        cJSON* ws = cJSON_AddArrayToObject(root, "windows");
        for (int64_t w = 0; w < r->n_windows; ++w) {
            const vp_rollout_window* x = &r->windows[w];
            cJSON* o = cJSON_CreateObject();
            cJSON_AddItemToArray(ws, o);
            cJSON_AddNumberToObject(o, "window", (double)w);
            add_span(o, "span", info, x->begin, x->last);
            cJSON_AddBoolToObject(o, "ruined", x->ruined);
            vp_status s = vp_perf_to_json(&x->perf, cJSON_AddObjectToObject(o, "strategy"));
            if (s == VP_OK) s = vp_perf_to_json(&x->buy_hold, cJSON_AddObjectToObject(o, "buy_and_hold"));
            if (s != VP_OK) {
                cJSON_Delete(root);
                return s;
            }
        }
    }
    *out = root;
    return VP_OK;
}

/* summary.json, indented. */
static vp_status write_summary(const vp_rollout_result* r, const vp_backtest_info* info, const char* path) {
    cJSON* root = NULL;
    VP_TRY(vp_backtest_summary_json(r, info, &root));
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "summary.json: out of memory");
    size_t n = strlen(text);
    text[n] = '\n';
    vp_status s = vp_file_write_atomic(path, text, n + 1);
    free(text);
    return s;
}

vp_status vp_backtest_write_files(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir) {
    VP_REQUIRE(r != NULL && info != NULL && dir != NULL && r->n_curve >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_write_files: NULL argument or empty result");
    char path[VP_RUN_PATH_MAX];
    VP_TRY(make_dir(dir));
    VP_TRY(join(dir, "trades.csv", path, sizeof path));
    VP_TRY(write_trades(r, info, path));
    VP_TRY(join(dir, "equity.csv", path, sizeof path));
    VP_TRY(write_equity(r, path));
    // the page: the stitched curve against buy-and-hold, the metrics, the config
    vp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.title = info->title ? info->title : "backtest";
    rep.n = r->n_curve;
    rep.times_ms = r->curve_time_ms;
    rep.equity = r->curve_equity;
    rep.benchmark = r->curve_benchmark;
    rep.drawdown = r->curve_drawdown;
    rep.metrics = &r->summary;
    rep.config_text = info->config_text;
    VP_TRY(join(dir, "report.html", path, sizeof path));
    return vp_report_write(path, &rep);
}

vp_status vp_backtest_write(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir) {
    VP_REQUIRE(r != NULL && info != NULL && dir != NULL && r->n_curve >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_write: NULL argument or empty result");
    VP_TRY(vp_backtest_write_files(r, info, dir));
    char path[VP_RUN_PATH_MAX];
    VP_TRY(join(dir, "summary.json", path, sizeof path));
    return write_summary(r, info, path);
}
