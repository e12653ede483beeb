/* Validation: a segment-parallel greedy backtest of one span. N windows of L decisions,
 * consecutive in time, each starting flat, step side by side through the env (the same
 * cost model as training, no reward penalties, epsilon 0); every step's reward, position
 * and done flag go into a per-step log in backend memory that the host reads once at the
 * end, stitching the windows into one per-bar return series for the metrics. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/ops.h"
#include "vulpes/train.h"

struct vp_validator {
    vp_backend* backend;      /* where it runs */
    const vp_train_data* data; /* bars (host) for the baselines */
    vp_instrument inst;       /* the cost model */
    vp_env_market market;     /* the span */
    vp_env env;               /* N envs, episodes of L bars */
    vp_collector coll;        /* greedy policy, no replay */
    int64_t n, L, begin;      /* windows, decisions per window, first decision bar */
    vp_buffer log_buf;        /* storage of the logs */
    vp_tensor rew_log;        /* [L, N] f32 reward (equity change / initial equity) */
    vp_tensor pos_log;        /* [L, N] i32 position after each step */
    vp_tensor done_log;       /* [L, N] f32 episode-end flag */
    void* host;               /* one host block: the start states and the downloaded logs */
    vp_env_state start;       /* [N] host arrays: each window's first state */
    float* rew;               /* [L, N] host */
    int32_t* pos;             /* [L, N] host */
    float* done;              /* [L, N] host */
    double* ret;              /* [N L] stitched returns */
    double* eq;               /* [L + 1] one window's equity */
};

/* Host arrays of the start states and the logs, in one block. */
static vp_status host_alloc(vp_validator* v) {
    const size_t N = (size_t)v->n, NL = (size_t)(v->n * v->L);
    size_t bytes = N * (5 * 4 + 6 * 8 + 4) + NL * (4 + 4 + 4 + 8) + (size_t)(v->L + 1) * 8 + 64;
    char* p = (char*)calloc(1, bytes);
    VP_REQUIRE(p != NULL, VP_ERR_OOM, "vp_validator_init: out of host memory (%zu bytes)", bytes);
    v->host = p;
    // doubles first, so every array is aligned
    v->start.cash = (double*)(void*)p, p += N * 8;
    v->start.equity = (double*)(void*)p, p += N * 8;
    v->start.peak = (double*)(void*)p, p += N * 8;
    v->start.entry = (double*)(void*)p, p += N * 8;
    v->start.take_profit = (double*)(void*)p, p += N * 8;
    v->start.stop_loss = (double*)(void*)p, p += N * 8;
    v->ret = (double*)(void*)p, p += NL * 8;
    v->eq = (double*)(void*)p, p += (size_t)(v->L + 1) * 8;
    v->start.t = (int32_t*)(void*)p, p += N * 4;
    v->start.window_end = (int32_t*)(void*)p, p += N * 4;
    v->start.position = (int32_t*)(void*)p, p += N * 4;
    v->start.bars_held = (int32_t*)(void*)p, p += N * 4;
    v->start.episode = (uint32_t*)(void*)p, p += N * 4;
    v->start.last_size = (float*)(void*)p, p += N * 4;
    v->rew = (float*)(void*)p, p += NL * 4;
    v->pos = (int32_t*)(void*)p, p += NL * 4;
    v->done = (float*)(void*)p;
    // Window w: decisions at bars begin + w L .. begin + (w + 1) L - 1, flat, initial equity.
    for (int64_t w = 0; w < v->n; ++w) {
        v->start.t[w] = (int32_t)(v->begin + w * v->L);
        v->start.window_end[w] = (int32_t)(v->begin + (w + 1) * v->L);
        v->start.cash[w] = v->start.equity[w] = v->start.peak[w] = v->inst.initial_equity;
    }
    return VP_OK;
}

