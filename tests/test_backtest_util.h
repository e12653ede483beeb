/* Helpers shared by the backtest and walk-forward tests: a synthetic market with its
 * features and ATR on the CPU backend, result comparisons (the tiny network and the
 * instrument are test_util.h's). */
#ifndef VP_TEST_BACKTEST_UTIL_H
#define VP_TEST_BACKTEST_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "test_util.h"
#include "vulpes/backtest.h"
#include "vulpes/features.h"
#include "vulpes/synth.h"

/* Bars, ATR(14) and the feature matrix of a synthetic market (host memory, read in place by
 * the CPU backend). */
typedef struct vpt_market {
    vp_bars bars;        /* [n] */
    double* atr;         /* [n] */
    float* feat;         /* [n, F] */
    int F;               /* feature columns */
    vp_tensor features;  /* view of feat */
} vpt_market;

/* A mean-reverting market of n hourly bars (seed `seed`) with features over a 64-bar window. */
static inline int vpt_market_make(vpt_market* m, int64_t n, uint64_t seed) {
    memset(m, 0, sizeof *m);
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_OU);
    sc.seed = seed;
    sc.sigma = 0.004;
    if (vp_synth_generate(&sc, n, &m->bars, NULL) != VP_OK) return 0;
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = 64;
    m->F = vp_features_count(&fc);
    m->atr = (double*)malloc(sizeof(double) * (size_t)n);
    m->feat = (float*)malloc(sizeof(float) * (size_t)(n * m->F));
    if (!m->atr || !m->feat) return 0;
    if (vp_atr(&m->bars, 14, m->atr) != VP_OK) return 0;
    if (vp_features_compute(&m->bars, &fc, m->feat, n * m->F) != VP_OK) return 0;
    m->features = vp_tensor_2d(m->feat, VP_F32, VP_MEM_HOST, n, m->F);
    return 1;
}

/* Frees what vpt_market_make made. */
static inline void vpt_market_free(vpt_market* m) {
    vp_bars_free(&m->bars);
    free(m->atr);
    free(m->feat);
    memset(m, 0, sizeof *m);
}

/* Whether two ruin records say the same. */
static inline int vpt_ruin_equal(const vp_rollout_ruin* a, const vp_rollout_ruin* b) {
    return a->ruined == b->ruined && a->window == b->window && a->bar == b->bar && a->time_ms == b->time_ms &&
           a->close_bar == b->close_bar && a->level == b->level && a->equity_at_ruin == b->equity_at_ruin &&
           a->equity_after_close == b->equity_after_close && a->below_zero == b->below_zero &&
           a->loss_past_floor == b->loss_past_floor;
}

/* The largest difference between two results' margins at the same points (same count of
 * points assumed); +inf when one has a margin where the other has none (NaN). */
static inline double vpt_margin_diff(const vp_rollout_result* a, const vp_rollout_result* b) {
    double worst = 0.0;
    for (int64_t i = 0; i < a->n_points && i < b->n_points; ++i) {
        const double x = a->margin[i], y = b->margin[i];
        if (isnan(x) != isnan(y)) return INFINITY;
        if (!isnan(x) && fabs(x - y) > worst) worst = fabs(x - y);
    }
    return worst;
}

/* Whether two results hold the same bits: points, choices (the decisions after the windows
 * too) and which of them have a margin, curves, ruins, fragile counts, trades and the
 * summary. The margins' values are compared apart (vpt_margin_diff): scores differ by
 * rounding between backends. */
static inline int vpt_results_equal(const vp_rollout_result* a, const vp_rollout_result* b) {
    if (a->n_points != b->n_points || a->n_curve != b->n_curve || a->n_trades != b->n_trades) return 0;
    const size_t P = (size_t)a->n_points, C = (size_t)a->n_curve;
    if (memcmp(a->equity, b->equity, P * sizeof(double)) || memcmp(a->cash, b->cash, P * sizeof(double)) ||
        memcmp(a->position, b->position, P * sizeof(int32_t)) || memcmp(a->action, b->action, 4 * P * sizeof(int32_t)))
        return 0;
    if (isinf(vpt_margin_diff(a, b)) || a->n_decisions != b->n_decisions || a->n_fragile != b->n_fragile) return 0;
    if (a->n_ruined != b->n_ruined || !vpt_ruin_equal(&a->ruin, &b->ruin) ||
        !vpt_ruin_equal(&a->buy_hold_ruin, &b->buy_hold_ruin))
        return 0;
    for (int64_t w = 0; w < a->n_windows && w < b->n_windows; ++w)
        if (!vpt_ruin_equal(&a->windows[w].ruin, &b->windows[w].ruin) ||
            !vpt_ruin_equal(&a->windows[w].buy_hold_ruin, &b->windows[w].buy_hold_ruin))
            return 0;
    if (memcmp(a->curve_equity, b->curve_equity, C * sizeof(double)) ||
        memcmp(a->curve_drawdown, b->curve_drawdown, C * sizeof(double)) ||
        memcmp(a->curve_benchmark, b->curve_benchmark, C * sizeof(double)) ||
        memcmp(a->curve_flat, b->curve_flat, C * sizeof(double)))
        return 0;
    if (a->n_trades && memcmp(a->trades, b->trades, (size_t)a->n_trades * sizeof(vp_rollout_trade))) return 0;
    const vp_perf* pa[3] = {&a->summary.strategy, &a->summary.buy_hold, &a->summary.flat};
    const vp_perf* pb[3] = {&b->summary.strategy, &b->summary.buy_hold, &b->summary.flat};
    for (int i = 0; i < 3; ++i) {
        const double va[9] = {pa[i]->total_return, pa[i]->annual_return, pa[i]->annual_volatility, pa[i]->sharpe,
                              pa[i]->sortino, pa[i]->downside_risk, pa[i]->max_drawdown, pa[i]->calmar,
                              (double)pa[i]->n_valid};
        const double vb[9] = {pb[i]->total_return, pb[i]->annual_return, pb[i]->annual_volatility, pb[i]->sharpe,
                              pb[i]->sortino, pb[i]->downside_risk, pb[i]->max_drawdown, pb[i]->calmar,
                              (double)pb[i]->n_valid};
        if (memcmp(va, vb, sizeof va)) return 0;
    }
    const vp_trade_stats *ta = &a->summary.trades, *tb = &b->summary.trades;
    const double sa[6] = {ta->net_pnl, ta->costs, ta->hit_rate, ta->exposure, ta->turnover, ta->avg_holding_bars};
    const double sb[6] = {tb->net_pnl, tb->costs, tb->hit_rate, tb->exposure, tb->turnover, tb->avg_holding_bars};
    return memcmp(sa, sb, sizeof sa) == 0;
}

#endif /* VP_TEST_BACKTEST_UTIL_H */
