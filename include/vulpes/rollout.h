/* vulpes: the rollout — a policy run greedily over windows of a span of bars with the
 * training cost model; validation, the exact backtest, walk-forward tests and the end-of-
 * training test span all go through it (SPEC section 7).
 *
 * Two phases. First the policy's market part (vp_policy_encode) runs over every decision
 * bar of the span in large batches. Then the sequential part runs only its decision part
 * bar by bar: portfolio vector, scores (vp_policy_score), the argmax of each branch and
 * the margin it won by (vp_action_greedy_margin), and the environment's own step (src/env/env_step.h: fill at the next
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
 * backtest never restarts an episode. Ruin: at a close where a window's equity is at or
 * below ruin_fraction x initial_equity (always at or below 0), the window's next step goes
 * flat at the next bar's open, like a window's last step, and the window ends at that bar's
 * close (a "ruin" exit); equity is never clamped. The buy-and-hold and flat baselines are
 * stepped through the same code with forced actions. The orders the environment's leverage
 * limit cut are counted for the strategy and for buy-and-hold (vp_rollout_cuts). At each
 * window's last close the policy also decides for the bar after it (not traded).
 * docs/backtest.md has the details and the outputs' columns. */
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
    VP_EXIT_RUIN,        /* closed at the open after a close at or below the ruin level; the window ends */
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
    int64_t exit_bar;     /* bar whose open or range filled the exit (the bar after the ruin close for a ruin) */
    double entry_price;   /* contract-weighted mean price of the opening fills, slippage included */
    double exit_price;    /* contract-weighted mean price of the closing fills */
    double pnl;           /* net profit: the sum of its cash flows, commission, slippage (with the spread's
                             share) and financing paid, currency */
    double costs;         /* commission, plus slippage and the spread's share (vp_env_fill_rec.slip) paid on its
                             fills, plus the financing charged while it was held, currency (>= 0; a financing
                             credit is no cost: it only adds to pnl) */
    double financing;     /* net financing of the position over the trade (vp_env_fill_rec.financing summed),
                             currency: > 0 paid (also in costs), < 0 a credit received (only in pnl) */
    int64_t bars_held;    /* bar closes at which the position was open */
} vp_rollout_trade;

/* Bars of the first leverage cuts a result lists (vp_rollout_cuts.bars). */
#define VP_ROLLOUT_CUT_BARS 100

/* The orders the leverage limit cut over a run, of the strategy or of a baseline: the
 * environment's step cuts an order that grows |position| to instrument.max_leverage x equity
 * and writes the contracts it removed (vp_env_fill_rec.cut, docs/env.md). */
typedef struct vp_rollout_cuts {
    double max_leverage;  /* the instrument's limit the run stepped under, notional / equity (0: none) */
    int64_t orders;       /* orders cut (steps whose fill record has cut > 0; an order cut to nothing included) */
    int64_t contracts;    /* contracts removed from them, summed */
    int n_bars;           /* bars listed: min(orders, VP_ROLLOUT_CUT_BARS) */
    int64_t bars[VP_ROLLOUT_CUT_BARS]; /* [n_bars] the first cut orders' bars (the bar whose open the order was
                                          for: the decision bar + 1), in time order */
} vp_rollout_cuts;

/* How to run a rollout; start from vp_rollout_cfg_default(). */
typedef struct vp_rollout_cfg {
    vp_instrument instrument; /* contract and costs: those of the training run */
    int32_t episode_bars;     /* the training run's episode length (>= 1): unit of portfolio entries 2 and 6 */
    int64_t n_windows;        /* 1: exact sequential path; N > 1: N windows side by side (1 .. steps of the span) */
    int64_t encode_chunk;     /* bars per vp_model_encode batch (>= 1; default VP_ROLLOUT_CHUNK) */
    int fused;                /* CUDA: 1 (default) heads and step of the whole span in one kernel when the
                                 model's head weights fit on chip; 0: the op path (a graph of ops per bar) */
    vp_annual annual;         /* annualisation, measured over the data file (or given) by the caller */
    double ruin_fraction;     /* the training run's env.ruin_fraction (0 <= f < 1): a close at or below
                                 f x initial_equity (always at or below 0) closes the window out */
    const int32_t* forced_actions; /* [b - a - 1, 4] host: the action at decision bar a + k instead of the
                                      model's (tests); NULL: the model's greedy choice */
    int next_decision;        /* 1 (default): each window's decision for the bar after it (choice, margin,
                                 scores); 0: none (a validation, which reads only the metrics) */
} vp_rollout_cfg;

/* Defaults: the config table's instrument, episode length and ruin fraction, sequential, chunk
 * 8192, fused on, 252 periods a year given. */
vp_rollout_cfg vp_rollout_cfg_default(void);

/* The market a backtest reads. Only bars before span.end are read (features: rows
 * span.begin - K + 1 .. span.end - 1, the last for the decision after the span; prices and
 * ATR: bars span.begin .. span.end - 1). */
