/* The PPO iteration: collection of T steps of every env (observation, sample, env step; the
 * observations in ppo_span.c), the bootstrap value and GAE, then epochs of minibatch updates
 * over a fresh permutation each; issued as ops only and replayed as graphs. Statistics. */
#include <math.h>
#include <string.h>

#include "learn/ppo_impl.h"
#include "vulpes/ops.h"
#include "vulpes/ppo.h"

/* Elements [off, off + n) of a 1-D or [rows, cols] buffer, as [n] or [n, cols]. */
static vp_tensor part(const vp_tensor* t, int64_t off, int64_t n) {
    const int64_t cols = t->ndim == 2 ? t->shape[1] : 1;
    void* p = (char*)t->data + (size_t)(off * cols) * vp_dtype_size(t->dtype);
    return t->ndim == 2 ? vp_tensor_2d(p, t->dtype, t->mem, n, cols) : vp_tensor_1d(p, t->dtype, t->mem, n);
}

/* The kernels of the trainer's backend. */
static vp_status kernels(vp_ppo_trainer* t, const vp_ppo_kernels** k) { return vp_ppo_kernels_of("ppo", t->backend, k); }

vp_status vp_ppo_collect_body(vp_backend* b, void* ctx) {
    (void)b;
    vp_ppo_trainer* t = (vp_ppo_trainer*)ctx;
    const vp_ppo_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    const int64_t E = t->cfg.env.n_envs, T = t->pc.rollout_steps;
    int64_t* ctr = (int64_t*)t->ctr.data;
    if (t->encode_once) VP_TRY(vp_ppo_encode_span(t));
    for (int64_t s = 0; s < T; ++s) {
        // the policy at the current observations, a sampled action per env, stored with them
        VP_TRY(vp_ppo_observe(t));
        const vp_tensor lg = vp_ppo_logits(t->col), v = vp_ppo_values(t->col);
        const int64_t r = s * E;
        vp_ppo_store_ptrs st = {(int32_t*)t->r_bar.data + r, (float*)t->r_port.data + r * VP_ENV_PORTFOLIO,
                                (int32_t*)t->r_act.data + r * VP_ENV_BRANCHES, (float*)t->r_logp.data + r,
                                (float*)t->r_value.data + r};
        VP_TRY(k->sample(t->backend, E, t->parts.collect.seed, (const float*)lg.data, (const float*)v.data,
                         (const int32_t*)t->obs_bar.data, (const float*)t->obs_port.data, ctr, (int32_t*)t->actions.data,
                         st));
        VP_TRY(k->tick(t->backend, ctr, VP_PPO_CTR_STEP));
        // the env step: reward and done into the rollout, the next observation in place
        vp_tensor rw = part(&t->r_reward, r, E), dn = part(&t->r_done, r, E);
        VP_TRY(vp_env_step(&t->env, &t->actions, &rw, &dn, &t->obs_bar, &t->obs_port));
    }
    // the bootstrap value of the observation after the last step, then GAE
    VP_TRY(vp_ppo_observe(t));
    const vp_tensor v = vp_ppo_values(t->col);
    VP_TRY(vp_copy(t->backend, &v, &t->last_value));
    return k->gae(t->backend, T, E, t->pc.gamma, t->pc.gae_lambda, (const float*)t->r_reward.data,
                  (const float*)t->r_done.data, (const float*)t->r_value.data, (const float*)t->last_value.data,
                  (float*)t->r_adv.data, (float*)t->r_ret.data);
}

/* Raw pointers of the rollout's rows and the minibatch's rows. */
static vp_ppo_rows rollout_rows(const vp_ppo_trainer* t) {
    vp_ppo_rows r = {(int32_t*)t->r_bar.data, (float*)t->r_port.data, (int32_t*)t->r_act.data, (float*)t->r_logp.data,
                     (float*)t->r_value.data, (float*)t->r_adv.data, (float*)t->r_ret.data};
    return r;
}
static vp_ppo_rows minibatch_rows(const vp_ppo_trainer* t) {
    vp_ppo_rows r = {(int32_t*)t->m_bar.data, (float*)t->m_port.data, (int32_t*)t->m_act.data, (float*)t->m_logp.data,
                     (float*)t->m_value.data, (float*)t->m_adv.data, (float*)t->m_ret.data};
    return r;
}

