/* vulpes: walk-forward evaluation (SPEC section 7) — train on a fold's train span, select
 * on its validation span, report on its test span with the exact backtest, roll the fold
 * forward in time, and stitch the test spans into one out-of-sample equity curve.
 *
 * The folder of a walk-forward:
 *   config.yaml, metrics.jsonl (a "fold" event per finished fold), walkforward.json (the plan:
 *   fold settings and every fold's spans), equity.csv, trades.csv, summary.json, report.html
 *   (the stitched curve, the per-fold table, the metrics), and folds/fold_NNN/ per fold (NNN the
 *   fold's number: folds are numbered from 1 in every file and line; spans are bar indices
 *   [begin, end), end excluded, beside the times of their first and last bars):
 *   config.yaml, metrics.jsonl and best.safetensors of its training, the test backtest's
 *   trades.csv, equity.csv, summary.json, report.html, and done.json, written last.
 * A fold folder without done.json is unfinished: a resume (VP_RUN_RESUME) clears it and runs
 * that fold again from its start, then the ones after; finished folds are read back from
 * their files. The stitched results are always built from the fold files, so a resumed
 * walk-forward writes the same bytes as one that ran straight through.
 *
 * A fold trains through the one training loop (vp_train_run_data, the algorithm of
 * train.algo) on its own data view and folder; its test span's exact backtest is the loop's
 * own. The settings are the config's walkforward section (vp_config_walkforward; `vulpes
 * walkforward` turns its flags into walkforward.* overrides). Each fold is self-contained
 * unless warm-started, so up to walkforward.parallel folds run at once, each in its own thread
 * on its own backend (on CUDA its own stream and cuBLASLt handle), the number lowered to what
 * free device memory holds; a warm start runs them one after another. The results are the same
 * bytes whatever the number: the fold events, the per-fold table and the stitched curve follow
 * fold order. A fold whose test window was ruined (a close at or below env.ruin_fraction x
 * initial_equity, closed out at the next open; its equity may end below zero) is marked so
 * with when and at what equity, the walk-forward's status is "ruined", and the stitched
 * account ends with it: the stitched curve covers the folds up to it. The stitched
 * Sharpe comes with its standard error, PSR and the deflated Sharpe over the folds (each fold's
 * selection one trial; docs/metrics.md). */
#ifndef VULPES_WALKFORWARD_H
#define VULPES_WALKFORWARD_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/backend.h"
#include "vulpes/config.h"
#include "vulpes/metrics.h"
#include "vulpes/run.h"
#include "vulpes/split.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How a walk-forward runs (the fold settings are the config's walkforward section). */
typedef struct vp_wf_opts {
    const char* dir;                    /* the walk-forward folder (required) */
    vp_run_mode mode;                   /* CREATE (absent or empty folder), FORCE (replace), RESUME */
    FILE* progress;                     /* a line per fold and validation (NULL: none) */
    const volatile sig_atomic_t* stop;  /* non-zero: stop between iterations, the fold left unfinished */
    int64_t stop_after_folds;           /* stop as interrupted once this many folds finished in this call (0: never) */
    int fused;                          /* the test backtests' CUDA path (see vp_rollout_cfg.fused) */
    int progress_tty;                   /* 1: the progress line is redrawn with '\r'; 0: plain lines */
    double progress_interval_s;         /* least seconds between progress lines (0: 0.25 on a terminal, 10 else) */
} vp_wf_opts;

/* How a fold's test window ruined (docs/backtest.md "Ruin"): bars and times from the fold's
 * done.json, equities from its curve. */
typedef struct vp_wf_ruin {
    int64_t bar;                    /* the bar whose close was at or below the ruin level */
    int64_t time_ms;                /* its time stamp (its open time, as in the data), Unix ms */
    int64_t close_bar;              /* the bar whose open closed the position out (bar + 1), or the ruin bar
                                       itself when that was the span's last close; the curve holds the
                                       closed-out equity from there to the span's end */
    int64_t close_time_ms;          /* its time stamp, Unix ms */
    double fold_start_equity;       /* the fold's own test window's first equity (instrument.initial_equity) */
    double fold_equity_at_ruin;     /* the fold's own test window's equity at the ruin close, currency (never
                                       clamped: may be below zero) */
    double fold_equity_after_close; /* its equity after the close-out (at close_bar's close) */
    double equity_at_ruin;          /* the stitched account's equity at the ruin close (NaN: not stitched) */
    double equity_after_close;      /* the stitched account's equity after the close-out (NaN: not stitched) */
    int below_zero;                 /* 1: one of the fold's two figures is below zero */
} vp_wf_ruin;

