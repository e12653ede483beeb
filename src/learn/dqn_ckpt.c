/* Checkpoints of a training run. last.safetensors (VP_CKPT_RESUME) holds every parameter
 * by name, the target parameters ("target."), the AdamW moments ("adam.m.", "adam.v.") and
 * step, the learner's statistics, the collection-step counter, the env state and the
 * replay ring as raw blocks, and the host counters, seeds and config as metadata: enough
 * to continue bit for bit. best.safetensors (VP_CKPT_BEST) holds the best parameters. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/replay_impl.h"
#include "vulpes/checkpoint.h"
#include "vulpes/version.h"
#include "vulpes/dqn.h"

/* Longest tensor name a checkpoint makes. */
#define NAME_MAX_LEN 96
/* Metadata pairs a checkpoint writes at most. */
#define META_MAX 24

/* A list of checkpoint items with their names in one block. */
typedef struct item_list {
    vp_ckpt_item* items;          /* [cap] */
    char (*names)[NAME_MAX_LEN];  /* [cap] */
    int n, cap;                   /* used, reserved */
} item_list;

static vp_status list_init(item_list* l, int cap) {
    memset(l, 0, sizeof *l);
    l->items = (vp_ckpt_item*)calloc((size_t)cap, sizeof *l->items);
    l->names = (char(*)[NAME_MAX_LEN])calloc((size_t)cap, NAME_MAX_LEN);
    l->cap = cap;
    VP_REQUIRE(l->items && l->names, VP_ERR_OOM, "checkpoint: out of host memory for %d tensors", cap);
    return VP_OK;
}

static void list_free(item_list* l) {
    free(l->items);
    free(l->names);
    memset(l, 0, sizeof *l);
}

/* Appends PREFIX + name -> tensor. */
static void list_add(item_list* l, const char* prefix, const char* name, vp_tensor t) {
    if (l->n >= l->cap) return;
    snprintf(l->names[l->n], NAME_MAX_LEN, "%s%s", prefix, name);
    l->items[l->n].name = l->names[l->n];
    l->items[l->n].tensor = t;
    l->n++;
}

/* Every parameter of `flat` ([n_weights]) by its table name under `prefix`. */
static void add_params(item_list* l, const vp_model* m, const char* prefix, const vp_tensor* flat) {
    for (int i = 0; i < m->n_params; ++i) list_add(l, prefix, m->info[i].name, vp_model_param_view(m, flat, &m->info[i]));
}

/* The replay ring's whole block as one i32 view: it starts at the ring's first array
 * (bar_idx) and spans vp_replay_bytes; checked against every public field. */
static vp_status replay_block(const vp_trainer* t, vp_tensor* out) {
    vp_replay_fields f;
    VP_TRY(vp_replay_fields_get(t->replay, &f));
    const size_t bytes = vp_replay_bytes(vp_replay_get_cfg(t->replay));
    const char* base = (const char*)f.bar_idx.data;
    const vp_tensor* all[] = {&f.bar_idx, &f.next_bar_idx, &f.window_end, &f.portfolio, &f.next_portfolio,
                              &f.action,  &f.reward,       &f.discount,   &f.done,      &f.priority};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) {
        const char* p = (const char*)all[i]->data;
        VP_REQUIRE(p >= base && p + vp_tensor_bytes(all[i]) <= base + bytes, VP_ERR_STATE,
                   "checkpoint: the replay ring's layout is not one block starting at bar_idx");
    }
    VP_REQUIRE(bytes % 4 == 0, VP_ERR_STATE, "checkpoint: replay block of %zu bytes", bytes);
    *out = vp_tensor_1d((void*)base, VP_I32, f.bar_idx.mem, (int64_t)(bytes / 4));
    return VP_OK;
}

