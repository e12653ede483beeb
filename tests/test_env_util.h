/* Helpers for the environment's tests and benchmark: a seeded random-walk market with
 * valid OHLC bars on a tick grid, a simple ATR, and one-env host state storage. */
#ifndef VP_TEST_ENV_UTIL_H
#define VP_TEST_ENV_UTIL_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "vulpes/env.h"
#include "vulpes/rng.h"

/* Bars of a market on the host: o, h, l, c, atr [n] in one allocation. */
typedef struct vpt_bars {
    int64_t n;
    double *o, *h, *l, *c, *atr;
} vpt_bars;

/* Allocates n bars (zeroed); NULL arrays on failure. */
static inline vpt_bars vpt_bars_alloc(int64_t n) {
    vpt_bars b;
    b.n = n;
    b.o = (double*)calloc((size_t)(5 * n), sizeof(double));
    b.h = b.o ? b.o + n : NULL;
    b.l = b.o ? b.o + 2 * n : NULL;
    b.c = b.o ? b.o + 3 * n : NULL;
    b.atr = b.o ? b.o + 4 * n : NULL;
    return b;
}

/* Frees what vpt_bars_alloc made. */
static inline void vpt_bars_free(vpt_bars* b) {
    free(b->o);
    b->o = b->h = b->l = b->c = b->atr = NULL;
}

/* x rounded to the tick grid, at least one tick. */
static inline double vpt_round_tick(double x, double tick) {
    double r = floor(x / tick + 0.5) * tick;
    return r < tick ? tick : r;
}

/* Average true range over the last `period` bars (fewer at the start) into b->atr. */
static inline void vpt_bars_atr(vpt_bars* b, int period) {
    double sum = 0;
    double* tr = (double*)malloc((size_t)b->n * sizeof(double));
    for (int64_t i = 0; i < b->n; ++i) {
        double r = b->h[i] - b->l[i];
        if (i > 0) {
            double up = fabs(b->h[i] - b->c[i - 1]), dn = fabs(b->l[i] - b->c[i - 1]);
            r = up > r ? up : r;
            r = dn > r ? dn : r;
        }
        tr[i] = r;
        sum += r;
        if (i >= period) sum -= tr[i - period];
        b->atr[i] = sum / (double)(i + 1 < period ? i + 1 : period);
    }
    free(tr);
}

/* A Philox random walk from bar `from` on: log-normal closes with per-bar volatility `vol`,
 * opens gapping a little from the previous close, highs and lows outside both; all prices on
 * the tick grid, so low <= open,close <= high holds exactly. Bars before `from` stay. */
static inline void vpt_bars_walk(vpt_bars* b, uint64_t seed, int64_t from, double p0, double vol, double tick) {
    double prev = from > 0 ? b->c[from - 1] : p0;
    for (int64_t i = from; i < b->n; ++i) {
        vp_u32x4 r = vp_rng_draw(seed, 99, (uint64_t)i);
        double z = (double)vp_rng_normal(seed, 100, (uint64_t)i);
        double o = vpt_round_tick(prev * (1.0 + 0.2 * vol * ((double)vp_u32_to_unit(r.v[0]) - 0.5)), tick);
        double c = vpt_round_tick(o * (1.0 + vol * z), tick);
        double hi = (o > c ? o : c) + vpt_round_tick(o * vol * (double)vp_u32_to_unit(r.v[1]), tick);
        double lo = (o < c ? o : c) - vpt_round_tick(o * vol * (double)vp_u32_to_unit(r.v[2]), tick);
        b->o[i] = o;
        b->c[i] = c;
        b->h[i] = hi;
        b->l[i] = lo < tick ? tick : lo;
        prev = c;
    }
    vpt_bars_atr(b, 14);
}

/* Host storage for the state of up to n envs, with a vp_env_state pointing into it. */
typedef struct vpt_state {
    vp_env_state s; /* pointers into `mem` */
    void* mem;      /* one allocation */
} vpt_state;

/* Allocates host state arrays for n envs. */
static inline vpt_state vpt_state_alloc(int64_t n) {
    vpt_state h;
    size_t n4 = (size_t)n * 4, n8 = (size_t)n * 8;
    char* p = (char*)calloc(1, 6 * n8 + 6 * n4 + 64);
    h.mem = p;
    h.s.cash = (double*)(void*)p, p += n8;
    h.s.equity = (double*)(void*)p, p += n8;
    h.s.peak = (double*)(void*)p, p += n8;
    h.s.entry = (double*)(void*)p, p += n8;
    h.s.take_profit = (double*)(void*)p, p += n8;
    h.s.stop_loss = (double*)(void*)p, p += n8;
    h.s.t = (int32_t*)(void*)p, p += n4;
    h.s.window_end = (int32_t*)(void*)p, p += n4;
    h.s.position = (int32_t*)(void*)p, p += n4;
    h.s.bars_held = (int32_t*)(void*)p, p += n4;
    h.s.episode = (uint32_t*)(void*)p, p += n4;
    h.s.last_size = (float*)(void*)p;
    return h;
}

/* Frees what vpt_state_alloc made. */
static inline void vpt_state_free(vpt_state* h) {
    free(h->mem);
    h->mem = NULL;
}

/* Bytes of host state for n envs (the span vpt_state_alloc hands out, for memcmp). */
static inline size_t vpt_state_bytes(int64_t n) { return (size_t)n * (6 * 8 + 6 * 4); }

#endif /* VP_TEST_ENV_UTIL_H */
