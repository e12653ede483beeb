/* Equity series: returns and drawdown of a curve, and a baseline's returns. (The baselines
 * themselves are stepped through the environment by the rollout, src/rollout/rollout_baseline.c.) */
#include <math.h>

#include "vulpes/metrics.h"

double vp_equity_step_return(double e0, double e1) {
    // e1 / e0 - 1 from any non-zero e0, negative too (the growth factors still multiply to
    // last / first); from 0: nothing left, so 0 to 0 is 0 and 0 to anything else undefined
    const double r = e0 != 0.0 ? e1 / e0 - 1.0 : (e1 == 0.0 ? 0.0 : NAN);
    return isfinite(r) ? r : NAN;
}

vp_status vp_returns_from_equity(const double* equity, int64_t n, double* returns) {
    VP_REQUIRE(equity && (returns || n <= 1), VP_ERR_INVALID_ARG, "vp_returns_from_equity: equity or returns is NULL");
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_returns_from_equity: n = %lld (need >= 1)", (long long)n);
    for (int64_t t = 0; t < n; ++t) {
        VP_REQUIRE(isfinite(equity[t]), VP_ERR_NUMERIC, "vp_returns_from_equity: equity[%lld] = %g", (long long)t,
                   equity[t]);
        if (t > 0) returns[t - 1] = vp_equity_step_return(equity[t - 1], equity[t]);
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
