/* The search's page, report.html: self-contained like a run's (inline CSS, no script, a
 * Content-Security-Policy that forbids every fetch): the winner and its deflated Sharpe over
 * the trials, the rungs, a scatter of the validation score against each searched key, and a
 * row per trial linking its own report by a path relative to the page. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report_internal.h"
#include "eval/search_impl.h"
#include "vulpes/version.h"

/* The scatter's size in pixels: the whole SVG and its plot box. */
#define SC_W 440
#define SC_H 260
#define SC_L 56
#define SC_R 16
#define SC_T 14
#define SC_B 40

/* A figure for people ("-" for none). */
static const char* fmt(double v, vp_metric_unit u, char* buf, size_t n) {
    return vp_metric_format(v, u, buf, n);
}

/* A cell of escaped text. */
static void cell(FILE* out, const char* cls, const char* text) {
    fprintf(out, "<td%s%s%s>", cls ? " class=\"" : "", cls ? cls : "", cls ? "\"" : "");
    vp_html_escape_write(out, text);
    fputs("</td>", out);
}

/* Where trial t's value of parameter p sits on the x axis: the number (its log10 for a
 * log-uniform key), or a choice's index. */
static double x_of(const vp_search_param* p, const char* v) {
    if (p->dist == VP_SEARCH_CHOICE) {
        for (int c = 0; c < p->n_choices; ++c)
            if (strcmp(p->choices[c], v) == 0) return c;
        return NAN;
    }
    const double x = strtod(v, NULL);
    return p->dist == VP_SEARCH_LOG_UNIFORM ? log10(x) : x;
}

/* An x tick's label: the value (10^x on a log axis) or the choice. */
static void x_label(const vp_search_param* p, double x, char* buf, size_t n) {
    if (p->dist == VP_SEARCH_CHOICE) snprintf(buf, n, "%s", p->choices[(int)x]);
    else snprintf(buf, n, "%.4g", p->dist == VP_SEARCH_LOG_UNIFORM ? pow(10.0, x) : x);
}

/* One scatter: each trial's score (best validation Sharpe) against its value of parameter k,
 * darker the further it got, the winner in red. */
static void scatter(FILE* out, const vp_search_result* r, int k) {
    const vp_search_param* p = &r->space.params[k];
    double x0, x1;
    if (p->dist == VP_SEARCH_CHOICE) x0 = -0.5, x1 = p->n_choices - 0.5;
    else if (p->dist == VP_SEARCH_LOG_UNIFORM) x0 = log10(p->lo), x1 = log10(p->hi);
    else x0 = p->lo, x1 = p->hi;
    double y0 = INFINITY, y1 = -INFINITY;
    for (int64_t i = 0; i < r->n_trials; ++i) {
        const double y = r->trials[i].val_sharpe;
        if (isfinite(y)) y0 = fmin(y0, y), y1 = fmax(y1, y);
    }
    if (!(y0 <= y1)) y0 = -1.0, y1 = 1.0;
    if (y1 - y0 < 1e-9) y0 -= 0.5, y1 += 0.5;
    const double pad = 0.06 * (y1 - y0);
    y0 -= pad, y1 += pad;
    const double pw = SC_W - SC_L - SC_R, ph = SC_H - SC_T - SC_B;
    fprintf(out, "<figure><svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"", SC_W, SC_H,
            SC_W, SC_H);
    vp_html_escape_write(out, p->key->name);
    fprintf(out, " against validation Sharpe\">\n<rect x=\"%d\" y=\"%d\" width=\"%.0f\" height=\"%.0f\" fill=\"#fff\" "
            "stroke=\"#b0b0b0\"/>\n", SC_L, SC_T, pw, ph);
    // y ticks: five lines over the score range
    for (int t = 0; t <= 4; ++t) {
        const double v = y0 + (y1 - y0) * t / 4.0, y = SC_T + ph - ph * t / 4.0;
        fprintf(out, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/><text x=\"%d\" y=\"%.1f\" "
                "text-anchor=\"end\" class=\"ax\">%.2f</text>\n", SC_L, y, SC_L + pw, y, SC_L - 5, y + 4, v);
    }
    // x ticks: each choice, or five over the range
    const int nt = p->dist == VP_SEARCH_CHOICE ? p->n_choices : 5;
    for (int t = 0; t < nt; ++t) {
        const double v = p->dist == VP_SEARCH_CHOICE ? t : x0 + (x1 - x0) * t / (nt - 1.0);
        const double x = SC_L + (v - x0) / (x1 - x0) * pw;
        char lab[VP_SEARCH_VALUE_MAX];
        x_label(p, v, lab, sizeof lab);
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"middle\" class=\"ax\">", x, SC_T + ph + 16);
        vp_html_escape_write(out, lab);
        fputs("</text>\n", out);
    }
    fprintf(out, "<text x=\"%.0f\" y=\"%d\" text-anchor=\"middle\" class=\"ax\">", SC_L + pw / 2, SC_H - 4);
    vp_html_escape_write(out, p->key->name);
    fputs(p->dist == VP_SEARCH_LOG_UNIFORM ? " (log scale)</text>\n" : "</text>\n", out);
    // the trials, the winner last so it lies on top
    for (int pass = 0; pass < 2; ++pass)
        for (int64_t i = 0; i < r->n_trials; ++i) {
            const vp_search_trial* t = &r->trials[i];
            const double xv = x_of(p, t->draw.values[k]), yv = t->val_sharpe;
            if ((i == r->best) != pass || !isfinite(xv) || !isfinite(yv)) continue;
            const double x = SC_L + (xv - x0) / (x1 - x0) * pw, y = SC_T + (y1 - yv) / (y1 - y0) * ph;
            const double shade = r->n_rungs > 1 ? (double)(t->rung < 0 ? 0 : t->rung) / (r->n_rungs - 1) : 1.0;
            const int c = (int)lround(190.0 - 150.0 * shade);
            if (i == r->best) fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#c0392b\"/>\n", x, y);
            else fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"rgb(%d,%d,%d)\"/>\n", x, y, c, c + 20 > 255 ? 255 : c + 20, 230);
        }
    fputs("</svg></figure>\n", out);
}

