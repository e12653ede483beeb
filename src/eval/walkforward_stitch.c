/* The stitched out-of-sample result of a walk-forward, read back from the finished folds'
 * files (done.json; equity.csv and trades.csv through the backtest files' schema, eval_impl.h —
 * numbers there read back bit for bit): each fold's test curve starts from the previous fold's
 * ending equity (the curve ends with a fold whose test window was ruined: nothing is left to
 * trade; its last points may be at or below zero, their returns taken as vp_returns_from_equity
 * defines them), the per-fold rows (a ruined one with its ruin), the metrics of the whole
 * curve with its baselines and every stitched test trade, and the stitched Sharpe deflated over
 * the folds. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/eval_impl.h"
#include "eval/walkforward_impl.h"
#include "vulpes/data.h"

/* One fold's test span as read back. */
typedef struct fold_read {
    int64_t n;         /* points */
    int64_t* bar;      /* [n] */
    double* eq;        /* [n] equity from initial */
    double* bh;        /* [n] buy-and-hold from initial */
    double* pos;       /* [n] contracts */
    int64_t n_tr;      /* trades */
    vp_trade* tr;      /* [n_tr] */
    int64_t cap, cap_tr; /* capacities */
} fold_read;

static void fold_read_free(fold_read* f) {
    free(f->bar);
    free(f->eq);
    free(f->bh);
    free(f->pos);
    free(f->tr);
    memset(f, 0, sizeof *f);
}

/* Appends one equity.csv row's bar, equity, position and buy-and-hold equity. */
static vp_status equity_row(void* ctx, char** fl) {
    fold_read* f = (fold_read*)ctx;
    if (f->n == f->cap) {
        size_t cap = (size_t)(f->cap = f->cap ? 2 * f->cap : 64);
        f->bar = (int64_t*)realloc(f->bar, cap * sizeof(int64_t));
        f->eq = (double*)realloc(f->eq, cap * sizeof(double));
        f->bh = (double*)realloc(f->bh, cap * sizeof(double));
        f->pos = (double*)realloc(f->pos, cap * sizeof(double));
        VP_REQUIRE(f->bar && f->eq && f->bh && f->pos, VP_ERR_OOM, "walk-forward: fold curve");
    }
    f->bar[f->n] = strtoll(fl[VP_EQUITY_BAR], NULL, 10);
    f->eq[f->n] = strtod(fl[VP_EQUITY_EQUITY], NULL);
    f->pos[f->n] = strtod(fl[VP_EQUITY_POSITION], NULL);
    f->bh[f->n] = strtod(fl[VP_EQUITY_BUY_HOLD], NULL);
    f->n++;
    return VP_OK;
}

/* Appends one trades.csv row's pnl, costs and bars held. */
static vp_status trade_row(void* ctx, char** fl) {
    fold_read* f = (fold_read*)ctx;
    if (f->n_tr == f->cap_tr) {
        f->cap_tr = f->cap_tr ? 2 * f->cap_tr : 64;
        f->tr = (vp_trade*)realloc(f->tr, (size_t)f->cap_tr * sizeof(vp_trade));
        VP_REQUIRE(f->tr != NULL, VP_ERR_OOM, "walk-forward: fold trades");
    }
    f->tr[f->n_tr].pnl = strtod(fl[VP_TRADES_PNL], NULL);
    f->tr[f->n_tr].costs = strtod(fl[VP_TRADES_COSTS], NULL);
    f->tr[f->n_tr].bars_held = strtoll(fl[VP_TRADES_BARS_HELD], NULL, 10);
    f->n_tr++;
    return VP_OK;
}

/* The integer obj[key] into *v; 0 when it is not a number. */
static int get_int(const cJSON* obj, const char* key, int64_t* v) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (!cJSON_IsNumber(x)) return 0;
    *v = (int64_t)x->valuedouble;
    return 1;
}

/* done.json of fold k: the selection, the test span it was planned with, and whether and where
 * its test window ruined (the ruin's bars; the equities come from the curve). */
