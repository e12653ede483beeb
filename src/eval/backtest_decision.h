/* Internal: the decision record's levels and JSON object (backtest_act.c), printed by
 * `vulpes act` and by the live API (src/live/live.c). */
#ifndef VP_EVAL_BACKTEST_DECISION_H
#define VP_EVAL_BACKTEST_DECISION_H

#include <cjson/cJSON.h>

#include "vulpes/backtest.h"
#include "vulpes/decision.h"
#include "vulpes/env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills d's contracts, take_profit and stop_loss from d->action, d->close and d->atr by the
 * environment's rules for instrument `in` (env_rules.h: contracts of a size; a level k x ATR
 * from the close on the position's side, 0 when none). */
void vp_decision_levels(vp_decision* d, const vp_instrument* in);

/* The decision object of d into *out (cJSON*, caller deletes): checkpoint and data (the given
 * texts, null when NULL), bar, time, decision_for, direction, size_fraction, contracts,
 * take_profit and stop_loss ({atr_multiple, price at the tick's decimals or null}), q (every
 * branch's scores), q_margin, fragile, atr, last_close and warnings (checks' notes, then a
 * fragile decision's). docs/backtest.md, "vulpes act", lists them. */
vp_status vp_decision_json(const vp_decision* d, const vp_instrument* in, const char* checkpoint,
                           const char* data, const vp_backtest_checks* checks, cJSON** out);

#ifdef __cplusplus
}
#endif
#endif /* VP_EVAL_BACKTEST_DECISION_H */
