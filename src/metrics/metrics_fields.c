/* The table of metric fields (JSON key with its unit, label, unit, place in the struct) and
 * the formatting of values for people. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "metrics/metrics_internal.h"

#define PERF_FIELD(key, label, unit, member) {key, label, unit, offsetof(vp_perf, member), 0}
#define TEAR_FIELD(key, label, unit, member) {key, label, unit, offsetof(vp_tear, member), 0}
#define TRADE_FIELD(key, label, unit, member, is_int) {key, label, unit, offsetof(vp_trade_stats, member), is_int}

const vp_metric_field vp_perf_fields[] = {
    PERF_FIELD("total_return_frac", "total return", VP_METRIC_UNIT_FRAC, total_return),
    PERF_FIELD("annual_return_frac", "annual return", VP_METRIC_UNIT_FRAC, annual_return),
    PERF_FIELD("annual_volatility_frac", "annual volatility", VP_METRIC_UNIT_FRAC, annual_volatility),
    PERF_FIELD("sharpe_ratio", "Sharpe ratio", VP_METRIC_UNIT_RATIO, sharpe),
    PERF_FIELD("sharpe_se_ratio", "Sharpe standard error", VP_METRIC_UNIT_RATIO, sharpe_se),
    PERF_FIELD("psr_vs_zero_frac", "P(true Sharpe > 0) (PSR)", VP_METRIC_UNIT_FRAC, psr_vs_zero),
    PERF_FIELD("sortino_ratio", "Sortino ratio", VP_METRIC_UNIT_RATIO, sortino),
    PERF_FIELD("downside_risk_frac", "downside risk", VP_METRIC_UNIT_FRAC, downside_risk),
    PERF_FIELD("max_drawdown_frac", "max drawdown", VP_METRIC_UNIT_FRAC, max_drawdown),
    PERF_FIELD("calmar_ratio", "Calmar ratio", VP_METRIC_UNIT_RATIO, calmar),
};
const int vp_perf_n_fields = (int)(sizeof vp_perf_fields / sizeof vp_perf_fields[0]);

const vp_metric_field vp_tear_fields[] = {
    TEAR_FIELD("skewness_ratio", "skewness", VP_METRIC_UNIT_RATIO, skewness),
    TEAR_FIELD("excess_kurtosis_ratio", "excess kurtosis", VP_METRIC_UNIT_RATIO, excess_kurtosis),
    TEAR_FIELD("var_95_frac", "value at risk 95 % (per bar)", VP_METRIC_UNIT_FRAC, var_95),
    TEAR_FIELD("cvar_95_frac", "conditional value at risk 95 % (per bar)", VP_METRIC_UNIT_FRAC, cvar_95),
    TEAR_FIELD("beta_ratio", "beta", VP_METRIC_UNIT_RATIO, beta),
    TEAR_FIELD("alpha_annual_frac", "alpha (annual)", VP_METRIC_UNIT_FRAC, alpha),
    TEAR_FIELD("correlation_ratio", "correlation", VP_METRIC_UNIT_RATIO, correlation),
    TEAR_FIELD("tracking_error_annual_frac", "tracking error (annual)", VP_METRIC_UNIT_FRAC, tracking_error),
    TEAR_FIELD("information_ratio", "information ratio", VP_METRIC_UNIT_RATIO, information_ratio),
};
const int vp_tear_n_fields = (int)(sizeof vp_tear_fields / sizeof vp_tear_fields[0]);

const vp_metric_field vp_trade_fields[] = {
    TRADE_FIELD("n_trades", "trades", VP_METRIC_UNIT_INT, n_trades, 1),
    TRADE_FIELD("n_winning_trades", "winning trades", VP_METRIC_UNIT_INT, n_wins, 1),
    TRADE_FIELD("n_losing_trades", "losing trades", VP_METRIC_UNIT_INT, n_losses, 1),
    TRADE_FIELD("hit_rate_frac", "hit rate", VP_METRIC_UNIT_FRAC, hit_rate, 0),
    TRADE_FIELD("profit_factor_ratio", "profit factor", VP_METRIC_UNIT_RATIO, profit_factor, 0),
    TRADE_FIELD("gross_profit_ccy", "gross profit", VP_METRIC_UNIT_CCY, gross_profit, 0),
    TRADE_FIELD("gross_loss_ccy", "gross loss", VP_METRIC_UNIT_CCY, gross_loss, 0),
    TRADE_FIELD("net_pnl_ccy", "net PnL", VP_METRIC_UNIT_CCY, net_pnl, 0),
    TRADE_FIELD("costs_ccy", "costs paid", VP_METRIC_UNIT_CCY, costs, 0),
    TRADE_FIELD("avg_trade_pnl_ccy", "average trade PnL", VP_METRIC_UNIT_CCY, avg_trade_pnl, 0),
    TRADE_FIELD("avg_holding_bars", "average holding", VP_METRIC_UNIT_BARS, avg_holding_bars, 0),
    TRADE_FIELD("n_bars", "bars", VP_METRIC_UNIT_INT, n_bars, 1),
    TRADE_FIELD("exposure_frac", "exposure", VP_METRIC_UNIT_FRAC, exposure, 0),
    TRADE_FIELD("turnover_max_position", "turnover (x max position)", VP_METRIC_UNIT_TIMES, turnover, 0),
    TRADE_FIELD("turnover_max_position_per_year", "turnover per year (x max position)", VP_METRIC_UNIT_TIMES,
                turnover_per_year, 0),
};
const int vp_trade_n_fields = (int)(sizeof vp_trade_fields / sizeof vp_trade_fields[0]);

double vp_metric_field_get(const vp_metric_field* f, const void* obj) {
    const char* base = (const char*)obj + f->offset;
    if (f->is_int) {
        int64_t v;
        memcpy(&v, base, sizeof v);
        return (double)v;
    }
    double d;
    memcpy(&d, base, sizeof d);
    return d;
}

const char* vp_metric_format(double v, vp_metric_unit unit, char* buf, size_t n) {
    if (!buf || n == 0) return "";
    // the conventions for values that are not numbers
    if (isnan(v)) {
        snprintf(buf, n, "-");
        return buf;
    }
    if (isinf(v)) {
        snprintf(buf, n, v > 0 ? "inf" : "-inf");
        return buf;
    }
    // one fixed format per unit, so every output shows the same text
    switch (unit) {
    case VP_METRIC_UNIT_FRAC: snprintf(buf, n, "%.2f %%", v * 100.0); break;
    case VP_METRIC_UNIT_RATIO: snprintf(buf, n, "%.3f", v); break;
    case VP_METRIC_UNIT_INT: snprintf(buf, n, "%.0f", v); break;
    case VP_METRIC_UNIT_CCY: snprintf(buf, n, "%.2f", v); break;
    case VP_METRIC_UNIT_BARS: snprintf(buf, n, "%.1f", v); break;
    case VP_METRIC_UNIT_TIMES: snprintf(buf, n, "%.2f x", v); break;
    default: snprintf(buf, n, "%g", v); break;
    }
    // no "-0.00": a value that rounds to zero shows as zero
    if (buf[0] == '-') {
        int zero = 1;
        for (const char* c = buf + 1; *c; ++c)
            if (*c >= '1' && *c <= '9') zero = 0;
        if (zero) memmove(buf, buf + 1, strlen(buf));
    }
    return buf;
}
