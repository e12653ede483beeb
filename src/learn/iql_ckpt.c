/* IQL's checkpoints. last.safetensors (VP_CKPT_RESUME) holds the network's parameters by name
 * (the encoder's rows IQL uses, then "iql.*" heads), the target Q heads ("target.iql.q1.*",
 * "target.iql.q2.*"), the AdamW moments ("adam.m.", "adam.v.") and step, the draws' counter,
 * the last statistics, and the host counters, seeds, config and the dataset's behaviour as
 * metadata: enough to continue bit for bit. best.safetensors (VP_CKPT_BEST) holds the best
 * parameters. Both record vulpes.algo "iql" and the training data (vulpes.data.*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/iql_impl.h"
#include "learn/algo_ckpt.h"

/* IQL's network as a checkpoint sees it. */
static int net_tensors(const void* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    return vp_iql_net_tensors((const vp_iql_net*)n, flat, names, views, cap);
}
static vp_ckpt_net ckpt_net(const vp_iql_net* n) { return (vp_ckpt_net){n, net_tensors}; }

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_iql_trainer* t, vp_ckpt_list* l) {
    const vp_iql_net* n = &t->net;
    VP_TRY(vp_ckpt_list_init(l, 3 * vp_ckpt_net_count(ckpt_net(n)) + VP_IQL_MLP_V * 4 + 8));
    VP_TRY(vp_ckpt_add_net(l, ckpt_net(n), "", &n->params));
    for (int h = VP_IQL_Q1_W1; h < VP_IQL_V_W1; ++h)
        vp_ckpt_list_add(l, "target.", vp_iql_head_name((vp_iql_head)h), vp_iql_target_view(n, &t->target, (vp_iql_head)h));
    VP_TRY(vp_ckpt_add_adam(l, ckpt_net(n), &t->adam_m, &t->adam_v, t->adam_step));
    vp_ckpt_list_add(l, "", "iql.counters", t->ctr);
    vp_ckpt_list_add(l, "", "iql.stats", t->stats);
    vp_ckpt_list_add(l, "", "iql.grad_norm", t->grad_norm);
    return VP_OK;
}

vp_status vp_iql_trainer_save(vp_iql_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                              int64_t best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_iql_trainer_save: NULL argument");
    // Metadata: what the file is, the config, counters, seeds, the dataset, the best score and the data.
    vp_ckpt_meta_list ml;
    char* yaml = NULL;
    VP_TRY(vp_ckpt_save_begin(&ml, &yaml, "vp_iql_trainer_save", t->backend, &t->cfg, kind, "iql", &t->count,
                              best_val_sharpe, best_iteration));
    vp_ckpt_meta_add(&ml, "vulpes.rng", "philox4x32-10; counters: iql.counters (batch rows)");
    vp_ckpt_meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    vp_ckpt_meta_add(&ml, "vulpes.iql.behaviour", t->ds_behaviour);
    vp_ckpt_meta_int(&ml, "vulpes.iql.rows", t->steps * t->n_envs);
    vp_ckpt_data_meta dm;
    vp_status s = vp_ckpt_meta_data(&ml, t->data, &dm);
    // Tensors: everything for a resume, the best parameters otherwise.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK)
        s = kind == VP_CKPT_RESUME ? resume_items(t, &l) : vp_ckpt_net_list(&l, ckpt_net(&t->net), &t->best_params);
    return vp_ckpt_save_list(t->backend, path, s, &l, &ml, yaml);
}

/* The host counters against the config: no env steps, train.train_steps updates per iteration. */
static vp_status check_counters(vp_iql_trainer* t, const char* path, const vp_train_counters* c, int64_t best_it) {
    const int64_t U = t->ic.updates;
    VP_REQUIRE(c->iteration >= 0 && c->iteration <= (INT64_MAX / 4) / U && c->collect_steps == 0 &&
                   c->env_steps == 0 && c->warmup_steps == 0 && c->learner_steps == c->iteration * U &&
                   best_it >= -1 && best_it <= c->iteration,
               VP_ERR_PARSE, "checkpoint %s: counters (iteration %lld, collect_steps %lld, env_steps %lld, "
               "learner_steps %lld, best_iteration %lld) do not fit an offline run of train.train_steps %lld", path,
               (long long)c->iteration, (long long)c->collect_steps, (long long)c->env_steps,
               (long long)c->learner_steps, (long long)best_it, (long long)U);
    return VP_OK;
}

/* The restored device counters against the host counters. */
static vp_status check_restored(vp_iql_trainer* t, const char* path, const vp_train_counters* c) {
    int64_t ctr = 0;
    int32_t step = 0;
    VP_TRY(vp_download(t->backend, &ctr, &t->ctr, sizeof ctr));
    VP_TRY(vp_download(t->backend, &step, &t->adam_step, sizeof step));
    VP_REQUIRE(ctr == c->learner_steps && (int64_t)step == (c->learner_steps < INT32_MAX ? c->learner_steps : INT32_MAX),
               VP_ERR_PARSE, "checkpoint %s: tensors 'iql.counters' (%lld updates) and 'adam.step' (%d) do not match "
               "its counters (learner_steps %lld)", path, (long long)ctr, (int)step, (long long)c->learner_steps);
    return VP_OK;
}

vp_status vp_iql_trainer_load(vp_iql_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL && best_val_sharpe != NULL && best_iteration != NULL,
               VP_ERR_INVALID_ARG, "vp_iql_trainer_load: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* algo = vp_checkpoint_meta(ck, "vulpes.algo");
    vp_status s = vp_ckpt_check_resume(ck, path);
    if (s == VP_OK && !(algo && strcmp(algo, "iql") == 0))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s holds no IQL run (vulpes.algo '%s')", path,
                         algo ? algo : "(none)");
    if (s == VP_OK) s = vp_ckpt_resume_begin(ck, &t->cfg, t->data, "iql.stats", "iql.grad_norm");
    // The host counters, checked before any tensor is read.
    vp_train_counters c = {0};
    int64_t best_it = -1;
    double best_sh = NAN;
    if (s == VP_OK) s = vp_ckpt_read_counters(ck, 1, &c, &best_it, &best_sh);
    if (s == VP_OK) s = check_counters(t, path, &c, best_it);
    // Tensors straight into the run's buffers, then checked.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) s = check_restored(t, path, &c);
    if (s == VP_OK) {
        t->count = c;
        *best_iteration = best_it;
        *best_val_sharpe = best_sh;
    }
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_iql_read_params(vp_backend* b, const vp_iql_net* n, const char* path, vp_tensor* dst) {
    VP_REQUIRE(b != NULL && n != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG,
               "vp_iql_read_params: NULL argument");
    return vp_ckpt_read_params(b, ckpt_net(n), path, "iql", "IQL network", dst);
}
