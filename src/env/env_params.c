/* The step's constants from an instrument and episode settings, and the instrument's checks. */
#include <math.h>
#include <string.h>

#include "env/env_params.h"

/* Fractions of a bar's spread a buy pays above, and a sell gives up below, the bar price, by
 * the side of the book the bars are: mid, bid, ask. */
static const double BUY_SHARE[VP_PRICE_SIDE_COUNT] = {0.5, 1.0, 0.0};
static const double SELL_SHARE[VP_PRICE_SIDE_COUNT] = {0.5, 0.0, 1.0};

vp_env_params vp_env_params_make(const vp_instrument* in, const vp_env_config* cfg, double bars_per_year) {
    vp_env_params p;
    memset(&p, 0, sizeof p);
    const int side = in->price_side >= 0 && in->price_side < VP_PRICE_SIDE_COUNT ? (int)in->price_side : 0;
    p.slip = in->slippage_ticks * in->tick_size;
    p.multiplier = in->multiplier;
    p.commission = in->commission;
    p.initial_equity = in->initial_equity;
    p.ruin_level = cfg->ruin_fraction * in->initial_equity;
    p.reward_per_cash = cfg->reward_scale / in->initial_equity;
    p.inv_max_position = 1.0 / (double)in->max_position;
    p.inv_episode_bars = 1.0 / (double)cfg->episode_bars;
    p.drawdown_penalty = cfg->drawdown_penalty;
    p.turnover_penalty = cfg->turnover_penalty;
    p.buy_share = BUY_SHARE[side];
    p.sell_share = SELL_SHARE[side];
    p.financing_long = in->financing_long != 0.0 ? in->financing_long / bars_per_year : 0.0;
    p.financing_short = in->financing_short != 0.0 ? in->financing_short / bars_per_year : 0.0;
    p.max_leverage = in->max_leverage;
    p.seed = cfg->seed;
    p.episode_bars = cfg->episode_bars;
    p.max_position = in->max_position;
    return p;
}

vp_status vp_env_instrument_check(const char* fn, const vp_instrument* in, double bars_per_year) {
    VP_REQUIRE(isfinite(in->tick_size) && in->tick_size > 0, VP_ERR_INVALID_ARG,
               "%s: instrument tick_size %g (> 0 required)", fn, in->tick_size);
    VP_REQUIRE(isfinite(in->multiplier) && in->multiplier > 0, VP_ERR_INVALID_ARG,
               "%s: instrument multiplier %g (> 0 required)", fn, in->multiplier);
    VP_REQUIRE(isfinite(in->commission) && in->commission >= 0, VP_ERR_INVALID_ARG,
               "%s: instrument commission %g (>= 0 required)", fn, in->commission);
    VP_REQUIRE(isfinite(in->slippage_ticks) && in->slippage_ticks >= 0, VP_ERR_INVALID_ARG,
               "%s: instrument slippage_ticks %g (>= 0 required)", fn, in->slippage_ticks);
    VP_REQUIRE(in->max_position >= 1 && in->max_position <= (1 << 29), VP_ERR_INVALID_ARG,
               "%s: instrument max_position %d (1 .. 2^29 required)", fn, (int)in->max_position);
    VP_REQUIRE(isfinite(in->initial_equity) && in->initial_equity > 0, VP_ERR_INVALID_ARG,
               "%s: instrument initial_equity %g (> 0 required)", fn, in->initial_equity);
    VP_REQUIRE(isfinite(in->spread_ticks) && in->spread_ticks >= 0, VP_ERR_INVALID_ARG,
               "%s: instrument spread_ticks %g (finite, >= 0 required)", fn, in->spread_ticks);
    VP_REQUIRE(in->price_side >= 0 && in->price_side < VP_PRICE_SIDE_COUNT, VP_ERR_INVALID_ARG,
               "%s: instrument price_side %d (0 mid, 1 bid or 2 ask)", fn, (int)in->price_side);
    VP_REQUIRE(isfinite(in->financing_long) && fabs(in->financing_long) <= 1, VP_ERR_INVALID_ARG,
               "%s: instrument financing_long %g (a yearly rate in [-1, 1] required)", fn, in->financing_long);
    VP_REQUIRE(isfinite(in->financing_short) && fabs(in->financing_short) <= 1, VP_ERR_INVALID_ARG,
               "%s: instrument financing_short %g (a yearly rate in [-1, 1] required)", fn, in->financing_short);
    VP_REQUIRE(isfinite(in->max_leverage) && in->max_leverage >= 0, VP_ERR_INVALID_ARG,
               "%s: instrument max_leverage %g (finite, >= 0 required; 0: no limit)", fn, in->max_leverage);
    VP_REQUIRE((in->financing_long == 0 && in->financing_short == 0) ||
                   (isfinite(bars_per_year) && bars_per_year > 0),
               VP_ERR_INVALID_ARG,
               "%s: financing rates (long %g, short %g a year) need the market's bars per year, which is %g "
               "(> 0 required)", fn, in->financing_long, in->financing_short, bars_per_year);
    return VP_OK;
}
