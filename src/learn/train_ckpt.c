/* What the algorithms' checkpoints share: a list of named tensors, metadata pairs with their
 * text, an integer read back, and the check that a resume continues the same run. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "learn/train_ckpt.h"
#include "vulpes/version.h"

vp_status vp_ckpt_list_init(vp_ckpt_list* l, int cap) {
    memset(l, 0, sizeof *l);
    l->items = (vp_ckpt_item*)calloc((size_t)cap, sizeof *l->items);
    l->names = (char(*)[VP_CKPT_NAME_MAX])calloc((size_t)cap, VP_CKPT_NAME_MAX);
    l->cap = cap;
    VP_REQUIRE(l->items && l->names, VP_ERR_OOM, "checkpoint: out of host memory for %d tensors", cap);
    return VP_OK;
}

void vp_ckpt_list_free(vp_ckpt_list* l) {
    free(l->items);
    free(l->names);
    memset(l, 0, sizeof *l);
}

void vp_ckpt_list_add(vp_ckpt_list* l, const char* prefix, const char* name, vp_tensor t) {
    if (l->n >= l->cap) return;
    snprintf(l->names[l->n], VP_CKPT_NAME_MAX, "%s%s", prefix, name);
    l->items[l->n].name = l->names[l->n];
    l->items[l->n].tensor = t;
    l->n++;
}

void vp_ckpt_meta_add(vp_ckpt_meta_list* ml, const char* key, const char* value) {
    if (ml->n >= VP_CKPT_META_MAX) return;
    ml->pairs[ml->n].key = key;
    ml->pairs[ml->n].value = value;
    ml->n++;
}

void vp_ckpt_meta_int(vp_ckpt_meta_list* ml, const char* key, int64_t v) {
    if (ml->n >= VP_CKPT_META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%" PRId64, v);
    vp_ckpt_meta_add(ml, key, ml->values[ml->n]);
}

void vp_ckpt_meta_u64(vp_ckpt_meta_list* ml, const char* key, uint64_t v) {
    if (ml->n >= VP_CKPT_META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%" PRIu64, v);
    vp_ckpt_meta_add(ml, key, ml->values[ml->n]);
}

void vp_ckpt_meta_num(vp_ckpt_meta_list* ml, const char* key, double v) {
    if (ml->n >= VP_CKPT_META_MAX) return;
    snprintf(ml->values[ml->n], sizeof ml->values[0], "%.17g", v);
    vp_ckpt_meta_add(ml, key, ml->values[ml->n]);
}

void vp_ckpt_meta_head(vp_ckpt_meta_list* ml, vp_ckpt_kind kind, const char* algo, const vp_backend* b,
                       const char* yaml, const vp_train_counters* c, int warmup, double best_val_sharpe,
                       int64_t best_iteration) {
    vp_ckpt_meta_add(ml, "format", "vulpes");
    vp_ckpt_meta_add(ml, "vulpes.kind", kind == VP_CKPT_RESUME ? "resume" : "best");
    if (algo) vp_ckpt_meta_add(ml, "vulpes.algo", algo);
    vp_ckpt_meta_add(ml, "vulpes.version", VP_VERSION_STRING);
    vp_ckpt_meta_add(ml, "vulpes.backend", vp_backend_name(b));
    vp_ckpt_meta_add(ml, "config", yaml);
    vp_ckpt_meta_int(ml, "vulpes.iteration", kind == VP_CKPT_RESUME ? c->iteration : best_iteration);
    if (warmup) vp_ckpt_meta_int(ml, "vulpes.warmup_steps", c->warmup_steps);
    vp_ckpt_meta_int(ml, "vulpes.collect_steps", c->collect_steps);
    vp_ckpt_meta_int(ml, "vulpes.env_steps", c->env_steps);
    vp_ckpt_meta_int(ml, "vulpes.learner_steps", c->learner_steps);
    vp_ckpt_meta_num(ml, "vulpes.best_val_sharpe", best_val_sharpe);
    vp_ckpt_meta_int(ml, "vulpes.best_iteration", best_iteration);
}

vp_status vp_ckpt_meta_read_int(const vp_checkpoint* ck, const char* key, int64_t* out) {
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

vp_status vp_ckpt_check_resume(const vp_checkpoint* ck, const char* path) {
    const char* kind = vp_checkpoint_meta(ck, "vulpes.kind");
    VP_REQUIRE(kind && strcmp(kind, "resume") == 0, VP_ERR_PARSE, "checkpoint %s is not a resume checkpoint "
               "(vulpes.kind '%s'; last.safetensors is)", path, kind ? kind : "(none)");
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
static vp_status check_data(const vp_config* cfg, const vp_train_data* d, const vp_checkpoint* ck, vp_config* old) {
    vp_data_record was, now;
    int present = 0;
    VP_TRY(vp_checkpoint_data(ck, &was, &present));
    if (!present) {
        // an older checkpoint: its data.path as written, or another spelling of the same file
        char* a = realpath(old->data.path, NULL);
        char* b = realpath(cfg->data.path, NULL);
        if (a && b && strcmp(a, b) == 0) snprintf(old->data.path, sizeof old->data.path, "%s", cfg->data.path);
        free(a);
        free(b);
        return VP_OK;
    }
    VP_TRY(vp_data_record_make(d, d->split.train, &now));
    if (was.kind == VP_DATA_GIVEN && now.kind == VP_DATA_GIVEN) return VP_OK; /* bars in memory: no identity */
    char a[700], b[700];
    VP_REQUIRE(vp_data_record_same(&was, &now), VP_ERR_INVALID_ARG,
               "cannot resume from %s: it was trained on %s, the run now reads %s: a resume continues on the same bars",
               vp_checkpoint_path(ck), vp_data_record_describe(&was, a, sizeof a),
               vp_data_record_describe(&now, b, sizeof b));
    snprintf(old->data.path, sizeof old->data.path, "%s", cfg->data.path);
    return VP_OK;
}

