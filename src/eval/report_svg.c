/* The pieces of report.html below the page: HTML escaping, UTC date labels, and the charts
 * as inline SVG (M4 decimation per pixel column, nice axis ticks, one polyline, and
 * optionally a filled area, per curve). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report_internal.h"
#include "vulpes/data.h"
#include "vulpes/report.h"

#define MARGIN_L 84
#define MARGIN_R 16
#define MARGIN_T 28
#define MARGIN_B 30
#define X_TICKS 6
#define MS_PER_DAY 86400000LL

void vp_html_escape_write(FILE* out, const char* s) {
    for (; s && *s; ++s) {
        switch (*s) {
        case '&': fputs("&amp;", out); break;
        case '<': fputs("&lt;", out); break;
        case '>': fputs("&gt;", out); break;
        case '"': fputs("&quot;", out); break;
        case '\'': fputs("&#39;", out); break;
        default: fputc(*s, out);
        }
    }
}

const char* vp_report_format_time(int64_t ms, int with_time, char* buf, size_t n) {
    if (!buf || n == 0) return "";
    // floor division, so times before 1970 land on the right day
    int64_t days = ms / MS_PER_DAY, rem = ms % MS_PER_DAY;
    if (rem < 0) {
        rem += MS_PER_DAY;
        days -= 1;
    }
    int64_t y;
    int m, d;
    vp_civil_from_days(days, &y, &m, &d);
    int minutes = (int)(rem / 60000);
    if (with_time) snprintf(buf, n, "%04lld-%02d-%02d %02d:%02d", (long long)y, m, d, minutes / 60, minutes % 60);
    else snprintf(buf, n, "%04lld-%02d-%02d", (long long)y, m, d);
    return buf;
}

int64_t vp_decimate_m4(const int64_t* t, const double* y, int64_t n, int cols, int64_t* idx) {
    if (n <= 0 || cols <= 0) return 0;
    double t0 = (double)t[0], span = (double)(t[n - 1] - t[0]);
    int64_t out = 0, i = 0;
    while (i < n) {
        // the run of points that share column c
        int c = span > 0 ? (int)floor(((double)t[i] - t0) / span * cols) : 0;
        if (c >= cols) c = cols - 1;
        int64_t first = i, lo = i, hi = i;
        int64_t j = i + 1;
        for (; j < n; ++j) {
            int cj = span > 0 ? (int)floor(((double)t[j] - t0) / span * cols) : 0;
            if (cj >= cols) cj = cols - 1;
            if (cj != c) break;
            // a NaN (a gap) is kept only where the column has nothing else
            if (y[j] < y[lo] || (isnan(y[lo]) && !isnan(y[j]))) lo = j;
            if (y[j] > y[hi] || (isnan(y[hi]) && !isnan(y[j]))) hi = j;
        }
        int64_t last = j - 1;
        // first, min, max, last in index order, each once
        int64_t k[4] = {first, lo < hi ? lo : hi, lo < hi ? hi : lo, last};
        for (int q = 0; q < 4; ++q)
            if (out == 0 || idx[out - 1] < k[q]) idx[out++] = k[q];
        i = j;
    }
    return out;
}

/* A round step (1, 2 or 5 x 10^k) that cuts `range` into about five parts. */
static double nice_step(double range) {
    double raw = range / 5.0, mag = pow(10.0, floor(log10(raw))), f = raw / mag;
    return (f <= 1.0 ? 1.0 : f <= 2.0 ? 2.0 : f <= 5.0 ? 5.0 : 10.0) * mag;
}

/* The y value v as an axis label: a percentage for fractions, else a plain number. */
static void y_label(double v, double step, vp_metric_unit unit, char* buf, size_t n) {
    double scale = unit == VP_METRIC_UNIT_FRAC ? 100.0 : 1.0;
    int dec = (int)ceil(-log10(step * scale) - 1e-9);
    dec = dec < 0 ? 0 : (dec > 6 ? 6 : dec);
    double x = v * scale;
    if (fabs(x) < 0.5 * step * scale) x = 0.0;
    snprintf(buf, n, unit == VP_METRIC_UNIT_FRAC ? "%.*f%%" : "%.*f", dec, x);
}

/* Pixel geometry of a chart: plot box and the value ranges it maps. */
typedef struct chart_geom {
    double left, top, pw, ph; /* plot box, pixels */
    double t0, t1;            /* time range, ms */
    double lo, hi, step;      /* y axis range and tick step */
} chart_geom;

