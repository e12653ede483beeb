/* PPO's checkpoints. last.safetensors (VP_CKPT_RESUME) holds the actor-critic's parameters by
 * name (the encoder's rows PPO uses, then "ppo.*" heads), the AdamW moments ("adam.m.",
 * "adam.v.") and step, the sampling and permutation counters, the last statistics, the env
 * state as a raw block, and the host counters, seeds and config as metadata: enough to
 * continue bit for bit (a rollout never spans two iterations). best.safetensors
 * (VP_CKPT_BEST) holds the best parameters. Both record vulpes.algo "ppo" and the training
 * data (vulpes.data.*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/ppo_impl.h"
#include "learn/algo_ckpt.h"
#include "vulpes/ppo.h"

/* PPO's network as a checkpoint sees it. */
static int net_tensors(const void* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    return vp_ppo_net_tensors((const vp_ppo_net*)n, flat, names, views, cap);
}
static vp_ckpt_net ckpt_net(const vp_ppo_net* n) { return (vp_ckpt_net){n, net_tensors}; }

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_ppo_trainer* t, vp_ckpt_list* l) {
    const vp_ckpt_net n = ckpt_net(&t->net);
    VP_TRY(vp_ckpt_list_init(l, 3 * vp_ckpt_net_count(n) + 8));
    VP_TRY(vp_ckpt_add_net(l, n, "", &t->net.params));
    VP_TRY(vp_ckpt_add_adam(l, n, &t->adam_m, &t->adam_v, t->adam_step));
    vp_ckpt_list_add(l, "", "ppo.counters", t->ctr);
    vp_ckpt_list_add(l, "", "ppo.stats", t->stats);
    vp_ckpt_list_add(l, "", "ppo.grad_norm", t->grad_norm);
    const vp_env* e = &t->env;
    vp_ckpt_list_add(l, "", "env.state", vp_tensor_1d(e->storage.dev, VP_I32, e->storage.mem,
                                                      (int64_t)(e->storage.bytes / 4)));
    return VP_OK;
}

vp_status vp_ppo_trainer_save(vp_ppo_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                              int64_t best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_ppo_trainer_save: NULL argument");
    // Metadata: what the file is, the config, counters, seeds, the best score and the data.
    vp_ckpt_meta_list ml;
    char* yaml = NULL;
    VP_TRY(vp_ckpt_save_begin(&ml, &yaml, "vp_ppo_trainer_save", t->backend, &t->cfg, kind, "ppo", &t->count,
                              best_val_sharpe, best_iteration));
    vp_ckpt_meta_add(&ml, "vulpes.rng", "philox4x32-10; counters: ppo.counters (sampling, permutations), "
                                        "env.state (episode starts)");
    vp_ckpt_meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    vp_ckpt_meta_u64(&ml, "vulpes.seed.env", t->parts.env.seed);
    vp_ckpt_meta_u64(&ml, "vulpes.seed.collect", t->parts.collect.seed);
    vp_ckpt_data_meta dm;
    vp_status s = vp_ckpt_meta_data(&ml, t->data, &dm);
    // Tensors: everything for a resume, the best parameters otherwise.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK)
        s = kind == VP_CKPT_RESUME ? resume_items(t, &l) : vp_ckpt_net_list(&l, ckpt_net(&t->net), &t->best_params);
    return vp_ckpt_save_list(t->backend, path, s, &l, &ml, yaml);
}

/* The host counters against the config: T x E env steps per iteration, epochs x minibatches
 * updates at most, and the device counters restored with them. */