typedef struct vp_rollout_data {
    const vp_bars* bars;        /* host bars (times for the outputs, prices for the fills) */
    const double* atr;          /* [bars->n] host, ATR known at each close (the training run's) */
    const vp_tensor* features;  /* [rows >= span.end, F] f32 in memory the backend reads */
    vp_span span;               /* [a, b): b - a >= 2 bars, inside [0, bars->n) */
} vp_rollout_data;

/* How a window, or a baseline over it, met the ruin rule (all zero when it did not). */
typedef struct vp_rollout_ruin {
    int ruined;                /* 1: a close of the window was at or below the ruin level */
    int64_t window;            /* the window */
    int64_t bar;               /* the bar of that close (the ruin bar) */
    int64_t time_ms;           /* the ruin bar's time stamp (its open time, as in the data), Unix ms */
    int64_t close_bar;         /* the window's last bar: its open closed the position (bar + 1), or the
                                  ruin bar itself when that was the window's last close */
    double level;              /* the ruin level, ruin_fraction x initial_equity, currency */
    double equity_at_ruin;     /* equity at the ruin bar's close, currency (never clamped) */
    double equity_after_close; /* equity at close_bar's close, after the close-out fill, currency */
    int below_zero;            /* 1: either of the two figures is below zero */
    double loss_past_floor;    /* level - the lower of the two figures: what the move lost past the
                                  ruin level, currency (>= 0) */
} vp_rollout_ruin;

/* One window of a result. */
typedef struct vp_rollout_window {
    int64_t begin;     /* bar of its first point (flat, initial equity) */
    int64_t last;      /* bar of its last point (the window's closing bar, or close_bar after a ruin) */
    int64_t offset;    /* index of its first point in the result's point arrays */
    int64_t n_points;  /* points: last - begin + 1 */
    int ruined;        /* 1 when it ruined (ruin.ruined) */
    int64_t cut_orders;            /* the strategy's orders cut by the leverage limit (vp_rollout_cuts.orders) */
    int64_t cut_contracts;         /* contracts removed from them */
    int64_t buy_hold_cut_orders;   /* buy-and-hold's orders cut by the leverage limit over the window */
    int64_t buy_hold_cut_contracts; /* contracts removed from them */
    vp_rollout_ruin ruin;          /* the strategy's ruin */
    vp_rollout_ruin buy_hold_ruin; /* buy-and-hold's ruin over the window */
    vp_perf perf;      /* the strategy's metrics over its points */
    vp_perf buy_hold;  /* buy-and-hold over the window, stepped by the environment with the same rules */
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
    int32_t* action;         /* [n_points, 4] choices decided at the bar's close (-1: none). At a window's
                                last point: the policy's choice for the bar after it, not traded (-1 after
                                a ruin or with forced actions) */
    double* margin;          /* [n_points] Q margin of that choice (vp_action_greedy_margin; NaN: none) */
    int32_t n_heads;         /* A: scores per decision (vp_action_layout.n_heads; 0 with forced actions) */
    float* next_q;           /* [n_windows, n_heads] the policy's scores at each window's last close, behind
                                its choice for the bar after it (vulpes/action.h gives each branch's heads;
                                NaN where the window has none: a ruin; NULL with forced actions) */
    float* next_scale;       /* [n_windows] the risk-budget head's scale of that choice's size (NaN where the
                                window has none; NULL without the head) */
    int64_t n_decisions;     /* choices with a margin (points whose margin is not NaN) */
    int64_t n_fragile;       /* of them, fragile: margin < VP_ACTION_FRAGILE_MARGIN */
    double ruin_level;       /* the ruin level: ruin_fraction x initial_equity, currency */
    int64_t n_ruined;        /* windows that ruined */
    vp_rollout_ruin ruin;          /* the first ruined window's ruin (ruined 0: none) */
    vp_rollout_ruin buy_hold_ruin; /* the first window whose buy-and-hold ruined (ruined 0: none) */
    vp_rollout_cuts cuts;          /* the strategy's orders cut by the leverage limit, over every window */
    vp_rollout_cuts buy_hold_cuts; /* buy-and-hold's, over every window */
    int64_t n_curve;         /* points of the stitched curve: b - a (bars a .. b-1) */
    int64_t* curve_time_ms;  /* [n_curve] bar times */
    double* curve_equity;    /* [n_curve] the windows chained: each starts from the previous one's end */
    double* curve_benchmark; /* [n_curve] buy-and-hold per window, chained the same way */
    double* curve_flat;      /* [n_curve] the flat baseline, chained the same way */
    double* curve_drawdown;  /* [n_curve] drawdown of curve_equity (<= 0) */
    double* curve_position;  /* [n_curve] contracts at each close (the later window's at a boundary) */
    int64_t n_trades;        /* closed trades */
    vp_rollout_trade* trades;     /* [n_trades] in time order */
    vp_metrics_summary summary; /* each of the three curves' metrics (total return: last / first - 1 of
                                   the curve itself) and the trades */
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
