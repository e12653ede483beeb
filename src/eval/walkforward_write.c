/* What a walk-forward writes at its top: equity.csv (the stitched curve), trades.csv (the
 * stitched folds' test trades), summary.json (the plan, the per-fold table, the stitched
 * metrics and their weight over the folds, a ruin) and report.html (the curve against
 * buy-and-hold, the per-fold table, the metrics, the weight, a ruin). Folds are numbered from
 * 1; spans are bar indices [begin_bar, end_bar) beside the times of their first and last bars. */
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

/* trades.csv: the stitched folds' trades.csv rows, each with its fold number first. */
static vp_status write_trades(const vp_wf_ctx* c, const vp_wf_result* r) {
    char path[VP_RUN_PATH_MAX + 16], src[VP_RUN_PATH_MAX];
    VP_TRY(vp_wf_top_file(c, vp_trades_schema.file, path, sizeof path));
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    vp_csv_write_header(f.f, &vp_trades_schema, "fold,");
    vp_status s = VP_OK;
    for (int64_t k = 0; k < r->n_stitched && s == VP_OK; ++k) {
        trade_copy t = {f.f, ""};
        snprintf(t.prefix, sizeof t.prefix, "%lld,", (long long)(k + 1));
        s = vp_wf_fold_file(c, k, vp_trades_schema.file, src, sizeof src);
        if (s == VP_OK) s = vp_csv_read(src, &vp_trades_schema, copy_trade, &t);
    }
    if (s != VP_OK) {
        vp_atomic_file_abort(&f);
        return s;
    }
    return vp_atomic_file_commit(&f);
}

/* {begin_bar, end_bar (excluded), first_time, last_time (of the first and last bars)} of span s
 * into obj[key]. */
static void add_span(const vp_wf_ctx* c, cJSON* obj, const char* key, vp_span s) {
    char t[32];
    cJSON* o = cJSON_AddObjectToObject(obj, key);
    cJSON_AddNumberToObject(o, "begin_bar", (double)s.begin);
    cJSON_AddNumberToObject(o, "end_bar", (double)s.end);
    cJSON_AddStringToObject(o, "first_time", vp_time_format_iso(c->data.bars.time_ms[s.begin], t, sizeof t));
    cJSON_AddStringToObject(o, "last_time", vp_time_format_iso(c->data.bars.time_ms[s.end - 1], t, sizeof t));
}

/* A ruin under key: {fold, bar, time, close_bar, close_time, equity_at_ruin_ccy,
 * equity_after_close_ccy (the stitched account's; null when not stitched),
 * fold_start_equity_ccy, fold_equity_at_ruin_ccy, fold_equity_after_close_ccy (the fold's own
 * test window's), below_zero}, or null when f is NULL or did not ruin. */
static vp_status add_ruin(const vp_wf_ctx* c, cJSON* obj, const char* key, const vp_wf_fold* f) {
    if (!f || !f->ruined) {
        VP_REQUIRE(cJSON_AddNullToObject(obj, key) != NULL, VP_ERR_OOM, "summary.json: out of memory");
        return VP_OK;
    }
    const vp_wf_ruin* ru = &f->ruin;
    char t[32];
    cJSON* o = cJSON_AddObjectToObject(obj, key);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddNumberToObject(o, "fold", (double)f->index);
    cJSON_AddNumberToObject(o, "bar", (double)ru->bar);
    cJSON_AddStringToObject(o, "time", vp_time_format_iso(c->data.bars.time_ms[ru->bar], t, sizeof t));
    cJSON_AddNumberToObject(o, "close_bar", (double)ru->close_bar);
    cJSON_AddStringToObject(o, "close_time", vp_time_format_iso(c->data.bars.time_ms[ru->close_bar], t, sizeof t));
    VP_TRY(vp_metric_json_add(o, "equity_at_ruin_ccy", ru->equity_at_ruin));
    VP_TRY(vp_metric_json_add(o, "equity_after_close_ccy", ru->equity_after_close));
    VP_TRY(vp_metric_json_add(o, "fold_start_equity_ccy", ru->fold_start_equity));
    VP_TRY(vp_metric_json_add(o, "fold_equity_at_ruin_ccy", ru->fold_equity_at_ruin));
    VP_TRY(vp_metric_json_add(o, "fold_equity_after_close_ccy", ru->fold_equity_after_close));
    VP_REQUIRE(cJSON_AddBoolToObject(o, "below_zero", ru->below_zero) != NULL, VP_ERR_OOM,
               "summary.json: out of memory");
    return VP_OK;
}


