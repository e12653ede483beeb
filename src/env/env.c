/* The environment's public entry points: argument checks, the state allocation, and the
 * kernels of the backend's kind (the CPU loop or the CUDA launchers). */
#include <math.h>
#include <string.h>

#include "env/env_params.h"
#include "env_impl.h"
#include "vulpes/config.h"

/* The state fields, in storage order: name and element type (one list drives allocation,
 * the host transfers and the byte count). */
#define VP_ENV_STATE_FIELDS(X)                                                               \
    X(t, int32_t) X(window_end, int32_t) X(position, int32_t) X(bars_held, int32_t)        \
    X(episode, uint32_t) X(cash, double) X(equity, double) X(peak, double) X(entry, double) \
    X(take_profit, double) X(stop_loss, double) X(last_size, float)

#define VP_ENV_COUNT_FIELD(name, type) +1
enum { VP_ENV_N_FIELDS = 0 VP_ENV_STATE_FIELDS(VP_ENV_COUNT_FIELD) };

/* The fields of a state as (pointer, element size, name) triples. */
static void state_fields(const vp_env_state* s, void* ptr[VP_ENV_N_FIELDS], size_t size[VP_ENV_N_FIELDS],
                         const char* name[VP_ENV_N_FIELDS]) {
    int k = 0;
#define VP_ENV_LIST_FIELD(f, type) ptr[k] = (void*)s->f, size[k] = sizeof(type), name[k] = #f, ++k;
    VP_ENV_STATE_FIELDS(VP_ENV_LIST_FIELD)
#undef VP_ENV_LIST_FIELD
}

vp_instrument vp_instrument_from_config(const vp_config* c) {
    vp_instrument i;
    memset(&i, 0, sizeof i);
    i.tick_size = c->instrument.tick_size;
    i.multiplier = c->instrument.multiplier;
    i.commission = c->instrument.commission;
    i.slippage_ticks = c->instrument.slippage_ticks;
    /* whole contracts; a count beyond int32 stays out of range so that vp_env_init refuses it */
    const double mp = c->instrument.max_position;
    i.max_position = mp >= 1.0 ? (mp < 2147483647.0 ? (int32_t)mp : INT32_MAX) : 0;
    i.initial_equity = c->instrument.initial_equity;
    i.spread_ticks = c->instrument.spread_ticks;
    i.price_side = (vp_price_side)c->data.price_side;
    i.financing_long = c->instrument.financing_long;
    i.financing_short = c->instrument.financing_short;
    i.max_leverage = c->instrument.max_leverage;
    return i;
}

/* The defaults are the config table's (instrument.*, env.*, run.seed): one place for each number. */
vp_instrument vp_instrument_default(void) {
    vp_config c;
    vp_config_defaults(&c);
    return vp_instrument_from_config(&c);
}

double vp_instrument_spread(const vp_instrument* in) { return in->spread_ticks * in->tick_size; }

vp_env_config vp_env_config_default(void) {
    vp_config c;
    vp_config_defaults(&c);
    vp_env_config e = {(int32_t)c.env.episode_bars, c.env.ruin_fraction, c.env.reward_scale,
                       c.env.drawdown_penalty, c.env.turnover_penalty, (uint64_t)c.run.seed};
    return e;
}

size_t vp_env_bytes_per_step(void) {
    /* state: every field read except episode and last_size (read only at an episode's end),
     * every field written except window_end and episode (written only at an episode's end) */
    size_t state_rd = 4 * sizeof(int32_t) + 6 * sizeof(double);
    size_t state_wr = 3 * sizeof(int32_t) + 6 * sizeof(double) + sizeof(float);
    /* the action, the outputs (reward, done, obs_bar, portfolio) and the bars read:
     * open, high, low, close and spread of t+1, ATR of t and of t+1 */
    size_t io = VP_ENV_BRANCHES * sizeof(int32_t) + 2 * sizeof(float) + sizeof(int32_t) +
                VP_ENV_PORTFOLIO * sizeof(float);
    size_t bars = 7 * sizeof(double);
    return state_rd + state_wr + io + bars;
}

/* ---- checks and dispatch --------------------------------------------------------------------- */

/* The step's constants from the instrument, config and market. */
static vp_env_params make_params(const vp_env* e) {
    vp_env_params p = vp_env_params_make(&e->instrument, &e->config, e->market->bars_per_year);
    p.begin = e->market->begin;
    p.n_starts = e->market->end - e->market->begin - e->config.episode_bars;
    p.size_scale = e->size_scale;
    p.size_cap = e->size_cap;
    p.first_env = e->first_env;
    return p;
}

/* The kernel table of a backend's kind. */
static vp_status kernels_for(const char* fn, const vp_backend* b, const vp_env_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "environment kernels", b, &vp_env_cpu, VP_KERNELS_CUDA(vp_env_cuda), &t);
    *out = (const vp_env_kernels*)t;
    return s;
}

