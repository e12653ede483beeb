/* vulpes: the decision record — what the agent decides at a bar's close for the bar after it,
 * as `vulpes act` prints it (src/eval/backtest_act.c) for the bar after a backtest's span and
 * the live API (vulpes/live.h) for every bar it is fed: the choices, the target position, the
 * take-profit and stop-loss levels in price, every Q value and the margin. docs/backtest.md
 * ("vulpes act") lists the JSON fields. */
#ifndef VULPES_DECISION_H
#define VULPES_DECISION_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Most action heads a decision holds (the environment's 3 + 4 + 3 + 3 = 13). */
#define VP_DECISION_MAX_HEADS 16

/* The decision at a bar's close for the bar after it. */
typedef struct vp_decision {
    int64_t bar;              /* index of the bar decided at: in vulpes act's data, or counted from the live
                                 API's first bar (0) */
    int64_t time_ms;          /* its time */
    int32_t action[4];        /* the choices: direction (0 short, 1 flat, 2 long), size (0 .. 3: 0.25 .. 1 of
                                 instrument.max_position), take-profit and stop-loss (ATR multiples 0 .. 2) */
    int32_t contracts;        /* the target position's size, contracts (0 when flat), after size_scale */
    int has_scale;            /* 1: the network's risk-budget head scaled the size by size_scale */
    float size_scale;         /* that scale in (0, 1) (has_scale; docs/modules.md) */
    double take_profit;       /* the take-profit level from the close, price units (0: none) */
    double stop_loss;         /* the stop-loss level from the close, price units (0: none) */
    int n_heads;              /* entries of q */
    float q[VP_DECISION_MAX_HEADS]; /* [n_heads] the Q value of every choice, branches in order (vulpes/action.h) */
    double q_margin;          /* how far the choice won by (vp_action_greedy_margin) */
    int fragile;              /* 1: q_margin < VP_ACTION_FRAGILE_MARGIN (another machine's rounding may flip it) */
    double atr;               /* the ATR known at the close, price units */
    double close;             /* the bar's close */
    int32_t position;         /* contracts the live account holds at the close (signed), before the decision
                                 (0 from vulpes act: its window ends flat) */
    double equity;            /* the live account's equity at the close, currency (0 from vulpes act) */
    int closing_out;          /* 1: the live account's close is at or below the ruin level: the next open closes
                                 it out flat, whatever the choice, and no decision follows */
} vp_decision;

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DECISION_H */
