/* Internal: the learner's step scratch (activations of the three forwards and the loss
 * buffers), visible to the learner's tests. */
#ifndef VP_LEARN_LEARNER_INTERNAL_H
#define VP_LEARN_LEARNER_INTERNAL_H

#include "learn/learner_mods.h"
#include "learn/loss.h"
#include "model/model_hmods.h"
#include "vulpes/learner.h"

/* Philox streams of the tau draws (distinct from every parameter-name stream). */
#define VP_LEARNER_STREAM_TAUS 0x7461752d6f6e6c6eULL        /* online taus */
#define VP_LEARNER_STREAM_TARGET_TAUS 0x7461752d74617267ULL /* target taus */
#define VP_LEARNER_STREAM_DROP 0x64726f702d646570ULL        /* stochastic-depth uniforms */

struct vp_learner_scratch {
    vp_loss_dims dims;          /* loss shapes for the learner's batch */
    vp_model_acts* acts;        /* online network at s_t (kept for the backward) */
    vp_model_acts* next_acts;   /* online network at s_{t+n}, no IQN (double-DQN choice) */
    vp_model_acts* target_acts; /* target network at s_{t+n} */
    vp_backend* lanes[2];       /* where the forwards at s_{t+n} (online, target) run, beside the one at s_t */
    vp_tensor a_star;           /* [B, n_branches] i32: double-DQN choice per branch */
    vp_tensor proj;             /* [B, n_branches, Z] projected C51 targets */
    vp_tensor c51_loss;         /* [B] per-sample C51 loss (the priorities) */
    vp_tensor iqn_loss;         /* [B] per-sample IQN loss */
    vp_tensor d_log_probs;      /* [B, A, Z] gradient of the loss w.r.t. the online log-probs */
    vp_tensor d_iqn;            /* [B, n_taus, A] gradient w.r.t. the online quantiles */
    vp_tensor drop_u;           /* [B] stochastic-depth uniforms of the step (stoch_depth > 0) */
    vp_tensor qd_loss;          /* [B] per-sample Q-denoise loss (q_denoise) */
    vp_tensor qd_dq;            /* [B, A] its gradient w.r.t. the refined Q (q_denoise) */
    vp_tensor rb_loss;          /* [B] per-sample risk-budget loss (risk_budget > 0) */
    vp_tensor rb_dl;            /* [B] its gradient w.r.t. the head's logit (risk_budget > 0) */
    vp_learner_mods mods;       /* adaptive atoms and PopArt buffers (learner_mods.h) */
    vp_tensor sig_diff;         /* [n_weights] online - target (the bus's drift; the tau rule's update) */
    vp_tensor sig_disc;         /* [B] the batch's discounts times the gamma rule's factor */
    vp_tensor sig_part;         /* [2 VP_SIG_PARTIAL_DOUBLES] f32 words: the CUDA bus's partial sums (doubles) */
    int batch_taken;            /* vp_learner_batch_init has run */
};

/* Sums model.grads over the ranks of l->comm and scales it by 1 / size (ops only); a no-op
 * without a communicator or with one rank (learner_dist.c). */
vp_status vp_learner_allreduce_grads(vp_learner* l);

#endif /* VP_LEARN_LEARNER_INTERNAL_H */
