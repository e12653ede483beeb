/* The curves and metrics of a rollout: each window's equity and its two baselines
 * (rollout_baseline.c), the windows chained into one curve of each over the span (each
 * window starting from the previous one's ending equity), the strategy's drawdown and
 * positions, and the summary. Every metric is computed from the curve it describes — the
 * stitched curves that equity.csv and the report show, or a window's own points — and its
 * total return is that curve's last point / first point - 1, exactly. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/metrics_internal.h"
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

/* The metrics of equity curve eq [n] under annualisation an (its factor and risk-free rate),
 * into *out: its per-bar returns (vp_equity_step_return) through vp_perf_compute_annual, then
 * the total return taken from the curve itself (eq[n-1] / eq[0] - 1, not the rounded product
 * of the returns) and the annual return and Calmar ratio from it. ret [n] is scratch. */
static vp_status curve_perf(const double* eq, int64_t n, const vp_annual* an, double* ret, vp_perf* out) {
    const double ppy = an->periods_per_year;
    for (int64_t t = 1; t < n; ++t) ret[t - 1] = vp_equity_step_return(eq[t - 1], eq[t]);
    VP_TRY(vp_perf_compute_annual(ret, n - 1, an, out));
    if (out->status == VP_PERF_EMPTY || out->status == VP_PERF_ALL_NAN) return VP_OK;
    const double growth = eq[n - 1] / eq[0];
    out->total_return = growth - 1.0;
    out->annual_return = pow(growth, ppy / (double)(n - 1)) - 1.0;
    out->calmar = out->max_drawdown < 0.0 ? out->annual_return / fabs(out->max_drawdown)
                                          : vp_metric_ratio(out->annual_return, 0.0);
    return VP_OK;
}

/* The tear-sheet statistics of strategy curve eq [n] against buy-and-hold curve bh [n], their
 * per-bar returns taken as curve_perf takes them, into m->tear; ret [n] is scratch. */
static vp_status curve_tear(const double* eq, const double* bh, int64_t n, const vp_annual* an, double* ret,
                            vp_metrics_summary* m) {
    double* b = (double*)malloc(sizeof(double) * (size_t)n);
    VP_REQUIRE(b != NULL, VP_ERR_OOM, "backtest tear-sheet statistics of %lld points", (long long)n);
    for (int64_t t = 1; t < n; ++t) {
        ret[t - 1] = vp_equity_step_return(eq[t - 1], eq[t]);
        b[t - 1] = vp_equity_step_return(bh[t - 1], bh[t]);
    }
    vp_status s = vp_tear_compute(ret, b, n - 1, an, &m->tear);
    free(b);
    m->has_tear = s == VP_OK;
    return s;
}

/* One stitched curve over the span's n points from per-window points: window w's at eq +
 * off[w], len[w] of them. One window: its points, the last held after it ends; several:
 * chained by their returns (0 once a window has ended), from the initial equity. */
static void stitch(const vp_ro_run* r, const vp_rollout_result* out, const double* eq, const int64_t* off,
                   const int64_t* len, double* curve) {
    const int64_t n = r->n_steps + 1;
    if (out->n_windows == 1) {
        for (int64_t j = 0; j < n; ++j) curve[j] = eq[off[0] + (j < len[0] ? j : len[0] - 1)];
        return;
    }
    curve[0] = r->cfg->instrument.initial_equity;
    for (int64_t j = 0; j + 1 < n; ++j) {
        const int64_t w = window_of(out, j), k = out->span.begin + j - out->windows[w].begin;
        const double ret = k + 1 < len[w] ? vp_equity_step_return(eq[off[w] + k], eq[off[w] + k + 1]) : 0.0;
        curve[j + 1] = curve[j] * (1.0 + (isnan(ret) ? 0.0 : ret));
    }
}

/* The stitched curves' arrays, allocated. */
static vp_status curve_alloc(vp_rollout_result* out, int64_t n) {
    out->n_curve = n;
    out->curve_time_ms = (int64_t*)malloc(sizeof(int64_t) * (size_t)n);
    out->curve_equity = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_benchmark = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_flat = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_drawdown = (double*)malloc(sizeof(double) * (size_t)n);
    out->curve_position = (double*)malloc(sizeof(double) * (size_t)n);
    VP_REQUIRE(out->curve_time_ms && out->curve_equity && out->curve_benchmark && out->curve_flat &&
                   out->curve_drawdown && out->curve_position,
               VP_ERR_OOM, "backtest curve of %lld points", (long long)n);
    return VP_OK;
}

