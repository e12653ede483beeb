/* The rollout's entry point: argument checks, the windows, the state and log in backend
 * memory, the choice of the sequential path, and the result assembled from the log. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "env/env_params.h"
#include "rollout/rollout_impl.h"
#include "vulpes/ops.h"

vp_rollout_cfg vp_rollout_cfg_default(void) {
    vp_rollout_cfg c;
    memset(&c, 0, sizeof c);
    c.instrument = vp_instrument_default();
    c.episode_bars = vp_env_config_default().episode_bars;
    c.ruin_fraction = vp_env_config_default().ruin_fraction;
    c.n_windows = 1;
    c.encode_chunk = VP_ROLLOUT_CHUNK;
    c.fused = 1;
    c.next_decision = 1;
    vp_annual_given(252.0, &c.annual);
    return c;
}

const char* vp_exit_reason_name(vp_exit_reason r) {
    static const char* names[VP_EXIT_REASON_COUNT] = {"signal", "stop", "take_profit", "end", "ruin"};
    return (r >= 0 && r < VP_EXIT_REASON_COUNT) ? names[r] : "?";
}

void vp_rollout_result_free(vp_rollout_result* r) {
    if (!r) return;
    free(r->windows);
    free(r->bar);
    free(r->equity);
    free(r->cash);
    free(r->position);
    free(r->action);
    free(r->margin);
    free(r->next_q);
    free(r->next_scale);
    free(r->curve_time_ms);
    free(r->curve_equity);
    free(r->curve_benchmark);
    free(r->curve_flat);
    free(r->curve_drawdown);
    free(r->curve_position);
    free(r->trades);
    memset(r, 0, sizeof *r);
}

/* ---- checks --------------------------------------------------------------------------------- */

/* Checks the arguments of vp_rollout_run. */
static vp_status check_args(vp_backend* b, const vp_policy* pol, const vp_rollout_data* d, const vp_rollout_cfg* c) {
    const char* fn = "vp_rollout_run";
    VP_REQUIRE(b != NULL && d != NULL && c != NULL, VP_ERR_INVALID_ARG, "%s: backend, data or cfg is NULL", fn);
    VP_REQUIRE(d->bars != NULL && d->bars->n >= 2 && d->atr != NULL, VP_ERR_INVALID_ARG,
               "%s: bars (at least 2) or atr missing", fn);
    const vp_span s = d->span;
    VP_REQUIRE(s.begin >= 0 && s.end <= d->bars->n && s.end - s.begin >= 2 && s.end <= INT32_MAX, VP_ERR_INVALID_ARG,
               "%s: span [%lld, %lld) must hold at least 2 of the %lld bars", fn, (long long)s.begin,
               (long long)s.end, (long long)d->bars->n);
    const int64_t steps = s.end - s.begin - 1;
    VP_REQUIRE(c->n_windows >= 1 && c->n_windows <= steps, VP_ERR_INVALID_ARG,
               "%s: %lld windows for a span of %lld steps (1 .. %lld)", fn, (long long)c->n_windows,
               (long long)steps, (long long)steps);
    VP_REQUIRE(c->episode_bars >= 1 && c->encode_chunk >= 1, VP_ERR_INVALID_ARG,
               "%s: episode_bars %d and encode_chunk %lld must be >= 1", fn, (int)c->episode_bars,
               (long long)c->encode_chunk);
    VP_REQUIRE(c->annual.periods_per_year > 0 && isfinite(c->annual.periods_per_year), VP_ERR_INVALID_ARG,
               "%s: annualisation factor %g (> 0 required)", fn, c->annual.periods_per_year);
    VP_REQUIRE(isfinite(c->ruin_fraction) && c->ruin_fraction >= 0.0 && c->ruin_fraction < 1.0, VP_ERR_INVALID_ARG,
               "%s: ruin fraction %g (env.ruin_fraction: 0 <= f < 1 required)", fn, c->ruin_fraction);
    // the instrument by the environment's own check, as training's vp_env_init makes it
    VP_TRY(vp_env_instrument_check(fn, &c->instrument, c->annual.periods_per_year));
    if (c->forced_actions) return VP_OK;
    VP_REQUIRE(pol != NULL && d->features != NULL, VP_ERR_INVALID_ARG,
               "%s: policy or features is NULL (needed without forced actions)", fn);
    VP_TRY(vp_policy_check(pol));
    VP_REQUIRE(pol->backend == b, VP_ERR_INVALID_ARG, "%s: the policy computes on backend %s, the rollout runs on %s",
               fn, vp_backend_name(pol->backend), vp_backend_name(b));
    const vp_tensor* f = d->features;
    VP_REQUIRE(f->data != NULL && f->dtype == VP_F32 && f->ndim == 2 && f->shape[1] == pol->n_features &&
                   f->shape[0] >= s.end,
               VP_ERR_SHAPE, "%s: features must be f32 [>= %lld, %d] (a row for every bar of the span)", fn,
               (long long)s.end, pol->n_features);
    VP_REQUIRE(vp_backend_can_read(b, f->mem) && (pol->params == NULL || vp_backend_can_read(b, pol->params->mem)),
               VP_ERR_DEVICE, "%s: features or params live where backend %s cannot read", fn, vp_backend_name(b));
    return VP_OK;
}

