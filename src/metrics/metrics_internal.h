/* Internal to src/eval: the one table of metric fields that drives summary.json, the text
 * table and the HTML report, and small helpers they share. */
#ifndef VP_EVAL_METRICS_INTERNAL_H
#define VP_EVAL_METRICS_INTERNAL_H

#include <stddef.h>

#include "vulpes/metrics.h"

/* One metric of a struct: how it is named, shown and found. */
typedef struct vp_metric_field {
    const char* key;     /* JSON key, the unit in its name */
    const char* label;   /* name for people */
    vp_metric_unit unit; /* how it is shown */
    size_t offset;       /* offsetof in its struct */
    int is_int;          /* 1: an int64_t field; 0: a double */
} vp_metric_field;

/* The fields of vp_perf after status and counts, in display order. */
extern const vp_metric_field vp_perf_fields[];
/* Number of entries of vp_perf_fields. */
extern const int vp_perf_n_fields;

/* The fields of vp_tear after its counts, in display order. */
extern const vp_metric_field vp_tear_fields[];
/* Number of entries of vp_tear_fields. */
extern const int vp_tear_n_fields;

/* The fields of vp_trade_stats, in display order. */
extern const vp_metric_field vp_trade_fields[];
/* Number of entries of vp_trade_fields. */
extern const int vp_trade_n_fields;

/* The value of field f in the struct at obj, as a double. */
double vp_metric_field_get(const vp_metric_field* f, const void* obj);

/* num / den, with x / 0 = +inf or -inf for x != 0 and NaN (undefined) for 0 / 0 or NaN inputs. */
double vp_metric_ratio(double num, double den);

/* Text of the annualisation rule, for outputs that state it. */
#define VP_ANNUAL_RULE_TEXT "periods_per_year = bars x 365.25 days / (last bar time - first bar time + median bar spacing)"

/* Text of the risk-free rule, for outputs that state it. */
#define VP_RISK_FREE_RULE_TEXT                                                                          \
    "Sharpe, Sortino, downside risk, the Sharpe's standard error, PSR and DSR use excess returns "    \
    "r - risk_free_rate / periods_per_year per bar (simple, not compounded)"

#endif /* VP_EVAL_METRICS_INTERNAL_H */
