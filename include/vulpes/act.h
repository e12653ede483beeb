/* vulpes: `vulpes act` — the policy's decision for the bar after the last one of a data file,
 * as one JSON object: the exact backtest's decision after its span (vp_rollout_result's last
 * window: its choice, margin and scores) read against the span's last bar (its close and
 * ATR give the take-profit and stop-loss prices). docs/backtest.md, "vulpes act", has the
 * fields. */
#ifndef VULPES_ACT_H
#define VULPES_ACT_H

#include "vulpes/backtest.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Decimals of a tick size (0.00001: 5, 0.25: 2, 1: 0); -1 for none or more than 10. */
int vp_act_tick_decimals(double tick);

/* The decision object of result r (a rollout whose last window ends at last->bar) into *out
 * (cJSON*, caller deletes): checkpoint and data (the given texts), bar, time, decision_for,
 * direction ("short", "flat", "long"), size_fraction (the size branch's choice, 0.25 .. 1),
 * contracts (the target position's size; 0 when flat), take_profit and stop_loss ({atr_multiple:
 * the branch's choice 0 .. 2, price: last close +- atr_multiple x ATR on the chosen side, at the
 * tick's decimals; null when none, flat or not above 0}), q (the scores of every choice per
 * branch), q_margin, fragile (q_margin < VP_ACTION_FRAGILE_MARGIN), atr, last_close and
 * warnings (checks' notes, then a fragile decision's). Fails naming the bar when the last
 * window has no decision (a ruin, forced actions). */
vp_status vp_act_json(const vp_rollout_result* r, const vp_backtest_last_bar* last, const char* checkpoint,
                      const char* data, const vp_backtest_checks* checks, struct cJSON** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ACT_H */
