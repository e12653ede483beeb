/* Internal: CSV fields and the column layout found in a header row. */
#ifndef VP_DATA_CSV_LAYOUT_H
#define VP_DATA_CSV_LAYOUT_H

#include <stddef.h>

#include "vulpes/status.h"

/* The role a column plays. */
typedef enum vp_col_role {
    VP_COL_TIME = 0, /* the time (or the date, when a time-of-day column sits beside it) */
    VP_COL_CLOCK,    /* a separate time-of-day column joined to the date */
    VP_COL_OPEN,
    VP_COL_HIGH,
    VP_COL_LOW,
    VP_COL_CLOSE,
    VP_COL_VOLUME,
    VP_COL_SPREAD,   /* the bid-ask spread, price units */
    VP_COL_BID,      /* the bid close (with an ask column: spread = ask - bid) */
    VP_COL_ASK,      /* the ask close */
    VP_COL_ROLE_COUNT
} vp_col_role;

/* One field of a line: trimmed, quotes removed. */
typedef struct vp_field {
    const char* s; /* first character */
    size_t len;    /* characters */
} vp_field;

/* What the header says. */
typedef struct vp_csv_layout {
    char delim;                    /* ',', ';' or '\t' */
    int ncols;                     /* fields in the header */
    int col[VP_COL_ROLE_COUNT];    /* column index of each role, -1 when absent */
    char (*names)[64];             /* [ncols] header names, for messages ("(unnamed)" when empty) */
} vp_csv_layout;

/* Splits the line [p, end) at delim into fields, storing up to cap of them in f; returns
 * the number of fields, or -(i + 1) when field i has a quote that is not closed or is
 * followed by text. */
int vp_csv_split(const char* p, const char* end, char delim, vp_field* f, int cap);

/* The delimiter a header line [p, end) asks for: a comma, else a semicolon, else a tab
 * (a comma when it has none). */
char vp_csv_delimiter(const char* p, const char* end);

/* Reads the header line [p, end) of file `path` into *lay (names allocated; free with
 * vp_csv_layout_free); fails naming the missing, duplicate or ambiguous column (a spread
 * column beside bid / ask columns, or a bid column without an ask column or the reverse). */
vp_status vp_csv_layout_read(const char* path, const char* p, const char* end, vp_csv_layout* lay);

/* Releases the names of a layout. */
void vp_csv_layout_free(vp_csv_layout* lay);

#endif /* VP_DATA_CSV_LAYOUT_H */