/* Every tensor of a resume checkpoint. */
static vp_status resume_items(vp_trainer* t, item_list* l) {
    const vp_model* m = &t->learner.model;
    VP_TRY(list_init(l, 4 * m->n_params + 8));
    add_params(l, m, "", &m->params);
    add_params(l, m, "target.", &t->learner.target);
    add_params(l, m, "adam.m.", &t->learner.adam_m);
    add_params(l, m, "adam.v.", &t->learner.adam_v);
    list_add(l, "", "adam.step", t->learner.step);
    list_add(l, "", "learner.stats", t->learner.stats);
    list_add(l, "", "collect.step", t->collector.step);
    // The env state: its one allocation, as raw 32-bit words.
    const vp_env* e = &t->env;
    list_add(l, "", "env.state", vp_tensor_1d(e->storage.dev, VP_I32, e->storage.mem, (int64_t)(e->storage.bytes / 4)));
    vp_tensor rb;
    VP_TRY(replay_block(t, &rb));
    list_add(l, "", "replay.state", rb);
    return VP_OK;
}

/* Metadata text buffers of one save. */
typedef struct meta_list {
    vp_ckpt_meta pairs[META_MAX];
    char values[META_MAX][64];
    int n;
} meta_list;

static void meta_add(meta_list* ml, const char* key, const char* value) {
    if (ml->n >= META_MAX) return;
    ml->pairs[ml->n].key = key;
    ml->pairs[ml->n].value = value;
    ml->n++;
}

