/* vulpes: the market environment (SPEC section 3).
 *
 * One instrument; n_envs independent environments step in lock-step, one CPU loop
 * iteration or one GPU thread each, through the same inline step function, so both
 * backends give the same bits. The agent decides at the close of bar t; orders fill at
 * the open of bar t+1 with the spread's share, slippage and commission, an order that grows
 * the position cut to the leverage limit; resting stop-loss / take-profit orders are checked
 * against bar t+1's high and low on the side of the book they trade on; a position held at
 * bar t+1's close pays financing; equity is marked at that close on the side the position
 * would exit on. The rules, units and the state layout are written out in docs/env.md.
 *
 * Money and prices are double on both backends (exact for prices on a decimal tick grid
 * times integer contracts, and reproducible); rewards and the portfolio vector are float.
 * Everything is allocated at init; a step allocates nothing. */
#ifndef VULPES_ENV_H
#define VULPES_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#define VP_ENV_BRANCHES 4      /* action branches: direction, size, take-profit, stop-loss */
#define VP_ENV_PORTFOLIO 8     /* floats in the portfolio vector (P) */
#define VP_ENV_SIZE_CHOICES 4  /* size branch: 0.25, 0.5, 0.75, 1.0 of max_position */
#define VP_ENV_LEVEL_CHOICES 3 /* take-profit / stop-loss branch: none, 1, 2 x ATR */

/* Direction branch of an action. */
typedef enum vp_env_dir {
    VP_ENV_DIR_SHORT = 0, /* hold -size contracts */
    VP_ENV_DIR_FLAT,      /* hold nothing */
    VP_ENV_DIR_LONG,      /* hold +size contracts */
    VP_ENV_DIR_COUNT
} vp_env_dir;

/* Which side of the book a market's bar prices are (data.price_side); the index order is the
 * config key's (mid|bid|ask). A buy pays the buy share of the bar's spread above the bar price,
 * a sell receives the bar price less the sell share:
 *   mid bars: buy +spread/2, sell -spread/2;  bid bars: buy +spread, sell 0;
 *   ask bars: buy 0, sell -spread. */
typedef enum vp_price_side {
    VP_PRICE_MID = 0,  /* bars are mid prices */
    VP_PRICE_BID,      /* bars are bid prices (what a sell gets) */
    VP_PRICE_ASK,      /* bars are ask prices (what a buy pays) */
    VP_PRICE_SIDE_COUNT
} vp_price_side;

/* Contract specification of the one traded instrument. */
typedef struct vp_instrument {
    double tick_size;      /* price units per tick (> 0) */
    double multiplier;     /* currency per price unit per contract (point value, > 0) */
    double commission;     /* currency per contract per fill (>= 0) */
    double slippage_ticks; /* ticks against the trader on every fill, market and resting (>= 0) */
    int32_t max_position;  /* contracts at size 1.0 (>= 1) */
    double initial_equity; /* currency at the start of each episode (> 0) */
    double spread_ticks;   /* bid-ask spread in ticks on every bar of a market without its own
                              spread column (>= 0); vp_instrument_spread gives it in price units */
    vp_price_side price_side; /* side of the book the bars' prices are */
    double financing_long;  /* yearly rate on a long's notional, charged per bar held (> 0 cost,
                               < 0 credit; |rate| <= 1) */
    double financing_short; /* the same for a short's notional */
    double max_leverage;    /* largest |position| x price x multiplier / equity an order that
                               increases the position may reach (>= 0; 0: no limit) */
} vp_instrument;

/* Episode and reward settings. */
typedef struct vp_env_config {
    int32_t episode_bars;    /* steps per episode window (>= 1) */
    double ruin_fraction;    /* episode ends when equity < ruin_fraction x initial (0..1) */
    double reward_scale;     /* reward = equity change / initial_equity x reward_scale - penalties */
    double drawdown_penalty; /* reward units per unit of drawdown fraction, each step (>= 0) */
    double turnover_penalty; /* reward units per max_position traded, each step (>= 0) */
    uint64_t seed;           /* seeds the per-env Philox streams of episode starts */
} vp_env_config;

/* The instrument of a configuration: its instrument.* keys and data.price_side, max_position
 * truncated to whole contracts (callers that need an integer check it first). */
struct vp_config;
vp_instrument vp_instrument_from_config(const struct vp_config* cfg);

/* The default instrument: vp_instrument_from_config of the config table's defaults. */
vp_instrument vp_instrument_default(void);

/* The instrument's configured spread in price units: spread_ticks x tick_size. */
double vp_instrument_spread(const vp_instrument* in);

