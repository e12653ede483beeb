/* report.html: the page around the charts (head with the style and the no-network policy,
 * the header, the equity curve on a linear and a log scale, metrics and trade tables, per-fold
 * table, then the tear sheet of report_tear.c, the market panels of report_market.c, the
 * agent's panels of report_rl.c, and the config folded away), written atomically. It uses the
 * pieces of report_svg.c; they use nothing of this file. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "eval/report_internal.h"
#include "vulpes/report.h"
#include "vulpes/run.h"
#include "vulpes/version.h"

/* The style sheet: system fonts only, nothing fetched. */
static const char* const CSS =
    "body{font-family:'DejaVu Sans',Arial,Helvetica,sans-serif;margin:24px;color:#1d1d1d;background:#ffffff}"
    "h1{font-size:22px;margin:0 0 6px}h2{font-size:17px;margin:26px 0 8px;border-bottom:1px solid #d0d0d0}"
    ".meta{color:#444;font-size:13px;margin:2px 0}"
    "table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #c8c8c8;padding:3px 10px}"
    "th{background:#eef1f6;text-align:left;white-space:nowrap}.row{display:flex;flex-wrap:wrap;gap:0 40px}"
    ".row p.note{max-width:430px}td{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}"
    "td.l{text-align:left}pre{background:#f6f6f6;border:1px solid #d8d8d8;padding:10px;font-size:12px;"
    "overflow-x:auto}svg{display:block;margin:4px 0}svg .ax{font-size:11px;fill:#333}"
    "svg .lg{font-size:12px;fill:#1d1d1d}.note{color:#555;font-size:12px}"
    ".warn{color:#9b1c1c;background:#fdecea;border:1px solid #e0a19b;padding:6px 10px;font-size:14px;"
    "font-weight:bold;margin:6px 0}"
    "table.monthly td.hm{min-width:52px}.tog input{margin:0 4px 0 12px}.eq-log{display:none}"
    "#eq-log:checked~.eq-log{display:block}#eq-log:checked~.eq-lin{display:none}"
    "details{margin:20px 0}summary{font-size:17px;font-weight:bold;cursor:pointer}";

/* Checks the curves: times strictly increasing, every value finite. */
static vp_status check_input(const vp_report* r) {
    VP_REQUIRE(r->n >= 1 && r->times_ms && r->equity, VP_ERR_INVALID_ARG,
               "report: n = %lld, times_ms and equity are required (n >= 1)", (long long)r->n);
    VP_REQUIRE(r->n_folds >= 0 && (r->folds || r->n_folds == 0), VP_ERR_INVALID_ARG,
               "report: n_folds = %lld but folds is NULL", (long long)r->n_folds);
    VP_REQUIRE(r->n_warnings >= 0 && r->n_notes >= 0 && (r->warnings || r->n_warnings == 0) &&
                   (r->notes || r->n_notes == 0),
               VP_ERR_INVALID_ARG, "report: %d warnings and %d notes, but their lines are NULL", r->n_warnings,
               r->n_notes);
    for (int64_t i = 0; i < r->n; ++i) {
        VP_REQUIRE(i == 0 || r->times_ms[i] > r->times_ms[i - 1], VP_ERR_INVALID_ARG,
                   "report: times_ms not strictly increasing at %lld", (long long)i);
        VP_REQUIRE(isfinite(r->equity[i]), VP_ERR_NUMERIC, "report: equity[%lld] = %g", (long long)i, r->equity[i]);
        VP_REQUIRE(!r->benchmark || isfinite(r->benchmark[i]), VP_ERR_NUMERIC, "report: benchmark[%lld] = %g",
                   (long long)i, r->benchmark[i]);
        VP_REQUIRE(!r->drawdown || isfinite(r->drawdown[i]), VP_ERR_NUMERIC, "report: drawdown[%lld] = %g",
                   (long long)i, r->drawdown[i]);
        VP_REQUIRE(!r->price || isfinite(r->price[i]), VP_ERR_NUMERIC, "report: price[%lld] = %g", (long long)i,
                   r->price[i]);
        VP_REQUIRE(!r->position || isfinite(r->position[i]), VP_ERR_NUMERIC, "report: position[%lld] = %g",
                   (long long)i, r->position[i]);
    }
    VP_REQUIRE((r->trades || r->n_trades == 0) && (r->actions || r->n_actions == 0) && (r->spans || r->n_spans == 0),
               VP_ERR_INVALID_ARG, "report: %lld trades, %lld actions and %d span lines, but their arrays are NULL",
               (long long)r->n_trades, (long long)r->n_actions, r->n_spans);
    return VP_OK;
}

