/* The walk-forward folder's paths: the top files, the fold folders (fold_NNN, NNN the fold's
 * number from 1) and their done markers; emptying a fold folder; reading a whole file; a
 * span as text (times of its first and last bars, bar indices [begin, end)). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/walkforward_impl.h"
#include "vulpes/data.h"

void vp_wf_empty_dir(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return;
    struct dirent* e;
    char p[VP_RUN_PATH_MAX + 300];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        remove(p);
    }
    closedir(d);
}

vp_status vp_wf_top_file(const vp_wf_ctx* c, const char* file, char* out, size_t n) {
    VP_REQUIRE(snprintf(out, n, "%s/%s", c->opts->dir, file) < (int)n, VP_ERR_INVALID_ARG, "path %s/%s is too long",
               c->opts->dir, file);
    return VP_OK;
}

vp_status vp_wf_fold_dir(const vp_wf_ctx* c, int64_t k, char* out, size_t n) {
    // folds are numbered from 1 in every output: fold k of the plan is fold_(k + 1)
    VP_REQUIRE(snprintf(out, n, "%s/folds/fold_%03lld", c->opts->dir, (long long)(k + 1)) < (int)n, VP_ERR_INVALID_ARG,
               "walk-forward folder path '%s' is too long", c->opts->dir);
    return VP_OK;
}

vp_status vp_wf_fold_file(const vp_wf_ctx* c, int64_t k, const char* file, char* out, size_t n) {
    char dir[VP_RUN_PATH_MAX];
    VP_TRY(vp_wf_fold_dir(c, k, dir, sizeof dir));
    VP_REQUIRE(snprintf(out, n, "%s/%s", dir, file) < (int)n, VP_ERR_INVALID_ARG, "path %s/%s is too long", dir, file);
    return VP_OK;
}

int vp_wf_fold_is_done(const vp_wf_ctx* c, int64_t k) {
    char path[VP_RUN_PATH_MAX];
    struct stat st;
    return vp_wf_fold_file(c, k, "done.json", path, sizeof path) == VP_OK && stat(path, &st) == 0;
}

vp_status vp_wf_read_file(const char* path, char** text) {
    *text = NULL;
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot read %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char* buf = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
    size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (!buf || got != (size_t)n) {
        free(buf);
        VP_FAIL(buf ? VP_ERR_IO : VP_ERR_OOM, "cannot read %s", path);
    }
    buf[got] = '\0';
    *text = buf;
    return VP_OK;
}

const char* vp_wf_span_text(const vp_wf_ctx* c, vp_span s, char* buf, size_t n) {
    char a[32], b[32];
    const vp_bars* bars = &c->data.bars;
    snprintf(buf, n, "%s .. %s [%lld, %lld)", vp_time_format_iso(bars->time_ms[s.begin], a, sizeof a),
             vp_time_format_iso(bars->time_ms[s.end - 1], b, sizeof b), (long long)s.begin, (long long)s.end);
    return buf;
}
