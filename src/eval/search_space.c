/* A search space read from YAML with libyaml's document loader: a mapping of config keys
 * (dotted, or nested one level under their section) to one distribution each, every entry
 * checked against the config table and the base config, every refusal naming the file, the
 * line and the key. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "eval/eval_impl.h"
#include "vulpes/ablate.h"
#include "vulpes/search.h"

/* The names of the distributions, by vp_search_dist. */
static const char* const DIST_NAMES[VP_SEARCH_DIST_COUNT] = {"uniform", "log_uniform", "int", "choice"};

/* What one walk of a document needs. */
typedef struct walk {
    yaml_document_t* doc;
    const char* name;         /* the file, for messages */
    const vp_config* base;    /* values are checked by setting them into a copy of it */
    vp_search_space* out;
} walk;

/* The 1-based line of a node. */
static int line_of(const yaml_node_t* n) { return (int)n->start_mark.line + 1; }

/* What a node is, for messages. */
static const char* noun(const yaml_node_t* n) {
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a value";
}

/* The place of config key k in the table. */
static int key_index(const vp_config_key* k) {
    for (int i = 0; i < vp_config_key_count(); ++i)
        if (vp_config_key_at(i) == k) return i;
    return -1;
}

/* Whether text `v` is a value key k takes (set into a copy of the base); the refusal names
 * the place and what the value was for. */
static vp_status check_value(const walk* w, const vp_config_key* k, const char* v, int line, const char* what) {
    vp_config c = *w->base;
    char source[VP_RUN_PATH_MAX + 128];
    snprintf(source, sizeof source, "%s:%d: %s: %s", w->name, line, k->name, what);
    return vp_config_set(&c, k->name, v, source);
}

/* A number of the space (a bound): the whole scalar read as a finite double. */
static vp_status read_number(const walk* w, const vp_config_key* k, const yaml_node_t* n, int integer, double* out) {
    VP_REQUIRE(n->type == YAML_SCALAR_NODE, VP_ERR_INVALID_ARG, "%s:%d: %s: a bound must be a finite number, got %s",
               w->name, line_of(n), k->name, noun(n));
    const char* t = (const char*)n->data.scalar.value;
    char* end = NULL;
    errno = 0;
    const double v = strtod(t, &end);
    VP_REQUIRE(t[0] != '\0' && end && *end == '\0' && errno == 0 && isfinite(v), VP_ERR_INVALID_ARG,
               "%s:%d: %s: a bound must be a finite number, got '%.60s'", w->name, line_of(n), k->name, t);
    VP_REQUIRE(!integer || (v == floor(v) && fabs(v) <= (double)VP_CONFIG_INT_MAX), VP_ERR_INVALID_ARG,
               "%s:%d: %s: an int bound must be a whole number, got '%.60s'", w->name, line_of(n), k->name, t);
    *out = v;
    return VP_OK;
}

/* The bounds [lo, hi] of a uniform, log_uniform or int entry, checked. */
static vp_status read_bounds(const walk* w, vp_search_param* p, const yaml_node_t* seq) {
    const vp_config_key* k = p->key;
    const char* d = DIST_NAMES[p->dist];
    const int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    VP_REQUIRE(n == 2, VP_ERR_INVALID_ARG, "%s:%d: %s: %s takes two bounds [lo, hi], got %d value%s", w->name,
               line_of(seq), k->name, d, n, n == 1 ? "" : "s");
    const int integer = p->dist == VP_SEARCH_INT;
    double b[2];
    for (int i = 0; i < 2; ++i) {
        const yaml_node_t* e = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);
        VP_TRY(read_number(w, k, e, integer, &b[i]));
        char text[64];
        if (integer) snprintf(text, sizeof text, "%.0f", b[i]);
        else vp_eval_format_exact(b[i], text);
        VP_TRY(check_value(w, k, text, line_of(e), i == 0 ? "the lower bound" : "the upper bound"));
    }
    char t0[32], t1[32];
    vp_eval_format_exact(b[0], t0), vp_eval_format_exact(b[1], t1);
    VP_REQUIRE(b[0] < b[1], VP_ERR_INVALID_ARG, "%s:%d: %s: %s bounds must be ordered lo < hi, got [%s, %s]",
               w->name, line_of(seq), k->name, d, t0, t1);
    VP_REQUIRE(p->dist != VP_SEARCH_LOG_UNIFORM || b[0] > 0, VP_ERR_INVALID_ARG,
               "%s:%d: %s: log_uniform bounds must be > 0, got [%s, %s]", w->name, line_of(seq), k->name, t0, t1);
    p->lo = b[0], p->hi = b[1];
    return VP_OK;
}

