/* The flat C API's environments: n envs over one span of a run's market, as training makes
 * them, with the observation, reward and action buffers in the backend's memory and the
 * window of feature rows of each env's decision bar gathered after every reset and step. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "vulpes/action.h"
#include "vulpes/algo.h"
#include "vulpes/config.h"
#include "vulpes/dataset.h"
#include "vulpes/env.h"
#include "vulpes/ops.h"
#include "vulpes/train.h"

/* The buffers vp_api_env_buffer names, in this order. */
enum { BUF_WINDOW, BUF_PORTFOLIO, BUF_BAR, BUF_REWARD, BUF_DONE, BUF_ACTIONS, BUF_COUNT };
static const char* const BUF_NAMES[BUF_COUNT] = {"window", "portfolio", "bar", "reward", "done", "actions"};

struct vp_api_env {
    vp_backend* backend;
    vp_config cfg;             /* the resolved config */
    vp_train_data data;        /* bars, features, ATR, split (host) */
    vp_train_parts parts;      /* instrument and env settings */
    vp_buffer feat_buf;        /* features on CUDA */
    vp_tensor features;        /* [T, F] in backend memory */
    vp_env_market market;      /* the chosen span */
    vp_env env;                /* the n envs */
    vp_arena arena;            /* the buffers and the window rows */
    vp_tensor buf[BUF_COUNT];  /* [BUF_*] */
    vp_tensor rows;            /* [n K] i32 feature row of each window entry */
    int32_t* host_bar;         /* [n] decision bars on the host (CUDA) */
    int32_t* host_rows;        /* [n K] window rows on the host */
    int64_t n, K, F;
};

/* The span `name` of the data. */
static vp_status pick_span(const vp_train_data* d, const char* name, vp_span* out) {
    const char* n = name ? name : "train";
    if (strcmp(n, "train") == 0) *out = d->split.train;
    else if (strcmp(n, "val") == 0) *out = d->split.val;
    else if (strcmp(n, "test") == 0) *out = d->split.test;
    else if (strcmp(n, "all") == 0) *out = (vp_span){d->warmup, d->bars.n};
    else VP_FAIL(VP_ERR_INVALID_ARG, "span '%.40s': choose train, val, test or all", n);
    return VP_OK;
}

/* The window rows of every env's decision bar (t-K+1 .. t, below 0 read as 0) gathered from the
 * features into the "window" buffer; on CUDA the bars are read back first and the device is
 * waited for at the end. */
static vp_status gather_window(vp_api_env* e) {
    const int32_t* bar = (const int32_t*)e->buf[BUF_BAR].data;
    const int cuda = vp_backend_get_kind(e->backend) == VP_BACKEND_CUDA;
    if (cuda) {
        VP_TRY(vp_download(e->backend, e->host_bar, &e->buf[BUF_BAR], sizeof(int32_t) * (size_t)e->n));
        bar = e->host_bar;
    }
    for (int64_t i = 0; i < e->n; ++i)
        for (int64_t k = 0; k < e->K; ++k) {
            const int64_t r = (int64_t)bar[i] - e->K + 1 + k;
            e->host_rows[i * e->K + k] = (int32_t)(r < 0 ? 0 : r);
        }
    if (cuda) VP_TRY(vp_upload(e->backend, &e->rows, e->host_rows, sizeof(int32_t) * (size_t)(e->n * e->K)));
    vp_tensor win = vp_tensor_2d(e->buf[BUF_WINDOW].data, VP_F32, e->buf[BUF_WINDOW].mem, e->n * e->K, e->F);
    VP_TRY(vp_gather_rows(e->backend, &e->features, &e->rows, &win));
    return vp_backend_sync(e->backend);
}

