/* libFuzzer target of the configuration loader: the bytes as YAML text
 * (vp_config_load_string), as a file (vp_config_load_file), and each of their first lines
 * as a `key=value` override. A load that succeeds must print back (vp_config_to_yaml) to
 * text that loads to the same configuration; a load that fails must leave it unchanged. */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/config.h"

/* Aborts (a finding) unless `cfg` prints to YAML that loads back to the same values. */
static void check_round_trip(const vp_config* cfg) {
    char* yaml = NULL;
    if (vp_config_to_yaml(cfg, &yaml) != VP_OK) abort();
    vp_config back;
    vp_config_defaults(&back);
    if (vp_config_load_string(&back, yaml, "printed") != VP_OK) {
        fprintf(stderr, "printed config does not load: %s\n%s\n", vp_last_error(), yaml);
        abort();
    }
    const vp_config_key* k = vp_config_diff(cfg, &back);
    if (k) {
        fprintf(stderr, "printed config differs at %s\n", k->name);
        abort();
    }
    free(yaml);
}

/* Loads with `load`'s result `s` into `cfg` (started from `before`) and checks the outcome. */
static void check_outcome(vp_status s, const vp_config* cfg, const vp_config* before) {
    if (s == VP_OK) check_round_trip(cfg);
    else if (vp_config_diff(cfg, before) != NULL) abort();  // a failed load changed the config
    else if (vp_last_error()[0] == '\0') abort();           // a failure says nothing
}

int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    vp_config def, cfg;
    vp_config_defaults(&def);
    // the bytes as text (up to the first NUL)
    char* text = (char*)malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    cfg = def;
    check_outcome(vp_config_load_string(&cfg, text, "fuzz.yaml"), &cfg, &def);
    // the bytes as a file (NULs included)
    char path[] = "/tmp/vp_fuzz_config_XXXXXX";
    int fd = mkstemp(path);
    if (fd >= 0) {
        FILE* f = fdopen(fd, "wb");
        if (f) {
            fwrite(data, 1, size, f);
            fclose(f);
            cfg = def;
            check_outcome(vp_config_load_file(&cfg, path), &cfg, &def);
        } else {
            close(fd);
        }
        remove(path);
    }
    // the first lines as overrides, each on the defaults
    char* line = text;
    for (int i = 0; i < 4 && line && *line; ++i) {
        char* nl = strchr(line, '\n');
        if (nl) *nl = '\0';
        cfg = def;
        check_outcome(vp_config_override(&cfg, line), &cfg, &def);
        line = nl ? nl + 1 : NULL;
    }
    free(text);
    return 0;
}