static vp_status read_done(const vp_wf_ctx* c, int64_t k, vp_wf_fold* row) {
    char path[VP_RUN_PATH_MAX];
    char* text = NULL;
    VP_TRY(vp_wf_fold_file(c, k, "done.json", path, sizeof path));
    VP_TRY(vp_wf_read_file(path, &text));
    cJSON* root = cJSON_Parse(text);
    free(text);
    VP_REQUIRE(root != NULL, VP_ERR_PARSE, "%s is not JSON", path);
    const cJSON* vs = cJSON_GetObjectItemCaseSensitive(root, "val_sharpe_ratio");
    const cJSON* bi = cJSON_GetObjectItemCaseSensitive(root, "best_iteration");
    const cJSON* te = cJSON_GetObjectItemCaseSensitive(root, "test");
    const cJSON* ru = cJSON_GetObjectItemCaseSensitive(root, "test_ruin");
    row->ruined = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(root, "test_ruined"));
    row->val_sharpe = cJSON_IsNumber(vs) ? vs->valuedouble
                      : cJSON_IsString(vs) ? (strcmp(vs->valuestring, "inf") == 0 ? INFINITY : -INFINITY)
                                           : NAN;
    row->best_iteration = cJSON_IsNumber(bi) ? (int64_t)bi->valuedouble : -1;
    const int same = cJSON_GetArraySize(te) == 2 &&
                     (int64_t)cJSON_GetArrayItem(te, 0)->valuedouble == c->folds[k].test.begin &&
                     (int64_t)cJSON_GetArrayItem(te, 1)->valuedouble == c->folds[k].test.end;
    const int has_ruin = get_int(ru, "bar", &row->ruin.bar) && get_int(ru, "close_bar", &row->ruin.close_bar);
    cJSON_Delete(root);
    VP_REQUIRE(same, VP_ERR_STATE, "%s was written for another test span than the plan's", path);
    VP_REQUIRE(!row->ruined || has_ruin, VP_ERR_STATE,
               "%s marks the test window ruined but has no test_ruin with its bar and close_bar (written by an "
               "older vulpes: run the walk-forward again with --force)", path);
    return VP_OK;
}

/* A ruined fold's ruin from its curve: the ruin bar and the close-out bar among its points (the
 * curve holds the closed-out equity after it); the fold's own equities there (the stitched ones
 * are set when it is stitched). */
static vp_status read_ruin(const vp_wf_ctx* c, const fold_read* f, vp_wf_fold* row) {
    vp_wf_ruin* ru = &row->ruin;
    const int64_t at = ru->bar - f->bar[0], out = ru->close_bar - f->bar[0];
    VP_REQUIRE(at >= 0 && at <= out && out < f->n && f->bar[at] == ru->bar && f->bar[out] == ru->close_bar,
               VP_ERR_STATE, "fold %lld: done.json's ruin at bar %lld, closed out at bar %lld, is not in its "
               "equity.csv (bars %lld .. %lld)", (long long)row->index, (long long)ru->bar, (long long)ru->close_bar,
               (long long)f->bar[0], (long long)f->bar[f->n - 1]);
    ru->time_ms = c->data.bars.time_ms[ru->bar];
    ru->close_time_ms = c->data.bars.time_ms[ru->close_bar];
    ru->fold_start_equity = f->eq[0];
    ru->fold_equity_at_ruin = f->eq[at];
    ru->fold_equity_after_close = f->eq[out];
    ru->below_zero = ru->fold_equity_at_ruin < 0.0 || ru->fold_equity_after_close < 0.0;
    ru->equity_at_ruin = ru->equity_after_close = NAN;
    return VP_OK;
}

