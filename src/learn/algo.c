/* The algorithm table (one list, VP_ALGOS in vulpes/algo.h), lookup by name, the checked
 * wrappers over an entry's functions, key/value statistics, and the feature upload every
 * algorithm shares. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "vulpes/algo.h"
#include "vulpes/dqn.h"
#include "vulpes/ops.h"

#define VP_ALGO_ROW_(name) &vp_##name##_algo,
static const vp_algo_ops* const ALGOS[] = {VP_ALGOS(VP_ALGO_ROW_)};
#undef VP_ALGO_ROW_

#define N_ALGOS ((int)(sizeof ALGOS / sizeof ALGOS[0]))

int vp_algo_count(void) { return N_ALGOS; }

const vp_algo_ops* vp_algo_at(int i) { return i >= 0 && i < N_ALGOS ? ALGOS[i] : NULL; }

vp_status vp_algo_find(const char* name, const vp_algo_ops** out) {
    VP_REQUIRE(name != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_algo_find: NULL argument");
    for (int i = 0; i < N_ALGOS; ++i)
        if (strcmp(ALGOS[i]->name, name) == 0) {
            *out = ALGOS[i];
            return VP_OK;
        }
    // the known names, for the message
    char known[256] = "";
    size_t n = 0;
    for (int i = 0; i < N_ALGOS && n < sizeof known; ++i)
        n += (size_t)snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", ALGOS[i]->name);
    VP_FAIL(VP_ERR_INVALID_ARG, "train.algo = '%s' is not a known algorithm (known: %s)", name, known);
}

/* ---- key/value statistics ---------------------------------------------------------------------- */

void vp_kv_add(vp_kv_list* l, const char* key, double value, int integer) {
    if (!l || l->n >= VP_KV_MAX) return;
    l->items[l->n].key = key;
    l->items[l->n].value = value;
    l->items[l->n].integer = integer;
    l->n++;
}

double vp_kv_get(const vp_kv_list* l, const char* key) {
    for (int i = 0; l && i < l->n; ++i)
        if (strcmp(l->items[i].key, key) == 0) return l->items[i].value;
    return NAN;
}

/* ---- instances ----------------------------------------------------------------------------------- */

