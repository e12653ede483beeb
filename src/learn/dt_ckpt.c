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
#include "learn/train_ckpt.h"

/* Every parameter tensor of `flat` by name under `prefix`. */
static vp_status add_params(vp_ckpt_list* l, const vp_dt_net* n, const char* prefix, const vp_tensor* flat) {
    const int count = vp_dt_net_tensors(n, NULL, NULL, NULL, 0);
    const char** names = (const char**)calloc((size_t)count, sizeof *names);
    vp_tensor* views = (vp_tensor*)calloc((size_t)count, sizeof *views);
    if (!names || !views) {
        free(names);
        free(views);
        VP_FAIL(VP_ERR_OOM, "checkpoint: out of host memory for %d tensor names", count);
    }
    vp_dt_net_tensors(n, flat, names, views, count);
    for (int i = 0; i < count; ++i) vp_ckpt_list_add(l, prefix, names[i], views[i]);
    free(names);
    free(views);
    return VP_OK;
}

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_dt_trainer* t, vp_ckpt_list* l) {
    const vp_dt_net* n = &t->net;
    VP_TRY(vp_ckpt_list_init(l, 3 * vp_dt_net_tensors(n, NULL, NULL, NULL, 0) + 4));
    VP_TRY(add_params(l, n, "", &n->params));
    VP_TRY(add_params(l, n, "adam.m.", &t->adam_m));
    VP_TRY(add_params(l, n, "adam.v.", &t->adam_v));
    vp_ckpt_list_add(l, "", "adam.step", t->adam_step);
    vp_ckpt_list_add(l, "", "dt.stats", t->stats);
    vp_ckpt_list_add(l, "", "dt.grad_norm", t->grad_norm);
    return VP_OK;
}

vp_status vp_dt_trainer_save(vp_dt_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                             int64_t best_iteration) {
    VP_REQUIRE(t != NULL && t->val != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_dt_trainer_save: NULL argument");
    VP_REQUIRE(kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG, "vp_dt_trainer_save: bad kind %d", (int)kind);
    VP_TRY(vp_backend_sync(t->backend));
    char* yaml = NULL;
    VP_TRY(vp_config_to_yaml(&t->cfg, &yaml));
    // Metadata: what the file is, the config, counters, seeds, the target, the best score, the data.
    vp_ckpt_meta_list ml;
    memset(&ml, 0, sizeof ml);
    vp_ckpt_meta_head(&ml, kind, "dt", t->backend, yaml, &t->count, 0, best_val_sharpe, best_iteration);
    vp_ckpt_meta_add(&ml, "vulpes.rng", "philox4x32-10; counter: adam.step (the batch draws)");
    vp_ckpt_meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    vp_ckpt_meta_num(&ml, "vulpes.dt.target_return", (double)t->target);
    vp_ckpt_data_meta dm;
    vp_status s = vp_ckpt_meta_data(&ml, t->data, &dm);
    // Tensors: everything for a resume, the best parameters otherwise.
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK && kind == VP_CKPT_RESUME) {
        s = resume_items(t, &l);
    } else if (s == VP_OK) {
        s = vp_ckpt_list_init(&l, vp_dt_net_tensors(&t->net, NULL, NULL, NULL, 0));
        if (s == VP_OK) s = add_params(&l, &t->net, "", &t->best_params);
    }
    if (s == VP_OK) s = vp_checkpoint_save(t->backend, path, l.items, l.n, ml.pairs, ml.n);
    vp_ckpt_list_free(&l);
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "writing checkpoint %s", path);
    return VP_OK;
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
    if (s == VP_OK) s = vp_ckpt_check_config(&t->cfg, t->data, ck);
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "dt.stats");
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "dt.grad_norm");
    // The host counters, checked before any tensor is read: one update per iteration.
    vp_train_counters c;
    memset(&c, 0, sizeof c);
    int64_t best_it = -1;
    double best_sh = NAN;
    float target = 0.0f;
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.iteration", &c.iteration);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.learner_steps", &c.learner_steps);
    if (s == VP_OK) s = vp_ckpt_meta_read_int(ck, "vulpes.best_iteration", &best_it);
    if (s == VP_OK) s = vp_ckpt_meta_read_num(ck, "vulpes.best_val_sharpe", &best_sh);
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
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* algo = vp_checkpoint_meta(ck, "vulpes.algo");
    vp_status s = (algo && strcmp(algo, "dt") == 0)
                      ? VP_OK
                      : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s holds no Decision Transformer (vulpes.algo "
                                     "'%s')", path, algo ? algo : "(none)");
    float tg = 0.0f;
    if (s == VP_OK) s = read_target(ck, path, &tg);
    vp_ckpt_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = vp_ckpt_list_init(&l, vp_dt_net_tensors(n, NULL, NULL, NULL, 0));
    if (s == VP_OK) s = add_params(&l, n, "", dst);
    if (s == VP_OK) s = vp_checkpoint_read_all(b, ck, l.items, l.n);
    if (s == VP_OK && target) *target = tg;
    vp_ckpt_list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}
