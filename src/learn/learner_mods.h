/* Internal: the learner modules of issue 16 (docs/modules.md): adaptive atom spacing (the
 * spacing logits' gradient) and PopArt (its state and step), as calls the learner step makes
 * at fixed points. Each is a no-op when its switch is off. */
#ifndef VP_LEARN_LEARNER_MODS_H
#define VP_LEARN_LEARNER_MODS_H

#include "learn/loss.h"
#include "vulpes/learner.h"

/* The modules' buffers, in their own arena (empty when both are off). */
typedef struct vp_learner_mods {
    vp_arena arena;            /* backend memory of the tensors below */
    vp_tensor resid;           /* [B, nb] adaptive atoms: w (Q - y) / (B nb) */
    vp_tensor d_spacing;       /* [nb, Z - 1] adaptive atoms: the spacing logits' gradient of the step */
    vp_tensor support;         /* [nb, Z] view: the online forward's support at s_t */
    vp_tensor target_support;  /* [nb, Z] view: the target forward's support */
} vp_learner_mods;

/* Takes the modules' buffers and l->popart (state mu 0, nu 1, sigma 1); set-up only. */
vp_status vp_learner_mods_init(vp_learner* l);

/* Frees what vp_learner_mods_init took. */
void vp_learner_mods_free(vp_learner* l);

/* Points lb's optional fields at the modules' state: the two supports (adaptive atoms) and
 * PopArt's state. Host only (views), after the forwards. */
void vp_learner_mods_batch(vp_learner* l, vp_loss_batch* lb);

/* Loss phase, after the losses: the adaptive atoms' spacing gradient into the modules' scratch. */
vp_status vp_learner_mods_loss(vp_learner* l, const vp_loss_batch* lb);

/* Backward phase, after the model's backward: that gradient into model.grads. */
vp_status vp_learner_mods_backward(vp_learner* l);

/* Optimiser phase, last: PopArt's statistics update and the rescale of the IQN output layer of
 * the online and the target parameters. */
vp_status vp_learner_mods_optim(vp_learner* l, const vp_batch* bt);

#endif /* VP_LEARN_LEARNER_MODS_H */
