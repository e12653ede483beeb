/* One environment over hand-written bars, for the tests that check the trading rules with
 * numbers computed by hand (test_env_rules.c, test_env_costs.c): the market, the env, host
 * copies of its state and outputs, and a step through the public call or through the step
 * function itself with its fill record. Each market's span holds exactly one episode, so the
 * (random) start is bar 0. Include after vp_test.h. */
#ifndef VP_TEST_ENV_HAND_H
#define VP_TEST_ENV_HAND_H

#include "env/env_params.h"
#include "env/env_step.h"
#include "test_env_util.h"

enum { SHORT = 0, FLAT = 1, LONG = 2 };

/* One env over hand-written bars, with host copies of its state and outputs. */
typedef struct hx {
    vp_backend* b;
    vpt_bars bars;
    double* spread; /* [n] per-bar spreads given to the market, or NULL */
    vp_env_market m;
    vp_env e;
    vpt_state st;
    int32_t act[4];
    float reward, done, pf[8];
    int32_t obs;
    vp_env_fill_rec fill; /* the fills of the last hx_step_fill */
} hx;

/* Rows {open, high, low, close, atr}. */
typedef double row5[5];

/* Builds the env: n rows, per-bar spreads (NULL: default_spread on every bar), bars a year,
 * an episode of `episode_bars` steps starting at bar 0. */
static inline int hx_init_market(hx* x, const row5* rows, int n, const double* spread, double default_spread,
                                 double bars_per_year, vp_instrument inst, vp_env_config cfg) {
    memset(x, 0, sizeof *x);
    CHECK_OK(vp_backend_cpu_init(&x->b));
    x->bars = vpt_bars_alloc(n);
    for (int i = 0; i < n; ++i) {
        x->bars.o[i] = rows[i][0], x->bars.h[i] = rows[i][1], x->bars.l[i] = rows[i][2];
        x->bars.c[i] = rows[i][3], x->bars.atr[i] = rows[i][4];
    }
    if (spread) {
        x->spread = (double*)malloc(sizeof(double) * (size_t)n);
        memcpy(x->spread, spread, sizeof(double) * (size_t)n);
    }
    vp_env_market_desc d = {n,    x->bars.o, x->bars.h, x->bars.l,       x->bars.c,    x->bars.atr, 0,
                            cfg.episode_bars + 1, NULL, x->spread, default_spread, bars_per_year};
    vp_status s1 = vp_env_market_init(&x->m, x->b, &d);
    CHECK(s1 == VP_OK, "market: %s", vp_last_error());
    vp_status s2 = s1 == VP_OK ? vp_env_init(&x->e, x->b, &x->m, &inst, &cfg, 1) : s1;
    CHECK(s2 == VP_OK, "env: %s", vp_last_error());
    x->st = vpt_state_alloc(1);
    if (s2 == VP_OK) CHECK_OK(vp_env_state_get(&x->e, &x->st.s));
    return s2 == VP_OK;
}

/* hx_init_market without a spread or financing. */
static inline int hx_init(hx* x, const row5* rows, int n, vp_instrument inst, vp_env_config cfg) {
    return hx_init_market(x, rows, n, NULL, 0.0, 0.0, inst, cfg);
}

static inline void hx_free(hx* x) {
    vp_env_free(&x->e);
    vp_env_market_free(&x->m);
    vpt_bars_free(&x->bars);
    free(x->spread);
    vpt_state_free(&x->st);
    vp_backend_free(x->b);
}

/* Steps with action (dir, size, tp, sl) through vp_env_step and reads the state back. */
static inline void hx_step(hx* x, int dir, int size, int tp, int sl) {
    x->act[0] = dir, x->act[1] = size, x->act[2] = tp, x->act[3] = sl;
    vp_tensor ta = vp_tensor_2d(x->act, VP_I32, VP_MEM_HOST, 1, 4);
    vp_tensor tr = vp_tensor_1d(&x->reward, VP_F32, VP_MEM_HOST, 1);
    vp_tensor td = vp_tensor_1d(&x->done, VP_F32, VP_MEM_HOST, 1);
    vp_tensor to = vp_tensor_1d(&x->obs, VP_I32, VP_MEM_HOST, 1);
    vp_tensor tp_ = vp_tensor_2d(x->pf, VP_F32, VP_MEM_HOST, 1, 8);
    CHECK_OK(vp_env_step(&x->e, &ta, &tr, &td, &to, &tp_));
    CHECK_OK(vp_env_state_get(&x->e, &x->st.s));
}

/* Steps like hx_step through the step function itself (the CPU env's state and bars are host
 * memory), with the env's own constants, and keeps the fill record in x->fill. */
static inline void hx_step_fill(hx* x, int dir, int size, int tp, int sl) {
    x->act[0] = dir, x->act[1] = size, x->act[2] = tp, x->act[3] = sl;
    vp_env_params p = vp_env_params_make(&x->e.instrument, &x->e.config, x->m.bars_per_year);
    p.begin = x->m.begin;
    p.n_starts = x->m.end - x->m.begin - x->e.config.episode_bars;
    vp_env_outs o = {&x->reward, &x->done, &x->obs, x->pf, &x->fill};
    vp_env_step_index(&p, x->m.bars, &x->e.state, x->act, &o, 0);
    CHECK_OK(vp_env_state_get(&x->e, &x->st.s));
}

#endif /* VP_TEST_ENV_HAND_H */