/* Fold k's curve and trades, and its row of the table (metrics of its own test span). */
static vp_status read_fold(const vp_wf_ctx* c, int64_t k, fold_read* f, vp_wf_fold* row) {
    char path[VP_RUN_PATH_MAX];
    row->index = k + 1;
    row->split = c->folds[k];
    row->test_first_ms = c->data.bars.time_ms[row->split.test.begin];
    row->test_last_ms = c->data.bars.time_ms[row->split.test.end - 1];
    VP_TRY(read_done(c, k, row));
    VP_TRY(vp_wf_fold_file(c, k, vp_equity_schema.file, path, sizeof path));
    VP_TRY(vp_csv_read(path, &vp_equity_schema, equity_row, f));
    VP_TRY(vp_wf_fold_file(c, k, vp_trades_schema.file, path, sizeof path));
    VP_TRY(vp_csv_read(path, &vp_trades_schema, trade_row, f));
    // every bar of the test span; a ruined window stops at the ruin
    const int64_t len = vp_span_len(c->folds[k].test);
    VP_REQUIRE((f->n == len || (row->ruined && f->n >= 1 && f->n < len)) && f->bar[0] == c->folds[k].test.begin,
               VP_ERR_STATE, "fold %lld: equity.csv holds %lld %s from bar %lld, the plan %lld from bar %lld%s",
               (long long)(k + 1), (long long)f->n, vp_plural(f->n, "point", "points"),
               (long long)(f->n ? f->bar[0] : -1), (long long)len,
               (long long)c->folds[k].test.begin, row->ruined ? " (ruined: at most that many)" : "");
    if (row->ruined) VP_TRY(read_ruin(c, f, row));
    // the fold's own metrics: strategy and buy-and-hold returns, trades
    const double ppy = c->annual.periods_per_year;
    double* ret = (double*)malloc(sizeof(double) * (size_t)f->n);
    VP_REQUIRE(ret != NULL, VP_ERR_OOM, "walk-forward: fold returns");
    vp_status s = vp_returns_from_equity(f->eq, f->n, ret);
    if (s == VP_OK) s = vp_perf_compute_annual(ret, f->n - 1, &c->annual, &row->test);
    if (s == VP_OK) vp_baseline_returns(f->bh, f->n, ret);
    if (s == VP_OK) s = vp_perf_compute_annual(ret, f->n - 1, &c->annual, &row->buy_hold);
    if (s == VP_OK)
        s = vp_trade_stats_compute(f->tr, f->n_tr, f->pos, f->n, c->cfg->instrument.max_position, ppy, &row->trades);
    free(ret);
    return s;
}

/* Grows the result's arrays to hold n points. */
static vp_status grow(vp_wf_result* r, int64_t n) {
    r->bar = (int64_t*)realloc(r->bar, sizeof(int64_t) * (size_t)n);
    r->fold = (int32_t*)realloc(r->fold, sizeof(int32_t) * (size_t)n);
    r->equity = (double*)realloc(r->equity, sizeof(double) * (size_t)n);
    r->benchmark = (double*)realloc(r->benchmark, sizeof(double) * (size_t)n);
    r->position = (double*)realloc(r->position, sizeof(double) * (size_t)n);
    VP_REQUIRE(r->bar && r->fold && r->equity && r->benchmark && r->position, VP_ERR_OOM,
               "walk-forward: stitched curve of %lld points", (long long)n);
    return VP_OK;
}

/* The summary of the stitched curve: pooled returns, buy-and-hold, flat, every trade. */
static vp_status summarize(const vp_wf_ctx* c, vp_wf_result* r, const vp_trade* tr, int64_t n_tr) {
    const int64_t n = r->n_curve;
    const double ppy = c->annual.periods_per_year;
    double* ret = (double*)calloc((size_t)n, sizeof(double));
    double* bret = (double*)calloc((size_t)n, sizeof(double));
    vp_status s = (ret && bret) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "walk-forward: stitched returns");
    r->summary.annual = c->annual;
    if (s == VP_OK) s = vp_returns_from_equity(r->equity, n, ret);
    if (s == VP_OK) s = vp_perf_compute_annual(ret, n - 1, &c->annual, &r->summary.strategy);
    if (s == VP_OK) vp_baseline_returns(r->benchmark, n, bret);
    if (s == VP_OK) s = vp_perf_compute_annual(bret, n - 1, &c->annual, &r->summary.buy_hold);
    // the strategy against buy-and-hold (docs/metrics.md, tear-sheet statistics)
    if (s == VP_OK) s = vp_tear_compute(ret, bret, n - 1, &c->annual, &r->summary.tear);
    if (s == VP_OK) r->summary.has_tear = 1;
    free(bret);
    if (s == VP_OK) memset(ret, 0, sizeof(double) * (size_t)n);
    if (s == VP_OK) s = vp_perf_compute_annual(ret, n - 1, &c->annual, &r->summary.flat);
    if (s == VP_OK)
        s = vp_trade_stats_compute(tr, n_tr, r->position, n, c->cfg->instrument.max_position, ppy, &r->summary.trades);
    free(ret);
    return s;
}