/* Checks that an env is initialised. */
static vp_status check_env(const char* fn, const vp_env* e) {
    VP_REQUIRE(e != NULL && e->backend != NULL && e->storage.dev != NULL, VP_ERR_STATE,
               "%s: environment is NULL or not initialised", fn);
    return VP_OK;
}

/* Runs an op over every env on the env's backend (fn names the call in messages). */
static vp_status dispatch(const char* fn, vp_env* e, vp_env_op op, const int32_t* actions, const vp_env_outs* o) {
    const vp_env_kernels* k = NULL;
    VP_TRY(kernels_for(fn, e->backend, &k));
    vp_env_params p = make_params(e);
    return k->run(e->backend, op, &p, e->market->bars, &e->state, actions, o, e->n_envs);
}

/* Checks instrument and config values, and that the span holds one episode plus its closing bar. */
static vp_status check_settings(const vp_instrument* in, const vp_env_config* c, const vp_env_market* m) {
    VP_TRY(vp_env_instrument_check("vp_env_init", in, m->bars_per_year));
    VP_REQUIRE(c->episode_bars >= 1, VP_ERR_INVALID_ARG, "vp_env_init: episode_bars %d (>= 1 required)",
               (int)c->episode_bars);
    VP_REQUIRE(isfinite(c->ruin_fraction) && c->ruin_fraction >= 0 && c->ruin_fraction < 1, VP_ERR_INVALID_ARG,
               "vp_env_init: ruin_fraction %g (0 <= f < 1 required)", c->ruin_fraction);
    VP_REQUIRE(isfinite(c->reward_scale), VP_ERR_INVALID_ARG, "vp_env_init: reward_scale %g is not finite",
               c->reward_scale);
    VP_REQUIRE(isfinite(c->drawdown_penalty) && c->drawdown_penalty >= 0, VP_ERR_INVALID_ARG,
               "vp_env_init: drawdown_penalty %g (>= 0 required)", c->drawdown_penalty);
    VP_REQUIRE(isfinite(c->turnover_penalty) && c->turnover_penalty >= 0, VP_ERR_INVALID_ARG,
               "vp_env_init: turnover_penalty %g (>= 0 required)", c->turnover_penalty);
    VP_REQUIRE(m->end - m->begin >= (int64_t)c->episode_bars + 1, VP_ERR_INVALID_ARG,
               "vp_env_init: span [%lld, %lld) has %lld bars; an episode of %d bars needs %d",
               (long long)m->begin, (long long)m->end, (long long)(m->end - m->begin), (int)c->episode_bars,
               (int)c->episode_bars + 1);
    return VP_OK;
}

/* ---- lifecycle ------------------------------------------------------------------------------ */

vp_status vp_env_init(vp_env* e, vp_backend* b, const vp_env_market* m, const vp_instrument* inst,
                      const vp_env_config* cfg, int64_t n_envs) {
    VP_REQUIRE(e != NULL && b != NULL && m != NULL && inst != NULL && cfg != NULL, VP_ERR_INVALID_ARG,
               "vp_env_init: env, backend, market, instrument or config is NULL");
    memset(e, 0, sizeof *e);
    VP_REQUIRE(m->backend == b && m->bars != NULL, VP_ERR_INVALID_ARG,
               "vp_env_init: the market is not initialised on backend %s", vp_backend_name(b));
    VP_REQUIRE(n_envs >= 1 && n_envs <= INT32_MAX, VP_ERR_INVALID_ARG, "vp_env_init: n_envs %lld (1 .. 2^31-1)",
               (long long)n_envs);
    VP_TRY(check_settings(inst, cfg, m));

    /* one allocation: every field an aligned [n_envs] array */
    vp_env_state s;
    void* ptr[VP_ENV_N_FIELDS];
    size_t size[VP_ENV_N_FIELDS], off[VP_ENV_N_FIELDS], total = 0;
    const char* name[VP_ENV_N_FIELDS];
    memset(&s, 0, sizeof s);
    state_fields(&s, ptr, size, name);
    for (int k = 0; k < VP_ENV_N_FIELDS; ++k) {
        off[k] = total;
        total += ((size_t)n_envs * size[k] + 255u) / 256u * 256u;
    }
    VP_TRY(vp_buffer_alloc(b, vp_backend_native_mem(b), total, &e->storage));
    char* base = (char*)e->storage.dev;
    int k = 0;
#define VP_ENV_PLACE_FIELD(f, type) e->state.f = (type*)(void*)(base + off[k++]);
    VP_ENV_STATE_FIELDS(VP_ENV_PLACE_FIELD)
#undef VP_ENV_PLACE_FIELD

    e->backend = b;
    e->market = m;
    e->instrument = *inst;
    e->config = *cfg;
    e->n_envs = n_envs;
    vp_status st = vp_env_reset(e, NULL, NULL);
    if (st != VP_OK) vp_env_free(e);
    return st;
}

