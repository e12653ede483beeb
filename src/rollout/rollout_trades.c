/* The trade log of a backtest, rebuilt on the host from the per-point log: each step's
 * fills are derived from the state before it, the choice and the next bar by the
 * environment's rules (docs/env.md), and checked against the state the step left — the
 * position and the cash must agree bit for bit, or the run fails naming the bar. */
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"

/* A trade being built. */
typedef struct open_trade {
    int active;          /* a position is open */
    vp_rollout_trade t;       /* fields known so far */
    double in_qty;       /* contracts bought (long) or sold (short) to open and add */
    double in_value;     /* sum of |q| x price of those fills */
    double out_qty;      /* contracts of the closing fills */
    double out_value;    /* sum of |q| x price of those */
} open_trade;

/* The trades of one run being collected. */
typedef struct trade_log {
    const vp_ro_run* r;
    vp_rollout_result* out;
    int64_t cap;
    open_trade cur;
} trade_log;

/* A fill of q contracts at px belonging to the current trade: its cash flow and costs. */
static void leg(trade_log* L, int32_t q, double px, double slip, int opening) {
    const vp_env_params* p = &L->r->dims.env;
    open_trade* c = &L->cur;
    const double aq = (double)vp_env_absi(q);
    c->t.pnl += vp_env_fill(0.0, q, px, p);
    c->t.costs += aq * p->commission + aq * slip * p->multiplier;
    if (opening) {
        c->in_qty += aq;
        c->in_value += aq * px;
    } else {
        c->out_qty += aq;
        c->out_value += aq * px;
    }
}

/* Starts a trade with its opening fill of q contracts at px (bar of the fill). */
static void open_new(trade_log* L, int32_t window, int64_t bar, int32_t q, double px, double slip) {
    open_trade* c = &L->cur;
    memset(c, 0, sizeof *c);
    c->active = 1;
    c->t.window = window;
    c->t.side = q > 0 ? 1 : -1;
    c->t.size = vp_env_absi(q);
    c->t.entry_bar = bar;
    leg(L, q, px, slip, 1);
}

/* Closes the current trade at bar for `reason` and appends it. */
static void close_cur(trade_log* L, int64_t bar, vp_exit_reason reason) {
    open_trade* c = &L->cur;
    c->t.exit_bar = bar;
    c->t.reason = reason;
    c->t.entry_price = c->in_value / c->in_qty;
    c->t.exit_price = c->out_qty > 0 ? c->out_value / c->out_qty : 0.0;
    if (L->out->n_trades < L->cap) L->out->trades[L->out->n_trades++] = c->t;
    c->active = 0;
}

/* Replays step k of window w (points p -> p + 1) and logs its fills; fails when the
 * replay disagrees with the logged state. */
