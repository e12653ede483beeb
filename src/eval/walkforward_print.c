/* The walk-forward as text: the ruin first when there was one, the per-fold table (fold number
 * from 1, the test span as the times of its first and last bars with its bar indices [begin,
 * end), the figures, "RUINED at bar B (T)"), the stitched curve's extent, the stitched Sharpe's
 * weight — SE, PSR, whether it is distinguishable from noise, its deflation over the folds —
 * and the stitched metrics (marked as a ruined walk-forward's when one fold ruined). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "eval/walkforward_impl.h"
#include "vulpes/run.h"
#include "vulpes/data.h"

const char* vp_wf_ruin_line(const vp_wf_result* r, char* buf, size_t n) {
    size_t k = 0;
    buf[0] = '\0';
    if (r->ruined_fold <= 0 || r->ruined_fold > r->n_done) return buf;
    const vp_wf_fold* f = &r->folds[r->ruined_fold - 1];
    const vp_wf_ruin* ru = &f->ruin;
    char t[32];
    vp_text_append(buf, n, &k, "RUINED: fold %lld's test window at the close of bar %lld (the bar opened %s): the stitched "
           "account's equity %.2f (the fold's own window: %.2f from %.2f)", (long long)f->index, (long long)ru->bar,
           vp_time_format_iso(ru->time_ms, t, sizeof t), ru->equity_at_ruin, ru->fold_equity_at_ruin,
           ru->fold_start_equity);
    if (ru->close_bar != ru->bar)
        vp_text_append(buf, n, &k, "; closed out at the open of bar %lld (%s), equity %.2f after it (the fold's own: %.2f)",
               (long long)ru->close_bar, vp_time_format_iso(ru->close_time_ms, t, sizeof t), ru->equity_after_close,
               ru->fold_equity_after_close);
    else
        vp_text_append(buf, n, &k, "; that was the test span's last close");
    if (ru->below_zero) vp_text_append(buf, n, &k, "; below zero");
    vp_text_append(buf, n, &k, ". The stitched account ends with fold %lld", (long long)f->index);
    if (r->n_done == r->n_stitched + 1)
        vp_text_append(buf, n, &k, "; fold %lld stands alone, not stitched", (long long)r->n_done);
    else if (r->n_done > r->n_stitched)
        vp_text_append(buf, n, &k, "; folds %lld .. %lld stand alone, not stitched", (long long)(r->n_stitched + 1),
               (long long)r->n_done);
    return buf;
}

/* The stitched Sharpe's weight: two lines. */
static void print_weight(const vp_wf_result* r, FILE* out) {
    const vp_perf* p = &r->summary.strategy;
    const vp_wf_weight* w = &r->weight;
    char sh[32], se[32], pz[32], pb[32], v[32], sr0[32], dsr[32];
    fprintf(out, "stitched Sharpe %s +- %s (SE), P(true Sharpe > 0) %s (PSR), vs buy & hold %s: %s\n",
            vp_metric_format(p->sharpe, VP_METRIC_UNIT_RATIO, sh, sizeof sh),
            vp_metric_format(p->sharpe_se, VP_METRIC_UNIT_RATIO, se, sizeof se),
            vp_metric_format(p->psr_vs_zero, VP_METRIC_UNIT_FRAC, pz, sizeof pz),
            vp_metric_format(vp_perf_psr_vs(p, &r->summary.buy_hold), VP_METRIC_UNIT_FRAC, pb, sizeof pb),
            vp_psr_verdict(p->psr_vs_zero));
    const char* fold_word = vp_plural(w->n_trials, "fold", "folds");
    if (isnan(w->deflated_sharpe)) {
        fprintf(out, "deflated Sharpe over %lld %s: undefined (it needs 2 folds or more, 2 of them with a test Sharpe)\n",
                (long long)w->n_trials, fold_word);
        return;
    }
    fprintf(out, "deflated Sharpe over %lld %s (each fold's selection a trial; the variance of the folds' test Sharpes is %s, "
            "so the best of %lld unskilled trials is expected at %s): %s, %s the deflation at 95 %%\n",
            (long long)w->n_trials, fold_word, vp_metric_format(w->trials_sharpe_variance, VP_METRIC_UNIT_RATIO, v, sizeof v),
            (long long)w->n_trials, vp_metric_format(w->expected_max_sharpe, VP_METRIC_UNIT_RATIO, sr0, sizeof sr0),
            vp_metric_format(w->deflated_sharpe, VP_METRIC_UNIT_FRAC, dsr, sizeof dsr),
            w->deflated_sharpe >= 0.95 ? "survives" : "does not survive");
}

