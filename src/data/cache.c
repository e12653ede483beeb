/* The binary bar cache: a header (magic, version, source identity, load counters) and
 * the six columns (seven with a spread), written after a CSV parse and read back when the
 * source is unchanged. */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "data/data_internal.h"

#define VP_CACHE_VERSION 2u
#define VP_CACHE_ENDIAN 0x01020304u

/* The file header, written as is (no padding: checked below). */
typedef struct cache_header {
    char magic[8];            /* "VPBARS\0\0" */
    uint32_t version;         /* VP_CACHE_VERSION */
    uint32_t endian;          /* VP_CACHE_ENDIAN in the writer's byte order */
    uint64_t source_size;     /* bytes of the CSV */
    int64_t source_mtime_ns;  /* the CSV's modification time (informational) */
    uint64_t source_hash;     /* vp_hash64 of the CSV's content */
    int64_t n;                /* bars */
    int64_t rows_read;        /* load counters, as in vp_load_report */
    int64_t rows_dropped;
    int32_t n_reasons;
    int32_t has_volume;
    int32_t has_spread;       /* 1: a spread column follows the six others */
    int32_t reserved;         /* 0 */
    char time_format[48];
    char reasons[VP_LOAD_MAX_REASONS][VP_LOAD_REASON_LEN];
    uint64_t payload_hash;    /* hash chained over the columns */
} cache_header;
_Static_assert(sizeof(cache_header) == 2184, "cache header must have no padding");

static const char MAGIC[8] = {'V', 'P', 'B', 'A', 'R', 'S', 0, 0};

vp_status vp_cache_dir(const vp_load_opts* opts, char* buf, size_t cap) {
    VP_REQUIRE(buf != NULL && cap > 0, VP_ERR_INVALID_ARG, "vp_cache_dir: no buffer");
    const char* v;
    int n;
    /* The option, then $VULPES_CACHE_DIR, $XDG_CACHE_HOME/vulpes, ~/.cache/vulpes. */
    if (opts && opts->cache_dir && opts->cache_dir[0])
        n = snprintf(buf, cap, "%s", opts->cache_dir);
    else if ((v = getenv("VULPES_CACHE_DIR")) && v[0])
        n = snprintf(buf, cap, "%s", v);
    else if ((v = getenv("XDG_CACHE_HOME")) && v[0])
        n = snprintf(buf, cap, "%s/vulpes", v);
    else if ((v = getenv("HOME")) && v[0])
        n = snprintf(buf, cap, "%s/.cache/vulpes", v);
    else
        VP_FAIL(VP_ERR_IO, "no cache folder: set VULPES_CACHE_DIR, XDG_CACHE_HOME or HOME");
    VP_REQUIRE(n > 0 && (size_t)n < cap, VP_ERR_INVALID_ARG, "vp_cache_dir: the folder name is too long");
    return VP_OK;
}

vp_status vp_cache_path(const char* source, const vp_load_opts* opts, char* buf, size_t cap) {
    char dir[512];
    VP_TRY(vp_cache_dir(opts, dir, sizeof dir));
    /* Keyed by the source's absolute path; the base name keeps the folder readable. */
    char* abs = realpath(source, NULL);
    const char* key = abs ? abs : source;
    const char* slash = strrchr(source, '/');
    const char* base = slash ? slash + 1 : source;
    int n = snprintf(buf, cap, "%s/%.80s.%016llx.vpcache", dir, base,
                     (unsigned long long)vp_hash64(key, strlen(key), 0x76756c706573ULL));
    free(abs);
    VP_REQUIRE(n > 0 && (size_t)n < cap, VP_ERR_INVALID_ARG, "vp_cache_path: the path is too long");
    return VP_OK;
}

/* The columns of b in file order (time, open, high, low, close, volume, then the spread when
 * b has one); returns their number. */
static int columns(const vp_bars* b, void* cols[7]) {
    cols[0] = b->time_ms;
    cols[1] = b->open;
    cols[2] = b->high;
    cols[3] = b->low;
    cols[4] = b->close;
    cols[5] = b->volume;
    cols[6] = b->spread;
    return b->spread ? 7 : 6;
}

static uint64_t payload_hash(const vp_bars* b) {
    void* cols[7];
    const int nc = columns(b, cols);
    uint64_t h = 0;
    for (int i = 0; i < nc; ++i) h = vp_hash64(cols[i], (size_t)b->n * 8, h);
    return h;
}

