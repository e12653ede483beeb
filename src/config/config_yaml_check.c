/* The YAML config loader's first pass (the events' shape and limits, docs/config.md) and
 * the messages both passes give: positions, the event's name, tags, parse and UTF-8
 * errors, an unknown key. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <string.h>

#include "config/config_yaml.h"

/* ---- positions and messages -------------------------------------------------------------- */

/* The 1-based line and column and the character index (a BOM not counted, as libyaml
 * counts) of byte `off` of s[n]. */
void vp_cfgy_position(const unsigned char* s, size_t n, size_t off, int* line, int* col, size_t* index) {
    size_t i = n >= 3 && s[0] == 0xef && s[1] == 0xbb && s[2] == 0xbf ? 3 : 0;
    int l = 1, c = 1;
    size_t idx = 0;
    for (; i < off && i < n; ++i) {
        if ((s[i] & 0xc0) == 0x80) continue;  // a continuation byte: same character
        ++idx;
        if (s[i] == '\n' || (s[i] == '\r' && (i + 1 >= n || s[i + 1] != '\n'))) l++, c = 1;
        else if (s[i] != '\r') c++;
    }
    *line = l, *col = c, *index = idx;
}

/* A node's kind (from the event that starts it) as a noun for messages. */
const char* vp_cfgy_event_noun(const yaml_event_t* e) {
    return e->type == YAML_MAPPING_START_EVENT ? "a mapping" : e->type == YAML_SEQUENCE_START_EVENT ? "a list" : "a value";
}

/* A tag as written: "!!str" for the core schema's, else as is. */
const char* vp_cfgy_tag_text(const char* tag, char* buf, size_t n) {
    size_t p = strlen(TAG_PREFIX);
    if (strncmp(tag, TAG_PREFIX, p) == 0) snprintf(buf, n, "!!%.100s", tag + p);
    else snprintf(buf, n, "%.100s", tag);
    return buf;
}

/* Fails with the parser's problem: "FILE:LINE[:COL]: malformed YAML: PROBLEM[ CONTEXT]". */
vp_status vp_cfgy_parse_error(const text_in* t, const yaml_parser_t* p) {
    const char* problem = p->problem ? p->problem : "parse error";
    // a reader error (a control character) has a byte offset, the others a mark
    if (p->error == YAML_READER_ERROR) {
        int line, col;
        size_t idx;
        vp_cfgy_position(t->text, t->n, p->problem_offset, &line, &col, &idx);
        VP_FAIL(VP_ERR_PARSE, "%s:%d:%d: malformed YAML: %s (U+%04X)", t->name, line, col, problem,
                (unsigned)p->problem_value);
    }
    char ctx[160] = "";
    if (p->context)
        snprintf(ctx, sizeof ctx, " %s started at line %d", p->context, (int)p->context_mark.line + 1);
    VP_FAIL(VP_ERR_PARSE, "%s:%d: malformed YAML: %s%s", t->name, (int)p->problem_mark.line + 1, problem, ctx);
}

/* Fails with "FILE:LINE:COL: not valid UTF-8 (byte 0xNN)" at the text's first bad byte. */
vp_status vp_cfgy_utf8_error(const text_in* t) {
    VP_FAIL(VP_ERR_PARSE, "%s:%d:%d: not valid UTF-8 (byte 0x%02x); a config file is UTF-8 text", t->name,
            t->bad_line, t->bad_col, t->bad_byte);
}

/* Whether scalar event `e` spans the text's first bad byte. */
int vp_cfgy_holds_bad(const text_in* t, const yaml_event_t* e) {
    return t->bad < t->n && e->start_mark.index <= t->bad_index && t->bad_index < e->end_mark.index;
}

/* Fails with "FILE:LINE:COL: unknown key 'K' (did you mean 'N'?)". */
vp_status vp_cfgy_unknown_key(const load_ctx* c, const char* full, int line) {
    VP_FAIL(VP_ERR_INVALID_ARG, "%s:%d: unknown key '%.200s' (did you mean '%s'?)", c->t->name, line, full,
            vp_config_nearest_key(full)->name);
}

/* ---- the first pass: shape and limits ------------------------------------------------------ */

/* Fails when event `e` carries an anchor or is an alias. */
static vp_status check_anchor(const text_in* t, const yaml_event_t* e) {
    const yaml_char_t* anchor = e->type == YAML_ALIAS_EVENT          ? e->data.alias.anchor
                                : e->type == YAML_SCALAR_EVENT         ? e->data.scalar.anchor
                                : e->type == YAML_MAPPING_START_EVENT  ? e->data.mapping_start.anchor
                                : e->type == YAML_SEQUENCE_START_EVENT ? e->data.sequence_start.anchor
                                                                       : NULL;
    if (!anchor && e->type != YAML_ALIAS_EVENT) return VP_OK;
    VP_FAIL(VP_ERR_PARSE, "%s:%d:%d: YAML anchors and aliases are not supported (%s '%c%.100s'); write each value out",
            t->name, (int)e->start_mark.line + 1, (int)e->start_mark.column + 1,
            e->type == YAML_ALIAS_EVENT ? "alias" : "anchor", e->type == YAML_ALIAS_EVENT ? '*' : '&',
            anchor ? (const char*)anchor : "");
}

/* Reads every event of the text once: syntax, anchors and aliases, one document, depth. */
vp_status vp_cfgy_check_shape(const text_in* t, int max_depth) {
    yaml_parser_t p;
    VP_REQUIRE(yaml_parser_initialize(&p), VP_ERR_OOM, "%s: cannot create the YAML parser", t->name);
    yaml_parser_set_input_string(&p, t->text, t->n);
    vp_status s = VP_OK;
    int depth = 0, docs = 0;
    for (int done = 0; !done && s == VP_OK;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) {
            s = vp_cfgy_parse_error(t, &p);
            break;
        }
        s = check_anchor(t, &e);
        int line = (int)e.start_mark.line + 1, col = (int)e.start_mark.column + 1;
        switch (e.type) {
        case YAML_STREAM_END_EVENT: done = 1; break;
        case YAML_DOCUMENT_START_EVENT:
            if (s == VP_OK && ++docs > 1)
                s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s:%d: a second YAML document; a config file holds one mapping",
                                 t->name, line);
            break;
        case YAML_MAPPING_START_EVENT:
        case YAML_SEQUENCE_START_EVENT:
            if (s == VP_OK && ++depth > max_depth)
                s = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                                 "%s:%d:%d: mappings and lists nested deeper than %d levels (the deepest key, "
                                 "section.key, is %d deep)", t->name, line, col, max_depth, vp_cfg_max_parts());
            break;
        case YAML_MAPPING_END_EVENT:
        case YAML_SEQUENCE_END_EVENT: --depth; break;
        default: break;
        }
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    return s;
}
