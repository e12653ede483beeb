/* The environment's step, written once for the CPU loop (env_cpu.c) and the CUDA kernel
 * (env_cuda.cu) on the rounded arithmetic and price rules of env_rules.h, so both backends
 * step identically: the portfolio vector, episode starts and restarts, one step of one env
 * and the random actions of the benchmark. */
#ifndef VP_ENV_STEP_H
#define VP_ENV_STEP_H

#include <stdint.h>

#include "env/env_rules.h"
#include "vulpes/action.h"
#include "vulpes/defs.h"
#include "vulpes/env.h"
#include "vulpes/rng.h"

/* Outputs of a step or an observation (a NULL pointer is not written). */
typedef struct vp_env_outs {
    float* reward;    /* [n] */
    float* done;      /* [n] */
    int32_t* obs_bar; /* [n] */
    float* portfolio; /* [n, 8] */
    vp_env_fill_rec* fill; /* [n] the fills of the step (vulpes/env.h) */
} vp_env_outs;

/* What the portfolio vector reads of one env: the step passes its registers, an observation
 * the stored state, so the step never reads back what it has just written. */
typedef struct vp_env_view {
    int32_t t;          /* decision bar */
    int32_t window_end; /* bar whose open closes the episode */
    int32_t position;   /* signed contracts */
    int32_t bars_held;  /* bars the position has been open */
    double equity;      /* currency */
    double peak;        /* currency */
    double entry;       /* price units (0 when flat) */
    double take_profit; /* price units (0: none) */
    double stop_loss;   /* price units (0: none) */
    float last_size;    /* last action's signed size fraction */
} vp_env_view;

/* Start bar of episode `episode` of env i: begin + floor(word x n_starts / 2^32), with the
 * first Philox word of (seed, stream first_env + i, index episode); exact integers. */
VP_HD int32_t vp_env_start(const vp_env_params* p, int64_t i, uint32_t episode) {
    vp_u32x4 r = vp_rng_draw(p->seed, (uint64_t)(p->first_env + i), (uint64_t)episode);
    uint64_t off = ((uint64_t)r.v[0] * (uint64_t)p->n_starts) >> 32;
    return (int32_t)(p->begin + (int64_t)off);
}

/* Writes the 8-float portfolio vector of one env (docs/env.md). Bars held and time left are
 * in episode lengths, capped at 1: training never shows more, and a longer window (a
 * validation or backtest span) must not feed the network values it has not seen. Prices are
 * the close on the side the position would exit on. */
VP_HD void vp_env_portfolio(const vp_env_params* p, const vp_env_bar* bars, const vp_env_view* v,
                            float* out /* [8] */) {
    const vp_env_bar* bar = bars + v->t;
    double atr = bar->atr;
    int32_t pos = v->position, dir = pos > 0 ? 1 : -1;
    double upnl = 0.0, d_tp = 0.0, d_sl = 0.0;
    if (pos != 0 && atr > 0.0) {
        /* measured from the close on the side the position would exit on, as the equity is */
        double c = vp_env_exit_price(pos, bar->close, vp_env_buy_spread(p, bar), vp_env_sell_spread(p, bar));
        double inv_atr = vp_env_div(1.0, atr);
        upnl = vp_env_mul(vp_env_sub(c, v->entry), inv_atr);
        upnl = vp_env_clampd(pos > 0 ? upnl : -upnl, 10.0);
        d_tp = vp_env_distance(v->take_profit, c, dir, inv_atr);
        d_sl = vp_env_distance(v->stop_loss, c, -dir, inv_atr);
    }
    out[0] = vp_env_f32(vp_env_mul((double)pos, p->inv_max_position));
    out[1] = vp_env_f32(upnl);
    double held = vp_env_mul((double)v->bars_held, p->inv_episode_bars);
    double left = vp_env_mul((double)(v->window_end - v->t), p->inv_episode_bars);
    out[2] = vp_env_f32(held < 1.0 ? held : 1.0);
    out[3] = vp_env_f32(vp_env_div(vp_env_sub(v->peak, v->equity), v->peak));
    out[4] = vp_env_f32(d_tp);
    out[5] = vp_env_f32(d_sl);
    out[6] = vp_env_f32(left < 1.0 ? left : 1.0);
    out[7] = v->last_size;
}