vp_status vp_algo_features_upload(vp_backend* b, const vp_train_data* d, vp_buffer* buf, vp_tensor* out) {
    VP_REQUIRE(b != NULL && d != NULL && buf != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_algo_features_upload: NULL argument");
    const int64_t T = d->bars.n, F = d->n_features;
    if (vp_backend_get_kind(b) == VP_BACKEND_CPU) {
        *out = vp_tensor_2d(d->features, VP_F32, VP_MEM_HOST, T, F);
        return VP_OK;
    }
    vp_mem mem = vp_backend_native_mem(b);
    VP_TRY(vp_buffer_alloc(b, mem, sizeof(float) * (size_t)(T * F), buf));
    *out = vp_tensor_2d(buf->dev, VP_F32, mem, T, F);
    return vp_upload(b, out, d->features, sizeof(float) * (size_t)(T * F));
}

void vp_algo_bind(vp_algo* a, const vp_tensor* features, const vp_train_parts* p) {
    a->features = features;
    a->instrument = p->instrument;
    a->env = p->env;
}

vp_status vp_algo_no_warmup(vp_algo* a) {
    (void)a;
    return VP_OK;
}

vp_status vp_algo_create(vp_algo* a, const vp_config* cfg, vp_backend* b, const vp_train_data* d, vp_algo_use use) {
    return vp_algo_create_rank(a, cfg, b, d, use, 0, 1);
}

vp_status vp_algo_create_rank(vp_algo* a, const vp_config* cfg, vp_backend* b, const vp_train_data* d,
                              vp_algo_use use, int rank, int ranks) {
    VP_REQUIRE(a != NULL && cfg != NULL && b != NULL && d != NULL, VP_ERR_INVALID_ARG,
               "vp_algo_create: instance, config, backend or data is NULL");
    memset(a, 0, sizeof *a);
    VP_REQUIRE(use >= 0 && use < VP_ALGO_USE_COUNT, VP_ERR_INVALID_ARG, "vp_algo_create: use %d", (int)use);
    VP_REQUIRE(ranks >= 1 && rank >= 0 && rank < ranks, VP_ERR_INVALID_ARG, "vp_algo_create: rank %d of %d", rank,
               ranks);
    const vp_algo_ops* ops = NULL;
    VP_TRY(vp_algo_find(cfg->train.algo, &ops));
    VP_REQUIRE(ranks == 1 || (ops == &vp_dqn_algo && use == VP_ALGO_TRAIN), VP_ERR_UNSUPPORTED,
               "vp_algo_create: rank %d of %d: train.algo %s has no data-parallel learner (dqn has)", rank, ranks,
               ops->name);
    a->rank = rank;
    a->ranks = ranks;
    a->use = use;
    a->cfg = *cfg;
    a->backend = b;
    a->data = d;
    a->best_val_sharpe = NAN;
    a->best_iteration = -1;
    VP_TRY(ops->create(a));
    a->ops = ops;
    return VP_OK;
}

void vp_algo_free(vp_algo* a) {
    if (!a) return;
    if (a->ops && a->impl) a->ops->free(a);
    memset(a, 0, sizeof *a);
}

/* Fails unless a is a created instance (and, with `train`, a training one). */
static vp_status check(const vp_algo* a, int train, const char* fn) {
    VP_REQUIRE(a != NULL && a->ops != NULL && a->impl != NULL, VP_ERR_INVALID_ARG, "%s: instance is not created", fn);
    VP_REQUIRE(!train || a->use == VP_ALGO_TRAIN, VP_ERR_STATE, "%s: the %s instance is for inference only", fn,
               a->ops->name);
    return VP_OK;
}

/* Fails unless `which` names parameters of a. */
static vp_status check_params(const vp_algo* a, vp_algo_params which, const char* fn) {
    VP_REQUIRE(which >= 0 && which < VP_PARAMS_COUNT, VP_ERR_INVALID_ARG, "%s: parameters %d", fn, (int)which);
    VP_REQUIRE(which == VP_PARAMS_ONLINE || a->use == VP_ALGO_TRAIN, VP_ERR_STATE,
               "%s: an inference instance has no best parameters", fn);
    return VP_OK;
}

vp_status vp_algo_warmup(vp_algo* a) {
    VP_TRY(check(a, 1, "vp_algo_warmup"));
    return a->ops->warmup(a);
}

vp_status vp_algo_iterate(vp_algo* a, int64_t n) {
    VP_TRY(check(a, 1, "vp_algo_iterate"));
    VP_REQUIRE(n >= 0, VP_ERR_INVALID_ARG, "vp_algo_iterate: n = %lld", (long long)n);
    return a->ops->iterate(a, n);
}

vp_status vp_algo_stats(vp_algo* a, vp_kv_list* out) {
    VP_TRY(check(a, 1, "vp_algo_stats"));
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_algo_stats: out is NULL");
    out->n = 0;
    return a->ops->stats(a, out);
}

vp_status vp_algo_info(const vp_algo* a, vp_kv_list* out) {
    VP_TRY(check(a, 0, "vp_algo_info"));
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_algo_info: out is NULL");
    out->n = 0;
    a->ops->info(a, out);
    return VP_OK;
}

void vp_algo_start_note(const vp_algo* a, int resume, char* buf, size_t n) {
    if (!buf || n == 0) return;
    buf[0] = '\0';
    if (a && a->ops && a->ops->start_note) {
        a->ops->start_note(a, resume, buf, n);
        return;
    }
    if (resume && a)
        snprintf(buf, n, "resuming toward iteration %lld: loading last.safetensors...", (long long)a->cfg.train.iterations);
}

vp_status vp_algo_set_comm(vp_algo* a, vp_comm* comm) {
    VP_TRY(check(a, 1, "vp_algo_set_comm"));
    VP_REQUIRE(a->ops == &vp_dqn_algo, VP_ERR_UNSUPPORTED,
               "vp_algo_set_comm: train.algo %s has no data-parallel learner (dqn has)", a->ops->name);
    VP_REQUIRE(vp_comm_rank(comm) == a->rank && vp_comm_size(comm) == a->ranks, VP_ERR_INVALID_ARG,
               "vp_algo_set_comm: the communicator is rank %d of %d, the instance was made for rank %d of %d "
               "(vp_algo_create_rank)", vp_comm_rank(comm), vp_comm_size(comm), a->rank, a->ranks);
    return vp_dqn_algo_set_comm(a, comm);
}

vp_status vp_algo_validate(vp_algo* a, vp_algo_params which, vp_eval_result* out) {
    VP_TRY(check(a, 1, "vp_algo_validate"));
    VP_TRY(check_params(a, which, "vp_algo_validate"));
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_algo_validate: out is NULL");
    return a->ops->validate(a, which, out);
}

vp_status vp_algo_keep_best(vp_algo* a) {
    VP_TRY(check(a, 1, "vp_algo_keep_best"));
    return a->ops->keep_best(a);
}

vp_status vp_algo_save(vp_algo* a, const char* path, vp_ckpt_kind kind) {
    VP_TRY(check(a, 1, "vp_algo_save"));
    VP_REQUIRE(path != NULL && kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG,
               "vp_algo_save: path NULL or kind %d", (int)kind);
    return a->ops->save(a, path, kind);
}

vp_status vp_algo_load(vp_algo* a, const char* path) {
    VP_TRY(check(a, 1, "vp_algo_load"));
    VP_REQUIRE(path != NULL, VP_ERR_INVALID_ARG, "vp_algo_load: path is NULL");
    return a->ops->load(a, path);
}

vp_status vp_algo_load_params(vp_algo* a, const char* path, vp_algo_params which) {
    VP_TRY(check(a, 0, "vp_algo_load_params"));
    VP_TRY(check_params(a, which, "vp_algo_load_params"));
    VP_REQUIRE(path != NULL, VP_ERR_INVALID_ARG, "vp_algo_load_params: path is NULL");
    return a->ops->load_params(a, path, which);
}

vp_status vp_algo_warm_start(vp_algo* a, const char* path) {
    VP_TRY(check(a, 1, "vp_algo_warm_start"));
    VP_REQUIRE(path != NULL, VP_ERR_INVALID_ARG, "vp_algo_warm_start: path is NULL");
    return a->ops->warm_start(a, path);
}

vp_status vp_algo_policy(const vp_algo* a, vp_algo_params which, vp_policy* out) {
    VP_TRY(check(a, 0, "vp_algo_policy"));
    VP_TRY(check_params(a, which, "vp_algo_policy"));
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_algo_policy: out is NULL");
    *out = a->ops->policy(a, which);
    return VP_OK;
}

vp_algo_params vp_algo_selected(const vp_algo* a) {
    return a && a->use == VP_ALGO_TRAIN && a->best_iteration >= 0 ? VP_PARAMS_BEST : VP_PARAMS_ONLINE;
}

vp_status vp_algo_train_envs_init(vp_backend* b, const vp_train_data* d, const vp_tensor* features,
                                  const vp_train_parts* p, int64_t n_envs, vp_env_market* market, vp_env* env) {
    vp_env_market_desc md = {d->bars.n, d->bars.open, d->bars.high, d->bars.low, d->bars.close, d->atr,
                             d->split.train.begin, d->split.train.end, features, d->bars.spread,
                             vp_instrument_spread(&p->instrument), d->periods_per_year};
    VP_TRY(vp_env_market_init(market, b, &md));
    vp_status s = vp_env_init(env, b, market, &p->instrument, &p->env, n_envs);
    if (s != VP_OK) return vp_error_context(s, "training envs (env.episode_bars %lld in a train span of %lld bars)",
                                            (long long)p->env.episode_bars, (long long)vp_span_len(d->split.train));
    return VP_OK;
}
