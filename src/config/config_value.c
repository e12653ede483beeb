/* Reading one value: YAML plain scalars into typed fields with type and range checks,
 * `key=value` overrides, and the rules that tie keys together. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <errno.h>
#include <math.h>
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

/* ---- parsing scalars ------------------------------------------------------------------------ */

/* Parses a YAML integer ("42", "-3", "1_000_000", or an integral float such as "1e6"). */
static int parse_int(const char* s, int64_t* out) {
    char digits[64];
    size_t n = 0;
    // drop YAML 1.1 digit separators
    for (const char* p = s; *p; ++p) {
        if (*p == '_' && p != s && isdigit((unsigned char)p[-1]) && isdigit((unsigned char)p[1])) continue;
        if (n + 1 >= sizeof digits) return 0;
        digits[n++] = *p;
    }
    digits[n] = '\0';
    if (n == 0 || isspace((unsigned char)digits[0])) return 0;
    char* end = NULL;
    errno = 0;
    long long v = strtoll(digits, &end, 10);
    if (*end == '\0' && errno == 0) {
        *out = (int64_t)v;
        return 1;
    }
    if (*end == '\0') return 0;  // out of int64 range
    // an integral float
    double d = strtod(digits, &end);
    if (*end != '\0' || !isfinite(d) || d != floor(d) || fabs(d) >= 9.2e18) return 0;
    *out = (int64_t)d;
    return 1;
}

/* Parses a YAML float ("1e-4", "-2", ".inf"); NaN is refused. */
static int parse_float(const char* s, double* out) {
    const char* p = s;
    int neg = 0;
    if (*p == '+' || *p == '-') neg = *p++ == '-';
    if (strcasecmp(p, ".inf") == 0) {
        *out = neg ? -INFINITY : INFINITY;
        return 1;
    }
    if (!*s || isspace((unsigned char)*s)) return 0;
    char* end = NULL;
    double d = strtod(s, &end);
    if (*end != '\0' || isnan(d)) return 0;
    *out = d;
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

/* Fails with "SOURCE: KEY: expected WHAT, got 'TEXT'". */
static vp_status type_error(const vp_config_key* k, const char* text, int quoted, const char* source) {
    char what[160];
    vp_cfg_describe(k, what, sizeof what);
    if (!quoted && !text[0]) VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got nothing", source, k->name, what);
    VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got %s'%.200s'", source, k->name, what,
            quoted ? "the quoted string " : "", text);
}

vp_status vp_cfg_parse_into(vp_config* cfg, const vp_config_key* k, const char* text, int quoted,
                            const char* source) {
    void* f = vp_cfg_field(cfg, k);
    switch (k->kind) {
    case VP_CONFIG_INT: {
        int64_t v = 0;
        if (quoted || !parse_int(text, &v) || !in_range(k, (double)v)) return type_error(k, text, quoted, source);
        *(int64_t*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_FLOAT: {
        double v = 0;
        if (quoted || !parse_float(text, &v) || !in_range(k, v)) return type_error(k, text, quoted, source);
        *(double*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_BOOL: {
        bool v = false;
        if (quoted || !parse_bool(text, &v)) return type_error(k, text, quoted, source);
        *(bool*)f = v;
        return VP_OK;
    }
    case VP_CONFIG_STRING: {
        // a plain null ("", "~", "null") is the empty string
        int is_null = !quoted && (!text[0] || strcmp(text, "~") == 0 || strcasecmp(text, "null") == 0);
        if (strlen(text) >= VP_CONFIG_STR_MAX) return type_error(k, text, quoted, source);
        snprintf((char*)f, VP_CONFIG_STR_MAX, "%s", is_null ? "" : text);
        return VP_OK;
    }
    case VP_CONFIG_ENUM: {
        char v[64];
        for (int i = 0; vp_config_enum_name(k, i, v, sizeof v)[0]; ++i) {
            if (strcmp(v, text) == 0) {
                *(int*)f = i;
                return VP_OK;
            }
        }
        return type_error(k, text, 0, source);
    }
    default: VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: unknown key type %d", source, k->name, (int)k->kind);
    }
}

/* ---- setting keys by name -------------------------------------------------------------------- */

vp_status vp_config_set(vp_config* cfg, const char* name, const char* value, const char* source) {
    VP_REQUIRE(cfg && name && value, VP_ERR_INVALID_ARG, "vp_config_set: cfg, name and value must not be NULL");
    if (!source) source = "command line";
    const vp_config_key* k = vp_config_find_key(name);
    if (!k) {
        // a section given a value, or a key that does not exist
        if (vp_cfg_is_section(name))
            VP_FAIL(VP_ERR_INVALID_ARG, "%s: '%s' is a section, not a key: set one of its keys, e.g. '%s'",
                    source, name, vp_config_nearest_key(name)->name);
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: unknown key '%.200s' (did you mean '%s'?)", source, name,
                vp_config_nearest_key(name)->name);
    }
    return vp_cfg_parse_into(cfg, k, value, 0, source);
}

/* Copies s[0..n) into buf[cap] without surrounding blanks. */
static void trim_copy(char* buf, size_t cap, const char* s, size_t n) {
    while (n && isspace((unsigned char)*s)) ++s, --n;
    while (n && isspace((unsigned char)s[n - 1])) --n;
    if (n >= cap) n = cap - 1;
    memcpy(buf, s, n);
    buf[n] = '\0';
}

vp_status vp_config_override(vp_config* cfg, const char* assignment) {
    VP_REQUIRE(cfg && assignment, VP_ERR_INVALID_ARG, "vp_config_override: cfg and assignment must not be NULL");
    const char* eq = strchr(assignment, '=');
    VP_REQUIRE(eq != NULL, VP_ERR_INVALID_ARG, "command line: '%.200s' is not a key=value override", assignment);
    char name[256], value[VP_CONFIG_STR_MAX + 1];
    trim_copy(name, sizeof name, assignment, (size_t)(eq - assignment));
    trim_copy(value, sizeof value, eq + 1, strlen(eq + 1));
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
    VP_REQUIRE(!cfg->model.use_mamba || cfg->model.hidden % cfg->model.mamba_head_dim == 0, VP_ERR_INVALID_ARG,
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
    return VP_OK;
}