/* One fold's row of the per-fold table. */
typedef struct vp_wf_fold {
    int64_t index;          /* fold number, from 1 (the plan's fold index + 1; its folder fold_NNN) */
    vp_split split;         /* its train / val / test spans (bar indices) */
    int64_t test_first_ms;  /* time of the test span's first bar, Unix ms */
    int64_t test_last_ms;   /* time of its last bar */
    double val_sharpe;      /* best validation Sharpe (NaN: no validation scored) */
    int64_t best_iteration; /* iteration of the selected parameters (-1: the final ones) */
    vp_perf test;           /* the strategy on the test span */
    vp_perf buy_hold;       /* buy-and-hold on the test span */
    vp_trade_stats trades;  /* the strategy's trades on the test span */
    double start_equity;    /* stitched equity at the test span's first bar (0 when not stitched) */
    double end_equity;      /* stitched equity at its last bar (when ruined, the closed-out equity the curve
                               holds from the close-out on; 0 when not stitched) */
    int ruined;             /* 1: the test window ruined (closed out, the window stopped there) */
    vp_wf_ruin ruin;        /* how (when ruined) */
    int stitched;           /* 1: in the stitched curve (0: after a ruined fold) */
} vp_wf_fold;

/* The statistical weight of the stitched out-of-sample Sharpe over the folds (docs/metrics.md):
 * each finished fold made one selection (its best validation), so the folds are the trials;
 * the stitched Sharpe is deflated for the best of that many unskilled trials. */
typedef struct vp_wf_weight {
    int64_t n_trials;              /* trials: the folds finished */
    int64_t n_defined;             /* of them, folds with a defined test Sharpe (the variance's sample) */
    double trials_sharpe_variance; /* sample variance (ddof 1) of the folds' test Sharpes, annualised */
    double expected_max_sharpe;    /* SR0: expected best Sharpe of n_trials unskilled trials, annualised */
    double deflated_sharpe;        /* PSR of the stitched curve against SR0 (NaN: < 2 trials or undefined) */
} vp_wf_weight;

/* What a walk-forward produced (host memory, owned; vp_wf_result_free). */
typedef struct vp_wf_result {
    char dir[VP_RUN_PATH_MAX];  /* the folder */
    int64_t n_folds;            /* folds planned */
    int64_t n_done;             /* folds finished (all of them unless interrupted) */
    int64_t n_stitched;         /* folds in the stitched curve: n_done, or up to the first ruined fold */
    int64_t ruined_fold;        /* number of the first fold whose test window was ruined (0: none): the
                                   walk-forward's status is "ruined" (folds[ruined_fold - 1].ruin says how) */
    int interrupted;            /* 1: stopped early; a resume continues */
    vp_wf_fold* folds;          /* [n_done] */
    int64_t n_curve;            /* points of the stitched test curve */
    int64_t* bar;               /* [n_curve] bar index of each point */
    int32_t* fold;              /* [n_curve] fold number (from 1) of each point */
    double* equity;             /* [n_curve] stitched out-of-sample equity: each fold from the previous one's end */
    double* benchmark;          /* [n_curve] buy-and-hold per test span, stitched the same way */
    double* position;           /* [n_curve] contracts held at each close */
    vp_metrics_summary summary; /* the stitched curve, its baselines and every stitched test trade */
    vp_wf_weight weight;        /* the stitched Sharpe's deflation over the folds */
} vp_wf_result;

/* Makes the folds of n_bars bars with `warmup` bars of feature history reserved at the start,
 * for cfg's walkforward section and split.embargo; *n_folds receives their number (max_folds
 * applied), folds (may be NULL) up to cap of them. */
vp_status vp_wf_plan(const vp_config* cfg, int64_t n_bars, int64_t warmup, vp_split* folds, int64_t cap,
                     int64_t* n_folds);

/* Runs (or, with opts->mode VP_RUN_RESUME, continues) the walk-forward of cfg's data with
 * cfg->walkforward's folds on backend b into opts->dir; *out receives the stitched result of
 * the finished folds. A resume refuses a plan of other folds than the folder's (its
 * walkforward.json) and another config (run.* and walkforward.parallel aside). */
vp_status vp_walkforward_run(const vp_config* cfg, vp_backend* b, const vp_wf_opts* opts, vp_wf_result* out);

/* Frees a result's arrays (a zeroed result is a no-op). */
void vp_wf_result_free(vp_wf_result* r);

/* Prints the ruin first when there was one (RUINED, the fold, its bar and time, the equity at it
 * and after the close-out), the per-fold table, the stitched Sharpe's weight (SE, PSR, deflated
 * Sharpe over the folds, whether it is distinguishable from noise) and the stitched metrics as
 * text (marked as a ruined walk-forward's when ruined). */
vp_status vp_wf_print(const vp_wf_result* r, FILE* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_WALKFORWARD_H */
