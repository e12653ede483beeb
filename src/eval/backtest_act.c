/* `vulpes act`'s decision object (vp_act_json): the last window's choice for the bar after the
 * span and its scores per branch, as the decision record the live API prints too
 * (src/live/live_json.c: contracts, take-profit and stop-loss prices by the environment's rules). */
#include <cjson/cJSON.h>
#include <string.h>

#include "live/live_impl.h"
#include "vulpes/action.h"
#include "vulpes/backtest.h"

vp_status vp_act_json(const vp_rollout_result* r, const vp_backtest_last_bar* last, const char* checkpoint,
                      const char* data, const vp_backtest_checks* checks, cJSON** out) {
    VP_REQUIRE(r != NULL && last != NULL && out != NULL && r->n_windows >= 1, VP_ERR_INVALID_ARG,
               "vp_act_json: NULL argument or empty result");
    *out = NULL;
    const int64_t w = r->n_windows - 1;
    const vp_rollout_window* x = &r->windows[w];
    const int64_t o = x->offset + x->n_points - 1;
    if (x->ruined)
        VP_FAIL(VP_ERR_STATE, "no decision for the bar after bar %lld: the backtest leading to it ruined at bar %lld "
                "and stopped", (long long)last->bar, (long long)x->ruin.bar);
    VP_REQUIRE(r->bar[o] == last->bar && r->action[VP_ENV_BRANCHES * o] >= 0 && r->next_q != NULL &&
               r->n_heads == vp_action_layout_env().n_heads, VP_ERR_STATE,
               "no decision for the bar after bar %lld: the backtest made none there", (long long)last->bar);
    // the decision record, printed by the same code as the live API's
    vp_live_decision d;
    memset(&d, 0, sizeof d);
    d.bar = last->bar;
    d.time_ms = last->time_ms;
    memcpy(d.action, r->action + VP_ENV_BRANCHES * o, sizeof d.action);
    d.close = last->close;
    d.atr = last->atr;
    d.n_heads = r->n_heads;
    memcpy(d.q, r->next_q + w * r->n_heads, sizeof(float) * (size_t)r->n_heads);
    d.q_margin = r->margin[o];
    d.fragile = d.q_margin < VP_ACTION_FRAGILE_MARGIN;
    vp_decision_levels(&d, &last->instrument);
    return vp_decision_json(&d, &last->instrument, checkpoint, data, checks, out);
}
