/* Loading a configuration from YAML (libyaml's document loader): nested section
 * mappings or dotted keys, every error naming the file, the line and the key. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/config_impl.h"

/* State of one load. */
typedef struct load_ctx {
    const char* name;      /* file name in messages */
    yaml_document_t* doc;  /* the parsed document */
    vp_config* cfg;        /* values being filled (a copy; committed on success) */
    int* set_line;         /* [n_keys] 1-based line where each key was set, 0 if not yet */
} load_ctx;

/* A node's kind as a noun for messages. */
static const char* node_noun(const yaml_node_t* n) {
    return n->type == YAML_MAPPING_NODE ? "a mapping" : n->type == YAML_SEQUENCE_NODE ? "a list" : "a value";
}

/* Fails with "FILE:LINE: unknown key 'K' (did you mean 'N'?)". */
static vp_status unknown_key(const load_ctx* c, const char* full, int line) {
    VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: unknown key '%.200s' (did you mean '%s'?)", c->name, line, full,
            vp_config_nearest_key(full)->name);
}

/* Sets one leaf key `full` from value node `v` (defined at 1-based `line`). */
static vp_status set_leaf(load_ctx* c, const char* full, const yaml_node_t* v, int line) {
    const vp_config_key* k = vp_config_find_key(full);
    char where[512];
    snprintf(where, sizeof where, "%s:%d", c->name, line);
    // a section given a scalar, an unknown key
    if (!k && vp_cfg_is_section(full))
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: '%s' is a section: expected a mapping of its keys (e.g. '%s'), got %s",
                where, full, vp_config_nearest_key(full)->name, node_noun(v));
    if (!k) return unknown_key(c, full, line);
    // the same key set twice (nested and dotted forms count as the same key)
    int idx = vp_cfg_key_index(k);
    if (c->set_line[idx])
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: duplicate key '%s' (first set at line %d)", where, full, c->set_line[idx]);
    c->set_line[idx] = line;
    // a mapping or a list where a value belongs
    if (v->type != YAML_SCALAR_NODE) {
        char what[160];
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got %s", where, full, vp_cfg_describe(k, what, sizeof what),
                node_noun(v));
    }
    int quoted = v->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
    return vp_cfg_parse_into(c->cfg, k, (const char*)v->data.scalar.value, quoted, where);
}

/* Walks mapping `map` whose keys live under `prefix` ("" at the top). */
static vp_status walk_mapping(load_ctx* c, const yaml_node_t* map, const char* prefix) {
    const yaml_node_pair_t* first = map->data.mapping.pairs.start;
    for (const yaml_node_pair_t* p = first; p < map->data.mapping.pairs.top; ++p) {
        const yaml_node_t* kn = yaml_document_get_node(c->doc, p->key);
        const yaml_node_t* vn = yaml_document_get_node(c->doc, p->value);
        int line = (int)kn->start_mark.line + 1;
        VP_REQUIRE(kn->type == YAML_SCALAR_NODE, VP_ERR_PARSE, "%s:%d: a key must be a plain name, got %s", c->name,
                   line, node_noun(kn));
        const char* key = (const char*)kn->data.scalar.value;
        // the same name twice in one mapping
        for (const yaml_node_pair_t* q = first; q < p; ++q) {
            const yaml_node_t* prev = yaml_document_get_node(c->doc, q->key);
            if (prev->type == YAML_SCALAR_NODE && strcmp((const char*)prev->data.scalar.value, key) == 0)
                VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: duplicate key '%s%s%.200s' (first at line %d)", c->name, line,
                        prefix, prefix[0] ? "." : "", key, (int)prev->start_mark.line + 1);
        }
        char full[512];
        snprintf(full, sizeof full, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        // a nested mapping is a section; under an unknown one the first leaf is reported,
        // so the suggestion can fix the section name ("lern.lr" -> "learn.lr")
        if (vn->type == YAML_MAPPING_NODE && !vp_config_find_key(full)) {
            int empty = vn->data.mapping.pairs.top == vn->data.mapping.pairs.start;
            if (empty && !vp_cfg_is_section(full)) return unknown_key(c, full, line);
            VP_TRY(walk_mapping(c, vn, full));
            continue;
        }
        VP_TRY(set_leaf(c, full, vn, line));
    }
    return VP_OK;
}

