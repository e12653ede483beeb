/* The learner step, phase by phase: forwards, losses, backward, optimiser. Ops only: no
 * allocation, no copy between host and device, no synchronisation. */
#include <string.h>

#include "learn/learner_internal.h"
#include "learn/signal_learn.h"

/* Checks a batch against the learner's shapes (host-side metadata only). */
static vp_status check_batch(const vp_learner* l, const vp_batch* bt) {
    const char* fn = "vp_learner_step";
    VP_REQUIRE(l != NULL && l->scratch != NULL, VP_ERR_INVALID_ARG, "%s: learner is NULL or not initialised", fn);
    VP_REQUIRE(bt != NULL, VP_ERR_INVALID_ARG, "%s: batch is NULL", fn);
    const int64_t B = l->cfg.batch;
    char d[96];
    VP_REQUIRE(vp_tensor_numel(&bt->bar_idx) == B && vp_tensor_numel(&bt->next_bar_idx) == B, VP_ERR_SHAPE,
               "%s: bar_idx %s and next_bar_idx must hold the learner's batch of %lld", fn,
               vp_tensor_describe(&bt->bar_idx, d, sizeof d), (long long)B);
    VP_REQUIRE(vp_tensor_numel(&bt->portfolio) == B * l->cfg.model.n_portfolio &&
                   vp_tensor_numel(&bt->next_portfolio) == B * l->cfg.model.n_portfolio,
               VP_ERR_SHAPE, "%s: portfolio %s and next_portfolio must be [%lld, %d]", fn,
               vp_tensor_describe(&bt->portfolio, d, sizeof d), (long long)B, l->cfg.model.n_portfolio);
    if (l->cfg.n_taus > 0) {
        VP_REQUIRE(vp_tensor_numel(&bt->taus) == B * l->cfg.n_taus && vp_tensor_cols(&bt->taus) == l->cfg.n_taus,
                   VP_ERR_SHAPE, "%s: taus %s must be [%lld, %d]", fn, vp_tensor_describe(&bt->taus, d, sizeof d),
                   (long long)B, l->cfg.n_taus);
        VP_REQUIRE(vp_tensor_numel(&bt->target_taus) == B * l->cfg.n_target_taus &&
                       vp_tensor_cols(&bt->target_taus) == l->cfg.n_target_taus,
                   VP_ERR_SHAPE, "%s: target_taus %s must be [%lld, %d]", fn,
                   vp_tensor_describe(&bt->target_taus, d, sizeof d), (long long)B, l->cfg.n_target_taus);
    }
    return VP_OK;
}

/* Online network at s_t (kept for the backward) on the learner's backend, and beside it the
 * online and the target networks at s_{t+n} on its two lanes: three forwards that share only
 * their inputs, joined before the losses. */
static vp_status phase_forward(vp_learner* l, const vp_batch* bt) {
    vp_learner_scratch* s = l->scratch;
    vp_backend* b = l->backend;
    const int64_t B = l->cfg.batch;
    const int iqn = l->cfg.n_taus > 0;
    // stochastic depth: one uniform per sample from Philox(seed, step counter), on the backend
    if (l->cfg.model.stoch_depth > 0.0f)
        VP_TRY(vp_loss_draw_taus(b, l->cfg.seed, VP_LEARNER_STREAM_DROP, &l->step, &s->drop_u));
    // the network on each lane: the same model, its work issued there
    vp_model on_next = l->model, on_target = l->model;
    on_next.backend = s->lanes[0];
    on_target.backend = s->lanes[1];
    VP_TRY(vp_backend_after(s->lanes[0], b));
    VP_TRY(vp_backend_after(s->lanes[1], b));
    vp_status st = vp_model_forward(&l->model, &l->model.params, s->acts, &bt->features, &bt->bar_idx,
                                    &bt->portfolio, iqn ? &bt->taus : NULL, B);
    if (st == VP_OK)
        st = vp_model_forward(&on_next, &l->model.params, s->next_acts, &bt->features, &bt->next_bar_idx,
                              &bt->next_portfolio, NULL, B);
    if (st == VP_OK)
        st = vp_model_forward(&on_target, &l->target, s->target_acts, &bt->features, &bt->next_bar_idx,
                              &bt->next_portfolio, iqn ? &bt->target_taus : NULL, B);
    // joined whatever happened, so that a capture never ends with a lane outside it
    vp_status j0 = vp_backend_after(b, s->lanes[0]), j1 = vp_backend_after(b, s->lanes[1]);
    VP_TRY(st);
    VP_TRY(j0);
    return j1;
}