/* The default settings: the config table's env.* defaults and run.seed (vulpes/config.h). */
vp_env_config vp_env_config_default(void);

/* ---- market: the bars an environment trades, in the backend's memory ------------------ */

/* Host-side description of a market handed to vp_env_market_init. */
typedef struct vp_env_market_desc {
    int64_t n_bars;          /* T (1 .. 2^31 - 1) */
    const double* open;      /* [T] host */
    const double* high;      /* [T] host */
    const double* low;       /* [T] host */
    const double* close;     /* [T] host */
    const double* atr;       /* [T] host, ATR known at each bar's close (>= 0) */
    int64_t begin;           /* tradable span [begin, end): first decision bar; leave K-1 bars
                                of feature history before it */
    int64_t end;             /* one past the last bar an episode may touch */
    const vp_tensor* features; /* [T, F] f32 in memory the backend reads, or NULL; not copied */
    const double* spread;    /* [T] host, bid-ask spread at each bar (price units, finite, >= 0), or NULL:
                                default_spread on every bar */
    double default_spread;   /* price units (>= 0) when spread is NULL: vp_instrument_spread() */
    double bars_per_year;    /* bars in a year (vp_annual.periods_per_year of the data file), the unit
                                of financing rates; > 0 when the instrument has a financing rate, 0
                                when unknown */
} vp_env_market_desc;

/* One bar as the step reads it: prices, ATR and spread side by side in one 64-byte cache line,
 * so a step at a random bar index touches two adjacent lines (bars t and t+1) rather than one
 * line per array. */
typedef struct vp_env_bar {
    double open;   /* price units, on the market's side of the book (vp_price_side) */
    double high;   /* price units */
    double low;    /* price units */
    double close;  /* price units */
    double atr;    /* ATR known at this bar's close, price units */
    double spread; /* bid-ask spread of this bar, price units (>= 0) */
    double pad[2]; /* to 64 bytes */
} vp_env_bar;

/* A market in the backend's memory (bars copied, features referenced). */
typedef struct vp_env_market {
    vp_backend* backend;    /* owner of the storage */
    int64_t n_bars;         /* T */
    int64_t begin, end;     /* tradable span [begin, end) */
    const vp_env_bar* bars; /* [T] backend memory */
    double bars_per_year;   /* bars in a year, as described (0: unknown) */
    vp_tensor features;     /* [T, F] view (data NULL when none was given); observations index its rows */
    vp_buffer storage;      /* the one allocation behind bars */
} vp_env_market;

/* Validates the bars (finite positive prices, low <= open,close <= high, ATR and spread finite
 * and >= 0, bars_per_year finite and >= 0, the span inside [0, T)) and copies them into backend
 * memory as vp_env_bar records. */
vp_status vp_env_market_init(vp_env_market* m, vp_backend* b, const vp_env_market_desc* d);

/* Frees a market's storage (a zeroed market is a no-op). */
void vp_env_market_free(vp_env_market* m);

/* ---- fills: what a step traded, written by the step itself ------------------------------ */

/* Which resting order filled in a step. */
typedef enum vp_fill_kind {
    VP_FILL_NONE = 0,        /* none */
    VP_FILL_STOP,            /* the stop-loss (a market order once touched: at the level or a gapped open) */
    VP_FILL_TAKE_PROFIT,     /* the take-profit (a limit order: at the level or a better gapped open) */
    VP_FILL_KIND_COUNT
} vp_fill_kind;

/* The fills of one env in one step: [0] the market order at the next bar's open (the
 * agent's change of position), [1] a resting order against that bar's range. A quantity of 0
 * means no fill. Commission is the instrument's per contract on every fill; slippage and the
 * spread's share move every fill's price against the trader (docs/env.md). */
typedef struct vp_env_fill_rec {
    int32_t qty[2];   /* signed contracts (+ bought, - sold) */
    int32_t kind;     /* vp_fill_kind of fill [1] */
    int32_t cut;      /* contracts the leverage limit (instrument.max_leverage) removed from order [0] (>= 0) */
    double price[2];  /* fill prices, slippage and the spread's share included, price units */
    double slip[2];   /* price paid per contract against the trader in each fill (slippage plus the
                         spread's share), price units */
    double financing; /* financing paid on the position held at the bar's close (currency, taken from
                         cash; < 0 is a credit) */
} vp_env_fill_rec;

/* ---- state: structure of arrays, one entry per env ---------------------------------- */

/* Per-env state. Inside a vp_env the pointers are backend memory; for vp_env_state_get /
 * vp_env_state_set they are host arrays of n_envs entries supplied by the caller. */