/* Backend logs [L, N] of rewards, positions and done flags. */
static vp_status log_alloc(vp_validator* v) {
    const int64_t NL = v->n * v->L;
    size_t col = ((size_t)NL * 4 + 255) / 256 * 256;
    vp_mem mem = vp_backend_native_mem(v->backend);
    VP_TRY(vp_buffer_alloc(v->backend, mem, 3 * col, &v->log_buf));
    char* base = (char*)v->log_buf.dev;
    v->rew_log = vp_tensor_2d(base, VP_F32, mem, v->L, v->n);
    v->pos_log = vp_tensor_2d(base + col, VP_I32, mem, v->L, v->n);
    v->done_log = vp_tensor_2d(base + 2 * col, VP_F32, mem, v->L, v->n);
    return VP_OK;
}

vp_status vp_validator_init(vp_validator** out, vp_backend* b, const vp_model* m, const vp_tensor* features,
                            const vp_train_data* d, vp_span span, const vp_instrument* inst, double ruin_fraction,
                            int64_t window_bars) {
    VP_REQUIRE(out != NULL && b != NULL && m != NULL && features != NULL && d != NULL && inst != NULL,
               VP_ERR_INVALID_ARG, "vp_validator_init: NULL argument");
    *out = NULL;
    const int64_t len = vp_span_len(span);
    VP_REQUIRE(len >= 2 && span.begin >= 0 && span.end <= d->bars.n, VP_ERR_INVALID_ARG,
               "vp_validator_init: span [%lld, %lld) of %lld bars (needs at least 2 bars)", (long long)span.begin,
               (long long)span.end, (long long)d->bars.n);
    vp_validator* v = (vp_validator*)calloc(1, sizeof *v);
    VP_REQUIRE(v != NULL, VP_ERR_OOM, "vp_validator_init: out of host memory");
    v->backend = b;
    v->data = d;
    v->inst = *inst;
    v->begin = span.begin;
    // N windows of about window_bars decisions covering the span; the last one's closing
    // open (bar begin + N L) stays inside it.
    v->n = (window_bars <= 0 || window_bars > len - 1) ? 1 : (len - 1) / window_bars;
    v->L = (len - 1) / v->n;

    // The span as a market, N envs whose episodes are the windows, a greedy collector.
    vp_env_market_desc md = {d->bars.n, d->bars.open, d->bars.high, d->bars.low, d->bars.close, d->atr,
                             span.begin, span.end, features};
    // The env's episode is the training one (window_bars), so time left and bars held reach
    // the network in training episode lengths, capped at 1, as in training and the exact
    // backtest; a window is longer (L >= window_bars). A span shorter than one episode has
    // only its own length to measure them in.
    vp_env_config ec = vp_env_config_default();
    ec.episode_bars = (int32_t)(window_bars >= 1 && window_bars <= v->L ? window_bars : v->L);
    ec.reward_scale = 1.0;
    ec.ruin_fraction = ruin_fraction;
    vp_collect_cfg cc = {0.0f, 0.0f, 0, 0};
    vp_status s = vp_env_market_init(&v->market, b, &md);
    if (s == VP_OK) s = vp_env_init(&v->env, b, &v->market, inst, &ec, v->n);
    if (s == VP_OK) s = vp_collector_init(&v->coll, b, m, features, &v->env, NULL, &cc);
    if (s == VP_OK) s = log_alloc(v);
    if (s == VP_OK) s = host_alloc(v);
    if (s != VP_OK) {
        vp_validator_free(v);
        return vp_error_context(s, "validation of bars [%lld, %lld)", (long long)span.begin, (long long)span.end);
    }
    *out = v;
    return VP_OK;
}

void vp_validator_free(vp_validator* v) {
    if (!v) return;
    vp_collector_free(&v->coll);
    vp_env_free(&v->env);
    vp_env_market_free(&v->market);
    vp_buffer_free(v->backend, &v->log_buf);
    free(v->host);
    free(v);
}

/* Row k of a log [L, N]. */
static vp_tensor log_row(const vp_tensor* log, int64_t k) {
    size_t es = vp_dtype_size(log->dtype);
    return vp_tensor_1d((char*)log->data + (size_t)k * (size_t)log->shape[1] * es, log->dtype, log->mem, log->shape[1]);
}