/* Writes an observation: the decision bar and the portfolio vector of env i. */
VP_HD void vp_env_write_obs(const vp_env_params* p, const vp_env_bar* bars, const vp_env_view* v,
                            const vp_env_outs* o, int64_t i) {
    if (o->obs_bar) o->obs_bar[i] = v->t;
    if (o->portfolio) vp_env_portfolio(p, bars, v, o->portfolio + i * VP_ENV_PORTFOLIO);
}

/* Starts episode `episode` of env i (flat, initial equity, a seeded start bar); returns its view. */
VP_HD vp_env_view vp_env_begin_episode(const vp_env_params* p, const vp_env_state* s, int64_t i, uint32_t episode) {
    vp_env_view v;
    v.t = vp_env_start(p, i, episode);
    v.window_end = v.t + p->episode_bars;
    v.position = 0;
    v.bars_held = 0;
    v.equity = p->initial_equity;
    v.peak = p->initial_equity;
    v.entry = 0.0;
    v.take_profit = 0.0;
    v.stop_loss = 0.0;
    v.last_size = 0.0f;
    s->t[i] = v.t;
    s->window_end[i] = v.window_end;
    s->position[i] = 0;
    s->bars_held[i] = 0;
    s->episode[i] = episode;
    s->cash[i] = p->initial_equity;
    s->equity[i] = v.equity;
    s->peak[i] = v.peak;
    s->entry[i] = 0.0;
    s->take_profit[i] = 0.0;
    s->stop_loss[i] = 0.0;
    s->last_size[i] = 0.0f;
    return v;
}

/* The view of env i's stored state. */
VP_HD vp_env_view vp_env_view_of(const vp_env_state* s, int64_t i) {
    vp_env_view v;
    v.t = s->t[i];
    v.window_end = s->window_end[i];
    v.position = s->position[i];
    v.bars_held = s->bars_held[i];
    v.equity = s->equity[i];
    v.peak = s->peak[i];
    v.entry = s->entry[i];
    v.take_profit = s->take_profit[i];
    v.stop_loss = s->stop_loss[i];
    v.last_size = s->last_size[i];
    return v;
}

/* Writes env i's current observation from its stored state. */
VP_HD void vp_env_observe_index(const vp_env_params* p, const vp_env_bar* bars, const vp_env_state* s,
                                const vp_env_outs* o, int64_t i) {
    vp_env_view v = vp_env_view_of(s, i);
    vp_env_write_obs(p, bars, &v, o, i);
}

/* Restarts env i at episode 0 and writes its first observation. */
VP_HD void vp_env_reset_index(const vp_env_params* p, const vp_env_bar* bars, const vp_env_state* s,
                              const vp_env_outs* o, int64_t i) {
    vp_env_view v = vp_env_begin_episode(p, s, i, 0u);
    vp_env_write_obs(p, bars, &v, o, i);
}