vp_status vp_wf_print(const vp_wf_result* r, FILE* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_wf_print: NULL argument");
    char line[2048];
    // a ruin comes before any figure
    if (r->ruined_fold > 0) fprintf(out, "%s\n", vp_wf_ruin_line(r, line, sizeof line));
    fprintf(out, "%-5s %-58s %11s %11s %12s %12s %7s %14s  %s\n", "fold", "test span (first .. last bar [begin, end))",
            "val Sharpe", "test Sharpe", "test return", "B&H return", "trades", "end equity", "note");
    char b[6][32], span[96], eq[32], note[96];
    for (int64_t k = 0; k < r->n_done; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        snprintf(span, sizeof span, "%s .. %s [%lld, %lld)", vp_time_format_iso(f->test_first_ms, b[4], 32),
                 vp_time_format_iso(f->test_last_ms, b[5], 32), (long long)f->split.test.begin,
                 (long long)f->split.test.end);
        if (f->stitched) snprintf(eq, sizeof eq, "%.2f", f->end_equity);
        else snprintf(eq, sizeof eq, "-");
        // the note: the ruin's bar and time (the end equity is then the one after the close-out)
        note[0] = '\0';
        if (f->ruined)
            snprintf(note, sizeof note, "  RUINED at bar %lld (%s)%s", (long long)f->ruin.bar,
                     vp_time_format_iso(f->ruin.time_ms, b[4], 32), f->stitched ? "" : "; not stitched");
        else if (!f->stitched)
            snprintf(note, sizeof note, "  not stitched");
        fprintf(out, "%-5lld %-58s %11s %11s %12s %12s %7lld %14s%s\n", (long long)f->index, span,
                vp_metric_format(f->val_sharpe, VP_METRIC_UNIT_RATIO, b[0], 32),
                vp_metric_format(f->test.sharpe, VP_METRIC_UNIT_RATIO, b[1], 32),
                vp_metric_format(f->test.total_return, VP_METRIC_UNIT_FRAC, b[2], 32),
                vp_metric_format(f->buy_hold.total_return, VP_METRIC_UNIT_FRAC, b[3], 32),
                (long long)f->trades.n_trades, eq, note);
    }
    fprintf(out, "\nstitched out-of-sample curve: %lld of %lld %s%s\n", (long long)r->n_stitched, (long long)r->n_folds,
            vp_plural(r->n_folds, "fold", "folds"), r->interrupted ? " (interrupted: --resume continues)" : "");
    // the stitched figures; a ruined walk-forward's marked before and after
    const int ruined = r->ruined_fold > 0;
    if (ruined) fputs("the figures below are those of a RUINED walk-forward, not a normal result:\n", out);
    print_weight(r, out);
    const char* status[3] = {"ruined", NULL, NULL};
    VP_TRY(vp_metrics_print_status(&r->summary, ruined ? status : NULL, out));
    if (ruined) {
        const vp_wf_ruin* ru = &r->folds[r->ruined_fold - 1].ruin;
        fprintf(out, "RUINED in fold %lld at bar %lld (%s): the figures above are not a normal result\n",
                (long long)r->ruined_fold, (long long)ru->bar, vp_time_format_iso(ru->time_ms, b[4], 32));
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "vp_wf_print: writing the walk-forward failed: %s", strerror(errno));
    return VP_OK;
}
