/* The tear-sheet fields of a backtest's report.html from its rollout result (report_backtest.h). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/report_backtest.h"
#include "eval/report_internal.h"

/* One span line: "NAME bars [a, b): T0 to T1 UTC" into out[n]. */
static void span_line(const char* name, vp_span s, const vp_bars* bars, char* out, size_t n) {
    char a[32], b[32];
    if (s.end <= s.begin || s.end > bars->n) {
        snprintf(out, n, "%s: none", name);
        return;
    }
    snprintf(out, n, "%s bars [%lld, %lld): %s to %s UTC", name, (long long)s.begin, (long long)s.end,
             vp_report_format_time(bars->time_ms[s.begin], 1, a, sizeof a),
             vp_report_format_time(bars->time_ms[s.end - 1], 1, b, sizeof b));
}

/* The checkpoint's run folder's metrics.jsonl into out[n] when it can be read; "" otherwise. */
static void run_metrics(const char* ck, const char* dir, char* out, size_t n) {
    out[0] = '\0';
    if (!ck || !ck[0]) return;
    const char* slash = strrchr(ck, '/');
    char probe[VP_RUN_PATH_MAX + 16];
    if (slash) snprintf(out, n, "%.*s/metrics.jsonl", (int)(slash - ck), ck);
    else if (snprintf(probe, sizeof probe, "%s/%s", dir, ck) > 0 && access(probe, R_OK) == 0)
        snprintf(out, n, "%s/metrics.jsonl", dir);
    else snprintf(out, n, "metrics.jsonl");
    if (access(out, R_OK) != 0) out[0] = '\0';
}

vp_status vp_report_from_backtest(vp_report* rep, const vp_rollout_result* r, const vp_backtest_info* info,
                                  const char* dir, vp_report_backtest* st) {
    VP_REQUIRE(rep && r && info && dir && st, VP_ERR_INVALID_ARG, "vp_report_from_backtest: NULL argument");
    const int64_t a = r->span.begin, n = r->n_curve;
    const vp_bars* bars = info->bars;
    // the closes of the curve's bars and the position held
    if (bars && a >= 0 && a + n <= bars->n) {
        st->price = (double*)malloc(sizeof(double) * (size_t)n);
        VP_REQUIRE(st->price != NULL, VP_ERR_OOM, "report: no memory for %lld prices", (long long)n);
        memcpy(st->price, bars->close + a, sizeof(double) * (size_t)n);
        rep->price = st->price;
    }
    rep->position = r->curve_position;
    // the trades as point indices of the curve
    if (r->n_trades > 0) {
        st->trades = (vp_report_trade*)malloc(sizeof *st->trades * (size_t)r->n_trades);
        VP_REQUIRE(st->trades != NULL, VP_ERR_OOM, "report: no memory for %lld trades", (long long)r->n_trades);
        for (int64_t i = 0; i < r->n_trades; ++i) {
            const vp_rollout_trade* t = &r->trades[i];
            const int64_t e = t->entry_bar - a, x = t->exit_bar - a;
            st->trades[i] = (vp_report_trade){e, x >= 0 && x < n ? x : -1, t->side, t->entry_price, t->exit_price};
        }
        rep->trades = st->trades;
        rep->n_trades = r->n_trades;
    }
    rep->actions = r->action;
    rep->n_actions = r->action ? r->n_points : 0;
    rep->checkpoint = info->checkpoint;
    rep->data_file = info->data;
    // the training run's spans when its split fits the data, and the bars of this span it saw
    const vp_backtest_span_info* si = info->span_info;
    if (si && si->split_fits && bars) {
        span_line("train", si->split.train, bars, st->lines[0], sizeof st->lines[0]);
        span_line("validation", si->split.val, bars, st->lines[1], sizeof st->lines[1]);
        span_line("test", si->split.test, bars, st->lines[2], sizeof st->lines[2]);
        for (int i = 0; i < 3; ++i) st->spans[i] = st->lines[i];
        rep->n_spans = 3;
    }
    if (si && si->source[0] && bars) {
        char line[200];
        snprintf(line, sizeof line, "this page: %s,", si->source);
        span_line(line, r->span, bars, st->lines[3], sizeof st->lines[3]);
        st->spans[rep->n_spans++] = st->lines[3];
    }
    rep->spans = rep->n_spans ? st->spans : NULL;
    if (si && si->overlap_known) {
        rep->in_sample_known = 1;
        rep->in_sample_bars = si->train_bars + si->val_bars;
    }
    run_metrics(info->checkpoint, dir, st->metrics, sizeof st->metrics);
    rep->run_metrics = st->metrics[0] ? st->metrics : NULL;
    return VP_OK;
}

void vp_report_backtest_free(vp_report_backtest* st) {
    if (!st) return;
    free(st->price);
    free(st->trades);
    memset(st, 0, sizeof *st);
}