/* The buffers of n envs in the arena. */
static vp_status buffers_init(vp_api_env* e) {
    const vp_mem mem = vp_backend_native_mem(e->backend);
    const int64_t n = e->n, nk = e->n * e->K;
    const size_t bytes = sizeof(float) * (size_t)(nk * e->F + n * (VP_ENV_PORTFOLIO + 3 + VP_ENV_BRANCHES) + nk) +
                         256 * (BUF_COUNT + 2);
    VP_TRY(vp_arena_init(&e->arena, e->backend, mem, bytes));
    const int64_t sw[3] = {n, e->K, e->F}, sp[2] = {n, VP_ENV_PORTFOLIO}, sa[2] = {n, VP_ENV_BRANCHES};
    VP_TRY(vp_arena_tensor(&e->arena, "env.window", VP_F32, 3, sw, &e->buf[BUF_WINDOW], NULL));
    VP_TRY(vp_arena_tensor(&e->arena, "env.portfolio", VP_F32, 2, sp, &e->buf[BUF_PORTFOLIO], NULL));
    VP_TRY(vp_arena_tensor(&e->arena, "env.bar", VP_I32, 1, &n, &e->buf[BUF_BAR], NULL));
    VP_TRY(vp_arena_tensor(&e->arena, "env.reward", VP_F32, 1, &n, &e->buf[BUF_REWARD], NULL));
    VP_TRY(vp_arena_tensor(&e->arena, "env.done", VP_F32, 1, &n, &e->buf[BUF_DONE], NULL));
    VP_TRY(vp_arena_tensor(&e->arena, "env.actions", VP_I32, 2, sa, &e->buf[BUF_ACTIONS], NULL));
    e->host_bar = (int32_t*)calloc((size_t)n, sizeof(int32_t));
    e->host_rows = (int32_t*)calloc((size_t)nk, sizeof(int32_t));
    VP_REQUIRE(e->host_bar && e->host_rows, VP_ERR_OOM, "buffers of %lld envs: out of memory", (long long)n);
    if (mem == VP_MEM_HOST) e->rows = vp_tensor_1d(e->host_rows, VP_I32, VP_MEM_HOST, nk);
    else VP_TRY(vp_arena_tensor(&e->arena, "env.rows", VP_I32, 1, &nk, &e->rows, NULL));
    VP_TRY(vp_fill_i32(e->backend, &e->buf[BUF_ACTIONS], 0));
    return VP_OK;
}

/* Everything of vp_api_env_open after the struct is made. */
static vp_status env_setup(vp_api_env* e, const char* config, const char* const* overrides, int n_overrides,
                           const char* span, const char* backend, int64_t n_envs) {
    VP_TRY(vp_config_resolve(&e->cfg, config, n_overrides, (char* const*)overrides));
    if (n_envs > 0) e->cfg.env.n_envs = n_envs;
    // envs alone keep no replay: its size rule (room for one push of n_envs x n_step) does not
    // apply, so the checks that build the parts below see a replay that would hold one push
    const int64_t push = e->cfg.env.n_envs * (int64_t)e->cfg.learn.n_step;
    if (e->cfg.replay.capacity < push) e->cfg.replay.capacity = push;
    VP_TRY(vp_api_backend(backend, &e->backend));
    VP_TRY(vp_train_data_load(&e->data, &e->cfg));
    const vp_train_data* d = &e->data;
    VP_TRY(vp_train_parts_make(&e->cfg, d->n_features, &e->parts));
    vp_span sp = {0, 0};
    VP_TRY(pick_span(d, span, &sp));
    VP_TRY(vp_algo_features_upload(e->backend, d, &e->feat_buf, &e->features));
    vp_env_market_desc md = {d->bars.n, d->bars.open, d->bars.high, d->bars.low, d->bars.close, d->atr,
                             sp.begin, sp.end, &e->features, d->bars.spread,
                             vp_instrument_spread(&e->parts.instrument), d->periods_per_year};
    VP_TRY(vp_env_market_init(&e->market, e->backend, &md));
    e->n = e->cfg.env.n_envs;
    e->K = e->cfg.model.window;
    e->F = d->n_features;
    vp_status s = vp_env_init(&e->env, e->backend, &e->market, &e->parts.instrument, &e->parts.env, e->n);
    if (s != VP_OK)
        return vp_error_context(s, "envs on the %s span (env.episode_bars %lld in %lld bars)", span ? span : "train",
                                (long long)e->cfg.env.episode_bars, (long long)vp_span_len(sp));
    VP_TRY(buffers_init(e));
    return vp_api_env_reset(e, -1);
}