/* One step of env i under action a [4] (docs/env.md has the rules in words). */
VP_HD void vp_env_step_index(const vp_env_params* p, const vp_env_bar* bars, const vp_env_state* s,
                             const int32_t* actions /* [n, 4] */, const vp_env_outs* o, int64_t i) {
    /* load the env's state */
    int32_t t = s->t[i], pos = s->position[i], held = s->bars_held[i];
    double cash = s->cash[i], eq_prev = s->equity[i], peak = s->peak[i];
    double entry = s->entry[i], tp = s->take_profit[i], sl = s->stop_loss[i];

    /* decode the action; the last step of a window targets flat */
    const int32_t* a = actions + i * VP_ENV_BRANCHES;
    const vp_action_layout lay = vp_action_layout_env();
    int32_t dir = vp_env_clampi(a[0], lay.size[0] - 1) - 1;
    int32_t size = vp_env_clampi(a[1], lay.size[1] - 1);
    int32_t k_tp = vp_env_clampi(a[2], lay.size[2] - 1);
    int32_t k_sl = vp_env_clampi(a[3], lay.size[3] - 1);
    int32_t window_end = s->window_end[i];
    int last_step = t + 1 >= window_end;
    int32_t target = (last_step || dir == 0) ? 0
                     : dir * ((p->size_scale || p->size_cap)
                                  ? vp_env_scaled_contracts(size, p->max_position, vp_env_size_factor(p, i))
                                  : vp_env_contracts(size, p->max_position));
    int64_t nb = (int64_t)t + 1;
    const vp_env_bar* next = bars + nb;
    double o_px = next->open, hi = next->high, lo = next->low, c = next->close;
    /* the spread's shares of bar t+1; a buy pays buy_cost above the bar price, a sell sell_cost below */
    double buy = vp_env_buy_spread(p, next), sell = vp_env_sell_spread(p, next);
    double buy_cost = vp_env_add(p->slip, buy), sell_cost = vp_env_add(p->slip, sell);
    int32_t traded = 0;
    vp_env_fill_rec* fl = o->fill ? o->fill + i : (vp_env_fill_rec*)0;
    if (fl) {
        fl->qty[0] = fl->qty[1] = 0;
        fl->kind = VP_FILL_NONE;
        fl->cut = 0;
        fl->financing = 0.0;
        fl->price[0] = fl->price[1] = fl->slip[0] = fl->slip[1] = 0.0;
    }

    /* market order at bar t+1's open, the spread's share and slippage against the trader */
    int32_t delta = target - pos;
    if (delta != 0) {
        double cost = delta > 0 ? buy_cost : sell_cost;
        double px = delta > 0 ? vp_env_add(o_px, cost) : vp_env_sub(o_px, cost);
        /* an order that grows |position| (from flat, adding, the new side of a reversal) is cut to
         * the leverage limit at the decision's equity; adding is never cut below the position held */
        int32_t want = vp_env_absi(target), same = pos != 0 && (pos > 0) == (target > 0);
        if (target != 0 && (!same || want > vp_env_absi(pos))) {
            int32_t keep = same ? vp_env_absi(pos) : 0;
            int32_t cap = vp_env_leverage_cap(p, eq_prev, px, want);
            cap = cap > keep ? cap : keep;
            if (cap < want) {
                if (fl) fl->cut = want - cap;
                target = target > 0 ? cap : -cap;
                delta = target - pos;
            }
        }
        if (delta != 0) {
            cash = vp_env_fill(cash, delta, px, p);
            if (fl) {
                fl->qty[0] = delta;
                fl->price[0] = px;
                fl->slip[0] = cost;
            }
            traded += vp_env_absi(delta);
            if (target == 0) {
                entry = 0.0;
                tp = 0.0;
                sl = 0.0;
                held = 0;
            } else if (pos == 0 || (pos > 0) != (target > 0)) {
                /* a new position (from flat or a flip): levels from the ATR known at bar t */
                int32_t side = target > 0 ? 1 : -1;
                double atr = bars[t].atr;
                entry = px;
                held = 0;
                tp = vp_env_level(entry, side, k_tp, atr);
                sl = vp_env_level(entry, -side, k_sl, atr);
            } else if (vp_env_absi(target) > vp_env_absi(pos)) {
                /* added to the position: average entry; levels stay */
                entry = vp_env_div(vp_env_add(vp_env_mul((double)pos, entry), vp_env_mul((double)delta, px)),
                                   (double)target);
            }
            pos = target;
        }
    }

    /* resting orders against bar t+1's range on the side they trade on (a long's exits sell:
     * bar prices less the sell share; a short's buy: plus the buy share); the stop first, a gap
     * fills at the open; slippage on both */
    if (pos != 0) {
        double s_open = vp_env_exit_price(pos, o_px, buy, sell);
        double s_hi = vp_env_exit_price(pos, hi, buy, sell), s_lo = vp_env_exit_price(pos, lo, buy, sell);
        int stop_hit = pos > 0 ? (sl > 0.0 && s_lo <= sl) : (sl > 0.0 && s_hi >= sl);
        int tp_hit = pos > 0 ? (tp > 0.0 && s_hi >= tp) : (tp > 0.0 && s_lo <= tp);
        if (stop_hit || tp_hit) {
            /* a stop fills at its level or a worse gapped open, a take-profit at its level or a
             * better one */
            double lvl;
            if (stop_hit)
                lvl = pos > 0 ? (s_open < sl ? s_open : sl) : (s_open > sl ? s_open : sl);
            else
                lvl = pos > 0 ? (s_open > tp ? s_open : tp) : (s_open < tp ? s_open : tp);
            double px = pos > 0 ? vp_env_sub(lvl, p->slip) : vp_env_add(lvl, p->slip);
            cash = vp_env_fill(cash, -pos, px, p);
            traded += vp_env_absi(pos);
            if (fl) {
                fl->qty[1] = -pos;
                fl->price[1] = px;
                fl->slip[1] = pos > 0 ? sell_cost : buy_cost;
                fl->kind = stop_hit ? VP_FILL_STOP : VP_FILL_TAKE_PROFIT;
            }
            pos = 0;
            entry = 0.0;
            tp = 0.0;
            sl = 0.0;
            held = 0;
        }
    }
    if (pos != 0) held += 1;

    /* financing of the position held at bar t+1's close, from cash */
    if (pos != 0) {
        double rate = pos > 0 ? p->financing_long : p->financing_short;
        double fin = vp_env_mul(vp_env_mul(vp_env_mul((double)vp_env_absi(pos), c), p->multiplier), rate);
        cash = vp_env_sub(cash, fin);
        if (fl) fl->financing = fin;
    }

    /* mark to bar t+1's close on the side the position would exit on; reward and penalties */
    double mark = vp_env_exit_price(pos, c, buy, sell);
    double eq = vp_env_add(cash, vp_env_mul(vp_env_mul((double)pos, mark), p->multiplier));
    peak = eq > peak ? eq : peak;
    double dd = vp_env_div(vp_env_sub(peak, eq), peak);
    double r = vp_env_mul(vp_env_sub(eq, eq_prev), p->reward_per_cash);
    r = vp_env_sub(r, vp_env_mul(p->drawdown_penalty, dd));
    r = vp_env_sub(r, vp_env_mul(p->turnover_penalty, vp_env_mul((double)traded, p->inv_max_position)));
    int ended = last_step || eq < p->ruin_level;

    /* store, restart a finished episode, write outputs */
    float last = dir == 0 ? 0.0f : 0.25f * (float)(dir * (size + 1));
    s->t[i] = (int32_t)nb;
    s->position[i] = pos;
    s->bars_held[i] = held;
    s->cash[i] = cash;
    s->equity[i] = eq;
    s->peak[i] = peak;
    s->entry[i] = entry;
    s->take_profit[i] = tp;
    s->stop_loss[i] = sl;
    s->last_size[i] = last;
    vp_env_view v = {(int32_t)nb, window_end, pos, held, eq, peak, entry, tp, sl, last};
    if (ended) v = vp_env_begin_episode(p, s, i, s->episode[i] + 1u);
    if (o->reward) o->reward[i] = vp_env_f32(r);
    if (o->done) o->done[i] = ended ? 1.0f : 0.0f;
    vp_env_write_obs(p, bars, &v, o, i);
}

/* Philox streams of random actions start here, apart from the episode-start streams (env i). */
#define VP_ENV_ACTION_STREAM (1ull << 62)

/* Action of env i for draw `counter`: each branch from one Philox word, word x choices / 2^32. */
VP_HD void vp_env_random_action(uint64_t seed, uint64_t counter, int64_t i, int32_t* a /* [4] */) {
    vp_u32x4 r = vp_rng_draw(seed, VP_ENV_ACTION_STREAM + (uint64_t)i, counter);
    const vp_action_layout lay = vp_action_layout_env();
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) a[br] = (int32_t)(((uint64_t)r.v[br] * (uint64_t)lay.size[br]) >> 32);
}

#endif /* VP_ENV_STEP_H */
