/* Checkpoints of a training run. last.safetensors (VP_CKPT_RESUME) holds every parameter
 * by name, the target parameters ("target."), the AdamW moments ("adam.m.", "adam.v.") and
 * step, the learner's statistics (and, with the signal bus on, its controls and signals), the
 * collection-step counter, the env state, the replay ring and (curiosity on) the forward
 * model's state as raw blocks, and the host counters, seeds and config as metadata: enough to
 * continue bit for bit. best.safetensors (VP_CKPT_BEST) holds the best parameters. Both
 * record the data trained on (vulpes.data.*: source, identity, bar interval, price scale). */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/dqn_check.h"
#include "learn/replay_impl.h"
#include "vulpes/checkpoint.h"
#include "vulpes/version.h"
#include "vulpes/dqn.h"

#define NAME_MAX_LEN VP_DQN_NAME_MAX
/* Metadata pairs a checkpoint writes at most. */
#define META_MAX (24 + VP_CKPT_DATA_KEYS)

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
    if (t->learner.cfg.popart) list_add(l, "", "learner.popart", t->learner.popart);
    // the signal bus: its EMAs and counters, and the controls its rules move (bus on only)
    if (vp_signals_bus_on(&t->learner.cfg.signals)) {
        list_add(l, "", "learner.controls", t->learner.ctl);
        list_add(l, "", "learner.signals", t->learner.signals);
    }
    list_add(l, "", "collect.step", t->collector.step);
    // The env state: its one allocation, as raw 32-bit words.
    const vp_env* e = &t->env;
    list_add(l, "", "env.state", vp_tensor_1d(e->storage.dev, VP_I32, e->storage.mem, (int64_t)(e->storage.bytes / 4)));
    vp_tensor rb;
    VP_TRY(replay_block(t, &rb));
    list_add(l, "", "replay.state", rb);
    // The forward model of curiosity: parameters, moments and step in one block, as raw words.
    if (t->curiosity) list_add(l, "", "curiosity.state", t->curiosity->state_words);
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
    // The data trained on: source, identity, bar interval and price scale of the training span.
    vp_data_record rec;
    vp_ckpt_data_meta dm;
    vp_status s = vp_data_record_make(t->data, t->data->split.train, &rec);
    if (s == VP_OK) s = vp_checkpoint_data_meta(&rec, &dm);
    if (s != VP_OK) {
        free(yaml);
        return vp_error_context(s, "writing checkpoint %s", path);
    }
    for (int i = 0; i < dm.n; ++i) meta_add(&ml, dm.pairs[i].key, dm.pairs[i].value);

    // Tensors: everything for a resume, the best parameters otherwise.
    item_list l;
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

/* The data of a resume: the bars the checkpoint recorded (same file content or synthetic
 * spec: a changed file is refused; bars given in memory are not compared); then data.path
 * may be spelt otherwise (a relative path from another folder, the file moved), so old's
 * takes the run's. An older checkpoint without the record allows another spelling of the
 * same file only (the relative path it recorded, read from the working directory). */
static vp_status check_data(const vp_trainer* t, const vp_checkpoint* ck, vp_config* old) {
    vp_data_record was, now;
    int present = 0;
    VP_TRY(vp_checkpoint_data(ck, &was, &present));
    if (!present) {
        // an older checkpoint: its data.path as written, or another spelling of the same file
        char* a = realpath(old->data.path, NULL);
        char* b = realpath(t->cfg.data.path, NULL);
        if (a && b && strcmp(a, b) == 0) snprintf(old->data.path, sizeof old->data.path, "%s", t->cfg.data.path);
        free(a);
        free(b);
        return VP_OK;
    }
    VP_TRY(vp_data_record_make(t->data, t->data->split.train, &now));
    if (was.kind == VP_DATA_GIVEN && now.kind == VP_DATA_GIVEN) return VP_OK; /* bars in memory: no identity */
    char a[700], b[700];
    VP_REQUIRE(vp_data_record_same(&was, &now), VP_ERR_INVALID_ARG,
               "cannot resume from %s: it was trained on %s, the run now reads %s: a resume continues on the same bars",
               vp_checkpoint_path(ck), vp_data_record_describe(&was, a, sizeof a),
               vp_data_record_describe(&now, b, sizeof b));
    snprintf(old->data.path, sizeof old->data.path, "%s", t->cfg.data.path);
    return VP_OK;
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
    VP_TRY(check_data(t, ck, &old));
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
    if (s == VP_OK && vp_signals_bus_on(&t->learner.cfg.signals)) {
        s = vp_checkpoint_allow_nonfinite(ck, "learner.signals");
        if (s == VP_OK) s = vp_checkpoint_allow_nonfinite(ck, "learner.controls");
    }

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
    if (s == VP_OK) s = vp_dqn_check_counters(t, path, &c, best_it, best_sh);

    // Tensors straight into the run's buffers, each checked before anything uses it.
    item_list l;
    memset(&l, 0, sizeof l);
    if (s == VP_OK) s = resume_items(t, &l);
    if (s == VP_OK) s = vp_checkpoint_read_all(t->backend, ck, l.items, l.n);
    if (s == VP_OK) s = vp_backend_sync(t->backend);
    if (s == VP_OK) s = vp_dqn_check_restored(t, path, &c);
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
