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
#include "learn/train_ckpt.h"
#include "vulpes/ppo.h"

/* Every parameter tensor of `flat` by name under `prefix`. */
static vp_status add_params(vp_ckpt_list* l, const vp_ppo_net* n, const char* prefix, const vp_tensor* flat) {
    const int count = vp_ppo_net_tensors(n, NULL, NULL, NULL, 0);
    const char** names = (const char**)calloc((size_t)count, sizeof *names);
    vp_tensor* views = (vp_tensor*)calloc((size_t)count, sizeof *views);
    if (!names || !views) {
        free(names);
        free(views);
        VP_FAIL(VP_ERR_OOM, "checkpoint: out of host memory for %d tensor names", count);
    }
    vp_ppo_net_tensors(n, flat, names, views, count);
    for (int i = 0; i < count; ++i) vp_ckpt_list_add(l, prefix, names[i], views[i]);
    free(names);
    free(views);
    return VP_OK;
}

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_ppo_trainer* t, vp_ckpt_list* l) {
    const vp_ppo_net* n = &t->net;
    VP_TRY(vp_ckpt_list_init(l, 3 * vp_ppo_net_tensors(n, NULL, NULL, NULL, 0) + 8));
    VP_TRY(add_params(l, n, "", &n->params));
    VP_TRY(add_params(l, n, "adam.m.", &t->adam_m));
    VP_TRY(add_params(l, n, "adam.v.", &t->adam_v));
    vp_ckpt_list_add(l, "", "adam.step", t->adam_step);
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
    VP_REQUIRE(kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG, "vp_ppo_trainer_save: bad kind %d", (int)kind);
    VP_TRY(vp_backend_sync(t->backend));
    char* yaml = NULL;
    VP_TRY(vp_config_to_yaml(&t->cfg, &yaml));
    // Metadata: what the file is, the config, counters, seeds, the best score and the data.
    vp_ckpt_meta_list ml;
    memset(&ml, 0, sizeof ml);
    vp_ckpt_meta_head(&ml, kind, "ppo", t->backend, yaml, &t->count, 0, best_val_sharpe, best_iteration);
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
    if (s == VP_OK && kind == VP_CKPT_RESUME) {
        s = resume_items(t, &l);
    } else if (s == VP_OK) {
        s = vp_ckpt_list_init(&l, vp_ppo_net_tensors(&t->net, NULL, NULL, NULL, 0));
        if (s == VP_OK) s = add_params(&l, &t->net, "", &t->best_params);
    }
    if (s == VP_OK) s = vp_checkpoint_save(t->backend, path, l.items, l.n, ml.pairs, ml.n);
    vp_ckpt_list_free(&l);
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "writing checkpoint %s", path);
    return VP_OK;
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
    const char* kind = vp_checkpoint_meta(ck, "vulpes.kind");
    vp_status s = (kind && strcmp(kind, "resume") == 0)
                      ? VP_OK
                      : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s is not a resume checkpoint (vulpes.kind "
                                     "'%s'; last.safetensors is)", path, kind ? kind : "(none)");
    if (s == VP_OK) s = vp_ckpt_check_config(&t->cfg, t->data, ck);
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "ppo.stats");
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "ppo.grad_norm");
    // The host counters, checked before any tensor is read.
    vp_train_counters c;
    memset(&c, 0, sizeof c);
    int64_t best_it = -1;
    double best_sh = NAN;
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.iteration", &c.iteration);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.collect_steps", &c.collect_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.env_steps", &c.env_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.learner_steps", &c.learner_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.best_iteration", &best_it);
    if (s == VP_OK) s = vp_ckpt_meta_read_num(ck, "vulpes.best_val_sharpe", &best_sh);
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
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* algo = vp_checkpoint_meta(ck, "vulpes.algo");
    vp_status s = (algo && strcmp(algo, "ppo") == 0)
                      ? VP_OK
                      : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s holds no PPO network (vulpes.algo '%s')",
                                     path, algo ? algo : "(none)");
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = vp_ckpt_list_init(&l, vp_ppo_net_tensors(n, NULL, NULL, NULL, 0));
    if (s == VP_OK) s = add_params(&l, n, "", dst);
    if (s == VP_OK) s = vp_checkpoint_read_all(b, ck, l.items, l.n);
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}
