/* Internal to src/eval: the tear-sheet fields of a backtest's report.html taken from its
 * rollout result and description (report_backtest.c), for backtest_write.c. */
#ifndef VP_EVAL_REPORT_BACKTEST_H
#define VP_EVAL_REPORT_BACKTEST_H

#include "vulpes/backtest.h"
#include "vulpes/report.h"
#include "vulpes/rollout.h"
#include "vulpes/run.h"

/* What the fields point into; zero it before use, free with vp_report_backtest_free. */
typedef struct vp_report_backtest {
    double* price;                /* [n_curve] the closes of the curve's bars */
    vp_report_trade* trades;      /* [n_trades] the trades as curve point indices */
    char lines[4][256];           /* the span lines */
    const char* spans[4];         /* pointers to them */
    char metrics[VP_RUN_PATH_MAX + 16]; /* the run's metrics.jsonl beside the checkpoint */
} vp_report_backtest;

/* Sets rep's price (the bars' closes), position, trades, actions, checkpoint, data file,
 * span lines (the training run's split when it fits the data), in-sample bars (when the
 * overlap is known) and run_metrics (CK_DIR/metrics.jsonl when readable, CK_DIR being the
 * checkpoint's folder: its path's, or `dir` when a bare name that is in `dir`, else the
 * current folder) from the result r and info; `dir` is the folder the page goes to. */
vp_status vp_report_from_backtest(vp_report* rep, const vp_rollout_result* r, const vp_backtest_info* info,
                                  const char* dir, vp_report_backtest* st);

/* Frees what vp_report_from_backtest made (a zeroed one is a no-op). */
void vp_report_backtest_free(vp_report_backtest* st);

#endif /* VP_EVAL_REPORT_BACKTEST_H */
