/* report.html's tear sheet of returns: the statistics against buy-and-hold, the monthly
 * returns heatmap, the yearly returns, the rolling Sharpe and volatility, the worst drawdowns
 * and the return histogram. The figures come from src/metrics (vp_tear, metrics/tear_sheet.h);
 * every cell carries its full-precision value in data-v for readers other than people. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report_internal.h"
#include "metrics/metrics_internal.h"
#include "metrics/tear_sheet.h"
#include "vulpes/report.h"

#define WORST_DRAWDOWNS 5
#define HIST_BINS 40
#define MS_PER_DAY 86400000.0

/* A value cell with its exact value in data-v ("" for NaN). */
static void value_cell(FILE* out, double v, vp_metric_unit unit, const char* style) {
    char buf[64];
    if (isnan(v)) fprintf(out, "<td%s data-v=\"\">", style ? style : "");
    else fprintf(out, "<td%s data-v=\"%.17g\">", style ? style : "", v);
    vp_html_escape_write(out, vp_metric_format(v, unit, buf, sizeof buf));
    fputs("</td>", out);
}

/* The returns of an equity curve (NaN where the previous close is <= 0), into r[n - 1]. */
static void curve_returns(const double* eq, int64_t n, double* r) {
    for (int64_t i = 1; i < n; ++i) r[i - 1] = eq[i - 1] > 0.0 ? eq[i] / eq[i - 1] - 1.0 : NAN;
}

/* The statistics against buy-and-hold (vp_tear's fields, the order of summary.json). */
static void write_tear_table(FILE* out, const vp_tear* t) {
    fputs("<h2>Returns against buy &amp; hold</h2>\n<table class=\"tear\">\n<tr><th>statistic</th>"
          "<th>strategy</th></tr>\n", out);
    for (int i = 0; i < vp_tear_n_fields; ++i) {
        const vp_metric_field* f = &vp_tear_fields[i];
        fprintf(out, "<tr data-key=\"%s\"><td class=\"l\">", f->key);
        vp_html_escape_write(out, f->label);
        fputs("</td>", out);
        value_cell(out, vp_metric_field_get(f, t), f->unit, NULL);
        fputs("</tr>\n", out);
    }
    fprintf(out, "</table>\n<p class=\"note\">Over %lld bars of per-bar returns: skewness and kurtosis as scipy.stats "
            "(population moments), historical VaR and CVaR at 95 %%, beta, alpha and the information ratio against "
            "buy &amp; hold as empyrical defines them (docs/metrics.md).</p>\n", (long long)t->n_pairs);
}

/* A heatmap cell's background: green for gains, red for losses, deeper up to |v| = scale. */
static void heat_style(double v, double scale, char* buf, size_t n) {
    if (isnan(v) || scale <= 0.0) {
        snprintf(buf, n, " class=\"hm\"");
        return;
    }
    double f = fmin(1.0, fabs(v) / scale);
    int shade = (int)lround(255.0 - 150.0 * f);
    if (v >= 0) snprintf(buf, n, " class=\"hm\" style=\"background:rgb(%d,255,%d)\"", shade, shade);
    else snprintf(buf, n, " class=\"hm\" style=\"background:rgb(255,%d,%d)\"", shade, shade);
}

/* The monthly heatmap (years down, months across, the year's return last) and the yearly
 * returns of the strategy and buy-and-hold. */
