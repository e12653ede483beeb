/* The environment's step constants and the arithmetic and price rules the step is built
 * from, written once for the CPU loop and the CUDA kernel (env_step.h has the step itself).
 * Every floating-point operation goes through the rounded helpers below, so nvcc cannot fuse
 * a*b+c into an FMA and both backends round identically; nothing here is transcendental. The
 * C side relies on ISO C mode (-std=c11), where GCC and Clang do not contract across
 * statements or expressions (-ffp-contract=off). */
#ifndef VP_ENV_RULES_H
#define VP_ENV_RULES_H

#include <math.h>
#include <stdint.h>

#include "vulpes/defs.h"
#include "vulpes/env.h"

/* Constants of one env set, computed once on the host and passed by value. */
typedef struct vp_env_params {
    double slip;             /* slippage_ticks x tick_size, price units */
    double multiplier;       /* currency per price unit per contract */
    double commission;       /* currency per contract per fill */
    double initial_equity;   /* currency */
    double ruin_level;       /* ruin_fraction x initial_equity, currency */
    double reward_per_cash;  /* reward_scale / initial_equity: reward per currency of equity change */
    double inv_max_position; /* 1 / max_position */
    double inv_episode_bars; /* 1 / episode_bars */
    double drawdown_penalty; /* reward units per unit of drawdown fraction */
    double turnover_penalty; /* reward units per max_position traded */
    double buy_share;        /* fraction of a bar's spread a buy pays above the bar price: 0.5 on mid
                                bars, 1 on bid bars, 0 on ask bars */
    double sell_share;       /* fraction of it a sell gives up below the bar price: 0.5, 0, 1 */
    double financing_long;   /* financing_long / bars_per_year: currency per currency of long notional
                                per bar held (< 0: a credit) */
    double financing_short;  /* financing_short / bars_per_year, for a short's notional */
    double max_leverage;     /* largest notional / equity an order that grows the position reaches (0: none) */
    uint64_t seed;           /* episode-start streams */
    int64_t first_env;       /* global index of env 0 (its episode-start stream offset) */
    int64_t begin;           /* first possible start bar */
    int64_t n_starts;        /* number of possible start bars (end - begin - episode_bars) */
    int32_t episode_bars;    /* steps per episode */
    int32_t max_position;    /* contracts at size 1.0 */
    const float* size_scale; /* [n] per env, backend memory: the risk-budget head's scale of the size
                                choice, in [0, 1] (NULL: 1, the plain rule) */
    const float* size_cap;   /* [1] backend memory: a factor on every env's size choice (the Kelly
                                cap; NULL: 1) */
} vp_env_params;

/* ---- correctly rounded arithmetic, never contracted ------------------------------------ */

/* a + b, rounded to nearest. */
VP_HD double vp_env_add(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dadd_rn(a, b);
#else
    return a + b;
#endif
}

/* a - b, rounded to nearest. */
VP_HD double vp_env_sub(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dsub_rn(a, b);
#else
    return a - b;
#endif
}

/* a * b, rounded to nearest. */
VP_HD double vp_env_mul(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __dmul_rn(a, b);
#else
    return a * b;
#endif
}

/* a / b, rounded to nearest. */
VP_HD double vp_env_div(double a, double b) {
#if defined(__CUDA_ARCH__)
    return __ddiv_rn(a, b);
#else
    return a / b;
#endif
}

/* x rounded to the nearest float. */
VP_HD float vp_env_f32(double x) {
#if defined(__CUDA_ARCH__)
    return __double2float_rn(x);
#else
    return (float)x;
#endif
}

/* x limited to [-lim, lim]. */
VP_HD double vp_env_clampd(double x, double lim) { return x < -lim ? -lim : (x > lim ? lim : x); }

/* x limited to [0, hi]. */
VP_HD int32_t vp_env_clampi(int32_t x, int32_t hi) { return x < 0 ? 0 : (x > hi ? hi : x); }

/* |x| of a contract count. */
VP_HD int32_t vp_env_absi(int32_t x) { return x < 0 ? -x : x; }

/* ---- rules --------------------------------------------------------------------------------- */