vp_status vp_ckpt_check_config(const vp_config* cfg, const vp_train_data* d, const vp_checkpoint* ck) {
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
        if (k) memcpy((char*)&old + k->offset, (const char*)cfg + k->offset, config_field_size(k));
    }
    VP_TRY(check_data(cfg, d, ck, &old));
    const vp_config_key* k = vp_config_diff(&old, cfg);
    if (k) {
        char was[VP_CONFIG_STR_MAX], now[VP_CONFIG_STR_MAX];
        VP_FAIL(VP_ERR_INVALID_ARG, "cannot resume from %s: %s was %s, the config now says %s (a resume continues "
                "the same run; only train.iterations, train.checkpoint_every, train.log_every and run.* may change)",
                vp_checkpoint_path(ck), k->name, vp_config_format_value(&old, k, was, sizeof was),
                vp_config_format_value(cfg, k, now, sizeof now));
    }
    return VP_OK;
}

vp_status vp_ckpt_meta_data(vp_ckpt_meta_list* ml, const vp_train_data* d, vp_ckpt_data_meta* dm) {
    vp_data_record rec;
    VP_TRY(vp_data_record_make(d, d->split.train, &rec));
    VP_TRY(vp_checkpoint_data_meta(&rec, dm));
    for (int i = 0; i < dm->n; ++i) vp_ckpt_meta_add(ml, dm->pairs[i].key, dm->pairs[i].value);
    return VP_OK;
}

vp_status vp_ckpt_meta_read_num(const vp_checkpoint* ck, const char* key, double* out) {
    const char* v = vp_checkpoint_meta(ck, key);
    *out = NAN;
    if (!v) return VP_OK;
    char* end = NULL;
    *out = strtod(v, &end);
    VP_REQUIRE(end != v && *end == '\0', VP_ERR_PARSE, "checkpoint %s: metadata '%s' = '%.40s' is not a number",
               vp_checkpoint_path(ck), key, v);
    return VP_OK;
}

vp_status vp_ckpt_env_host(int64_t n, vp_env_state* h) {
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

vp_status vp_ckpt_check_env(vp_env* e, vp_env_state* h) {
    // The env's own checks (the same bits go back), then each window a training episode.
    vp_status s = vp_env_state_get(e, h);
    if (s == VP_OK) s = vp_env_state_set(e, h);
    const int32_t eb = e->config.episode_bars;
    for (int64_t i = 0; s == VP_OK && i < e->n_envs; ++i) {
        const int64_t w = h->window_end[i], into = (int64_t)h->t[i] - (w - eb);
        if (into < 0 || into >= eb || w - eb < e->market->begin)
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "env %lld has t %d, window_end %d: a training window is "
                             "episode_bars %d long and starts at or after begin %lld, with t inside it", (long long)i,
                             (int)h->t[i], (int)w, (int)eb, (long long)e->market->begin);
    }
    if (s != VP_OK) {
        // A bad checkpoint is malformed input, whichever check found it.
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", vp_last_error());
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "tensor 'env.state': %s", msg);
    }
    return s;
}