/* The row of trial i. */
static void trial_row(FILE* out, const vp_search_result* r, int64_t i) {
    const vp_search_trial* t = &r->trials[i];
    char n[32], g[32], it[32], v[32], s[32];
    snprintf(n, sizeof n, "%lld", (long long)i);
    snprintf(g, sizeof g, "%d", t->rung);
    snprintf(it, sizeof it, "%lld", (long long)t->iterations);
    fprintf(out, "<tr%s>", i == r->best ? " class=\"best\"" : "");
    cell(out, NULL, n), cell(out, NULL, g), cell(out, NULL, it);
    cell(out, NULL, fmt(t->val_sharpe, VP_METRIC_UNIT_RATIO, v, sizeof v));
    cell(out, NULL, fmt(t->test_sharpe, VP_METRIC_UNIT_RATIO, s, sizeof s));
    for (int p = 0; p < r->space.n_params; ++p) cell(out, NULL, t->draw.values[p]);
    // the trial's own page, relative to this one (the folder can move)
    const size_t root = strlen(r->dir);
    const char* rel = strncmp(t->dir, r->dir, root) == 0 && t->dir[root] == '/' ? t->dir + root + 1 : t->dir;
    fputs("<td class=\"l\">", out);
    if (t->finished) {
        fputs("<a href=\"", out);
        vp_html_escape_write(out, rel);
        fputs("/report.html\">", out);
        vp_html_escape_write(out, rel);
        fputs("</a>", out);
    } else {
        fputs("-", out);
    }
    fputs("</td></tr>\n", out);
}

