/* The curves and metrics of a rollout: each window's returns and buy-and-hold, the windows
 * chained into one curve over the span (each starting from the previous one's ending
 * equity), its drawdown and positions, and the summary (strategy, baselines, trades). */
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"

/* The window holding step j of the span (s_w <= j < s_{w+1}); the last window for j = steps. */
static int64_t window_of(const vp_rollout_result* out, int64_t j) {
    int64_t lo = 0, hi = out->n_windows - 1;
    const int64_t bar = out->span.begin + j;
    while (lo < hi) {
        int64_t mid = (lo + hi + 1) / 2;
        if (out->windows[mid].begin <= bar) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* Buy-and-hold's costs: the instrument's, max_position contracts. */
static vp_baseline_costs hold_costs(const vp_ro_run* r) {
    const vp_instrument* in = &r->cfg->instrument;
    vp_baseline_costs bc = {(double)in->max_position, in->multiplier, in->commission,
                            in->slippage_ticks * in->tick_size, in->initial_equity};
    return bc;
}

/* Every window's returns into ret [P] (window w's at its offset, n_points - 1 of them), its
 * buy-and-hold returns into bret [P], and both windows' metrics. */
static vp_status window_returns(const vp_ro_run* r, vp_rollout_result* out, double* ret, double* bret, double* tmp) {
    const vp_baseline_costs bc = hold_costs(r);
    const vp_annual* an = &r->cfg->annual;
    const vp_bars* bars = r->data->bars;
    for (int64_t w = 0; w < out->n_windows; ++w) {
        vp_rollout_window* x = &out->windows[w];
        VP_TRY(vp_returns_from_equity(out->equity + x->offset, x->n_points, ret + x->offset));
        VP_TRY(vp_perf_compute_annual(ret + x->offset, x->n_points - 1, an, &x->perf));
        VP_TRY(vp_baseline_buy_hold(bars->open + x->begin, bars->close + x->begin, x->n_points, &bc, tmp));
        vp_baseline_returns(tmp, x->n_points, bret + x->offset);
        VP_TRY(vp_perf_compute_annual(bret + x->offset, x->n_points - 1, an, &x->buy_hold));
    }
    return VP_OK;
}

/* The stitched curve's arrays, allocated. */
static vp_status curve_alloc(vp_rollout_result* out, int64_t n) {
    out->n_curve = n;
    out->curve_time_ms = (int64_t*)malloc(sizeof(int64_t) * (size_t)n);
    out->curve_equity = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_benchmark = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_drawdown = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_position = (double*)malloc(sizeof(double) * (size_t)n);
    VP_REQUIRE(out->curve_time_ms && out->curve_equity && out->curve_benchmark && out->curve_drawdown &&
                   out->curve_position,
               VP_ERR_OOM, "backtest curve of %lld points", (long long)n);
    return VP_OK;
}

vp_status vp_ro_curve_build(const vp_ro_run* r, vp_rollout_result* out) {
    const int64_t P = out->n_points, n = r->n_steps + 1;
    const double init = r->cfg->instrument.initial_equity, ppy = r->cfg->annual.periods_per_year;
    double* work = (double*)malloc(sizeof(double) * (size_t)(2 * P + 3 * n));
    vp_trade* tr = (vp_trade*)malloc(sizeof(vp_trade) * (size_t)(out->n_trades + 1));
    vp_status s = (work && tr) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "backtest metrics of %lld points",
                                                       (long long)P);
    if (s == VP_OK) s = curve_alloc(out, n);
    double *ret = work, *bret = work + P, *pooled = work + 2 * P, *bpooled = pooled + n, *tmp = bpooled + n;
    if (s == VP_OK) s = window_returns(r, out, ret, bret, tmp);
    if (s != VP_OK) {
        free(work);
        free(tr);
        return s;
    }

    // Pooled returns: step j belongs to one window; after a ruin the window holds nothing.
    for (int64_t j = 0; j + 1 < n; ++j) {
        const vp_rollout_window* x = &out->windows[window_of(out, j)];
        const int64_t k = out->span.begin + j - x->begin;
        pooled[j] = k + 1 < x->n_points ? ret[x->offset + k] : 0.0;
        bpooled[j] = k + 1 < x->n_points ? bret[x->offset + k] : 0.0;
    }
    // The chained curves: one window is its own curve, several are chained by their returns.
    const vp_rollout_window* w0 = &out->windows[0];
    for (int64_t j = 0; j < n; ++j) {
        const vp_rollout_window* x = &out->windows[window_of(out, j)];
        const int64_t k = out->span.begin + j - x->begin;
        out->curve_time_ms[j] = r->data->bars->time_ms[out->span.begin + j];
        out->curve_position[j] = k < x->n_points ? (double)out->position[x->offset + k] : 0.0;
        if (out->n_windows == 1) {
            out->curve_equity[j] = out->equity[k < w0->n_points ? k : w0->n_points - 1];
        } else {
            out->curve_equity[j] = j == 0 ? init : out->curve_equity[j - 1] * (1.0 + pooled[j - 1]);
        }
        out->curve_benchmark[j] = j == 0 ? init : out->curve_benchmark[j - 1] * (1.0 + bpooled[j - 1]);
    }
    // one window: the benchmark is buy-and-hold over the span itself
    if (out->n_windows == 1) {
        const vp_baseline_costs bc = hold_costs(r);
        const vp_bars* bars = r->data->bars;
        s = vp_baseline_buy_hold(bars->open + out->span.begin, bars->close + out->span.begin, n, &bc,
                                 out->curve_benchmark);
    }

    // The summary: pooled strategy returns, buy-and-hold, flat, and the trades.
    vp_metrics_summary* m = &out->summary;
    m->annual = r->cfg->annual;
    for (int64_t i = 0; i < out->n_trades; ++i) {
        tr[i].pnl = out->trades[i].pnl;
        tr[i].costs = out->trades[i].costs;
        tr[i].bars_held = out->trades[i].bars_held;
    }
    if (s == VP_OK) s = vp_perf_compute_annual(pooled, n - 1, &m->annual, &m->strategy);
    if (s == VP_OK) s = vp_perf_compute_annual(bpooled, n - 1, &m->annual, &m->buy_hold);
    if (s == VP_OK) {
        memset(tmp, 0, sizeof(double) * (size_t)n);
        s = vp_perf_compute_annual(tmp, n - 1, &m->annual, &m->flat);
    }
    if (s == VP_OK)
        s = vp_trade_stats_compute(tr, out->n_trades, out->curve_position, n,
                                   (double)r->cfg->instrument.max_position, ppy, &m->trades);
    if (s == VP_OK) s = vp_drawdown_series(out->curve_equity, n, out->curve_drawdown);
    free(work);
    free(tr);
    return s;
}
