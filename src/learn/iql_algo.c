/* The algorithm table's "iql" entry: a vp_iql_trainer (vulpes/iql.h) over the dataset that
 * iql.dataset names for training, or the bare network and the feature matrix for inference,
 * behind vp_algo_ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/iql.h"
#include "vulpes/ops.h"

/* The entry's state. */
typedef struct iql {
    vp_iql_trainer t;     /* training: everything */
    vp_train_parts parts; /* inference: the network's settings */
    vp_iql_net net;       /* inference: the network */
    vp_buffer feat_buf;   /* inference: storage of `features` */
    vp_tensor features;   /* inference: [T, F] f32 backend memory */
} iql;

static iql* state(const vp_algo* a) { return (iql*)a->impl; }

/* The network of the instance: the trainer's, or the bare one. */
static const vp_iql_net* net_of(const vp_algo* a) { return a->use == VP_ALGO_TRAIN ? &state(a)->t.net : &state(a)->net; }

/* Parameters `which` of the instance. */
static vp_tensor* params_of(const vp_algo* a, vp_algo_params which) {
    iql* p = state(a);
    if (a->use != VP_ALGO_TRAIN) return &p->net.params;
    return which == VP_PARAMS_BEST ? &p->t.best_params : &p->t.net.params;
}

static void iql_free(vp_algo* a) {
    iql* p = state(a);
    vp_iql_trainer_free(&p->t);
    vp_iql_net_free(&p->net);
    if (p->feat_buf.dev) vp_buffer_free(a->backend, &p->feat_buf);
    free(p);
    a->impl = NULL;
}

/* Inference: the network of the config, its precision, and the features on the backend. */
static vp_status infer_init(vp_algo* a, iql* p) {
    VP_TRY(vp_train_parts_make(&a->cfg, a->data->n_features, &p->parts));
    VP_TRY(vp_iql_net_init(&p->net, a->backend, &p->parts.learner.model, p->parts.learner.seed));
    p->net.enc.precision = p->parts.precision;
    VP_TRY(vp_algo_features_upload(a->backend, a->data, &p->feat_buf, &p->features));
    vp_algo_bind(a, &p->features, &p->parts);
    return VP_OK;
}

/* Training: the settings, the dataset read and checked, the trainer (the dataset uploaded). */
static vp_status train_init(vp_algo* a, iql* p) {
    vp_iql_cfg ic;
    VP_TRY(vp_iql_cfg_make(&a->cfg, &ic));
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    vp_status s = vp_offline_load(a->cfg.iql.dataset, &ds);
    if (s == VP_OK) s = vp_iql_trainer_init(&p->t, a->backend, &a->cfg, a->data, &ds);
    vp_offline_free(&ds);
    if (s != VP_OK) return vp_error_context(s, "iql.dataset %s", a->cfg.iql.dataset);
    vp_algo_bind(a, &p->t.features, &p->t.parts);
    a->count = p->t.count;
    return VP_OK;
}

static vp_status iql_create(vp_algo* a) {
    iql* p = (iql*)calloc(1, sizeof *p);
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "iql: out of host memory");
    a->impl = p;
    vp_status s = a->use == VP_ALGO_TRAIN ? train_init(a, p) : infer_init(a, p);
    if (s != VP_OK) iql_free(a);
    return s;
}

static vp_status iql_iterate(vp_algo* a, int64_t n) {
    vp_iql_trainer* t = &state(a)->t;
    vp_status s = vp_iql_trainer_iterate(t, n);
    a->count = t->count;
    return s;
}

