/* The configuration key table (generated from config.h's X-macros), key lookup, the
 * nearest-key suggestion, defaults, value formatting and comparison. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_impl.h"
#include "vulpes/ops.h"

/* run.precision's values are vp_precision's, in the same order. */
_Static_assert((int)VP_RUN_PRECISION_FP32 == (int)VP_PREC_FP32 && (int)VP_RUN_PRECISION_TF32 == (int)VP_PREC_TF32 &&
                   (int)VP_RUN_PRECISION_BF16 == (int)VP_PREC_BF16 && (int)VP_RUN_PRECISION_COUNT == (int)VP_PREC_COUNT,
               "run.precision must list vp_precision's values in order");

/* ---- the table ---------------------------------------------------------------------------- */

#define VP_CFG_DEFNUM_INT(d) (double)(d)
#define VP_CFG_DEFNUM_FLOAT(d) (double)(d)
#define VP_CFG_DEFNUM_BOOL(d) ((d) ? 1.0 : 0.0)
#define VP_CFG_DEFNUM_STRING(d) 0.0
#define VP_CFG_DEFNUM_ENUM(d) 0.0
#define VP_CFG_DEFSTR_INT(d) NULL
#define VP_CFG_DEFSTR_FLOAT(d) NULL
#define VP_CFG_DEFSTR_BOOL(d) NULL
#define VP_CFG_DEFSTR_STRING(d) d
#define VP_CFG_DEFSTR_ENUM(d) d

#define VP_CFG_ROW_(sec, name, kind, def, lo, hi, bounds, values, doc)                         \
    {#sec "." #name, VP_CONFIG_##kind, offsetof(vp_config, sec.name), VP_CFG_DEFNUM_##kind(def), \
     VP_CFG_DEFSTR_##kind(def), (double)(lo), (double)(hi), bounds, values, doc},
#define VP_CFG_SECTION_ROWS_(sec) VP_CFG_KEYS_##sec(VP_CFG_ROW_)

static const vp_config_key KEYS[] = {VP_CONFIG_SECTIONS(VP_CFG_SECTION_ROWS_)};

#define N_KEYS ((int)(sizeof KEYS / sizeof KEYS[0]))

int vp_config_key_count(void) { return N_KEYS; }

const vp_config_key* vp_config_key_at(int i) { return (i >= 0 && i < N_KEYS) ? &KEYS[i] : NULL; }

int vp_cfg_key_index(const vp_config_key* k) { return (int)(k - KEYS); }

const vp_config_key* vp_config_find_key(const char* name) {
    if (!name) return NULL;
    for (int i = 0; i < N_KEYS; ++i)
        if (strcmp(KEYS[i].name, name) == 0) return &KEYS[i];
    return NULL;
}

int vp_cfg_is_section(const char* prefix) {
    size_t n = strlen(prefix);
    for (int i = 0; i < N_KEYS; ++i)
        if (strncmp(KEYS[i].name, prefix, n) == 0 && KEYS[i].name[n] == '.') return 1;
    return 0;
}

int vp_cfg_max_parts(void) {
    int most = 0;
    for (int i = 0; i < N_KEYS; ++i) {
        int parts = 1;
        for (const char* p = KEYS[i].name; *p; ++p) parts += *p == '.';
        if (parts > most) most = parts;
    }
    return most;
}

/* ---- nearest key ---------------------------------------------------------------------------- */

/* Levenshtein distance between a and b (each read up to 127 characters). */
static int edit_distance(const char* a, const char* b) {
    enum { MAXLEN = 127 };
    int na = (int)strlen(a), nb = (int)strlen(b);
    na = na < MAXLEN ? na : MAXLEN;
    nb = nb < MAXLEN ? nb : MAXLEN;
    int prev[MAXLEN + 1], cur[MAXLEN + 1];
    for (int j = 0; j <= nb; ++j) prev[j] = j;
    for (int i = 1; i <= na; ++i) {
        cur[0] = i;
        for (int j = 1; j <= nb; ++j) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(nb + 1));
    }
    return prev[nb];
}