/* The kernels' constants: the step's (ruin off, no reward shaping) and the heads' layout. */
static void make_dims(vp_ro_run* r) {
    vp_ro_dims* d = &r->dims;
    memset(d, 0, sizeof *d);
    // the environment's constants: reward = equity change / initial equity, no ruin, no restart
    const vp_env_config ec = {r->cfg->episode_bars, 0.0, 1.0, 0.0, 0.0, 0};
    d->env = vp_env_params_make(&r->cfg->instrument, &ec, r->cfg->annual.periods_per_year);
    d->env.ruin_level = -INFINITY;
    d->env.n_starts = 1;
    d->n_windows = r->cfg->n_windows;
    d->n_rows = r->n_steps;
    d->hidden = r->pol ? r->pol->enc_dim : 0;
    d->forced = r->cfg->forced_actions != NULL;
    d->layout = vp_action_layout_env();
}

/* ---- memory ---------------------------------------------------------------------------------- */

/* One array of a block: where its pointer goes, element size and count. */
typedef struct slot {
    void** ptr;
    size_t size;
    int64_t count;
} slot;

/* Bytes of the slots, each 256-byte aligned; with base set, also places the pointers. */
static size_t place(slot* s, int n, char* base) {
    size_t off = 0;
    for (int i = 0; i < n; ++i) {
        if (base) *s[i].ptr = base + off;
        off += ((size_t)s[i].count * s[i].size + 255u) / 256u * 256u;
    }
    return off;
}

/* The slots of a state [N], window table [N] and log [P] (and, on the backend, the scratch,
 * the forced table and the counter) into out[]; returns their number. */
static int state_slots(vp_env_state* st, vp_ro_windows* w, vp_ro_records* rec, int64_t N, int64_t P, slot* out) {
    int n = 0;
#define S(p, type, cnt) out[n++] = (slot){(void**)(void*)&(p), sizeof(type), (cnt)}
    S(st->t, int32_t, N), S(st->window_end, int32_t, N), S(st->position, int32_t, N), S(st->bars_held, int32_t, N);
    S(st->episode, uint32_t, N), S(st->cash, double, N), S(st->equity, double, N), S(st->peak, double, N);
    S(st->entry, double, N), S(st->take_profit, double, N), S(st->stop_loss, double, N), S(st->last_size, float, N);
    S(w->steps, int32_t, N), S(w->offset, int32_t, N), S(w->last, int32_t, N), S(w->alive, int32_t, N);
    S(w->ruin, int32_t, N), S(w->fill, vp_env_fill_rec, N), S(w->reward, float, N);
    S(rec->position, int32_t, P), S(rec->bars_held, int32_t, P), S(rec->action, int32_t, 4 * P);
    S(rec->cash, double, P), S(rec->equity, double, P), S(rec->entry, double, P);
    S(rec->take_profit, double, P), S(rec->stop_loss, double, P), S(rec->margin, double, P);
    S(rec->fill, vp_env_fill_rec, P);
#undef S
    return n;
}

