/* The baselines of a rollout under the same rules as the strategy: buy-and-hold and flat
 * over each window, stepped on the host through the rollout's own step (vp_ro_step: the
 * environment's step function, the window's last step flat, the ruin rule) with forced
 * actions, so every cost the environment charges (commission, slippage, and whatever else
 * its step models) and the ruin close-out apply to them exactly as to the strategy, the
 * leverage limit included: the orders it cut are counted for buy-and-hold as for the strategy
 * (flat never grows a position). Also the description of a window's ruin, shared by the
 * strategy and the baselines. */
#include <string.h>

#include "rollout/rollout_impl.h"

void vp_ro_ruin_of(const vp_ro_run* r, int64_t w, int32_t ruin_step, const double* eq, int64_t n,
                   vp_rollout_ruin* out) {
    memset(out, 0, sizeof *out);
    if (ruin_step < 0) return;
    const int64_t begin = r->a + r->h_win.offset[w] - w;
    const double at = eq[ruin_step + 1], after = eq[n - 1], low = at < after ? at : after;
    out->ruined = 1;
    out->window = w;
    out->bar = begin + ruin_step + 1;
    out->time_ms = r->data->bars->time_ms[out->bar];
    out->close_bar = begin + n - 1;
    out->level = r->dims.ruin_level;
    out->equity_at_ruin = at;
    out->equity_after_close = after;
    out->below_zero = low < 0.0;
    out->loss_past_floor = low < out->level ? out->level - low : 0.0;
}

/* Window w stepped under the forced action act [4] at every decision, from flat at the
 * initial equity: its equity at each close into eq [steps + 1]; returns the points it took
 * (fewer after a ruin) and its ruin step into *ruin_step (-1: none); the orders the leverage
 * limit cut added to *cuts. */
static int64_t run_window(const vp_ro_run* r, int64_t w, const int32_t* act /* [4] */, double* eq,
                          int32_t* ruin_step, vp_rollout_cuts* cuts) {
    const double init = r->cfg->instrument.initial_equity;
    // one env's state, flat at the initial equity, as alloc_run sets a window up
    int32_t t = r->h_win.offset[w] - (int32_t)w, window_end = r->h_win.last[w] + 1, position = 0, held = 0;
    uint32_t episode = 0;
    double cash = init, equity = init, peak = init, entry = 0.0, tp = 0.0, sl = 0.0;
    float last_size = 0.0f;
    vp_env_state s;
    memset(&s, 0, sizeof s);
    s.t = &t, s.window_end = &window_end, s.position = &position, s.bars_held = &held, s.episode = &episode;
    s.cash = &cash, s.equity = &equity, s.peak = &peak, s.entry = &entry, s.take_profit = &tp, s.stop_loss = &sl;
    s.last_size = &last_size;
    // its window table entry
    int32_t steps = r->h_win.steps[w], offset = 0, last = r->h_win.last[w], alive = 1, ruin = -1;
    vp_env_fill_rec fill;
    float reward = 0.0f;
    vp_ro_windows win = {&steps, &offset, &last, &alive, &ruin, &fill, &reward};
    int32_t scratch[VP_ENV_BRANCHES];
    const int64_t begin = r->a + r->h_win.offset[w] - w; /* the window's first bar */
    eq[0] = init;
    int32_t k = 0;
    for (; vp_ro_active(&win, 0, k); ++k) {
        vp_ro_step(&r->dims, r->h_bars, &s, &win, scratch, k, 0, act);
        eq[k + 1] = equity;
        // an order cut by the leverage limit, at the bar whose open it was for
        vp_ro_cuts_add(cuts, begin + k + 1, fill.cut);
    }
    *ruin_step = ruin;
    return (int64_t)k + 1;
}

vp_status vp_ro_baselines(const vp_ro_run* r, vp_rollout_result* out, double* bh, int64_t* n_bh, double* fl,
                          int64_t* n_fl) {
    const int32_t hold[VP_ENV_BRANCHES] = {VP_ENV_DIR_LONG, VP_ENV_SIZE_CHOICES - 1, 0, 0};
    const int32_t flat[VP_ENV_BRANCHES] = {VP_ENV_DIR_FLAT, 0, 0, 0};
    memset(&out->buy_hold_ruin, 0, sizeof out->buy_hold_ruin);
    memset(&out->buy_hold_cuts, 0, sizeof out->buy_hold_cuts);
    out->buy_hold_cuts.max_leverage = r->cfg->instrument.max_leverage;
    for (int64_t w = 0; w < out->n_windows; ++w) {
        const int64_t o = r->h_win.offset[w];
        int32_t ruin = -1, flat_ruin = -1;
        vp_rollout_window* x = &out->windows[w];
        const int64_t orders = out->buy_hold_cuts.orders, contracts = out->buy_hold_cuts.contracts;
        n_bh[w] = run_window(r, w, hold, bh + o, &ruin, &out->buy_hold_cuts);
        x->buy_hold_cut_orders = out->buy_hold_cuts.orders - orders;
        x->buy_hold_cut_contracts = out->buy_hold_cuts.contracts - contracts;
        vp_ro_ruin_of(r, w, ruin, bh + o, n_bh[w], &x->buy_hold_ruin);
        if (x->buy_hold_ruin.ruined && !out->buy_hold_ruin.ruined) out->buy_hold_ruin = x->buy_hold_ruin;
        // flat never grows a position: nothing for the limit to cut
        vp_rollout_cuts none;
        memset(&none, 0, sizeof none);
        n_fl[w] = run_window(r, w, flat, fl + o, &flat_ruin, &none);
        VP_REQUIRE(flat_ruin < 0 && none.orders == 0, VP_ERR_STATE,
                   "backtest: the flat baseline of window %lld ruined at step %d or had %lld orders cut", (long long)w,
                   (int)flat_ruin, (long long)none.orders);
    }
    return VP_OK;
}
