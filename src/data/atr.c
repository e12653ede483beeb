/* Wilder's average true range, causal. */
#include <math.h>

#include "vulpes/data.h"

vp_status vp_atr(const vp_bars* b, int period, double* out) {
    VP_REQUIRE(b != NULL && out != NULL && b->n >= 1 && b->high && b->low && b->close, VP_ERR_INVALID_ARG,
               "vp_atr: NULL or empty argument");
    VP_REQUIRE(period >= 1, VP_ERR_INVALID_ARG, "vp_atr: period %d < 1", period);
    double sum = 0.0, atr = 0.0;
    for (int64_t t = 0; t < b->n; ++t) {
        /* True range: the bar's range, widened to the previous close. */
        double tr = b->high[t] - b->low[t];
        if (t > 0) tr = fmax(tr, fmax(fabs(b->high[t] - b->close[t - 1]), fabs(b->low[t] - b->close[t - 1])));
        /* Mean of what there is for the first `period` bars, then Wilder's smoothing. */
        if (t < period) {
            sum += tr;
            atr = sum / (double)(t + 1);
        } else {
            atr = (atr * (period - 1) + tr) / period;
        }
        out[t] = atr;
    }
    return VP_OK;
}
