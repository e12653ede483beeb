/* The file rendezvous: rank 0 writes a small record into a shared folder under a temporary
 * name and renames it into place; the other ranks poll for it with a timeout. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "dist/dist_impl.h"

/* dir/name into path[n]; refuses a path that does not fit. */
static vp_status join(char* path, size_t n, const char* dir, const char* name, const char* fn) {
    VP_REQUIRE(dir != NULL && dir[0] != '\0', VP_ERR_INVALID_ARG,
               "%s: no rendezvous folder (VULPES_RENDEZVOUS is unset or empty)", fn);
    int w = snprintf(path, n, "%s/%s", dir, name);
    VP_REQUIRE(w > 0 && (size_t)w < n, VP_ERR_INVALID_ARG, "%s: rendezvous path %s/%s is too long", fn, dir, name);
    return VP_OK;
}

/* Seconds on the monotonic clock. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

vp_status vp_rendezvous_publish(const char* dir, const char* name, const void* data, size_t n) {
    const char* fn = "vp_rendezvous_publish";
    char path[1200], tmp[1300];
    VP_TRY(join(path, sizeof path, dir, name, fn));
    VP_REQUIRE(data != NULL || n == 0, VP_ERR_INVALID_ARG, "%s: data is NULL", fn);
    struct stat st;
    VP_REQUIRE(stat(dir, &st) == 0 && S_ISDIR(st.st_mode), VP_ERR_IO,
               "%s: rendezvous folder %s does not exist or is not a folder (VULPES_RENDEZVOUS: a folder every rank "
               "can read)", fn, dir);
    VP_REQUIRE(stat(path, &st) != 0, VP_ERR_STATE,
               "%s: %s already exists, left by an earlier run: give each launch an empty rendezvous folder", fn, path);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    // the whole record under a temporary name, then one rename: readers see all or nothing
    FILE* f = fopen(tmp, "wb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "%s: cannot create %s: %s", fn, tmp, strerror(errno));
    int ok = fwrite(data, 1, n, f) == n;
    ok = (fflush(f) == 0) && ok;
    ok = (fsync(fileno(f)) == 0) && ok;
    ok = (fclose(f) == 0) && ok;
    if (!ok) {
        remove(tmp);
        VP_FAIL(VP_ERR_IO, "%s: cannot write %s: %s", fn, tmp, strerror(errno));
    }
    if (rename(tmp, path) != 0) {
        int e = errno;
        remove(tmp);
        VP_FAIL(VP_ERR_IO, "%s: cannot rename %s to %s: %s", fn, tmp, path, strerror(e));
    }
    return VP_OK;
}

vp_status vp_rendezvous_wait(const char* dir, const char* name, void* data, size_t n, double timeout_s) {
    const char* fn = "vp_rendezvous_wait";
    char path[1200];
    VP_TRY(join(path, sizeof path, dir, name, fn));
    VP_REQUIRE(data != NULL || n == 0, VP_ERR_INVALID_ARG, "%s: data is NULL", fn);
    VP_REQUIRE(timeout_s >= 0.0, VP_ERR_INVALID_ARG, "%s: timeout %g s < 0", fn, timeout_s);
    const double t0 = now_s();
    struct stat st;
    // poll every 10 ms until the file is there or the wait is over
    while (stat(path, &st) != 0) {
        VP_REQUIRE(now_s() - t0 < timeout_s, VP_ERR_IO,
                   "%s: %s did not appear within %g s: rank 0 has not published its id there (is VULPES_RENDEZVOUS "
                   "the same shared folder on every rank, and did rank 0 start?)", fn, path, timeout_s);
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    VP_REQUIRE((size_t)st.st_size == n, VP_ERR_PARSE, "%s: %s holds %lld bytes, expected %zu: not a record of this run",
               fn, path, (long long)st.st_size, n);
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "%s: cannot open %s: %s", fn, path, strerror(errno));
    size_t got = fread(data, 1, n, f);
    fclose(f);
    VP_REQUIRE(got == n, VP_ERR_IO, "%s: read %zu of %zu bytes of %s", fn, got, n, path);
    return VP_OK;
}