static double gx(const chart_geom* g, int64_t t) { return g->left + ((double)t - g->t0) / (g->t1 - g->t0) * g->pw; }
static double gy(const chart_geom* g, double v) { return g->top + (g->hi - v) / (g->hi - g->lo) * g->ph; }

/* A value as the axis holds it: its log10 on a log chart (NaN for v <= 0), else itself. */
static double axis_value(const vp_svg_chart* c, double v) { return c->log_y ? (v > 0.0 ? log10(v) : NAN) : v; }

/* The plot box and the axis ranges from the data. */
static void chart_layout(const vp_svg_chart* c, chart_geom* g) {
    g->left = MARGIN_L;
    g->top = MARGIN_T;
    g->pw = VP_REPORT_PLOT_WIDTH;
    g->ph = c->height - MARGIN_T - MARGIN_B;
    g->t0 = (double)c->t[0];
    g->t1 = (double)c->t[c->n - 1];
    if (g->t1 <= g->t0) {
        g->t0 -= (double)MS_PER_DAY;
        g->t1 += (double)MS_PER_DAY;
    }
    // y range over every curve, padded when flat, then widened to whole ticks
    double lo = c->include_zero && !c->log_y ? 0.0 : INFINITY, hi = c->include_zero && !c->log_y ? 0.0 : -INFINITY;
    for (int s = 0; s < c->n_series; ++s)
        for (int64_t i = 0; i < c->n; ++i) {
            double v = axis_value(c, c->series[s].y[i]);
            if (!isfinite(v)) continue;
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
        }
    for (int64_t i = 0; i < c->n_markers; ++i) {
        double v = axis_value(c, c->markers[i].y);
        if (!isfinite(v)) continue;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    if (lo > hi) lo = hi = 0.0; /* nothing finite to draw */
    if (hi - lo <= 1e-12 * fmax(fabs(hi), fabs(lo))) {
        double pad = fabs(hi) > 0 ? 0.01 * fabs(hi) : (c->unit == VP_METRIC_UNIT_FRAC ? 0.01 : 1.0);
        if (!(c->include_zero && hi == 0.0)) hi += pad;
        lo -= pad;
    }
    g->step = nice_step(hi - lo);
    g->lo = floor(lo / g->step + 1e-9) * g->step;
    g->hi = ceil(hi / g->step - 1e-9) * g->step;
}

/* Grid lines, y labels, time ticks and their date labels. */
static void write_axes(FILE* out, const vp_svg_chart* c, const chart_geom* g) {
    char buf[64];
    fprintf(out, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" height=\"%.0f\" fill=\"#ffffff\" stroke=\"#b0b0b0\"/>\n",
            g->left, g->top, g->pw, g->ph);
    for (int k = 0;; ++k) {
        double v = g->lo + k * g->step;
        if (v > g->hi + 1e-9 * g->step) break;
        double y = gy(g, v);
        fprintf(out, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n", g->left, y,
                g->left + g->pw, y);
        if (c->log_y) snprintf(buf, sizeof buf, "%.5g", pow(10.0, v));
        else y_label(v, g->step, c->unit, buf, sizeof buf);
        fprintf(out, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\" class=\"ax\">%s</text>\n", g->left - 6, y + 4, buf);
    }
    int with_time = g->t1 - g->t0 < 5.0 * (double)MS_PER_DAY;
    for (int k = 0; k < X_TICKS; ++k) {
        double f = (double)k / (X_TICKS - 1), x = g->left + f * g->pw;
        const char* anchor = k == 0 ? "start" : (k == X_TICKS - 1 ? "end" : "middle");
        const int64_t at = (int64_t)llround(g->t0 + f * (g->t1 - g->t0));
        if (c->x_plain) snprintf(buf, sizeof buf, "%lld", (long long)at);
        else vp_report_format_time(at, with_time, buf, sizeof buf);
        fprintf(out, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" y2=\"%.0f\" stroke=\"#b0b0b0\"/>\n", x, g->top + g->ph,
                x, g->top + g->ph + 4);
        fprintf(out, "<text x=\"%.1f\" y=\"%.0f\" text-anchor=\"%s\" class=\"ax\">%s</text>\n", x,
                g->top + g->ph + 18, anchor, buf);
    }
}

/* One curve from its decimated points: the filled area first, then the line; a NaN (or, on a
 * log chart, a value <= 0) ends a run of the line and the next finite point starts one. */
static void write_series(FILE* out, const vp_svg_chart* c, const chart_geom* g, const vp_svg_series* s,
                         const int64_t* idx, int64_t m) {
    for (int64_t k = 0; k < m;) {
        // the run of finite points from k
        while (k < m && !isfinite(axis_value(c, s->y[idx[k]]))) ++k;
        int64_t e = k;
        while (e < m && isfinite(axis_value(c, s->y[idx[e]]))) ++e;
        if (e == k) break;
        if (s->fill) {
            double y0 = gy(g, c->log_y ? g->lo : 0.0);
            fprintf(out, "<polygon fill=\"%s\" stroke=\"none\" points=\"%.1f,%.1f", s->fill, gx(g, c->t[idx[k]]), y0);
            for (int64_t j = k; j < e; ++j)
                fprintf(out, " %.1f,%.1f", gx(g, c->t[idx[j]]), gy(g, axis_value(c, s->y[idx[j]])));
            fprintf(out, " %.1f,%.1f\"/>\n", gx(g, c->t[idx[e - 1]]), y0);
        }
        fprintf(out, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" stroke-linejoin=\"round\" points=\"",
                s->color);
        for (int64_t j = k; j < e; ++j)
            fprintf(out, "%s%.1f,%.1f", j > k ? " " : "", gx(g, c->t[idx[j]]), gy(g, axis_value(c, s->y[idx[j]])));
        fprintf(out, "\"/>\n");
        k = e;
    }
}

/* The marks: small triangles (up, down) or circles at their points. */
static void write_markers(FILE* out, const vp_svg_chart* c, const chart_geom* g) {
    for (int64_t i = 0; i < c->n_markers; ++i) {
        const vp_svg_marker* mk = &c->markers[i];
        const double v = axis_value(c, mk->y);
        if (!isfinite(v)) continue;
        const double x = gx(g, mk->t), y = gy(g, v);
        if (mk->shape == 2)
            fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>\n", x, y, mk->color);
        else
            fprintf(out, "<polygon fill=\"%s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n", mk->color, x - 4,
                    mk->shape == 0 ? y + 4 : y - 4, x + 4, mk->shape == 0 ? y + 4 : y - 4, x, mk->shape == 0 ? y - 4 : y + 4);
    }
}

vp_status vp_svg_chart_write(FILE* out, const vp_svg_chart* c) {
    VP_REQUIRE(out && c && c->t && c->series && c->n >= 1 && c->n_series >= 1, VP_ERR_INVALID_ARG,
               "vp_svg_chart_write: a stream, times, >= 1 point and >= 1 curve are needed");
    VP_REQUIRE(c->height > MARGIN_T + MARGIN_B + 20, VP_ERR_INVALID_ARG, "vp_svg_chart_write: height %d too small",
               c->height);
    chart_geom g;
    chart_layout(c, &g);
    int width = MARGIN_L + VP_REPORT_PLOT_WIDTH + MARGIN_R;
    int64_t cap = c->n < 4 * (int64_t)VP_REPORT_PLOT_WIDTH ? c->n : 4 * (int64_t)VP_REPORT_PLOT_WIDTH;
    int64_t* idx = malloc((size_t)cap * sizeof *idx);
    VP_REQUIRE(idx, VP_ERR_OOM, "vp_svg_chart_write: no memory for %lld points", (long long)cap);

    // frame, axes, then each curve decimated to the plot's pixel columns
    fprintf(out, "<svg viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"", width,
            c->height, width, c->height);
    vp_html_escape_write(out, c->name ? c->name : "chart");
    fprintf(out, "\">\n");
    write_axes(out, c, &g);
    for (int s = 0; s < c->n_series; ++s) {
        int64_t m = vp_decimate_m4(c->t, c->series[s].y, c->n, VP_REPORT_PLOT_WIDTH, idx);
        write_series(out, c, &g, &c->series[s], idx, m);
    }
    free(idx);
    write_markers(out, c, &g);

    // legend above the plot
    double lx = g.left;
    for (int s = 0; s < c->n_series; ++s) {
        const char* label = c->series[s].label ? c->series[s].label : "";
        fprintf(out, "<line x1=\"%.0f\" y1=\"14\" x2=\"%.0f\" y2=\"14\" stroke=\"%s\" stroke-width=\"3\"/>\n", lx,
                lx + 24, c->series[s].color);
        fprintf(out, "<text x=\"%.0f\" y=\"18\" class=\"lg\">", lx + 30);
        vp_html_escape_write(out, label);
        fprintf(out, "</text>\n");
        lx += 48 + 8.0 * (double)strlen(label);
    }
    fprintf(out, "</svg>\n");
    return VP_OK;
}