/* The stitched Sharpe's weight: its SE and PSR, whether it is distinguishable from noise, and
 * its deflation over the folds (the same keys as a training run's best_validation). */
static vp_status add_significance(cJSON* wf, const vp_wf_result* r) {
    const vp_perf* p = &r->summary.strategy;
    const vp_wf_weight* w = &r->weight;
    cJSON* o = cJSON_AddObjectToObject(wf, "significance");
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    const double psr_bh = vp_perf_psr_vs(p, &r->summary.buy_hold);
    VP_TRY(vp_metric_json_add(o, "sharpe_ratio", p->sharpe));
    VP_TRY(vp_metric_json_add(o, "sharpe_se_ratio", p->sharpe_se));
    VP_TRY(vp_metric_json_add(o, "psr_vs_zero_frac", p->psr_vs_zero));
    VP_TRY(vp_metric_json_add(o, "psr_vs_buy_hold_frac", psr_bh));
    cJSON_AddBoolToObject(o, "distinguishable_from_noise", p->psr_vs_zero >= 0.95 || p->psr_vs_zero <= 0.05);
    cJSON_AddStringToObject(o, "verdict", vp_psr_verdict(p->psr_vs_zero));
    VP_TRY(vp_metric_json_add(o, "trials", (double)w->n_trials));
    VP_TRY(vp_metric_json_add(o, "trials_with_sharpe", (double)w->n_defined));
    VP_TRY(vp_metric_json_add(o, "trials_sharpe_variance", w->trials_sharpe_variance));
    VP_TRY(vp_metric_json_add(o, "expected_max_sharpe", w->expected_max_sharpe));
    VP_TRY(vp_metric_json_add(o, "deflated_sharpe", w->deflated_sharpe));
    cJSON_AddBoolToObject(o, "survives_deflation", w->deflated_sharpe >= 0.95);
    VP_REQUIRE(cJSON_AddStringToObject(o, "rule", VP_WF_DEFLATION_RULE) != NULL, VP_ERR_OOM,
               "summary.json: out of memory");
    return VP_OK;
}

/* summary.json: the status ("ruined" when a fold ruined the stitched account, else "ok") first,
 * the stitched metrics (the strategy's status "ruined" then), then "walkforward" with the
 * settings, the ruin, the stitched Sharpe's weight and the folds. */
static vp_status write_summary(const vp_wf_ctx* c, const vp_wf_result* r) {
    cJSON* root = NULL;
    VP_TRY(vp_metrics_to_json(&r->summary, &root));
    const vp_wf_fold* ruined = r->ruined_fold > 0 ? &r->folds[r->ruined_fold - 1] : NULL;
    cJSON* status = cJSON_AddStringToObject(root, "status", ruined ? "ruined" : "ok");
    if (status) cJSON_InsertItemInArray(root, 0, cJSON_DetachItemViaPointer(root, status));
    vp_status s = status ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "summary.json: out of memory");
    if (s == VP_OK && ruined) s = vp_metrics_json_mark_ruined(root, "strategy");
    cJSON* wf = cJSON_AddObjectToObject(root, "walkforward");
    cJSON_AddStringToObject(wf, "data", c->data.source);
    cJSON_AddStringToObject(wf, "numbering", "folds numbered from 1 (folder folds/fold_NNN); spans are bar indices "
                            "[begin_bar, end_bar), end excluded, with the times of their first and last bars");
    cJSON_AddNumberToObject(wf, "n_folds", (double)r->n_folds);
    cJSON_AddNumberToObject(wf, "n_folds_done", (double)r->n_done);
    cJSON_AddNumberToObject(wf, "n_folds_stitched", (double)r->n_stitched);
    int64_t n_ruined = 0;
    for (int64_t k = 0; k < r->n_done; ++k) n_ruined += r->folds[k].ruined != 0;
    cJSON_AddNumberToObject(wf, "n_folds_ruined", (double)n_ruined);
    if (r->ruined_fold > 0) cJSON_AddNumberToObject(wf, "ruined_fold", (double)r->ruined_fold);
    else cJSON_AddNullToObject(wf, "ruined_fold");
    if (s == VP_OK) s = add_ruin(c, wf, "ruin", ruined);
    cJSON_AddBoolToObject(wf, "interrupted", r->interrupted);
    cJSON_AddBoolToObject(wf, "warm_start", c->wf->warm_start);
    cJSON_AddBoolToObject(wf, "anchored", c->wf->anchored);
    cJSON_AddNumberToObject(wf, "iterations_per_fold", (double)c->cfg->train.iterations);
    if (s == VP_OK) s = add_significance(wf, r);
    cJSON* arr = cJSON_AddArrayToObject(wf, "folds");
    for (int64_t k = 0; s == VP_OK && k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        cJSON* o = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, o);
        cJSON_AddNumberToObject(o, "fold", (double)f->index);
        add_span(c, o, "train_span", f->split.train);
        add_span(c, o, "val_span", f->split.val);
        add_span(c, o, "test_span", f->split.test);
        s = vp_metric_json_add(o, "val_sharpe_ratio", f->val_sharpe);
        cJSON_AddNumberToObject(o, "best_iteration", (double)f->best_iteration);
        cJSON_AddBoolToObject(o, "ruined", f->ruined);
        if (s == VP_OK) s = add_ruin(c, o, "ruin", f);
        cJSON_AddBoolToObject(o, "stitched", f->stitched);
        if (s == VP_OK) s = vp_metric_json_add(o, "start_equity_ccy", f->stitched ? f->start_equity : NAN);
        if (s == VP_OK) s = vp_metric_json_add(o, "end_equity_ccy", f->stitched ? f->end_equity : NAN);
        if (s == VP_OK) s = vp_perf_to_json(&f->test, cJSON_AddObjectToObject(o, "strategy"));
        if (s == VP_OK) s = vp_perf_to_json(&f->buy_hold, cJSON_AddObjectToObject(o, "buy_and_hold"));
        if (s == VP_OK) s = vp_trade_stats_to_json(&f->trades, cJSON_AddObjectToObject(o, "trades"));
        if (s == VP_OK && f->ruined) s = vp_metrics_json_mark_ruined(o, "strategy");
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

