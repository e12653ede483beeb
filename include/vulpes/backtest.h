/* vulpes: the backtest (SPEC section 7) — a trained agent run greedily over a span of bars
 * it has not seen, with the training cost model, and what it writes.
 *
 * Two phases. First the market part of the network (vp_model_encode) runs over every
 * decision bar of the span in large batches. Then the sequential part runs only the heads
 * bar by bar: portfolio vector, Q-values, the argmax of each branch, and the environment's
 * own step (src/env/env_step.h: fill at the next open plus slippage, commission, stop and
 * take-profit against the next bar's range, stop first), one position carried bar to bar.
 *
 * - Exact sequential mode (n_windows = 1): one window over the whole span [a, b): decisions
 *   at the closes of bars a .. b-2, the position closed at the open of bar b-1, equity marked
 *   at every close a .. b-1. Nothing at or after bar b is read.
 * - Segment-parallel mode (n_windows = N > 1): the span's b-1-a steps are cut into N
 *   consecutive windows; window w starts flat at the close of bar s_w and ends at the close
 *   of bar s_{w+1} (s_0 = a, s_N = b-1), so neighbours share one boundary bar and the windows'
 *   returns together cover the span once. The windows step side by side through the same
 *   code; on a window the result equals the sequential mode run over that window alone.
 *
 * The portfolio entries measured in episode lengths (bars held, time left) use the training
 * run's episode_bars and are capped at 1, the largest value training shows the network. The
 * backtest never restarts an episode: a window that loses all its equity (equity <= 0) stops
 * there (a "ruin" exit). docs/backtest.md has the details and the outputs' columns. */
#ifndef VULPES_BACKTEST_H
#define VULPES_BACKTEST_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/data.h"
#include "vulpes/env.h"
#include "vulpes/metrics.h"
#include "vulpes/model.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bars per encoder batch unless set (vp_backtest_cfg.encode_chunk). */
#define VP_BACKTEST_CHUNK 8192

/* Why a trade ended. */
typedef enum vp_exit_reason {
    VP_EXIT_SIGNAL = 0,  /* the agent's own order at a bar's open (to flat, smaller, or reversed) */
    VP_EXIT_STOP,        /* the resting stop-loss */
    VP_EXIT_TAKE_PROFIT, /* the resting take-profit */
    VP_EXIT_END,         /* closed at the open of the window's last bar */
    VP_EXIT_RUIN,        /* equity reached 0: marked at that bar's close, the window stops */
    VP_EXIT_REASON_COUNT
} vp_exit_reason;

/* Name of an exit reason as written in trades.csv ("take_profit"); "?" when invalid. */
const char* vp_exit_reason_name(vp_exit_reason r);

/* One round trip: from a fill that opens a position (from flat or by reversing) to the fill
 * that leaves it flat or reverses it. Partial reductions and additions belong to the trade. */
typedef struct vp_bt_trade {
    int32_t window;       /* window index (0 in the sequential mode) */
    int32_t side;         /* +1 long, -1 short */
    int32_t size;         /* largest |position| of the trade, contracts */
    vp_exit_reason reason; /* how it ended */
    int64_t entry_bar;    /* bar whose open filled the entry */
    int64_t exit_bar;     /* bar whose open or range filled the exit (the ruin bar for a ruin) */
    double entry_price;   /* contract-weighted mean price of the opening fills, slippage included */
    double exit_price;    /* contract-weighted mean price of the closing fills (the close for a ruin) */
    double pnl;           /* net profit: the sum of its cash flows, commission and slippage paid, currency */
    double costs;         /* commission plus slippage paid on its fills, currency (>= 0) */
    int64_t bars_held;    /* bar closes at which the position was open */
} vp_bt_trade;

