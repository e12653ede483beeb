/* Loading a configuration from YAML with libyaml's event parser: nested section mappings
 * or dotted keys, every error naming the file, the line and the key.
 *
 * A text is read twice. The first pass takes only the events' shape: it refuses a text
 * over VP_CONFIG_MAX_BYTES, malformed YAML, anchors and aliases, a second document and
 * nesting deeper than the table needs, and stops at the first of them (a 100,000-deep
 * mapping is refused after a handful of levels). The second pass walks the same events
 * into the keys; its recursion is bounded by the first. Bytes that are not UTF-8 are
 * replaced for the two passes by '_' (so the parser can say where they are) and always
 * fail the load, naming the key whose value or name holds the first of them. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config/config_yaml.h"

/* ---- the second pass: keys ------------------------------------------------------------------ */

/* The next event of the walk into *e. */
static vp_status next_event(load_ctx* c, yaml_event_t* e) {
    if (!yaml_parser_parse(&c->parser, e)) return vp_cfgy_parse_error(c->t, &c->parser);
    return VP_OK;
}

/* How scalar `v` was written, or a failure naming key `full` for a tag no key takes. */
static vp_status scalar_form(const load_ctx* c, const char* full, const yaml_event_t* v, int line, vp_cfg_form* form) {
    static const char* const tags[] = {"str", "int", "float", "bool", "null"};
    static const vp_cfg_form forms[] = {VP_CFG_TAG_STR, VP_CFG_TAG_INT, VP_CFG_TAG_FLOAT, VP_CFG_TAG_BOOL,
                                        VP_CFG_TAG_NULL};
    const char* tag = (const char*)v->data.scalar.tag;
    *form = v->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? VP_CFG_PLAIN : VP_CFG_QUOTED;
    if (!tag) return VP_OK;
    if (strcmp(tag, "!") == 0) return *form = VP_CFG_QUOTED, VP_OK;
    for (int i = 0; i < 5; ++i) {
        char want[64];
        snprintf(want, sizeof want, TAG_PREFIX "%s", tags[i]);
        if (strcmp(tag, want) == 0) return *form = forms[i], VP_OK;
    }
    char shown[128];
    VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: %s: tag '%s' is not supported (a value takes no tag, or its type's: !!str, "
            "!!int, !!float or !!bool)", c->t->name, line, full, vp_cfgy_tag_text(tag, shown, sizeof shown));
}

/* Fails unless mapping-start `m` (the value of `full`) is untagged or tagged !!map. */
static vp_status check_mapping_tag(const load_ctx* c, const char* full, const yaml_event_t* m, int line) {
    const char* tag = (const char*)m->data.mapping_start.tag;
    if (!tag || strcmp(tag, TAG_PREFIX "map") == 0) return VP_OK;
    char shown[128];
    VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: %s: tag '%s' is not supported (a section is a plain mapping)", c->t->name, line,
            full, vp_cfgy_tag_text(tag, shown, sizeof shown));
}

/* Sets one leaf key `full` from value event `v` (defined at 1-based `line`). */
static vp_status set_leaf(load_ctx* c, const char* full, const yaml_event_t* v, int line) {
    const vp_config_key* k = vp_config_find_key(full);
    char where[512];
    snprintf(where, sizeof where, "%s:%d", c->t->name, line);
    // a section given a scalar, an unknown key
    if (!k && vp_cfg_is_section(full))
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: '%s' is a section: expected a mapping of its keys (e.g. '%s'), got %s",
                where, full, vp_config_nearest_key(full)->name, vp_cfgy_event_noun(v));
    // a key of an older table that is still read (model.use_mamba) counts as the one replacing it
    const int legacy = !k && vp_cfg_legacy_target(full) != NULL;
    if (legacy) k = vp_cfg_legacy_target(full);
    if (!k) return vp_cfgy_unknown_key(c, full, line);
    // the same key set twice (nested and dotted forms count as the same key)
    int idx = vp_cfg_key_index(k);
    if (c->set_line[idx])
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: duplicate key '%s' (first set at line %d)", where, full, c->set_line[idx]);
    c->set_line[idx] = line;
    // a mapping or a list where a value belongs
    if (v->type != YAML_SCALAR_EVENT) {
        char what[160];
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: %s: expected %s, got %s", where, full,
                legacy ? "true or false" : vp_cfg_describe(k, what, sizeof what), vp_cfgy_event_noun(v));
    }
    // bytes that are not UTF-8, a NUL, a tag of another type, then the value itself
    if (vp_cfgy_holds_bad(c->t, v)) {
        c->t->bad_named = 1;
        VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d:%d: %s: not valid UTF-8 (byte 0x%02x); a config value must be UTF-8 text",
                c->t->name, c->t->bad_line, c->t->bad_col, full, c->t->bad_byte);
    }
    VP_TRY(vp_cfg_check_text(k, (const char*)v->data.scalar.value, v->data.scalar.length, where));
    vp_cfg_form form;
    VP_TRY(scalar_form(c, full, v, line, &form));
    if (legacy) {
        char mapped[64];
        VP_TRY(vp_cfg_legacy_key(full, (const char*)v->data.scalar.value, form, where, &k, mapped, sizeof mapped));
        return vp_cfg_parse_into(c->cfg, k, mapped, VP_CFG_PLAIN, where);
    }
    return vp_cfg_parse_into(c->cfg, k, (const char*)v->data.scalar.value, form, where);
}

