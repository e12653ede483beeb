/* Reading one value: YAML plain scalars into typed fields with type and range checks,
 * `key=value` overrides, and the rules that tie keys together. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/config_impl.h"

/* ---- describing what a key accepts ------------------------------------------------------ */

const char* vp_cfg_range(const vp_config_key* k, char* buf, size_t n) {
    buf[0] = '\0';
    if (k->kind != VP_CONFIG_INT && k->kind != VP_CONFIG_FLOAT) return buf;
    char lo[48], hi[48];
    if (isinf(k->lo)) snprintf(lo, sizeof lo, "-inf");
    else snprintf(lo, sizeof lo, "%.10g", k->lo);
    if (isinf(k->hi)) snprintf(hi, sizeof hi, "inf");
    else snprintf(hi, sizeof hi, "%.10g", k->hi);
    snprintf(buf, n, "%c%s, %s%c", isinf(k->lo) ? '(' : k->bounds[0], lo, hi,
             isinf(k->hi) ? ')' : k->bounds[1]);
    return buf;
}

const char* vp_cfg_describe(const vp_config_key* k, char* buf, size_t n) {
    const char* noun = k->kind == VP_CONFIG_INT ? "an integer" : "a number";
    char range[112];
    switch (k->kind) {
    case VP_CONFIG_INT:
    case VP_CONFIG_FLOAT:
        // one open end reads as a comparison, two finite ends as an interval
        if (isinf(k->lo) && isinf(k->hi)) snprintf(buf, n, "%s", noun);
        else if (isinf(k->hi)) snprintf(buf, n, "%s %s %.10g", noun, k->bounds[0] == '[' ? ">=" : ">", k->lo);
        else if (isinf(k->lo)) snprintf(buf, n, "%s %s %.10g", noun, k->bounds[1] == ']' ? "<=" : "<", k->hi);
        else snprintf(buf, n, "%s in %s", noun, vp_cfg_range(k, range, sizeof range));
        break;
    case VP_CONFIG_BOOL: snprintf(buf, n, "true or false"); break;
    case VP_CONFIG_STRING: snprintf(buf, n, "a string of at most %d bytes", VP_CONFIG_STR_MAX - 1); break;
    case VP_CONFIG_ENUM: {
        // "one of a, b, c"
        size_t len = (size_t)snprintf(buf, n, "one of ");
        char v[64];
        for (int i = 0; vp_config_enum_name(k, i, v, sizeof v)[0] && len < n; ++i)
            len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", v);
        break;
    }
    default: snprintf(buf, n, "?"); break;
    }
    return buf;
}

/* Whether v lies in key k's range (infinities never do). */
static int in_range(const vp_config_key* k, double v) {
    if (!isfinite(v)) return 0;
    int lo_ok = k->bounds[0] == '[' ? v >= k->lo : v > k->lo;
    int hi_ok = k->bounds[1] == ']' ? v <= k->hi : v < k->hi;
    if (isinf(k->lo)) lo_ok = 1;
    if (isinf(k->hi)) hi_ok = 1;
    return lo_ok && hi_ok;
}

/* ---- integer bounds -------------------------------------------------------------------------- */

/* Keys that hold a 64-bit quantity rather than a count: they take any int64 in their range. */
static const char* const WIDE_KEYS[] = {"run.seed"};

/* The int64 values INT key `k` takes: its table range, with an open upper end meaning
 * VP_CONFIG_INT_MAX (INT64_MAX for the wide keys). */
static void int_bounds(const vp_config_key* k, int64_t* lo, int64_t* hi) {
    int wide = 0;
    for (size_t i = 0; i < sizeof WIDE_KEYS / sizeof WIDE_KEYS[0]; ++i) wide |= strcmp(k->name, WIDE_KEYS[i]) == 0;
    const int64_t top = wide ? INT64_MAX : VP_CONFIG_INT_MAX;
    *lo = isinf(k->lo) ? -top : (int64_t)k->lo + (k->bounds[0] == '(');
    *hi = isinf(k->hi) || k->hi >= (double)top ? top : (int64_t)k->hi - (k->bounds[1] == ')');
}

/* ---- parsing scalars ------------------------------------------------------------------------ */

/* What parse_int made of a text. */
typedef enum int_parse {
    INT_BAD = 0, /* not an integer */
    INT_OK,      /* an integer, in *out */
    INT_HUGE     /* an integer beyond int64 */
} int_parse;

