/* The signal bus as statistics of the "train" event (metrics.jsonl, TensorBoard, the
 * report's curves), one key per slot of the table in vulpes/signals.h. */
#include "learn/signal_log.h"

void vp_learner_signal_stats(const vp_learner* l, int64_t steps, vp_kv_list* out) {
    if (!l || !out || !l->signals_host) return;
    const vp_signals_cfg* c = &l->cfg.signals;
    if (vp_signals_bus_on(c)) {
        // the counts as integers, the rest as numbers
        for (int s = 0; s < VP_SIG_COUNT; ++s)
            vp_kv_add(out, vp_signal_key(s), l->signals_host[s], s == VP_SIG_RULE_RUNS || s == VP_SIG_STEPS);
        return;
    }
    if (c->lr_schedule != VP_LR_CONSTANT && steps >= 1)
        vp_kv_add(out, vp_signal_key(VP_SIG_LR), vp_signals_lr_at(c, l->cfg.adamw.lr, steps - 1), 0);
}
