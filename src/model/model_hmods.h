/* Internal: the head-side network modules (docs/modules.md, "Head modules"), each a switch of
 * vp_model_cfg that is off by default, and the hooks the forward and backward call:
 *   stochastic depth (model_stochdepth.c) on the Mamba2 mixer's residual branch,
 *   Q-denoise refinement (model_qdenoise.c) of the C51 expected values,
 *   cross-branch messages (model_xbranch.c) between the branch representations,
 *   the risk-budget head (model_risk.c), a sigmoid scaler of the chosen size.
 * Their kernels are one table per backend kind (hmops.h). With every switch off no hook
 * changes a bit of the network. */
#ifndef VULPES_MODEL_HMODS_H
#define VULPES_MODEL_HMODS_H

#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Checks the head-module fields of a configuration; the message names the bad field. */
vp_status vp_model_hmods_check(const vp_model_cfg* c);

/* GEMM FLOPs the head modules add to one forward of `batch` samples (and its backward). */
double vp_model_hmods_flops(const vp_model_cfg* c, int64_t batch, int backward);

/* ---- stochastic depth (model_stochdepth.c) ------------------------------------------------- */

/* Makes the forwards of activations `a` training forwards of the stochastic depth: each
 * reads u [max_batch] (backend memory, uniforms in (0, 1), refilled by the caller before
 * each forward and left in place for its backward) and keeps sample b's residual branch
 * when u[b] >= p, scaled by 1 / (1 - p). u NULL makes them inference forwards again
 * (identity). A no-op when the model's stoch_depth is 0. */
vp_status vp_model_acts_set_drop(vp_model_acts* a, const vp_tensor* u);

/* Whether the forward of `a` drops residual branches (p > 0, Mamba2 on, uniforms set). */
int vp_model_sd_active(const vp_model* m, const vp_model_acts* a);

/* The mixer's residual with the drop: e [batch, H] = last + scale_b * (yn W^T), W = out_proj
 * [H, H]; yn, last [batch, H]; keeps the product and the scales for the backward. */
vp_status vp_model_sd_forward(const vp_model* m, vp_model_acts* a, const vp_tensor* yn, const vp_tensor* W,
                              const vp_tensor* last, vp_tensor* e, int64_t batch);

/* Its backward to the branch: *d_o = the view of a->sd_d [batch, H] holding scale_b * de. */
vp_status vp_model_sd_backward(const vp_model* m, vp_model_acts* a, const vp_tensor* de, vp_tensor* d_o,
                               int64_t batch);

/* ---- cross-branch messages (model_xbranch.c) ----------------------------------------------- */

/* The advantage output from a->ah through the branch states and their messages into a->adv
 * [batch, A * Z] (in place of the plain output layer when cross_branch is on). */
vp_status vp_model_xb_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Its backward from a->d_adv: the output layer's, embeddings' and messages' gradients and
 * d ah into a->d_ah (written). */
vp_status vp_model_xb_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* ---- risk-budget head (model_risk.c) ------------------------------------------------------- */

/* The fixed tail probability alpha of the risk budget's CVaR (the taus at or below it). */
#define VP_RISK_ALPHA 0.1f

/* After h: a->rb = sigmoid(h w^T + b) [batch, 1] (h detached). A no-op when risk_budget is 0. */
vp_status vp_model_rb_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Its weight gradients from a->rb_dl (zero when NULL); no gradient reaches h. A no-op when off. */
vp_status vp_model_rb_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Sets d (risk loss) / d logit [max_batch] that the backwards of `a` read (NULL: zero gradients). */
vp_status vp_model_acts_set_rb_grad(vp_model_acts* a, const vp_tensor* d_logit);

/* The scale of the chosen size per sample, [batch] in (0, 1), of the last forward; an empty
 * tensor (data NULL) when the head is off. */
vp_tensor vp_model_risk_scale(const vp_model_acts* a);

/* The head's loss and its gradient from the online IQN quantiles iqn [B, T, A] at taus [B, T]
 * of the taken actions [B, n_branches] (i32), importance weights w [B] and the scales s [B]:
 *   CVaR_b = mean of the size head's quantiles at taus <= VP_RISK_ALPHA (the lowest tau's
 *            when none is), tail loss L_b = max(0, -CVaR_b),
 *   target t_b = 1 when L_b <= kappa, else kappa / L_b (the scale that holds the tail loss
 *            at the budget kappa = risk_budget),
 *   loss_b = -(t_b log s_b + (1 - t_b) log(1 - s_b)),  d_logit_b = w_b / B (s_b - t_b). */
vp_status vp_model_rb_loss(const vp_model* m, int64_t B, int T, const vp_tensor* iqn, const vp_tensor* taus,
                           const vp_tensor* actions, const vp_tensor* w, const vp_tensor* s, vp_tensor* loss,
                           vp_tensor* d_logit);

/* ---- Q-denoise refinement (model_qdenoise.c) ---------------------------------------------- */

/* After the C51 head: a->q_c51 = a->q, then a->q = q_c51 + W2 relu(W1 q_c51 + b1) + b2.
 * A no-op when q_denoise is off. */
vp_status vp_model_qd_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* The refinement's parameter gradients from a->qd_dq (zero when NULL); no gradient flows into
 * the C51 head (its input is detached). A no-op when q_denoise is off. */
vp_status vp_model_qd_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Sets d (refinement loss) / d (refined Q) [max_batch, A] that the backwards of `a` read
 * (NULL: zero refinement gradients). */
vp_status vp_model_acts_set_qd_grad(vp_model_acts* a, const vp_tensor* d_q);

/* The C51 expected values of the last forward before the refinement, [batch, A] (the same
 * as vp_model_q when q_denoise is off): what the losses' double-DQN choice reads. */
vp_tensor vp_model_q_c51(const vp_model_acts* a);

/* The refinement's loss and its gradient, given the projected C51 targets proj
 * [B, n_branches, Z] of the taken actions [B, n_branches] (i32), the importance weights
 * w [B] and the refined Q [B, A]: per sample
 *   loss_b = 1/nb sum_k 0.5 (q[b, a_k] - y_bk)^2,  y_bk = sum_z z_j proj[b, k, j]
 * and d_q[b, a] = w_b / (B nb) (q[b, a] - y_bk) at the taken heads, 0 elsewhere (all on
 * the backend). */
vp_status vp_model_qd_loss(const vp_model* m, int64_t B, const vp_tensor* proj, const vp_tensor* actions,
                           const vp_tensor* w, const vp_tensor* q, vp_tensor* loss, vp_tensor* d_q);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_HMODS_H */
