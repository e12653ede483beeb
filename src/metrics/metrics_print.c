/* The plain-text metrics table: the annualisation line, strategy | buy & hold | flat, and
 * the trade statistics, into a caller-given FILE*. */
#include <errno.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

#define LABEL_W 36
#define VALUE_W 14

vp_status vp_metrics_print(const vp_metrics_summary* s, FILE* out) { return vp_metrics_print_status(s, NULL, out); }

vp_status vp_metrics_print_status(const vp_metrics_summary* s, const char* const* status, FILE* out) {
    VP_REQUIRE(s && out, VP_ERR_INVALID_ARG, "vp_metrics_print: s and out must not be NULL");
    char line[256], a[64], b[64], c[64];
    const vp_perf* series[3] = {&s->strategy, &s->buy_hold, &s->flat};

    // where the annualisation factor came from
    fprintf(out, "annualisation: %s\n", vp_annual_describe(&s->annual, line, sizeof line));

    // return metrics, one row per metric, one column per series
    fprintf(out, "%-*s%*s%*s%*s\n", LABEL_W, "metric", VALUE_W, "strategy", VALUE_W, "buy & hold", VALUE_W, "flat");
    for (int i = 0; i < vp_perf_n_fields; ++i) {
        const vp_metric_field* f = &vp_perf_fields[i];
        fprintf(out, "%-*s%*s%*s%*s\n", LABEL_W, f->label, VALUE_W,
                vp_metric_format(vp_metric_field_get(f, series[0]), f->unit, a, sizeof a), VALUE_W,
                vp_metric_format(vp_metric_field_get(f, series[1]), f->unit, b, sizeof b), VALUE_W,
                vp_metric_format(vp_metric_field_get(f, series[2]), f->unit, c, sizeof c));
    }
    const char* st[3];
    for (int i = 0; i < 3; ++i) st[i] = status && status[i] ? status[i] : vp_perf_status_name(series[i]->status);
    fprintf(out, "%-*s%*s%*s%*s\n", LABEL_W, "series status", VALUE_W, st[0], VALUE_W, st[1], VALUE_W, st[2]);

    // trade statistics of the strategy
    fprintf(out, "trade statistics (strategy)\n");
    for (int i = 0; i < vp_trade_n_fields; ++i) {
        const vp_metric_field* f = &vp_trade_fields[i];
        fprintf(out, "%-*s%*s\n", LABEL_W, f->label, VALUE_W,
                vp_metric_format(vp_metric_field_get(f, &s->trades), f->unit, a, sizeof a));
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "vp_metrics_print: writing the table failed: %s", strerror(errno));
    return VP_OK;
}