/* Double-DQN choice, both losses and their gradients; the priorities. */
static vp_status phase_loss(vp_learner* l, const vp_batch* bt, vp_tensor* priorities) {
    vp_learner_scratch* s = l->scratch;
    vp_backend* b = l->backend;
    vp_tensor q_next = vp_model_q_c51(s->next_acts);
    VP_TRY(vp_loss_select(b, &s->dims, &q_next, &s->a_star));
    // the bootstrap's discounts (times the gamma rule's factor when it is on)
    const vp_tensor* disc = NULL;
    VP_TRY(vp_signals_discount(l, bt, &disc));
    vp_loss_batch lb = {&bt->actions, &s->a_star, &bt->reward, disc, &bt->is_weight, NULL, NULL, NULL};
    vp_learner_mods_batch(l, &lb); // adaptive atoms' supports, PopArt's state
    vp_tensor lp = vp_model_log_probs(s->acts), tlp = vp_model_log_probs(s->target_acts);
    // the IQN loss on a lane beside the C51 loss (they share only their inputs), joined after
    vp_status st = VP_OK;
    if (l->cfg.n_taus > 0) {
        vp_tensor zq = vp_model_iqn(s->acts), tzq = vp_model_iqn(s->target_acts);
        st = vp_backend_after(s->lanes[0], b);
        if (st == VP_OK) st = vp_loss_iqn(s->lanes[0], &s->dims, &lb, &zq, &tzq, &bt->taus, &s->iqn_loss, &s->d_iqn);
    }
    if (st == VP_OK) st = vp_loss_c51(b, &s->dims, &lb, &lp, &tlp, &s->proj, &s->c51_loss, &s->d_log_probs);
    if (l->cfg.n_taus > 0) {
        const vp_status j = vp_backend_after(b, s->lanes[0]);
        if (st == VP_OK) st = j;
    }
    VP_TRY(st);
    // the Q-denoise refinement regresses onto the projected target's expectation
    if (l->cfg.model.q_denoise) {
        vp_tensor q = vp_model_q(s->acts);
        VP_TRY(vp_model_qd_loss(&l->model, l->cfg.batch, &s->proj, &bt->actions, &bt->is_weight, &q, &s->qd_loss,
                                &s->qd_dq));
    }
    // the risk-budget head's target from the online quantiles' lower tail
    if (l->cfg.model.risk_budget > 0.0f) {
        vp_tensor zq = vp_model_iqn(s->acts), sc = vp_model_risk_scale(s->acts);
        VP_TRY(vp_model_rb_loss(&l->model, l->cfg.batch, l->cfg.n_taus, &zq, &bt->taus, &bt->actions, &bt->is_weight,
                                &sc, &s->rb_loss, &s->rb_dl));
    }
    VP_TRY(vp_learner_mods_loss(l, &lb));
    return priorities ? vp_copy(b, &s->c51_loss, priorities) : VP_OK;
}

/* Gradient of every parameter from the loss gradients (summed over the ranks of a
 * data-parallel run). */
static vp_status phase_backward(vp_learner* l) {
    vp_learner_scratch* s = l->scratch;
    VP_TRY(vp_model_backward(&l->model, &l->model.params, s->acts, &s->d_log_probs,
                             l->cfg.n_taus > 0 ? &s->d_iqn : NULL));
    VP_TRY(vp_learner_mods_backward(l));
    // a data-parallel run: the global batch's gradient on every rank, before the clip
    return vp_learner_allreduce_grads(l);
}

/* Clip coefficient, AdamW, Polyak target update, the statistics and the bus. The learning
 * rate and the clip threshold are read on the device from the controls (signals.h), so a
 * schedule or a rule moves them without a new capture. */
static vp_status phase_optim(vp_learner* l, const vp_batch* bt) {
    vp_learner_scratch* s = l->scratch;
    vp_backend* b = l->backend;
    // the spectral norm keeps this step's power iteration (no-op without; not in the backward,
    // which the trainer's priming pass runs outside a step)
    VP_TRY(vp_model_commit(&l->model, &l->model.params, s->acts));
    // The clip coefficient scales the gradient inside AdamW; the host never reads it.
    const vp_tensor clip = vp_learner_control(l, VP_CTL_CLIP), lr = vp_learner_control(l, VP_CTL_LR);
    VP_TRY(vp_clip_coef_at(b, &l->model.grads, &clip, &l->grad_norm, &l->clip_coef));
    VP_TRY(vp_step_increment(b, &l->step));
    VP_TRY(vp_signals_schedule(l));
    VP_TRY(vp_adamw_lr(b, &l->cfg.adamw, &lr, &l->model.params, &l->model.grads, &l->adam_m, &l->adam_v, &l->step,
                       &l->clip_coef));
    // target = (1 - tau) target + tau online
    VP_TRY(vp_signals_polyak(l));
    vp_tensor q = vp_model_q_c51(s->acts);
    VP_TRY(vp_loss_stats(b, &s->dims, &s->c51_loss, l->cfg.n_taus > 0 ? &s->iqn_loss : NULL, &bt->is_weight, &q,
                         &l->grad_norm, &l->stats));
    // PopArt's statistics and rescaled output layers, then the bus (which reads the step's
    // outputs as they were computed: PopArt's normalised units when it is on)
    VP_TRY(vp_learner_mods_optim(l, bt));
    return vp_signals_bus(l, bt);
}

vp_status vp_learner_run_phase(vp_learner* l, vp_learner_phase phase, const vp_batch* bt, vp_tensor* priorities) {
    VP_TRY(check_batch(l, bt));
    switch (phase) {
    case VP_PHASE_FORWARD: return phase_forward(l, bt);
    case VP_PHASE_LOSS: return phase_loss(l, bt, priorities);
    case VP_PHASE_BACKWARD: return phase_backward(l);
    case VP_PHASE_OPTIM: return phase_optim(l, bt);
    default: VP_FAIL(VP_ERR_INVALID_ARG, "vp_learner_run_phase: bad phase %d", (int)phase);
    }
}

vp_status vp_learner_step(vp_learner* l, const vp_batch* bt, vp_tensor* priorities) {
    VP_TRY(check_batch(l, bt));
    VP_TRY(phase_forward(l, bt));
    VP_TRY(phase_loss(l, bt, priorities));
    VP_TRY(phase_backward(l));
    return phase_optim(l, bt);
}
