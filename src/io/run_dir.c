/* The run folder: its default name, creation, the lock, the refusal to overwrite (or the
 * old run's files moved aside), config.yaml and metrics.jsonl. */
#define _DEFAULT_SOURCE /* flock */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

/* Whether `name` is a file a run writes (moved aside by VP_RUN_FORCE): the run's own names
 * and their temporary files, not every *.safetensors or *.tmp. */
static int is_run_file(const char* name) {
    static const char* files[] = {"config.yaml",  "metrics.jsonl", "last.safetensors", "best.safetensors",
                                  "summary.json", "trades.csv",    "equity.csv",       "report.html",
                                  "walkforward.json", "folds", "events.out.tfevents.metrics"};
    const size_t len = strlen(name);
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i) {
        const size_t fl = strlen(files[i]);
        if (strcmp(name, files[i]) == 0) return 1;
        if (len == fl + 4 && strncmp(name, files[i], fl) == 0 && strcmp(name + fl, ".tmp") == 0) return 1;
    }
    return 0;
}

/* The lock file's name. */
#define LOCK_NAME ".lock"

/* Counts the entries of `dir` (., .. and the lock aside). */
static vp_status count_entries(const char* dir, int* entries) {
    DIR* d = opendir(dir);
    VP_REQUIRE(d != NULL, VP_ERR_IO, "cannot read folder '%s': %s", dir, strerror(errno));
    *entries = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 && strcmp(e->d_name, LOCK_NAME) != 0)
            ++*entries;
    closedir(d);
    return VP_OK;
}

/* Moves the run files of `dir` into a new dir/replaced-N (made at the first one). */
static vp_status move_aside(const char* dir) {
    DIR* d = opendir(dir);
    VP_REQUIRE(d != NULL, VP_ERR_IO, "cannot read folder '%s': %s", dir, strerror(errno));
    char aside[VP_RUN_PATH_MAX + 32] = "", from[VP_RUN_PATH_MAX + 256], to[VP_RUN_PATH_MAX + 300];
    vp_status s = VP_OK;
    struct dirent* e;
    while (s == VP_OK && (e = readdir(d)) != NULL) {
        if (!is_run_file(e->d_name)) continue;
        // the first free replaced-N, made once
        for (int i = 1; !aside[0] && i < 100000; ++i) {
            snprintf(aside, sizeof aside, "%s/replaced-%d", dir, i);
            if (mkdir(aside, 0777) == 0) break;
            if (errno != EEXIST) {
                s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot make '%s' for the old run's files: %s", aside,
                                 strerror(errno));
            }
            aside[0] = '\0';
            if (s != VP_OK) break;
        }
        if (s == VP_OK && !aside[0])
            s = vp_set_error(VP_ERR_IO, VP_WHERE, "no free replaced-N folder in '%s' for the old run's files", dir);
        if (s != VP_OK) break;
        snprintf(from, sizeof from, "%s/%s", dir, e->d_name);
        snprintf(to, sizeof to, "%s/%s", aside, e->d_name);
        if (rename(from, to) != 0)
            s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot move '%s' of the old run to '%s': %s", from, aside,
                             strerror(errno));
    }
    closedir(d);
    return s;
}

/* The pid written in the lock file `fd` ("?" when unreadable) into out[n]. */
static void lock_holder(int fd, char* out, size_t n) {
    char buf[32];
    ssize_t got = pread(fd, buf, sizeof buf - 1, 0);
    long pid = 0;
    if (got > 0) {
        buf[got] = '\0';
        pid = strtol(buf, NULL, 10);
    }
    if (pid > 0) snprintf(out, n, "%ld", pid);
    else snprintf(out, n, "?");
}

/* Takes the exclusive lock on dir/.lock and writes this process's pid into it. A lock file
 * removed by its holder between our open and flock is not the folder's lock: open again. */
static vp_status take_lock(vp_run* r) {
    char path[VP_RUN_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, r->dir);
    for (int attempt = 0; attempt < 16; ++attempt) {
        int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
        VP_REQUIRE(fd >= 0, VP_ERR_IO, "cannot open the lock file '%s': %s", path, strerror(errno));
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            const int err = errno;
            char pid[32];
            lock_holder(fd, pid, sizeof pid);
            close(fd);
            VP_REQUIRE(err != EWOULDBLOCK, VP_ERR_STATE, "run folder %s is in use by another vulpes process (pid %s)",
                       r->dir, pid);
            VP_FAIL(VP_ERR_IO, "cannot lock '%s': %s", path, strerror(err));
        }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(path, &named) == 0 && held.st_dev == named.st_dev &&
            held.st_ino == named.st_ino) {
            char pid[32];
            const int k = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
            if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)k, 0) != k) {
                const int err = errno;
                close(fd);
                VP_FAIL(VP_ERR_IO, "cannot write the lock file '%s': %s", path, strerror(err));
            }
            r->lock_fd = fd;
            r->locked = 1;
            return VP_OK;
        }
        close(fd);
    }
    VP_FAIL(VP_ERR_IO, "cannot lock '%s': it keeps being replaced", path);
}

