/* vulpes: market bars — the container, CSV loading with validation, the binary cache,
 * and the time helpers the loader uses.
 *
 * A CSV file has a header row; columns are found by name, case-insensitively: a time
 * column (`time`, `date`, `datetime`, `timestamp`, or an unnamed first column; a `date`
 * and a `time` column side by side are joined), `open`, `high`, `low`, `close`, an
 * optional `volume`, and an optional bid-ask spread: a `spread` column (price units) or
 * `bid` and `ask` columns (spread = ask - bid). Other columns are ignored. Every row is validated; a bad file fails
 * with one message naming the file, the line, the column and the rule broken, or, with
 * `skip_bad_rows`, the bad row is dropped and counted. Nothing is ever filled or repaired.
 * docs/data.md describes the formats, the rules and the cache. */
#ifndef VULPES_DATA_H
#define VULPES_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bars of one instrument, column-wise. Arrays made by vp_bars_alloc or a load are owned
 * (owner = 1) and released by vp_bars_free; a view made by vp_bars_slice borrows them
 * (owner = 0) and must not outlive its parent. */
typedef struct vp_bars {
    int64_t n;          /* number of bars */
    int64_t* time_ms;   /* [n] bar open time, Unix milliseconds UTC, strictly increasing */
    double* open;       /* [n] */
    double* high;       /* [n] */
    double* low;        /* [n] */
    double* close;      /* [n] */
    double* volume;     /* [n] (0 when the file has no volume column) */
    double* spread;     /* [n] bid-ask spread at each bar, price units (finite, >= 0), or NULL when the
                           bars carry none (the instrument's spread_ticks apply) */
    int owner;          /* 1 when vp_bars_free releases the arrays, 0 for views and hand-made structs */
} vp_bars;

/* Allocates n bars (one block, zero-filled, no spread column) into *b; n >= 1. Release with
 * vp_bars_free. */
vp_status vp_bars_alloc(vp_bars* b, int64_t n);

/* Gives owning bars b a zero-filled spread column [n] (released by vp_bars_free); a no-op
 * when b has one already. */
vp_status vp_bars_alloc_spread(vp_bars* b);

/* Copies bars [begin, end) of *src, the spread column included when it has one, into *out
 * (owned; 0 <= begin < end <= src->n). */
vp_status vp_bars_copy(const vp_bars* src, int64_t begin, int64_t end, vp_bars* out);

/* Releases the arrays of an owning vp_bars and zeroes the struct; a view is only zeroed. NULL is ignored. */
void vp_bars_free(vp_bars* b);

/* Makes *view a non-owning view of bars [begin, end) of *b (0 <= begin < end <= b->n).
 * The view points into b's arrays (the spread too, when b has one): it needs no free and is
 * invalid once b is freed. */
vp_status vp_bars_slice(const vp_bars* b, int64_t begin, int64_t end, vp_bars* view);

/* Checks the bar invariants (time strictly increasing, 0 < low <= open, close <= high,
 * all finite, volume >= 0, spread >= 0 when present); fails naming the first bar that
 * breaks one. */
vp_status vp_bars_validate(const vp_bars* b);

/* The spacing of bar times: the inferred interval and the gaps. */
typedef struct vp_bar_spacing {
    int64_t interval_ms;       /* median spacing between consecutive bars (0 when n < 2) */
    int64_t gaps;              /* spacings longer than 1.5 x interval_ms (weekends, holidays, holes) */
    int64_t largest_gap_ms;    /* the longest spacing (0 when n < 2) */
    int64_t largest_gap_index; /* index of the bar after the longest spacing (0 when n < 2) */
} vp_bar_spacing;

/* Computes the spacing statistics of b into *out. */
vp_status vp_bars_spacing(const vp_bars* b, vp_bar_spacing* out);

/* ---- loading ------------------------------------------------------------------------ */

/* Options of vp_bars_load_csv; start from vp_load_opts_default(). */
typedef struct vp_load_opts {
    int skip_bad_rows;     /* 1: drop and count bad rows; 0 (default): fail on the first */
    int use_cache;         /* 1 (default): read and write the binary cache; 0: always parse */
    const char* cache_dir; /* NULL (default): $VULPES_CACHE_DIR, else $XDG_CACHE_HOME/vulpes, else ~/.cache/vulpes */
} vp_load_opts;

/* The defaults: fail on bad rows, cache on, cache folder from the environment. */
vp_load_opts vp_load_opts_default(void);

#define VP_LOAD_MAX_REASONS 8   /* dropped-row reasons kept in a report */
#define VP_LOAD_REASON_LEN 256  /* bytes per reason, NUL included */

