/* Internal to eval: what the backtest's outputs share — the text that says a run ruined,
 * that the leverage limit cut its orders, how many of its decisions were fragile and what it
 * decides for the bar after the span,
 * the same words on the console (backtest_print.c), in the report's heading
 * (backtest_write.c) and beside summary.json's objects (backtest_summary.c). */
#ifndef VP_EVAL_BACKTEST_IMPL_H
#define VP_EVAL_BACKTEST_IMPL_H

#include <stddef.h>

#include "vulpes/backtest.h"

/* Fragile decisions summary.json and the report list by bar (the first ones). */
#define VP_BT_FRAGILE_LIST 100

/* ISO time stamp (the open time) of bar i of r's span ("" outside it) into buf[32]; returns buf. */
const char* vp_bt_bar_time(const vp_rollout_result* r, int64_t i, char* buf);

/* One line saying that `who` ("the strategy", "buy & hold") ruined, with the ruin bar and its
 * time, the equity at that close and after the close-out, the level, and below zero; and
 * how many of the run's windows ruined when n_windows > 1. Into buf[n]; returns buf. */
const char* vp_bt_ruin_line(const char* who, const vp_rollout_ruin* ru, int64_t n_ruined, int64_t n_windows,
                            char* buf, size_t n);

/* One line with the count of fragile decisions among the scored ones, the threshold, and
 * the first bars (at most `list`) with the first one's time. Into buf[n]; returns buf. */
const char* vp_bt_fragile_line(const vp_rollout_result* r, int list, char* buf, size_t n);

/* One line saying that `who`'s ("the strategy", "buy & hold") orders were cut to
 * instrument.max_leverage: how many, the contracts removed, the first bars (at most `list`)
 * and the first one's time. Into buf[n]; returns buf ("" when nothing was cut). */
const char* vp_bt_cuts_line(const vp_rollout_result* r, const char* who, const vp_rollout_cuts* c, int list,
                            char* buf, size_t n);

/* The choices at the result's last point (the span's last close, for the bar after it) in
 * words ("long 0.5 x max_position, take-profit 1 x ATR, no stop-loss; Q margin 0.0123"), or
 * why there are none. Into buf[n]; returns buf. */
const char* vp_bt_next_line(const vp_rollout_result* r, char* buf, size_t n);

#endif /* VP_EVAL_BACKTEST_IMPL_H */