static void meta_int(meta_list* ml, const char* key, int64_t v) {
    if (ml->n >= META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%" PRId64, v);
    meta_add(ml, key, ml->values[ml->n]);
}

static void meta_u64(meta_list* ml, const char* key, uint64_t v) {
    if (ml->n >= META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%" PRIu64, v);
    meta_add(ml, key, ml->values[ml->n]);
}

static void meta_num(meta_list* ml, const char* key, double v) {
    if (ml->n >= META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%.17g", v);
    meta_add(ml, key, ml->values[ml->n]);
}

vp_status vp_trainer_save(vp_trainer* t, const char* path, vp_ckpt_kind kind) {
    VP_REQUIRE(t != NULL && t->replay != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_trainer_save: NULL argument");
    VP_REQUIRE(kind >= 0 && kind < VP_CKPT_KIND_COUNT, VP_ERR_INVALID_ARG, "vp_trainer_save: bad kind %d", (int)kind);
    VP_TRY(vp_backend_sync(t->backend));
    char* yaml = NULL;
    VP_TRY(vp_config_to_yaml(&t->cfg, &yaml));

    // Metadata: what the file is, the config, counters, seeds and the best score.
    meta_list ml;
    memset(&ml, 0, sizeof ml);
    meta_add(&ml, "format", "vulpes");
    meta_add(&ml, "vulpes.kind", kind == VP_CKPT_RESUME ? "resume" : "best");
    meta_add(&ml, "vulpes.version", VP_VERSION_STRING);
    meta_add(&ml, "vulpes.backend", vp_backend_name(t->backend));
    meta_add(&ml, "config", yaml);
    meta_int(&ml, "vulpes.iteration", kind == VP_CKPT_RESUME ? t->count.iteration : t->best_iteration);
    meta_int(&ml, "vulpes.warmup_steps", t->count.warmup_steps);
    meta_int(&ml, "vulpes.collect_steps", t->count.collect_steps);
    meta_int(&ml, "vulpes.env_steps", t->count.env_steps);
    meta_int(&ml, "vulpes.learner_steps", t->count.learner_steps);
    meta_num(&ml, "vulpes.best_val_sharpe", t->best_val_sharpe);
    meta_int(&ml, "vulpes.best_iteration", t->best_iteration);
    meta_add(&ml, "vulpes.rng", "philox4x32-10; counters: adam.step (taus), collect.step (exploration), "
                                "env.state (episode starts), replay.state (sampling)");
    meta_u64(&ml, "vulpes.seed.learner", t->parts.learner.seed);
    meta_u64(&ml, "vulpes.seed.env", t->parts.env.seed);
    meta_u64(&ml, "vulpes.seed.replay", t->parts.replay.seed);
    meta_u64(&ml, "vulpes.seed.collect", t->parts.collect.seed);
    meta_add(&ml, "vulpes.replay", kind == VP_CKPT_RESUME ? "saved (replay.state)" : "not saved");

    // Tensors: everything for a resume, the best parameters otherwise.
    item_list l;
    vp_status s;
    if (kind == VP_CKPT_RESUME) {
        s = resume_items(t, &l);
    } else {
        s = list_init(&l, t->learner.model.n_params);
        if (s == VP_OK) add_params(&l, &t->learner.model, "", &t->best_params);
    }
    if (s == VP_OK) s = vp_checkpoint_save(t->backend, path, l.items, l.n, ml.pairs, ml.n);
    list_free(&l);
    free(yaml);
    return s;
}

/* Reads an int64 metadata value. */
static vp_status meta_read_int(const vp_checkpoint* ck, const char* key, int64_t* out) {
    const char* v = vp_checkpoint_meta(ck, key);
    char* end = NULL;
    VP_REQUIRE(v != NULL, VP_ERR_PARSE, "checkpoint %s has no metadata '%s'", vp_checkpoint_path(ck), key);
    errno = 0;
    long long x = strtoll(v, &end, 10);
    VP_REQUIRE(end != v && *end == '\0' && errno == 0, VP_ERR_PARSE,
               "checkpoint %s: metadata '%s' = '%.40s' is not an integer of 64 bits", vp_checkpoint_path(ck), key, v);
    *out = (int64_t)x;
    return VP_OK;
}

/* Bytes of a key's field in vp_config. */
static size_t config_field_size(const vp_config_key* k) {
    switch (k->kind) {
    case VP_CONFIG_INT: return sizeof(int64_t);
    case VP_CONFIG_FLOAT: return sizeof(double);
    case VP_CONFIG_BOOL: return sizeof(bool);
    case VP_CONFIG_STRING: return VP_CONFIG_STR_MAX;
    default: return sizeof(int);
    }
}

/* Checks the checkpoint's config against the run's: equal except the keys a resume may change. */
static vp_status check_config(const vp_trainer* t, const vp_checkpoint* ck) {
    static const char* may_change[] = {"train.iterations", "train.checkpoint_every", "train.log_every",
                                       "run.out", "run.name", "run.backend"};
    const char* yaml = vp_checkpoint_meta(ck, "config");
    VP_REQUIRE(yaml != NULL, VP_ERR_PARSE, "checkpoint %s has no config in its metadata", vp_checkpoint_path(ck));
    vp_config old;
    vp_config_defaults(&old);
    VP_TRY(vp_config_load_string(&old, yaml, vp_checkpoint_path(ck)));
    // Take the changeable keys from the new config, then any difference is an error.
    for (size_t i = 0; i < sizeof may_change / sizeof may_change[0]; ++i) {
        const vp_config_key* k = vp_config_find_key(may_change[i]);
        if (k) memcpy((char*)&old + k->offset, (const char*)&t->cfg + k->offset, config_field_size(k));
    }
    const vp_config_key* k = vp_config_diff(&old, &t->cfg);
    if (k) {
        char was[VP_CONFIG_STR_MAX], now[VP_CONFIG_STR_MAX];
        VP_FAIL(VP_ERR_INVALID_ARG, "cannot resume from %s: %s was %s, the config now says %s (a resume continues "
                "the same run; only train.iterations, train.checkpoint_every, train.log_every and run.* may change)",
                vp_checkpoint_path(ck), k->name, vp_config_format_value(&old, k, was, sizeof was),
                vp_config_format_value(&t->cfg, k, now, sizeof now));
    }
    return VP_OK;
}

/* ---- checks of a restored state: every value before anything uses it --------------------------- */

/* a * b + c into *out for a, b, c >= 0; 0 when it does not fit an int64. */
static int fits(int64_t a, int64_t b, int64_t c, int64_t* out) {
    if (b != 0 && a > (INT64_MAX - c) / b) return 0;
    *out = a * b + c;
    return 1;
}

/* The host counters (metadata): in range, and what the run's config makes of the iteration
 * count: ceil(warmup / E) warm-up steps, collect_steps and train_steps per iteration, E env
 * steps per collection step; the best iteration -1 (no Sharpe) or 0 .. iteration. */
static vp_status check_counters(const vp_trainer* t, const char* path, const vp_train_counters* c, int64_t best_it,
                                double best_sh) {
    const vp_config* g = &t->cfg;
    const int64_t E = g->env.n_envs, cs = g->train.collect_steps, ts = g->train.train_steps;
    const int64_t wu = (g->replay.warmup + E - 1) / E;
    // The largest iteration count whose counters all fit an int64.
    int64_t max_it = INT64_MAX / E - wu;
    if (cs > 0) max_it /= cs;
    if (ts > 0 && INT64_MAX / ts < max_it) max_it = INT64_MAX / ts;
    VP_REQUIRE(c->iteration >= 0 && c->iteration <= max_it, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.iteration = %lld (allowed 0 .. %lld)", path, (long long)c->iteration,
               (long long)max_it);
    VP_REQUIRE(c->warmup_steps == wu, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.warmup_steps = %lld, the config's replay.warmup %lld over %lld envs "
               "makes %lld", path, (long long)c->warmup_steps, (long long)g->replay.warmup, (long long)E, (long long)wu);
    int64_t want = 0;
    fits(c->iteration, cs, 0, &want);
    VP_REQUIRE(c->collect_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.collect_steps = %lld, but %lld iterations of train.collect_steps %lld "
               "make %lld", path, (long long)c->collect_steps, (long long)c->iteration, (long long)cs, (long long)want);
    fits(wu + want, E, 0, &want);
    VP_REQUIRE(c->env_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.env_steps = %lld, but (warm-up + collection steps) x %lld envs make %lld",
               path, (long long)c->env_steps, (long long)E, (long long)want);
    fits(c->iteration, ts, 0, &want);
    VP_REQUIRE(c->learner_steps == want, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.learner_steps = %lld, but %lld iterations of train.train_steps %lld "
               "make %lld", path, (long long)c->learner_steps, (long long)c->iteration, (long long)ts, (long long)want);
    VP_REQUIRE(best_it >= -1 && best_it <= c->iteration, VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.best_iteration = %lld (allowed -1 .. iteration %lld)", path,
               (long long)best_it, (long long)c->iteration);
    VP_REQUIRE((best_it == -1) == (isnan(best_sh) != 0), VP_ERR_PARSE,
               "checkpoint %s: metadata vulpes.best_val_sharpe = %g with vulpes.best_iteration %lld (NaN exactly when "
               "there is no best, -1)", path, best_sh, (long long)best_it);
    return VP_OK;
}

/* Downloads a tensor of backend memory into a fresh host copy (free it). */
static vp_status download_copy(vp_backend* b, const vp_tensor* src, void** out) {
    const size_t bytes = vp_tensor_bytes(src);
    *out = malloc(bytes ? bytes : 1);
    VP_REQUIRE(*out != NULL, VP_ERR_OOM, "checkpoint: out of host memory for %zu bytes", bytes);
    vp_status s = vp_download(b, *out, src, bytes);
    if (s != VP_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}

/* Every element of a restored f32 tensor is finite (and >= 0 when nonneg). */
static vp_status check_floats(vp_backend* b, const char* path, const char* name, const vp_tensor* x, int nonneg) {
    float* h = NULL;
    VP_TRY(download_copy(b, x, (void**)&h));
    const int64_t n = vp_tensor_numel(x);
    int64_t bad = -1;
    for (int64_t i = 0; i < n && bad < 0; ++i)
        if (!isfinite(h[i]) || (nonneg && h[i] < 0.0f)) bad = i;
    const double v = bad >= 0 ? (double)h[bad] : 0.0;
    free(h);
    VP_REQUIRE(bad < 0, VP_ERR_PARSE, "checkpoint %s: tensor '%s' has %g at element %lld (must be finite%s)", path,
               name, v, (long long)bad, nonneg ? " and >= 0" : "");
    return VP_OK;
}

/* Parameters, target and moments: finite, the second moment >= 0. */
static vp_status check_params(vp_trainer* t, const char* path) {
    const vp_model* m = &t->learner.model;
    static const char* prefix[4] = {"", "target.", "adam.m.", "adam.v."};
    const vp_tensor* flat[4] = {&m->params, &t->learner.target, &t->learner.adam_m, &t->learner.adam_v};
    for (int k = 0; k < 4; ++k)
        for (int i = 0; i < m->n_params; ++i) {
            char name[NAME_MAX_LEN];
            snprintf(name, sizeof name, "%s%s", prefix[k], m->info[i].name);
            vp_tensor v = vp_model_param_view(m, flat[k], &m->info[i]);
            VP_TRY(check_floats(t->backend, path, name, &v, k == 3));
        }
    return VP_OK;
}

/* The device counters and statistics against the host counters: adam.step = learner steps (held
 * at INT32_MAX), collect.step = policy collection steps, learner.stats' NaN-step count an
 * integer in 0 .. learner steps and its NaN flag 0 or 1. */
static vp_status check_steps(vp_trainer* t, const char* path, const vp_train_counters* c) {
    int32_t adam = 0;
    int64_t collect = 0;
    float st[VP_STAT_COUNT];
    VP_TRY(vp_download(t->backend, &adam, &t->learner.step, sizeof adam));
    VP_TRY(vp_download(t->backend, &collect, &t->collector.step, sizeof collect));
    // The statistics block is mapped memory: read in place (the load has synchronised).
    memcpy(st, t->learner.stats_host, sizeof st);
    const int64_t want = c->learner_steps < INT32_MAX ? c->learner_steps : INT32_MAX;
    VP_REQUIRE(adam == want, VP_ERR_PARSE,
               "checkpoint %s: tensor 'adam.step' = %d, but vulpes.learner_steps = %lld (must be %lld)", path, (int)adam,
               (long long)c->learner_steps, (long long)want);
    VP_REQUIRE(collect == c->collect_steps, VP_ERR_PARSE,
               "checkpoint %s: tensor 'collect.step' = %lld, but vulpes.collect_steps = %lld (must be equal)", path,
               (long long)collect, (long long)c->collect_steps);
    const float nan_steps = st[VP_STAT_NAN_STEPS], flag = st[VP_STAT_NAN];
    VP_REQUIRE(nan_steps >= 0.0f && (double)nan_steps <= (double)c->learner_steps && nan_steps == floorf(nan_steps),
               VP_ERR_PARSE, "checkpoint %s: tensor 'learner.stats' has nan_steps %g (allowed an integer 0 .. "
               "learner steps %lld)", path, (double)nan_steps, (long long)c->learner_steps);
    VP_REQUIRE(flag == 0.0f || flag == 1.0f, VP_ERR_PARSE,
               "checkpoint %s: tensor 'learner.stats' has NaN flag %g (allowed 0 or 1)", path, (double)flag);
    return VP_OK;
}

/* Host arrays of n envs' state in one block (free .t). */
static vp_status env_host(int64_t n, vp_env_state* h) {
    const size_t N = (size_t)n;
    char* p = (char*)malloc(N * (4 * sizeof(int32_t) + sizeof(uint32_t) + 6 * sizeof(double) + sizeof(float)));
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "checkpoint: out of host memory for %lld env states", (long long)n);
    // Doubles first, so every array is aligned.
    double* d = (double*)(void*)p;
    h->cash = d, h->equity = d + N, h->peak = d + 2 * N, h->entry = d + 3 * N, h->take_profit = d + 4 * N;
    h->stop_loss = d + 5 * N;
    int32_t* i = (int32_t*)(void*)(d + 6 * N);
    h->t = i, h->window_end = i + N, h->position = i + 2 * N, h->bars_held = i + 3 * N;
    h->episode = (uint32_t*)(void*)(i + 4 * N);
    h->last_size = (float*)(void*)(i + 5 * N);
    return VP_OK;
}

/* The env state (the env's own checks, then each window a training episode: episode_bars long,
 * t inside it) and the replay ring (its own checks, and the pending steps of each env). */
static vp_status check_env_replay(vp_trainer* t, const vp_train_counters* c) {
    vp_env* e = &t->env;
    vp_env_state h;
    VP_TRY(env_host(e->n_envs, &h));
    void* block = (void*)h.cash;
    // The env's own checks (the same bits go back), then each window a training episode.
    vp_status s = vp_env_state_get(e, &h);
    if (s == VP_OK) s = vp_env_state_set(e, &h);
    const int32_t eb = e->config.episode_bars;
    for (int64_t i = 0; s == VP_OK && i < e->n_envs; ++i) {
        const int64_t w = h.window_end[i], into = (int64_t)h.t[i] - (w - eb);
        if (into < 0 || into >= eb || w - eb < e->market->begin)
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "env %lld has t %d, window_end %d: a training window is "
                             "episode_bars %d long and starts at or after begin %lld, with t inside it", (long long)i,
                             (int)h.t[i], (int)w, (int)eb, (long long)e->market->begin);
    }
    if (s != VP_OK) {
        // A bad checkpoint is malformed input, whichever check found it.
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", vp_last_error());
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "tensor 'env.state': %s", msg);
    }
    if (s == VP_OK) {
        const vp_action_layout lay = vp_action_layout_env();
        vp_replay_expect x = {t->market.begin, t->market.end, lay.size, c->warmup_steps + c->collect_steps,
                              c->learner_steps, h.t, h.window_end, eb};
        s = vp_replay_check_state(t->replay, &x);
        if (s != VP_OK) s = vp_error_context(s, "tensor 'replay.state'");
    }
    free(block);
    return s;
}

/* Every restored tensor against its invariants and the host counters. */
static vp_status check_restored(vp_trainer* t, const char* path, const vp_train_counters* c) {
    VP_TRY(check_steps(t, path, c));
    vp_status s = check_env_replay(t, c);
    if (s != VP_OK) return vp_error_context(s, "checkpoint %s", path);
    return check_params(t, path);
}

/* A refused load (any error) leaves the trainer's tensors partly overwritten: free it or load
 * again. Nothing restored is used (the collector's observation) before every check passed. */
vp_status vp_trainer_load(vp_trainer* t, const char* path) {
    VP_REQUIRE(t != NULL && t->replay != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_trainer_load: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* kind = vp_checkpoint_meta(ck, "vulpes.kind");
    vp_status s = (kind && strcmp(kind, "resume") == 0)
                      ? VP_OK
                      : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s is not a resume checkpoint (vulpes.kind "
                                     "'%s'; last.safetensors is)", path, kind ? kind : "(none)");
    if (s == VP_OK) s = check_config(t, ck);
    if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "learner.stats");

    // The host counters, checked before any tensor is read.
    vp_train_counters c;
    memset(&c, 0, sizeof c);
    int64_t best_it = -1;
    double best_sh = NAN;
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.iteration", &c.iteration);
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.warmup_steps", &c.warmup_steps);
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.collect_steps", &c.collect_steps);
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.env_steps", &c.env_steps);
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.learner_steps", &c.learner_steps);
    if (s == VP_OK) s = meta_read_int(ck, "vulpes.best_iteration", &best_it);
    const char* bs = vp_checkpoint_meta(ck, "vulpes.best_val_sharpe");
    if (s == VP_OK && bs) {
        char* end = NULL;
        best_sh = strtod(bs, &end);
        if (end == bs || *end != '\0')
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s: metadata 'vulpes.best_val_sharpe' = '%.40s' is "
                             "not a number", path, bs);
    }
    if (s == VP_OK) s = check_counters(t, path, &c, best_it, best_sh);

    // Tensors straight into the run's buffers, each checked before anything uses it.
    item_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) s = check_restored(t, path, &c);
    if (s == VP_OK) {
        t->count = c;
        t->best_iteration = best_it;
        t->best_val_sharpe = best_sh;
        // The collector's current observation from the restored env state.
        s = vp_collector_observe(&t->collector);
    }
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_dqn_read_params(vp_backend* b, const vp_model* m, const char* path, vp_tensor* dst) {
    VP_REQUIRE(b != NULL && m != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG,
               "vp_dqn_read_params: NULL argument");
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    item_list l;
    vp_status s = list_init(&l, m->n_params);
    if (s == VP_OK) {
        add_params(&l, m, "", dst);
        s = vp_checkpoint_read_all(b, ck, l.items, l.n);
    }
    list_free(&l);
    vp_checkpoint_close(ck);
    return s;
}

vp_status vp_trainer_load_params(vp_trainer* t, const char* path, vp_tensor* dst) {
    VP_REQUIRE(t != NULL && path != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_trainer_load_params: NULL argument");
    return vp_dqn_read_params(t->backend, &t->learner.model, path, dst);
}