int vp_api_env_open(const char* config, const char* const* overrides, int n_overrides, const char* span,
                    const char* backend, int64_t n_envs, vp_api_env** out) {
    VP_REQUIRE(out != NULL && (n_overrides == 0 || overrides != NULL) && n_overrides >= 0 && n_envs >= 0,
               VP_ERR_INVALID_ARG, "vp_api_env_open: out is NULL, or bad overrides or n_envs");
    *out = NULL;
    vp_api_env* e = (vp_api_env*)calloc(1, sizeof *e);
    VP_REQUIRE(e != NULL, VP_ERR_OOM, "opening envs: out of memory");
    vp_status s = env_setup(e, config, overrides, n_overrides, span, backend, n_envs);
    if (s != VP_OK) {
        vp_api_env_close(e);
        return s;
    }
    *out = e;
    return VP_OK;
}

void vp_api_env_close(vp_api_env* e) {
    if (!e) return;
    if (e->backend) {
        vp_arena_free(&e->arena);
        vp_env_free(&e->env);
        vp_env_market_free(&e->market);
        vp_buffer_free(e->backend, &e->feat_buf);
    }
    vp_train_data_free(&e->data);
    free(e->host_bar);
    free(e->host_rows);
    vp_backend_free(e->backend);
    free(e);
}

int vp_api_env_info(const vp_api_env* e, const char* name, int64_t* out) {
    VP_REQUIRE(e != NULL && name != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_api_env_info: NULL argument");
    const vp_action_layout l = vp_action_layout_env();
    const int cuda = vp_backend_get_kind(e->backend) == VP_BACKEND_CUDA;
    const struct {
        const char* name;
        int64_t value;
    } v[] = {
        {"n_envs", e->n}, {"window", e->K}, {"n_features", e->F}, {"n_portfolio", VP_ENV_PORTFOLIO},
        {"n_branches", l.n_branches}, {"branch_size0", l.size[0]}, {"branch_size1", l.size[1]},
        {"branch_size2", l.size[2]}, {"branch_size3", l.size[3]}, {"episode_bars", e->env.config.episode_bars},
        {"device", cuda}, {"device_id", 0}, {"span_begin", e->market.begin}, {"span_end", e->market.end},
        {"n_bars", e->market.n_bars},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; ++i)
        if (strcmp(name, v[i].name) == 0) {
            *out = v[i].value;
            return VP_OK;
        }
    VP_FAIL(VP_ERR_INVALID_ARG, "the envs have no value '%.60s' (vulpes/api.h lists them)", name);
}

void* vp_api_env_buffer(vp_api_env* e, const char* name, int* dtype, int* ndim, int64_t* shape) {
    if (!e || !name || !dtype || !ndim || !shape) {
        vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "vp_api_env_buffer: NULL argument");
        return NULL;
    }
    for (int i = 0; i <= BUF_COUNT; ++i)
        if (strcmp(name, i < BUF_COUNT ? BUF_NAMES[i] : "features") == 0) {
            const vp_tensor* t = i < BUF_COUNT ? &e->buf[i] : &e->features;
            *dtype = t->dtype == VP_I32 ? 1 : 0;
            *ndim = t->ndim;
            for (int k = 0; k < 3; ++k) shape[k] = k < t->ndim ? t->shape[k] : 1;
            return t->data;
        }
    vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE,
                 "the envs have no buffer '%.60s' (window, portfolio, bar, reward, done, actions, features)", name);
    return NULL;
}

int vp_api_env_reset(vp_api_env* e, int64_t seed) {
    VP_REQUIRE(e != NULL, VP_ERR_INVALID_ARG, "vp_api_env_reset: envs are NULL");
    if (seed >= 0) e->env.config.seed = (uint64_t)seed;
    VP_TRY(vp_env_reset(&e->env, &e->buf[BUF_BAR], &e->buf[BUF_PORTFOLIO]));
    VP_TRY(vp_fill(e->backend, &e->buf[BUF_REWARD], 0.0f));
    VP_TRY(vp_fill(e->backend, &e->buf[BUF_DONE], 0.0f));
    return gather_window(e);
}

int vp_api_env_step(vp_api_env* e) {
    VP_REQUIRE(e != NULL, VP_ERR_INVALID_ARG, "vp_api_env_step: envs are NULL");
    VP_TRY(vp_env_step(&e->env, &e->buf[BUF_ACTIONS], &e->buf[BUF_REWARD], &e->buf[BUF_DONE], &e->buf[BUF_BAR],
                       &e->buf[BUF_PORTFOLIO]));
    return gather_window(e);
}
