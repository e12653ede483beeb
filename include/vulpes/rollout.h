/* vulpes: the rollout — a policy run greedily over windows of a span of bars with the
 * training cost model; validation, the exact backtest, walk-forward tests and the end-of-
 * training test span all go through it (SPEC section 7).
 *
 * Two phases. First the policy's market part (vp_policy_encode) runs over every decision
 * bar of the span in large batches. Then the sequential part runs only its decision part
 * bar by bar: portfolio vector, scores (vp_policy_score), the argmax of each branch
 * (vp_action_greedy), and the environment's own step (src/env/env_step.h: fill at the next
 * open plus slippage, commission, stop and take-profit against the next bar's range, stop
 * first), which writes its fills; one position carried bar to bar.
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
#ifndef VULPES_ROLLOUT_H
#define VULPES_ROLLOUT_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/data.h"
#include "vulpes/env.h"
#include "vulpes/metrics.h"
#include "vulpes/policy.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bars per encoder batch unless set (vp_rollout_cfg.encode_chunk). */
#define VP_ROLLOUT_CHUNK 8192

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
typedef struct vp_rollout_trade {
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
} vp_rollout_trade;

/* How to run a rollout; start from vp_rollout_cfg_default(). */
typedef struct vp_rollout_cfg {
    vp_instrument instrument; /* contract and costs: those of the training run */
    int32_t episode_bars;     /* the training run's episode length (>= 1): unit of portfolio entries 2 and 6 */
    int64_t n_windows;        /* 1: exact sequential path; N > 1: N windows side by side (1 .. steps of the span) */
    int64_t encode_chunk;     /* bars per vp_model_encode batch (>= 1; default VP_ROLLOUT_CHUNK) */
    int fused;                /* CUDA: 1 (default) heads and step of the whole span in one kernel when the
                                 model's head weights fit on chip; 0: the op path (a graph of ops per bar) */
    vp_annual annual;         /* annualisation, measured over the data file (or given) by the caller */
    const int32_t* forced_actions; /* [b - a - 1, 4] host: the action at decision bar a + k instead of the
                                      model's (tests); NULL: the model's greedy choice */
} vp_rollout_cfg;

/* Defaults: the config table's instrument and episode length, sequential, chunk 8192, fused on,
 * 252 periods a year given. */
vp_rollout_cfg vp_rollout_cfg_default(void);

/* The market a backtest reads. Only bars before span.end are read (features: rows
 * span.begin - K + 1 .. span.end - 2; prices and ATR: bars span.begin .. span.end - 1). */
typedef struct vp_rollout_data {
    const vp_bars* bars;        /* host bars (times for the outputs, prices for the fills) */
    const double* atr;          /* [bars->n] host, ATR known at each close (the training run's) */
    const vp_tensor* features;  /* [rows >= span.end - 1, F] f32 in memory the backend reads */
    vp_span span;               /* [a, b): b - a >= 2 bars, inside [0, bars->n) */
} vp_rollout_data;

/* One window of a result. */
typedef struct vp_rollout_window {
    int64_t begin;     /* bar of its first point (flat, initial equity) */
    int64_t last;      /* bar of its last point (the window's closing bar, or the ruin bar) */
    int64_t offset;    /* index of its first point in the result's point arrays */
    int64_t n_points;  /* points: last - begin + 1 */
    int ruined;        /* 1 when its equity reached 0 before its end */
    vp_perf perf;      /* the strategy's metrics over the window */
    vp_perf buy_hold;  /* buy-and-hold over the window, same costs */
} vp_rollout_window;

/* Everything a backtest produced (host memory, owned; vp_rollout_result_free). */
typedef struct vp_rollout_result {
    vp_span span;            /* [a, b) */
    int64_t n_windows;       /* windows run */
    vp_rollout_window* windows;   /* [n_windows] */
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
    vp_rollout_trade* trades;     /* [n_trades] in time order */
    vp_metrics_summary summary; /* the stitched curve (pooled returns), the baselines and the trades */
    const char* path;        /* which sequential path ran: "cpu", "ops" or "fused" */
    double encode_s;         /* wall seconds of the encoding phase */
    double sequential_s;     /* wall seconds of the sequential phase */
} vp_rollout_result;

/* Runs policy `pol` (computing on b; NULL when cfg->forced_actions is set) greedily over
 * data->span on backend b, into *out (free with vp_rollout_result_free, also after a
 * failure). A window's result does not depend on the other windows run beside it: bit for
 * bit on the CPU, within the tolerance of tests/gpu on CUDA. */
vp_status vp_rollout_run(vp_backend* b, const vp_policy* pol, const vp_rollout_data* data, const vp_rollout_cfg* cfg,
                         vp_rollout_result* out);

/* Frees a result's arrays and zeroes it (a zeroed result is a no-op). */
void vp_rollout_result_free(vp_rollout_result* r);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ROLLOUT_H */
