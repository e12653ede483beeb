/* The run folder: its default name, creation, the refusal to overwrite, config.yaml and
 * metrics.jsonl. */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vulpes/run.h"

const char* vp_run_name_from_path(const char* config_path, char* out, size_t n) {
    // the file name without its folder and extension
    const char* base = config_path ? strrchr(config_path, '/') : NULL;
    base = base ? base + 1 : config_path;
    size_t len = base ? strlen(base) : 0;
    const char* dot = base ? strrchr(base, '.') : NULL;
    if (dot && dot != base) len = (size_t)(dot - base);
    if (len == 0) snprintf(out, n, "run");
    else snprintf(out, n, "%.*s", (int)len, base);
    return out;
}

vp_status vp_run_dir_default(char* out, size_t n, const char* root, const char* name, time_t when) {
    VP_REQUIRE(out && n && root && name, VP_ERR_INVALID_ARG, "vp_run_dir_default: out, root and name must be given");
    struct tm tm;
    VP_REQUIRE(localtime_r(&when, &tm) != NULL, VP_ERR_INVALID_ARG, "vp_run_dir_default: bad time %lld",
               (long long)when);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    // the first of NAME, NAME-2, NAME-3, ... that does not exist yet
    for (int i = 1; i < 10000; ++i) {
        int len = i == 1 ? snprintf(out, n, "%s/%s-%s", root, stamp, name)
                         : snprintf(out, n, "%s/%s-%s-%d", root, stamp, name, i);
        VP_REQUIRE(len > 0 && (size_t)len < n, VP_ERR_INVALID_ARG, "run folder name under '%s' is too long", root);
        struct stat st;
        if (stat(out, &st) != 0 && errno == ENOENT) return VP_OK;
    }
    VP_FAIL(VP_ERR_IO, "no free run folder name under '%s' for %s-%s", root, stamp, name);
}

/* Makes `dir` and its parents (like mkdir -p). */
static vp_status make_dirs(const char* dir) {
    char path[VP_RUN_PATH_MAX];
    snprintf(path, sizeof path, "%s", dir);
    size_t len = strlen(path);
    for (size_t i = 1; i <= len; ++i) {
        if (path[i] != '/' && path[i] != '\0') continue;
        char keep = path[i];
        path[i] = '\0';
        if (mkdir(path, 0777) != 0 && errno != EEXIST)
            VP_FAIL(VP_ERR_IO, "cannot create folder '%s': %s", path, strerror(errno));
        path[i] = keep;
    }
    struct stat st;
    VP_REQUIRE(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), VP_ERR_IO, "'%s' exists and is not a folder", dir);
    return VP_OK;
}

/* Whether `name` is a file a run writes (removed by VP_RUN_FORCE). */
static int is_run_file(const char* name) {
    static const char* files[] = {"config.yaml", "metrics.jsonl", "trades.csv", "equity.csv", "summary.json",
                                  "report.html"};
    static const char* suffixes[] = {".safetensors", ".tmp"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i)
        if (strcmp(name, files[i]) == 0) return 1;
    size_t len = strlen(name);
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; ++i) {
        size_t sl = strlen(suffixes[i]);
        if (len > sl && strcmp(name + len - sl, suffixes[i]) == 0) return 1;
    }
    return 0;
}

/* Counts the entries of `dir` (. and .. aside); with `remove_run_files`, removes the run
 * files first and counts what stays. */
static vp_status scan_dir(const char* dir, int remove_run_files, int* entries) {
    DIR* d = opendir(dir);
    VP_REQUIRE(d != NULL, VP_ERR_IO, "cannot read folder '%s': %s", dir, strerror(errno));
    *entries = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (remove_run_files && is_run_file(e->d_name)) {
            char path[VP_RUN_PATH_MAX + 256];
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            if (remove(path) == 0) continue;
            int err = errno;
            closedir(d);
            VP_FAIL(VP_ERR_IO, "cannot remove '%s' from the old run: %s", path, strerror(err));
        }
        ++*entries;
    }
    closedir(d);
    return VP_OK;
}

vp_status vp_run_path(const vp_run* r, const char* file, char* out, size_t n) {
    VP_REQUIRE(r && file && out, VP_ERR_INVALID_ARG, "vp_run_path: r, file and out must not be NULL");
    int len = snprintf(out, n, "%s/%s", r->dir, file);
    VP_REQUIRE(len > 0 && (size_t)len < n, VP_ERR_INVALID_ARG, "path '%s/%s' is too long", r->dir, file);
    return VP_OK;
}

vp_status vp_run_open(vp_run* r, const char* dir, vp_run_mode mode, const vp_config* cfg) {
    VP_REQUIRE(r && dir && dir[0], VP_ERR_INVALID_ARG, "vp_run_open: r and dir must be given");
    VP_REQUIRE((int)mode >= 0 && mode < VP_RUN_MODE_COUNT, VP_ERR_INVALID_ARG, "vp_run_open: bad mode %d", (int)mode);
    VP_REQUIRE(cfg || mode == VP_RUN_RESUME, VP_ERR_INVALID_ARG, "vp_run_open: a new run needs its config");
    memset(r, 0, sizeof *r);
    VP_REQUIRE(strlen(dir) + 32 < sizeof r->dir, VP_ERR_INVALID_ARG, "run folder '%.200s...' is too long", dir);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    char path[VP_RUN_PATH_MAX];
    // a resumed run continues in place
    if (mode == VP_RUN_RESUME) {
        VP_TRY(vp_run_path(r, "config.yaml", path, sizeof path));
        VP_REQUIRE(access(path, R_OK) == 0, VP_ERR_IO, "cannot resume '%s': it has no config.yaml", dir);
        VP_TRY(vp_run_path(r, "metrics.jsonl", path, sizeof path));
        return vp_metrics_log_open(&r->metrics, path, 1);
    }
    // a new run: an empty folder, or one cleared of an old run's files when forced
    VP_TRY(make_dirs(dir));
    int entries = 0;
    VP_TRY(scan_dir(dir, mode == VP_RUN_FORCE, &entries));
    VP_REQUIRE(mode == VP_RUN_FORCE || entries == 0, VP_ERR_STATE,
               "run folder '%s' exists and is not empty; pass --force to overwrite it, or choose another with --out",
               dir);
    // the resolved config, then the metrics file
    VP_TRY(vp_run_path(r, "config.yaml", path, sizeof path));
    VP_TRY(vp_config_write_yaml(cfg, path));
    VP_TRY(vp_run_path(r, "metrics.jsonl", path, sizeof path));
    return vp_metrics_log_open(&r->metrics, path, 0);
}

void vp_run_close(vp_run* r) {
    if (r) vp_metrics_log_close(&r->metrics);
}