/* The part after the last '.'. */
static const char* leaf_of(const char* name) {
    const char* dot = strrchr(name, '.');
    return dot ? dot + 1 : name;
}

/* Names other trainers use for a key (the last part of the unknown name), each with ours. */
static const char* const ALIASES[][2] = {
    {"learning_rate", "learn.lr"},       {"lr_rate", "learn.lr"},
    {"batch_size", "learn.batch"},       {"minibatch_size", "learn.batch"},
    {"epochs", "train.iterations"},      {"n_epochs", "train.iterations"},
    {"num_iterations", "train.iterations"}, {"discount", "learn.gamma"},
    {"discount_factor", "learn.gamma"},  {"max_grad_norm", "learn.clip_norm"},
    {"grad_clip", "learn.clip_norm"},    {"clip_grad_norm", "learn.clip_norm"},
    {"buffer_size", "replay.capacity"},  {"replay_size", "replay.capacity"},
    {"memory_size", "replay.capacity"},  {"num_envs", "env.n_envs"},
    {"n_steps", "learn.n_step"},         {"nstep", "learn.n_step"},
    {"hidden_size", "model.hidden"},     {"hidden_dim", "model.hidden"},
    {"episode_length", "env.episode_bars"}, {"slippage", "instrument.slippage_ticks"},
    {"tick", "instrument.tick_size"},    {"device", "run.backend"},
    {"use_mamba", "model.encoder"},
};

/* The initials of a snake_case name ("learning_rate": "lr") into buf[cap]. */
static const char* initials(const char* s, char* buf, size_t cap) {
    size_t n = 0;
    for (const char* p = s; *p && n + 1 < cap; ++p)
        if (p == s || p[-1] == '_') buf[n++] = *p;
    buf[n] = '\0';
    return buf;
}

const vp_config_key* vp_config_nearest_key(const char* name) {
    // a key's own name is its nearest (ppo.epochs, whatever "epochs" means to other trainers)
    const vp_config_key* own = vp_config_find_key(name);
    if (own) return own;
    // a name other trainers use: our key for it
    const char* want = leaf_of(name);
    for (size_t i = 0; i < sizeof ALIASES / sizeof ALIASES[0]; ++i)
        if (strcmp(want, ALIASES[i][0]) == 0) {
            const vp_config_key* k = vp_config_find_key(ALIASES[i][1]);
            if (k) return k;
        }
    const vp_config_key* best = &KEYS[0];
    int best_score = 1 << 30;
    char ini[64];
    const int abbrev = strchr(want, '_') != NULL;
    for (int i = 0; i < N_KEYS; ++i) {
        // the whole name, or the last part put under another section (one edit more), or the
        // last part abbreviated to its initials as the key is ("learning_rate": "lr")
        int whole = edit_distance(name, KEYS[i].name);
        int leaf = edit_distance(want, leaf_of(KEYS[i].name)) + 1;
        int score = whole < leaf ? whole : leaf;
        if (abbrev && strcmp(initials(want, ini, sizeof ini), leaf_of(KEYS[i].name)) == 0) score = 1;
        if (score < best_score) {
            best_score = score;
            best = &KEYS[i];
        }
    }
    return best;
}

const char* vp_config_enum_name(const vp_config_key* k, int index, char* buf, size_t n) {
    buf[0] = '\0';
    if (!k || !k->values || index < 0 || n == 0) return buf;
    // walk to the index-th '|'-separated value
    const char* p = k->values;
    for (int i = 0; i < index; ++i) {
        p = strchr(p, '|');
        if (!p) return buf;
        ++p;
    }
    size_t len = strcspn(p, "|");
    if (len >= n) len = n - 1;
    memcpy(buf, p, len);
    buf[len] = '\0';
    return buf;
}

/* ---- values --------------------------------------------------------------------------------- */

/* Index of the ENUM value `name` of key `k`, -1 when it is not one. */
static int enum_index(const vp_config_key* k, const char* name) {
    char v[64];
    for (int i = 0;; ++i) {
        vp_config_enum_name(k, i, v, sizeof v);
        if (!v[0]) return -1;
        if (strcmp(v, name) == 0) return i;
    }
}