vp_status vp_run_path(const vp_run* r, const char* file, char* out, size_t n) {
    VP_REQUIRE(r && file && out, VP_ERR_INVALID_ARG, "vp_run_path: r, file and out must not be NULL");
    int len = snprintf(out, n, "%s/%s", r->dir, file);
    VP_REQUIRE(len > 0 && (size_t)len < n, VP_ERR_INVALID_ARG, "path '%s/%s' is too long", r->dir, file);
    return VP_OK;
}

vp_status vp_run_claim(vp_run* r, const char* dir, vp_run_mode mode) {
    VP_REQUIRE(r && dir && dir[0], VP_ERR_INVALID_ARG, "vp_run_claim: r and dir must be given");
    memset(r, 0, sizeof *r);
    r->lock_fd = -1;
    VP_REQUIRE((int)mode >= 0 && mode < VP_RUN_MODE_COUNT, VP_ERR_INVALID_ARG, "vp_run_claim: bad mode %d", (int)mode);
    VP_REQUIRE(strlen(dir) + 32 < sizeof r->dir, VP_ERR_INVALID_ARG, "run folder '%.200s...' is too long", dir);
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->mode = mode;
    char path[VP_RUN_PATH_MAX];
    // a resumed run continues in place; a new one may make its folder
    if (mode == VP_RUN_RESUME) {
        VP_TRY(vp_run_path(r, "config.yaml", path, sizeof path));
        VP_REQUIRE(access(path, R_OK) == 0, VP_ERR_IO, "cannot resume '%s': it has no config.yaml", dir);
    } else {
        VP_TRY(make_dirs(dir));
    }
    VP_TRY(take_lock(r));
    // a new run needs an empty folder unless forced
    int entries = 0;
    vp_status s = mode == VP_RUN_CREATE ? count_entries(dir, &entries) : VP_OK;
    if (s == VP_OK && entries > 0)
        s = vp_set_error(VP_ERR_STATE, VP_WHERE,
                         "run folder '%s' exists and is not empty; pass --force to overwrite it, or choose another "
                         "with --out",
                         dir);
    if (s != VP_OK) vp_run_close(r);
    return s;
}

vp_status vp_run_begin(vp_run* r, const vp_config* cfg) {
    VP_REQUIRE(r && r->locked, VP_ERR_STATE, "vp_run_begin: the run folder is not claimed (vp_run_claim first)");
    VP_REQUIRE(cfg || r->mode == VP_RUN_RESUME, VP_ERR_INVALID_ARG, "vp_run_open: a new run needs its config");
    char path[VP_RUN_PATH_MAX];
    if (r->mode == VP_RUN_RESUME) {
        VP_TRY(vp_run_path(r, "metrics.jsonl", path, sizeof path));
        return vp_metrics_log_open(&r->metrics, path, 1);
    }
    // a forced run: the old run's files moved aside, nothing deleted
    if (r->mode == VP_RUN_FORCE) VP_TRY(move_aside(r->dir));
    // the resolved config, then the metrics file
    VP_TRY(vp_run_path(r, "config.yaml", path, sizeof path));
    VP_TRY(vp_config_write_yaml(cfg, path));
    VP_TRY(vp_run_path(r, "metrics.jsonl", path, sizeof path));
    return vp_metrics_log_open(&r->metrics, path, 0);
}

vp_status vp_run_open(vp_run* r, const char* dir, vp_run_mode mode, const vp_config* cfg) {
    VP_REQUIRE(r && dir && dir[0], VP_ERR_INVALID_ARG, "vp_run_open: r and dir must be given");
    VP_REQUIRE(cfg || mode == VP_RUN_RESUME, VP_ERR_INVALID_ARG, "vp_run_open: a new run needs its config");
    VP_TRY(vp_run_claim(r, dir, mode));
    vp_status s = vp_run_begin(r, cfg);
    if (s != VP_OK) vp_run_close(r);
    return s;
}

void vp_run_close(vp_run* r) {
    if (!r) return;
    vp_metrics_log_close(&r->metrics);
    if (!r->locked) return;
    // the name goes first, so a waiting claim never takes a lock file about to vanish
    char path[VP_RUN_PATH_MAX + 8];
    snprintf(path, sizeof path, "%s/" LOCK_NAME, r->dir);
    unlink(path);
    close(r->lock_fd);
    r->locked = 0;
    r->lock_fd = -1;
}
