/* The decision after each window: at a window's last close the policy chooses for the bar
 * after it — from the features of the window's last bar (rows up to it, none after) and the
 * window's portfolio at that close — so a user can read the next action at the end of a
 * span. It is not traded. The window has then closed its position (its last step goes
 * flat), and its time left reads as for a window that goes on (capped at 1): the bar after
 * the span ends nothing. None after a ruin (the window stopped), with forced actions, or when
 * the caller asks for none (vp_rollout_cfg.next_decision = 0: a validation).
 * The scores behind each window's choice are kept (vp_rollout_result.next_q).
 * A policy with memory (vulpes/policy.h) decides with the op path's workspace, which holds each
 * window's history: every window is scored in its own row (a ruined one's choice unused).
 * Then every logged choice's margin is counted: the decisions and the fragile ones. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"

/* What the decisions work on. */
typedef struct next_ctx {
    vp_policy_work* work; /* the policy's workspace for m samples */
    vp_buffer buf;        /* bar indices [m] i32, encodings [m, H], portfolios [m, 8] (backend) */
    int32_t* idx;         /* [m] host: bar of each decision */
    int64_t* win;         /* [m] host: its window */
    float* pf;            /* [m, 8] host portfolios */
    float* q;             /* [m, A] host scores */
    float* scale;         /* [m] host size scales (the risk-budget head; NULL without it) */
} next_ctx;

/* Encodes the m decision bars, scores them with their portfolios and downloads the scores. */
static vp_status score_all(const vp_ro_run* r, next_ctx* c, int64_t m) {
    const vp_policy* pol = r->pol;
    const int64_t H = pol->enc_dim, A = pol->layout.n_heads;
    const vp_mem mem = vp_backend_native_mem(r->b);
    const size_t i_b = ((size_t)m * 4 + 255) / 256 * 256, e_b = ((size_t)(m * H) * 4 + 255) / 256 * 256;
    if (r->mem_work) c->work = r->mem_work;
    else VP_TRY(vp_policy_work_init(pol, m, &c->work));
    VP_TRY(vp_buffer_alloc(r->b, mem, i_b + e_b + (size_t)m * VP_ENV_PORTFOLIO * 4, &c->buf));
    vp_tensor it = vp_tensor_1d(c->buf.dev, VP_I32, mem, m);
    vp_tensor eb = vp_tensor_2d((char*)c->buf.dev + i_b, VP_F32, mem, m, H);
    vp_tensor pt = vp_tensor_2d((char*)c->buf.dev + i_b + e_b, VP_F32, mem, m, VP_ENV_PORTFOLIO);
    VP_TRY(vp_upload(r->b, &it, c->idx, sizeof(int32_t) * (size_t)m));
    VP_TRY(vp_upload(r->b, &pt, c->pf, sizeof(float) * VP_ENV_PORTFOLIO * (size_t)m));
    // the market part of the network over the bars' feature rows, then the heads
    vp_tensor e, scores;
    VP_TRY(vp_policy_encode(pol, c->work, r->data->features, &it, m, &e));
    vp_tensor src = vp_tensor_2d(e.data, VP_F32, e.mem, m, H);
    VP_TRY(vp_copy(r->b, &src, &eb));
    VP_TRY(vp_policy_score(pol, c->work, &eb, &pt, m, &scores));
    const float* sc = vp_policy_size_scale(pol, c->work);
    if (sc && c->scale) {
        vp_tensor st = vp_tensor_1d((void*)sc, VP_F32, mem, m);
        VP_TRY(vp_download(r->b, c->scale, &st, sizeof(float) * (size_t)m));
    }
    return vp_download(r->b, c->q, &scores, sizeof(float) * (size_t)(m * A));
}

/* Counts the choices with a margin, and the fragile ones among them. */
static void count_fragile(vp_rollout_result* out) {
    out->n_decisions = out->n_fragile = 0;
    for (int64_t o = 0; o < out->n_points; ++o) {
        if (isnan(out->margin[o])) continue;
        out->n_decisions += 1;
        out->n_fragile += out->margin[o] < VP_ACTION_FRAGILE_MARGIN;
    }
}

