/* The IQL iteration: train.train_steps updates, each drawing a batch of dataset rows, the
 * forward of s (every head and the target Q heads) and of s' (the value), the losses, one
 * backward, the clip, AdamW and the Polyak step of the target; issued as ops only and replayed
 * as one graph. Statistics. */
#include <math.h>
#include <string.h>

#include "learn/iql_impl.h"
#include "vulpes/ops.h"

/* The kernels of the trainer's backend. */
static vp_status kernels(vp_iql_trainer* t, const vp_iql_kernels** k) { return vp_iql_kernels_of("iql", t->backend, k); }

/* Raw pointers of the dataset and of the batch's rows. */
static vp_iql_data_ptrs data_ptrs(const vp_iql_trainer* t) {
    vp_iql_data_ptrs d = {t->steps,
                          t->n_envs,
                          (const int32_t*)t->d_bar.data,
                          (const float*)t->d_port.data,
                          (const int32_t*)t->d_act.data,
                          (const float*)t->d_reward.data,
                          (const float*)t->d_done.data};
    return d;
}
static vp_iql_rows batch_rows(const vp_iql_trainer* t) {
    vp_iql_rows r = {(int32_t*)t->m_bar.data,  (float*)t->m_port.data, (int32_t*)t->m_act.data,
                     (float*)t->m_reward.data, (float*)t->m_done.data, (int32_t*)t->m_bar1.data,
                     (float*)t->m_port1.data};
    return r;
}

/* The loss launch constants. */
static vp_iql_loss_dims loss_dims(const vp_iql_trainer* t) {
    vp_iql_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = t->ic.batch;
    d.layout = vp_action_layout_env();
    d.expectile = t->ic.expectile;
    d.beta = t->ic.beta;
    d.adv_clip = t->ic.adv_clip;
    d.gamma = t->ic.gamma;
    return d;
}

/* The batch's forward, losses and backward: gradients in net.grads, terms, stats and the clip
 * coefficient (everything but the optimiser and target steps). */
static vp_status forward_backward(vp_iql_trainer* t, const vp_iql_kernels* k) {
    const int64_t B = t->ic.batch;
    vp_iql_net* n = &t->net;
    // s: every head and the target Q heads; s': the value
    VP_TRY(vp_iql_net_encode(n, &n->params, t->mb, &t->features, &t->m_bar, NULL, &t->m_port, B));
    for (int m = 0; m < VP_IQL_MLP_COUNT; ++m) VP_TRY(vp_iql_net_head(n, &n->params, NULL, t->mb, (vp_iql_mlp)m));
    VP_TRY(vp_iql_net_head(n, &n->params, &t->target, t->mb, VP_IQL_MLP_Q1));
    VP_TRY(vp_iql_net_head(n, &n->params, &t->target, t->mb, VP_IQL_MLP_Q2));
    VP_TRY(vp_iql_net_encode(n, &n->params, t->nx, &t->features, &t->m_bar1, NULL, &t->m_port1, B));
    VP_TRY(vp_iql_net_head(n, &n->params, NULL, t->nx, VP_IQL_MLP_V));
    // the per-sample losses and output gradients, their sums, the backward and the clip
    const vp_iql_loss_dims d = loss_dims(t);
    const vp_tensor q1 = vp_iql_out(t->mb, VP_IQL_MLP_Q1, 0), q2 = vp_iql_out(t->mb, VP_IQL_MLP_Q2, 0);
    const vp_tensor qt1 = vp_iql_out(t->mb, VP_IQL_MLP_Q1, 1), qt2 = vp_iql_out(t->mb, VP_IQL_MLP_Q2, 1);
    const vp_tensor v = vp_iql_out(t->mb, VP_IQL_MLP_V, 0), v1 = vp_iql_out(t->nx, VP_IQL_MLP_V, 0);
    const vp_tensor lg = vp_iql_out(t->mb, VP_IQL_MLP_PI, 0);
    VP_TRY(k->loss(t->backend, &d, (const float*)q1.data, (const float*)q2.data, (const float*)qt1.data,
                   (const float*)qt2.data, (const float*)v.data, (const float*)v1.data, (const float*)lg.data,
                   batch_rows(t), (float*)t->terms.data, (float*)t->d_q1.data, (float*)t->d_q2.data,
                   (float*)t->d_logits.data, (float*)t->d_v.data));
    VP_TRY(vp_reduce_cols(t->backend, VP_REDUCE_SUM, &t->terms, &t->stats));
    VP_TRY(vp_iql_net_backward(n, &n->params, t->mb, &t->d_q1, &t->d_q2, &t->d_v, &t->d_logits));
    return vp_clip_coef(t->backend, &n->grads, t->ic.clip_norm, &t->grad_norm, &t->clip_coef);
}

