/* Internal: the learner's loss kernels (SPEC section 4, "Learning"). Each function
 * checks its arguments, then runs the implementation of the backend's kind (CPU loops in
 * cpu_loss.c, CUDA kernels in cuda_loss.cu), chosen through a small table in loss.c.
 * All are batch-parallel and deterministic (no float atomics): the same inputs give the
 * same bits on every run of one backend.
 *
 * Action indices ([B, n_branches] i32) are choices within each branch (0..size-1); head
 * h of branch br is branch_offset[br] + choice. An index outside its branch makes that
 * sample's loss NaN (never a read out of bounds). */
#ifndef VP_LEARN_LOSS_H
#define VP_LEARN_LOSS_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/learner.h"
#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Largest C51 support the kernels accept (their per-row scratch is this many floats). */
#define VP_LOSS_MAX_ATOMS 256

/* Largest count of online or target taus the kernels accept. */
#define VP_LOSS_MAX_TAUS 512

/* Shapes and constants shared by the loss kernels. */
typedef struct vp_loss_dims {
    int64_t batch;                       /* B: samples */
    int n_actions;                       /* A: action heads, sum of branch sizes */
    int n_branches;                      /* branches */
    int branch_size[VP_MAX_BRANCHES];    /* choices per branch */
    int branch_offset[VP_MAX_BRANCHES];  /* first head of each branch */
    int n_atoms;                         /* Z: C51 atoms (2..VP_LOSS_MAX_ATOMS) */
    float v_min, v_max;                  /* C51 support, uniform, v_min < v_max */
    int n_taus;                          /* online IQN samples (0: no IQN loss) */
    int n_target_taus;                   /* target IQN samples */
    float kappa;                         /* quantile Huber threshold (1) */
} vp_loss_dims;

/* Fills dims from a model configuration, a batch size and the two tau counts; checks
 * them (the message names the bad field). */
vp_status vp_loss_dims_make(vp_loss_dims* d, const vp_model_cfg* mc, int64_t batch, int n_taus,
                            int n_target_taus, float kappa);

/* The per-sample transition data the losses read (all [B] or [B, n_branches], backend
 * memory). */
typedef struct vp_loss_batch {
    const vp_tensor* actions;      /* [B, n_branches] i32: action taken at s_t */
    const vp_tensor* next_actions; /* [B, n_branches] i32: a*, double-DQN choice at s_{t+n} */
    const vp_tensor* reward;       /* [B] f32: n-step return */
    const vp_tensor* discount;     /* [B] f32: gamma^n, 0 for a terminal */
    const vp_tensor* is_weight;    /* [B] f32: importance weight of each sample */
} vp_loss_batch;

/* Double-DQN choice: a_star[i, br] = argmax over branch br's heads of q[i, :] (ties -> the
 * lowest index; a NaN is never chosen over a number). q [B, A] f32, a_star [B, n_branches] i32. */
vp_status vp_loss_select(vp_backend* b, const vp_loss_dims* d, const vp_tensor* q,
                         vp_tensor* a_star);

/* Dopamine's C51 projection of R distributions with probabilities `probs` [R, n] at atoms
 * `support` [R, n] onto the uniform support of d->n_atoms atoms on [v_min, v_max]:
 * out [R, Z]. Atoms outside are clipped to the ends; no mass is lost. */
vp_status vp_loss_c51_project(vp_backend* b, const vp_loss_dims* d, const vp_tensor* support,
                              const vp_tensor* probs, vp_tensor* out);

/* C51 loss. For each sample i and branch br: the target net's distribution of a*
 * (exp of target_log_probs [B, A, Z]) under r + discount * z, projected onto the support
 * (proj [B, n_branches, Z], out); its cross-entropy with the online log_probs [B, A, Z]
 * of the taken action; loss [B] = mean over branches (unweighted; the PER priority).
 * d_log_probs [B, A, Z] = gradient of mean_i(is_weight_i * loss_i) w.r.t. log_probs
 * (zero outside the taken heads). */
vp_status vp_loss_c51(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch,
                      const vp_tensor* log_probs, const vp_tensor* target_log_probs,
                      vp_tensor* proj, vp_tensor* loss, vp_tensor* d_log_probs);

/* IQN quantile Huber loss. For each sample i and branch br: online quantiles
 * iqn [B, n_taus, A] of the taken head at taus [B, n_taus] against the targets
 * r + discount * target_iqn [B, n_target_taus, A] of a*; loss [B] = mean over branches of
 * (sum over online taus of the mean over target taus of
 * |tau - 1{delta < 0}| * huber_kappa(delta) / kappa), delta = target - online.
 * d_iqn [B, n_taus, A] = gradient of mean_i(is_weight_i * loss_i) w.r.t. iqn. */
vp_status vp_loss_iqn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch,
                      const vp_tensor* iqn, const vp_tensor* target_iqn, const vp_tensor* taus,
                      vp_tensor* loss, vp_tensor* d_iqn);

/* Fills taus [rows, cols] with uniforms in (0, 1) from Philox(seed, stream, index), index
 * = step[0] * numel + element, so every learner step draws fresh taus without a host
 * round trip. step ([1] i32, backend memory) may be NULL (read as 0). */
vp_status vp_loss_draw_taus(vp_backend* b, uint64_t seed, uint64_t stream, const vp_tensor* step,
                            vp_tensor* taus);

/* Writes the statistics block stats [VP_STAT_COUNT] f32 (vp_stat in learner.h; mapped or
 * backend memory) from c51 [B], iqn [B] (may be NULL: zeros), is_weight [B], q [B, A] and grad_norm [1]. */
vp_status vp_loss_stats(vp_backend* b, const vp_loss_dims* d, const vp_tensor* c51,
                        const vp_tensor* iqn, const vp_tensor* is_weight, const vp_tensor* q,
                        const vp_tensor* grad_norm, vp_tensor* stats);

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_LOSS_H */
