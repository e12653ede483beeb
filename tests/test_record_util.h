/* Helpers of the recording tests (CPU and GPU): the test run's data and the settings of a
 * recording over its training span. */
#ifndef VP_TEST_RECORD_UTIL_H
#define VP_TEST_RECORD_UTIL_H

#include "test_train_util.h"
#include "vulpes/record.h"

/* The test config's data (1500 bars of a synthetic trend market, tests/test_train_util.h) with
 * `n` overrides into *d and *cfg; 0 on failure (printed). */
static inline int vpt_record_data(vp_train_data* d, vp_config* cfg, int n, const char* const* over) {
    memset(d, 0, sizeof *d);
    if (!vpt_train_cfg(cfg, n, over)) return 0;
    if (vp_train_data_load(d, cfg) != VP_OK) {
        fprintf(stderr, "test data: %s\n", vp_last_error());
        return 0;
    }
    return 1;
}

/* A recording of T steps of E envs over the training span of d under cfg with seed `seed`
 * (episodes of `episode_bars` bars, 0: the config's) into *c; 0 on failure (printed). */
static inline int vpt_record_cfg(const vp_train_data* d, const vp_config* cfg, int64_t T, int64_t E, uint64_t seed,
                                 int episode_bars, vp_record_cfg* c) {
    vp_train_parts parts;
    if (vp_train_parts_make(cfg, d->n_features, &parts) != VP_OK) {
        fprintf(stderr, "test parts: %s\n", vp_last_error());
        return 0;
    }
    memset(c, 0, sizeof *c);
    c->steps = T;
    c->n_envs = E;
    c->seed = seed;
    c->span = d->split.train;
    c->instrument = parts.instrument;
    c->env = parts.env;
    if (episode_bars > 0) c->env.episode_bars = episode_bars;
    return 1;
}

/* The direction of the moving-average crossover at bar t, computed here by its definition:
 * 2 (long) when the mean of closes t-fast+1 .. t is above the mean of closes t-slow+1 .. t,
 * 0 (short) when below, 1 (flat) when equal or when t + 1 < slow. */
static inline int vpt_ma_dir(const double* close, int64_t t, int fast, int slow) {
    if (t + 1 < slow) return 1;
    double f = 0.0, s = 0.0;
    for (int64_t k = t - fast + 1; k <= t; ++k) f += close[k]; /* oldest first, as the recording sums */
    for (int64_t k = t - slow + 1; k <= t; ++k) s += close[k];
    f /= fast;
    s /= slow;
    return f > s ? 2 : f < s ? 0 : 1;
}

#endif /* VP_TEST_RECORD_UTIL_H */