/* The loss launch constants. */
static vp_ppo_loss_dims loss_dims(const vp_ppo_trainer* t) {
    vp_ppo_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = vp_tensor_numel(&t->m_bar);
    d.layout = vp_action_layout_env();
    d.clip = t->pc.clip;
    d.vf_clip = t->pc.vf_clip;
    d.ent_coef = t->pc.ent_coef;
    d.vf_coef = t->pc.vf_coef;
    return d;
}

/* The minibatch's forward, loss and backward: gradients in net.grads, terms and stats
 * (everything but the optimiser step). */
static vp_status forward_backward(vp_ppo_trainer* t, const vp_ppo_kernels* k) {
    const int64_t M = vp_tensor_numel(&t->m_bar);
    vp_ppo_net* n = &t->net;
    VP_TRY(vp_ppo_net_encode(n, &n->params, t->mb, &t->features, &t->m_bar, M));
    VP_TRY(vp_ppo_net_heads(n, &n->params, t->mb, NULL, &t->m_port, M));
    const vp_ppo_loss_dims d = loss_dims(t);
    const vp_tensor lg = vp_ppo_logits(t->mb), v = vp_ppo_values(t->mb);
    VP_TRY(k->loss(t->backend, &d, (const float*)lg.data, (const float*)v.data, minibatch_rows(t), (float*)t->terms.data,
                   (float*)t->d_logits.data, (float*)t->d_values.data));
    VP_TRY(vp_reduce_cols(t->backend, VP_REDUCE_SUM, &t->terms, &t->stats));
    VP_TRY(vp_ppo_net_backward(n, &n->params, t->mb, &t->d_logits, &t->d_values));
    return vp_clip_coef(t->backend, &n->grads, t->pc.clip_norm, &t->grad_norm, &t->clip_coef);
}

vp_status vp_ppo_update(vp_ppo_trainer* t, int64_t kb) {
    const vp_ppo_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    const int64_t M = vp_tensor_numel(&t->m_bar);
    vp_tensor idx = part(&t->perm, kb * M, M);
    VP_TRY(k->gather(t->backend, M, (const int32_t*)idx.data, rollout_rows(t), minibatch_rows(t), t->pc.norm_adv));
    VP_TRY(forward_backward(t, k));
    // the spectral norm's power-iteration vectors of this forward, then the AdamW step
    VP_TRY(vp_ppo_net_commit(&t->net, &t->net.params, t->mb));
    VP_TRY(vp_step_increment(t->backend, &t->adam_step));
    return vp_adamw(t->backend, &t->pc.adamw, &t->net.params, &t->net.grads, &t->adam_m, &t->adam_v, &t->adam_step,
                    &t->clip_coef);
}

vp_status vp_ppo_epoch_body(vp_backend* b, void* ctx) {
    (void)b;
    vp_ppo_trainer* t = (vp_ppo_trainer*)ctx;
    const vp_ppo_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    const int64_t N = vp_tensor_numel(&t->perm);
    VP_TRY(k->permute(t->backend, N, t->parts.learner.seed, VP_PPO_PERM_STREAM, (int64_t*)t->ctr.data,
                      (int32_t*)t->perm.data));
    for (int64_t kb = 0; kb < t->pc.minibatches; ++kb) VP_TRY(vp_ppo_update(t, kb));
    return VP_OK;
}

/* The whole iteration: collection, then every epoch. */
static vp_status all_body(vp_backend* b, void* ctx) {
    vp_ppo_trainer* t = (vp_ppo_trainer*)ctx;
    VP_TRY(vp_ppo_collect_body(b, t));
    for (int64_t e = 0; e < t->pc.epochs; ++e) VP_TRY(vp_ppo_epoch_body(b, t));
    return VP_OK;
}

/* Runs once, eagerly, every op shape of an iteration whose outputs are scratch (the
 * collection's forward and span encoding, a minibatch's gather, forward, loss and backward), so that first-use
 * set-up (GEMM plans) happens before a capture. The trained state is left as it was. */