/* The values of a choice entry, each one the key takes, none twice. */
static vp_status read_choices(const walk* w, vp_search_param* p, const yaml_node_t* seq) {
    const vp_config_key* k = p->key;
    const int n = (int)(seq->data.sequence.items.top - seq->data.sequence.items.start);
    VP_REQUIRE(n >= 1 && n <= VP_SEARCH_MAX_CHOICES, VP_ERR_INVALID_ARG,
               "%s:%d: %s: choice takes 1 to %d values, got %d", w->name, line_of(seq), k->name, VP_SEARCH_MAX_CHOICES,
               n);
    char shown[VP_SEARCH_MAX_CHOICES][VP_CONFIG_STR_MAX];
    for (int i = 0; i < n; ++i) {
        const yaml_node_t* e = yaml_document_get_node(w->doc, seq->data.sequence.items.start[i]);
        VP_REQUIRE(e->type == YAML_SCALAR_NODE, VP_ERR_INVALID_ARG, "%s:%d: %s: a choice is a value, got %s",
                   w->name, line_of(e), k->name, noun(e));
        const char* t = (const char*)e->data.scalar.value;
        VP_REQUIRE(strlen(t) < VP_SEARCH_VALUE_MAX, VP_ERR_INVALID_ARG, "%s:%d: %s: choice '%.40s...' is longer than %d "
                   "characters", w->name, line_of(e), k->name, t, VP_SEARCH_VALUE_MAX - 1);
        VP_TRY(check_value(w, k, t, line_of(e), "a choice"));
        // the value as the config holds it: "64" and "6.4e1" are the same choice
        vp_config c = *w->base;
        VP_TRY(vp_config_set(&c, k->name, t, w->name));
        vp_config_format_value(&c, k, shown[i], sizeof shown[i]);
        for (int j = 0; j < i; ++j)
            VP_REQUIRE(strcmp(shown[i], shown[j]) != 0, VP_ERR_INVALID_ARG,
                       "%s:%d: %s: choice %s is given twice", w->name, line_of(e), k->name, shown[i]);
        snprintf(p->choices[i], sizeof p->choices[i], "%s", t);
    }
    p->n_choices = n;
    return VP_OK;
}