static vp_status check_counters(vp_ppo_trainer* t, const char* path, const vp_train_counters* c, int64_t best_it) {
    const int64_t T = t->pc.rollout_steps, E = t->cfg.env.n_envs, per = t->pc.epochs * t->pc.minibatches;
    VP_REQUIRE(c->iteration >= 0 && c->iteration <= INT64_MAX / (T * E * (per + 1)) && c->collect_steps == c->iteration * T &&
                   c->env_steps == c->collect_steps * E && c->learner_steps >= c->iteration * t->pc.minibatches &&
                   c->learner_steps <= c->iteration * per && best_it >= -1 && best_it <= c->iteration,
               VP_ERR_PARSE, "checkpoint %s: counters (iteration %lld, collect_steps %lld, env_steps %lld, "
               "learner_steps %lld, best_iteration %lld) do not fit ppo.rollout_steps %lld, env.n_envs %lld, %lld "
               "updates per iteration", path, (long long)c->iteration, (long long)c->collect_steps,
               (long long)c->env_steps, (long long)c->learner_steps, (long long)best_it, (long long)T, (long long)E,
               (long long)per);
    return VP_OK;
}

/* The restored device counters against the host counters, and the env state (its own checks,
 * each window a training episode). */
static vp_status check_restored(vp_ppo_trainer* t, const char* path, const vp_train_counters* c) {
    int64_t ctr[VP_PPO_CTR_COUNT];
    int32_t step = 0;
    VP_TRY(vp_download(t->backend, ctr, &t->ctr, sizeof ctr));
    VP_TRY(vp_download(t->backend, &step, &t->adam_step, sizeof step));
    const int64_t epochs_max = c->iteration * t->pc.epochs;
    VP_REQUIRE(ctr[VP_PPO_CTR_STEP] == c->collect_steps && ctr[VP_PPO_CTR_EPOCH] * t->pc.minibatches ==
                   c->learner_steps && ctr[VP_PPO_CTR_EPOCH] <= epochs_max &&
                   (int64_t)step == (c->learner_steps < INT32_MAX ? c->learner_steps : INT32_MAX),
               VP_ERR_PARSE, "checkpoint %s: tensors 'ppo.counters' (%lld steps, %lld epochs) and 'adam.step' (%d) "
               "do not match its counters (collect_steps %lld, learner_steps %lld)", path,
               (long long)ctr[VP_PPO_CTR_STEP], (long long)ctr[VP_PPO_CTR_EPOCH], (int)step,
               (long long)c->collect_steps, (long long)c->learner_steps);
    vp_env_state h;
    VP_TRY(vp_ckpt_env_host(t->env.n_envs, &h));
    vp_status s = vp_ckpt_check_env(&t->env, &h);
    free(h.cash);
    if (s != VP_OK) return vp_error_context(s, "checkpoint %s", path);
    return VP_OK;
}

vp_status vp_ppo_trainer_load(vp_ppo_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL && best_val_sharpe != NULL && best_iteration != NULL,
               VP_ERR_INVALID_ARG, "vp_ppo_trainer_load: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    vp_status s = vp_ckpt_check_resume(ck, path);
    if (s == VP_OK) s = vp_ckpt_resume_begin(ck, &t->cfg, t->data, "ppo.stats", "ppo.grad_norm");
    // The host counters, checked before any tensor is read.
    vp_train_counters c = {0};
    int64_t best_it = -1;
    double best_sh = NAN;
    if (s == VP_OK) s = vp_ckpt_read_counters(ck, 1, &c, &best_it, &best_sh);
    if (s == VP_OK) s = check_counters(t, path, &c, best_it);
    // Tensors straight into the run's buffers, then checked; the observation from the env state.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) s = check_restored(t, path, &c);
    if (s == VP_OK) s = vp_env_observe(&t->env, &t->obs_bar, &t->obs_port);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) {
        t->count = c;
        *best_iteration = best_it;
        *best_val_sharpe = best_sh;
    }
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_ppo_read_params(vp_backend* b, const vp_ppo_net* n, const char* path, vp_tensor* dst) {
    VP_REQUIRE(b != NULL && n != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG,
               "vp_ppo_read_params: NULL argument");
    return vp_ckpt_read_params(b, ckpt_net(n), path, "ppo", "PPO network", dst);
}
