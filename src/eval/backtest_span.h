/* The span of a `vulpes backtest`: the training run's split recomputed over the data, --span,
 * --from / --to, and the overlap with the bars the training run trained and validated on. */
#ifndef VP_EVAL_BACKTEST_SPAN_H
#define VP_EVAL_BACKTEST_SPAN_H

#include "vulpes/backtest.h"

/* The span of job over bars `all` (`data` names them in messages) under the checkpoint's
 * config cfg into *span: --span's (default: the training run's test span; all bars after the
 * warm-up when --from or --to is given), its bounds replaced by --from / --to; into si its
 * source, the training split and, when `same_data` (the bars are the training run's), the
 * overlap with its train and validation spans (si->checks is left as it is). */
vp_status vp_bt_resolve_span(const vp_config* cfg, const vp_bars* all, const vp_backtest_job* job, const char* data,
                             int same_data, vp_span* span, vp_backtest_span_info* si);

#endif /* VP_EVAL_BACKTEST_SPAN_H */
