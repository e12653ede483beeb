/* Equity series: the buy-and-hold and flat baselines, returns and drawdown of a curve. */
#include <math.h>

#include "vulpes/metrics.h"

vp_status vp_baseline_buy_hold(const double* open, const double* close, int64_t n, const vp_baseline_costs* c,
                               double* equity) {
    VP_REQUIRE(open && close && c && equity, VP_ERR_INVALID_ARG,
               "vp_baseline_buy_hold: open, close, costs and equity must not be NULL");
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_baseline_buy_hold: n = %lld bars (need >= 1)", (long long)n);
    VP_REQUIRE(isfinite(c->contracts) && c->contracts > 0.0 && isfinite(c->multiplier) && c->multiplier > 0.0,
               VP_ERR_INVALID_ARG, "vp_baseline_buy_hold: contracts = %g and multiplier = %g must be positive",
               c->contracts, c->multiplier);
    VP_REQUIRE(isfinite(c->commission) && c->commission >= 0.0 && isfinite(c->slippage) && c->slippage >= 0.0,
               VP_ERR_INVALID_ARG, "vp_baseline_buy_hold: commission = %g and slippage = %g must be >= 0",
               c->commission, c->slippage);
    VP_REQUIRE(isfinite(c->initial_equity) && c->initial_equity > 0.0, VP_ERR_INVALID_ARG,
               "vp_baseline_buy_hold: initial_equity = %g must be positive", c->initial_equity);
    for (int64_t t = 0; t < n; ++t)
        VP_REQUIRE(isfinite(open[t]) && open[t] > 0.0 && isfinite(close[t]) && close[t] > 0.0, VP_ERR_INVALID_ARG,
                   "vp_baseline_buy_hold: bar %lld has open %g, close %g (prices must be positive)", (long long)t,
                   open[t], close[t]);

    // bar 0: the decision bar, nothing held yet; too short a span stays flat
    equity[0] = c->initial_equity;
    if (n <= 2) {
        for (int64_t t = 1; t < n; ++t) equity[t] = c->initial_equity;
        return VP_OK;
    }

    // buy at bar 1's open (slippage against, commission per contract), as the environment fills
    double q = c->contracts, fee = q * c->commission;
    double cash = c->initial_equity - q * (open[1] + c->slippage) * c->multiplier - fee;

    // hold: mark to each close
    for (int64_t t = 1; t < n - 1; ++t) equity[t] = cash + q * close[t] * c->multiplier;

    // sell at the last bar's open; the last bar ends flat
    equity[n - 1] = cash + q * (open[n - 1] - c->slippage) * c->multiplier - fee;
    return VP_OK;
}

vp_status vp_baseline_flat(int64_t n, double initial_equity, double* equity) {
    VP_REQUIRE(equity || n == 0, VP_ERR_INVALID_ARG, "vp_baseline_flat: equity is NULL");
    VP_REQUIRE(n >= 0 && isfinite(initial_equity) && initial_equity > 0.0, VP_ERR_INVALID_ARG,
               "vp_baseline_flat: n = %lld, initial_equity = %g (need n >= 0 and positive equity)", (long long)n,
               initial_equity);
    for (int64_t t = 0; t < n; ++t) equity[t] = initial_equity;
    return VP_OK;
}

vp_status vp_returns_from_equity(const double* equity, int64_t n, double* returns) {
    VP_REQUIRE(equity && (returns || n <= 1), VP_ERR_INVALID_ARG, "vp_returns_from_equity: equity or returns is NULL");
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_returns_from_equity: n = %lld (need >= 1)", (long long)n);
    for (int64_t t = 0; t < n; ++t) {
        VP_REQUIRE(isfinite(equity[t]), VP_ERR_NUMERIC, "vp_returns_from_equity: equity[%lld] = %g", (long long)t,
                   equity[t]);
        VP_REQUIRE(t == n - 1 || equity[t] > 0.0, VP_ERR_NUMERIC,
                   "vp_returns_from_equity: equity[%lld] = %g is not positive, so the next return is undefined",
                   (long long)t, equity[t]);
        if (t > 0) returns[t - 1] = equity[t] / equity[t - 1] - 1.0;
    }
    return VP_OK;
}

vp_status vp_drawdown_series(const double* equity, int64_t n, double* drawdown) {
    VP_REQUIRE(equity && drawdown, VP_ERR_INVALID_ARG, "vp_drawdown_series: equity and drawdown must not be NULL");
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_drawdown_series: n = %lld (need >= 1)", (long long)n);
    VP_REQUIRE(isfinite(equity[0]) && equity[0] > 0.0, VP_ERR_NUMERIC,
               "vp_drawdown_series: equity[0] = %g must be positive", equity[0]);
    double peak = equity[0];
    for (int64_t t = 0; t < n; ++t) {
        VP_REQUIRE(isfinite(equity[t]), VP_ERR_NUMERIC, "vp_drawdown_series: equity[%lld] = %g", (long long)t,
                   equity[t]);
        if (equity[t] > peak) peak = equity[t];
        drawdown[t] = equity[t] / peak - 1.0;
    }
    return VP_OK;
}

void vp_baseline_returns(const double* eq, int64_t n, double* ret) {
    for (int64_t t = 1; t < n; ++t) ret[t - 1] = eq[t - 1] > 0.0 ? eq[t] / eq[t - 1] - 1.0 : 0.0;
}