/* The stitched Sharpe deflated over the folds: each finished fold's selection is a trial, the
 * trials' variance is that of the folds' defined test Sharpes. */
static void weigh(vp_wf_result* r, int64_t n_done) {
    vp_wf_weight* w = &r->weight;
    vp_selection sel = {0};
    for (int64_t k = 0; k < n_done; ++k) vp_selection_add(&sel, r->folds[k].test.sharpe);
    w->n_trials = n_done;
    w->n_defined = sel.n_trials;
    w->trials_sharpe_variance = vp_selection_variance(&sel);
    w->deflated_sharpe = vp_deflated_sharpe_trials(&r->summary.strategy, n_done, w->trials_sharpe_variance,
                                                   &w->expected_max_sharpe);
}

vp_status vp_wf_stitch(const vp_wf_ctx* c, int64_t n_done, vp_wf_result* r) {
    r->folds = (vp_wf_fold*)calloc((size_t)n_done, sizeof(vp_wf_fold));
    VP_REQUIRE(r->folds != NULL, VP_ERR_OOM, "walk-forward: %lld fold rows", (long long)n_done);
    vp_trade* all = NULL;
    int64_t n_all = 0;
    double eq_end = c->cfg->instrument.initial_equity, bh_end = eq_end;
    vp_status s = VP_OK;
    for (int64_t k = 0; s == VP_OK && k < n_done; ++k) {
        fold_read f;
        memset(&f, 0, sizeof f);
        vp_wf_fold* row = &r->folds[k];
        s = read_fold(c, k, &f, row);
        // after a ruined fold the stitched account holds nothing: later folds stand alone
        if (s == VP_OK && r->ruined_fold > 0) {
            fold_read_free(&f);
            continue;
        }
        row->stitched = 1;
        r->n_stitched++;
        if (s == VP_OK && row->ruined) r->ruined_fold = row->index;
        if (s == VP_OK) s = grow(r, r->n_curve + f.n);
        // the fold's curve scaled to start where the previous one ended
        for (int64_t j = 0; s == VP_OK && j < f.n; ++j) {
            const int64_t o = r->n_curve + j;
            r->bar[o] = f.bar[j];
            r->fold[o] = (int32_t)(k + 1);
            r->equity[o] = eq_end * (f.eq[j] / f.eq[0]);
            // (a buy-and-hold account left at or below zero holds nothing more: it stays there)
            r->benchmark[o] = bh_end > 0.0 ? bh_end * (f.bh[j] / f.bh[0]) : bh_end;
            r->position[o] = f.pos[j];
        }
        if (s == VP_OK) {
            row->start_equity = r->equity[r->n_curve];
            r->n_curve += f.n;
            eq_end = row->end_equity = r->equity[r->n_curve - 1];
            if (row->ruined) {
                const int64_t o = r->n_curve - f.n - f.bar[0];
                row->ruin.equity_at_ruin = r->equity[o + row->ruin.bar];
                row->ruin.equity_after_close = r->equity[o + row->ruin.close_bar];
            }
            bh_end = r->benchmark[r->n_curve - 1];
            vp_trade* grown = (vp_trade*)realloc(all, sizeof(vp_trade) * (size_t)(n_all + f.n_tr + 1));
            s = grown ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "walk-forward: trades");
            if (grown) all = grown;
            if (s == VP_OK && f.n_tr) memcpy(all + n_all, f.tr, sizeof(vp_trade) * (size_t)f.n_tr);
            n_all += f.n_tr;
        }
        fold_read_free(&f);
    }
    if (s == VP_OK) s = summarize(c, r, all, n_all);
    if (s == VP_OK) weigh(r, n_done);
    free(all);
    return s;
}