/* Reads the digits at *p into dig (digits only, '_' allowed between two digits when `seps`)
 * and advances *p; returns how many digits it read. */
static size_t read_digits(const char** p, char* dig, size_t* n, int seps) {
    size_t got = 0;
    const char* q = *p;
    for (;; ++q) {
        if (isdigit((unsigned char)*q)) dig[(*n)++] = *q, ++got;
        else if (seps && *q == '_' && got && isdigit((unsigned char)q[1])) continue;
        else break;
    }
    *p = q;
    return got;
}

/* Parses a decimal YAML integer exactly: "42", "-3", "1_000_000", or an integral number
 * in decimal notation such as "1e6" or "2.50e1". Hex, octal and binary forms, leading
 * zeros ("010", an octal 8 to YAML 1.1), and fractions are not integers. */
static int_parse parse_int(const char* s, int64_t* out) {
    const char* p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (p[0] == '0' && (isdigit((unsigned char)p[1]) || p[1] == '_')) return INT_BAD;
    // the digits of the integer part and of the fraction, then the exponent
    size_t cap = strlen(p) + 1, n = 0;
    char* dig = (char*)malloc(cap);
    if (!dig) return INT_BAD;
    int_parse r = INT_BAD;
    long long nfrac = 0, exp10 = 0;
    if (read_digits(&p, dig, &n, 1) == 0) goto done;
    if (*p == '.') {
        ++p;
        nfrac = (long long)read_digits(&p, dig, &n, 1);
    }
    if (*p == 'e' || *p == 'E') {
        ++p;
        int eneg = 0;
        if (*p == '+' || *p == '-') eneg = *p++ == '-';
        if (!isdigit((unsigned char)*p)) goto done;
        for (; isdigit((unsigned char)*p); ++p)
            if (exp10 < 1000000) exp10 = exp10 * 10 + (*p - '0');
        if (eneg) exp10 = -exp10;
    }
    if (*p != '\0') goto done;
    // value = digits x 10^(exp10 - nfrac): drop leading zeros, then the zeros a negative shift removes
    size_t lead = 0;
    while (lead < n && dig[lead] == '0') ++lead;
    long long len = (long long)(n - lead), shift = exp10 - nfrac;
    if (len == 0) {
        *out = 0;
        r = INT_OK;
        goto done;
    }
    for (; shift < 0 && len > 0 && dig[lead + (size_t)len - 1] == '0'; ++shift) --len;
    if (shift < 0) goto done;  // a fraction remains
    if (len + shift > 19) {
        r = INT_HUGE;
        goto done;
    }
    // at most 19 digits: exact in uint64
    uint64_t v = 0;
    for (long long i = 0; i < len; ++i) v = v * 10 + (uint64_t)(dig[lead + (size_t)i] - '0');
    for (long long i = 0; i < shift; ++i) v *= 10;
    if (v > (uint64_t)INT64_MAX + (uint64_t)neg) {
        r = INT_HUGE;
        goto done;
    }
    *out = neg ? (int64_t)(0 - v) : (int64_t)v;
    r = INT_OK;
done:
    free(dig);
    return r;
}

/* Parses a decimal YAML float ("1e-4", "-2", "0.5", ".inf"); NaN, hex floats and other
 * strtod spellings ("inf", "0x1p3") are refused. */
static int parse_float(const char* s, double* out) {
    const char* p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (strcmp(p, ".inf") == 0 || strcmp(p, ".Inf") == 0 || strcmp(p, ".INF") == 0) {
        *out = neg ? -INFINITY : INFINITY;
        return 1;
    }
    // digits [. digits] or . digits, then an optional exponent
    size_t before = strspn(p, "0123456789");
    p += before;
    size_t after = 0;
    if (*p == '.') {
        after = strspn(p + 1, "0123456789");
        p += 1 + after;
    }
    if (before + after == 0) return 0;
    if (*p == 'e' || *p == 'E') {
        ++p;
        if (*p == '+' || *p == '-') ++p;
        size_t e = strspn(p, "0123456789");
        if (e == 0) return 0;
        p += e;
    }
    if (*p != '\0') return 0;
    *out = strtod(s, NULL);
    return 1;
}

/* Parses a YAML boolean (true/false, yes/no, on/off, 1/0; any case). */
static int parse_bool(const char* s, bool* out) {
    static const char* yes[] = {"true", "yes", "on", "1"};
    static const char* no[] = {"false", "no", "off", "0"};
    for (int i = 0; i < 4; ++i) {
        if (strcasecmp(s, yes[i]) == 0) return *out = true, 1;
        if (strcasecmp(s, no[i]) == 0) return *out = false, 1;
    }
    return 0;
}

