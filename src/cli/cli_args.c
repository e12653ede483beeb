/* The shared command-line parser (cli_args.h): options from a command's table, positional
 * arguments and key=value overrides, one set of rules and messages for every command. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_args.h"

/* Records the usage error "vulpes COMMAND: ..." and prints it with the pointer to --help;
 * returns 2, the usage exit code. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static int usage_error(vp_cli_args* a, const vp_cli_spec* spec, const char* fmt, ...) {
    int at = snprintf(a->error, sizeof a->error, "vulpes %s: ", spec->command);
    va_list ap;
    va_start(ap, fmt);
    if (at > 0 && (size_t)at < sizeof a->error) vsnprintf(a->error + at, sizeof a->error - (size_t)at, fmt, ap);
    va_end(ap);
    fprintf(stderr, "%s\n(vulpes %s --help lists its options)\n", a->error, spec->command);
    return 2;
}

/* "cpu, cuda or auto" from "cpu|cuda|auto" into buf[n]. */
static const char* choice_list(const char* choices, char* buf, size_t n) {
    size_t at = 0;
    const char* c = choices;
    buf[0] = '\0';
    while (*c && at + 1 < n) {
        const char* bar = strchr(c, '|');
        const size_t len = bar ? (size_t)(bar - c) : strlen(c);
        const char* sep = at == 0 ? "" : bar ? ", " : " or ";
        int w = snprintf(buf + at, n - at, "%s%.*s", sep, (int)len, c);
        if (w < 0) break;
        at += (size_t)w < n - at ? (size_t)w : n - at - 1;
        c = bar ? bar + 1 : c + len;
    }
    return buf;
}

/* Whether `value` is one of `choices`. */
static int is_choice(const char* choices, const char* value) {
    const size_t vl = strlen(value);
    for (const char* c = choices; *c;) {
        const char* bar = strchr(c, '|');
        const size_t len = bar ? (size_t)(bar - c) : strlen(c);
        if (len == vl && strncmp(c, value, len) == 0) return 1;
        c = bar ? bar + 1 : c + len;
    }
    return 0;
}

/* The option of spec named by the first `len` characters of `name`, or NULL. */
static int find_opt(const vp_cli_spec* spec, const char* name, size_t len) {
    for (int i = 0; i < spec->n_opts; ++i)
        if (strlen(spec->opts[i].flag) == len && strncmp(spec->opts[i].flag, name, len) == 0) return i;
    return -1;
}

/* Takes option o's value `v` (NULL for a switch) into its destination and its key's override. */
static int take(vp_cli_args* a, const vp_cli_spec* spec, int i, const char* v) {
    const vp_cli_opt* o = &spec->opts[i];
    char list[160];
    switch (o->kind) {
    case VP_CLI_SWITCH:
        if (o->dest) *(int*)o->dest = 1;
        v = "true";
        break;
    case VP_CLI_TEXT:
        if (o->dest) *(const char**)o->dest = v;
        break;
    case VP_CLI_COUNT: {
        char* end = NULL;
        errno = 0;
        long long x = strtoll(v, &end, 10);
        if (end == v || *end != '\0' || errno == ERANGE || x < o->min || x > o->max) {
            if (o->max == INT64_MAX)
                return usage_error(a, spec, "%s needs an integer >= %lld, got '%s'", o->flag, (long long)o->min, v);
            return usage_error(a, spec, "%s needs an integer in [%lld, %lld], got '%s'", o->flag, (long long)o->min,
                               (long long)o->max, v);
        }
        if (o->dest) *(int64_t*)o->dest = (int64_t)x;
        break;
    }
    case VP_CLI_CHOICE:
        if (!is_choice(o->choices, v))
            return usage_error(a, spec, "%s takes %s, got '%s'", o->flag, choice_list(o->choices, list, sizeof list), v);
        if (o->dest) *(const char**)o->dest = v;
        break;
    default:
        return usage_error(a, spec, "%s: unknown option kind", o->flag);
    }
    if (o->key) {
        char* kv = a->kv[i];
        if (snprintf(kv, VP_CLI_KV_MAX, "%s=%s", o->key, v) >= VP_CLI_KV_MAX)
            return usage_error(a, spec, "%s: the value is too long (%zu characters)", o->flag, strlen(v));
    }
    return 0;
}

/* One option argument argv[*i] ("--flag", "--flag VALUE" or "--flag=VALUE"). */
static int option(vp_cli_args* a, const vp_cli_spec* spec, int argc, char** argv, int* i) {
    const char* s = argv[*i];
    const char* eq = strncmp(s, "--", 2) == 0 ? strchr(s, '=') : NULL;
    const int k = find_opt(spec, s, eq ? (size_t)(eq - s) : strlen(s));
    if (k < 0) return usage_error(a, spec, "unknown option '%s'", s);
    const vp_cli_opt* o = &spec->opts[k];
    if (a->given[k]) return usage_error(a, spec, "%s given twice", o->flag);
    a->given[k] = 1;
    if (o->kind == VP_CLI_SWITCH) {
        if (eq) return usage_error(a, spec, "%s takes no value, got '%s'", o->flag, s);
        return take(a, spec, k, NULL);
    }
    const char* v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
    if (!v) return usage_error(a, spec, "%s needs a value", o->flag);
    return take(a, spec, k, v);
}

int vp_cli_parse(const vp_cli_spec* spec, int argc, char** argv, vp_cli_args* out) {
    memset(out, 0, sizeof *out);
    if (spec->n_opts > VP_CLI_MAX_OPTS || spec->max_positional > VP_CLI_MAX_POSITIONAL)
        return usage_error(out, spec, "the command's table holds too many options");
    // --help anywhere wins over everything else
    for (int i = 1; i < argc; ++i)
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            if (spec->usage) spec->usage(stdout);
            return VP_CLI_HELP;
        }
    for (int i = 1; i < argc; ++i) {
        char* s = argv[i];
        if (s[0] == '-' && s[1] != '\0') {
            int rc = option(out, spec, argc, argv, &i);
            if (rc) return rc;
        } else if (strchr(s, '=') != NULL) {
            // key=value: a config override where the command takes them
            if (!spec->overrides)
                return usage_error(out, spec, "'%s': %s takes no key=value config overrides", s, spec->command);
            if (s[0] == '=') return usage_error(out, spec, "'%s' is not key=value: the key is missing", s);
            if (out->n_over == VP_CLI_MAX_OVERRIDES)
                return usage_error(out, spec, "more than %d key=value overrides", VP_CLI_MAX_OVERRIDES);
            out->over[out->n_over++] = s;
        } else {
            if (out->n_positional == spec->max_positional) return usage_error(out, spec, "unexpected argument '%s'", s);
            out->positional[out->n_positional++] = s;
        }
    }
    // the options' overrides after the key=value ones, in table order: an option wins
    for (int k = 0; k < spec->n_opts; ++k)
        if (out->given[k] && spec->opts[k].key) out->over[out->n_over++] = out->kv[k];
    return 0;
}

int vp_cli_given(const vp_cli_spec* spec, const vp_cli_args* a, const char* flag) {
    const int k = find_opt(spec, flag, strlen(flag));
    return k >= 0 && a->given[k];
}
