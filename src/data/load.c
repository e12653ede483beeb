/* vp_bars_load_csv: map (or read) the file, answer from the cache when the source is unchanged,
 * otherwise parse it and write the cache; fill the report. */
#define _DEFAULT_SOURCE /* MAP_POPULATE */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "data/data_internal.h"

vp_load_opts vp_load_opts_default(void) {
    vp_load_opts o;
    o.skip_bad_rows = 0;
    o.use_cache = 1;
    o.cache_dir = NULL;
    return o;
}

/* The bytes of a source file: mapped when it is a regular file, else read into memory. */
typedef struct source_buf {
    const char* data; /* [len] the content */
    size_t len;       /* bytes */
    void* map;        /* the mapping (NULL when read) */
    char* heap;       /* the read buffer (NULL when mapped) */
} source_buf;

static void source_close(source_buf* s) {
    if (s->map) munmap(s->map, s->len);
    free(s->heap);
    memset(s, 0, sizeof *s);
}

/* Opens path and fills *s and its identity except the hash. */
static vp_status source_open(const char* path, source_buf* s, vp_source_id* id) {
    memset(s, 0, sizeof *s);
    FILE* fp = fopen(path, "rb");
    if (!fp) VP_FAIL(VP_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fileno(fp), &st) != 0 || S_ISDIR(st.st_mode)) {
        fclose(fp);
        VP_FAIL(VP_ERR_IO, "%s: not a readable file", path);
    }
    id->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;

    /* A regular, non-empty file is mapped read-only (no copy). */
    if (S_ISREG(st.st_mode) && st.st_size > 0) {
        int flags = MAP_PRIVATE;
#ifdef MAP_POPULATE
        flags |= MAP_POPULATE;
#endif
        void* m = mmap(NULL, (size_t)st.st_size, PROT_READ, flags, fileno(fp), 0);
        if (m != MAP_FAILED) {
            fclose(fp);
            s->map = m;
            s->data = (const char*)m;
            s->len = (size_t)st.st_size;
            id->size = s->len;
            return VP_OK;
        }
    }

    /* Otherwise: growing reads. */
    size_t cap = 1 << 20, n = 0;
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
    s->heap = b;
    s->data = b;
    s->len = n;
    id->size = n;
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
    r->has_spread = m->has_spread;
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
    source_buf src;
    vp_source_id id;
    VP_TRY(source_open(path, &src, &id));
    id.hash = vp_hash64(src.data, src.len, 0);
    rep.source_bytes = (int64_t)id.size;
    rep.source_hash = id.hash;

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
            source_close(&src);
            fill_report(&rep, &meta, out);
            rep.from_cache = 1;
            snprintf(rep.cache_path, sizeof rep.cache_path, "%s", cpath);
            if (report) *report = rep;
            return VP_OK;
        }
        vp_bars_free(out);
    }

    /* Parse, then write the cache. */
    vp_status st = vp_csv_parse(path, src.data, src.len, &o, out, &meta);
    source_close(&src);
    if (st != VP_OK) return st;
    if (cpath[0] && vp_cache_write(cpath, &id, out, &meta))
        snprintf(rep.cache_path, sizeof rep.cache_path, "%s", cpath);
    fill_report(&rep, &meta, out);
    if (report) *report = rep;
    return VP_OK;
}