/* report.html: the stitched curve, the per-fold table, the metrics and the config; the
 * stitched Sharpe's weight with its deflation over the folds in the header; a ruin in the title,
 * as the warning line under it and on the metrics. */
static vp_status write_report(const vp_wf_ctx* c, const vp_wf_result* r, const double* dd) {
    int64_t* times = (int64_t*)malloc(sizeof(int64_t) * (size_t)r->n_curve);
    vp_report_fold* rows = (vp_report_fold*)calloc((size_t)r->n_done, sizeof(vp_report_fold));
    vp_status s = times && rows ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "report.html: out of memory");
    for (int64_t j = 0; s == VP_OK && j < r->n_curve; ++j) times[j] = c->data.bars.time_ms[r->bar[j]];
    for (int64_t k = 0; s == VP_OK && k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        vp_report_fold* x = &rows[k];
        x->index = (int32_t)f->index;
        x->train_start_ms = c->data.bars.time_ms[f->split.train.begin];
        x->test_start_ms = c->data.bars.time_ms[f->split.test.begin];
        x->test_end_ms = c->data.bars.time_ms[f->split.test.end - 1];
        x->val_score = f->val_sharpe;
        x->test = f->test;
        x->buy_hold = f->buy_hold;
        x->trades = f->trades;
    }
    char title[128], path[VP_RUN_PATH_MAX + 16], line[2048];
    int k = snprintf(title, sizeof title, "walk-forward: %lld of %lld %s", (long long)r->n_done, (long long)r->n_folds,
                     vp_plural(r->n_folds, "fold", "folds"));
    if (r->ruined_fold > 0 && k > 0 && (size_t)k < sizeof title)
        snprintf(title + k, sizeof title - (size_t)k, " (RUINED in fold %lld, at bar %lld)", (long long)r->ruined_fold,
                 (long long)r->folds[r->ruined_fold - 1].ruin.bar);
    const char* warnings[1] = {vp_wf_ruin_line(r, line, sizeof line)};
    vp_report rep;
    memset(&rep, 0, sizeof rep);
    rep.title = title;
    rep.n = r->n_curve, rep.times_ms = times, rep.equity = r->equity, rep.benchmark = r->benchmark, rep.drawdown = dd;
    rep.metrics = &r->summary;
    rep.folds = rows, rep.n_folds = r->n_done;
    rep.config_text = c->config_yaml;
    rep.position = r->position, rep.data_file = c->data.source;
    // the deflated Sharpe over the folds (each fold's selection a trial)
    rep.selection_trials = r->weight.n_trials;
    rep.deflated_sharpe = r->weight.deflated_sharpe;
    rep.trials_label = "folds";
    rep.warnings = warnings;
    rep.n_warnings = r->ruined_fold > 0;
    rep.ruined[0] = r->ruined_fold > 0;
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