/* A table cell holding a formatted metric value. */
static void value_cell(FILE* out, double v, vp_metric_unit unit) {
    char buf[64];
    fputs("<td>", out);
    vp_html_escape_write(out, vp_metric_format(v, unit, buf, sizeof buf));
    fputs("</td>", out);
}

/* The metrics table (strategy | buy & hold | flat; a ruined series' status reads "ruined" and
 * the heading says so) and the trade statistics table. */
static void write_metric_tables(FILE* out, const vp_metrics_summary* m, const int* ruined) {
    const vp_perf* series[3] = {&m->strategy, &m->buy_hold, &m->flat};
    fprintf(out, "<div class=\"row\"><div>\n<h2>Metrics%s</h2>\n<table class=\"metrics\">\n"
            "<tr><th>metric</th><th>strategy</th><th>buy &amp; hold</th><th>flat</th></tr>\n",
            ruined[0] || ruined[1] || ruined[2] ? " of a RUINED run: not a normal result" : "");
    for (int i = 0; i < vp_perf_n_fields; ++i) {
        const vp_metric_field* f = &vp_perf_fields[i];
        fprintf(out, "<tr data-key=\"%s\"><td class=\"l\">", f->key);
        vp_html_escape_write(out, f->label);
        fputs("</td>", out);
        for (int s = 0; s < 3; ++s) value_cell(out, vp_metric_field_get(f, series[s]), f->unit);
        fputs("</tr>\n", out);
    }
    fputs("<tr data-key=\"n_returns\"><td class=\"l\">returns (valid / given)</td>", out);
    for (int s = 0; s < 3; ++s)
        fprintf(out, "<td>%lld / %lld</td>", (long long)series[s]->n_valid, (long long)series[s]->n_returns);
    fputs("</tr>\n<tr data-key=\"status\"><td class=\"l\">series status</td>", out);
    for (int s = 0; s < 3; ++s) fprintf(out, "<td>%s</td>", ruined[s] ? "ruined" : vp_perf_status_name(series[s]->status));
    fputs("</tr>\n</table>\n<p class=\"note\">Ratios over a zero denominator show inf; '-' marks a value that is "
          "undefined (0 / 0, or too few returns).</p>\n</div><div>\n",
          out);

    fputs("<h2>Trade statistics</h2>\n<table class=\"trades\">\n<tr><th>statistic</th><th>strategy</th></tr>\n", out);
    for (int i = 0; i < vp_trade_n_fields; ++i) {
        const vp_metric_field* f = &vp_trade_fields[i];
        fprintf(out, "<tr data-key=\"%s\"><td class=\"l\">", f->key);
        vp_html_escape_write(out, f->label);
        fputs("</td>", out);
        value_cell(out, vp_metric_field_get(f, &m->trades), f->unit);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n</div></div>\n", out);
}

/* The per-fold table of a walk-forward. */
static void write_folds(FILE* out, const vp_report_fold* folds, int64_t n) {
    char a[32], b[32], c[32];
    fputs("<h2>Walk-forward folds</h2>\n<table class=\"folds\">\n<tr><th>fold</th><th>train from</th>"
          "<th>test from</th><th>test to</th><th>val score</th><th>test return</th><th>test Sharpe</th>"
          "<th>test max drawdown</th><th>buy &amp; hold return</th><th>trades</th><th>hit rate</th></tr>\n",
          out);
    for (int64_t i = 0; i < n; ++i) {
        const vp_report_fold* f = &folds[i];
        fprintf(out, "<tr><td>%d</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td>", f->index,
                vp_report_format_time(f->train_start_ms, 1, a, sizeof a),
                vp_report_format_time(f->test_start_ms, 1, b, sizeof b),
                vp_report_format_time(f->test_end_ms, 1, c, sizeof c));
        value_cell(out, f->val_score, VP_METRIC_UNIT_RATIO);
        value_cell(out, f->test.total_return, VP_METRIC_UNIT_FRAC);
        value_cell(out, f->test.sharpe, VP_METRIC_UNIT_RATIO);
        value_cell(out, f->test.max_drawdown, VP_METRIC_UNIT_FRAC);
        value_cell(out, f->buy_hold.total_return, VP_METRIC_UNIT_FRAC);
        value_cell(out, (double)f->trades.n_trades, VP_METRIC_UNIT_INT);
        value_cell(out, f->trades.hit_rate, VP_METRIC_UNIT_FRAC);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
}

/* The equity chart (strategy against buy-and-hold) and the drawdown chart. */
static vp_status write_charts(FILE* out, const vp_report* r) {
    vp_svg_series eq[2] = {{r->equity, VP_REPORT_COLOR_STRATEGY, NULL, "strategy"},
                           {r->benchmark, VP_REPORT_COLOR_BENCHMARK, NULL, "buy & hold"}};
    vp_svg_chart ce = {r->times_ms, r->n, eq, r->benchmark ? 2 : 1, 340, VP_METRIC_UNIT_CCY, 0, "equity curve",
                       0, 0, NULL, 0};
    // linear and log scale, one shown at a time by a radio button (CSS only, no script)
    fputs("<h2>Equity</h2>\n<div class=\"tog\"><input type=\"radio\" name=\"eqscale\" id=\"eq-lin\" checked>"
          "<label for=\"eq-lin\">linear</label><input type=\"radio\" name=\"eqscale\" id=\"eq-log\">"
          "<label for=\"eq-log\">log scale</label>\n<div class=\"eq-lin\">\n", out);
    VP_TRY(vp_svg_chart_write(out, &ce));
    fputs("</div>\n<div class=\"eq-log\">\n", out);
    ce.log_y = 1;
    ce.name = "equity curve, log scale";
    VP_TRY(vp_svg_chart_write(out, &ce));
    fputs("</div></div>\n", out);

    // the drawdown as given, or computed from the equity curve
    double* own = NULL;
    const double* dd = r->drawdown;
    if (!dd) {
        own = malloc((size_t)r->n * sizeof *own);
        VP_REQUIRE(own, VP_ERR_OOM, "report: no memory for %lld drawdown values", (long long)r->n);
        vp_status st = vp_drawdown_series(r->equity, r->n, own);
        if (st != VP_OK) {
            free(own);
            return vp_error_context(st, "report drawdown");
        }
        dd = own;
    }
    vp_svg_series ds = {dd, VP_REPORT_COLOR_DRAWDOWN, VP_REPORT_COLOR_DD_FILL, "strategy drawdown"};
    vp_svg_chart cd = {r->times_ms, r->n, &ds, 1, 220, VP_METRIC_UNIT_FRAC, 1, "drawdown curve", 0, 0, NULL, 0};
    fputs("<h2>Drawdown</h2>\n", out);
    vp_status st = vp_svg_chart_write(out, &cd);
    free(own);
    return st;
}

/* Whether the strategy's Sharpe stands out from noise (PSR against 0 at 95 %), its standard
 * error, whether the annual figures extrapolate less than a year, and its DSR over the trials
 * (the selection's validations, or a walk-forward's folds) with whether it survives at 95 %. */
static void write_weight(FILE* out, const vp_report* r) {
    const vp_perf* p = &r->metrics->strategy;
    char sr[32], se[32], pz[32], pb[32];
    double psr_bh = vp_perf_psr_vs(p, &r->metrics->buy_hold);
    const char* verdict = isnan(p->psr_vs_zero) ? "not enough varied returns to judge it against noise"
                          : p->psr_vs_zero >= 0.95 ? "a gain distinguishable from noise at 95 %"
                          : p->psr_vs_zero <= 0.05 ? "a loss distinguishable from noise at 95 %"
                                                   : "not distinguishable from noise at 95 %";
    fprintf(out, "<p class=\"meta\">Sharpe %s &plusmn; %s (standard error); P(true Sharpe &gt; 0) %s, "
            "&gt; buy &amp; hold's %s: %s</p>\n",
            vp_metric_format(p->sharpe, VP_METRIC_UNIT_RATIO, sr, sizeof sr),
            vp_metric_format(p->sharpe_se, VP_METRIC_UNIT_RATIO, se, sizeof se),
            vp_metric_format(p->psr_vs_zero, VP_METRIC_UNIT_FRAC, pz, sizeof pz),
            vp_metric_format(psr_bh, VP_METRIC_UNIT_FRAC, pb, sizeof pb), verdict);
    if (p->extrapolated)
        fprintf(out, "<p class=\"meta\">annual figures extrapolated from %.3f years of bars</p>\n", p->years);
    if (r->selection_trials >= 2)
        fprintf(out, "<p class=\"meta\">deflated Sharpe over %lld %s (each one trial): %s, %s</p>\n",
                (long long)r->selection_trials, r->trials_label ? r->trials_label : "validations",
                vp_metric_format(r->deflated_sharpe, VP_METRIC_UNIT_FRAC, pz, sizeof pz),
                isnan(r->deflated_sharpe)    ? "undefined (too few returns or no spread)"
                : r->deflated_sharpe >= 0.95 ? "survives the deflation at 95 %"
                                             : "does not survive the deflation at 95 %");
}

/* The header lines: the checkpoint, the data file, the spans, and the bars training saw. */
static void write_header(FILE* out, const vp_report* r) {
    if (r->checkpoint) {
        fputs("<p class=\"meta\">checkpoint ", out);
        vp_html_escape_write(out, r->checkpoint);
        fputs("</p>\n", out);
    }
    if (r->data_file) {
        fputs("<p class=\"meta\">data ", out);
        vp_html_escape_write(out, r->data_file);
        fputs("</p>\n", out);
    }
    for (int i = 0; i < r->n_spans; ++i) {
        fputs("<p class=\"meta\">", out);
        vp_html_escape_write(out, r->spans[i]);
        fputs("</p>\n", out);
    }
    if (!r->in_sample_known) return;
    if (r->in_sample_bars > 0)
        fprintf(out, "<p class=\"warn\">in-sample: %lld of the %lld bars were seen in training (train or validation "
                "span)</p>\n", (long long)r->in_sample_bars, (long long)r->n);
    else
        fputs("<p class=\"meta\">in-sample bars: none (training saw none of these bars)</p>\n", out);
}

vp_status vp_report_write_stream(FILE* out, const vp_report* r) {
    VP_REQUIRE(out && r, VP_ERR_INVALID_ARG, "vp_report_write_stream: out and r must not be NULL");
    VP_TRY(check_input(r));
    const char* title = r->title && r->title[0] ? r->title : "vulpes report";
    char a[32], b[32], line[256];

    // head: the style and a policy that forbids every fetch
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>",
          out);
    vp_html_escape_write(out, title);
    fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<h1>", CSS);
    vp_html_escape_write(out, title);
    fputs("</h1>\n", out);
    for (int i = 0; i < r->n_warnings; ++i) {
        fputs("<p class=\"warn\">", out);
        vp_html_escape_write(out, r->warnings[i]);
        fputs("</p>\n", out);
    }
    for (int i = 0; i < r->n_notes; ++i) {
        fputs("<p class=\"meta\">", out);
        vp_html_escape_write(out, r->notes[i]);
        fputs("</p>\n", out);
    }

    // what the page covers: checkpoint, data, spans, bars seen in training; how it annualises
    write_header(out, r);
    fprintf(out, "<p class=\"meta\">span %s to %s UTC, %lld bars</p>\n",
            vp_report_format_time(r->times_ms[0], 1, a, sizeof a),
            vp_report_format_time(r->times_ms[r->n - 1], 1, b, sizeof b), (long long)r->n);
    if (r->metrics) {
        fputs("<p class=\"meta\">annualisation: ", out);
        vp_html_escape_write(out, vp_annual_describe(&r->metrics->annual, line, sizeof line));
        fputs("</p>\n", out);
        write_weight(out, r);
    }

    // charts, tables, folds, config
    VP_TRY(write_charts(out, r));
    fprintf(out, "<p class=\"note\">Curves drawn from %lld points, decimated per pixel column (M4: first, lowest, "
            "highest and last point of each of %d columns). Each point is the equity at a bar's close, placed at the "
            "bar's time stamp (its open time, as in the data).</p>\n", (long long)r->n, VP_REPORT_PLOT_WIDTH);
    if (r->metrics) write_metric_tables(out, r->metrics, r->ruined);
    if (r->n_folds > 0) write_folds(out, r->folds, r->n_folds);
    VP_TRY(vp_report_tear_write(out, r));
    VP_TRY(vp_report_market_write(out, r));
    VP_TRY(vp_report_rl_write(out, r));
    fputs("<details><summary>Config</summary>\n<pre class=\"config\">", out);
    vp_html_escape_write(out, r->config_text ? r->config_text : "(no config given)");
    fprintf(out, "</pre></details>\n<p class=\"note\">written by vulpes %s</p>\n</body>\n</html>\n", VP_VERSION_STRING);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "report: writing the page failed: %s", strerror(errno));
    return VP_OK;
}

vp_status vp_report_write(const char* path, const vp_report* r) {
    VP_REQUIRE(path && r, VP_ERR_INVALID_ARG, "vp_report_write: path and r must not be NULL");
    VP_TRY(check_input(r));
    vp_atomic_file af;
    VP_TRY(vp_atomic_file_open(&af, path));
    vp_status st = vp_report_write_stream(af.f, r);
    if (st != VP_OK) {
        vp_atomic_file_abort(&af);
        return vp_error_context(st, "writing '%s'", path);
    }
    return vp_atomic_file_commit(&af);
}