/* How to run a backtest; start from vp_backtest_cfg_default(). */
typedef struct vp_backtest_cfg {
    vp_instrument instrument; /* contract and costs: those of the training run */
    int32_t episode_bars;     /* the training run's episode length (>= 1): unit of portfolio entries 2 and 6 */
    int64_t n_windows;        /* 1: exact sequential path; N > 1: N windows side by side (1 .. steps of the span) */
    int64_t encode_chunk;     /* bars per vp_model_encode batch (>= 1; default VP_BACKTEST_CHUNK) */
    int fused;                /* CUDA: 1 (default) heads and step of the whole span in one kernel when the
                                 model's head weights fit on chip; 0: the op path (a graph of ops per bar) */
    vp_annual annual;         /* annualisation, measured over the data file (or given) by the caller */
    const int32_t* forced_actions; /* [b - a - 1, 4] host: the action at decision bar a + k instead of the
                                      model's (tests); NULL: the model's greedy choice */
} vp_backtest_cfg;

/* Defaults: the default instrument, episode_bars 1024, sequential, chunk 8192, fused on,
 * 252 periods a year given. */
vp_backtest_cfg vp_backtest_cfg_default(void);

/* The market a backtest reads. Only bars before span.end are read (features: rows
 * span.begin - K + 1 .. span.end - 2; prices and ATR: bars span.begin .. span.end - 1). */
typedef struct vp_backtest_data {
    const vp_bars* bars;        /* host bars (times for the outputs, prices for the fills) */
    const double* atr;          /* [bars->n] host, ATR known at each close (the training run's) */
    const vp_tensor* features;  /* [rows >= span.end - 1, F] f32 in memory the backend reads */
    vp_span span;               /* [a, b): b - a >= 2 bars, inside [0, bars->n) */
} vp_backtest_data;

/* One window of a result. */
typedef struct vp_bt_window {
    int64_t begin;     /* bar of its first point (flat, initial equity) */
    int64_t last;      /* bar of its last point (the window's closing bar, or the ruin bar) */
    int64_t offset;    /* index of its first point in the result's point arrays */
    int64_t n_points;  /* points: last - begin + 1 */
    int ruined;        /* 1 when its equity reached 0 before its end */
    vp_perf perf;      /* the strategy's metrics over the window */
    vp_perf buy_hold;  /* buy-and-hold over the window, same costs */
} vp_bt_window;

/* Everything a backtest produced (host memory, owned; vp_backtest_result_free). */
typedef struct vp_backtest_result {
    vp_span span;            /* [a, b) */
    int64_t n_windows;       /* windows run */
    vp_bt_window* windows;   /* [n_windows] */
    int64_t n_points;        /* points over all windows (b - a + n_windows - 1 when none is ruined) */
    int64_t* bar;            /* [n_points] bar index of each point */
    double* equity;          /* [n_points] equity at the bar's close, each window from initial equity */
    double* cash;            /* [n_points] cash at the bar's close */
    int32_t* position;       /* [n_points] contracts held at the bar's close */
    int32_t* action;         /* [n_points, 4] choices decided at the bar's close (-1: none) */
    int64_t n_curve;         /* points of the stitched curve: b - a (bars a .. b-1) */
    int64_t* curve_time_ms;  /* [n_curve] bar times */
    double* curve_equity;    /* [n_curve] the windows chained: each starts from the previous one's end */
    double* curve_benchmark; /* [n_curve] buy-and-hold per window, chained the same way */
    double* curve_drawdown;  /* [n_curve] drawdown of curve_equity (<= 0) */
    double* curve_position;  /* [n_curve] contracts at each close (the later window's at a boundary) */
    int64_t n_trades;        /* closed trades */
    vp_bt_trade* trades;     /* [n_trades] in time order */
    vp_metrics_summary summary; /* the stitched curve (pooled returns), the baselines and the trades */
    const char* path;        /* which sequential path ran: "cpu", "ops" or "fused" */
    double encode_s;         /* wall seconds of the encoding phase */
    double sequential_s;     /* wall seconds of the sequential phase */
} vp_backtest_result;

/* Runs model `m` with parameters `params` ([n_weights], backend memory; both may be NULL
 * when cfg->forced_actions is set) over data->span on backend b, into *out (free with
 * vp_backtest_result_free, also after a failure). */
vp_status vp_backtest_run(vp_backend* b, const vp_model* m, const vp_tensor* params /* [n_weights] */,
                          const vp_backtest_data* data, const vp_backtest_cfg* cfg, vp_backtest_result* out);