/* Contracts for size choice k (0..3): (k+1)/4 x max_position rounded half up, in integers. */
VP_HD int32_t vp_env_contracts(int32_t k, int32_t max_position) {
    return (int32_t)(((int64_t)(k + 1) * (int64_t)max_position + 2) / 4);
}

/* Contracts for size choice k scaled by s (the risk-budget head's, clamped to [0, 1]): the
 * fraction s (k+1)/4 of max_position rounded half up, the rule of vp_env_contracts (which it
 * equals at s = 1). */
VP_HD int32_t vp_env_scaled_contracts(int32_t k, int32_t max_position, float s) {
    const double f = s > 0.0f ? (s < 1.0f ? (double)s : 1.0) : 0.0;
    return (int32_t)floor(f * (double)((int64_t)(k + 1) * (int64_t)max_position) / 4.0 + 0.5);
}

/* The factor on env i's size choice: its scale times the cap (each 1 when absent). */
VP_HD float vp_env_size_factor(const vp_env_params* p, int64_t i) {
    const float s = p->size_scale ? p->size_scale[i] : 1.0f;
    return p->size_cap ? s * p->size_cap[0] : s;
}

/* What a buy pays above bar b's price per contract for the spread (the buy share of it). */
VP_HD double vp_env_buy_spread(const vp_env_params* p, const vp_env_bar* b) {
    return vp_env_mul(b->spread, p->buy_share);
}

/* What a sell gives up below bar b's price per contract for the spread (the sell share of it). */
VP_HD double vp_env_sell_spread(const vp_env_params* p, const vp_env_bar* b) {
    return vp_env_mul(b->spread, p->sell_share);
}

/* The price a position of sign pos would exit at from bar price x: a long sells at x less the
 * sell share `sell`, a short (or flat) buys at x plus the buy share `buy`. */
VP_HD double vp_env_exit_price(int32_t pos, double x, double buy, double sell) {
    return pos > 0 ? vp_env_sub(x, sell) : vp_env_add(x, buy);
}

/* Contracts of an order growing the position to `want` (> 0) that the leverage limit allows:
 * floor(max_leverage x equity / (price x multiplier)), want when that is not smaller or there
 * is no limit (max_leverage 0), 0 when equity <= 0 (or the fill price is not positive: a
 * spread wider than the bar's price). */
VP_HD int32_t vp_env_leverage_cap(const vp_env_params* p, double equity, double price, int32_t want) {
    if (!(p->max_leverage > 0.0)) return want;
    if (!(equity > 0.0) || !(price > 0.0)) return 0;
    double n = vp_env_div(vp_env_mul(p->max_leverage, equity), vp_env_mul(price, p->multiplier));
    return n >= (double)want ? want : (int32_t)n; /* 0 <= n < want: truncation is the floor */
}

/* Cash after a fill of qty contracts (+ buys, - sells) at price: the notional and the
 * commission on |qty| are paid. */
VP_HD double vp_env_fill(double cash, int32_t qty, double price, const vp_env_params* p) {
    double notional = vp_env_mul(vp_env_mul((double)qty, price), p->multiplier);
    double fee = vp_env_mul((double)vp_env_absi(qty), p->commission);
    return vp_env_sub(vp_env_sub(cash, notional), fee);
}

/* A resting level k x atr from entry, above it for dir > 0, below for dir < 0; 0 (none)
 * when k is 0, the ATR is not positive or the level would not be a positive price. */
VP_HD double vp_env_level(double entry, int32_t dir, int32_t k, double atr) {
    if (k == 0 || !(atr > 0.0)) return 0.0;
    double d = vp_env_mul((double)k, atr);
    double lvl = dir > 0 ? vp_env_add(entry, d) : vp_env_sub(entry, d);
    return lvl > 0.0 ? lvl : 0.0;
}

/* Signed distance from price c to a level in ATR units (inv_atr = 1 / ATR), positive on the
 * side where the level has not been reached (dir = +1 when the level lies above); 0 when none. */
VP_HD double vp_env_distance(double level, double c, int32_t dir, double inv_atr) {
    if (!(level > 0.0)) return 0.0;
    double d = dir > 0 ? vp_env_sub(level, c) : vp_env_sub(c, level);
    return vp_env_clampd(vp_env_mul(d, inv_atr), 10.0);
}

#endif /* VP_ENV_RULES_H */