/* Host and backend blocks; the windows' table and initial state filled and uploaded. */
static vp_status alloc_run(vp_ro_run* r) {
    const int64_t N = r->cfg->n_windows, P = r->n_points;
    slot s[32];
    // host: state, windows, log
    int n = state_slots(&r->h_state, &r->h_win, &r->h_rec, N, P, s);
    size_t bytes = place(s, n, NULL);
    r->host = calloc(1, bytes);
    VP_REQUIRE(r->host != NULL, VP_ERR_OOM, "vp_rollout_run: %zu bytes of host memory", bytes);
    place(s, n, (char*)r->host);
    // backend: the same, the step's action scratch, the forced table and the counter
    int32_t* counter = NULL;
    n = state_slots(&r->state, &r->win, &r->rec, N, P, s);
    s[n++] = (slot){(void**)(void*)&r->scratch, sizeof(int32_t), 4 * N};
    s[n++] = (slot){(void**)(void*)&counter, sizeof(int32_t), 1};
    if (r->cfg->forced_actions) s[n++] = (slot){(void**)(void*)&r->forced, sizeof(int32_t), 4 * r->n_steps};
    vp_mem mem = vp_backend_native_mem(r->b);
    VP_TRY(vp_buffer_alloc(r->b, mem, place(s, n, NULL), &r->dev));
    place(s, n, (char*)r->dev.dev);
    r->counter = vp_tensor_1d(counter, VP_I32, mem, 1);

    // windows: s_w = w steps / N; window w decides at s_w .. s_{w+1} - 1, its last point s_{w+1}
    for (int64_t w = 0; w < N; ++w) {
        int64_t s0 = w * r->n_steps / N, s1 = (w + 1) * r->n_steps / N;
        r->h_win.steps[w] = (int32_t)(s1 - s0);
        r->h_win.offset[w] = (int32_t)(s0 + w);
        r->h_win.last[w] = (int32_t)s1;
        r->h_win.alive[w] = 1;
        r->h_win.ruin[w] = -1;
        if (s1 - s0 > r->max_steps) r->max_steps = (int32_t)(s1 - s0);
        // flat at the initial equity; the stored window end lies one bar beyond the last
        r->h_state.t[w] = (int32_t)s0;
        r->h_state.window_end[w] = (int32_t)(s1 + 1);
        r->h_state.cash[w] = r->h_state.equity[w] = r->h_state.peak[w] = r->cfg->instrument.initial_equity;
    }
    // the host image of state and windows (contiguous, same layout) goes up in one copy
    size_t head = (size_t)((char*)r->h_rec.position - (char*)r->host);
    vp_tensor dst = vp_tensor_1d(r->dev.dev, VP_I32, mem, (int64_t)(head / 4));
    VP_TRY(vp_upload(r->b, &dst, r->host, head));
    if (r->forced) {
        vp_tensor ft = vp_tensor_2d(r->forced, VP_I32, mem, r->n_steps, 4);
        VP_TRY(vp_upload(r->b, &ft, r->cfg->forced_actions, sizeof(int32_t) * 4 * (size_t)r->n_steps));
    }
    return vp_fill_i32(r->b, &r->counter, 0);
}

/* ---- results --------------------------------------------------------------------------------- */

/* Downloads the log, the windows' alive and ruin flags and their final state (over the
 * initial one), and writes every window's first point. */
