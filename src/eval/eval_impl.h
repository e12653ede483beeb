/* Internal to eval: the backtest files' schema (trades.csv and equity.csv: one column table
 * each, which the writer and the reader both use, in backtest_write.c) and the number
 * format the files share. */
#ifndef VP_EVAL_EVAL_IMPL_H
#define VP_EVAL_EVAL_IMPL_H

#include <stdio.h>

#include "vulpes/status.h"

/* trades.csv: one row per closed trade. X(ENUM, "name"). */
#define VP_TRADES_COLUMNS(X)                                                                 \
    X(WINDOW, "window") X(SIDE, "side") X(SIZE, "size") X(ENTRY_TIME, "entry_time")          \
    X(ENTRY_BAR, "entry_bar") X(ENTRY_PRICE, "entry_price") X(EXIT_TIME, "exit_time")        \
    X(EXIT_BAR, "exit_bar") X(EXIT_PRICE, "exit_price") X(PNL, "pnl") X(COSTS, "costs")      \
    X(FINANCING, "financing") X(BARS_HELD, "bars_held") X(EXIT_REASON, "exit_reason")

/* equity.csv: one row per bar of the span, marked at the bar's close; the bar's time stamp
 * is its open time, as in the data. */
#define VP_EQUITY_COLUMNS(X)                                                                 \
    X(BAR_OPEN_TIME, "bar_open_time") X(BAR, "bar") X(WINDOW, "window") X(EQUITY, "equity")  \
    X(POSITION, "position") X(DRAWDOWN, "drawdown") X(BUY_HOLD, "buy_hold_equity")           \
    X(DIRECTION, "direction") X(SIZE, "size") X(TAKE_PROFIT, "take_profit")                  \
    X(STOP_LOSS, "stop_loss") X(Q_MARGIN, "q_margin")

#define VP_TRADES_ENUM_(e, name) VP_TRADES_##e,
#define VP_EQUITY_ENUM_(e, name) VP_EQUITY_##e,
/* The columns of trades.csv, in file order. */
typedef enum vp_trades_col { VP_TRADES_COLUMNS(VP_TRADES_ENUM_) VP_TRADES_COL_COUNT } vp_trades_col;
/* The columns of equity.csv, in file order. */
typedef enum vp_equity_col { VP_EQUITY_COLUMNS(VP_EQUITY_ENUM_) VP_EQUITY_COL_COUNT } vp_equity_col;
#undef VP_TRADES_ENUM_
#undef VP_EQUITY_ENUM_

/* A CSV file's columns. */
typedef struct vp_csv_schema {
    const char* file;           /* "trades.csv" */
    const char* const* columns; /* [n] header names, in order */
    int n;                      /* columns */
} vp_csv_schema;

/* The schemas of a backtest's trades.csv and equity.csv. */
extern const vp_csv_schema vp_trades_schema, vp_equity_schema;

/* Writes the header line of schema s to f, after `prefix` (a first column "fold," or ""). */
void vp_csv_write_header(FILE* f, const vp_csv_schema* s, const char* prefix);

/* Writes one row of s->n fields [s->n] joined by commas, after `prefix`, and a newline. */
void vp_csv_write_row(FILE* f, const vp_csv_schema* s, const char* prefix, const char* const* fields);

/* Writes one CSV field, quoted (quotes doubled) when it holds a comma, a quote or a line break. */
void vp_csv_write_field(FILE* f, const char* s);

/* Reads a CSV file written under schema s: its header must be s's, and each line after it is
 * split into exactly s->n fields and handed to row(ctx, fields) (fields[s->n], valid during the
 * call). Lines of any length. */
vp_status vp_csv_read(const char* path, const vp_csv_schema* s, vp_status (*row)(void* ctx, char** fields), void* ctx);

/* v with 15 significant digits, or 17 when 15 do not read back as v, into buf[32]; returns buf. */
const char* vp_eval_format_exact(double v, char* buf);

#endif /* VP_EVAL_EVAL_IMPL_H */
