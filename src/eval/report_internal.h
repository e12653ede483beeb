/* Internal to src/eval: the pieces of report.html (escaping, dates, decimation, SVG charts),
 * all in report_svg.c; report_html.c writes the page with them. */
#ifndef VP_EVAL_REPORT_INTERNAL_H
#define VP_EVAL_REPORT_INTERNAL_H

#include <stdint.h>
#include <stdio.h>

#include "vulpes/metrics.h"
#include "vulpes/report.h"
#include "vulpes/status.h"

/* M4 decimation: the points t[n] are spread over `cols` pixel columns of [t[0], t[n-1]];
 * for each column the indices of its first, lowest y, highest y and last point are kept,
 * in index order without repeats. Writes at most min(n, 4 x cols) indices into idx and
 * returns their count. t must be increasing. */
int64_t vp_decimate_m4(const int64_t* t /* [n] */, const double* y /* [n] */, int64_t n, int cols,
                       int64_t* idx /* [min(n, 4 cols)] */);

/* One curve of a chart. */
typedef struct vp_svg_series {
    const double* y;   /* [n] values; a NaN leaves a gap in the line */
    const char* color; /* stroke colour ("#1f5fbf") */
    const char* fill;  /* area fill down to y = 0, or NULL for a line only */
    const char* label; /* legend text */
} vp_svg_series;

/* A mark on a chart: a trade's entry or exit on the price. */
typedef struct vp_svg_marker {
    int64_t t;         /* x: Unix ms (or the plain x of an x_plain chart) */
    double y;          /* y value */
    int shape;         /* 0: triangle up, 1: triangle down, 2: circle */
    const char* color; /* fill colour */
} vp_svg_marker;

/* A time chart of one or more curves over shared times. */
typedef struct vp_svg_chart {
    const int64_t* t;             /* [n] Unix ms, increasing (plain numbers when x_plain) */
    int64_t n;                    /* points */
    const vp_svg_series* series;  /* [n_series] */
    int n_series;                 /* curves (>= 1) */
    int height;                   /* pixels of the whole SVG */
    vp_metric_unit unit;          /* y labels: VP_METRIC_UNIT_FRAC as %, otherwise plain numbers */
    int include_zero;             /* 1: the y range always holds 0 */
    const char* name;             /* accessible name of the SVG */
    int log_y;                    /* 1: a log10 y axis (values <= 0 left out), labels in the values' units */
    int x_plain;                  /* 1: x is a plain count (iterations), labelled as integers, not dates */
    const vp_svg_marker* markers; /* [n_markers] marks drawn over the curves, or NULL */
    int64_t n_markers;            /* marks */
} vp_svg_chart;

/* Writes the chart as one inline <svg> element. */
vp_status vp_svg_chart_write(FILE* out, const vp_svg_chart* c);

/* The tear sheet of returns (report_tear.c): statistics against buy-and-hold, monthly and
 * yearly returns, rolling Sharpe and volatility, worst drawdowns, the return histogram. */
vp_status vp_report_tear_write(FILE* out, const vp_report* r);

/* The market panels (report_market.c): the price with the trades, the exposure. */
vp_status vp_report_market_write(FILE* out, const vp_report* r);

/* The agent's panels (report_rl.c): the action mix, the learning curves and the validation
 * against the page's span from the run's metrics.jsonl. */
vp_status vp_report_rl_write(FILE* out, const vp_report* r);

/* A Unix ms time as "YYYY-MM-DD HH:MM" UTC (with_time 1) or "YYYY-MM-DD", into buf[n]. */
const char* vp_report_format_time(int64_t ms, int with_time, char* buf, size_t n);

/* Writes s with &, <, >, " and ' escaped for HTML text and attributes. */
void vp_html_escape_write(FILE* out, const char* s);

#endif /* VP_EVAL_REPORT_INTERNAL_H */
