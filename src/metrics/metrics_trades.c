/* Trade statistics: hit rate, profit factor, costs and holding from closed trades; exposure
 * and turnover from the position held at each bar's close. */
#include <math.h>
#include <string.h>

#include "metrics/metrics_internal.h"
#include "vulpes/metrics.h"

vp_status vp_trade_stats_compute(const vp_trade* trades, int64_t n_trades, const double* positions, int64_t n_bars,
                                 double max_position, double periods_per_year, vp_trade_stats* out) {
    VP_REQUIRE(out, VP_ERR_INVALID_ARG, "vp_trade_stats_compute: out is NULL");
    VP_REQUIRE(n_trades >= 0 && (trades || n_trades == 0), VP_ERR_INVALID_ARG,
               "vp_trade_stats_compute: trades is NULL or n_trades = %lld is negative", (long long)n_trades);
    VP_REQUIRE(n_bars >= 0 && (positions || n_bars == 0), VP_ERR_INVALID_ARG,
               "vp_trade_stats_compute: positions is NULL or n_bars = %lld is negative", (long long)n_bars);
    VP_REQUIRE(isfinite(max_position) && max_position > 0.0, VP_ERR_INVALID_ARG,
               "vp_trade_stats_compute: max_position = %g must be positive and finite", max_position);
    VP_REQUIRE(isfinite(periods_per_year) && periods_per_year > 0.0, VP_ERR_INVALID_ARG,
               "vp_trade_stats_compute: periods_per_year = %g must be positive and finite", periods_per_year);
    memset(out, 0, sizeof *out);

    // sums over closed trades
    double holding = 0.0;
    for (int64_t i = 0; i < n_trades; ++i) {
        const vp_trade* t = &trades[i];
        VP_REQUIRE(isfinite(t->pnl) && isfinite(t->costs), VP_ERR_NUMERIC,
                   "vp_trade_stats_compute: trade %lld has pnl %g, costs %g (must be finite)", (long long)i, t->pnl,
                   t->costs);
        VP_REQUIRE(t->bars_held >= 0, VP_ERR_INVALID_ARG, "vp_trade_stats_compute: trade %lld held %lld bars",
                   (long long)i, (long long)t->bars_held);
        if (t->pnl > 0.0) {
            out->n_wins++;
            out->gross_profit += t->pnl;
        } else if (t->pnl < 0.0) {
            out->n_losses++;
            out->gross_loss -= t->pnl;
        }
        out->net_pnl += t->pnl;
        out->costs += t->costs;
        holding += (double)t->bars_held;
    }
    out->n_trades = n_trades;
    out->hit_rate = n_trades ? (double)out->n_wins / (double)n_trades : NAN;
    out->profit_factor = vp_metric_ratio(out->gross_profit, out->gross_loss);
    out->avg_trade_pnl = n_trades ? out->net_pnl / (double)n_trades : NAN;
    out->avg_holding_bars = n_trades ? holding / (double)n_trades : NAN;

    // per-bar positions: exposure and turnover from a flat start
    double prev = 0.0, traded = 0.0;
    int64_t held = 0;
    for (int64_t t = 0; t < n_bars; ++t) {
        VP_REQUIRE(isfinite(positions[t]), VP_ERR_NUMERIC, "vp_trade_stats_compute: positions[%lld] = %g",
                   (long long)t, positions[t]);
        traded += fabs(positions[t] - prev);
        held += positions[t] != 0.0;
        prev = positions[t];
    }
    out->n_bars = n_bars;
    out->exposure = n_bars ? (double)held / (double)n_bars : NAN;
    out->turnover = traded / max_position;
    out->turnover_per_year = n_bars ? out->turnover * periods_per_year / (double)n_bars : NAN;
    return VP_OK;
}
