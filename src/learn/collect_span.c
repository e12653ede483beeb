/* The collector's encode-once path: S policy steps from one encoding of every bar an env
 * can stand on, then head-only steps (docs/collect.md).
 *
 * Why every bar of the span: an env's decision bar moves on by one each step, but an
 * episode can end inside the S steps, at its window's end (known in advance) or at ruin
 * (known only after the step), and the env then restarts at the seeded start of its next
 * episode. The bars an env may hold are therefore the market's decision bars [begin,
 * end - 2] (vp_env_state_set's rule: begin <= t < window_end < end), and an encoding of
 * each of them serves every env, every step and every restart exactly. The path applies
 * where those R bars are fewer rows than the E x S windows of S single steps. The DQN network
 * encodes the R windows with shared rows: the R + K - 1 distinct bars' trunk and in_proj rows
 * once, then each window from its K gathered rows (vulpes/model_span.h). */
#include <stdlib.h>
#include <string.h>

#include "learn/collect_impl.h"
#include "vulpes/ops.h"

/* Chooses the path: 1 when the S steps encode once. */
static int choose(const vp_collector* c, int64_t rows) {
    const int64_t S = c->cfg.steps, E = c->n_envs;
    if (c->cfg.mode == VP_COLLECT_ENCODE_ONCE) return 1;
    if (c->cfg.mode == VP_COLLECT_STEPWISE || S < 1) return 0;
    return S > rows / E; /* R < E x S, without the product */
}

/* The span's bar list in backend memory (set-up: one upload). */
static vp_status upload_bars(vp_collector* c) {
    const int64_t R = c->span_rows;
    int32_t* h = (int32_t*)malloc((size_t)R * sizeof *h);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "collector: the span's %lld bar indices", (long long)R);
    for (int64_t r = 0; r < R; ++r) h[r] = (int32_t)(c->span_begin + r);
    vp_status s = vp_upload(c->backend, &c->span_bars, h, (size_t)R * sizeof *h);
    free(h);
    return s;
}

vp_status vp_collector_span_init(vp_collector* c) {
    const vp_env_market* m = c->env->market;
    const int64_t R = m->end - 1 - m->begin, E = c->n_envs, H = c->policy.enc_dim;
    c->encode_once = choose(c, R);
    if (!c->encode_once) return VP_OK;
    c->span_begin = m->begin;
    c->span_rows = R;
    const int64_t want = E > VP_COLLECT_CHUNK ? E : VP_COLLECT_CHUNK;
    c->chunk = R < want ? R : want;
    if (c->chunk > E) VP_TRY(vp_policy_work_init(&c->policy, c->chunk, &c->span_work));
    size_t bytes = (size_t)R * 4 + (size_t)R * (size_t)H * 4 + (size_t)E * (size_t)H * 4 + 4 * 256;
    VP_TRY(vp_arena_init(&c->span_arena, c->backend, vp_backend_native_mem(c->backend), bytes));
    int64_t bar_shape[1] = {R}, enc_shape[2] = {R, H}, env_shape[2] = {E, H};
    VP_TRY(vp_arena_tensor(&c->span_arena, "collect.span_bars", VP_I32, 1, bar_shape, &c->span_bars, NULL));
    VP_TRY(vp_arena_tensor(&c->span_arena, "collect.span_enc", VP_F32, 2, enc_shape, &c->span_enc, NULL));
    VP_TRY(vp_arena_tensor(&c->span_arena, "collect.enc", VP_F32, 2, env_shape, &c->enc, NULL));
    VP_TRY(upload_bars(c));
    // the DQN network's windows share their bars' rows (vulpes/model_span.h)
    const vp_model* net = (const vp_model*)c->policy.impl;
    if (c->policy.ops != &vp_model_policy_ops || !vp_model_span_shares(&net->cfg)) return VP_OK;
    VP_TRY(vp_model_span_init(&c->span, net, c->span_begin, R));
    c->span_shared = 1;
    return VP_OK;
}

void vp_collector_span_free(vp_collector* c) {
    vp_policy_work_free(&c->policy, c->span_work);
    vp_arena_free(&c->span_arena);
    vp_model_span_free(&c->span);
    c->span_work = NULL;
    c->encode_once = 0;
    c->span_shared = 0;
}

