/* vulpes: synthetic markets with a seed — for tests, for learning checks and for scale.
 *
 * Every market is a path of log closes x[t]; bar t opens at the previous close
 * (open[0] = price0), closes at exp(x[t]), and has wicks beyond max/min(open, close), so
 * 0 < low <= open, close <= high always. Bars are `interval_ms` apart (hourly by default).
 * Random numbers are Philox (vulpes/rng.h), one stream per purpose, indexed by bar, so a
 * (cfg, n) pair always gives the same bars and a longer run extends a shorter one.
 *
 * Known edges (docs/data.md): OU reverts to its mean, so "long below the mean, short
 * above" earns theta |x - mean| per bar in expectation; TREND has autocorrelated returns,
 * so "follow the last return" earns phi E|r| per bar. GBM and REGIME have no edge when
 * drift is 0. */
#ifndef VULPES_SYNTH_H
#define VULPES_SYNTH_H

#include <stdint.h>

#include "vulpes/data.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The market models. */
typedef enum vp_synth_kind {
    VP_SYNTH_GBM = 0, /* x[t] = x[t-1] + drift + sigma z */
    VP_SYNTH_REGIME,  /* GBM whose (drift, sigma) switch between a calm and a turbulent regime (Markov chain) */
    VP_SYNTH_OU,      /* x[t] = x[t-1] + theta (log price0 - x[t-1]) + sigma z: mean-reverting log price */
    VP_SYNTH_TREND,   /* r[t] = phi r[t-1] + sqrt(1 - phi^2) sigma z; x[t] = x[t-1] + drift + r[t]: momentum */
    VP_SYNTH_KIND_COUNT
} vp_synth_kind;

/* Philox streams, one per purpose (the seed selects the market). */
#define VP_SYNTH_STREAM_RETURN 0x53594E0000000001ULL /* the return shock z of bar t */
#define VP_SYNTH_STREAM_REGIME 0x53594E0000000002ULL /* the regime switch draw of bar t */
#define VP_SYNTH_STREAM_SHAPE 0x53594E0000000003ULL  /* wicks and volume of bar t */

/* A synthetic market; start from vp_synth_cfg_default(kind). */
typedef struct vp_synth_cfg {
    vp_synth_kind kind;       /* the model */
    uint64_t seed;            /* Philox key */
    int64_t start_ms;         /* time of bar 0 (default 2000-01-03T00:00:00Z, a Monday) */
    int64_t interval_ms;      /* bar spacing (default 3 600 000: hourly) */
    double price0;            /* open of bar 0 and the OU mean level (default 100) */
    double sigma;             /* per-bar log-return volatility (default 0.002) */
    double drift;             /* per-bar log drift (default 0) */
    double regime_switch;     /* REGIME: per-bar probability of changing regime (default 0.005) */
    double regime_sigma_mult; /* REGIME: turbulent sigma = this x sigma (default 3) */
    double regime_drift;      /* REGIME: drift in the turbulent regime (default 0) */
    double ou_theta;          /* OU: mean-reversion rate per bar, in (0, 1] (default 0.05) */
    double trend_phi;         /* TREND: autocorrelation of returns, in (-1, 1) (default 0.3) */
    double wick;              /* wick length in units of the bar's sigma (default 0.5) */
    double volume_mean;       /* typical volume (default 1000) */
} vp_synth_cfg;

/* The default market of a kind (seed 1). */
vp_synth_cfg vp_synth_cfg_default(vp_synth_kind kind);

/* Name of a kind ("ou"); "?" when invalid. */
const char* vp_synth_kind_name(vp_synth_kind kind);

/* Generates n >= 1 bars into *out (owned; free with vp_bars_free). Fails on a bad cfg
 * or when a price leaves the finite positive range. regime may be NULL, else receives
 * each bar's regime (0 calm, 1 turbulent; always 0 outside REGIME). */
vp_status vp_synth_generate(const vp_synth_cfg* cfg, int64_t n, vp_bars* out, uint8_t* regime /* [n] or NULL */);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_SYNTH_H */