/* Every window's strategy and buy-and-hold metrics over its own points; ret is scratch. */
static vp_status window_perf(const vp_ro_run* r, vp_rollout_result* out, const double* bh, const int64_t* n_bh,
                             double* ret) {
    for (int64_t w = 0; w < out->n_windows; ++w) {
        vp_rollout_window* x = &out->windows[w];
        VP_TRY(curve_perf(out->equity + x->offset, x->n_points, &r->cfg->annual, ret, &x->perf));
        VP_TRY(curve_perf(bh + r->h_win.offset[w], n_bh[w], &r->cfg->annual, ret, &x->buy_hold));
    }
    return VP_OK;
}

/* The trades as the metrics take them, and the summary of the three stitched curves. */
static vp_status summarize(const vp_ro_run* r, vp_rollout_result* out, double* ret) {
    const int64_t n = out->n_curve;
    const double ppy = r->cfg->annual.periods_per_year;
    vp_metrics_summary* m = &out->summary;
    m->annual = r->cfg->annual;
    VP_TRY(curve_perf(out->curve_equity, n, &r->cfg->annual, ret, &m->strategy));
    VP_TRY(curve_perf(out->curve_benchmark, n, &r->cfg->annual, ret, &m->buy_hold));
    VP_TRY(curve_perf(out->curve_flat, n, &r->cfg->annual, ret, &m->flat));
    VP_TRY(curve_tear(out->curve_equity, out->curve_benchmark, n, &r->cfg->annual, ret, m));
    vp_trade* tr = (vp_trade*)malloc(sizeof(vp_trade) * (size_t)(out->n_trades + 1));
    VP_REQUIRE(tr != NULL, VP_ERR_OOM, "backtest metrics of %lld trades", (long long)out->n_trades);
    for (int64_t i = 0; i < out->n_trades; ++i) {
        tr[i].pnl = out->trades[i].pnl;
        tr[i].costs = out->trades[i].costs;
        tr[i].bars_held = out->trades[i].bars_held;
    }
    vp_status s = vp_trade_stats_compute(tr, out->n_trades, out->curve_position, n,
                                         (double)r->cfg->instrument.max_position, ppy, &m->trades);
    free(tr);
    return s;
}

vp_status vp_ro_curve_build(const vp_ro_run* r, vp_rollout_result* out) {
    const int64_t P = r->n_points, N = out->n_windows, n = r->n_steps + 1;
    // baselines [P] at the planned offsets and returns [n]; the baselines' lengths and offsets, the strategy's [N]
    double* work = (double*)malloc(sizeof(double) * (size_t)(2 * P + n));
    int64_t* lens = (int64_t*)malloc(sizeof(int64_t) * (size_t)(5 * N));
    vp_status s = (work && lens) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "backtest curves of %lld points",
                                                         (long long)P);
    double *bh = work, *fl = work + P, *ret = work + 2 * P;
    int64_t *n_bh = lens, *n_fl = lens + N, *b_off = lens + 2 * N, *s_off = lens + 3 * N, *s_len = lens + 4 * N;
    if (s == VP_OK) s = curve_alloc(out, n);
    if (s == VP_OK) s = vp_ro_baselines(r, out, bh, n_bh, fl, n_fl);
    if (s == VP_OK) s = window_perf(r, out, bh, n_bh, ret);
    if (s == VP_OK) {
        // the stitched curves: the strategy's points, both baselines', the positions and times
        for (int64_t w = 0; w < N; ++w) {
            b_off[w] = r->h_win.offset[w];
            s_off[w] = out->windows[w].offset;
            s_len[w] = out->windows[w].n_points;
        }
        stitch(r, out, out->equity, s_off, s_len, out->curve_equity);
        stitch(r, out, bh, b_off, n_bh, out->curve_benchmark);
        stitch(r, out, fl, b_off, n_fl, out->curve_flat);
        for (int64_t j = 0; j < n; ++j) {
            const vp_rollout_window* x = &out->windows[window_of(out, j)];
            const int64_t k = out->span.begin + j - x->begin;
            out->curve_time_ms[j] = r->data->bars->time_ms[out->span.begin + j];
            out->curve_position[j] = k < x->n_points ? (double)out->position[x->offset + k] : 0.0;
        }
        s = vp_drawdown_series(out->curve_equity, n, out->curve_drawdown);
    }
    if (s == VP_OK) s = summarize(r, out, ret);
    free(work);
    free(lens);
    return s;
}