static vp_status prime(vp_ppo_trainer* t) {
    const vp_ppo_kernels* k = NULL;
    VP_TRY(kernels(t, &k));
    if (t->encode_once) VP_TRY(vp_ppo_encode_span(t));
    VP_TRY(vp_ppo_observe(t));
    const int64_t M = vp_tensor_numel(&t->m_bar);
    VP_TRY(k->gather(t->backend, M, (const int32_t*)t->perm.data, rollout_rows(t), minibatch_rows(t), t->pc.norm_adv));
    VP_TRY(forward_backward(t, k));
    return vp_backend_sync(t->backend);
}

/* The last minibatch's approx_kl (one download and a wait). */
static vp_status read_kl(vp_ppo_trainer* t, double* kl) {
    float s[VP_PPO_STAT_COUNT];
    VP_TRY(vp_download(t->backend, s, &t->stats, sizeof s));
    *kl = (double)s[VP_PPO_STAT_KL] / (double)vp_tensor_numel(&t->m_bar);
    return VP_OK;
}

vp_status vp_ppo_trainer_iterate(vp_ppo_trainer* t, int64_t n) {
    VP_REQUIRE(t != NULL && t->val != NULL, VP_ERR_INVALID_ARG, "vp_ppo_trainer_iterate: trainer is not initialised");
    VP_REQUIRE(n >= 0, VP_ERR_INVALID_ARG, "vp_ppo_trainer_iterate: n = %lld", (long long)n);
    const int64_t E = t->cfg.env.n_envs, T = t->pc.rollout_steps, per = t->pc.epochs * t->pc.minibatches;
    VP_REQUIRE(t->count.iteration <= (INT64_MAX / 4) / (T * E * (per + 1)) - n, VP_ERR_STATE,
               "vp_ppo_trainer_iterate: %lld more iterations take the counters past 2^63 - 1", (long long)n);
    const int stop_kl = t->pc.target_kl > 0.0f;
    // one capture (after a priming pass): the whole iteration, or its collection and one epoch
    if (n > 0 && !t->g_all && !t->g_collect) {
        VP_TRY(prime(t));
        if (stop_kl) {
            VP_TRY(vp_graph_capture(t->backend, vp_ppo_collect_body, t, &t->g_collect));
            VP_TRY(vp_graph_capture(t->backend, vp_ppo_epoch_body, t, &t->g_epoch));
        } else {
            VP_TRY(vp_graph_capture(t->backend, all_body, t, &t->g_all));
        }
    }
    for (int64_t i = 0; i < n; ++i) {
        vp_status s = VP_OK;
        int64_t epochs = t->pc.epochs;
        if (!stop_kl) {
            s = vp_graph_launch(t->backend, t->g_all);
        } else {
            // CleanRL's check after each epoch: the last minibatch's approx_kl against target_kl
            s = vp_graph_launch(t->backend, t->g_collect);
            for (int64_t e = 0; s == VP_OK && e < t->pc.epochs; ++e) {
                s = vp_graph_launch(t->backend, t->g_epoch);
                double kl = 0.0;
                if (s == VP_OK) s = read_kl(t, &kl);
                if (s == VP_OK && kl > (double)t->pc.target_kl) {
                    epochs = e + 1;
                    break;
                }
            }
        }
        if (s != VP_OK) return vp_error_context(s, "PPO iteration %lld", (long long)(t->count.iteration + 1));
        t->epochs_run = epochs;
        t->count.iteration += 1;
        t->count.collect_steps += T;
        t->count.env_steps += T * E;
        t->count.learner_steps += epochs * t->pc.minibatches;
    }
    return VP_OK;
}

vp_status vp_ppo_trainer_stats(vp_ppo_trainer* t, double* out, double* grad_norm) {
    VP_REQUIRE(t != NULL && out != NULL && grad_norm != NULL, VP_ERR_INVALID_ARG, "vp_ppo_trainer_stats: NULL argument");
    float s[VP_PPO_STAT_COUNT], g = 0.0f;
    VP_TRY(vp_download(t->backend, s, &t->stats, sizeof s));
    VP_TRY(vp_download(t->backend, &g, &t->grad_norm, sizeof g));
    const double M = (double)vp_tensor_numel(&t->m_bar);
    for (int i = 0; i < VP_PPO_STAT_COUNT; ++i) out[i] = (double)s[i] / M;
    *grad_norm = (double)g;
    return VP_OK;
}
