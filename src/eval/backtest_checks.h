/* The checks of a backtest's bars against the record of the data its checkpoint was trained
 * on (vulpes/data_record.h): the file's identity, the bar interval, the price scale, the
 * first order's leverage and the bars seen in training. Each finding is a note of
 * vp_backtest_checks ("WARNING: ..." or "notice: ..."); prices at another scale refuse the
 * run unless it is forced. */
#ifndef VP_EVAL_BACKTEST_CHECKS_H
#define VP_EVAL_BACKTEST_CHECKS_H

#include "vulpes/backtest.h"
#include "vulpes/data_record.h"

/* Bar intervals further apart than this factor (either way) are warned about. */
#define VP_BT_INTERVAL_RATIO 1.5

/* Price scales further apart than this factor (either way) refuse the run. */
#define VP_BT_SCALE_RATIO 10.0

/* What a backtest reads, measured the way the record measures the training data. */
typedef struct vp_bt_seen {
    vp_data_record data;      /* kind, source (absolute for a file), bytes, hash, n_bars, interval_s, close_min and
                                 close_max of the backtest's data (train_median_close: unused) */
    vp_span span;             /* the backtested span */
    double span_median_close; /* median close of the span */
    double first_close;       /* close of the span's first bar */
} vp_bt_seen;

/* Appends one note (printf format) to c; beyond VP_BACKTEST_NOTES_MAX it is dropped. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
void vp_bt_note(vp_backtest_checks* c, const char* fmt, ...);

/* Compares what the backtest reads (seen) with the record rec (NULL: the checkpoint has
 * none: a notice, and only the leverage check runs) and cfg's instrument (after the
 * backtest's overrides), appending notices and warnings to c. Prices more than
 * VP_BT_SCALE_RATIO from the training's set c->refused and fail (VP_ERR_INVALID_ARG, naming
 * the scales, the intervals when they differ too, and --force) unless `force`. */
vp_status vp_bt_check_data(const vp_data_record* rec, const vp_bt_seen* seen, const vp_config* cfg, int force,
                           vp_backtest_checks* c);

/* The in-sample warning: the span holds bars of the training run's train or validation span. */
void vp_bt_check_span(const vp_backtest_span_info* si, vp_backtest_checks* c);

#endif /* VP_EVAL_BACKTEST_CHECKS_H */
