/* The algorithm table's "ppo" entry: a vp_ppo_trainer (vulpes/ppo.h) for training, or the bare
 * actor-critic and the feature matrix for inference, behind vp_algo_ops. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/ops.h"
#include "vulpes/ppo.h"

/* The entry's state. */
typedef struct ppo {
    vp_ppo_trainer t;     /* training: everything */
    vp_train_parts parts; /* inference: the network's settings */
    vp_ppo_net net;       /* inference: the network */
    vp_buffer feat_buf;   /* inference: storage of `features` */
    vp_tensor features;   /* inference: [T, F] f32 backend memory */
} ppo;

static ppo* state(const vp_algo* a) { return (ppo*)a->impl; }

/* The network of the instance: the trainer's, or the bare one. */
static const vp_ppo_net* net_of(const vp_algo* a) {
    return a->use == VP_ALGO_TRAIN ? &state(a)->t.net : &state(a)->net;
}

/* Parameters `which` of the instance. */
static vp_tensor* params_of(const vp_algo* a, vp_algo_params which) {
    ppo* p = state(a);
    if (a->use != VP_ALGO_TRAIN) return &p->net.params;
    return which == VP_PARAMS_BEST ? &p->t.best_params : &p->t.net.params;
}

static void ppo_free(vp_algo* a) {
    ppo* p = state(a);
    vp_ppo_trainer_free(&p->t);
    vp_ppo_net_free(&p->net);
    if (p->feat_buf.dev) vp_buffer_free(a->backend, &p->feat_buf);
    free(p);
    a->impl = NULL;
}

/* Inference: the network of the config, its precision, and the features on the backend. */
static vp_status infer_init(vp_algo* a, ppo* p) {
    VP_TRY(vp_train_parts_make(&a->cfg, a->data->n_features, &p->parts));
    VP_TRY(vp_ppo_net_init(&p->net, a->backend, &p->parts.learner.model, p->parts.learner.seed));
    p->net.enc.precision = p->parts.precision;
    VP_TRY(vp_algo_features_upload(a->backend, a->data, &p->feat_buf, &p->features));
    vp_algo_bind(a, &p->features, &p->parts);
    return VP_OK;
}

static vp_status ppo_create(vp_algo* a) {
    ppo* p = (ppo*)calloc(1, sizeof *p);
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "ppo: out of host memory");
    a->impl = p;
    vp_status s = VP_OK;
    if (a->use == VP_ALGO_TRAIN) {
        s = vp_ppo_trainer_init(&p->t, a->backend, &a->cfg, a->data);
        vp_algo_bind(a, &p->t.features, &p->t.parts);
        a->count = p->t.count;
    } else {
        s = infer_init(a, p);
    }
    if (s != VP_OK) ppo_free(a);
    return s;
}

static vp_status ppo_iterate(vp_algo* a, int64_t n) {
    vp_ppo_trainer* t = &state(a)->t;
    vp_status s = vp_ppo_trainer_iterate(t, n);
    a->count = t->count;
    return s;
}

static vp_status ppo_stats(vp_algo* a, vp_kv_list* out) {
    vp_ppo_trainer* t = &state(a)->t;
    double st[VP_PPO_STAT_COUNT], gn = 0.0;
    VP_TRY(vp_backend_sync(t->backend));
    VP_TRY(vp_ppo_trainer_stats(t, st, &gn));
    const double loss = st[VP_PPO_STAT_PG] + t->pc.vf_coef * st[VP_PPO_STAT_V] - t->pc.ent_coef * st[VP_PPO_STAT_ENT];
    vp_kv_add(out, "loss", loss, 0);
    vp_kv_add(out, "policy_loss", st[VP_PPO_STAT_PG], 0);
    vp_kv_add(out, "value_loss", st[VP_PPO_STAT_V], 0);
    vp_kv_add(out, "entropy", st[VP_PPO_STAT_ENT], 0);
    vp_kv_add(out, "approx_kl", st[VP_PPO_STAT_KL], 0);
    vp_kv_add(out, "old_approx_kl", st[VP_PPO_STAT_OLD_KL], 0);
    vp_kv_add(out, "clipfrac", st[VP_PPO_STAT_CLIPFRAC], 0);
    vp_kv_add(out, "grad_norm", gn, 0);
    vp_kv_add(out, "epochs", (double)t->epochs_run, 1);
    return VP_OK;
}

static void ppo_info(const vp_algo* a, vp_kv_list* out) {
    vp_kv_add(out, "parameters", (double)vp_ppo_net_numel(net_of(a)), 1);
    if (a->use != VP_ALGO_TRAIN) return;
    const vp_ppo_trainer* t = &state(a)->t;
    vp_kv_add(out, "n_envs", (double)t->env.n_envs, 1);
    vp_kv_add(out, "rollout_steps", (double)t->pc.rollout_steps, 1);
    vp_kv_add(out, "minibatch", (double)vp_tensor_numel(&t->m_bar), 1);
}

static vp_status ppo_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out) {
    vp_ppo_trainer* t = &state(a)->t;
    const vp_policy pol = vp_ppo_policy(&t->net, params_of(a, which));
    VP_TRY(vp_validator_run(t->val, &pol, out));
    return vp_backend_sync(t->backend);
}

static vp_status ppo_keep_best(vp_algo* a) {
    vp_ppo_trainer* t = &state(a)->t;
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_status ppo_save(vp_algo* a, const char* path, vp_ckpt_kind kind) {
    return vp_ppo_trainer_save(&state(a)->t, path, kind, a->best_val_sharpe, a->best_iteration);
}

static vp_status ppo_load(vp_algo* a, const char* path) {
    vp_ppo_trainer* t = &state(a)->t;
    VP_TRY(vp_ppo_trainer_load(t, path, &a->best_val_sharpe, &a->best_iteration));
    a->count = t->count;
    return VP_OK;
}

static vp_status ppo_load_params(vp_algo* a, const char* path, vp_algo_params which) {
    return vp_ppo_read_params(a->backend, net_of(a), path, params_of(a, which));
}

static vp_status ppo_warm_start(vp_algo* a, const char* path) {
    // the checkpoint's parameters as online and best
    vp_ppo_trainer* t = &state(a)->t;
    VP_TRY(vp_ppo_read_params(a->backend, &t->net, path, &t->net.params));
    return vp_copy(t->backend, &t->net.params, &t->best_params);
}

static vp_policy ppo_policy(const vp_algo* a, vp_algo_params which) { return vp_ppo_policy(net_of(a), params_of(a, which)); }

/* PPO collects on-policy from the first iteration: no warm-up (vp_algo_no_warmup). */
const vp_algo_ops vp_ppo_algo = {
    "ppo",              ppo_create,         ppo_free,           vp_algo_no_warmup,  ppo_iterate,
    ppo_stats,          ppo_info,           ppo_validate,       ppo_keep_best,      ppo_save,
    ppo_load,           ppo_load_params,    ppo_warm_start,     ppo_policy,
    NULL, /* no warm-up; a resume loads last.safetensors: the generic line */
};
