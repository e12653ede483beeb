/* Internal: the variable selection's statistics of a learner (learner_vsn.c). */
#ifndef VP_LEARN_LEARNER_VSN_H
#define VP_LEARN_LEARNER_VSN_H

#include "vulpes/algo.h"
#include "vulpes/learner.h"

/* Appends "vsn.<feature>" = the mean selection weight of each feature over the last learner
 * step's batch (vp_model_selection_weights) to *out; nothing without variable selection or
 * before the first learner step (steps 0) or this process's first. Waits for the backend. */
vp_status vp_learner_selection_stats(const vp_learner* l, int64_t steps, vp_kv_list* out);

#endif /* VP_LEARN_LEARNER_VSN_H */
