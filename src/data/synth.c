/* Synthetic markets: GBM, regime-switching GBM, OU on log price, autocorrelated trend. */
#include <math.h>
#include <string.h>

#include "vulpes/rng.h"
#include "vulpes/synth.h"

#define TWO_PI 6.283185307179586476925

vp_synth_cfg vp_synth_cfg_default(vp_synth_kind kind) {
    vp_synth_cfg c;
    memset(&c, 0, sizeof c);
    c.kind = kind;
    c.seed = 1;
    c.start_ms = vp_days_from_civil(2000, 1, 3) * INT64_C(86400000);
    c.interval_ms = 3600000;
    c.price0 = 100.0;
    c.sigma = 0.002;
    c.regime_switch = 0.005;
    c.regime_sigma_mult = 3.0;
    c.ou_theta = 0.05;
    c.trend_phi = 0.3;
    c.wick = 0.5;
    c.volume_mean = 1000.0;
    return c;
}

const char* vp_synth_kind_name(vp_synth_kind kind) {
    static const char* names[VP_SYNTH_KIND_COUNT] = {"gbm", "regime", "ou", "trend"};
    return (int)kind >= 0 && kind < VP_SYNTH_KIND_COUNT ? names[kind] : "?";
}

/* Uniform in (0, 1] and [0, 1) from 32-bit words, in double. */
static inline double unit_open0(uint32_t w) { return ((double)w + 1.0) * (1.0 / 4294967296.0); }
static inline double unit(uint32_t w) { return (double)w * (1.0 / 4294967296.0); }

/* Two independent standard normals from two words (Box-Muller). */
static inline void normal2(uint32_t a, uint32_t b, double* z0, double* z1) {
    double r = sqrt(-2.0 * log(unit_open0(a)));
    double th = TWO_PI * unit(b);
    *z0 = r * cos(th);
    *z1 = r * sin(th);
}

static vp_status check_cfg(const vp_synth_cfg* c, int64_t n) {
    VP_REQUIRE(c != NULL, VP_ERR_INVALID_ARG, "vp_synth_generate: cfg is NULL");
    VP_REQUIRE(c->kind >= 0 && c->kind < VP_SYNTH_KIND_COUNT, VP_ERR_INVALID_ARG, "vp_synth_generate: kind %d",
               (int)c->kind);
    VP_REQUIRE(n >= 1, VP_ERR_INVALID_ARG, "vp_synth_generate: n = %lld, need >= 1", (long long)n);
    VP_REQUIRE(c->interval_ms > 0, VP_ERR_INVALID_ARG, "vp_synth_generate: interval_ms %lld must be > 0",
               (long long)c->interval_ms);
    VP_REQUIRE(c->price0 > 0.0 && isfinite(c->price0) && c->sigma >= 0.0 && isfinite(c->sigma) && isfinite(c->drift),
               VP_ERR_INVALID_ARG, "vp_synth_generate: price0 %g must be > 0, sigma %g >= 0, drift %g finite",
               c->price0, c->sigma, c->drift);
    VP_REQUIRE(c->wick >= 0.0 && c->volume_mean >= 0.0, VP_ERR_INVALID_ARG,
               "vp_synth_generate: wick %g and volume_mean %g must be >= 0", c->wick, c->volume_mean);
    VP_REQUIRE(c->kind != VP_SYNTH_REGIME || (c->regime_switch >= 0.0 && c->regime_switch <= 1.0 &&
                                              c->regime_sigma_mult > 0.0 && isfinite(c->regime_drift)),
               VP_ERR_INVALID_ARG, "vp_synth_generate: regime_switch %g in [0, 1], regime_sigma_mult %g > 0",
               c->regime_switch, c->regime_sigma_mult);
    VP_REQUIRE(c->kind != VP_SYNTH_OU || (c->ou_theta > 0.0 && c->ou_theta <= 1.0), VP_ERR_INVALID_ARG,
               "vp_synth_generate: ou_theta %g must be in (0, 1]", c->ou_theta);
    VP_REQUIRE(c->kind != VP_SYNTH_TREND || (c->trend_phi > -1.0 && c->trend_phi < 1.0), VP_ERR_INVALID_ARG,
               "vp_synth_generate: trend_phi %g must be in (-1, 1)", c->trend_phi);
    VP_REQUIRE(c->start_ms <= INT64_MAX - (n - 1) * c->interval_ms, VP_ERR_INVALID_ARG,
               "vp_synth_generate: %lld bars of %lld ms overflow the time range", (long long)n,
               (long long)c->interval_ms);
    return VP_OK;
}

vp_status vp_synth_generate(const vp_synth_cfg* c, int64_t n, vp_bars* out, uint8_t* regime) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_synth_generate: out is NULL");
    memset(out, 0, sizeof *out);
    VP_TRY(check_cfg(c, n));
    VP_TRY(vp_bars_alloc(out, n));

    const double m = log(c->price0);
    const double innov = sqrt(1.0 - c->trend_phi * c->trend_phi);
    double x = m, r = 0.0, prev_close = c->price0;
    int reg = 0;
    for (int64_t t = 0; t < n; ++t) {
        /* Regime: a two-state Markov chain, one uniform per bar. */
        if (c->kind == VP_SYNTH_REGIME && t > 0 &&
            unit(vp_rng_draw(c->seed, VP_SYNTH_STREAM_REGIME, (uint64_t)t).v[0]) < c->regime_switch)
            reg ^= 1;
        double sig = reg ? c->sigma * c->regime_sigma_mult : c->sigma;
        double mu = reg ? c->regime_drift : c->drift;

        /* Return shock (one normal of the pair) and the model's step of the log close. */
        vp_u32x4 w = vp_rng_draw(c->seed, VP_SYNTH_STREAM_RETURN, (uint64_t)t);
        double z, unused;
        normal2(w.v[0], w.v[1], &z, &unused);
        double x_prev = x;
        switch (c->kind) {
        case VP_SYNTH_OU: x = x + c->ou_theta * (m - x) + sig * z; break;
        case VP_SYNTH_TREND:
            r = c->trend_phi * r + innov * sig * z;
            x = x + mu + r;
            break;
        default: x = x + mu + sig * z; break;
        }

        /* Bar: open at the previous close, wicks beyond the body, volume rising with |move|. */
        vp_u32x4 s = vp_rng_draw(c->seed, VP_SYNTH_STREAM_SHAPE, (uint64_t)t);
        double zu, zd, zv, unused2;
        normal2(s.v[0], s.v[1], &zu, &zd);
        normal2(s.v[2], s.v[3], &zv, &unused2);
        double o = prev_close, cl = exp(x);
        double hi = fmax(o, cl) * exp(c->wick * sig * fabs(zu));
        double lo = fmin(o, cl) * exp(-c->wick * sig * fabs(zd));
        double move = sig > 0.0 ? fabs(x - x_prev) / sig : 0.0;
        if (!(lo > 0.0) || !isfinite(hi)) {
            vp_bars_free(out);
            VP_FAIL(VP_ERR_NUMERIC, "vp_synth_generate: %s price left the finite positive range at bar %lld",
                    vp_synth_kind_name(c->kind), (long long)t);
        }
        out->time_ms[t] = c->start_ms + t * c->interval_ms;
        out->open[t] = o;
        out->high[t] = hi;
        out->low[t] = lo;
        out->close[t] = cl;
        out->volume[t] = c->volume_mean * exp(0.3 * zv - 0.045) * (0.5 + 0.5 * move);
        if (regime) regime[t] = (uint8_t)reg;
        prev_close = cl;
    }
    return VP_OK;
}