static vp_status write_periods(FILE* out, const vp_report* r) {
    int64_t nm = 0, ny = 0;
    VP_TRY(vp_tear_period_returns(r->times_ms, r->equity, r->n, 0, NULL, 0, &nm));
    VP_TRY(vp_tear_period_returns(r->times_ms, r->equity, r->n, 1, NULL, 0, &ny));
    if (nm == 0) return VP_OK;
    vp_period_return* m = (vp_period_return*)malloc(sizeof *m * (size_t)(nm + 2 * ny));
    VP_REQUIRE(m != NULL, VP_ERR_OOM, "report: no memory for %lld monthly returns", (long long)nm);
    vp_period_return *y = m + nm, *yb = y + ny;
    vp_status s = vp_tear_period_returns(r->times_ms, r->equity, r->n, 0, m, nm, &nm);
    if (s == VP_OK) s = vp_tear_period_returns(r->times_ms, r->equity, r->n, 1, y, ny, &ny);
    if (s == VP_OK && r->benchmark) s = vp_tear_period_returns(r->times_ms, r->benchmark, r->n, 1, yb, ny, &ny);
    if (s != VP_OK) {
        free(m);
        return s;
    }
    // the colour scale: the largest monthly move
    double scale = 0.0;
    for (int64_t i = 0; i < nm; ++i)
        if (!isnan(m[i].ret)) scale = fmax(scale, fabs(m[i].ret));
    static const char* months[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
    fputs("<h2>Monthly returns</h2>\n<table class=\"monthly\">\n<tr><th>year</th>", out);
    for (int k = 0; k < 12; ++k) fprintf(out, "<th>%s</th>", months[k]);
    fputs("<th>year</th></tr>\n", out);
    char style[96];
    int64_t i = 0;
    for (int64_t k = 0; k < ny; ++k) {
        fprintf(out, "<tr><td class=\"l\">%d</td>", y[k].year);
        for (int mo = 1; mo <= 12; ++mo) {
            if (i < nm && m[i].year == y[k].year && m[i].month == mo) {
                heat_style(m[i].ret, scale, style, sizeof style);
                char attr[128];
                snprintf(attr, sizeof attr, "%s data-month=\"%04d-%02d\"", style, m[i].year, mo);
                value_cell(out, m[i].ret, VP_METRIC_UNIT_FRAC, attr);
                ++i;
            } else {
                fputs("<td class=\"hm\"></td>", out);
            }
        }
        value_cell(out, y[k].ret, VP_METRIC_UNIT_FRAC, NULL);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n<p class=\"note\">Each return compounds the bars whose close falls in that UTC month (the first "
          "bar's return is from the previous month's last close), as empyrical.aggregate_returns.</p>\n", out);

    // yearly returns against buy-and-hold
    fputs("<h2>Yearly returns</h2>\n<table class=\"yearly\">\n<tr><th>year</th><th>strategy</th>"
          "<th>buy &amp; hold</th><th>difference</th></tr>\n", out);
    for (int64_t k = 0; k < ny; ++k) {
        fprintf(out, "<tr data-year=\"%d\"><td class=\"l\">%d</td>", y[k].year, y[k].year);
        double b = r->benchmark ? yb[k].ret : NAN;
        value_cell(out, y[k].ret, VP_METRIC_UNIT_FRAC, NULL);
        value_cell(out, b, VP_METRIC_UNIT_FRAC, NULL);
        value_cell(out, y[k].ret - b, VP_METRIC_UNIT_FRAC, NULL);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    free(m);
    return VP_OK;
}

/* The rolling Sharpe and volatility charts and a line of their last, lowest and highest value. */
static vp_status write_rolling(FILE* out, const vp_report* r, const double* ret, const vp_annual* a) {
    const int64_t n = r->n - 1, w = vp_tear_rolling_window(n, a->periods_per_year);
    if (n < w || n < 4) return VP_OK;
    const int64_t m = n - w + 1;
    double* sh = (double*)malloc(sizeof(double) * 2 * (size_t)m);
    VP_REQUIRE(sh != NULL, VP_ERR_OOM, "report: no memory for %lld rolling windows", (long long)m);
    double* vol = sh + m;
    vp_status s = vp_tear_rolling(ret, n, w, a, sh, vol);
    // a window's figure sits at its last return's point; undefined ones leave gaps
    for (int64_t k = 0; s == VP_OK && k < m; ++k)
        if (!isfinite(sh[k])) sh[k] = NAN;
    fprintf(out, "<h2>Rolling Sharpe and volatility</h2>\n<p class=\"meta\" data-window=\"%lld\">over windows of "
            "%lld bars (%s), annualised with %.6g periods a year", (long long)w, (long long)w,
            w == (int64_t)llround(a->periods_per_year / 2.0) ? "six months" : "a quarter of the span",
            a->periods_per_year);
    fputs("</p>\n<table class=\"rolling\">\n<tr><th>figure</th><th>last</th><th>lowest</th><th>highest</th></tr>\n",
          out);
    const char* names[2] = {"sharpe_ratio", "volatility_annual_frac"};
    const double* series[2] = {sh, vol};
    for (int q = 0; s == VP_OK && q < 2; ++q) {
        double lo = INFINITY, hi = -INFINITY;
        for (int64_t k = 0; k < m; ++k)
            if (isfinite(series[q][k])) lo = fmin(lo, series[q][k]), hi = fmax(hi, series[q][k]);
        vp_metric_unit u = q == 0 ? VP_METRIC_UNIT_RATIO : VP_METRIC_UNIT_FRAC;
        fprintf(out, "<tr data-key=\"rolling_%s\"><td class=\"l\">rolling %s</td>", names[q],
                q == 0 ? "Sharpe" : "volatility (annual)");
        value_cell(out, series[q][m - 1], u, NULL);
        value_cell(out, lo <= hi ? lo : NAN, u, NULL);
        value_cell(out, lo <= hi ? hi : NAN, u, NULL);
        fputs("</tr>\n", out);
    }
    fputs("</table>\n", out);
    vp_svg_series ss = {sh, VP_REPORT_COLOR_STRATEGY, NULL, "rolling Sharpe"};
    vp_svg_chart cs = {r->times_ms + w, m, &ss, 1, 200, VP_METRIC_UNIT_RATIO, 1, "rolling Sharpe", 0, 0, NULL, 0};
    if (s == VP_OK) s = vp_svg_chart_write(out, &cs);
    vp_svg_series sv = {vol, VP_REPORT_COLOR_BENCHMARK, NULL, "rolling volatility (annual)"};
    vp_svg_chart cv = {r->times_ms + w, m, &sv, 1, 200, VP_METRIC_UNIT_FRAC, 1, "rolling volatility", 0, 0, NULL, 0};
    if (s == VP_OK) s = vp_svg_chart_write(out, &cv);
    free(sh);
    return s;
}

/* The worst drawdowns: depth, peak, trough and recovery dates, durations. */
static vp_status write_drawdowns(FILE* out, const vp_report* r) {
    vp_drawdown_period d[WORST_DRAWDOWNS];
    int nd = 0;
    VP_TRY(vp_tear_worst_drawdowns(r->equity, r->n, WORST_DRAWDOWNS, d, &nd));
    fprintf(out, "<h2>Worst drawdowns</h2>\n<table class=\"drawdowns\">\n<tr><th>#</th><th>depth</th><th>peak</th>"
            "<th>trough</th><th>recovery</th><th>bars under water</th><th>days under water</th></tr>\n");
    char a[32], b[32], c[32];
    for (int k = 0; k < nd; ++k) {
        const vp_drawdown_period* p = &d[k];
        const int64_t end = p->recovery >= 0 ? p->recovery : r->n - 1;
        fprintf(out, "<tr data-peak=\"%lld\" data-trough=\"%lld\" data-recovery=\"%lld\"><td>%d</td>",
                (long long)p->peak, (long long)p->trough, (long long)p->recovery, k + 1);
        value_cell(out, p->depth, VP_METRIC_UNIT_FRAC, NULL);
        fprintf(out, "<td class=\"l\">%s</td><td class=\"l\">%s</td><td class=\"l\">%s</td><td>%lld%s</td>"
                "<td>%.1f%s</td></tr>\n",
                vp_report_format_time(r->times_ms[p->peak], 1, a, sizeof a),
                vp_report_format_time(r->times_ms[p->trough], 1, b, sizeof b),
                p->recovery >= 0 ? vp_report_format_time(r->times_ms[p->recovery], 1, c, sizeof c) : "not recovered",
                (long long)(end - p->peak), p->recovery >= 0 ? "" : "+",
                (double)(r->times_ms[end] - r->times_ms[p->peak]) / MS_PER_DAY, p->recovery >= 0 ? "" : "+");
    }
    if (nd == 0) fputs("<tr><td colspan=\"7\" class=\"l\">the curve never fell below a high</td></tr>\n", out);
    fputs("</table>\n<p class=\"note\">Under water from the high (peak) to the first close back at its level "
          "(recovery); '+' marks one not recovered by the end of the span.</p>\n", out);
    return VP_OK;
}

/* The histogram of the per-bar returns, with the 95 % VaR marked. */
static vp_status write_histogram(FILE* out, const double* ret, int64_t n, const vp_report* r) {
    int64_t counts[HIST_BINS];
    double lo, hi;
    VP_TRY(vp_tear_histogram(ret, n, HIST_BINS, counts, &lo, &hi));
    int64_t top = 1;
    for (int k = 0; k < HIST_BINS; ++k) top = counts[k] > top ? counts[k] : top;
    const int W = VP_REPORT_PLOT_WIDTH, H = 200, L = 84, T = 10, B = 30;
    const double bw = (double)W / HIST_BINS;
    char a[32], b[32];
    fprintf(out, "<h2>Return histogram</h2>\n<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" "
            "aria-label=\"histogram of returns\" data-lo=\"%.17g\" data-hi=\"%.17g\">\n", L + W + 16, T + H + B,
            L + W + 16, T + H + B, lo, hi);
    fprintf(out, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"#ffffff\" stroke=\"#b0b0b0\"/>\n", L, T, W, H);
    for (int k = 0; k < HIST_BINS; ++k) {
        double h = (double)counts[k] / (double)top * (H - 4);
        fprintf(out, "<rect data-count=\"%lld\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"/>\n",
                (long long)counts[k], L + k * bw + 1, T + H - h, bw - 2, h, VP_REPORT_COLOR_STRATEGY);
    }
    // the VaR line, when the tail statistics are known
    const vp_tear* t = r->metrics && r->metrics->has_tear ? &r->metrics->tear : NULL;
    if (t && isfinite(t->var_95) && hi > lo) {
        double x = L + (t->var_95 - lo) / (hi - lo) * W;
        fprintf(out, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-width=\"2\"/>\n"
                "<text x=\"%.1f\" y=\"%d\" class=\"lg\">VaR 95 %%</text>\n", x, T, x, T + H, VP_REPORT_COLOR_DRAWDOWN,
                x + 4, T + 14);
    }
    fprintf(out, "<text x=\"%d\" y=\"%d\" class=\"ax\">%s</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\" "
            "class=\"ax\">%s</text>\n<text x=\"%d\" y=\"%d\" text-anchor=\"end\" class=\"ax\">%lld</text>\n</svg>\n", L,
            T + H + 18, vp_metric_format(lo, VP_METRIC_UNIT_FRAC, a, sizeof a), L + W, T + H + 18,
            vp_metric_format(hi, VP_METRIC_UNIT_FRAC, b, sizeof b), L - 6, T + 12, (long long)top);
    fprintf(out, "<p class=\"note\">%d equal bins from the lowest to the highest per-bar return (numpy.histogram); "
            "the tallest holds %lld bars.</p>\n", HIST_BINS, (long long)top);
    return VP_OK;
}

vp_status vp_report_tear_write(FILE* out, const vp_report* r) {
    if (r->n < 3) return VP_OK;
    if (r->metrics && r->metrics->has_tear) write_tear_table(out, &r->metrics->tear);
    VP_TRY(write_periods(out, r));
    double* ret = (double*)malloc(sizeof(double) * (size_t)(r->n - 1));
    VP_REQUIRE(ret != NULL, VP_ERR_OOM, "report: no memory for %lld returns", (long long)(r->n - 1));
    curve_returns(r->equity, r->n, ret);
    vp_annual a;
    memset(&a, 0, sizeof a);
    if (r->metrics) a = r->metrics->annual;
    vp_status s = VP_OK;
    if (isfinite(a.periods_per_year) && a.periods_per_year > 0) s = write_rolling(out, r, ret, &a);
    if (s == VP_OK) s = write_drawdowns(out, r);
    if (s == VP_OK) s = write_histogram(out, ret, r->n - 1, r);
    free(ret);
    return s;
}