vp_status vp_collector_encode_span(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->work != NULL && c->encode_once, VP_ERR_STATE,
               "vp_collector_encode_span: the collector does not encode once (not initialised, or step by step)");
    vp_policy_work* w = c->span_work ? c->span_work : c->work;
    if (c->span_shared) return vp_model_policy_encode_span(&c->policy, w, &c->span, &c->features, c->chunk, &c->span_enc);
    const int64_t H = c->policy.enc_dim;
    // chunks of up to `chunk` bars, each encoding copied into its rows of the table
    for (int64_t off = 0; off < c->span_rows; off += c->chunk) {
        const int64_t n = c->span_rows - off < c->chunk ? c->span_rows - off : c->chunk;
        vp_tensor bars = vp_tensor_1d((int32_t*)c->span_bars.data + off, VP_I32, c->span_bars.mem, n);
        vp_tensor rows = vp_tensor_2d((float*)c->span_enc.data + off * H, VP_F32, c->span_enc.mem, n, H), enc;
        VP_TRY(vp_policy_encode(&c->policy, w, &c->features, &bars, n, &enc));
        VP_TRY(vp_copy(c->backend, &enc, &rows));
    }
    return VP_OK;
}

/* The env's window ends (before its step: an auto-reset changes them), as a tensor. */
static vp_tensor env_wend(vp_collector* c) {
    return vp_tensor_1d(c->env->state.window_end, VP_I32, c->env->storage.mem, c->n_envs);
}

/* A head step after its rows were gathered (c->enc, c->window_end): the decision part with its
 * portfolio, the choice, the env step and push. */
static vp_status head_rest(vp_collector* c) {
    vp_tensor q;
    VP_TRY(vp_policy_score(&c->policy, c->work, &c->enc, &c->portfolio, c->n_envs, &q));
    VP_TRY(vp_collect_act_scaled(c->backend, &c->cfg, &c->policy.layout, &q, &c->step,
                                 c->eps_scale.data ? &c->eps_scale : NULL, &c->actions));
    return vp_collector_env_push(c, &c->enc);
}

vp_status vp_collector_head_step(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->work != NULL && c->encode_once, VP_ERR_STATE,
               "vp_collector_head_step: the collector does not encode once (not initialised, or step by step)");
    vp_tensor wend = env_wend(c);
    // each env's encoding row at its decision bar and its window end before the step (one
    // kernel), the rest of the step
    VP_TRY(vp_collect_gather(c->backend, &c->span_enc, c->span_begin, &c->obs_bar, &c->enc, &wend, &c->window_end));
    VP_TRY(head_rest(c));
    // the next observation becomes the current one and the counter moves on (one kernel)
    return vp_collect_handover(c->backend, &c->next_bar, &c->next_portfolio, &c->obs_bar, &c->portfolio, &c->step);
}

/* S head steps (vp_collector_head_step each), with each step's hand-over and the next step's
 * gather in one kernel. */
static vp_status head_steps(vp_collector* c, int64_t S) {
    vp_tensor wend = env_wend(c);
    VP_TRY(vp_collect_gather(c->backend, &c->span_enc, c->span_begin, &c->obs_bar, &c->enc, &wend, &c->window_end));
    for (int64_t k = 0; k < S; ++k) {
        // the parameters stay as they are over the S steps: what the first score derives from
        // them is kept for the others (vp_policy_hold_params)
        if (k == 1) VP_TRY(vp_policy_hold_params(&c->policy, c->work, 1));
        VP_TRY(head_rest(c));
        if (k + 1 < S)
            VP_TRY(vp_collect_handover_gather(c->backend, &c->next_bar, &c->next_portfolio, &c->obs_bar, &c->portfolio,
                                              &c->step, &c->span_enc, c->span_begin, &c->enc, &wend,
                                              &c->window_end));
        else
            VP_TRY(vp_collect_handover(c->backend, &c->next_bar, &c->next_portfolio, &c->obs_bar, &c->portfolio,
                                       &c->step));
    }
    return VP_OK;
}

vp_status vp_collector_collect(vp_collector* c) {
    VP_REQUIRE(c != NULL && c->work != NULL, VP_ERR_INVALID_ARG, "vp_collector_collect: collector is not initialised");
    const int64_t S = c->cfg.steps;
    if (!c->encode_once) {
        for (int64_t k = 0; k < S; ++k) VP_TRY(vp_collector_step(c));
        return VP_OK;
    }
    if (S < 1) return VP_OK;
    VP_TRY(vp_collector_encode_span(c));
    // the parameters' hold let go on every way out
    const vp_status s = head_steps(c, S);
    const vp_status r = vp_policy_hold_params(&c->policy, c->work, 0);
    return s != VP_OK ? s : r;
}
