/* The CSV bar parser: rows to bars (and their spread), every row validated, bad rows refused or dropped. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/csv_layout.h"
#include "data/data_internal.h"

/* The state of one parse. */
typedef struct row_ctx {
    const char* path;          /* the file, for messages */
    const vp_csv_layout* lay;  /* the header's layout */
    vp_field* f;               /* [lay->ncols + 1] fields of the current line */
    int64_t line;              /* 1-based line number of the current line */
    int64_t prev_line;         /* line of the last kept row */
    int64_t prev_time;         /* time of the last kept row */
    int64_t kept;              /* rows kept so far */
    char msg[768];             /* the current row's problem */
} row_ctx;

/* Writes the row problem "FILE: line L, column C (NAME): RULE: detail" into ctx->msg; returns 1. */
static int problem(row_ctx* c, int col, const char* rule, const char* fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;
static int problem(row_ctx* c, int col, const char* rule, const char* fmt, ...) {
    char detail[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
    const char* name = col < c->lay->ncols ? c->lay->names[col] : "beyond the header";
    snprintf(c->msg, sizeof c->msg, "%s: line %lld, column %d (%s): %s: %s", c->path, (long long)c->line, col + 1,
             name, rule, detail);
    return 1;
}

/* Field text for a message, cut to 40 characters. */
#define FIELD_ARGS(fd) (int)((fd)->len < 40 ? (fd)->len : 40), (fd)->s

/* Parses and checks the row [p, le) into bar k of out; returns 0, or 1 with ctx->msg set. */
static int parse_row(row_ctx* c, const char* p, const char* le, vp_bars* out, int64_t k, vp_time_format* tfmt) {
    const vp_csv_layout* lay = c->lay;
    vp_field* f = c->f;

    /* Fields: as many as the header has. */
    int nf = vp_csv_split(p, le, lay->delim, f, lay->ncols + 1);
    if (nf < 0) return problem(c, -nf - 1, "unparsable field", "a quote is not closed or is followed by text");
    if (nf != lay->ncols) {
        if (nf == 1 && f[0].len == 0)
            return problem(c, 0, "wrong field count", "blank line, the header has %d fields", lay->ncols);
        return problem(c, nf < lay->ncols ? nf : lay->ncols, "wrong field count", "%d fields, the header has %d",
                       nf, lay->ncols);
    }

    /* Time, from one column or a date column joined with a time-of-day column. */
    int tc = lay->col[VP_COL_TIME];
    int64_t t;
    int ok;
    if (lay->col[VP_COL_CLOCK] >= 0) {
        const vp_field* cf = &f[lay->col[VP_COL_CLOCK]];
        char joined[96];
        ok = f[tc].len + cf->len + 2 <= sizeof joined;
        if (ok) {
            memcpy(joined, f[tc].s, f[tc].len);
            joined[f[tc].len] = ' ';
            memcpy(joined + f[tc].len + 1, cf->s, cf->len);
            ok = vp_time_parse(joined, f[tc].len + 1 + cf->len, &t, tfmt);
        }
        if (!ok)
            return problem(c, lay->col[VP_COL_CLOCK], "unparsable time", "date \"%.*s\" with time \"%.*s\"",
                           FIELD_ARGS(&f[tc]), FIELD_ARGS(cf));
    } else if (!vp_time_parse(f[tc].s, f[tc].len, &t, tfmt)) {
        return problem(c, tc, "unparsable time",
                       "\"%.*s\" is not a time (ISO date or date-time, DD.MM.YYYY HH:MM:SS[.mmm], Unix seconds "
                       "or milliseconds)",
                       FIELD_ARGS(&f[tc]));
    }

    /* Prices: numbers, finite, positive. */
    double v[4];
    for (int r = 0; r < 4; ++r) {
        int col = lay->col[VP_COL_OPEN + r];
        const vp_field* fd = &f[col];
        if (!vp_parse_double(fd->s, fd->len, &v[r]))
            return problem(c, col, "unparsable number", "\"%.*s\" is not a number", FIELD_ARGS(fd));
        if (!isfinite(v[r])) return problem(c, col, "non-finite price", "\"%.*s\"", FIELD_ARGS(fd));
        if (!(v[r] > 0.0)) return problem(c, col, "non-positive price", "%.10g", v[r]);
    }

    /* Volume: optional; a number, finite, not negative. */
    double vol = 0.0;
    int vc = lay->col[VP_COL_VOLUME];
    if (vc >= 0) {
        const vp_field* fd = &f[vc];
        if (!vp_parse_double(fd->s, fd->len, &vol))
            return problem(c, vc, "unparsable number", "\"%.*s\" is not a number", FIELD_ARGS(fd));
        if (!isfinite(vol)) return problem(c, vc, "non-finite volume", "\"%.*s\"", FIELD_ARGS(fd));
        if (vol < 0.0) return problem(c, vc, "negative volume", "%.10g", vol);
    }

    /* Spread: optional; a spread column (finite, >= 0), or bid and ask columns (prices, ask >= bid). */
    double spread = 0.0;
    int sc = lay->col[VP_COL_SPREAD];
    if (sc >= 0) {
        const vp_field* fd = &f[sc];
        if (!vp_parse_double(fd->s, fd->len, &spread))
            return problem(c, sc, "unparsable number", "\"%.*s\" is not a number", FIELD_ARGS(fd));
        if (!isfinite(spread)) return problem(c, sc, "non-finite spread", "\"%.*s\"", FIELD_ARGS(fd));
        if (spread < 0.0) return problem(c, sc, "negative spread", "%.10g", spread);
    } else if (lay->col[VP_COL_BID] >= 0) {
        double q[2];
        for (int r = 0; r < 2; ++r) {
            int col = lay->col[VP_COL_BID + r];
            const vp_field* fd = &f[col];
            if (!vp_parse_double(fd->s, fd->len, &q[r]))
                return problem(c, col, "unparsable number", "\"%.*s\" is not a number", FIELD_ARGS(fd));
            if (!isfinite(q[r])) return problem(c, col, "non-finite price", "\"%.*s\"", FIELD_ARGS(fd));
            if (!(q[r] > 0.0)) return problem(c, col, "non-positive price", "%.10g", q[r]);
        }
        if (q[1] < q[0])
            return problem(c, lay->col[VP_COL_ASK], "ask < bid", "ask %.10g is below bid %.10g", q[1], q[0]);
        spread = q[1] - q[0];
    }

    /* Bar shape: low <= open, close <= high. */
    double o = v[0], h = v[1], l = v[2], cl = v[3];
    if (h < l) return problem(c, lay->col[VP_COL_HIGH], "high < low", "high %.10g is below low %.10g", h, l);
    if (o < l || o > h)
        return problem(c, lay->col[VP_COL_OPEN], "open outside [low, high]", "open %.10g, low %.10g, high %.10g", o,
                       l, h);
    if (cl < l || cl > h)
        return problem(c, lay->col[VP_COL_CLOSE], "close outside [low, high]", "close %.10g, low %.10g, high %.10g",
                       cl, l, h);

    /* Time strictly after the last kept row. */
    if (c->kept > 0 && t <= c->prev_time) {
        char a[40], b[40];
        return problem(c, tc, "time not increasing", "%s is not after %s (line %lld)",
                       vp_time_format_iso(t, a, sizeof a), vp_time_format_iso(c->prev_time, b, sizeof b),
                       (long long)c->prev_line);
    }

    /* Store. */
    out->time_ms[k] = t;
    out->open[k] = o;
    out->high[k] = h;
    out->low[k] = l;
    out->close[k] = cl;
    out->volume[k] = vol;
    if (out->spread) out->spread[k] = spread;
    c->prev_time = t;
    c->prev_line = c->line;
    return 0;
}

/* Copies the first n bars of *b into an exact-size allocation that replaces it. */
static vp_status shrink(vp_bars* b, int64_t n) {
    vp_bars s;
    VP_TRY(vp_bars_copy(b, 0, n, &s));
    vp_bars_free(b);
    *b = s;
    return VP_OK;
}

/* Whitespace that may end a file. */
static inline int is_space(char ch) { return ch == '\n' || ch == '\r' || ch == ' ' || ch == '\t'; }

/* Checks the line [p, le) (line `line` of `path`) for bytes no line may hold: a NUL, and,
 * when lines end in LF, a CR that ends no line. Both are file rules, never skipped: the file
 * is not text, or its line ends are mixed. Returns 0, or 1 with the message in msg[cap]
 * naming line, column (1-based field; its header name when lay is given) and rule. */
static int bad_byte(const char* path, int64_t line, const vp_csv_layout* lay, char delim, const char* p,
                    const char* le, int lf_ends, char* msg, size_t cap) {
    size_t len = (size_t)(le - p);
    const char* z = (const char*)memchr(p, '\0', len);
    const char* r = lf_ends ? (const char*)memchr(p, '\r', z ? (size_t)(z - p) : len) : NULL;
    const char* at = r ? r : z;
    if (!at) return 0;

    /* The field holding the byte: the fields before it, plus one (an open quote counts too). */
    int k = vp_csv_split(p, at, delim, NULL, 0);
    int col = k < 0 ? -k : k;
    char name[80] = "";
    if (lay) snprintf(name, sizeof name, " (%s)", col <= lay->ncols ? lay->names[col - 1] : "beyond the header");
    if (at == z)
        snprintf(msg, cap,
                 "%s: line %lld, column %d%s: NUL byte: byte %lld of the line is a NUL; a CSV file holds text, "
                 "never NUL bytes",
                 path, (long long)line, col, name, (long long)(at - p) + 1);
    else
        snprintf(msg, cap,
                 "%s: line %lld, column %d%s: mixed line ends: byte %lld of the line is a CR that ends no line "
                 "(CR-only line ends mixed with LF ones); use LF, CRLF or CR-only line ends throughout",
                 path, (long long)line, col, name, (long long)(at - p) + 1);
    return 1;
}

vp_status vp_csv_parse(const char* path, const char* buf, size_t len, const vp_load_opts* opts, vp_bars* out,
                       vp_cache_meta* meta) {
    memset(out, 0, sizeof *out);
    memset(meta, 0, sizeof *meta);

    /* Skip a UTF-8 byte-order mark; trailing blank lines are not rows. */
    const char* p = buf;
    const char* end = buf + len;
    if (len >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
    while (end > p && is_space(end[-1])) --end;
    if (end == p) VP_FAIL(VP_ERR_PARSE, "%s: line 1: empty file: there is no header row", path);

    /* Line ends: LF (a CR before it belongs to the end: CRLF), or CR alone when the file
     * has no LF at all. */
    int lf_ends = memchr(p, '\n', (size_t)(end - p)) != NULL || memchr(p, '\r', (size_t)(end - p)) == NULL;
    char eol = lf_ends ? '\n' : '\r';

    /* Header. */
    const char* nl = (const char*)memchr(p, eol, (size_t)(end - p));
    const char* he = nl ? nl : end;
    if (lf_ends && he > p && he[-1] == '\r') --he;
    char bad[768];
    if (bad_byte(path, 1, NULL, vp_csv_delimiter(p, he), p, he, lf_ends, bad, sizeof bad))
        VP_FAIL(VP_ERR_PARSE, "%s", bad);
    vp_csv_layout lay;
    VP_TRY(vp_csv_layout_read(path, p, he, &lay));
    if (!nl) {
        vp_csv_layout_free(&lay);
        VP_FAIL(VP_ERR_PARSE, "%s: line 2: header only: there are no data rows after the header", path);
    }

    /* Room for every remaining line. */
    const char* data = nl + 1;
    int64_t cap = 1;
    for (const char* q = data; (q = (const char*)memchr(q, eol, (size_t)(end - q))) != NULL; ++q) ++cap;
    row_ctx c;
    memset(&c, 0, sizeof c);
    c.path = path;
    c.lay = &lay;
    c.line = 1;
    c.f = (vp_field*)malloc((size_t)(lay.ncols + 1) * sizeof(vp_field));
    vp_status st = c.f ? vp_bars_alloc(out, cap) : vp_set_error(VP_ERR_OOM, VP_WHERE, "%s: field table", path);
    const int has_spread = lay.col[VP_COL_SPREAD] >= 0 || lay.col[VP_COL_BID] >= 0;
    if (st == VP_OK && has_spread) st = vp_bars_alloc_spread(out);

    /* Rows: each parsed and checked; a bad one fails the load or is dropped and counted. */
    int skip = opts && opts->skip_bad_rows;
    for (p = data; st == VP_OK && p < end;) {
        nl = (const char*)memchr(p, eol, (size_t)(end - p));
        const char* le = nl ? nl : end;
        const char* next = nl ? nl + 1 : end;
        if (lf_ends && le > p && le[-1] == '\r') --le;
        c.line++;
        if (bad_byte(path, c.line, &lay, lay.delim, p, le, lf_ends, bad, sizeof bad)) {
            st = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s", bad);
            break;
        }
        meta->rows_read++;
        vp_time_format tfmt = VP_TIME_FORMAT_COUNT;
        if (parse_row(&c, p, le, out, c.kept, &tfmt) == 0) {
            if (c.kept == 0) snprintf(meta->time_format, sizeof meta->time_format, "%s", vp_time_format_name(tfmt));
            c.kept++;
        } else if (skip) {
            if (meta->n_reasons < VP_LOAD_MAX_REASONS) {
                /* Kept whole when it fits, else cut (the file, line, column and rule come first). */
                char* r = meta->reasons[meta->n_reasons++];
                size_t m = strlen(c.msg) < VP_LOAD_REASON_LEN - 1 ? strlen(c.msg) : VP_LOAD_REASON_LEN - 1;
                memcpy(r, c.msg, m);
                r[m] = '\0';
            }
            meta->rows_dropped++;
        } else {
            st = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s", c.msg);
        }
        p = next;
    }

    /* Nothing kept is a failure; otherwise trim the arrays to the rows kept. */
    if (st == VP_OK && c.kept == 0)
        st = vp_set_error(VP_ERR_PARSE, VP_WHERE, "%s: all %lld data rows were dropped as bad (first: %s)", path,
                          (long long)meta->rows_read, meta->n_reasons ? meta->reasons[0] : "");
    if (st == VP_OK && c.kept < out->n) st = shrink(out, c.kept);
    meta->has_volume = lay.col[VP_COL_VOLUME] >= 0;
    meta->has_spread = has_spread;
    free(c.f);
    vp_csv_layout_free(&lay);
    if (st != VP_OK) vp_bars_free(out);
    return st;
}
