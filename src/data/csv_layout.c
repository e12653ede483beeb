/* CSV fields and the header: which column holds the time, open, high, low, close, volume and
 * the spread (a spread column, or bid and ask columns). */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "data/csv_layout.h"

/* Blank (space, or tab unless tab is the delimiter). */
static inline int is_blank(char c, char delim) { return c == ' ' || (c == '\t' && delim != '\t'); }

int vp_csv_split(const char* p, const char* end, char delim, vp_field* f, int cap) {
    int n = 0;
    for (;;) {
        const char* s;
        const char* e;
        while (p < end && is_blank(*p, delim)) ++p;
        if (p < end && *p == '"') {
            /* Quoted: up to the closing quote ("" stands for one quote), then only blanks. */
            s = ++p;
            for (; p < end; ++p) {
                if (*p != '"') continue;
                if (p + 1 < end && p[1] == '"') {
                    ++p;
                    continue;
                }
                break;
            }
            if (p >= end) return -(n + 1);
            e = p++;
            while (p < end && is_blank(*p, delim)) ++p;
            if (p < end && *p != delim) return -(n + 1);
        } else {
            /* Plain: up to the delimiter (fields are short: a byte loop), trailing blanks trimmed. */
            s = p;
            while (p < end && *p != delim) ++p;
            e = p;
            while (e > s && is_blank(e[-1], delim)) --e;
        }
        if (n < cap) {
            f[n].s = s;
            f[n].len = (size_t)(e - s);
        }
        ++n;
        if (p >= end) break;
        ++p;
    }
    return n;
}

/* The role a header name asks for (-1: ignored); `time` names are resolved by the caller. */
static int role_of(const char* name) {
    static const char* roles[] = {"open", "high", "low", "close", "volume", "spread", "bid", "ask"};
    for (int r = 0; r < 8; ++r)
        if (strcmp(name, roles[r]) == 0) return VP_COL_OPEN + r;
    return -1;
}

static int is_time_name(const char* name) {
    return strcmp(name, "time") == 0 || strcmp(name, "date") == 0 || strcmp(name, "datetime") == 0 ||
           strcmp(name, "timestamp") == 0;
}

char vp_csv_delimiter(const char* p, const char* end) {
    size_t len = (size_t)(end - p);
    return memchr(p, ',', len) ? ',' : memchr(p, ';', len) ? ';' : memchr(p, '\t', len) ? '\t' : ',';
}

void vp_csv_layout_free(vp_csv_layout* lay) {
    if (!lay) return;
    free(lay->names);
    lay->names = NULL;
}