static vp_status download(vp_ro_run* r) {
    const int64_t N = r->cfg->n_windows;
    // the log's arrays follow state and windows in both blocks, in the same layout
    size_t head = (size_t)((char*)r->h_rec.position - (char*)r->host);
    size_t bytes = (size_t)((char*)r->h_rec.fill - (char*)r->h_rec.position) + sizeof(vp_env_fill_rec) * (size_t)r->n_points;
    vp_tensor src = vp_tensor_1d((char*)r->dev.dev + head, VP_I32, r->dev.mem, (int64_t)(bytes / 4));
    VP_TRY(vp_download(r->b, r->h_rec.position, &src, bytes));
    vp_tensor alive = vp_tensor_1d(r->win.alive, VP_I32, r->dev.mem, N);
    VP_TRY(vp_download(r->b, r->h_win.alive, &alive, sizeof(int32_t) * (size_t)N));
    vp_tensor ruin = vp_tensor_1d(r->win.ruin, VP_I32, r->dev.mem, N);
    VP_TRY(vp_download(r->b, r->h_win.ruin, &ruin, sizeof(int32_t) * (size_t)N));
    // the state arrays come first in both blocks, in the same layout
    size_t state_bytes = (size_t)((char*)r->h_win.steps - (char*)r->host);
    vp_tensor st = vp_tensor_1d(r->dev.dev, VP_I32, r->dev.mem, (int64_t)(state_bytes / 4));
    VP_TRY(vp_download(r->b, r->host, &st, state_bytes));
    for (int64_t w = 0; w < N; ++w) {
        int64_t p = r->h_win.offset[w];
        r->h_rec.position[p] = r->h_rec.bars_held[p] = 0;
        r->h_rec.cash[p] = r->h_rec.equity[p] = r->cfg->instrument.initial_equity;
        r->h_rec.entry[p] = r->h_rec.take_profit[p] = r->h_rec.stop_loss[p] = 0.0;
    }
    return VP_OK;
}

/* The market's bars in host memory: the backend's own on the CPU, else a downloaded copy. */
static vp_status host_bars(vp_ro_run* r) {
    if (vp_backend_native_mem(r->b) == VP_MEM_HOST) {
        r->h_bars = r->market.bars;
        return VP_OK;
    }
    const size_t bytes = sizeof(vp_env_bar) * (size_t)r->market.n_bars;
    r->h_bars_own = (vp_env_bar*)malloc(bytes);
    VP_REQUIRE(r->h_bars_own != NULL, VP_ERR_OOM, "vp_rollout_run: host copy of %lld bars",
               (long long)r->market.n_bars);
    vp_tensor src = vp_tensor_1d((void*)r->market.bars, VP_I32, r->market.storage.mem, (int64_t)(bytes / 4));
    VP_TRY(vp_download(r->b, r->h_bars_own, &src, bytes));
    r->h_bars = r->h_bars_own;
    return VP_OK;
}

/* The windows and their points (a ruined window ends at the close after its ruin close, or
 * at the ruin close when that was its last), their margins and ruins. */
static vp_status collect_points(const vp_ro_run* r, vp_rollout_result* out) {
    const int64_t N = r->cfg->n_windows;
    const vp_ro_records* h = &r->h_rec;
    out->windows = (vp_rollout_window*)calloc((size_t)N, sizeof(vp_rollout_window));
    VP_REQUIRE(out->windows != NULL, VP_ERR_OOM, "vp_rollout_run: window table");
    int64_t total = 0;
    for (int64_t w = 0; w < N; ++w) {
        vp_rollout_window* x = &out->windows[w];
        const int64_t p0 = r->h_win.offset[w], steps = r->h_win.steps[w], k_ruin = r->h_win.ruin[w];
        const int64_t n = k_ruin >= 0 && k_ruin + 3 < steps + 1 ? k_ruin + 3 : steps + 1;
        x->begin = r->a + (p0 - w);
        x->last = x->begin + n - 1;
        x->offset = total;
        x->n_points = n;
        vp_ro_ruin_of(r, w, r->h_win.ruin[w], h->equity + p0, n, &x->ruin);
        x->ruined = x->ruin.ruined;
        if (x->ruined && !out->n_ruined++) out->ruin = x->ruin;
        total += n;
    }
    out->n_windows = N;
    out->n_points = total;
    out->bar = (int64_t*)malloc(sizeof(int64_t) * (size_t)total);
    out->equity = (double*)malloc(sizeof(double) * (size_t)total);
    out->cash = (double*)malloc(sizeof(double) * (size_t)total);
    out->position = (int32_t*)malloc(sizeof(int32_t) * (size_t)total);
    out->action = (int32_t*)malloc(sizeof(int32_t) * 4 * (size_t)total);
    out->margin = (double*)malloc(sizeof(double) * (size_t)total);
    VP_REQUIRE(out->bar && out->equity && out->cash && out->position && out->action && out->margin, VP_ERR_OOM,
               "vp_rollout_run: %lld points", (long long)total);
    for (int64_t w = 0; w < N; ++w) {
        const vp_rollout_window* x = &out->windows[w];
        int64_t p0 = r->h_win.offset[w];
        for (int64_t k = 0; k < x->n_points; ++k) {
            int64_t o = x->offset + k, p = p0 + k;
            const int decided = k + 1 < x->n_points;
            out->bar[o] = x->begin + k;
            out->equity[o] = h->equity[p];
            out->cash[o] = h->cash[p];
            out->position[o] = h->position[p];
            for (int br = 0; br < VP_ENV_BRANCHES; ++br) out->action[o * 4 + br] = decided ? h->action[p * 4 + br] : -1;
            out->margin[o] = decided && h->margin[p] != VP_RO_NO_MARGIN ? h->margin[p] : NAN;
        }
    }
    return VP_OK;
}

