/* Atomic files: write NAME.tmp, flush it to disk, rename it over NAME, sync the folder; a
 * configuration written so as config.yaml. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/run.h"

vp_status vp_atomic_file_open(vp_atomic_file* a, const char* path) {
    VP_REQUIRE(a && path && path[0], VP_ERR_INVALID_ARG, "vp_atomic_file_open: a and path must be given");
    memset(a, 0, sizeof *a);
    VP_REQUIRE(strlen(path) < sizeof a->path, VP_ERR_INVALID_ARG, "path '%.200s...' is too long", path);
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp", path);
    a->f = fopen(a->tmp, "wb");
    if (!a->f) {
        a->tmp[0] = '\0';
        VP_FAIL(VP_ERR_IO, "cannot create '%s.tmp': %s", path, strerror(errno));
    }
    return VP_OK;
}

/* fsyncs the folder holding `path`, so the rename itself is on disk. */
static void sync_parent(const char* path) {
    char dir[VP_RUN_PATH_MAX];
    const char* slash = strrchr(path, '/');
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY);
    if (fd < 0) return;
    (void)fsync(fd);  // some file systems refuse directory fsync; the rename stands either way
    close(fd);
}

vp_status vp_atomic_file_commit(vp_atomic_file* a) {
    VP_REQUIRE(a && a->f, VP_ERR_STATE, "vp_atomic_file_commit: the file is not open");
    // everything written reaches the disk before the rename
    const char* step = NULL;
    if (fflush(a->f) != 0 || ferror(a->f)) step = "writing";
    else if (fsync(fileno(a->f)) != 0) step = "syncing";
    int err = step ? errno : 0;
    if (fclose(a->f) != 0 && !step) {
        step = "closing";
        err = errno;
    }
    a->f = NULL;
    // the rename makes the new content visible in one step
    if (!step && rename(a->tmp, a->path) != 0) {
        step = "renaming";
        err = errno;
    }
    if (step) {
        remove(a->tmp);
        a->tmp[0] = '\0';
        VP_FAIL(VP_ERR_IO, "%s '%s' failed: %s", step, a->path, strerror(err ? err : EIO));
    }
    a->tmp[0] = '\0';
    sync_parent(a->path);
    return VP_OK;
}

void vp_atomic_file_abort(vp_atomic_file* a) {
    if (!a) return;
    if (a->f) fclose(a->f);
    a->f = NULL;
    if (a->tmp[0]) remove(a->tmp);
    a->tmp[0] = '\0';
}

vp_status vp_file_write_atomic(const char* path, const void* data, size_t n) {
    VP_REQUIRE(data || n == 0, VP_ERR_INVALID_ARG, "vp_file_write_atomic: data is NULL");
    vp_atomic_file a;
    VP_TRY(vp_atomic_file_open(&a, path));
    if (n && fwrite(data, 1, n, a.f) != n) {
        int err = errno;
        vp_atomic_file_abort(&a);
        VP_FAIL(VP_ERR_IO, "writing '%s' failed: %s", path, strerror(err));
    }
    return vp_atomic_file_commit(&a);
}

vp_status vp_config_write_yaml(const vp_config* cfg, const char* path) {
    VP_REQUIRE(cfg && path, VP_ERR_INVALID_ARG, "vp_config_write_yaml: cfg and path must not be NULL");
    char* text = NULL;
    VP_TRY(vp_config_to_yaml(cfg, &text));
    vp_status s = vp_file_write_atomic(path, text, strlen(text));
    free(text);
    return s;
}