vp_status vp_ro_next_decisions(const vp_ro_run* r, vp_rollout_result* out) {
    if (!r->pol || !r->cfg->next_decision) {
        count_fragile(out);
        return VP_OK;
    }
    const int64_t N = out->n_windows, A = r->pol->layout.n_heads;
    // every window's row of scores, NaN until its decision is scored
    out->n_heads = (int32_t)A;
    out->next_q = (float*)malloc(sizeof(float) * (size_t)(N * A));
    if (!out->next_q) return vp_set_error(VP_ERR_OOM, VP_WHERE, "backtest: scores of %lld next decisions", (long long)N);
    for (int64_t k = 0; k < N * A; ++k) out->next_q[k] = NAN;
    next_ctx c;
    memset(&c, 0, sizeof c);
    c.idx = (int32_t*)malloc(sizeof(int32_t) * (size_t)N);
    c.win = (int64_t*)malloc(sizeof(int64_t) * (size_t)N);
    c.pf = (float*)malloc(sizeof(float) * VP_ENV_PORTFOLIO * (size_t)N);
    c.q = (float*)malloc(sizeof(float) * (size_t)(N * A));
    // the risk-budget head's scales beside the scores, NaN until scored
    if (r->m && r->m->cfg.risk_budget > 0.0f) {
        out->next_scale = (float*)malloc(sizeof(float) * (size_t)N);
        c.scale = (float*)malloc(sizeof(float) * (size_t)N);
        for (int64_t k = 0; out->next_scale && k < N; ++k) out->next_scale[k] = NAN;
    }
    const int scale_ok = !(r->m && r->m->cfg.risk_budget > 0.0f) || (out->next_scale && c.scale);
    vp_status s = c.idx && c.win && c.pf && c.q && scale_ok ? VP_OK
                                                 : vp_set_error(VP_ERR_OOM, VP_WHERE, "backtest: %lld next decisions",
                                                                (long long)N);
    // the windows that reached their end: each one's last bar and its portfolio at that close
    int64_t m = 0;
    for (int64_t w = 0; s == VP_OK && w < N; ++w) {
        vp_env_view v = vp_env_view_of(&r->h_state, w);
        if (out->windows[w].ruined && r->mem_work) {
            // a row of its own for the policy's history; its choice unused
            v.window_end = v.t + r->cfg->episode_bars;
            vp_env_portfolio(&r->dims.env, r->h_bars, &v, c.pf + m * VP_ENV_PORTFOLIO);
            c.idx[m] = (int32_t)(r->a + v.t);
            c.win[m++] = -1;
            continue;
        }
        if (out->windows[w].ruined) continue;
        if (v.t != r->h_win.last[w] || v.position != 0) {
            s = vp_set_error(VP_ERR_STATE, VP_WHERE,
                             "backtest: window %lld ended at bar %lld holding %d contracts, not flat at its last bar "
                             "%lld", (long long)w, (long long)(r->a + v.t), (int)v.position,
                             (long long)(r->a + r->h_win.last[w]));
            break;
        }
        v.window_end = v.t + r->cfg->episode_bars;
        vp_env_portfolio(&r->dims.env, r->h_bars, &v, c.pf + m * VP_ENV_PORTFOLIO);
        c.idx[m] = (int32_t)(r->a + v.t);
        c.win[m++] = w;
    }
    if (s == VP_OK && m > 0) s = score_all(r, &c, m);
    // each one's greedy choice and margin at its window's last point
    for (int64_t j = 0; s == VP_OK && j < m; ++j) {
        if (c.win[j] < 0) continue;
        const vp_rollout_window* x = &out->windows[c.win[j]];
        const int64_t o = x->offset + x->n_points - 1;
        out->margin[o] = vp_action_greedy_margin(&r->dims.layout, c.q + j * A, out->action + o * VP_ENV_BRANCHES);
        memcpy(out->next_q + c.win[j] * A, c.q + j * A, sizeof(float) * (size_t)A);
        if (c.scale) out->next_scale[c.win[j]] = c.scale[j];
    }
    if (c.buf.dev) vp_buffer_free(r->b, &c.buf);
    if (c.work != r->mem_work) vp_policy_work_free(r->pol, c.work);
    free(c.idx);
    free(c.win);
    free(c.pf);
    free(c.q);
    free(c.scale);
    if (s == VP_OK) count_fragile(out);
    return s;
}