/* Frees the run's memory. */
static void run_free(vp_ro_run* r) {
    vp_policy_work_free(r->pol, r->mem_work);
    vp_env_market_free(&r->market);
    if (r->dev.dev) vp_buffer_free(r->b, &r->dev);
    free(r->host);
    free(r->h_bars_own);
}

vp_status vp_rollout_run(vp_backend* b, const vp_policy* pol, const vp_rollout_data* data, const vp_rollout_cfg* cfg,
                         vp_rollout_result* out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_rollout_run: out is NULL");
    memset(out, 0, sizeof *out);
    VP_TRY(check_args(b, pol, data, cfg));
    vp_ro_run r;
    memset(&r, 0, sizeof r);
    r.b = b;
    r.pol = cfg->forced_actions ? NULL : pol;
    // the DQN network's policy can take the fused CUDA path, which reads the head weights
    if (r.pol && r.pol->ops == &vp_model_policy_ops) {
        r.m = (const vp_model*)r.pol->impl;
        r.params = r.pol->params;
    }
    r.data = data;
    r.cfg = cfg;
    r.a = data->span.begin;
    r.n_steps = data->span.end - data->span.begin - 1;
    r.n_points = r.n_steps + cfg->n_windows;
    make_dims(&r);
    r.dims.ruin_level = out->ruin_level = cfg->ruin_fraction * cfg->instrument.initial_equity;
    out->span = data->span;

    // The span's bars as the environment's market: bars a .. b-1 only.
    const vp_bars* bars = data->bars;
    const int64_t a = r.a, n = data->span.end - a;
    vp_env_market_desc md = {n, bars->open + a, bars->high + a, bars->low + a, bars->close + a, data->atr + a,
                             0, n, NULL, bars->spread ? bars->spread + a : NULL,
                             vp_instrument_spread(&cfg->instrument), cfg->annual.periods_per_year};
    vp_status s = vp_env_market_init(&r.market, b, &md);
    if (s == VP_OK) s = alloc_run(&r);

    // The sequential part: the fused kernel on CUDA when it fits, else the op path.
    if (s == VP_OK) {
        const int fused = r.m != NULL && cfg->fused && vp_ro_fused_fits(&r);
        out->path = fused ? "fused" : (vp_backend_native_mem(b) == VP_MEM_HOST ? "cpu" : "ops");
        s = fused ? vp_ro_run_fused(&r, &out->encode_s, &out->sequential_s)
                  : vp_ro_run_ops(&r, &out->encode_s, &out->sequential_s);
    }
    if (s == VP_OK) s = download(&r);
    if (s == VP_OK) s = host_bars(&r);
    if (s == VP_OK) s = collect_points(&r, out);
    if (s == VP_OK) s = vp_ro_next_decisions(&r, out);
    if (s == VP_OK) s = vp_ro_trades_build(&r, out);
    if (s == VP_OK) s = vp_ro_curve_build(&r, out);
    run_free(&r);
    if (s != VP_OK)
        return vp_error_context(s, "backtest of bars [%lld, %lld)", (long long)data->span.begin,
                                (long long)data->span.end);
    return VP_OK;
}