static vp_status iql_stats(vp_algo* a, vp_kv_list* out) {
    vp_iql_trainer* t = &state(a)->t;
    double st[VP_IQL_STAT_COUNT], gn = 0.0;
    VP_TRY(vp_backend_sync(t->backend));
    VP_TRY(vp_iql_trainer_stats(t, st, &gn));
    vp_kv_add(out, "loss", st[VP_IQL_STAT_V] + st[VP_IQL_STAT_Q] + st[VP_IQL_STAT_PI], 0);
    vp_kv_add(out, "value_loss", st[VP_IQL_STAT_V], 0);
    vp_kv_add(out, "q_loss", st[VP_IQL_STAT_Q], 0);
    vp_kv_add(out, "policy_loss", st[VP_IQL_STAT_PI], 0);
    vp_kv_add(out, "advantage", st[VP_IQL_STAT_ADV], 0);
    vp_kv_add(out, "weight", st[VP_IQL_STAT_WEIGHT], 0);
    vp_kv_add(out, "q", st[VP_IQL_STAT_QVAL], 0);
    vp_kv_add(out, "v", st[VP_IQL_STAT_VVAL], 0);
    vp_kv_add(out, "grad_norm", gn, 0);
    return VP_OK;
}

static void iql_info(const vp_algo* a, vp_kv_list* out) {
    vp_kv_add(out, "parameters", (double)vp_iql_net_numel(net_of(a)), 1);
    if (a->use != VP_ALGO_TRAIN) return;
    const vp_iql_trainer* t = &state(a)->t;
    vp_kv_add(out, "dataset_rows", (double)(t->steps * t->n_envs), 1);
    vp_kv_add(out, "dataset_envs", (double)t->n_envs, 1);
    vp_kv_add(out, "batch", (double)t->ic.batch, 1);
}

static vp_status iql_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out) {
    vp_iql_trainer* t = &state(a)->t;
    const vp_policy pol = vp_iql_policy(&t->net, params_of(a, which));
    VP_TRY(vp_validator_run(t->val, &pol, out));
    return vp_backend_sync(t->backend);
}

static vp_status iql_keep_best(vp_algo* a) {
    vp_iql_trainer* t = &state(a)->t;
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_status iql_save(vp_algo* a, const char* path, vp_ckpt_kind kind) {
    return vp_iql_trainer_save(&state(a)->t, path, kind, a->best_val_sharpe, a->best_iteration);
}

static vp_status iql_load(vp_algo* a, const char* path) {
    vp_iql_trainer* t = &state(a)->t;
    VP_TRY(vp_iql_trainer_load(t, path, &a->best_val_sharpe, &a->best_iteration));
    a->count = t->count;
    return VP_OK;
}

static vp_status iql_load_params(vp_algo* a, const char* path, vp_algo_params which) {
    return vp_iql_read_params(a->backend, net_of(a), path, params_of(a, which));
}

static vp_status iql_warm_start(vp_algo* a, const char* path) {
    // the checkpoint's parameters as online and best, its Q heads as the target
    vp_iql_trainer* t = &state(a)->t;
    VP_TRY(vp_iql_read_params(a->backend, &t->net, path, &t->net.params));
    const vp_tensor q = vp_iql_q_range(&t->net, &t->net.params);
    VP_TRY(vp_copy(t->backend, &q, &t->target));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_policy iql_policy(const vp_algo* a, vp_algo_params which) { return vp_iql_policy(net_of(a), params_of(a, which)); }

/* Offline: no warm-up collection; a resume loads last.safetensors. */
static void iql_start_note(const vp_algo* a, int resume, char* buf, size_t n) {
    if (resume) {
        snprintf(buf, n, "resuming toward iteration %lld: loading last.safetensors...",
                 (long long)a->cfg.train.iterations);
        return;
    }
    const vp_iql_trainer* t = &state(a)->t;
    snprintf(buf, n, "offline: nothing to collect, no warm-up; learning from %s (%lld steps of %lld envs, behaviour "
             "%s)", a->cfg.iql.dataset, (long long)t->steps, (long long)t->n_envs,
             t->ds_behaviour[0] ? t->ds_behaviour : "(unnamed)");
}

/* IQL learns from its dataset from the first iteration: no warm-up (vp_algo_no_warmup). */
const vp_algo_ops vp_iql_algo = {
    "iql",              iql_create,         iql_free,           vp_algo_no_warmup,  iql_iterate,
    iql_stats,          iql_info,           iql_validate,       iql_keep_best,      iql_save,
    iql_load,           iql_load_params,    iql_warm_start,     iql_policy,
    iql_start_note,
};