/* The batch of the current update: its rows drawn, then the counter moved on. */
static vp_status sample(vp_iql_trainer* t, const vp_iql_kernels* k) {
    VP_TRY(k->sample(t->backend, t->ic.batch, t->parts.learner.seed, VP_IQL_SAMPLE_STREAM, (const int64_t*)t->ctr.data,
                     data_ptrs(t), batch_rows(t)));
    return k->tick(t->backend, (int64_t*)t->ctr.data);
}

vp_status vp_iql_sample(vp_iql_trainer* t) {
    VP_REQUIRE(t != NULL && t->mb != NULL, VP_ERR_INVALID_ARG, "vp_iql_sample: trainer is not initialised");
    const vp_iql_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    return sample(t, k);
}

vp_status vp_iql_learn(vp_iql_trainer* t) {
    VP_REQUIRE(t != NULL && t->mb != NULL, VP_ERR_INVALID_ARG, "vp_iql_learn: trainer is not initialised");
    const vp_iql_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    VP_TRY(forward_backward(t, k));
    // the spectral norm's power-iteration vectors of this forward, the AdamW step, then Polyak
    VP_TRY(vp_iql_net_commit(&t->net, &t->net.params, t->mb));
    VP_TRY(vp_step_increment(t->backend, &t->adam_step));
    VP_TRY(vp_adamw(t->backend, &t->ic.adamw, &t->net.params, &t->net.grads, &t->adam_m, &t->adam_v, &t->adam_step,
                    &t->clip_coef));
    const vp_tensor q = vp_iql_q_range(&t->net, &t->net.params);
    return vp_axpby(t->backend, t->ic.tau_polyak, &q, 1.0f - t->ic.tau_polyak, &t->target);
}

vp_status vp_iql_update(vp_iql_trainer* t) {
    VP_TRY(vp_iql_sample(t));
    return vp_iql_learn(t);
}

/* One iteration: train.train_steps updates. */
static vp_status all_body(vp_backend* b, void* ctx) {
    (void)b;
    vp_iql_trainer* t = (vp_iql_trainer*)ctx;
    for (int64_t u = 0; u < t->ic.updates; ++u) VP_TRY(vp_iql_update(t));
    return VP_OK;
}

/* Runs once, eagerly, every op shape of an update whose outputs are scratch (the forward, loss
 * and backward of the batch in place), so that first-use set-up (GEMM plans) happens before a
 * capture. The trained state and the draws' counter are left as they were. */
static vp_status prime(vp_iql_trainer* t) {
    const vp_iql_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    VP_TRY(k->sample(t->backend, t->ic.batch, t->parts.learner.seed, VP_IQL_SAMPLE_STREAM, (const int64_t*)t->ctr.data,
                     data_ptrs(t), batch_rows(t)));
    VP_TRY(forward_backward(t, k));
    return vp_backend_sync(t->backend);
}

vp_status vp_iql_trainer_iterate(vp_iql_trainer* t, int64_t n) {
    VP_REQUIRE(t != NULL && t->val != NULL, VP_ERR_INVALID_ARG, "vp_iql_trainer_iterate: trainer is not initialised");
    VP_REQUIRE(n >= 0, VP_ERR_INVALID_ARG, "vp_iql_trainer_iterate: n = %lld", (long long)n);
    VP_REQUIRE(t->count.iteration <= (INT64_MAX / 4) / t->ic.updates - n, VP_ERR_STATE,
               "vp_iql_trainer_iterate: %lld more iterations take the counters past 2^63 - 1", (long long)n);
    // one capture (after a priming pass): the whole iteration
    if (n > 0 && !t->g_all) {
        VP_TRY(prime(t));
        VP_TRY(vp_graph_capture(t->backend, all_body, t, &t->g_all));
    }
    for (int64_t i = 0; i < n; ++i) {
        vp_status s = vp_graph_launch(t->backend, t->g_all);
        if (s != VP_OK) return vp_error_context(s, "IQL iteration %lld", (long long)(t->count.iteration + 1));
        t->count.iteration += 1;
        t->count.learner_steps += t->ic.updates;
    }
    return VP_OK;
}

vp_status vp_iql_trainer_stats(vp_iql_trainer* t, double* out, double* grad_norm) {
    VP_REQUIRE(t != NULL && out != NULL && grad_norm != NULL, VP_ERR_INVALID_ARG, "vp_iql_trainer_stats: NULL argument");
    float s[VP_IQL_STAT_COUNT], g = 0.0f;
    VP_TRY(vp_download(t->backend, s, &t->stats, sizeof s));
    VP_TRY(vp_download(t->backend, &g, &t->grad_norm, sizeof g));
    const double B = (double)t->ic.batch;
    for (int i = 0; i < VP_IQL_STAT_COUNT; ++i) out[i] = (double)s[i] / B;
    *grad_norm = (double)g;
    return VP_OK;
}
