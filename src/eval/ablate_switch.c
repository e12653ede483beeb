/* An ablation's switches: "KEY" (a bool key turned on) or "KEY=VALUE", checked against the
 * base config, each refusal naming the switch; and a variant's folder name. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "vulpes/ablate.h"

/* The sections a switch (or a search) may change: what shapes the agent and how it learns. */
static const char* const SECTIONS[] = {"model.", "learn.", "signals.", "replay.", "collect.", "curiosity.", "her.", "env."};

int vp_ablate_key_switchable(const char* name) {
    for (size_t i = 0; i < sizeof SECTIONS / sizeof SECTIONS[0]; ++i)
        if (strncmp(name, SECTIONS[i], strlen(SECTIONS[i])) == 0) return 1;
    return 0;
}

/* The folder name of a variant: the name with characters other than letters, digits and
 * ._=+- made '_' (a name of dots only becomes underscores too). */
static void slug_of(const char* name, char* out, size_t n) {
    size_t i = 0;
    int dots = 1;
    for (; name[i] && i + 1 < n; ++i) {
        const unsigned char c = (unsigned char)name[i];
        out[i] = isalnum(c) || strchr("._=+-", c) ? (char)c : '_';
        if (c != '.') dots = 0;
    }
    out[i] = '\0';
    if (dots) memset(out, '_', i);
}

vp_status vp_ablate_parse_switch(const vp_config* base, const char* text, vp_ablate_variant* out) {
    VP_REQUIRE(base != NULL && text != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_ablate_parse_switch: NULL argument");
    memset(out, 0, sizeof *out);
    VP_REQUIRE(text[0] != '\0', VP_ERR_INVALID_ARG, "switch '': an empty switch (KEY or KEY=VALUE)");
    VP_REQUIRE(strlen(text) < VP_ABLATE_NAME_MAX, VP_ERR_INVALID_ARG, "switch '%.40s...': longer than %d characters",
               text, VP_ABLATE_NAME_MAX - 1);
    // the key and its value ("true" for a bare key)
    char name[VP_ABLATE_NAME_MAX];
    const char* eq = strchr(text, '=');
    const size_t kl = eq ? (size_t)(eq - text) : strlen(text);
    memcpy(name, text, kl);
    name[kl] = '\0';
    const vp_config_key* k = vp_config_find_key(name);
    if (!k) {
        const vp_config_key* near = vp_config_nearest_key(name);
        VP_FAIL(VP_ERR_INVALID_ARG, "switch '%s': unknown key '%s'%s%s%s (vulpes config --defaults lists the keys)", text,
                name, near ? "; did you mean '" : "", near ? near->name : "", near ? "'?" : "");
    }
    VP_REQUIRE(vp_ablate_key_switchable(k->name), VP_ERR_INVALID_ARG,
               "switch '%s': %s is not a switch; an ablation varies only model.*, learn.*, signals.*, replay.*, "
               "collect.*, curiosity.*, her.* and env.* keys (the data, costs, split, loop length and seeds stay the base's)", text, k->name);
    VP_REQUIRE(eq || k->kind == VP_CONFIG_BOOL, VP_ERR_INVALID_ARG,
               "switch '%s': %s is not a bool key, so the switch needs its value: %s=VALUE", text, k->name, k->name);
    snprintf(out->value, sizeof out->value, "%s", eq ? eq + 1 : "true");
    // the value must be one the key takes, and must change the base
    vp_config v = *base;
    char source[VP_ABLATE_NAME_MAX + 16];
    snprintf(source, sizeof source, "switch '%s'", text);
    VP_TRY(vp_config_set(&v, k->name, out->value, source));
    char was[VP_CONFIG_STR_MAX];
    VP_REQUIRE(vp_config_diff(&v, base) != NULL, VP_ERR_INVALID_ARG,
               "switch '%s': the base config already has %s = %s, so the variant would be the base", text, k->name,
               vp_config_format_value(base, k, was, sizeof was));
    snprintf(out->name, sizeof out->name, "%s", text);
    slug_of(text, out->slug, sizeof out->slug);
    out->key = k;
    return VP_OK;
}
