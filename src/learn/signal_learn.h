/* Internal: the bus's part of the learner (set-up and the ops a step issues), for
 * learner.c and learner_step.c. Ops only inside a step: capturable. */
#ifndef VP_LEARN_SIGNAL_LEARN_H
#define VP_LEARN_SIGNAL_LEARN_H

#include "vulpes/learner.h"

/* Floats of the learner's arena the bus takes (the controls, and the drift, discount and
 * partial-sum scratch when the bus is on). */
int64_t vp_signals_arena_floats(const vp_learner_cfg* c, int64_t n_weights);

/* Takes the controls and, when the bus is on, its scratch from the learner's arena, and
 * the bus from its mapped arena. */
vp_status vp_signals_alloc(vp_learner* l);

/* Writes the first values: controls from the config (lr, clip, tau, gamma; factors 1,
 * counter 0), the bus zero with those controls mirrored (set-up: uploads). */
vp_status vp_signals_reset(vp_learner* l);

/* VP_CTL_LR = the schedule's rate for this step (after the step counter moved); nothing for
 * the constant schedule, whose rate was written once. */
vp_status vp_signals_schedule(vp_learner* l);

/* *disc = the discounts the losses read: the batch's own, or (gamma rule) the batch's times
 * VP_CTL_DISC_SCALE in the scratch. */
vp_status vp_signals_discount(vp_learner* l, const vp_batch* bt, const vp_tensor** disc);

/* The Polyak update target = (1 - tau) target + tau online; with the bus, the drift sums
 * first (and with the tau rule, target += tau (online - target) with tau read on the device). */
vp_status vp_signals_polyak(vp_learner* l);

/* The bus kernel on this step's activations, loss gradients, discounts (those of
 * vp_signals_discount) and statistics; nothing when the bus is off. */
vp_status vp_signals_bus(vp_learner* l, const vp_batch* bt);

#endif /* VP_LEARN_SIGNAL_LEARN_H */