/* One entry, key `full` given at node `key_node` with value `v`: {DIST: [...]}. */
static vp_status read_entry(walk* w, const char* full, const yaml_node_t* key_node, const yaml_node_t* v) {
    const int line = line_of(key_node);
    const vp_config_key* k = vp_config_find_key(full);
    if (!k) {
        const vp_config_key* near = vp_config_nearest_key(full);
        VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: unknown key '%s'; did you mean '%s'? (vulpes config --defaults lists the "
                "keys)", w->name, line, full, near->name);
    }
    VP_REQUIRE(vp_ablate_key_switchable(k->name), VP_ERR_INVALID_ARG,
               "%s:%d: %s is not searchable: a search varies only model.*, learn.*, signals.*, replay.*, collect.*, "
               "curiosity.*, her.* and env.* keys (the data, costs, split, loop length and seeds stay the base's)", w->name, line, k->name);
    vp_search_space* s = w->out;
    for (int i = 0; i < s->n_params; ++i)
        VP_REQUIRE(s->params[i].key != k, VP_ERR_INVALID_ARG, "%s:%d: %s is given twice (first at line %d)", w->name,
                   line, k->name, s->params[i].line);
    VP_REQUIRE(s->n_params < VP_SEARCH_MAX_PARAMS, VP_ERR_INVALID_ARG, "%s:%d: %s: a space holds at most %d keys",
               w->name, line, k->name, VP_SEARCH_MAX_PARAMS);
    // the form {DIST: [values]}
    const int pairs = v->type == YAML_MAPPING_NODE ? (int)(v->data.mapping.pairs.top - v->data.mapping.pairs.start) : 0;
    VP_REQUIRE(pairs == 1, VP_ERR_INVALID_ARG, "%s:%d: %s: expected one distribution, {uniform: [lo, hi]}, "
               "{log_uniform: [lo, hi]}, {int: [lo, hi]} or {choice: [v, ...]}, got %s", w->name, line, k->name,
               pairs > 1 ? "several" : noun(v));
    const yaml_node_t* dn = yaml_document_get_node(w->doc, v->data.mapping.pairs.start[0].key);
    const yaml_node_t* seq = yaml_document_get_node(w->doc, v->data.mapping.pairs.start[0].value);
    int dist = -1;
    for (int i = 0; dn->type == YAML_SCALAR_NODE && i < VP_SEARCH_DIST_COUNT; ++i)
        if (strcmp((const char*)dn->data.scalar.value, DIST_NAMES[i]) == 0) dist = i;
    VP_REQUIRE(dist >= 0, VP_ERR_INVALID_ARG, "%s:%d: %s: unknown distribution '%.40s' (uniform, log_uniform, int or "
               "choice)", w->name, line_of(dn), k->name,
               dn->type == YAML_SCALAR_NODE ? (const char*)dn->data.scalar.value : noun(dn));
    VP_REQUIRE(seq->type == YAML_SEQUENCE_NODE, VP_ERR_INVALID_ARG, "%s:%d: %s: %s takes a list, got %s", w->name,
               line_of(seq), k->name, DIST_NAMES[dist], noun(seq));
    // the distribution the key's type takes
    VP_REQUIRE(dist == VP_SEARCH_CHOICE || dist != VP_SEARCH_INT || k->kind == VP_CONFIG_INT, VP_ERR_INVALID_ARG,
               "%s:%d: %s: int needs an integer key; %s is not one (uniform or log_uniform for a number, choice "
               "otherwise)", w->name, line_of(dn), k->name, k->name);
    VP_REQUIRE(dist == VP_SEARCH_CHOICE || dist == VP_SEARCH_INT || k->kind == VP_CONFIG_FLOAT, VP_ERR_INVALID_ARG,
               "%s:%d: %s: %s needs a number key; %s is not one (%s)", w->name, line_of(dn), k->name, DIST_NAMES[dist],
               k->name, k->kind == VP_CONFIG_INT ? "int: [lo, hi] for an integer key" : "choice: [v, ...]");
    vp_search_param* p = &s->params[s->n_params];
    memset(p, 0, sizeof *p);
    p->key = k, p->key_index = key_index(k), p->dist = (vp_search_dist)dist, p->line = line;
    VP_TRY(dist == VP_SEARCH_CHOICE ? read_choices(w, p, seq) : read_bounds(w, p, seq));
    s->n_params++;
    return VP_OK;
}

/* The entries of mapping m; `section` names the section of a nested mapping ("" at the top). */
static vp_status read_mapping(walk* w, const yaml_node_t* m, const char* section) {
    for (yaml_node_pair_t* pr = m->data.mapping.pairs.start; pr < m->data.mapping.pairs.top; ++pr) {
        const yaml_node_t* kn = yaml_document_get_node(w->doc, pr->key);
        const yaml_node_t* vn = yaml_document_get_node(w->doc, pr->value);
        VP_REQUIRE(kn->type == YAML_SCALAR_NODE, VP_ERR_INVALID_ARG, "%s:%d: a key must be a name, got %s", w->name,
                   line_of(kn), noun(kn));
        const char* key = (const char*)kn->data.scalar.value;
        char full[256];
        const int len = snprintf(full, sizeof full, "%s%s%s", section, section[0] ? "." : "", key);
        VP_REQUIRE(len > 0 && (size_t)len < sizeof full, VP_ERR_INVALID_ARG, "%s:%d: key '%.60s...' is too long",
                   w->name, line_of(kn), key);
        // a section name mapped to its keys: learn: {lr: {...}}
        const int is_section = !section[0] && !strchr(key, '.') && !vp_config_find_key(full) &&
                               vn->type == YAML_MAPPING_NODE;
        VP_TRY(is_section ? read_mapping(w, vn, key) : read_entry(w, full, kn, vn));
    }
    return VP_OK;
}