/* One key seen in a mapping: its name and 1-based line. */
typedef struct seen_key {
    char* name;
    int line;
} seen_key;

/* The keys of one mapping, for the duplicate check. */
typedef struct seen_list {
    seen_key* at;
    int n, cap;
} seen_list;

static void seen_free(seen_list* l) {
    for (int i = 0; i < l->n; ++i) free(l->at[i].name);
    free(l->at);
}

/* Records key `name` at `line`, failing when the mapping already has it. */
static vp_status seen_add(const load_ctx* c, seen_list* l, const char* prefix, const char* name, int line) {
    for (int i = 0; i < l->n; ++i)
        if (strcmp(l->at[i].name, name) == 0)
            VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: duplicate key '%s%s%.200s' (first at line %d)", c->t->name, line,
                    prefix, prefix[0] ? "." : "", name, l->at[i].line);
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 16;
        seen_key* at = (seen_key*)realloc(l->at, sizeof *at * (size_t)cap);
        VP_REQUIRE(at != NULL, VP_ERR_OOM, "%s: out of memory", c->t->name);
        l->at = at, l->cap = cap;
    }
    char* copy = strdup(name);
    VP_REQUIRE(copy != NULL, VP_ERR_OOM, "%s: out of memory", c->t->name);
    l->at[l->n++] = (seen_key){copy, line};
    return VP_OK;
}

static vp_status walk_mapping(load_ctx* c, const char* prefix, int depth, int* n_pairs);

/* Handles one key event `ke` of the mapping under `prefix` and its value (read here). */
static vp_status walk_pair(load_ctx* c, const char* prefix, int depth, seen_list* seen, const yaml_event_t* ke) {
    int line = (int)ke->start_mark.line + 1;
    VP_REQUIRE(ke->type == YAML_SCALAR_EVENT, VP_ERR_PARSE, "%s:%d: a key must be a plain name, got %s", c->t->name,
               line, vp_cfgy_event_noun(ke));
    if (vp_cfgy_holds_bad(c->t, ke)) return c->t->bad_named = 1, vp_cfgy_utf8_error(c->t);
    const char* key = (const char*)ke->data.scalar.value;
    VP_TRY(seen_add(c, seen, prefix, key, line));
    char full[512];
    snprintf(full, sizeof full, "%s%s%s", prefix, prefix[0] ? "." : "", key);
    yaml_event_t ve;
    VP_TRY(next_event(c, &ve));
    vp_status s;
    // a nested mapping is a section; under an unknown one the first leaf is reported,
    // so the suggestion can fix the section name ("lern.lr" -> "learn.lr")
    if (ve.type == YAML_MAPPING_START_EVENT && !vp_config_find_key(full)) {
        int n = 0;
        s = check_mapping_tag(c, full, &ve, line);
        if (s == VP_OK) s = walk_mapping(c, full, depth + 1, &n);
        if (s == VP_OK && n == 0 && !vp_cfg_is_section(full)) s = vp_cfgy_unknown_key(c, full, line);
    } else {
        s = set_leaf(c, full, &ve, line);
    }
    yaml_event_delete(&ve);
    return s;
}

/* Walks the mapping under `prefix` ("" at the top) whose start event was just read, up to
 * and including its end; *n_pairs receives its number of keys. */
static vp_status walk_mapping(load_ctx* c, const char* prefix, int depth, int* n_pairs) {
    VP_REQUIRE(depth <= c->max_depth, VP_ERR_PARSE, "%s: nested deeper than %d levels", c->t->name, c->max_depth);
    seen_list seen = {NULL, 0, 0};
    vp_status s = VP_OK;
    for (;;) {
        yaml_event_t ke;
        s = next_event(c, &ke);
        if (s != VP_OK) break;
        if (ke.type == YAML_MAPPING_END_EVENT) {
            yaml_event_delete(&ke);
            break;
        }
        s = walk_pair(c, prefix, depth, &seen, &ke);
        yaml_event_delete(&ke);
        if (s != VP_OK) break;
    }
    *n_pairs = seen.n;
    seen_free(&seen);
    return s;
}