/* What a load saw. */
typedef struct vp_load_report {
    int64_t rows_read;    /* data rows in the file (lines after the header; trailing blank lines excluded) */
    int64_t rows_kept;    /* rows that became bars */
    int64_t rows_dropped; /* rows dropped by skip_bad_rows */
    int n_reasons;        /* reasons[] filled: min(rows_dropped, VP_LOAD_MAX_REASONS) */
    char reasons[VP_LOAD_MAX_REASONS][VP_LOAD_REASON_LEN]; /* the first drops' messages (file, line, column, rule) */
    int has_volume;       /* 1 when the file has a volume column */
    int has_spread;       /* 1 when the file gives a spread per bar (a spread column, or bid and ask columns) */
    int from_cache;       /* 1 when the bars were read from the binary cache */
    char cache_path[512]; /* the cache file used or written ("" when caching was off or failed) */
    char time_format[48]; /* the first row's time format, e.g. "DD.MM.YYYY HH:MM:SS.mmm" */
    vp_bar_spacing spacing; /* interval and gaps of the loaded bars */
    int64_t source_bytes; /* size of the file read */
    uint64_t source_hash; /* XXH64, seed 0, of its bytes (the content the bars came from) */
} vp_load_report;

/* Loads a CSV bar file into *out (owned; free with vp_bars_free). opts NULL: defaults;
 * report may be NULL. On failure *out is left empty and the message names the file, line,
 * column and rule. A parse writes the binary cache; an unchanged source loads from it. */
vp_status vp_bars_load_csv(const char* path, const vp_load_opts* opts, vp_bars* out, vp_load_report* report);

/* Writes bars as CSV (header `time,open,high,low,close,volume`, and `spread` when the bars
 * have one; ISO UTC times) to path.
 * decimals < 0 writes every value with 17 significant digits (loads back bit for bit);
 * decimals >= 0 rounds prices and volume to that many decimals. */
vp_status vp_bars_save_csv(const vp_bars* b, const char* path, int decimals);

/* Writes the cache folder the loader uses for opts (see vp_load_opts.cache_dir) into buf
 * (size cap); fails when no folder can be named (no variable set and no HOME). */
vp_status vp_cache_dir(const vp_load_opts* opts, char* buf, size_t cap);

/* ---- time ---------------------------------------------------------------------------- */

/* The time formats the loader reads. */
typedef enum vp_time_format {
    VP_TIME_ISO_DATE = 0, /* 2017-01-02 (midnight UTC) */
    VP_TIME_ISO_DATETIME, /* 2017-01-02T03:04[:05[.678]][Z|+01:00] ('T' or one space) */
    VP_TIME_DMY,          /* 02.01.2017[ 03:04[:05[.678]]] */
    VP_TIME_UNIX_S,       /* Unix seconds, 1e8 <= v < 1e11, optional fraction */
    VP_TIME_UNIX_MS,      /* Unix milliseconds, 1e11 <= v < 1e14 */
    VP_TIME_FORMAT_COUNT
} vp_time_format;

/* Parses the time text s[0, len) into Unix milliseconds UTC; returns 1 on success (and
 * the format in *fmt when fmt is not NULL), 0 when the text is not a valid time. */
int vp_time_parse(const char* s, size_t len, int64_t* ms, vp_time_format* fmt);

/* The display name of a time format ("ISO date-time"); never NULL. */
const char* vp_time_format_name(vp_time_format f);

/* Writes ms as ISO 8601 UTC ("2017-01-02T03:04:05Z", with ".678" when the millisecond
 * part is not zero) into buf (size cap >= 32); returns buf. */
char* vp_time_format_iso(int64_t ms, char* buf, size_t cap);

/* Days since 1970-01-01 of a proleptic Gregorian civil date (any year, month 1..12, day 1..31). */
int64_t vp_days_from_civil(int64_t y, int m, int d);

/* The proleptic Gregorian civil date of a count of days since 1970-01-01 (inverse of
 * vp_days_from_civil); y, m, d must not be NULL. */
void vp_civil_from_days(int64_t days, int64_t* y, int* m, int* d);

/* ---- indicators ---------------------------------------------------------------------- */

/* Wilder's average true range over `period` bars, causal: out[t] uses bars <= t only.
 * TR[0] = high - low; TR[t] = max(high - low, |high - close[t-1]|, |low - close[t-1]|).
 * out[t] for t < period is the mean of TR[0..t] (the history there is); from then on
 * out[t] = (out[t-1] (period - 1) + TR[t]) / period. */
vp_status vp_atr(const vp_bars* b, int period, double* out /* [b->n] */);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DATA_H */
