/* Writing a configuration: plain YAML (run folders, checkpoint metadata), YAML with
 * every key's documentation (`vulpes config --defaults`) and Markdown tables (docs). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_impl.h"

/* The section part of a dotted name, written into buf[n]. */
static const char* section_of(const char* name, char* buf, size_t n) {
    size_t len = strcspn(name, ".");
    if (len >= n) len = n - 1;
    memcpy(buf, name, len);
    buf[len] = '\0';
    return buf;
}

/* Writes `s` as a double-quoted YAML string. */
static void put_quoted(FILE* out, const char* s) {
    fputc('"', out);
    for (const unsigned char* p = (const unsigned char*)s; *p; ++p) {
        if (*p == '"' || *p == '\\') fprintf(out, "\\%c", *p);
        else if (*p == '\n') fputs("\\n", out);
        else if (*p == '\t') fputs("\\t", out);
        else if (*p < 0x20 || *p == 0x7f) fprintf(out, "\\x%02x", *p);
        else fputc(*p, out);
    }
    fputc('"', out);
}

/* The type column of a key. */
static const char* kind_name(vp_config_kind kind) {
    static const char* names[VP_CONFIG_KIND_COUNT] = {"int", "float", "bool", "string", "enum"};
    return (int)kind >= 0 && kind < VP_CONFIG_KIND_COUNT ? names[kind] : "?";
}

/* Writes one key's YAML line (indented under its section). */
static void put_value_line(FILE* out, const vp_config* cfg, const vp_config_key* k) {
    char val[VP_CONFIG_STR_MAX + 8];
    fprintf(out, "  %s: ", strchr(k->name, '.') + 1);
    vp_config_format_value(cfg, k, val, sizeof val);
    if (k->kind == VP_CONFIG_STRING) put_quoted(out, val);
    else fputs(val, out);
    fputc('\n', out);
}

/* YAML, nested by section; `docs` puts each key's doc, type and range above it. */
static void print_yaml(const vp_config* cfg, FILE* out, int docs) {
    char sec[64] = "", cur[64], what[160];
    if (docs)
        fprintf(out, "# vulpes configuration: every key with its default value (vulpes config --defaults).\n"
                     "# Train with `vulpes train FILE [key=value ...]`; overrides apply after the file.\n");
    for (int i = 0; i < vp_config_key_count(); ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        // a header when the section changes
        section_of(k->name, cur, sizeof cur);
        if (strcmp(cur, sec) != 0) {
            if (docs) fputc('\n', out);
            fprintf(out, "%s:\n", cur);
            snprintf(sec, sizeof sec, "%s", cur);
        }
        if (docs) fprintf(out, "  # %s -- %s\n", k->doc, vp_cfg_describe(k, what, sizeof what));
        put_value_line(out, cfg, k);
    }
}

/* Writes `s` with '|' escaped for a Markdown table cell. */
static void put_cell(FILE* out, const char* s) {
    for (; *s; ++s) {
        if (*s == '|') fputc('\\', out);
        fputc(*s, out);
    }
}

/* A Markdown table per section: key, type, default, allowed values, meaning. */
static void print_markdown(const vp_config* cfg, FILE* out) {
    char sec[64] = "", cur[64], val[VP_CONFIG_STR_MAX + 8], range[128];
    for (int i = 0; i < vp_config_key_count(); ++i) {
        const vp_config_key* k = vp_config_key_at(i);
        // a heading and a table head when the section changes
        section_of(k->name, cur, sizeof cur);
        if (strcmp(cur, sec) != 0) {
            fprintf(out, "%s### %s\n\n| key | type | default | allowed | meaning |\n| --- | --- | --- | --- | --- |\n",
                    sec[0] ? "\n" : "", cur);
            snprintf(sec, sizeof sec, "%s", cur);
        }
        // the allowed column: an interval, the enum's values, or nothing
        vp_config_format_value(cfg, k, val, sizeof val);
        if (k->kind == VP_CONFIG_ENUM) {
            size_t len = 0;
            char v[64];
            range[0] = '\0';
            for (int j = 0; vp_config_enum_name(k, j, v, sizeof v)[0]; ++j)
                len += (size_t)snprintf(range + len, sizeof range - len, "%s`%s`", j ? ", " : "", v);
        } else if (k->kind == VP_CONFIG_BOOL) {
            snprintf(range, sizeof range, "`true`, `false`");
        } else {
            vp_cfg_range(k, range, sizeof range);
        }
        fprintf(out, "| `%s` | %s | `%s%s%s` | ", k->name, kind_name(k->kind), k->kind == VP_CONFIG_STRING ? "\"" : "",
                val, k->kind == VP_CONFIG_STRING ? "\"" : "");
        put_cell(out, range);
        fputs(" | ", out);
        put_cell(out, k->doc);
        fputs(" |\n", out);
    }
}

vp_status vp_config_print(const vp_config* cfg, vp_config_style style, FILE* out) {
    VP_REQUIRE(cfg && out, VP_ERR_INVALID_ARG, "vp_config_print: cfg and out must not be NULL");
    VP_REQUIRE((int)style >= 0 && style < VP_CONFIG_STYLE_COUNT, VP_ERR_INVALID_ARG,
               "vp_config_print: unknown style %d", (int)style);
    if (style == VP_CONFIG_STYLE_MARKDOWN) print_markdown(cfg, out);
    else print_yaml(cfg, out, style == VP_CONFIG_STYLE_DOCS);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the configuration failed: %s", strerror(errno));
    return VP_OK;
}

vp_status vp_config_to_yaml(const vp_config* cfg, char** out) {
    VP_REQUIRE(cfg && out, VP_ERR_INVALID_ARG, "vp_config_to_yaml: cfg and out must not be NULL");
    *out = NULL;
    // print into a memory stream
    size_t len = 0;
    FILE* mem = open_memstream(out, &len);
    VP_REQUIRE(mem != NULL, VP_ERR_OOM, "vp_config_to_yaml: cannot open a memory stream");
    vp_status s = vp_config_print(cfg, VP_CONFIG_STYLE_YAML, mem);
    if (fclose(mem) != 0 && s == VP_OK) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_config_to_yaml: out of memory");
    if (s != VP_OK) {
        free(*out);
        *out = NULL;
    }
    return s;
}
