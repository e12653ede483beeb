/* Internal helpers of the data layer: number parsing, hashing, the binary cache. */
#ifndef VP_DATA_INTERNAL_H
#define VP_DATA_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "data/hash.h"
#include "vulpes/data.h"

/* Parses the decimal number s[0, len) (sign, digits, '.', exponent; "nan", "inf",
 * "infinity" in any case) into *out, locale-independent and correctly rounded.
 * Returns 1 on success, 0 when the text is not a number. */
int vp_parse_double(const char* s, size_t len, double* out);

/* The identity of a source file that a cache entry must match. */
typedef struct vp_source_id {
    uint64_t size;     /* bytes */
    int64_t mtime_ns;  /* modification time, nanoseconds since the epoch */
    uint64_t hash;     /* vp_hash64 of the whole content, seed 0 */
} vp_source_id;

/* What a cache entry keeps besides the bars (enough to rebuild a load report). */
typedef struct vp_cache_meta {
    int64_t rows_read;                                       /* as in vp_load_report */
    int64_t rows_dropped;                                    /* as in vp_load_report */
    int n_reasons;                                           /* as in vp_load_report */
    char reasons[VP_LOAD_MAX_REASONS][VP_LOAD_REASON_LEN];   /* as in vp_load_report */
    int has_volume;                                          /* as in vp_load_report */
    int has_spread;                                          /* as in vp_load_report */
    char time_format[48];                                    /* as in vp_load_report */
} vp_cache_meta;

/* Writes the cache file path of `source` under the cache folder of opts into buf. */
vp_status vp_cache_path(const char* source, const vp_load_opts* opts, char* buf, size_t cap);

/* Reads the cache entry at cache_path if it matches src (size and hash) and is intact.
 * Returns 1 and fills *out (owned) and *meta on a hit; 0 on a miss (absent, stale or
 * damaged: a damaged one is logged). */
int vp_cache_read(const char* cache_path, const vp_source_id* src, vp_bars* out, vp_cache_meta* meta);

/* Writes a cache entry (to a temporary name, then renamed). Failure only logs a warning
 * and returns 0; success returns 1. */
int vp_cache_write(const char* cache_path, const vp_source_id* src, const vp_bars* b, const vp_cache_meta* meta);

/* ---- CSV parsing (csv.c) ---- */

/* Parses the CSV text buf[0, len) of file `path` into *out (owned) and fills the meta
 * counters; fails with the file/line/column/rule message unless opts->skip_bad_rows lets
 * the bad row be dropped (then it is counted in meta). */
vp_status vp_csv_parse(const char* path, const char* buf, size_t len, const vp_load_opts* opts, vp_bars* out,
                       vp_cache_meta* meta);

#endif /* VP_DATA_INTERNAL_H */
