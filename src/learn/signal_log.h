/* Internal: the signal bus as statistics of the "train" event (signal_log.c). */
#ifndef VP_LEARN_SIGNAL_LOG_H
#define VP_LEARN_SIGNAL_LOG_H

#include "vulpes/algo.h"
#include "vulpes/learner.h"

/* Appends every bus slot under its key ("sig.loss_fast", ..., vulpes/signals.h) to *out when
 * the bus is on; with the bus off and a learning-rate schedule other than constant, only
 * "sig.lr", the rate of the last of `steps` learner steps (the host's copy of the device's
 * formula). Nothing otherwise. Reads the mapped bus in place: call after the backend
 * finished (vp_trainer_stats waits). */
void vp_learner_signal_stats(const vp_learner* l, int64_t steps, vp_kv_list* out);

#endif /* VP_LEARN_SIGNAL_LOG_H */
