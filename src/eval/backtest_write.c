/* What a backtest writes: trades.csv, equity.csv, summary.json (its object built in
 * backtest_summary.c) and report.html, each atomically (NAME.tmp, then renamed over NAME);
 * and the one reader of the CSV files back
 * (walk-forward stitching), both under the column tables of eval_impl.h. Numbers in the CSV
 * files read back bit for bit: each is written with 15 significant digits, or 17 when 15 do
 * not read back. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/backtest_impl.h"
#include "eval/eval_impl.h"
#include "vulpes/backtest.h"
#include "vulpes/data.h"
#include "eval/report_backtest.h"
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

int vp_tick_decimals(double tick) {
    if (!(tick > 0)) return -1;
    double scaled = tick;
    for (int d = 0; d <= 10; ++d, scaled *= 10.0)
        if (fabs(scaled - nearbyint(scaled)) <= 1e-9 * scaled) return d;
    return -1;
}

/* A price with `decimals` decimals (1.18676), or exact (vp_eval_format_exact) when decimals < 0. */
static const char* format_price(double v, int decimals, char* buf) {
    if (decimals < 0) return vp_eval_format_exact(v, buf);
    snprintf(buf, 32, "%.*f", decimals, v);
    return buf;
}

/* ---- the schema --------------------------------------------------------------------------------- */

#define VP_CSV_NAME_(e, name) name,
static const char* const TRADES_COLUMNS[] = {VP_TRADES_COLUMNS(VP_CSV_NAME_)};
static const char* const EQUITY_COLUMNS[] = {VP_EQUITY_COLUMNS(VP_CSV_NAME_)};
#undef VP_CSV_NAME_

const vp_csv_schema vp_trades_schema = {"trades.csv", TRADES_COLUMNS, VP_TRADES_COL_COUNT};
const vp_csv_schema vp_equity_schema = {"equity.csv", EQUITY_COLUMNS, VP_EQUITY_COL_COUNT};

void vp_csv_write_header(FILE* f, const vp_csv_schema* s, const char* prefix) {
    vp_csv_write_row(f, s, prefix, s->columns);
}

void vp_csv_write_row(FILE* f, const vp_csv_schema* s, const char* prefix, const char* const* fields) {
    fputs(prefix, f);
    for (int i = 0; i < s->n; ++i) {
        if (i) fputc(',', f);
        fputs(fields[i], f);
    }
    fputc('\n', f);
}

void vp_csv_write_field(FILE* f, const char* s) {
    if (!strpbrk(s, ",\"\n\r")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; ++s) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

/* Splits a line (its end of line removed) in place at commas into fields[cap]; returns the
 * number of fields, cap + 1 when there are more. */
static int split_fields(char* line, char** fields, int cap) {
    line[strcspn(line, "\r\n")] = '\0';
    int n = 0;
    for (char* p = line;; ++n) {
        if (n < cap) fields[n] = p;
        char* comma = strchr(p, ',');
        if (!comma) return n + 1 <= cap ? n + 1 : cap + 1;
        *comma = '\0';
        p = comma + 1;
    }
}

vp_status vp_csv_read(const char* path, const vp_csv_schema* s, vp_status (*row)(void* ctx, char** fields), void* ctx) {
    FILE* f = fopen(path, "r");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot read %s", path);
    char* line = NULL;
    size_t cap = 0;
    char* fields[64];
    vp_status st = s->n <= 64 ? VP_OK : vp_set_error(VP_ERR_STATE, VP_WHERE, "%s: %d columns", s->file, s->n);
    for (int64_t ln = 1; st == VP_OK && getline(&line, &cap, f) >= 0; ++ln) {
        const int n = split_fields(line, fields, s->n);
        if (n != s->n) {
            st = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s line %lld: %d fields, %s has %d", path, (long long)ln, n,
                              s->file, s->n);
        } else if (ln == 1) {
            // the header: the schema's names, in order
            for (int i = 0; i < s->n && st == VP_OK; ++i)
                if (strcmp(fields[i], s->columns[i]) != 0)
                    st = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: column %d is '%s', %s's is '%s'", path, i + 1,
                                      fields[i], s->file, s->columns[i]);
        } else {
            st = row(ctx, fields);
        }
    }
    free(line);
    fclose(f);
    return st;
}

/* ---- the writer -------------------------------------------------------------------------------- */

