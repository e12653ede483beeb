/* Internal helpers shared by the configuration sources (table, values, YAML, printing). */
#ifndef VP_CONFIG_IMPL_H
#define VP_CONFIG_IMPL_H

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

/* Parses `text` into key `k` of `cfg`. `quoted`: the YAML scalar was quoted (then only
 * STRING and ENUM keys take it). `source` starts the message ("run.yaml:12"). */
vp_status vp_cfg_parse_into(vp_config* cfg, const vp_config_key* k, const char* text, int quoted,
                            const char* source);

/* Whether some key's name starts with `prefix` followed by a '.' (a section name). */
int vp_cfg_is_section(const char* prefix);

/* Shortest decimal text of `v` that reads back to the same double, valid as a YAML 1.1
 * and 1.2 float (".inf", "1.0e-05"); written into buf[n]. */
const char* vp_cfg_format_double(double v, char* buf, size_t n);

#endif /* VP_CONFIG_IMPL_H */