vp_status vp_search_space_parse(const char* yaml, const char* name, const vp_config* base, vp_search_space* out) {
    VP_REQUIRE(yaml && name && base && out, VP_ERR_INVALID_ARG, "vp_search_space_parse: NULL argument");
    memset(out, 0, sizeof *out);
    const size_t n = strlen(yaml);
    VP_REQUIRE(n <= VP_CONFIG_MAX_BYTES, VP_ERR_INVALID_ARG, "%s: larger than %d bytes", name, VP_CONFIG_MAX_BYTES);
    yaml_parser_t parser;
    yaml_document_t doc;
    VP_REQUIRE(yaml_parser_initialize(&parser), VP_ERR_OOM, "%s: out of memory", name);
    yaml_parser_set_input_string(&parser, (const unsigned char*)yaml, n);
    if (!yaml_parser_load(&parser, &doc)) {
        const int line = (int)parser.problem_mark.line + 1;
        char msg[256];
        snprintf(msg, sizeof msg, "%s", parser.problem ? parser.problem : "malformed YAML");
        yaml_parser_delete(&parser);
        VP_FAIL(VP_ERR_PARSE, "%s:%d: not valid YAML: %s", name, line, msg);
    }
    yaml_parser_delete(&parser);
    walk w = {&doc, name, base, out};
    const yaml_node_t* root = yaml_document_get_root_node(&doc);
    vp_status s = VP_OK;
    if (!root || (root->type == YAML_SCALAR_NODE && root->data.scalar.length == 0))
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s: holds no keys; a space maps keys to distributions, "
                         "e.g. learn.lr: {log_uniform: [1e-5, 1e-2]}", name);
    else if (root->type != YAML_MAPPING_NODE)
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s:%d: expected a mapping of keys to distributions, got %s",
                         name, line_of(root), noun(root));
    else
        s = read_mapping(&w, root, "");
    if (s == VP_OK && out->n_params == 0)
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s: holds no keys; a space maps keys to distributions, "
                         "e.g. learn.lr: {log_uniform: [1e-5, 1e-2]}", name);
    yaml_document_delete(&doc);
    if (s != VP_OK) memset(out, 0, sizeof *out);
    return s;
}

vp_status vp_search_space_load(const char* path, const vp_config* base, vp_search_space* out) {
    VP_REQUIRE(path && base && out, VP_ERR_INVALID_ARG, "vp_search_space_load: NULL argument");
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot open search space %s: %s", path, strerror(errno));
    char* text = (char*)malloc((size_t)VP_CONFIG_MAX_BYTES + 2);
    const size_t n = text ? fread(text, 1, (size_t)VP_CONFIG_MAX_BYTES + 1, f) : 0;
    const int bad = ferror(f);
    fclose(f);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "reading %s: out of memory", path);
    text[n] = '\0';
    vp_status s = VP_OK;
    if (bad) s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot read search space %s", path);
    else if (n > (size_t)VP_CONFIG_MAX_BYTES)
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s: larger than %d bytes", path, VP_CONFIG_MAX_BYTES);
    else if (strlen(text) != n)
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s: holds a NUL byte; a space is UTF-8 text", path);
    if (s == VP_OK) s = vp_search_space_parse(text, path, base, out);
    free(text);
    return s;
}

vp_status vp_search_space_to_yaml(const vp_search_space* s, char** out) {
    VP_REQUIRE(s && out, VP_ERR_INVALID_ARG, "vp_search_space_to_yaml: NULL argument");
    char* buf = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&buf, &len);
    VP_REQUIRE(f != NULL, VP_ERR_OOM, "the search space: out of memory");
    for (int i = 0; i < s->n_params; ++i) {
        const vp_search_param* p = &s->params[i];
        fprintf(f, "%s: {%s: [", p->key->name, DIST_NAMES[p->dist]);
        if (p->dist == VP_SEARCH_CHOICE) {
            // each value double-quoted, so it reads back as the same text
            for (int c = 0; c < p->n_choices; ++c) {
                fputs(c ? ", \"" : "\"", f);
                for (const char* t = p->choices[c]; *t; ++t) {
                    if (*t == '"' || *t == '\\') fputc('\\', f);
                    fputc(*t, f);
                }
                fputc('"', f);
            }
        } else if (p->dist == VP_SEARCH_INT) {
            fprintf(f, "%.0f, %.0f", p->lo, p->hi);
        } else {
            char lo[32], hi[32];
            fprintf(f, "%s, %s", vp_eval_format_exact(p->lo, lo), vp_eval_format_exact(p->hi, hi));
        }
        fputs("]}\n", f);
    }
    const int bad = ferror(f);
    fclose(f);
    if (bad || !buf) {
        free(buf);
        VP_FAIL(VP_ERR_OOM, "the search space: out of memory");
    }
    *out = buf;
    return VP_OK;
}