/* Frees a result's arrays and zeroes it (a zeroed result is a no-op). */
void vp_backtest_result_free(vp_backtest_result* r);

/* What the output files say besides the result. */
typedef struct vp_backtest_info {
    const char* title;       /* report heading (NULL: "backtest") */
    const char* checkpoint;  /* the checkpoint's path (NULL: none) */
    const char* data;        /* the bar file or market (NULL: none) */
    const char* config_text; /* the run's resolved config (NULL: none) */
    const vp_bars* bars;     /* the bars the result's indices point into (times of trades and points) */
} vp_backtest_info;

/* Writes trades.csv, equity.csv, summary.json and report.html into folder `dir` (made when
 * absent), each atomically. */
vp_status vp_backtest_write(const vp_backtest_result* r, const vp_backtest_info* info, const char* dir);

/* Writes trades.csv, equity.csv and report.html into folder `dir` (made when absent), each
 * atomically: what vp_backtest_write writes but summary.json, for a caller with its own. */
vp_status vp_backtest_write_files(const vp_backtest_result* r, const vp_backtest_info* info, const char* dir);

/* Writes only summary.json's object into *out (cJSON*, caller deletes): the span, the mode,
 * the annualisation, the metrics, and the per-window table in the segment mode. */
vp_status vp_backtest_summary_json(const vp_backtest_result* r, const vp_backtest_info* info, struct cJSON** out);

/* ---- the `vulpes backtest` job: a checkpoint over a bar file --------------------------------- */

/* What to run. The network, instrument, episode length and feature settings come from the
 * config in the checkpoint's metadata; features and ATR are computed from bars before the
 * span's end only (warm-up from before the span). */
typedef struct vp_backtest_job {
    const char* checkpoint; /* a checkpoint of a training run (best.safetensors, last.safetensors) */
    const char* data;       /* CSV bar file or synth:KIND[:...] market; NULL: the checkpoint config's data.path */
    const char* from;       /* first decision bar: ISO date / date-time (first bar at or after it) or a bar
                               index below 10^8; NULL: the first bar after the feature warm-up */
    const char* to;         /* end of the span, exclusive, same forms; NULL: the end of the data */
    const char* out;        /* output folder; NULL: runs/YYYYmmdd-HHMMSS-backtest */
    int force;              /* 1: reuse a non-empty output folder (its run files are replaced) */
    int64_t n_windows;      /* 1: exact sequential path; N > 1: segment-parallel (see vp_backtest_cfg) */
    int fused;              /* see vp_backtest_cfg.fused */
} vp_backtest_job;

/* Runs a job on backend b: loads the checkpoint and the bars, runs the backtest, writes
 * config.yaml, metrics.jsonl (one "backtest" event), trades.csv, equity.csv, summary.json and
 * report.html into the output folder (its path into out_dir[cap]), and leaves the result in
 * *out (free with vp_backtest_result_free). */
vp_status vp_backtest_job_run(vp_backend* b, const vp_backtest_job* job, vp_backtest_result* out, char* out_dir,
                              size_t cap);

/* Resolves a span bound against bars: a bar index (all digits, below 10^8) as is, else a
 * time (vp_time_parse forms) as the first bar at or after it (n when none); into *index. */
vp_status vp_backtest_bar_of(const vp_bars* bars, const char* text, int64_t* index);

/* ---- the end of a training run --------------------------------------------------------------- */

struct vp_trainer;

/* A vp_train_finish_fn (vulpes/train.h) for vp_train_opts.finish: the exact sequential
 * backtest of the run's test span with `params` (in memory: the trainer's model, features, ATR
 * and instrument, annualised over all its bars); writes trades.csv, equity.csv and report.html
 * into run_dir and adds vp_backtest_summary_json's object to `summary` (cJSON*) as
 * "test_backtest". ctx: NULL, or a vp_metrics_summary* that receives the metrics. */
vp_status vp_backtest_train_finish(void* ctx, const struct vp_trainer* t, const vp_tensor* params /* [n_weights] */,
                                   const char* run_dir, struct cJSON* summary);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_BACKTEST_H */