void vp_env_free(vp_env* e) {
    if (!e) return;
    if (e->backend) vp_buffer_free(e->backend, &e->storage);
    memset(e, 0, sizeof *e);
}

/* Checks the optional observation outputs and fills the output struct. */
static vp_status obs_outs(const char* fn, const vp_env* e, vp_tensor* obs_bar, vp_tensor* portfolio, vp_env_outs* o) {
    memset(o, 0, sizeof *o);
    if (obs_bar) {
        VP_TRY(vp_tensor_check_rows(fn, "obs_bar", e->backend, obs_bar, VP_I32, e->n_envs, 1));
        o->obs_bar = (int32_t*)obs_bar->data;
    }
    if (portfolio) {
        VP_TRY(vp_tensor_check_rows(fn, "portfolio", e->backend, portfolio, VP_F32, e->n_envs, VP_ENV_PORTFOLIO));
        o->portfolio = (float*)portfolio->data;
    }
    return VP_OK;
}

vp_status vp_env_reset(vp_env* e, vp_tensor* obs_bar, vp_tensor* portfolio) {
    VP_TRY(check_env("vp_env_reset", e));
    vp_env_outs o;
    VP_TRY(obs_outs("vp_env_reset", e, obs_bar, portfolio, &o));
    return dispatch("vp_env_reset", e, VP_ENV_OP_RESET, NULL, &o);
}

vp_status vp_env_observe(vp_env* e, vp_tensor* obs_bar, vp_tensor* portfolio) {
    VP_TRY(check_env("vp_env_observe", e));
    VP_REQUIRE(obs_bar != NULL && portfolio != NULL, VP_ERR_INVALID_ARG, "vp_env_observe: obs_bar or portfolio is "
               "NULL");
    vp_env_outs o;
    VP_TRY(obs_outs("vp_env_observe", e, obs_bar, portfolio, &o));
    return dispatch("vp_env_observe", e, VP_ENV_OP_OBSERVE, NULL, &o);
}

/* ---- step ------------------------------------------------------------------------------------ */

vp_status vp_env_step(vp_env* e, const vp_tensor* actions, vp_tensor* reward, vp_tensor* done,
                      vp_tensor* obs_bar, vp_tensor* portfolio) {
    const char* fn = "vp_env_step";
    VP_TRY(check_env(fn, e));
    VP_TRY(vp_tensor_check_rows(fn, "actions", e->backend, actions, VP_I32, e->n_envs, VP_ENV_BRANCHES));
    VP_TRY(vp_tensor_check_rows(fn, "reward", e->backend, reward, VP_F32, e->n_envs, 1));
    VP_TRY(vp_tensor_check_rows(fn, "done", e->backend, done, VP_F32, e->n_envs, 1));
    vp_env_outs o;
    VP_REQUIRE(obs_bar != NULL && portfolio != NULL, VP_ERR_INVALID_ARG, "%s: obs_bar or portfolio is NULL", fn);
    VP_TRY(obs_outs(fn, e, obs_bar, portfolio, &o));
    o.reward = (float*)reward->data;
    o.done = (float*)done->data;
    return dispatch(fn, e, VP_ENV_OP_STEP, (const int32_t*)actions->data, &o);
}

vp_status vp_env_random_actions(vp_backend* b, uint64_t seed, uint64_t counter, vp_tensor* actions) {
    const char* fn = "vp_env_random_actions";
    const vp_env_kernels* k = NULL;
    VP_TRY(kernels_for(fn, b, &k));
    VP_TRY(vp_tensor_check_min_rows(fn, "actions", b, actions, VP_I32, 1, VP_ENV_BRANCHES));
    return k->random_actions(b, seed, counter, (int32_t*)actions->data, vp_tensor_rows(actions));
}

/* ---- state transfers (checkpoints and tests) -------------------------------------------------- */

/* Copies every field between the env's state and host arrays (to_host selects the direction). */
static vp_status transfer_state(const vp_env* e, const vp_env_state* host, int to_host) {
    void *dptr[VP_ENV_N_FIELDS], *hptr[VP_ENV_N_FIELDS];
    size_t size[VP_ENV_N_FIELDS];
    const char* name[VP_ENV_N_FIELDS];
    state_fields(&e->state, dptr, size, name);
    state_fields(host, hptr, size, name);
    vp_mem mem = e->storage.mem;
    for (int k = 0; k < VP_ENV_N_FIELDS; ++k) {
        VP_REQUIRE(hptr[k] != NULL, VP_ERR_INVALID_ARG, "vp_env_state_%s: host array %s is NULL",
                   to_host ? "get" : "set", name[k]);
        size_t bytes = (size_t)e->n_envs * size[k];
        vp_tensor view = vp_tensor_1d(dptr[k], VP_I32, mem, (int64_t)(bytes / 4));
        vp_status s = to_host ? vp_download(e->backend, hptr[k], &view, bytes)
                              : vp_upload(e->backend, &view, hptr[k], bytes);
        if (s != VP_OK) return vp_error_context(s, "vp_env_state_%s: field %s", to_host ? "get" : "set", name[k]);
    }
    return VP_OK;
}

