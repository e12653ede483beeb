/* The hand-checkable 9-bar path of the backtest tests (test_backtest.c, test_backtest_ruin.c,
 * test_backtest_decisions.c): E-mini-like bars on the 0.25 tick grid, ATR 1, hourly times
 * from 2020-01-06, the rollout settings that go with them, and reading a file's lines. */
#ifndef VP_TEST_BACKTEST_HAND_H
#define VP_TEST_BACKTEST_HAND_H

#include "test_data_util.h" /* first: it sets the POSIX level of the system headers */
#include "vp_test.h"
#include "vulpes/backtest.h"

enum { NB = 9 };

/* Bars on the 0.25 tick grid: open, high, low, close. */
static const double BARS[NB][4] = {
    {100.00, 101.00, 99.00, 100.50}, {100.75, 102.00, 100.50, 101.50}, {101.50, 103.00, 101.00, 102.50},
    {102.25, 102.50, 100.00, 100.50}, {100.50, 101.00, 99.50, 100.00}, {100.00, 100.25, 97.00, 98.00},
    {98.25, 99.00, 95.50, 98.50},     {98.50, 99.50, 98.00, 99.00},    {99.25, 99.50, 98.50, 99.00},
};

/* The bars, ATR 1 everywhere, hourly times from 2020-01-06. */
typedef struct fixture {
    vp_bars bars;
    double atr[NB];
} fixture;

static inline void fixture_init(fixture* f) {
    CHECK_OK(vp_bars_alloc(&f->bars, NB));
    for (int i = 0; i < NB; ++i) {
        f->bars.time_ms[i] = 1578268800000LL + (int64_t)i * 3600000LL;
        f->bars.open[i] = BARS[i][0], f->bars.high[i] = BARS[i][1];
        f->bars.low[i] = BARS[i][2], f->bars.close[i] = BARS[i][3];
        f->bars.volume[i] = 100.0;
        f->atr[i] = 1.0;
    }
}

/* E-mini-like: tick 0.25, $50 a point, $2.5 a contract, 1 tick of slippage, 2 contracts;
 * episodes of 16 bars; the choices `forced` [NB - 1, 4] (NULL: the policy's). */
static inline vp_rollout_cfg hand_cfg(const int32_t* forced) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument_emini();
    c.instrument.max_position = 2;
    c.episode_bars = 16;
    c.forced_actions = forced;
    return c;
}

/* The same choice a [4] at every decision bar into acts [NB - 1, 4]. */
static inline void hand_same_choice(int32_t acts[NB - 1][4], const int32_t* a) {
    for (int i = 0; i < NB - 1; ++i) memcpy(acts[i], a, 4 * sizeof(int32_t));
}

/* Reads line `k` (0 = header) of a file into buf; 1 when found. */
static inline int read_line(const char* path, int k, char* buf, size_t n) {
    FILE* f = fopen(path, "r");
    if (!f) return 0;
    int ok = 0;
    for (int i = 0; i <= k && fgets(buf, (int)n, f); ++i) ok = i == k;
    fclose(f);
    return ok;
}

/* Whether line ends with tail. */
static inline int ends_with(const char* line, const char* tail) {
    const size_t n = strlen(line), m = strlen(tail);
    return n >= m && strcmp(line + n - m, tail) == 0;
}

#endif /* VP_TEST_BACKTEST_HAND_H */