/* Loads the document from an initialised parser on top of `cfg`. */
static vp_status load_parser(vp_config* cfg, yaml_parser_t* parser, const char* name) {
    yaml_document_t doc;
    // parse the first document; a problem inside a construct also names where it started
    if (!yaml_parser_load(parser, &doc)) {
        char ctx[160] = "";
        if (parser->context)
            snprintf(ctx, sizeof ctx, " %s started at line %d", parser->context, (int)parser->context_mark.line + 1);
        VP_FAIL(VP_ERR_PARSE, "%s:%d: malformed YAML: %s%s", name, (int)parser->problem_mark.line + 1,
                parser->problem ? parser->problem : "parse error", ctx);
    }
    yaml_node_t* root = yaml_document_get_root_node(&doc);
    if (!root) {
        yaml_document_delete(&doc);
        return VP_OK;  // an empty file: nothing to change
    }
    // a second document is refused
    yaml_document_t more;
    if (!yaml_parser_load(parser, &more)) {
        yaml_document_delete(&doc);
        VP_FAIL(VP_ERR_PARSE, "%s:%d: malformed YAML: %s", name, (int)parser->problem_mark.line + 1,
                parser->problem ? parser->problem : "parse error");
    }
    int extra = yaml_document_get_root_node(&more) != NULL;
    int extra_line = extra ? (int)more.start_mark.line + 1 : 0;
    yaml_document_delete(&more);
    if (extra) {
        yaml_document_delete(&doc);
        VP_FAIL(VP_ERR_PARSE, "%s:%d: a second YAML document; a config file holds one mapping", name, extra_line);
    }
    // walk the root mapping into a copy, committed only when every key is good
    vp_status s = VP_OK;
    vp_config work = *cfg;
    load_ctx c = {name, &doc, &work, calloc((size_t)vp_config_key_count(), sizeof(int))};
    if (!c.set_line) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", name);
    else if (root->type != YAML_MAPPING_NODE)
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s:%d: expected a mapping of keys (section: {key: value}), got %s",
                         name, (int)root->start_mark.line + 1, node_noun(root));
    else s = walk_mapping(&c, root, "");
    if (s == VP_OK) *cfg = work;
    free(c.set_line);
    yaml_document_delete(&doc);
    return s;
}

vp_status vp_config_load_string(vp_config* cfg, const char* yaml, const char* name) {
    VP_REQUIRE(cfg && yaml, VP_ERR_INVALID_ARG, "vp_config_load_string: cfg and yaml must not be NULL");
    if (!name) name = "<string>";
    yaml_parser_t parser;
    VP_REQUIRE(yaml_parser_initialize(&parser), VP_ERR_OOM, "%s: cannot create the YAML parser", name);
    yaml_parser_set_input_string(&parser, (const unsigned char*)yaml, strlen(yaml));
    vp_status s = load_parser(cfg, &parser, name);
    yaml_parser_delete(&parser);
    return s;
}

vp_status vp_config_load_file(vp_config* cfg, const char* path) {
    VP_REQUIRE(cfg && path, VP_ERR_INVALID_ARG, "vp_config_load_file: cfg and path must not be NULL");
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot open config file '%s': %s", path, strerror(errno));
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser)) {
        fclose(f);
        VP_FAIL(VP_ERR_OOM, "%s: cannot create the YAML parser", path);
    }
    yaml_parser_set_input_file(&parser, f);
    vp_status s = load_parser(cfg, &parser, path);
    yaml_parser_delete(&parser);
    fclose(f);
    return s;
}

vp_status vp_config_resolve(vp_config* cfg, const char* path, int n_overrides, char* const* overrides) {
    VP_REQUIRE(cfg && (n_overrides == 0 || overrides), VP_ERR_INVALID_ARG,
               "vp_config_resolve: cfg (and overrides when n_overrides > 0) must not be NULL");
    // defaults, the file, the command line, then the rules across keys
    vp_config_defaults(cfg);
    if (path) VP_TRY(vp_config_load_file(cfg, path));
    for (int i = 0; i < n_overrides; ++i) VP_TRY(vp_config_override(cfg, overrides[i]));
    vp_status s = vp_config_check(cfg);
    if (s != VP_OK) return vp_error_context(s, "%s%s", path ? path : "defaults", n_overrides ? " with overrides" : "");
    return VP_OK;
}