vp_status vp_env_state_get(const vp_env* e, vp_env_state* host) {
    VP_TRY(check_env("vp_env_state_get", e));
    VP_REQUIRE(host != NULL, VP_ERR_INVALID_ARG, "vp_env_state_get: host state is NULL");
    return transfer_state(e, host, 1);
}

/* Checks one money or price field of env i: finite, and > 0 (peak), >= 0 (price levels) or any. */
static vp_status check_money(int64_t i, const char* name, double v, int sign) {
    VP_REQUIRE(isfinite(v) && (sign == 0 || (sign > 0 ? v > 0 : v >= 0)), VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has %s %g (must be finite%s)", (long long)i, name, v,
               sign == 0 ? "" : (sign > 0 ? " and > 0" : " and >= 0"));
    return VP_OK;
}

/* Checks one env of a host state: bars inside the span, a position within max_position (and
 * nothing open when flat), bars held since the span's start at most, finite money with the
 * peak at or above the equity, price levels >= 0, a last size of k/4 with |k| <= 4. A window
 * may be longer than an episode (a validation window; the portfolio vector caps time left). */
static vp_status check_env_state(const vp_env* e, const vp_env_state* h, int64_t i) {
    const vp_env_market* m = e->market;
    const int32_t t = h->t[i], w = h->window_end[i], pos = h->position[i], held = h->bars_held[i];
    const int32_t max = e->instrument.max_position;
    VP_REQUIRE(t >= m->begin && t < w && w < m->end, VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has t %d, window_end %d (need begin %lld <= t < window_end < end %lld)",
               (long long)i, (int)t, (int)w, (long long)m->begin, (long long)m->end);
    VP_REQUIRE(pos >= -max && pos <= max, VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has position %d (allowed -%d .. %d, max_position)", (long long)i, (int)pos,
               (int)max, (int)max);
    VP_REQUIRE(held >= 0 && held <= t - m->begin && (pos != 0 || held == 0), VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has bars_held %d at position %d (allowed 0 .. t - begin = %lld, 0 when flat)",
               (long long)i, (int)held, (int)pos, (long long)(t - m->begin));
    VP_TRY(check_money(i, "cash", h->cash[i], 0));
    VP_TRY(check_money(i, "equity", h->equity[i], 0));
    VP_TRY(check_money(i, "peak", h->peak[i], 1));
    VP_REQUIRE(h->peak[i] >= h->equity[i], VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has peak %g below its equity %g (the peak is the episode's highest equity)",
               (long long)i, h->peak[i], h->equity[i]);
    VP_TRY(check_money(i, "entry", h->entry[i], -1));
    VP_TRY(check_money(i, "take_profit", h->take_profit[i], -1));
    VP_TRY(check_money(i, "stop_loss", h->stop_loss[i], -1));
    VP_REQUIRE(pos != 0 || (h->entry[i] == 0 && h->take_profit[i] == 0 && h->stop_loss[i] == 0), VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld is flat with entry %g, take_profit %g, stop_loss %g (all 0 when flat)",
               (long long)i, h->entry[i], h->take_profit[i], h->stop_loss[i]);
    const float ls = h->last_size[i], q = ls * 4.0f;
    VP_REQUIRE(fabsf(ls) <= 1.0f && q == (float)(int)q, VP_ERR_INVALID_ARG,
               "vp_env_state_set: env %lld has last_size %g (allowed k/4 for k in -4 .. 4)", (long long)i, (double)ls);
    return VP_OK;
}

vp_status vp_env_state_set(vp_env* e, const vp_env_state* host) {
    VP_TRY(check_env("vp_env_state_set", e));
    VP_REQUIRE(host != NULL, VP_ERR_INVALID_ARG, "vp_env_state_set: host state is NULL");
    void* hptr[VP_ENV_N_FIELDS];
    size_t size[VP_ENV_N_FIELDS];
    const char* name[VP_ENV_N_FIELDS];
    state_fields(host, hptr, size, name);
    for (int k = 0; k < VP_ENV_N_FIELDS; ++k)
        VP_REQUIRE(hptr[k] != NULL, VP_ERR_INVALID_ARG, "vp_env_state_set: host array %s is NULL", name[k]);
    for (int64_t i = 0; i < e->n_envs; ++i) VP_TRY(check_env_state(e, host, i));
    return transfer_state(e, host, 0);
}
