/* The Decision Transformer's checkpoints. last.safetensors (VP_CKPT_RESUME) holds the network's
 * parameters by name (the encoder's rows it uses, then "dt.*"), the AdamW moments ("adam.m.",
 * "adam.v.") and step (also the index of the next batch draw), the last statistics, and the host
 * counters, seeds and config as metadata: enough to continue bit for bit. best.safetensors
 * (VP_CKPT_BEST) holds the best parameters. Both record vulpes.algo "dt", the target return the
 * policy is conditioned on (vulpes.dt.target_return) and the training data (vulpes.data.*). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dt_impl.h"
#include "learn/algo_ckpt.h"

/* The Decision Transformer's network as a checkpoint sees it. */
static int net_tensors(const void* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap) {
    return vp_dt_net_tensors((const vp_dt_net*)n, flat, names, views, cap);
}
static vp_ckpt_net ckpt_net(const vp_dt_net* n) { return (vp_ckpt_net){n, net_tensors}; }

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_dt_trainer* t, vp_ckpt_list* l) {
    const vp_ckpt_net n = ckpt_net(&t->net);
    VP_TRY(vp_ckpt_list_init(l, 3 * vp_ckpt_net_count(n) + 4));
    VP_TRY(vp_ckpt_add_net(l, n, "", &t->net.params));
    VP_TRY(vp_ckpt_add_adam(l, n, &t->adam_m, &t->adam_v, t->adam_step));
    vp_ckpt_list_add(l, "", "dt.stats", t->stats);
    vp_ckpt_list_add(l, "", "dt.grad_norm", t->grad_norm);
    return VP_OK;
}

vp_status vp_dt_trainer_save(vp_dt_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                             int64_t best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_dt_trainer_save: NULL argument");
    // Metadata: what the file is, the config, counters, seeds, the target, the best score, the data.
    vp_ckpt_meta_list ml;
    char* yaml = NULL;
    VP_TRY(vp_ckpt_save_begin(&ml, &yaml, "vp_dt_trainer_save", t->backend, &t->cfg, kind, "dt", &t->count,
                              best_val_sharpe, best_iteration));
    vp_ckpt_meta_add(&ml, "vulpes.rng", "philox4x32-10; counter: adam.step (the batch draws)");
    vp_ckpt_meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    vp_ckpt_meta_num(&ml, "vulpes.dt.target_return", (double)t->target);
    vp_ckpt_data_meta dm;
    vp_status s = vp_ckpt_meta_data(&ml, t->data, &dm);
    // Tensors: everything for a resume, the best parameters otherwise.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK)
        s = kind == VP_CKPT_RESUME ? resume_items(t, &l) : vp_ckpt_net_list(&l, ckpt_net(&t->net), &t->best_params);
    return vp_ckpt_save_list(t->backend, path, s, &l, &ml, yaml);
}

/* The target return of checkpoint ck (finite, as saved). */
static vp_status read_target(const vp_checkpoint* ck, const char* path, float* out) {
    double v = NAN;
    VP_TRY(vp_ckpt_meta_read_num(ck, "vulpes.dt.target_return", &v));
    VP_REQUIRE(isfinite(v) && fabs(v) < 3e38, VP_ERR_PARSE,
               "checkpoint %s: vulpes.dt.target_return is missing or not a finite float (%g)", path, v);
    *out = (float)v;
    return VP_OK;
}

vp_status vp_dt_trainer_load(vp_dt_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL && best_val_sharpe != NULL && best_iteration != NULL,
               VP_ERR_INVALID_ARG, "vp_dt_trainer_load: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* kind = vp_checkpoint_meta(ck, "vulpes.kind");
    const char* algo = vp_checkpoint_meta(ck, "vulpes.algo");
    vp_status s = (kind && strcmp(kind, "resume") == 0 && algo && strcmp(algo, "dt") == 0)
                      ? VP_OK
                      : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s is not a DT resume checkpoint (vulpes.kind "
                                     "'%s', vulpes.algo '%s')", path, kind ? kind : "(none)", algo ? algo : "(none)");
    if (s == VP_OK) s = vp_ckpt_resume_begin(ck, &t->cfg, t->data, "dt.stats", "dt.grad_norm");
    // The host counters, checked before any tensor is read: one update per iteration.
    vp_train_counters c = {0};
    int64_t best_it = -1;
    double best_sh = NAN;
    float target = 0.0f;
    if (s == VP_OK) s = vp_ckpt_read_counters(ck, 0, &c, &best_it, &best_sh);
    if (s == VP_OK) s = read_target(ck, path, &target);
    if (s == VP_OK && !(c.iteration >= 0 && c.iteration < INT32_MAX && c.learner_steps == c.iteration &&
                        best_it >= -1 && best_it <= c.iteration))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s: counters (iteration %lld, learner_steps %lld, "
                         "best_iteration %lld) are not those of one update per iteration", path,
                         (long long)c.iteration, (long long)c.learner_steps, (long long)best_it);
    // Tensors straight into the run's buffers, then the step checked against the counters.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    int32_t step = -1;
    if (s == VP_OK) s = vp_download(t->backend, &step, &t->adam_step, sizeof step);
    if (s == VP_OK && (int64_t)step != c.learner_steps)
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s: tensor 'adam.step' (%d) does not match its counter "
                         "learner_steps %lld", path, (int)step, (long long)c.learner_steps);
    if (s == VP_OK) {
        t->count = c;
        t->target = target;
        *best_iteration = best_it;
        *best_val_sharpe = best_sh;
    }
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_dt_read_params(vp_backend* b, const vp_dt_net* n, const char* path, vp_tensor* dst, float* target) {
    VP_REQUIRE(b != NULL && n != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG,
               "vp_dt_read_params: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_ckpt_open_algo(&ck, path, "dt", "Decision Transformer"));
    float tg = 0.0f;
    vp_status s = read_target(ck, path, &tg);
    if (s == VP_OK) s = vp_ckpt_read_net(b, ck, ckpt_net(n), dst);
    if (s == VP_OK && target) *target = tg;
    vp_checkpoint_close(ck);
    return s;
}