/* Stitches the logs into per-bar returns and scores them with the baselines into *out. */
static vp_status score(vp_validator* v, vp_eval_result* out) {
    const int64_t N = v->n, L = v->L;
    const double init = v->inst.initial_equity;
    const vp_bars* bars = &v->data->bars;
    double exposed = 0.0, traded = 0.0;
    int64_t ruined = 0;
    // The agent: equity from each step's change, flat after the window's end.
    for (int64_t w = 0; w < N; ++w) {
        double eq = init;
        int alive = 1, prev_pos = 0;
        for (int64_t k = 0; k < L; ++k) {
            double r = 0.0;
            int pos = 0;
            if (alive) {
                double change = (double)v->rew[k * N + w] * init;
                r = change / eq;
                eq += change;
                pos = v->pos[k * N + w];
                if (v->done[k * N + w] != 0.0f || !(eq > 0.0)) {
                    alive = 0;
                    pos = 0;
                    if (k + 1 < L) ruined++;
                }
            }
            v->ret[w * L + k] = r;
            exposed += pos != 0 ? 1.0 : 0.0;
            traded += fabs((double)(pos - prev_pos)) / (double)v->inst.max_position;
            prev_pos = pos;
        }
    }
    VP_TRY(vp_perf_compute(v->ret, N * L, v->data->periods_per_year, &out->strategy));
    out->exposure = exposed / (double)(N * L);
    out->turnover = traded;
    out->ruined = ruined;
    out->windows = N;
    out->window_bars = L;

    // Buy-and-hold over the same windows, with the env's timing and costs; flat.
    vp_baseline_costs bc = {(double)v->inst.max_position, v->inst.multiplier, v->inst.commission,
                            v->inst.slippage_ticks * v->inst.tick_size, init};
    vp_status s = VP_OK;
    for (int64_t w = 0; w < N && s == VP_OK; ++w) {
        int64_t s0 = v->begin + w * L;
        s = vp_baseline_buy_hold(bars->open + s0, bars->close + s0, L + 1, &bc, v->eq);
        if (s == VP_OK) s = vp_returns_from_equity(v->eq, L + 1, v->ret + w * L);
    }
    if (s != VP_OK) {
        // A baseline that loses everything (too large a position for the account) is undefined, not fatal.
        vp_log(VP_LOG_WARN, "validation: buy-and-hold baseline undefined: %s", vp_last_error());
        vp_clear_error();
        for (int64_t i = 0; i < N * L; ++i) v->ret[i] = NAN;
    }
    VP_TRY(vp_perf_compute(v->ret, N * L, v->data->periods_per_year, &out->buy_hold));
    memset(v->ret, 0, sizeof(double) * (size_t)(N * L));
    return vp_perf_compute(v->ret, N * L, v->data->periods_per_year, &out->flat);
}

vp_status vp_validator_run(vp_validator* v, const vp_tensor* params, vp_eval_result* out) {
    VP_REQUIRE(v != NULL && params != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_validator_run: NULL argument");
    memset(out, 0, sizeof *out);
    vp_backend* b = v->backend;
    // Every window at its start, flat; the policy reads `params`.
    VP_TRY(vp_env_state_set(&v->env, &v->start));
    VP_TRY(vp_collector_observe(&v->coll));
    v->coll.params = params;
    // L greedy steps, each logged.
    vp_tensor pos = vp_tensor_1d(v->env.state.position, VP_I32, v->env.storage.mem, v->n);
    for (int64_t k = 0; k < v->L; ++k) {
        VP_TRY(vp_collector_step(&v->coll));
        vp_tensor r = log_row(&v->rew_log, k), p = log_row(&v->pos_log, k), dn = log_row(&v->done_log, k);
        VP_TRY(vp_copy(b, &v->coll.reward, &r));
        VP_TRY(vp_copy(b, &pos, &p));
        VP_TRY(vp_copy(b, &v->coll.done, &dn));
    }
    // One download of each log, then the metrics on the host.
    const size_t bytes = (size_t)(v->n * v->L) * 4;
    VP_TRY(vp_download(b, v->rew, &v->rew_log, bytes));
    VP_TRY(vp_download(b, v->pos, &v->pos_log, bytes));
    VP_TRY(vp_download(b, v->done, &v->done_log, bytes));
    return score(v, out);
}
