/* The backtest's words for people: a ruin, the orders the leverage limit cut, the fragile
 * decisions and the decision for the bar after the span, one line each (the console and the
 * report's heading say the same), and the console summary (vp_backtest_print): RUINED before
 * any metric, then the leverage cuts (when there were any), the metrics table marked as a
 * ruined run's, the fragile decisions and the next decision. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eval/backtest_impl.h"
#include "vulpes/data.h"
#include "vulpes/run.h"

const char* vp_bt_bar_time(const vp_rollout_result* r, int64_t i, char* buf) {
    buf[0] = '\0';
    const int64_t j = i - r->span.begin;
    if (r->curve_time_ms && j >= 0 && j < r->n_curve) vp_time_format_iso(r->curve_time_ms[j], buf, 32);
    return buf;
}

const char* vp_bt_ruin_line(const char* who, const vp_rollout_ruin* ru, int64_t n_ruined, int64_t n_windows,
                            char* buf, size_t n) {
    char t[32];
    size_t k = 0;
    buf[0] = '\0';
    vp_text_append(buf, n, &k, "RUINED: %s at the close of bar %lld (the bar opened %s): equity %.2f, at or below the ruin "
           "level %.2f", who, (long long)ru->bar, vp_time_format_iso(ru->time_ms, t, sizeof t), ru->equity_at_ruin,
           ru->level);
    if (ru->close_bar != ru->bar)
        vp_text_append(buf, n, &k, "; closed out at the open of bar %lld, equity %.2f after it", (long long)ru->close_bar,
               ru->equity_after_close);
    else
        vp_text_append(buf, n, &k, "; that was the window's last close");
    if (ru->below_zero) vp_text_append(buf, n, &k, "; below zero, %.2f lost past the ruin level", ru->loss_past_floor);
    if (n_windows > 1)
        vp_text_append(buf, n, &k, " (window %lld; %lld of %lld windows ruined)", (long long)ru->window, (long long)n_ruined,
               (long long)n_windows);
    return buf;
}

const char* vp_bt_fragile_line(const vp_rollout_result* r, int list, char* buf, size_t n) {
    char t[32];
    size_t k = 0;
    buf[0] = '\0';
    if (r->n_decisions == 0) {
        vp_text_append(buf, n, &k, "fragile decisions: none scored (forced actions)");
        return buf;
    }
    vp_text_append(buf, n, &k, "fragile decisions: %lld of %lld choices won by a relative Q margin below %g",
           (long long)r->n_fragile, (long long)r->n_decisions, VP_ACTION_FRAGILE_MARGIN);
    if (r->n_fragile == 0) return buf;
    // the first ones by bar, and the first one's time
    int shown = 0;
    int64_t first = -1;
    for (int64_t o = 0; o < r->n_points && shown < list; ++o) {
        if (!(r->margin[o] < VP_ACTION_FRAGILE_MARGIN)) continue;
        if (first < 0) first = r->bar[o];
        vp_text_append(buf, n, &k, "%s%lld", shown ? ", " : " (bars ", (long long)r->bar[o]);
        ++shown;
    }
    vp_text_append(buf, n, &k, "%s; the first at %s): another backend, BLAS kernel or CPU type may choose otherwise there",
           r->n_fragile > shown ? ", ..." : "", vp_bt_bar_time(r, first, t));
    return buf;
}

const char* vp_bt_cuts_line(const vp_rollout_result* r, const char* who, const vp_rollout_cuts* c, int list,
                            char* buf, size_t n) {
    char t[32];
    size_t k = 0;
    buf[0] = '\0';
    if (c->orders == 0) return buf;
    vp_text_append(buf, n, &k, "LEVERAGE: %lld %s of %s %s cut to instrument.max_leverage %g (notional / equity at the "
           "decision): %lld %s removed", (long long)c->orders, vp_plural(c->orders, "order", "orders"), who,
           c->orders == 1 ? "was" : "were", c->max_leverage, (long long)c->contracts,
           vp_plural(c->contracts, "contract", "contracts"));
    // the first ones by bar, and the first one's time
    const int shown = c->n_bars < list ? c->n_bars : list;
    for (int i = 0; i < shown; ++i) vp_text_append(buf, n, &k, "%s%lld", i ? ", " : " (bars ", (long long)c->bars[i]);
    if (shown > 0)
        vp_text_append(buf, n, &k, "%s; the first at %s)", c->orders > shown ? ", ..." : "", vp_bt_bar_time(r, c->bars[0], t));
    vp_text_append(buf, n, &k, ": it held less than chosen");
    return buf;
}

const char* vp_bt_next_line(const vp_rollout_result* r, char* buf, size_t n) {
    static const char* dirs[VP_ENV_DIR_COUNT] = {"short", "flat", "long"};
    size_t k = 0;
    buf[0] = '\0';
    const vp_rollout_window* x = &r->windows[r->n_windows - 1];
    const int64_t o = x->offset + x->n_points - 1;
    const int32_t* a = r->action + 4 * o;
    if (x->ruined || a[0] < 0) {
        vp_text_append(buf, n, &k, "decision for the bar after the span: none (%s)",
               x->ruined ? "the run ruined" : "forced actions");
        return buf;
    }
    vp_text_append(buf, n, &k, "decision at the close of bar %lld for the bar after the span (not traded): %s",
           (long long)r->bar[o], a[0] >= 0 && a[0] < VP_ENV_DIR_COUNT ? dirs[a[0]] : "?");
    if (a[0] != VP_ENV_DIR_FLAT) vp_text_append(buf, n, &k, " %.2f x max_position", 0.25 * (a[1] + 1));
    if (a[2] > 0) vp_text_append(buf, n, &k, ", take-profit %d x ATR", (int)a[2]);
    else vp_text_append(buf, n, &k, ", no take-profit");
    if (a[3] > 0) vp_text_append(buf, n, &k, ", stop-loss %d x ATR", (int)a[3]);
    else vp_text_append(buf, n, &k, ", no stop-loss");
    vp_text_append(buf, n, &k, "; Q margin %.4g", r->margin[o]);
    return buf;
}

vp_status vp_backtest_print(const vp_rollout_result* r, FILE* out) {
    VP_REQUIRE(r != NULL && out != NULL && r->n_windows >= 1 && r->n_curve >= 1, VP_ERR_INVALID_ARG,
               "vp_backtest_print: NULL argument or empty result");
    char line[2048], t[32];
    // a ruin comes before any figure
    if (r->ruin.ruined)
        fprintf(out, "%s\n", vp_bt_ruin_line("the strategy", &r->ruin, r->n_ruined, r->n_windows, line, sizeof line));
    if (r->buy_hold_ruin.ruined)
        fprintf(out, "%s\n", vp_bt_ruin_line("buy & hold", &r->buy_hold_ruin, 0, 1, line, sizeof line));
    // orders the leverage limit cut, only when it cut any, also before any figure
    if (r->cuts.orders > 0) fprintf(out, "%s\n", vp_bt_cuts_line(r, "the strategy", &r->cuts, 10, line, sizeof line));
    if (r->buy_hold_cuts.orders > 0)
        fprintf(out, "%s\n", vp_bt_cuts_line(r, "buy & hold", &r->buy_hold_cuts, 10, line, sizeof line));
    if (r->ruin.ruined) fputs("the metrics below are those of a RUINED run, not a normal result:\n", out);
    const char* status[3] = {r->ruin.ruined ? "ruined" : NULL, r->buy_hold_ruin.ruined ? "ruined" : NULL, NULL};
    VP_TRY(vp_metrics_print_status(&r->summary, status, out));
    if (r->ruin.ruined)
        fprintf(out, "RUINED at bar %lld (%s): the figures above are not a normal result\n", (long long)r->ruin.bar,
                vp_time_format_iso(r->ruin.time_ms, t, sizeof t));
    fprintf(out, "%s\n", vp_bt_fragile_line(r, 10, line, sizeof line));
    fprintf(out, "%s\n", vp_bt_next_line(r, line, sizeof line));
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "vp_backtest_print: writing the summary failed: %s", strerror(errno));
    return VP_OK;
}