/* trades.csv: one row per closed trade. */
static vp_status write_trades(const vp_rollout_result* r, const vp_backtest_info* info, const char* path) {
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    vp_csv_write_header(f.f, &vp_trades_schema, "");
    char t0[32], t1[32], x[5][32], n[5][24];
    const char* fl[VP_TRADES_COL_COUNT];
    const int dec = vp_tick_decimals(info->tick_size);
    for (int64_t i = 0; i < r->n_trades; ++i) {
        const vp_rollout_trade* t = &r->trades[i];
        snprintf(n[0], sizeof n[0], "%d", (int)t->window);
        snprintf(n[1], sizeof n[1], "%d", (int)t->size);
        snprintf(n[2], sizeof n[2], "%lld", (long long)t->entry_bar);
        snprintf(n[3], sizeof n[3], "%lld", (long long)t->exit_bar);
        snprintf(n[4], sizeof n[4], "%lld", (long long)t->bars_held);
        fl[VP_TRADES_WINDOW] = n[0];
        fl[VP_TRADES_SIDE] = t->side > 0 ? "long" : "short";
        fl[VP_TRADES_SIZE] = n[1];
        fl[VP_TRADES_ENTRY_TIME] = bar_time(info, t->entry_bar, t0);
        fl[VP_TRADES_ENTRY_BAR] = n[2];
        fl[VP_TRADES_ENTRY_PRICE] = format_price(t->entry_price, dec, x[0]);
        fl[VP_TRADES_EXIT_TIME] = bar_time(info, t->exit_bar, t1);
        fl[VP_TRADES_EXIT_BAR] = n[3];
        fl[VP_TRADES_EXIT_PRICE] = format_price(t->exit_price, dec, x[1]);
        fl[VP_TRADES_PNL] = vp_eval_format_exact(t->pnl, x[2]);
        fl[VP_TRADES_COSTS] = vp_eval_format_exact(t->costs, x[3]);
        fl[VP_TRADES_FINANCING] = vp_eval_format_exact(t->financing, x[4]);
        fl[VP_TRADES_BARS_HELD] = n[4];
        fl[VP_TRADES_EXIT_REASON] = vp_exit_reason_name(t->reason);
        vp_csv_write_row(f.f, &vp_trades_schema, "", fl);
    }
    return vp_atomic_file_commit(&f);
}

/* equity.csv: one row per bar of the span, marked at the bar's close and stamped with its
 * open time — the stitched curve, the position, its drawdown, buy-and-hold, and the choices
 * decided at the close (-1: none) with their Q margin (empty: none); the last row's are the
 * decision for the bar after the span. */
