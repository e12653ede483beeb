/* vulpes: report.html, one self-contained page per run or walk-forward (SPEC section 7).
 *
 * The page has inline CSS and inline SVG only: no script, no font, no image and no link
 * that reaches the network (a Content-Security-Policy meta tag forbids them). It shows the
 * equity curve against buy-and-hold, the drawdown curve, the metrics table (strategy |
 * buy & hold | flat) with the annualisation factor, the trade statistics, a per-fold table
 * when folds are given, and the config as preformatted text; warnings (a ruin) and notes
 * under the heading when given. Each point of a curve is the equity at a bar's close, placed
 * at the bar's time stamp (its open time, as in the data).
 *
 * Long series are decimated for the SVG with M4 per pixel column: the bars that fall in one
 * column of the plot keep their first, lowest, highest and last point, in time order, so
 * the drawn line is the one the full series would draw at that width and a one-bar spike
 * stays visible. Layout and conventions: docs/metrics.md. */
#ifndef VULPES_REPORT_H
#define VULPES_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "vulpes/metrics.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Colours of the curves (the browser test looks for them in the rendered page). */
#define VP_REPORT_COLOR_STRATEGY "#1f5fbf"  /* strategy equity line */
#define VP_REPORT_COLOR_BENCHMARK "#e8890c" /* buy-and-hold equity line */
#define VP_REPORT_COLOR_DRAWDOWN "#c0392b"  /* drawdown line */
#define VP_REPORT_COLOR_DD_FILL "#f2b8b2"   /* area under the drawdown line (opaque) */

/* Plot width in pixels of each chart; M4 keeps at most 4 points per pixel column. */
#define VP_REPORT_PLOT_WIDTH 860

/* One walk-forward fold's row of the per-fold table. */
typedef struct vp_report_fold {
    int32_t index;          /* fold number */
    int64_t train_start_ms; /* first training bar, Unix ms UTC */
    int64_t test_start_ms;  /* first test bar, Unix ms UTC */
    int64_t test_end_ms;    /* last test bar, Unix ms UTC */
    double val_score;       /* validation score the checkpoint was selected on (NaN: none) */
    vp_perf test;           /* the strategy on the test span */
    vp_perf buy_hold;       /* buy-and-hold on the test span */
    vp_trade_stats trades;  /* the strategy's trades on the test span */
} vp_report_fold;

/* A trade of the price chart: a mark at its entry and one at its exit. */
typedef struct vp_report_trade {
    int64_t entry;      /* point index of the bar whose open filled the entry */
    int64_t exit;       /* point index of the bar that filled the exit (-1: none in the curve) */
    int32_t side;       /* +1 long, -1 short */
    double entry_price; /* mean entry fill price */
    double exit_price;  /* mean exit fill price */
} vp_report_trade;

/* What a report shows. Arrays are host memory the caller owns. */
typedef struct vp_report {
    const char* title;                 /* page heading ("backtest eurusd"); NULL: "vulpes report" */
    int64_t n;                         /* points of the curves (>= 1) */
    const int64_t* times_ms;           /* [n] bar times, Unix ms UTC, strictly increasing */
    const double* equity;              /* [n] strategy equity, currency, finite */
    const double* benchmark;           /* [n] buy-and-hold equity, or NULL for none */
    const double* drawdown;            /* [n] strategy drawdown fraction (<= 0), or NULL: computed from equity */
    const vp_metrics_summary* metrics; /* metrics table and trade statistics, or NULL for none */
    const vp_report_fold* folds;       /* [n_folds] walk-forward folds, or NULL */
    int64_t n_folds;                   /* rows of the per-fold table (0: no table) */
    const char* config_text;           /* the resolved config, shown as is (escaped), or NULL */
    int64_t selection_trials;          /* trials the Sharpe is deflated over: the validations the parameters were
                                          selected among, or a walk-forward's folds (< 2: no DSR line) */
    double deflated_sharpe;            /* deflated Sharpe over those trials (vp_deflated_sharpe, or a walk-forward's
                                          vp_deflated_sharpe_trials of the stitched curve over its folds) */
    const char* const* warnings;       /* [n_warnings] lines shown under the heading as warnings (a ruin), or NULL */
    int n_warnings;                    /* lines of warnings */
    const char* const* notes;          /* [n_notes] lines shown under the heading (fragile decisions, the next
                                          decision), or NULL */
    int n_notes;                       /* lines of notes */
    int ruined[3];                     /* 1: that series (strategy, buy & hold, flat) ruined: its status reads
                                          "ruined" and the metrics heading says the figures are not a normal result */
    const char* trials_label;          /* what selection_trials counts, plural, as the DSR line names them ("deflated
                                          Sharpe over N folds"): NULL for "validations", or "folds" (a walk-forward,
                                          each fold's selection a trial) */
    const double* price;               /* [n] the bar's close at each point, or NULL: no price chart */
    const double* position;            /* [n] contracts held at each close, or NULL: no exposure chart */
    const vp_report_trade* trades;     /* [n_trades] marks on the price chart (the first VP_REPORT_MAX_MARKED),
                                          or NULL */
    int64_t n_trades;                  /* trades */
    const int32_t* actions;            /* [n_actions, 4] the choices decided (-1: none), or NULL: no action mix */
    int64_t n_actions;                 /* decisions */
    const char* checkpoint;            /* the checkpoint the header names, or NULL */
    const char* data_file;             /* the bar file the header names, or NULL */
    const char* const* spans;          /* [n_spans] header lines naming the spans (train, validation, test, the
                                          page's), or NULL */
    int n_spans;                       /* lines of spans */
    int in_sample_known;               /* 1: in_sample_bars holds; 0: the header says nothing of it */
    int64_t in_sample_bars;            /* bars of the page's span that training saw (0: none) */
    const char* run_metrics;           /* the metrics.jsonl of the checkpoint's training run (loss and validation
                                          curves, validation against test), or NULL: no such panels */
} vp_report;

/* Most trades marked on the price chart (the first ones; the page says how many are left). */
#define VP_REPORT_MAX_MARKED 2000

/* Writes the page to `path` atomically (PATH.tmp, then renamed over PATH). */
vp_status vp_report_write(const char* path, const vp_report* r);

/* Writes the page to an open stream (no atomicity; vp_report_write uses it). */
vp_status vp_report_write_stream(FILE* out, const vp_report* r);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_REPORT_H */
