/* Helpers shared by the data tests: a temporary folder, small files, bar comparison. */
#ifndef VP_TEST_DATA_UTIL_H
#define VP_TEST_DATA_UTIL_H

#define _XOPEN_SOURCE 700
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "vulpes/data.h"

/* Makes a fresh folder under /tmp into buf (size cap); returns buf, or NULL on failure. */
static inline char* tdu_mkdtemp(char* buf, size_t cap) {
    snprintf(buf, cap, "/tmp/vulpes_test_XXXXXX");
    return mkdtemp(buf);
}

/* Writes text to dir/name, putting the full path into path (size cap); returns 1 on success. */
static inline int tdu_write(const char* dir, const char* name, const char* text, char* path, size_t cap) {
    snprintf(path, cap, "%s/%s", dir, name);
    FILE* f = fopen(path, "wb");
    if (!f) return 0;
    size_t n = strlen(text);
    int ok = fwrite(text, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}

/* Removes a folder tree made by a test (files and sub-folders). */
static inline void tdu_rmtree(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return;
    struct dirent* e;
    char p[1024];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        struct stat st;
        if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
            tdu_rmtree(p);
        else
            remove(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Number of entries (other than . and ..) in a folder; -1 when it cannot be read. */
static inline int tdu_count_entries(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    struct dirent* e;
    while ((e = readdir(d)) != NULL)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) ++n;
    closedir(d);
    return n;
}

/* 1 when two bar sets hold the same values bit for bit (the spread too: both without one, or equal). */
static inline int tdu_bars_equal(const vp_bars* a, const vp_bars* b) {
    if (a->n != b->n || (a->spread == NULL) != (b->spread == NULL)) return 0;
    size_t m = (size_t)a->n * 8;
    return memcmp(a->time_ms, b->time_ms, m) == 0 && memcmp(a->open, b->open, m) == 0 &&
           memcmp(a->high, b->high, m) == 0 && memcmp(a->low, b->low, m) == 0 && memcmp(a->close, b->close, m) == 0 &&
           memcmp(a->volume, b->volume, m) == 0 && (a->spread == NULL || memcmp(a->spread, b->spread, m) == 0);
}

/* Load options with the cache off. */
static inline vp_load_opts tdu_nocache(void) {
    vp_load_opts o = vp_load_opts_default();
    o.use_cache = 0;
    return o;
}

#endif /* VP_TEST_DATA_UTIL_H */