static vp_status write_equity(const vp_rollout_result* r, const char* path) {
    vp_atomic_file f;
    VP_TRY(vp_atomic_file_open(&f, path));
    vp_csv_write_header(f.f, &vp_equity_schema, "");
    char tb[32], e[4][32], n[7][24];
    const char* fl[VP_EQUITY_COL_COUNT];
    int64_t w = 0;
    for (int64_t j = 0; j < r->n_curve; ++j) {
        const int64_t bar = r->span.begin + j;
        // the window deciding at this bar (the later one at a boundary, the last one at the final bar)
        while (w + 1 < r->n_windows && r->windows[w + 1].begin <= bar) ++w;
        const vp_rollout_window* x = &r->windows[w];
        const int64_t k = bar - x->begin;
        const int32_t* a = k < x->n_points ? r->action + (x->offset + k) * 4 : NULL;
        const double margin = k < x->n_points ? r->margin[x->offset + k] : NAN;
        snprintf(n[0], sizeof n[0], "%lld", (long long)bar);
        snprintf(n[1], sizeof n[1], "%lld", (long long)w);
        snprintf(n[2], sizeof n[2], "%.0f", r->curve_position[j]);
        for (int i = 0; i < 4; ++i) snprintf(n[3 + i], sizeof n[3 + i], "%d", a ? a[i] : -1);
        fl[VP_EQUITY_BAR_OPEN_TIME] = vp_time_format_iso(r->curve_time_ms[j], tb, 32);
        fl[VP_EQUITY_BAR] = n[0];
        fl[VP_EQUITY_WINDOW] = n[1];
        fl[VP_EQUITY_EQUITY] = vp_eval_format_exact(r->curve_equity[j], e[0]);
        fl[VP_EQUITY_POSITION] = n[2];
        fl[VP_EQUITY_DRAWDOWN] = vp_eval_format_exact(r->curve_drawdown[j], e[1]);
        fl[VP_EQUITY_BUY_HOLD] = vp_eval_format_exact(r->curve_benchmark[j], e[2]);
        fl[VP_EQUITY_DIRECTION] = n[3];
        fl[VP_EQUITY_SIZE] = n[4];
        fl[VP_EQUITY_TAKE_PROFIT] = n[5];
        fl[VP_EQUITY_STOP_LOSS] = n[6];
        fl[VP_EQUITY_Q_MARGIN] = isnan(margin) ? "" : vp_eval_format_exact(margin, e[3]);
        vp_csv_write_row(f.f, &vp_equity_schema, "", fl);
    }
    return vp_atomic_file_commit(&f);
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

/* report.html: the stitched curve against buy-and-hold, the metrics, the config; the
 * heading says when the run ruined (the title and a warning line, the metrics marked), when
 * the leverage limit cut orders of the strategy or of buy-and-hold (a warning line each) and
 * when training saw bars of the span or nobody can tell, and notes the fragile decisions and
 * the decision for the bar after the span. */
static vp_status write_report(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir,
                              const char* path) {
    vp_report rep;
    memset(&rep, 0, sizeof rep);
    const char* base = info->title ? info->title : "backtest";
    char title[480], t[32], lines[6][2048];
    const char* warnings[4];
    const char* notes[2];
    size_t k = (size_t)snprintf(title, sizeof title, "%s", base);
    if (r->ruin.ruined && k < sizeof title)
        k += (size_t)snprintf(title + k, sizeof title - k, " (RUINED at bar %lld, %s)", (long long)r->ruin.bar,
                              vp_bt_bar_time(r, r->ruin.bar, t));
    const vp_backtest_span_info* si = info->span_info;
    if (si && (!si->overlap_known || si->train_bars + si->val_bars > 0) && k < sizeof title) {
        if (si->overlap_known)
            snprintf(title + k, sizeof title - k, " (warning: %lld of the %lld bars were seen in training)",
                     (long long)(si->train_bars + si->val_bars), (long long)si->n_bars);
        else
            snprintf(title + k, sizeof title - k, " (overlap with training unknown: %s)", si->unknown_why);
    }
    rep.title = title;
    // warnings: the ruins and the leverage cuts; notes: the fragile decisions and the next decision
    if (r->ruin.ruined)
        warnings[rep.n_warnings++] =
            vp_bt_ruin_line("the strategy", &r->ruin, r->n_ruined, r->n_windows, lines[0], sizeof lines[0]);
    if (r->buy_hold_ruin.ruined)
        warnings[rep.n_warnings++] = vp_bt_ruin_line("buy & hold", &r->buy_hold_ruin, 0, 1, lines[1], sizeof lines[1]);
    if (r->cuts.orders > 0)
        warnings[rep.n_warnings++] =
            vp_bt_cuts_line(r, "the strategy", &r->cuts, VP_ROLLOUT_CUT_BARS, lines[4], sizeof lines[4]);
    if (r->buy_hold_cuts.orders > 0)
        warnings[rep.n_warnings++] =
            vp_bt_cuts_line(r, "buy & hold", &r->buy_hold_cuts, VP_ROLLOUT_CUT_BARS, lines[5], sizeof lines[5]);
    notes[rep.n_notes++] = vp_bt_fragile_line(r, VP_BT_FRAGILE_LIST, lines[2], sizeof lines[2]);
    notes[rep.n_notes++] = vp_bt_next_line(r, lines[3], sizeof lines[3]);
    rep.warnings = warnings;
    rep.notes = notes;
    rep.ruined[0] = r->ruin.ruined;
    rep.ruined[1] = r->buy_hold_ruin.ruined;
    rep.n = r->n_curve;
    rep.times_ms = r->curve_time_ms;
    rep.equity = r->curve_equity;
    rep.benchmark = r->curve_benchmark;
    rep.drawdown = r->curve_drawdown;
    rep.metrics = &r->summary;
    rep.config_text = info->config_text;
    rep.selection_trials = info->selection_trials;
    rep.deflated_sharpe = info->deflated_sharpe;
    // the tear sheet's price, trades, actions, header and the run's learning curves
    vp_report_backtest st;
    memset(&st, 0, sizeof st);
    vp_status s = vp_report_from_backtest(&rep, r, info, dir, &st);
    if (s == VP_OK) s = vp_report_write(path, &rep);
    vp_report_backtest_free(&st);
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
    VP_TRY(join(dir, "report.html", path, sizeof path));
    return write_report(r, info, dir, path);
}

vp_status vp_backtest_write(const vp_rollout_result* r, const vp_backtest_info* info, const char* dir) {
    VP_REQUIRE(r != NULL && info != NULL && dir != NULL && r->n_curve >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_write: NULL argument or empty result");
    VP_TRY(vp_backtest_write_files(r, info, dir));
    char path[VP_RUN_PATH_MAX];
    VP_TRY(join(dir, "summary.json", path, sizeof path));
    return write_summary(r, info, path);
}