typedef struct vp_env_state {
    int32_t* t;           /* [n] decision bar: the agent has seen bars <= t */
    int32_t* window_end;  /* [n] bar whose open closes the episode (start + episode_bars) */
    int32_t* position;    /* [n] signed contracts */
    int32_t* bars_held;   /* [n] bars the current position has been open (0 when flat) */
    uint32_t* episode;    /* [n] episode counter (Philox index of the episode's start) */
    double* cash;         /* [n] currency, after every fill's notional and commission */
    double* equity;       /* [n] cash + position x close[t] x multiplier */
    double* peak;         /* [n] highest equity of the episode */
    double* entry;        /* [n] average entry price of the position (0 when flat) */
    double* take_profit;  /* [n] resting take-profit price (0: none) */
    double* stop_loss;    /* [n] resting stop price (0: none) */
    float* last_size;     /* [n] last action's signed target / max_position (0 for flat) */
} vp_env_state;

/* n_envs environments over one market. The caller owns the struct; init allocates the
 * state once in backend memory. */
typedef struct vp_env {
    vp_backend* backend;          /* where it steps */
    const vp_env_market* market;  /* bars (kept alive by the caller) */
    vp_instrument instrument;     /* contract specification */
    vp_env_config config;         /* episode and reward settings */
    int64_t n_envs;               /* number of environments */
    vp_env_state state;           /* [n_envs] arrays in backend memory */
    vp_buffer storage;            /* the one allocation behind state */
    const float* size_scale;      /* [n_envs] backend memory, set by the caller: each env's scale of its size
                                     choice, read at every step (the risk-budget head; NULL: 1) */
    const float* size_cap;        /* [1] backend memory, set by the caller: a factor on every env's size
                                     choice, read at every step (the signal bus's Kelly cap; NULL: 1) */
    int64_t first_env;            /* set by the caller, then vp_env_reset: global index of env 0, so env i's
                                     episode starts are Philox stream first_env + i (0: the single process; a
                                     data-parallel rank's first env gives its envs the single process's starts) */
} vp_env;

/* Checks the settings (instrument ranges, a market bars_per_year > 0 when a financing rate is
 * set) against the market (the span must hold episode_bars + 1 bars), allocates the state and
 * starts episode 0 of every env (as vp_env_reset). */
vp_status vp_env_init(vp_env* e, vp_backend* b, const vp_env_market* m, const vp_instrument* inst,
                      const vp_env_config* cfg, int64_t n_envs);

/* Frees the state (a zeroed env is a no-op). */
void vp_env_free(vp_env* e);

/* Restarts every env at episode 0 of its seeded stream (flat, initial equity) and writes
 * the first observation: obs_bar [n] i32 and portfolio [n, 8] f32 (both may be NULL). */
vp_status vp_env_reset(vp_env* e, vp_tensor* obs_bar, vp_tensor* portfolio);

/* Writes the current observation of every env without stepping: obs_bar [n] i32 (the
 * decision bar t) and portfolio [n, 8] f32. */
vp_status vp_env_observe(vp_env* e, vp_tensor* obs_bar, vp_tensor* portfolio);

/* Steps every env once. actions [n, 4] i32 (direction, size, take-profit, stop-loss choices);
 * writes reward [n] f32, done [n] f32 (1 when the episode ended at this step; the env has
 * then already restarted), obs_bar [n] i32 (bar index into the feature matrix; the agent
 * reads rows obs-K+1..obs) and portfolio [n, 8] f32 of the next observation. Action indices
 * out of range are an error on the CPU and are clamped into range on CUDA (no host check
 * there). Asynchronous on CUDA; capturable into a graph. */
vp_status vp_env_step(vp_env* e, const vp_tensor* actions, vp_tensor* reward, vp_tensor* done,
                      vp_tensor* obs_bar, vp_tensor* portfolio);

/* Copies the state into caller-supplied host arrays (every pointer non-NULL, n_envs each). */
vp_status vp_env_state_get(const vp_env* e, vp_env_state* host);

/* Replaces the state from host arrays after checking it (bars inside the span, t < window_end,
 * |position| <= max_position, finite money); for checkpoints and tests. */
vp_status vp_env_state_set(vp_env* e, const vp_env_state* host);

/* Fills actions [n, 4] i32 with uniform random choices from Philox (seed, env, counter) on
 * the backend itself (no host copy); the same values on every backend. */
vp_status vp_env_random_actions(vp_backend* b, uint64_t seed, uint64_t counter, vp_tensor* actions);

/* Bytes one env step reads and writes in memory, counted from the state layout (see docs/env.md). */
size_t vp_env_bytes_per_step(void);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ENV_H */