static vp_status replay_step(trade_log* L, int64_t w, int64_t k, int64_t p, int final_step) {
    const vp_ro_run* r = L->r;
    const vp_env_params* ep = &r->dims.env;
    const vp_ro_records* h = &r->h_rec;
    const int64_t t = r->h_state.t[w] + k, bar = r->a + t; /* decision bar */
    const vp_bars* bars = r->data->bars;
    const double o = bars->open[bar + 1], hi = bars->high[bar + 1], lo = bars->low[bar + 1];
    const int32_t* a = h->action + p * VP_ENV_BRANCHES;
    const int32_t dir = a[0] - 1;
    int32_t pos = h->position[p], target = (final_step || dir == 0) ? 0 : dir * vp_env_contracts(a[1], ep->max_position);
    double cash = h->cash[p], tp = h->take_profit[p], sl = h->stop_loss[p];

    // the market order at the next open: close, reduce, add, open or reverse
    const int32_t delta = target - pos;
    if (delta != 0) {
        const double px = delta > 0 ? vp_env_add(o, ep->slip) : vp_env_sub(o, ep->slip);
        cash = vp_env_fill(cash, delta, px, ep);
        const int reverses = pos != 0 && target != 0 && (pos > 0) != (target > 0);
        if (pos != 0 && (target == 0 || reverses)) {
            leg(L, -pos, px, ep->slip, 0);
            close_cur(L, bar + 1, final_step ? VP_EXIT_END : VP_EXIT_SIGNAL);
        } else if (pos != 0) {
            leg(L, delta, px, ep->slip, vp_env_absi(target) > vp_env_absi(pos));
            if (vp_env_absi(target) > L->cur.t.size) L->cur.t.size = vp_env_absi(target);
        }
        if (target != 0 && (pos == 0 || reverses)) {
            const int32_t side = target > 0 ? 1 : -1;
            const double atr = r->data->atr[bar];
            open_new(L, (int32_t)w, bar + 1, target, px, ep->slip);
            tp = vp_env_level(px, side, a[2], atr);
            sl = vp_env_level(px, -side, a[3], atr);
        }
        pos = target;
    }

    // resting orders against the next bar's range: the stop first
    if (pos != 0) {
        const int stop_hit = pos > 0 ? (sl > 0.0 && lo <= sl) : (sl > 0.0 && hi >= sl);
        const int tp_hit = pos > 0 ? (tp > 0.0 && hi >= tp) : (tp > 0.0 && lo <= tp);
        if (stop_hit || tp_hit) {
            double px;
            if (stop_hit)
                px = pos > 0 ? vp_env_sub(o < sl ? o : sl, ep->slip) : vp_env_add(o > sl ? o : sl, ep->slip);
            else
                px = pos > 0 ? (o > tp ? o : tp) : (o < tp ? o : tp);
            cash = vp_env_fill(cash, -pos, px, ep);
            leg(L, -pos, px, stop_hit ? ep->slip : 0.0, 0);
            close_cur(L, bar + 1, stop_hit ? VP_EXIT_STOP : VP_EXIT_TAKE_PROFIT);
            pos = 0;
        }
    }

    // the replay must land where the environment did
    VP_REQUIRE(pos == h->position[p + 1] && cash == h->cash[p + 1], VP_ERR_STATE,
               "backtest trade log: the fills replayed at bar %lld give position %d and cash %.17g, the environment "
               "logged %d and %.17g", (long long)(bar + 1), (int)pos, cash, (int)h->position[p + 1],
               h->cash[p + 1]);
    if (pos != 0) L->cur.t.bars_held += 1;
    return VP_OK;
}

vp_status vp_ro_trades_build(const vp_ro_run* r, vp_rollout_result* out) {
    trade_log L;
    memset(&L, 0, sizeof L);
    L.r = r;
    L.out = out;
    L.cap = out->n_points;
    out->n_trades = 0;
    out->trades = (vp_rollout_trade*)calloc((size_t)L.cap, sizeof(vp_rollout_trade));
    VP_REQUIRE(out->trades != NULL, VP_ERR_OOM, "backtest trade log: %lld trades", (long long)L.cap);
    for (int64_t w = 0; w < out->n_windows; ++w) {
        const vp_rollout_window* x = &out->windows[w];
        const int64_t p0 = r->h_win.offset[w], steps = r->h_win.steps[w];
        L.cur.active = 0;
        for (int64_t k = 0; k + 1 < x->n_points; ++k) VP_TRY(replay_step(&L, w, k, p0 + k, k + 1 == steps));
        // a ruined window's open trade is marked at the ruin bar's close
        if (L.cur.active) {
            VP_REQUIRE(x->ruined, VP_ERR_STATE, "backtest trade log: window %lld ends with a position open",
                       (long long)w);
            const int64_t p = p0 + x->n_points - 1;
            const double c = r->data->bars->close[x->last];
            L.cur.t.pnl += vp_env_mul(vp_env_mul((double)r->h_rec.position[p], c), r->dims.env.multiplier);
            L.cur.out_qty += (double)vp_env_absi(r->h_rec.position[p]);
            L.cur.out_value += (double)vp_env_absi(r->h_rec.position[p]) * c;
            close_cur(&L, x->last, VP_EXIT_RUIN);
        }
    }
    return VP_OK;
}