void vp_config_defaults(vp_config* cfg) {
    memset(cfg, 0, sizeof *cfg);
    for (int i = 0; i < N_KEYS; ++i) {
        const vp_config_key* k = &KEYS[i];
        void* f = vp_cfg_field(cfg, k);
        switch (k->kind) {
        case VP_CONFIG_INT: *(int64_t*)f = (int64_t)k->def_num; break;
        case VP_CONFIG_FLOAT: *(double*)f = k->def_num; break;
        case VP_CONFIG_BOOL: *(bool*)f = k->def_num != 0.0; break;
        case VP_CONFIG_STRING: snprintf((char*)f, VP_CONFIG_STR_MAX, "%s", k->def_str); break;
        case VP_CONFIG_ENUM: *(int*)f = enum_index(k, k->def_str); break;
        default: break;
        }
    }
}

const char* vp_cfg_format_double(double v, char* buf, size_t n) {
    // infinities and NaN in YAML spelling
    if (isnan(v) || isinf(v)) {
        snprintf(buf, n, "%s", isnan(v) ? ".nan" : v > 0 ? ".inf" : "-.inf");
        return buf;
    }
    // the shortest %g that reads back exactly
    char tmp[64];
    for (int prec = 1; prec <= 17; ++prec) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    // positional notation for whole-ish numbers that %g put in exponent form (1e+01 -> 10)
    char* e = strchr(tmp, 'e');
    if (e) {
        int prec = 0, exp10 = (int)strtol(e + 1, NULL, 10);
        for (const char* q = tmp; q < e; ++q) prec += *q >= '0' && *q <= '9';
        if (exp10 >= 0 && exp10 < 17) {
            snprintf(tmp, sizeof tmp, "%.*f", prec - 1 > exp10 ? prec - 1 - exp10 : 0, v);
            e = NULL;
        }
    }
    // a '.' before any exponent, so YAML 1.1 readers see a float too ("1.0e-05", "10.0")
    if (!strchr(tmp, '.')) {
        if (e) {
            char mant[64];
            snprintf(mant, sizeof mant, "%.*s", (int)(e - tmp), tmp);
            snprintf(buf, n, "%s.0%s", mant, e);
            return buf;
        }
        snprintf(buf, n, "%s.0", tmp);
        return buf;
    }
    snprintf(buf, n, "%s", tmp);
    return buf;
}

const char* vp_config_format_value(const vp_config* cfg, const vp_config_key* k, char* buf, size_t n) {
    const void* f = vp_cfg_cfield(cfg, k);
    switch (k->kind) {
    case VP_CONFIG_INT: snprintf(buf, n, "%lld", (long long)*(const int64_t*)f); break;
    case VP_CONFIG_FLOAT: vp_cfg_format_double(*(const double*)f, buf, n); break;
    case VP_CONFIG_BOOL: snprintf(buf, n, "%s", *(const bool*)f ? "true" : "false"); break;
    case VP_CONFIG_STRING: snprintf(buf, n, "%s", (const char*)f); break;
    case VP_CONFIG_ENUM: vp_config_enum_name(k, *(const int*)f, buf, n); break;
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}

const vp_config_key* vp_config_diff(const vp_config* a, const vp_config* b) {
    for (int i = 0; i < N_KEYS; ++i) {
        const vp_config_key* k = &KEYS[i];
        const void *fa = vp_cfg_cfield(a, k), *fb = vp_cfg_cfield(b, k);
        int same = 1;
        switch (k->kind) {
        case VP_CONFIG_INT: same = *(const int64_t*)fa == *(const int64_t*)fb; break;
        case VP_CONFIG_FLOAT: same = *(const double*)fa == *(const double*)fb; break;
        case VP_CONFIG_BOOL: same = *(const bool*)fa == *(const bool*)fb; break;
        case VP_CONFIG_STRING: same = strcmp((const char*)fa, (const char*)fb) == 0; break;
        case VP_CONFIG_ENUM: same = *(const int*)fa == *(const int*)fb; break;
        default: break;
        }
        if (!same) return k;
    }
    return NULL;
}
