/* The trade log of a rollout, assembled on the host from the fills the environment's step
 * wrote at every point (vp_env_fill_rec): round trips from the fill that opens a position to the
 * one that leaves it flat or reverses it, with their cash flows and costs. No fill rule is
 * derived here; the fills must account for the logged position, or the run fails naming
 * the bar. A trade's costs are the commission and the price paid against it on every fill
 * (vp_env_fill_rec.slip: slippage plus the spread's share) times the contracts and the point
 * value, plus the financing charged while it was held; a step's financing
 * (vp_env_fill_rec.financing) goes to the trade that held the position over it. Also the
 * count of the orders the leverage limit cut (vp_env_fill_rec.cut), per window and in all. */
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

void vp_ro_cuts_add(vp_rollout_cuts* c, int64_t bar, int32_t cut) {
    if (cut <= 0) return;
    c->orders += 1;
    c->contracts += cut;
    if (c->n_bars < VP_ROLLOUT_CUT_BARS) c->bars[c->n_bars++] = bar;
}

/* Logs step k of window w (points p -> p + 1) from the fills the environment's step wrote:
 * the market order at the next open closes, reduces, adds to, opens or reverses the
 * position (a trade it closes ends for `closing`); a resting order then closes it. The fills
 * must account for the logged position. */
static vp_status log_step(trade_log* L, int64_t w, int64_t p, vp_exit_reason closing) {
    const vp_ro_run* r = L->r;
    const vp_ro_records* h = &r->h_rec;
    const vp_env_fill_rec* f = &h->fill[p];
    const int64_t bar = r->a + p - w; /* decision bar: window w's points start at its offset, bar s_w = offset - w */
    const int64_t fill_bar = bar + 1; /* the bar whose open or range filled */
    int32_t pos = h->position[p];

    // an order the leverage limit cut (the fill below is what was left of it)
    if (f->cut > 0) {
        vp_ro_cuts_add(&L->out->cuts, fill_bar, f->cut);
        L->out->windows[w].cut_orders += 1;
        L->out->windows[w].cut_contracts += f->cut;
    }

    // the market order: its part that closes the position, then its part that opens one
    const int32_t delta = f->qty[0];
    if (delta != 0) {
        const int32_t target = pos + delta;
        const double px = f->price[0];
        const int reverses = pos != 0 && target != 0 && (pos > 0) != (target > 0);
        if (pos != 0 && (target == 0 || reverses)) {
            leg(L, -pos, px, f->slip[0], 0);
            close_cur(L, fill_bar, closing);
        } else if (pos != 0) {
            leg(L, delta, px, f->slip[0], vp_env_absi(target) > vp_env_absi(pos));
            if (vp_env_absi(target) > L->cur.t.size) L->cur.t.size = vp_env_absi(target);
        }
        if (target != 0 && (pos == 0 || reverses)) open_new(L, (int32_t)w, fill_bar, target, px, f->slip[0]);
        pos = target;
    }

    // a resting order that closed the position
    if (f->qty[1] != 0) {
        VP_REQUIRE(f->qty[1] == -pos && (f->kind == VP_FILL_STOP || f->kind == VP_FILL_TAKE_PROFIT), VP_ERR_STATE,
                   "rollout trade log: bar %lld fills %d contracts by a resting order of kind %d with %d held",
                   (long long)fill_bar, (int)f->qty[1], (int)f->kind, (int)pos);
        leg(L, f->qty[1], f->price[1], f->slip[1], 0);
        close_cur(L, fill_bar, f->kind == VP_FILL_STOP ? VP_EXIT_STOP : VP_EXIT_TAKE_PROFIT);
        pos = 0;
    }

    VP_REQUIRE(pos == h->position[p + 1], VP_ERR_STATE,
               "rollout trade log: the fills at bar %lld leave %d contracts, the environment holds %d",
               (long long)fill_bar, (int)pos, (int)h->position[p + 1]);
    if (pos != 0) L->cur.t.bars_held += 1;

    // the step's financing: to the trade holding the position at its close, or, when it ended
    // flat, to the trade it closed (a charge is a cost, a credit only adds to the pnl)
    if (f->financing != 0.0) {
        vp_rollout_trade* t = pos != 0 ? &L->cur.t
                              : h->position[p] != 0 && L->out->n_trades > 0 ? &L->out->trades[L->out->n_trades - 1]
                                                                             : NULL;
        VP_REQUIRE(t != NULL, VP_ERR_STATE, "rollout trade log: financing of %g charged at bar %lld with nothing held",
                   f->financing, (long long)fill_bar);
        t->pnl -= f->financing;
        t->financing += f->financing;
        if (f->financing > 0.0) t->costs += f->financing;
    }
    return VP_OK;
}

vp_status vp_ro_trades_build(const vp_ro_run* r, vp_rollout_result* out) {
    trade_log L;
    memset(&L, 0, sizeof L);
    L.r = r;
    L.out = out;
    L.cap = out->n_points;
    out->n_trades = 0;
    memset(&out->cuts, 0, sizeof out->cuts);
    out->cuts.max_leverage = r->cfg->instrument.max_leverage;
    out->trades = (vp_rollout_trade*)calloc((size_t)L.cap, sizeof(vp_rollout_trade));
    VP_REQUIRE(out->trades != NULL, VP_ERR_OOM, "backtest trade log: %lld trades", (long long)L.cap);
    for (int64_t w = 0; w < out->n_windows; ++w) {
        const vp_rollout_window* x = &out->windows[w];
        const int64_t p0 = r->h_win.offset[w], steps = r->h_win.steps[w], k_ruin = r->h_win.ruin[w];
        L.cur.active = 0;
        for (int64_t k = 0; k + 1 < x->n_points; ++k) {
            // the step after a ruin close closes out for the ruin; the window's last step for its end
            const vp_exit_reason why = k_ruin >= 0 && k == k_ruin + 1 ? VP_EXIT_RUIN
                                       : k + 1 == steps                 ? VP_EXIT_END
                                                                        : VP_EXIT_SIGNAL;
            VP_TRY(log_step(&L, w, p0 + k, why));
        }
        // every window ends flat: its last step, or the close-out after its ruin
        VP_REQUIRE(!L.cur.active, VP_ERR_STATE, "backtest trade log: window %lld ends with a position open",
                   (long long)w);
    }
    return VP_OK;
}
