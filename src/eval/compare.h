/* `vulpes compare`: one table across run folders (vulpes train), walk-forward folders and
 * backtest folders, read from each folder's summary.json, written as a console table, CSV,
 * JSON and one HTML page (compare.c reads, compare_write.c writes; docs/compare.md). */
#ifndef VP_EVAL_COMPARE_H
#define VP_EVAL_COMPARE_H

#include <stdint.h>
#include <stdio.h>

#include "vulpes/metrics.h"
#include "vulpes/status.h"

/* One figure of the table: where summary.json holds it and how it is shown. */
typedef struct vp_compare_column {
    const char* key;      /* JSON and CSV name, unit in it ("sharpe_ratio") */
    const char* label;    /* console and page heading ("Sharpe") */
    vp_metric_unit unit;  /* how a value is shown */
    const char* path;     /* dotted path: "@a.b" in the folder's metrics block (a run's "test",
                             else the top), "/a.b" from the top; alternatives split by '|' */
    int better;           /* +1: the highest is best, -1: the lowest, 0: neither (marked on the page) */
} vp_compare_column;

/* The columns, in table order; *n their count. */
const vp_compare_column* vp_compare_columns(int* n);

/* What kind of folder a row is. */
typedef enum vp_compare_kind {
    VP_COMPARE_TRAIN = 0,   /* vulpes train: the test span's backtest */
    VP_COMPARE_WALKFORWARD, /* vulpes walkforward: the stitched test spans */
    VP_COMPARE_BACKTEST,    /* vulpes backtest --out */
    VP_COMPARE_KIND_COUNT
} vp_compare_kind;

/* Most columns a table has. */
#define VP_COMPARE_MAX_COLUMNS 32

/* One folder's row. */
typedef struct vp_compare_row {
    char dir[1024];                        /* the folder, as given */
    char name[256];                        /* its last path component */
    vp_compare_kind kind;                  /* what wrote it */
    char status[32];                       /* "ok", "ruined", or "unfinished" (a run with no test span yet) */
    char data[1024];                       /* the bar file */
    char first_time[32];                   /* the span's first bar, ISO 8601 UTC ("" unknown) */
    char last_time[32];                    /* the span's last bar */
    double n_bars;                         /* bars of the span (NaN unknown) */
    double value[VP_COMPARE_MAX_COLUMNS];  /* [columns] the figures, NaN where the folder has none */
} vp_compare_row;

/* The name of a kind ("train", "walkforward", "backtest"). */
const char* vp_compare_kind_name(vp_compare_kind k);

/* Reads folder `dir`'s summary.json into *row; a folder that is missing, holds no
 * summary.json, or whose summary.json is not one vulpes wrote is refused, naming it. */
vp_status vp_compare_load(const char* dir, vp_compare_row* row);

/* The table for people: one line per row, the columns as vp_metric_format shows them. */
vp_status vp_compare_print(FILE* out, const vp_compare_row* rows /* [n] */, int n);

/* CSV: a header line, then one line per row (numbers in full precision, empty for none). */
vp_status vp_compare_write_csv(FILE* out, const vp_compare_row* rows /* [n] */, int n);

/* JSON: {"columns": [{key, label}], "runs": [{dir, name, kind, status, data, span, figures}]}. */
vp_status vp_compare_write_json(FILE* out, const vp_compare_row* rows /* [n] */, int n);

/* The page: one self-contained HTML table (inline CSS, no script), the best value of each
 * column marked, a link to each folder's report.html. */
vp_status vp_compare_write_html(FILE* out, const vp_compare_row* rows /* [n] */, int n);

/* Writes DIR/compare.csv, compare.json and compare.html (each atomically). */
vp_status vp_compare_write_dir(const char* dir, const vp_compare_row* rows /* [n] */, int n);

#endif /* VP_EVAL_COMPARE_H */
