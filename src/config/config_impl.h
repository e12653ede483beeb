/* Internal helpers shared by the configuration sources (table, values, YAML, printing). */
#ifndef VP_CONFIG_IMPL_H
#define VP_CONFIG_IMPL_H

#include <stdint.h>

#include "vulpes/config.h"

/* The field of key `k` inside `cfg`. */
static inline void* vp_cfg_field(vp_config* cfg, const vp_config_key* k) {
    return (char*)cfg + k->offset;
}

/* The field of key `k` inside a const `cfg`. */
static inline const void* vp_cfg_cfield(const vp_config* cfg, const vp_config_key* k) {
    return (const char*)cfg + k->offset;
}

/* Index of the table entry `k` (0 .. count-1). */
int vp_cfg_key_index(const vp_config_key* k);

/* What key `k` accepts, as a phrase: "an integer >= 1", "a number in (0, 1]",
 * "true or false", "a string", "one of auto, cpu, cuda"; written into buf[n]. */
const char* vp_cfg_describe(const vp_config_key* k, char* buf, size_t n);

/* The range of an INT / FLOAT key in interval notation ("[1, inf)"), "" for the others. */
const char* vp_cfg_range(const vp_config_key* k, char* buf, size_t n);

/* How a YAML scalar was written: its style, or the core-schema tag it carries. */
typedef enum vp_cfg_form {
    VP_CFG_PLAIN = 0,  /* plain and untagged: its text decides (3, 1e-4, true, cpu) */
    VP_CFG_QUOTED,     /* quoted ('x', "x") or the non-specific tag "!": a string */
    VP_CFG_TAG_STR,    /* !!str: a string */
    VP_CFG_TAG_INT,    /* !!int */
    VP_CFG_TAG_FLOAT,  /* !!float */
    VP_CFG_TAG_BOOL,   /* !!bool */
    VP_CFG_TAG_NULL,   /* !!null */
    VP_CFG_FORM_COUNT
} vp_cfg_form;

/* Parses `text` into key `k` of `cfg`: a string only into STRING and ENUM keys, a tag only
 * into a key of its type; the text must be UTF-8 that a config file can hold (see
 * vp_cfg_check_text). `source` starts the message ("run.yaml:12"). */
vp_status vp_cfg_parse_into(vp_config* cfg, const vp_config_key* k, const char* text, vp_cfg_form form,
                            const char* source);

/* The key that replaced `name` when an older table had it and it is still read
 * (model.use_mamba: model.encoder); NULL for any other name. */
const vp_config_key* vp_cfg_legacy_target(const char* name);

/* A key that an older table had and that is still read (model.use_mamba): when `name` is one,
 * *k becomes the key that replaced it and value[n] the replacement's value for `text` (given
 * in `form`), with a deprecation warning logged; a text the old key would not take fails naming
 * the old key. *k stays NULL for any other name. */
vp_status vp_cfg_legacy_key(const char* name, const char* text, vp_cfg_form form, const char* source,
                            const vp_config_key** k, char* value, size_t n);

/* Length of the well-formed UTF-8 sequence at s[0..n) (1..4) with its code point in *cp;
 * 0 when s starts with a byte that begins none (overlong forms, surrogates and code points
 * past U+10FFFF are not well formed). */
int vp_cfg_utf8_next(const unsigned char* s, size_t n, uint32_t* cp);

/* Checks that text[0..n) is a value a config file can hold: no NUL, well-formed UTF-8 and no
 * code point that YAML would not carry back (C1 controls, U+2028, U+2029, U+FEFF, U+FFFE,
 * U+FFFF); fails with "SOURCE: KEY: ..." naming the offending byte. */
vp_status vp_cfg_check_text(const vp_config_key* k, const char* text, size_t n, const char* source);

/* Whether some key's name starts with `prefix` followed by a '.' (a section name). */
int vp_cfg_is_section(const char* prefix);

/* The most dotted parts of any key's name (2: "section.key"). */
int vp_cfg_max_parts(void);

/* Shortest decimal text of `v` that reads back to the same double, valid as a YAML 1.1
 * and 1.2 float (".inf", "1.0e-05"); written into buf[n]. */
const char* vp_cfg_format_double(double v, char* buf, size_t n);

/* data.path as set by the config file `config_path` (at `where`, "run.yaml:3"): a relative
 * path joined to the file's folder; absolute paths, synth: specs and "" unchanged. */
vp_status vp_cfg_data_path_from_file(vp_config* cfg, const char* config_path, const char* where);

#endif /* VP_CONFIG_IMPL_H */
