/* vp_bars_load_csv: read the file, answer from the cache when the source is unchanged,
 * otherwise parse it and write the cache; fill the report. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "data/data_internal.h"

vp_load_opts vp_load_opts_default(void) {
    vp_load_opts o;
    o.skip_bad_rows = 0;
    o.use_cache = 1;
    o.cache_dir = NULL;
    return o;
}

/* Reads the whole file into a malloc'ed buffer; fills its identity except the hash. */
static vp_status read_file(const char* path, char** buf, size_t* len, vp_source_id* id) {
    FILE* fp = fopen(path, "rb");
    if (!fp) VP_FAIL(VP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || S_ISDIR(st.st_mode)) {
        fclose(fp);
        VP_FAIL(VP_ERR_IO, "%s: not a readable file", path);
    }

    /* One read for a regular file; growing reads for anything else. */
    size_t cap = S_ISREG(st.st_mode) ? (size_t)st.st_size + 1 : 1 << 20, n = 0;
    char* b = (char*)malloc(cap);
    for (;;) {
        if (!b) {
            fclose(fp);
            VP_FAIL(VP_ERR_OOM, "%s: %zu bytes for the file", path, cap);
        }
        n += fread(b + n, 1, cap - n, fp);
        if (n < cap) break;
        char* nb = (char*)realloc(b, cap * 2);
        if (!nb) free(b);
        b = nb;
        cap *= 2;
    }
    int err = ferror(fp);
    fclose(fp);
    if (err) {
        free(b);
        VP_FAIL(VP_ERR_IO, "%s: read error", path);
    }
    *buf = b;
    *len = n;
    id->size = n;
    id->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    return VP_OK;
}

/* Copies the counters of a parse or a cache entry into the report. */
static void fill_report(vp_load_report* r, const vp_cache_meta* m, const vp_bars* b) {
    r->rows_read = m->rows_read;
    r->rows_kept = b->n;
    r->rows_dropped = m->rows_dropped;
    r->n_reasons = m->n_reasons;
    memcpy(r->reasons, m->reasons, sizeof r->reasons);
    r->has_volume = m->has_volume;
    snprintf(r->time_format, sizeof r->time_format, "%s", m->time_format);
    vp_bars_spacing(b, &r->spacing);
}

vp_status vp_bars_load_csv(const char* path, const vp_load_opts* opts, vp_bars* out, vp_load_report* report) {
    VP_REQUIRE(path != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_bars_load_csv: path and out must not be NULL");
    memset(out, 0, sizeof *out);
    vp_load_opts o = opts ? *opts : vp_load_opts_default();
    vp_load_report rep;
    memset(&rep, 0, sizeof rep);

    /* The source and its identity. */
    char* buf = NULL;
    size_t len = 0;
    vp_source_id id;
    VP_TRY(read_file(path, &buf, &len, &id));
    id.hash = vp_hash64(buf, len, 0);

    /* A cache hit: same size and content hash, intact, and recorded under options that
     * agree (an entry with dropped rows does not answer a load that refuses bad rows). */
    char cpath[512] = "";
    if (o.use_cache && vp_cache_path(path, &o, cpath, sizeof cpath) != VP_OK) {
        vp_log(VP_LOG_WARN, "%s; the bar cache is off for this load", vp_last_error());
        cpath[0] = '\0';
    }
    vp_cache_meta meta;
    if (cpath[0] && vp_cache_read(cpath, &id, out, &meta)) {
        if (meta.rows_dropped == 0 || o.skip_bad_rows) {
            free(buf);
            fill_report(&rep, &meta, out);
            rep.from_cache = 1;
            snprintf(rep.cache_path, sizeof rep.cache_path, "%s", cpath);
            if (report) *report = rep;
            return VP_OK;
        }
        vp_bars_free(out);
    }

    /* Parse, then write the cache. */
    vp_status st = vp_csv_parse(path, buf, len, &o, out, &meta);
    free(buf);
    if (st != VP_OK) return st;
    if (cpath[0] && vp_cache_write(cpath, &id, out, &meta))
        snprintf(rep.cache_path, sizeof rep.cache_path, "%s", cpath);
    fill_report(&rep, &meta, out);
    if (report) *report = rep;
    return VP_OK;
}
