/* Internal: what the two passes of the YAML config loader share (config_load.c walks the
 * keys, config_yaml_check.c holds the first pass and the messages both passes give). */
#ifndef VP_CONFIG_YAML_H
#define VP_CONFIG_YAML_H

#include <stddef.h>
#include <yaml.h>

#include "config/config_impl.h"

/* One load's text, and where its first byte that is not UTF-8 lies. */
typedef struct text_in {
    const char* name;           /* file name in messages */
    const unsigned char* text;  /* [n] what the parser reads (the given text, or the cleaned copy) */
    size_t n;                   /* bytes */
    size_t bad;                 /* byte offset of the first byte that is not UTF-8; n when none */
    unsigned bad_byte;          /* its value */
    size_t bad_index;           /* its character index (libyaml's yaml_mark_t.index) */
    int bad_line, bad_col;      /* its 1-based line and column */
    int bad_named;              /* the walk failed on it, naming the key */
} text_in;

/* State of the walk over one document. */
typedef struct load_ctx {
    text_in* t;
    yaml_parser_t parser;
    vp_config* cfg;  /* values being filled (a copy; committed on success) */
    int* set_line;   /* [n_keys] 1-based line where each key was set, 0 if not yet */
    int max_depth;   /* mappings and lists nested at most this deep */
} load_ctx;

/* The core-schema tags, as libyaml spells them after resolving "!!". */
#define TAG_PREFIX "tag:yaml.org,2002:"

/* The 1-based line and column and the character index (a BOM not counted, as libyaml
 * counts) of byte `off` of s[n]. */
void vp_cfgy_position(const unsigned char* s, size_t n, size_t off, int* line, int* col, size_t* index);

/* A node's kind (from the event that starts it) as a noun for messages. */
const char* vp_cfgy_event_noun(const yaml_event_t* e);

/* A tag as written: "!!str" for the core schema's, else as is. */
const char* vp_cfgy_tag_text(const char* tag, char* buf, size_t n);

/* Fails with the parser's problem: "FILE:LINE[:COL]: malformed YAML: PROBLEM[ CONTEXT]". */
vp_status vp_cfgy_parse_error(const text_in* t, const yaml_parser_t* p);

/* Fails with "FILE:LINE:COL: not valid UTF-8 (byte 0xNN)" at the text's first bad byte. */
vp_status vp_cfgy_utf8_error(const text_in* t);

/* Whether scalar event `e` spans the text's first bad byte. */
int vp_cfgy_holds_bad(const text_in* t, const yaml_event_t* e);

/* Fails with "FILE:LINE:COL: unknown key 'K' (did you mean 'N'?)". */
vp_status vp_cfgy_unknown_key(const load_ctx* c, const char* full, int line);

/* Reads every event of the text once: syntax, anchors and aliases, one document, depth. */
vp_status vp_cfgy_check_shape(const text_in* t, int max_depth);

#endif /* VP_CONFIG_YAML_H */
