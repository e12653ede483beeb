/* PPO's collection observations: each env's logits and values at its decision bar, either
 * encoding every env's window at every step or, where the training span has fewer bars than
 * the n_envs x (T + 1) windows of an iteration (its T steps and the bootstrap), from one
 * encoding of every bar an env can stand on, made per iteration with the iteration's
 * parameters (which collection does not change), gathered per step (docs/collect.md has the
 * DQN collector's same path and why every bar of the span). */
#include <stdlib.h>
#include <string.h>

#include "learn/collect_impl.h"
#include "vulpes/ops.h"
#include "vulpes/ppo.h"

vp_status vp_ppo_span_init(vp_ppo_trainer* t) {
    const vp_env_market* m = &t->market;
    const int64_t R = m->end - 1 - m->begin, E = t->cfg.env.n_envs, T = t->pc.rollout_steps;
    const int64_t H = t->net.enc.cfg.hidden;
    t->encode_once = R >= 1 && T + 1 > R / E; /* R < E x (T + 1), without the product */
    if (!t->encode_once) return VP_OK;
    t->span_begin = m->begin;
    t->span_rows = R;
    const int64_t want = E > VP_COLLECT_CHUNK ? E : VP_COLLECT_CHUNK;
    t->chunk = R < want ? R : want;
    VP_TRY(vp_ppo_acts_init(&t->span_acts, &t->net, t->chunk, 0, 0));
    const size_t bytes = (size_t)R * 4 + (size_t)(R + E) * (size_t)H * 4 + 4 * 256;
    VP_TRY(vp_arena_init(&t->span_arena, t->backend, vp_backend_native_mem(t->backend), bytes));
    const int64_t bar_shape[1] = {R}, enc_shape[2] = {R, H}, env_shape[2] = {E, H};
    VP_TRY(vp_arena_tensor(&t->span_arena, "ppo.span_bars", VP_I32, 1, bar_shape, &t->span_bars, NULL));
    VP_TRY(vp_arena_tensor(&t->span_arena, "ppo.span_enc", VP_F32, 2, enc_shape, &t->span_enc, NULL));
    VP_TRY(vp_arena_tensor(&t->span_arena, "ppo.enc", VP_F32, 2, env_shape, &t->enc, NULL));
    // the span's bar list (one upload)
    int32_t* h = (int32_t*)malloc((size_t)R * sizeof *h);
    VP_REQUIRE(h != NULL, VP_ERR_OOM, "ppo: the span's %lld bar indices", (long long)R);
    for (int64_t r = 0; r < R; ++r) h[r] = (int32_t)(t->span_begin + r);
    vp_status s = vp_upload(t->backend, &t->span_bars, h, (size_t)R * sizeof *h);
    free(h);
    return s;
}

void vp_ppo_span_free(vp_ppo_trainer* t) {
    vp_ppo_acts_free(t->span_acts);
    t->span_acts = NULL;
    if (t->span_arena.backend) vp_arena_free(&t->span_arena);
    t->encode_once = 0;
}

vp_status vp_ppo_encode_span(vp_ppo_trainer* t) {
    VP_REQUIRE(t->span_acts != NULL, VP_ERR_STATE, "vp_ppo_encode_span: the trainer has no span encoding");
    const int64_t H = t->net.enc.cfg.hidden;
    // chunks of up to `chunk` bars, each encoding copied into its rows of the table
    for (int64_t off = 0; off < t->span_rows; off += t->chunk) {
        const int64_t n = t->span_rows - off < t->chunk ? t->span_rows - off : t->chunk;
        vp_tensor bars = vp_tensor_1d((int32_t*)t->span_bars.data + off, VP_I32, t->span_bars.mem, n);
        vp_tensor rows = vp_tensor_2d((float*)t->span_enc.data + off * H, VP_F32, t->span_enc.mem, n, H);
        VP_TRY(vp_ppo_net_encode(&t->net, &t->net.params, t->span_acts, &t->features, &bars, n));
        const vp_tensor enc = vp_ppo_encoding(t->span_acts);
        VP_TRY(vp_copy(t->backend, &enc, &rows));
    }
    return VP_OK;
}

vp_status vp_ppo_observe(vp_ppo_trainer* t) {
    const int64_t E = t->cfg.env.n_envs;
    if (t->encode_once) {
        // each env's row of the span's encodings, then the heads
        VP_TRY(vp_collect_gather(t->backend, &t->span_enc, t->span_begin, &t->obs_bar, &t->enc, NULL, NULL));
        return vp_ppo_net_heads(&t->net, &t->net.params, t->col, &t->enc, &t->obs_port, E);
    }
    VP_TRY(vp_ppo_net_encode(&t->net, &t->net.params, t->col, &t->features, &t->obs_bar, E));
    return vp_ppo_net_heads(&t->net, &t->net.params, t->col, NULL, &t->obs_port, E);
}