int vp_cache_read(const char* cache_path, const vp_source_id* src, vp_bars* out, vp_cache_meta* meta) {
    FILE* fp = fopen(cache_path, "rb");
    if (!fp) return 0;
    cache_header h;
    struct stat st;
    int hit = 0;

    /* Header: ours, this version and byte order, and the same source. */
    if (fread(&h, sizeof h, 1, fp) == 1 && memcmp(h.magic, MAGIC, 8) == 0 && h.version == VP_CACHE_VERSION &&
        h.endian == VP_CACHE_ENDIAN && h.source_size == src->size && h.source_hash == src->hash) {
        /* Size and columns intact (8 bytes per bar per column). */
        const int64_t row = h.has_spread ? 56 : 48;
        int intact = (h.has_spread == 0 || h.has_spread == 1) && h.reserved == 0 && h.n >= 1 &&
                     h.n <= (INT64_MAX - (int64_t)sizeof h) / row && fstat(fileno(fp), &st) == 0 &&
                     (int64_t)st.st_size == (int64_t)sizeof h + h.n * row && h.n_reasons >= 0 &&
                     h.n_reasons <= VP_LOAD_MAX_REASONS && vp_bars_alloc(out, h.n) == VP_OK;
        if (intact && h.has_spread && vp_bars_alloc_spread(out) != VP_OK) {
            vp_clear_error();
            intact = 0;
        }
        if (intact) {
            void* cols[7];
            const int nc = columns(out, cols);
            for (int i = 0; i < nc && intact; ++i) intact = fread(cols[i], 8, (size_t)h.n, fp) == (size_t)h.n;
            intact = intact && payload_hash(out) == h.payload_hash;
        }

        /* Bars that break the rules a CSV row must follow (a hash can be forged with the
         * values): the same checks as after a parse. */
        char why[400] = "";
        if (intact && vp_bars_validate(out) != VP_OK) {
            snprintf(why, sizeof why, " (%s)", vp_last_error());
            vp_clear_error();
            intact = 0;
        }
        if (intact) {
            memset(meta, 0, sizeof *meta);
            meta->rows_read = h.rows_read;
            meta->rows_dropped = h.rows_dropped;
            meta->n_reasons = h.n_reasons;
            meta->has_volume = h.has_volume;
            meta->has_spread = h.has_spread;
            memcpy(meta->time_format, h.time_format, sizeof meta->time_format);
            meta->time_format[sizeof meta->time_format - 1] = '\0';
            memcpy(meta->reasons, h.reasons, sizeof meta->reasons);
            for (int i = 0; i < VP_LOAD_MAX_REASONS; ++i) meta->reasons[i][VP_LOAD_REASON_LEN - 1] = '\0';
            hit = 1;
        } else {
            vp_bars_free(out);
            vp_log(VP_LOG_WARN, "bar cache %s is damaged%s; parsing the source again", cache_path, why);
        }
    }
    fclose(fp);
    return hit;
}

/* mkdir -p: creates each missing folder of path. */
static int make_dirs(const char* path) {
    char tmp[512];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) return 0;
    for (char* p = tmp + 1; *p; ++p) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return 0;
        *p = '/';
    }
    return mkdir(tmp, 0755) == 0 || errno == EEXIST;
}

int vp_cache_write(const char* cache_path, const vp_source_id* src, const vp_bars* b, const vp_cache_meta* meta) {
    /* Header from the source identity and the load counters. */
    cache_header h;
    memset(&h, 0, sizeof h);
    memcpy(h.magic, MAGIC, 8);
    h.version = VP_CACHE_VERSION;
    h.endian = VP_CACHE_ENDIAN;
    h.source_size = src->size;
    h.source_mtime_ns = src->mtime_ns;
    h.source_hash = src->hash;
    h.n = b->n;
    h.rows_read = meta->rows_read;
    h.rows_dropped = meta->rows_dropped;
    h.n_reasons = meta->n_reasons;
    h.has_volume = meta->has_volume;
    h.has_spread = b->spread != NULL;
    memcpy(h.time_format, meta->time_format, sizeof h.time_format);
    memcpy(h.reasons, meta->reasons, sizeof h.reasons);
    h.payload_hash = payload_hash(b);

    /* Folder, temporary file, then an atomic rename. */
    char dir[512], tmp[600];
    snprintf(dir, sizeof dir, "%s", cache_path);
    char* slash = strrchr(dir, '/');
    if (slash && slash != dir) *slash = '\0';
    static _Atomic unsigned seq = 0;
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.%u", cache_path, (long)getpid(), atomic_fetch_add(&seq, 1u));
    int ok = (!slash || make_dirs(dir));
    FILE* fp = ok ? fopen(tmp, "wb") : NULL;
    ok = fp != NULL && fwrite(&h, sizeof h, 1, fp) == 1;
    void* cols[7];
    const int nc = columns(b, cols);
    for (int i = 0; i < nc && ok; ++i) ok = fwrite(cols[i], 8, (size_t)b->n, fp) == (size_t)b->n;
    if (fp && fclose(fp) != 0) ok = 0;
    if (ok && rename(tmp, cache_path) != 0) ok = 0;
    if (!ok) {
        int err = errno;
        if (fp) remove(tmp);
        vp_log(VP_LOG_WARN, "cannot write the bar cache %s (%s); continuing without it", cache_path, strerror(err));
    }
    return ok;
}