vp_status vp_csv_layout_read(const char* path, const char* p, const char* end, vp_csv_layout* lay) {
    memset(lay, 0, sizeof *lay);
    for (int r = 0; r < VP_COL_ROLE_COUNT; ++r) lay->col[r] = -1;

    lay->delim = vp_csv_delimiter(p, end);
    int n = vp_csv_split(p, end, lay->delim, NULL, 0);
    if (n < 0) VP_FAIL(VP_ERR_PARSE, "%s: line 1: unparsable header: a quote is not closed", path);
    vp_field* f = (vp_field*)malloc((size_t)n * sizeof *f);
    lay->names = (char(*)[64])calloc((size_t)n, 64);
    if (!f || !lay->names) {
        free(f);
        vp_csv_layout_free(lay);
        VP_FAIL(VP_ERR_OOM, "%s: header of %d columns", path, n);
    }
    vp_csv_split(p, end, lay->delim, f, n);
    lay->ncols = n;

    /* Names (kept for messages) and their roles, lower-cased for matching. */
    int time_cols[3], n_time = 0;
    vp_status st = VP_OK;
    for (int i = 0; i < n && st == VP_OK; ++i) {
        char low[64];
        size_t m = f[i].len < 63 ? f[i].len : 63;
        for (size_t k = 0; k < m; ++k) low[k] = (char)tolower((unsigned char)f[i].s[k]);
        low[m] = '\0';
        if (m == 0)
            snprintf(lay->names[i], 64, "(unnamed)");
        else
            snprintf(lay->names[i], 64, "%.*s", (int)m, f[i].s);
        int role = role_of(low);
        if (is_time_name(low)) {
            if (n_time < 3) time_cols[n_time] = i;
            ++n_time;
        } else if (role >= 0 && lay->col[role] >= 0) {
            st = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                              "%s: line 1, column %d (%s): duplicate column: \"%s\" is also column %d", path, i + 1,
                              lay->names[i], lay->names[i], lay->col[role] + 1);
        } else if (role >= 0) {
            lay->col[role] = i;
        }
    }

    /* The time column: one time name; a `date` beside a `time`; or an unnamed first column. */
    if (st == VP_OK) {
        char a[64] = "", b[64] = "";
        for (int k = 0; k < n_time && k < 2; ++k) {
            for (size_t c = 0; lay->names[time_cols[k]][c]; ++c) {
                char* dst = k == 0 ? a : b;
                dst[c] = (char)tolower((unsigned char)lay->names[time_cols[k]][c]);
                dst[c + 1] = '\0';
            }
        }
        if (n_time == 1) {
            lay->col[VP_COL_TIME] = time_cols[0];
        } else if (n_time == 2 && strcmp(a, "date") == 0 && strcmp(b, "time") == 0) {
            lay->col[VP_COL_TIME] = time_cols[0];
            lay->col[VP_COL_CLOCK] = time_cols[1];
        } else if (n_time >= 2) {
            st = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                              "%s: line 1, column %d (%s): ambiguous time column: \"%s\" (column %d) is a time "
                              "column too",
                              path, time_cols[1] + 1, lay->names[time_cols[1]], lay->names[time_cols[0]],
                              time_cols[0] + 1);
        } else if (f[0].len == 0) {
            lay->col[VP_COL_TIME] = 0;
        }
    }

    /* Every required column present. */
    static const char* need[] = {"time", NULL, "open", "high", "low", "close"};
    for (int r = 0; r < VP_COL_VOLUME && st == VP_OK; ++r) {
        if (!need[r] || lay->col[r] >= 0) continue;
        char found[512] = "";
        size_t used = 0;
        for (int i = 0; i < n && used + 70 < sizeof found; ++i)
            used += (size_t)snprintf(found + used, sizeof found - used, "%s%s", i ? ", " : "", lay->names[i]);
        st = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                          "%s: line 1, column \"%s\": missing column: the header has no \"%s\" column%s (found: %s)",
                          path, need[r], need[r],
                          r == VP_COL_TIME ? " (time, date, datetime, timestamp, or an unnamed first column)" : "",
                          found);
    }
    /* The spread: one spread column, or a bid and an ask column, never both kinds. */
    const int sc = lay->col[VP_COL_SPREAD], bc = lay->col[VP_COL_BID], ac = lay->col[VP_COL_ASK];
    if (st == VP_OK && sc >= 0 && (bc >= 0 || ac >= 0)) {
        const int other = bc >= 0 ? bc : ac;
        st = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                          "%s: line 1, column %d (%s): ambiguous spread column: \"%s\" (column %d) gives the spread "
                          "already; use either a spread column or bid and ask columns",
                          path, other + 1, lay->names[other], lay->names[sc], sc + 1);
    } else if (st == VP_OK && (bc >= 0) != (ac >= 0)) {
        const int have = bc >= 0 ? bc : ac;
        st = vp_set_error(VP_ERR_PARSE, VP_WHERE,
                          "%s: line 1, column \"%s\": missing column: the header has a \"%s\" column (%d) but no "
                          "\"%s\" column; the spread needs both bid and ask",
                          path, bc >= 0 ? "ask" : "bid", lay->names[have], have + 1, bc >= 0 ? "ask" : "bid");
    }
    free(f);
    if (st != VP_OK) vp_csv_layout_free(lay);
    return st;
}
