/* The paths of a configuration: data.path written in a config file is relative to the file's
 * folder; a run records it absolute, so its config.yaml and checkpoints work from any folder. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config_impl.h"

/* Whether data.path `p` names a file by a relative path (not "", synth: or absolute). */
static int relative_file(const char* p) { return p[0] != '\0' && p[0] != '/' && strncmp(p, "synth:", 6) != 0; }

/* dir[ld] + "/" + name into out[VP_CONFIG_STR_MAX] (no second '/' after a dir ending in one);
 * 0 when it does not fit. */
static int join(const char* dir, size_t ld, const char* name, char* out) {
    const size_t ln = strlen(name), sep = ld > 0 && dir[ld - 1] == '/' ? 0 : 1;
    if (ld + sep + ln >= VP_CONFIG_STR_MAX) return 0;
    memcpy(out, dir, ld);
    if (sep) out[ld] = '/';
    memcpy(out + ld + sep, name, ln + 1);
    return 1;
}

vp_status vp_cfg_data_path_from_file(vp_config* cfg, const char* config_path, const char* where) {
    char* p = cfg->data.path;
    const char* slash = strrchr(config_path, '/');
    if (!relative_file(p) || !slash) return VP_OK; /* a file in the working directory: its folder is "." */
    const size_t ld = slash == config_path ? 1 : (size_t)(slash - config_path);
    char name[VP_CONFIG_STR_MAX];
    memcpy(name, p, strlen(p) + 1);
    VP_REQUIRE(join(config_path, ld, name, p), VP_ERR_INVALID_ARG,
               "%s: data.path '%.200s' joined to the config file's folder '%.*s' is longer than %d bytes", where, name,
               (int)(ld > 200 ? 200 : ld), config_path, VP_CONFIG_STR_MAX - 1);
    return VP_OK;
}

vp_status vp_config_absolute_data_path(vp_config* cfg) {
    VP_REQUIRE(cfg != NULL, VP_ERR_INVALID_ARG, "vp_config_absolute_data_path: cfg is NULL");
    char* p = cfg->data.path;
    if (!relative_file(p)) return VP_OK;
    // the file itself (links and ".." resolved), else the working directory in front
    char* real = realpath(p, NULL);
    if (real) {
        const size_t n = strlen(real);
        if (n < VP_CONFIG_STR_MAX) memcpy(p, real, n + 1);
        free(real);
        VP_REQUIRE(n < VP_CONFIG_STR_MAX, VP_ERR_INVALID_ARG, "data.path '%.200s': its absolute path is longer than %d "
                   "bytes", p, VP_CONFIG_STR_MAX - 1);
        return VP_OK;
    }
    char cwd[4096];
    VP_REQUIRE(getcwd(cwd, sizeof cwd) != NULL, VP_ERR_IO, "data.path '%.200s': cannot name the working directory",
               p);
    char name[VP_CONFIG_STR_MAX];
    memcpy(name, p, strlen(p) + 1);
    VP_REQUIRE(join(cwd, strlen(cwd), name, p), VP_ERR_INVALID_ARG,
               "data.path '%.200s': its absolute path is longer than %d bytes", name, VP_CONFIG_STR_MAX - 1);
    return VP_OK;
}