/* Walks the document (the first pass found at most one) into c->cfg. */
static vp_status walk_document(load_ctx* c) {
    // the stream start, then the document start or the end of an empty stream
    yaml_event_t e;
    VP_TRY(next_event(c, &e));
    yaml_event_delete(&e);
    VP_TRY(next_event(c, &e));
    int empty = e.type == YAML_STREAM_END_EVENT;
    yaml_event_delete(&e);
    if (empty) return VP_OK;  // an empty file: nothing to change
    // the root: a mapping of keys
    VP_TRY(next_event(c, &e));
    vp_status s = VP_OK;
    if (e.type != YAML_MAPPING_START_EVENT)
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s:%d: expected a mapping of keys (section: {key: value}), got %s",
                         c->t->name, (int)e.start_mark.line + 1, vp_cfgy_event_noun(&e));
    else s = check_mapping_tag(c, "the document", &e, (int)e.start_mark.line + 1);
    int n = 0;
    if (s == VP_OK) s = walk_mapping(c, "", 1, &n);
    yaml_event_delete(&e);
    return s;
}

/* ---- loading -------------------------------------------------------------------------------- */

/* Loads text[n] (at most VP_CONFIG_MAX_BYTES, checked by the caller) on top of `cfg`; `file`:
 * the config file's path (a data.path it sets is relative to its folder), NULL for a text. */
static vp_status load_text(vp_config* cfg, const char* name, const char* text, size_t n, const char* file) {
    text_in t = {name, (const unsigned char*)text, n, n, 0, 0, 0, 0, 0};
    // find the first byte that is not UTF-8; the passes read a copy with such bytes as '_'
    unsigned char* clean = NULL;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        int len = vp_cfg_utf8_next(t.text + i, n - i, &cp);
        if (len > 0) {
            i += (size_t)len;
            continue;
        }
        if (!clean) {
            clean = (unsigned char*)malloc(n);
            VP_REQUIRE(clean != NULL, VP_ERR_OOM, "%s: out of memory", name);
            memcpy(clean, text, n);
            t.bad = i, t.bad_byte = t.text[i];
        }
        clean[i++] = '_';
    }
    if (clean) {
        t.text = clean;
        vp_cfgy_position(clean, n, t.bad, &t.bad_line, &t.bad_col, &t.bad_index);
    }
    // the shape, then the keys into a copy, committed only when every key is good
    load_ctx c = {&t, {0}, NULL, NULL, vp_cfg_max_parts() + VP_CONFIG_DEPTH_MARGIN};
    vp_status s = vp_cfgy_check_shape(&t, c.max_depth);
    vp_config work = *cfg;
    if (s == VP_OK) {
        c.cfg = &work;
        c.set_line = (int*)calloc((size_t)vp_config_key_count(), sizeof(int));
        if (!c.set_line) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: out of memory", name);
        else if (!yaml_parser_initialize(&c.parser)) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: cannot create the YAML parser", name);
        else {
            yaml_parser_set_input_string(&c.parser, t.text, n);
            s = walk_document(&c);
            yaml_parser_delete(&c.parser);
            // a data.path the file set is relative to its folder
            const int line = c.set_line[vp_cfg_key_index(vp_config_find_key("data.path"))];
            if (s == VP_OK && file && line > 0) {
                char where[600];
                snprintf(where, sizeof where, "%.500s:%d", name, line);
                s = vp_cfg_data_path_from_file(&work, file, where);
            }
        }
        free(c.set_line);
    }
    // a bad byte fails the load, by its key when the walk reached it
    if (t.bad < n && !(s != VP_OK && t.bad_named)) s = vp_cfgy_utf8_error(&t);
    if (s == VP_OK) *cfg = work;
    free(clean);
    return s;
}

vp_status vp_config_load_string(vp_config* cfg, const char* yaml, const char* name) {
    VP_REQUIRE(cfg && yaml, VP_ERR_INVALID_ARG, "vp_config_load_string: cfg and yaml must not be NULL");
    if (!name) name = "<string>";
    size_t n = strnlen(yaml, (size_t)VP_CONFIG_MAX_BYTES + 1);
    VP_REQUIRE(n <= (size_t)VP_CONFIG_MAX_BYTES, VP_ERR_INVALID_ARG,
               "%s: larger than %d bytes; a config is at most 1 MiB", name, VP_CONFIG_MAX_BYTES);
    return load_text(cfg, name, yaml, n, NULL);
}

vp_status vp_config_load_file(vp_config* cfg, const char* path) {
    VP_REQUIRE(cfg && path, VP_ERR_INVALID_ARG, "vp_config_load_file: cfg and path must not be NULL");
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot open config file '%s': %s", path, strerror(errno));
    // the whole file, one byte past the limit at most
    size_t cap = (size_t)VP_CONFIG_MAX_BYTES + 1;
    char* buf = (char*)malloc(cap);
    if (!buf) {
        fclose(f);
        VP_FAIL(VP_ERR_OOM, "%s: out of memory", path);
    }
    size_t n = fread(buf, 1, cap, f);
    int err = ferror(f) ? errno : 0;
    fclose(f);
    vp_status s = VP_OK;
    if (err) s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot read config file '%s': %s", path, strerror(err));
    else if (n > (size_t)VP_CONFIG_MAX_BYTES)
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "%s: larger than %d bytes; a config file is at most 1 MiB", path,
                         VP_CONFIG_MAX_BYTES);
    else s = load_text(cfg, path, buf, n, path);
    free(buf);
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