/* The winner: its values, scores and deflated Sharpe with the number of trials beside it. */
static void winner(FILE* out, const vp_search_result* r) {
    if (r->best < 0) {
        fprintf(out, "<p><b>%d of %d rungs finished</b>: no winner yet; a resume runs the rest.</p>\n", r->rungs_done,
                r->n_rungs);
        return;
    }
    const vp_search_trial* w = &r->trials[r->best];
    char v[32], s[32], d[32], s0[32], var[32];
    fprintf(out, "<h2>The winner: trial %lld</h2>\n<p>", (long long)r->best);
    for (int p = 0; p < r->space.n_params; ++p) {
        fputs(p ? ", <code>" : "<code>", out);
        vp_html_escape_write(out, r->space.params[p].key->name);
        fputs("</code> = ", out);
        vp_html_escape_write(out, w->draw.values[p]);
    }
    fprintf(out, " (<code>best.yaml</code>, its whole config).</p>\n<table><tr><th>validation Sharpe</th><th>test "
            "Sharpe</th><th>deflated Sharpe</th><th>trials</th><th>SR0</th><th>trials' test Sharpe variance</th></tr>"
            "\n<tr><td>%s</td><td>%s</td><td>%s</td><td>over %lld trials</td><td>%s</td><td>%s</td></tr></table>\n",
            fmt(w->val_sharpe, VP_METRIC_UNIT_RATIO, v, sizeof v), fmt(w->test_sharpe, VP_METRIC_UNIT_RATIO, s, sizeof s),
            fmt(r->deflated_sharpe, VP_METRIC_UNIT_FRAC, d, sizeof d), (long long)r->dsr_trials,
            fmt(r->expected_max_sharpe, VP_METRIC_UNIT_RATIO, s0, sizeof s0),
            fmt(r->trials_sharpe_variance, VP_METRIC_UNIT_RATIO, var, sizeof var));
    fputs("<p class=\"warn\">", out);
    vp_html_escape_write(out, "Out of sample once: " VP_SEARCH_SELECTION_NOTE ". Deflated Sharpe: "
                         VP_SEARCH_DEFLATION_RULE ".");
    fputs("</p>\n", out);
}

vp_status vp_search_report_write(FILE* out, const vp_search_result* r) {
    VP_REQUIRE(out != NULL && r != NULL, VP_ERR_INVALID_ARG, "vp_search_report_write: NULL argument");
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>vulpes search</title>\n<style>body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;"
          "color:#1d1d1d}table{border-collapse:collapse;font-size:13px;margin-bottom:16px}th,td{border:1px solid "
          "#c8c8c8;padding:3px 8px}th{background:#eef1f6;white-space:nowrap}td{text-align:right;white-space:nowrap;"
          "font-variant-numeric:tabular-nums}td.l{text-align:left}tr.best td{background:#fdecea}.note{color:#555;"
          "font-size:12px;max-width:60em}.warn{background:#fff6dd;border:1px solid #e6c65c;padding:6px 10px;"
          "max-width:60em}figure{display:inline-block;margin:0 12px 12px 0}.ax{font-size:11px;fill:#444}</style>\n"
          "</head>\n<body>\n",
          out);
    fprintf(out, "<h1>Search: %lld trial%s, %d rung%s, eta %lld</h1>\n", (long long)r->n_trials,
            r->n_trials == 1 ? "" : "s", r->n_rungs, r->n_rungs == 1 ? "" : "s", (long long)r->eta);
    winner(out, r);
    fputs("<h2>Rungs</h2>\n<table><tr><th>rung</th><th>trials</th><th>iterations</th><th>status</th></tr>\n", out);
    for (int g = 0; g < r->n_rungs; ++g)
        fprintf(out, "<tr><td>%d</td><td>%lld</td><td>%lld</td><td class=\"l\">%s</td></tr>\n", g,
                (long long)r->rung_size[g], (long long)r->budgets[g], g < r->rungs_done ? "done" : "to run");
    fprintf(out, "</table>\n<p class=\"note\">Successive halving: every trial trains the first rung's iterations; "
            "the best ceil(n / %lld) of a rung by best validation Sharpe (a tie to the lower trial) go on to the "
            "next rung's, continued from their checkpoint.</p>\n<h2>The score against each key</h2>\n",
            (long long)r->eta);
    for (int k = 0; k < r->space.n_params; ++k) scatter(out, r, k);
    fputs("<p class=\"note\">Each point a trial: its best validation Sharpe against its value; darker the further "
          "it went, the winner in red.</p>\n<h2>Trials</h2>\n<table class=\"trials\">\n<tr><th>trial</th><th>rung"
          "</th><th>iterations</th><th>val Sharpe</th><th>test Sharpe</th>", out);
    for (int p = 0; p < r->space.n_params; ++p) {
        fputs("<th>", out);
        vp_html_escape_write(out, r->space.params[p].key->name);
        fputs("</th>", out);
    }
    fputs("<th>report</th></tr>\n", out);
    for (int64_t i = 0; i < r->n_trials; ++i) trial_row(out, r, i);
    fprintf(out, "</table>\n<p class=\"note\">Each trial is a <code>vulpes train</code> run folder; its figures come "
            "from its summary.json. Written by vulpes %s.</p>\n</body>\n</html>\n", VP_VERSION_STRING);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the search page failed: %s", strerror(errno));
    return VP_OK;
}
