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

/* Elements of the PopArt state ([VP_POPART_N] f32, backend memory; docs/modules.md). */
enum {
    VP_POPART_MU = 0,    /* running mean of the targets (0 at the start) */
    VP_POPART_NU = 1,    /* running second moment (1 at the start) */
    VP_POPART_SIGMA = 2, /* sqrt(nu - mu^2), clamped to [VP_POPART_SIGMA_MIN, VP_POPART_SIGMA_MAX] (1) */
    VP_POPART_N = 3
};

/* Bounds of PopArt's sigma (van Hasselt et al. 2016). */
#define VP_POPART_SIGMA_MIN 1e-4
#define VP_POPART_SIGMA_MAX 1e6

/* The per-sample transition data the losses read (all [B] or [B, n_branches], backend
 * memory), and the learner modules' optional state (NULL: off). */
typedef struct vp_loss_batch {
    const vp_tensor* actions;      /* [B, n_branches] i32: action taken at s_t */
    const vp_tensor* next_actions; /* [B, n_branches] i32: a*, double-DQN choice at s_{t+n} */
    const vp_tensor* reward;       /* [B] f32: n-step return */
    const vp_tensor* discount;     /* [B] f32: gamma^n, 0 for a terminal */
    const vp_tensor* is_weight;    /* [B] f32: importance weight of each sample */
    const vp_tensor* support;      /* [n_branches, Z] f32 or NULL: the online net's support (adaptive atoms) */
    const vp_tensor* target_support; /* [n_branches, Z] f32 or NULL: the target net's (with `support`) */
    const vp_tensor* popart;       /* [VP_POPART_N] f32 or NULL: PopArt's state, targets normalised by it */
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

/* The projection of vp_loss_c51_project onto the increasing non-uniform grid [Z] (grid[0]
 * and grid[Z-1] the clip bounds): each atom's mass split between the two grid atoms around it
 * by linear interpolation. */
vp_status vp_loss_c51_project_grid(vp_backend* b, const vp_loss_dims* d, const vp_tensor* grid,
                                   const vp_tensor* support, const vp_tensor* probs, vp_tensor* out);

/* C51 loss. For each sample i and branch br: the target net's distribution of a*
 * (exp of target_log_probs [B, A, Z]) under r + discount * z, projected onto the support
 * (proj [B, n_branches, Z], out); its cross-entropy with the online log_probs [B, A, Z]
 * of the taken action; loss [B] = mean over branches (unweighted; the PER priority).
 * d_log_probs [B, A, Z] = gradient of mean_i(is_weight_i * loss_i) w.r.t. log_probs
 * (zero outside the taken heads). With batch->support (adaptive atoms) the target atoms are the
 * target net's support and the grid the online net's, per branch (vp_loss_c51_project_grid's
 * split); with batch->popart the target atoms are normalised, (r + discount (sigma z + mu) -
 * mu) / sigma. */
vp_status vp_loss_c51(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch,
                      const vp_tensor* log_probs, const vp_tensor* target_log_probs,
                      vp_tensor* proj, vp_tensor* loss, vp_tensor* d_log_probs);

/* IQN quantile Huber loss. For each sample i and branch br: online quantiles
 * iqn [B, n_taus, A] of the taken head at taus [B, n_taus] against the targets
 * r + discount * target_iqn [B, n_target_taus, A] of a*; loss [B] = mean over branches of
 * (sum over online taus of the mean over target taus of
 * |tau - 1{delta < 0}| * huber_kappa(delta) / kappa), delta = target - online.
 * d_iqn [B, n_taus, A] = gradient of mean_i(is_weight_i * loss_i) w.r.t. iqn. With
 * batch->popart the targets are normalised as in vp_loss_c51. */
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

/* The adaptive atoms' spacing gradient (docs/modules.md): the regression
 * L = mean_i w_i mean_br 0.5 (Q_i,br - y_i,br)^2 of the online Q of the taken head on its
 * branch's support, Q = sum_k z_br,k p_k (p = exp of log_probs [B, A, Z]), onto the Bellman
 * mean y = r + discount * target_q[i, a*] (target_q [B, A], the target net's C51 Q; with
 * batch->popart normalised as in vp_loss_c51), y a constant; through the support to the spacing
 * logits `spacing` [n_branches, Z - 1] (the online parameters): d_spacing [n_branches, Z - 1]
 * (written whole). resid [B, n_branches] is scratch (w_i (Q - y) / (B n_branches)). Needs
 * batch->support. */
vp_status vp_loss_atoms_grad(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch,
                             const vp_tensor* log_probs, const vp_tensor* target_q, const vp_tensor* spacing,
                             vp_tensor* resid, vp_tensor* d_spacing);

/* PopArt's step (docs/modules.md): Y_i,br = r + discount (sigma target_q[i, a*] + mu) (the
 * unnormalised targets; target_q [B, A] the target net's C51 Q); mu, nu move to
 * (1 - beta) old + beta mean(Y), mean(Y^2) over samples and branches; sigma = sqrt(nu - mu^2)
 * clamped; then each given output layer (w [A, HH], bias [A]; pairs may be NULL) is rescaled so
 * that its unnormalised outputs sigma y + mu stay the same: w *= sigma_old / sigma_new,
 * bias = (sigma_old bias + mu_old - mu_new) / sigma_new. batch->popart is the state, updated. */
vp_status vp_loss_popart(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch* batch, const vp_tensor* target_q,
                         float beta, vp_tensor* w, vp_tensor* bias, vp_tensor* target_w, vp_tensor* target_bias);

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_LOSS_H */