/* ---- text ------------------------------------------------------------------------------------ */

int vp_cfg_utf8_next(const unsigned char* s, size_t n, uint32_t* cp) {
    if (n == 0) return 0;
    unsigned c = s[0];
    if (c < 0x80) return *cp = c, 1;
    // the length from the lead byte, and the smallest code point of that length
    int len = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
    static const uint32_t least[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (len == 0 || (size_t)len > n) return 0;
    uint32_t v = c & (0xffu >> (len + 1));
    for (int i = 1; i < len; ++i) {
        if ((s[i] & 0xc0) != 0x80) return 0;
        v = (v << 6) | (s[i] & 0x3fu);
    }
    if (v < least[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

vp_status vp_cfg_check_text(const vp_config_key* k, const char* text, size_t n, const char* source) {
    const unsigned char* s = (const unsigned char*)text;
    for (size_t i = 0; i < n;) {
        uint32_t cp = 0;
        int len = vp_cfg_utf8_next(s + i, n - i, &cp);
        if (s[i] == 0)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: holds a NUL character (offset %zu); a value is text without NULs",
                    source, k->name, i);
        if (len == 0)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: not valid UTF-8 (byte 0x%02x at offset %zu); a config value must be "
                    "UTF-8 text", source, k->name, s[i], i);
        // code points that YAML reads as a line break or refuses, so a written config.yaml would not load
        if ((cp >= 0x80 && cp <= 0x9f) || cp == 0x2028 || cp == 0x2029 || cp == 0xfeff || cp == 0xfffe || cp == 0xffff)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: holds U+%04X, a character a config file cannot hold (offset %zu)",
                    source, k->name, (unsigned)cp, i);
        i += (size_t)len;
    }
    return VP_OK;
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* How a scalar of each form is named in "got ...'TEXT'". */
static const char* form_noun(vp_cfg_form form) {
    static const char* nouns[VP_CFG_FORM_COUNT] = {"", "the quoted string ", "the !!str string ", "the !!int value ",
                                                   "the !!float value ", "the !!bool value ", "the !!null value "};
    return (int)form >= 0 && form < VP_CFG_FORM_COUNT ? nouns[form] : "";
}

/* Fails with "SOURCE: KEY: expected WHAT, got 'TEXT'". */
static vp_status type_error(const vp_config_key* k, const char* text, vp_cfg_form form, const char* source) {
    char what[160];
    vp_cfg_describe(k, what, sizeof what);
    if (form == VP_CFG_PLAIN && !text[0]) VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got nothing", source, k->name, what);
    VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got %s'%.200s'", source, k->name, what, form_noun(form), text);
}

/* Fails with "SOURCE: KEY: expected an integer in [LO, HI], got 'TEXT'" for an integer past
 * what the key holds. */
static vp_status int_range_error(const vp_config_key* k, const char* text, const char* source) {
    int64_t lo, hi;
    int_bounds(k, &lo, &hi);
    VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected an integer in [%lld, %lld], got '%.200s'", source, k->name,
            (long long)lo, (long long)hi, text);
}

vp_status vp_cfg_parse_into(vp_config* cfg, const vp_config_key* k, const char* text, vp_cfg_form form,
                            const char* source) {
    VP_TRY(vp_cfg_check_text(k, text, strlen(text), source));
    void* f = vp_cfg_field(cfg, k);
    switch (k->kind) {
    case VP_CONFIG_INT: {
        // a decimal integer inside the table's range, then inside what the key holds
        int64_t v = 0, lo, hi;
        int_parse r = form == VP_CFG_PLAIN || form == VP_CFG_TAG_INT ? parse_int(text, &v) : INT_BAD;
        if (r == INT_BAD || (r == INT_OK && !in_range(k, (double)v)))
            return type_error(k, text, form, source);
        int_bounds(k, &lo, &hi);
        if (r == INT_HUGE || v < lo || v > hi) return int_range_error(k, text, source);
        *(int64_t*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_FLOAT: {
        double v = 0;
        int numeric = form == VP_CFG_PLAIN || form == VP_CFG_TAG_FLOAT || form == VP_CFG_TAG_INT;
        if (!numeric || !parse_float(text, &v) || !in_range(k, v)) return type_error(k, text, form, source);
        *(double*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_BOOL: {
        bool v = false;
        if ((form != VP_CFG_PLAIN && form != VP_CFG_TAG_BOOL) || !parse_bool(text, &v))
            return type_error(k, text, form, source);
        *(bool*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_STRING: {
        // a plain null ("", "~", "null") or a !!null one is the empty string
        int plain = form == VP_CFG_PLAIN || form == VP_CFG_TAG_NULL;
        int is_null = plain && (!text[0] || strcmp(text, "~") == 0 || strcasecmp(text, "null") == 0);
        int stringy = form == VP_CFG_PLAIN || form == VP_CFG_QUOTED || form == VP_CFG_TAG_STR;
        if ((!stringy && !is_null) || strlen(text) >= VP_CONFIG_STR_MAX) return type_error(k, text, form, source);
        snprintf((char*)f, VP_CONFIG_STR_MAX, "%s", is_null ? "" : text);
        return VP_OK;
    }
    case VP_CONFIG_ENUM: {
        char v[64];
        int stringy = form == VP_CFG_PLAIN || form == VP_CFG_QUOTED || form == VP_CFG_TAG_STR;
        for (int i = 0; stringy && vp_config_enum_name(k, i, v, sizeof v)[0]; ++i) {
            if (strcmp(v, text) == 0) {
                *(int*)f = i;
                return VP_OK;
            }
        }
        return type_error(k, text, stringy ? VP_CFG_PLAIN : form, source);
    }
    default: VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: unknown key type %d", source, k->name, (int)k->kind);
    }
}

/* ---- keys of older tables ------------------------------------------------------------------- */

const vp_config_key* vp_cfg_legacy_target(const char* name) {
    // model.use_mamba (a bool) became model.encoder; run folders and checkpoints written before
    // still carry it, so it is read as model.encoder: true -> mamba2, false -> none
    return strcmp(name, "model.use_mamba") == 0 ? vp_config_find_key("model.encoder") : NULL;
}

vp_status vp_cfg_legacy_key(const char* name, const char* text, vp_cfg_form form, const char* source,
                            const vp_config_key** k, char* value, size_t n) {
    *k = NULL;
    if (!vp_cfg_legacy_target(name)) return VP_OK;
    bool on = false;
    if ((form != VP_CFG_PLAIN && form != VP_CFG_TAG_BOOL) || !parse_bool(text, &on)) {
        if (form == VP_CFG_PLAIN && !text[0])
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected true or false, got nothing", source, name);
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected true or false, got %s'%.200s' (deprecated: write model.encoder)",
                source, name, form_noun(form), text);
    }
    snprintf(value, n, "%s", on ? "mamba2" : "none");
    *k = vp_cfg_legacy_target(name);
    vp_log(VP_LOG_WARN, "%s: model.use_mamba is deprecated; read as model.encoder = %s (write that instead)", source,
           value);
    return VP_OK;
}

/* ---- setting keys by name -------------------------------------------------------------------- */

vp_status vp_config_set(vp_config* cfg, const char* name, const char* value, const char* source) {
    VP_REQUIRE(cfg && name && value, VP_ERR_INVALID_ARG, "vp_config_set: cfg, name and value must not be NULL");
    if (!source) source = "command line";
    const vp_config_key* k = vp_config_find_key(name);
    char mapped[64];
    if (!k) {
        VP_TRY(vp_cfg_legacy_key(name, value, VP_CFG_PLAIN, source, &k, mapped, sizeof mapped));
        if (k) return vp_cfg_parse_into(cfg, k, mapped, VP_CFG_PLAIN, source);
    }
    if (!k) {
        // a section given a value, or a key that does not exist
        if (vp_cfg_is_section(name))
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: '%s' is a section, not a key: set one of its keys, e.g. '%s'",
                    source, name, vp_config_nearest_key(name)->name);
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: unknown key '%.200s' (did you mean '%s'?)", source, name,
                vp_config_nearest_key(name)->name);
    }
    return vp_cfg_parse_into(cfg, k, value, VP_CFG_PLAIN, source);
}

/* Copies s[0..n) into buf[cap] without surrounding blanks; 0 when it does not fit. */
static int trim_copy(char* buf, size_t cap, const char* s, size_t n) {
    while (n && isspace((unsigned char)*s)) ++s, --n;
    while (n && isspace((unsigned char)s[n - 1])) --n;
    if (n >= cap) return 0;
    memcpy(buf, s, n);
    buf[n] = '\0';
    return 1;
}

vp_status vp_config_override(vp_config* cfg, const char* assignment) {
    VP_REQUIRE(cfg && assignment, VP_ERR_INVALID_ARG, "vp_config_override: cfg and assignment must not be NULL");
    const char* eq = strchr(assignment, '=');
    VP_REQUIRE(eq != NULL, VP_ERR_INVALID_ARG, "command line: '%.200s' is not a key=value override", assignment);
    char name[256], value[VP_CONFIG_STR_MAX];
    VP_REQUIRE(trim_copy(name, sizeof name, assignment, (size_t)(eq - assignment)), VP_ERR_INVALID_ARG,
               "command line: unknown key '%.200s...' (longer than any key)", assignment);
    VP_REQUIRE(trim_copy(value, sizeof value, eq + 1, strlen(eq + 1)), VP_ERR_INVALID_ARG,
               "command line: %s: the value is longer than %d bytes", name, VP_CONFIG_STR_MAX - 1);
    VP_REQUIRE(name[0], VP_ERR_INVALID_ARG, "command line: '%.200s' has no key before '='", assignment);
    return vp_config_set(cfg, name, value, "command line");
}

/* ---- rules across keys ------------------------------------------------------------------------- */

vp_status vp_config_check(const vp_config* cfg) {
    VP_REQUIRE(cfg, VP_ERR_INVALID_ARG, "vp_config_check: cfg is NULL");
    // the three spans fit in the data
    double span = cfg->split.train + cfg->split.val + cfg->split.test;
    VP_REQUIRE(span <= 1.0 + 1e-9, VP_ERR_INVALID_ARG,
               "split.train + split.val + split.test = %g + %g + %g = %g, more than 1", cfg->split.train,
               cfg->split.val, cfg->split.test, span);
    // the C51 support is an interval
    VP_REQUIRE(cfg->model.v_min < cfg->model.v_max, VP_ERR_INVALID_ARG,
               "model.v_min (%g) must be below model.v_max (%g)", cfg->model.v_min, cfg->model.v_max);
    // Mamba2 heads tile the hidden width
    VP_REQUIRE(cfg->model.encoder != 0 || cfg->model.hidden % cfg->model.mamba_head_dim == 0, VP_ERR_INVALID_ARG,
               "model.hidden (%lld) is not a multiple of model.mamba_head_dim (%lld)",
               (long long)cfg->model.hidden, (long long)cfg->model.mamba_head_dim);
    // exploration anneals downwards
    VP_REQUIRE(cfg->collect.epsilon_end <= cfg->collect.epsilon_start, VP_ERR_INVALID_ARG,
               "collect.epsilon_end (%g) is above collect.epsilon_start (%g)", cfg->collect.epsilon_end,
               cfg->collect.epsilon_start);
    // the replay holds a batch and the warm-up
    VP_REQUIRE(cfg->learn.batch <= cfg->replay.capacity, VP_ERR_INVALID_ARG,
               "learn.batch (%lld) is larger than replay.capacity (%lld)", (long long)cfg->learn.batch,
               (long long)cfg->replay.capacity);
    VP_REQUIRE(cfg->replay.warmup <= cfg->replay.capacity, VP_ERR_INVALID_ARG,
               "replay.warmup (%lld) is larger than replay.capacity (%lld)", (long long)cfg->replay.warmup,
               (long long)cfg->replay.capacity);
    // BF16 products take bf16 operands, and every network keeps its activations in f32
    VP_REQUIRE(cfg->run.precision != VP_RUN_PRECISION_BF16, VP_ERR_UNSUPPORTED,
               "run.precision: bf16 is not available yet (BF16 products take bf16 operands and the networks keep "
               "their activations in f32); use tf32 (the default) or fp32");
    // the warm-up stores transitions: an n-step transition leaves the ring's pending window
    // after n steps, so fewer warm-up steps than learn.n_step would leave the ring empty at
    // the first learner step (samples of nothing)
    const int64_t E = cfg->env.n_envs, steps = (cfg->replay.warmup + E - 1) / E;
    VP_REQUIRE(steps >= cfg->learn.n_step, VP_ERR_INVALID_ARG,
               "replay.warmup (%lld) is %lld warm-up step(s) of %lld envs, fewer than learn.n_step (%lld): the replay "
               "would hold no transition at the first learner step; use replay.warmup >= %lld",
               (long long)cfg->replay.warmup, (long long)steps, (long long)E, (long long)cfg->learn.n_step,
               (long long)(E * (cfg->learn.n_step - 1) + 1));
    return VP_OK;
}
