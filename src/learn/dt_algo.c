/* The algorithm table's "dt" entry: a vp_dt_trainer (vulpes/dt.h) for training, or the bare
 * network, its target return and the feature matrix for inference, behind vp_algo_ops. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/dt.h"
#include "vulpes/ops.h"

/* The entry's state. */
typedef struct dt {
    vp_dt_trainer t;      /* training: everything */
    vp_train_parts parts; /* inference: the network's settings */
    vp_dt_net net;        /* inference: the network */
    float target;         /* inference: the target return of the checkpoint loaded */
    vp_buffer feat_buf;   /* inference: storage of `features` */
    vp_tensor features;   /* inference: [T, F] f32 backend memory */
} dt;

static dt* state(const vp_algo* a) { return (dt*)a->impl; }

static const vp_dt_net* net_of(const vp_algo* a) { return a->use == VP_ALGO_TRAIN ? &state(a)->t.net : &state(a)->net; }

static vp_tensor* params_of(const vp_algo* a, vp_algo_params which) {
    dt* p = state(a);
    if (a->use != VP_ALGO_TRAIN) return &p->net.params;
    return which == VP_PARAMS_BEST ? &p->t.best_params : &p->t.net.params;
}

static float target_of(const vp_algo* a) { return a->use == VP_ALGO_TRAIN ? state(a)->t.target : state(a)->target; }

static void dt_free(vp_algo* a) {
    dt* p = state(a);
    vp_dt_trainer_free(&p->t);
    vp_dt_net_free(&p->net);
    if (p->feat_buf.dev) vp_buffer_free(a->backend, &p->feat_buf);
    free(p);
    a->impl = NULL;
}

/* Inference: the network of the config, its precision, and the features on the backend (the
 * target return comes with the checkpoint's parameters). */
static vp_status infer_init(vp_algo* a, dt* p) {
    vp_dt_cfg dc;
    VP_TRY(vp_dt_cfg_make(&a->cfg, &dc));
    VP_TRY(vp_train_parts_make(&a->cfg, a->data->n_features, &p->parts));
    VP_TRY(vp_dt_net_init(&p->net, a->backend, &p->parts.learner.model, &dc.dims, p->parts.learner.seed));
    p->net.enc.precision = p->parts.precision;
    p->target = (float)dc.target_return;
    VP_TRY(vp_algo_features_upload(a->backend, a->data, &p->feat_buf, &p->features));
    vp_algo_bind(a, &p->features, &p->parts);
    return VP_OK;
}

static vp_status dt_create(vp_algo* a) {
    dt* p = (dt*)calloc(1, sizeof *p);
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "dt: out of host memory");
    a->impl = p;
    vp_status s = VP_OK;
    if (a->use == VP_ALGO_TRAIN) {
        s = vp_dt_trainer_init(&p->t, a->backend, &a->cfg, a->data);
        vp_algo_bind(a, &p->t.features, &p->t.parts);
        a->count = p->t.count;
    } else {
        s = infer_init(a, p);
    }
    if (s != VP_OK) dt_free(a);
    return s;
}

static vp_status dt_iterate(vp_algo* a, int64_t n) {
    vp_dt_trainer* t = &state(a)->t;
    vp_status s = vp_dt_trainer_iterate(t, n);
    a->count = t->count;
    return s;
}

static vp_status dt_stats(vp_algo* a, vp_kv_list* out) {
    vp_dt_trainer* t = &state(a)->t;
    double loss = NAN, steps = 0.0, gn = NAN;
    VP_TRY(vp_backend_sync(t->backend));
    VP_TRY(vp_dt_trainer_stats(t, &loss, &steps, &gn));
    vp_kv_add(out, "loss", loss, 0);
    vp_kv_add(out, "steps", steps, 1);
    vp_kv_add(out, "grad_norm", gn, 0);
    return VP_OK;
}

static void dt_info(const vp_algo* a, vp_kv_list* out) {
    vp_kv_add(out, "parameters", (double)vp_dt_net_numel(net_of(a)), 1);
    vp_kv_add(out, "target_return", (double)target_of(a), 0);
    if (a->use != VP_ALGO_TRAIN) return;
    const vp_dt_trainer* t = &state(a)->t;
    vp_kv_add(out, "dataset_steps", (double)t->rows.n_rows, 1);
    vp_kv_add(out, "dataset_episodes", (double)t->rows.n_episodes, 1);
    vp_kv_add(out, "dataset_best_return", t->rows.best_return, 0);
    vp_kv_add(out, "dataset_mean_return", t->rows.mean_return, 0);
    vp_kv_add(out, "batch", (double)t->dc.batch, 1);
    vp_kv_add(out, "context", (double)t->dc.dims.K, 1);
}

static vp_status dt_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out) {
    vp_dt_trainer* t = &state(a)->t;
    const vp_policy pol = vp_dt_policy(&t->net, params_of(a, which), t->target);
    VP_TRY(vp_validator_run(t->val, &pol, out));
    return vp_backend_sync(t->backend);
}

static vp_status dt_keep_best(vp_algo* a) {
    vp_dt_trainer* t = &state(a)->t;
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_status dt_save(vp_algo* a, const char* path, vp_ckpt_kind kind) {
    return vp_dt_trainer_save(&state(a)->t, path, kind, a->best_val_sharpe, a->best_iteration);
}

static vp_status dt_load(vp_algo* a, const char* path) {
    vp_dt_trainer* t = &state(a)->t;
    VP_TRY(vp_dt_trainer_load(t, path, &a->best_val_sharpe, &a->best_iteration));
    a->count = t->count;
    return VP_OK;
}

static vp_status dt_load_params(vp_algo* a, const char* path, vp_algo_params which) {
    // an inference instance conditions on the checkpoint's target; training keeps its own
    float target = 0.0f;
    VP_TRY(vp_dt_read_params(a->backend, net_of(a), path, params_of(a, which), &target));
    if (a->use != VP_ALGO_TRAIN) state(a)->target = target;
    return VP_OK;
}

static vp_status dt_warm_start(vp_algo* a, const char* path) {
    vp_dt_trainer* t = &state(a)->t;
    VP_TRY(vp_dt_read_params(a->backend, &t->net, path, &t->net.params, NULL));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_policy dt_policy(const vp_algo* a, vp_algo_params which) {
    return vp_dt_policy(net_of(a), params_of(a, which), target_of(a));
}

/* What the run trains on and the target it evaluates with; a resume loads last.safetensors. */
static void dt_start_note(const vp_algo* a, int resume, char* buf, size_t n) {
    const vp_dt_trainer* t = &state(a)->t;
    if (resume) {
        snprintf(buf, n, "resuming from last.safetensors; the policy conditioned on target return %.6g", (double)t->target);
        return;
    }
    snprintf(buf, n, "no warm-up: offline training on %s (%lld steps, %lld episodes, best episode return %.6g); the "
             "policy conditioned on target return %.6g%s", a->cfg.dt.dataset, (long long)t->rows.n_rows,
             (long long)t->rows.n_episodes, t->rows.best_return, (double)t->target,
             t->dc.target_best ? " (the dataset's best)" : " (dt.target_return)");
}

/* Offline: the dataset is the experience, so no warm-up collects any (vp_algo_no_warmup). */
const vp_algo_ops vp_dt_algo = {
    "dt",               dt_create,          dt_free,            vp_algo_no_warmup,  dt_iterate,
    dt_stats,           dt_info,            dt_validate,        dt_keep_best,       dt_save,
    dt_load,            dt_load_params,     dt_warm_start,      dt_policy,
    dt_start_note,
};
