/* The Decision Transformer's policy (vulpes/policy.h): encode is the encoder; score pushes each
 * row's state into the workspace's history of the last K steps and scores the state token of the
 * sequence of its last min(steps, K) steps; observe (the policy interface's memory hook) records
 * the actions taken, lowers each row's return-to-go by the reward paid and counts the row's step
 * (a row given NaN, its window having taken no step, keeps its history and count). Ops only, so a rollout
 * captures its steps as a graph. */
#include <stdlib.h>
#include <string.h>

#include "learn/dt_acts.h"
#include "vulpes/ops.h"

/* Most sequences one transformer forward of the policy takes: a score of more rows runs in chunks
 * of this many, so a workspace made for a rollout's large encoding batches stays small. */
#define DT_POLICY_SEQS 64

/* The workspace: encoder activations of N rows, forward activations of S = min(N,
 * DT_POLICY_SEQS) sequences, the history of N rows and the step counter. */
struct vp_policy_work {
    const vp_dt_net* net;  /* the network */
    int64_t n;             /* N: rows */
    int64_t s;             /* S: sequences per forward */
    vp_dt_acts* acts;      /* S sequences (forward only) and N encoder rows */
    vp_arena arena;        /* the tensors below */
    vp_dt_batch seq;       /* [S K] the sequences of one forward */
    vp_tensor e_seq;       /* [S K, H] their encodings */
    vp_tensor h_e;         /* [N, K, H] history: encodings */
    vp_tensor h_port;      /* [N, K, P] portfolio vectors */
    vp_tensor h_act;       /* [N, K, 4] i32 actions */
    vp_tensor h_rtg;       /* [N, K] returns-to-go of the steps */
    vp_tensor rtg_now;     /* [N] the return-to-go of the next step */
    vp_tensor steps;       /* [N] i32 the steps each row took (observed with a reward) */
    vp_tensor scores;      /* [N, A] */
};

static vp_dt_hist_ptrs hist_of(const vp_policy_work* w) {
    vp_dt_hist_ptrs h = {(float*)w->h_e.data, (float*)w->h_port.data, (int32_t*)w->h_act.data, (float*)w->h_rtg.data,
                         (float*)w->rtg_now.data};
    return h;
}

static void dt_work_free(vp_policy_work* w) {
    if (!w) return;
    vp_dt_acts_free(w->acts);
    if (w->arena.backend) vp_arena_free(&w->arena);
    free(w);
}

/* One tensor of the workspace's arena. */
static vp_status take(vp_policy_work* w, const char* name, vp_dtype dt, int64_t rows, int64_t cols, vp_tensor* out) {
    const int64_t sh[2] = {rows, cols};
    return vp_arena_tensor(&w->arena, name, dt, cols > 0 ? 2 : 1, sh, out, NULL);
}

static vp_status dt_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    const vp_dt_net* n = (const vp_dt_net*)p->impl;
    const vp_dt_dims* d = &n->dims;
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "policy dt: workspace");
    w->net = n;
    w->n = batch;
    w->s = batch < DT_POLICY_SEQS ? batch : DT_POLICY_SEQS;
    vp_backend* be = p->backend;
    const int64_t NK = batch * d->K, SK = w->s * d->K;
    const size_t words = (size_t)(SK * (1 + d->P + 4 + 3) + SK * d->H + NK * (d->H + d->P + 4 + 1) + batch * (2 + d->A));
    vp_status s = vp_dt_acts_init(&w->acts, n, w->s, 0, batch, p->fp32_scores);
    if (s == VP_OK) s = vp_arena_init(&w->arena, be, vp_backend_native_mem(be), words * 4 + 20 * 256);
    if (s == VP_OK) s = vp_dt_batch_init(&w->seq, &w->arena, d, w->s);
    if (s == VP_OK) s = take(w, "dt.pol.e_seq", VP_F32, SK, d->H, &w->e_seq);
    if (s == VP_OK) s = take(w, "dt.pol.h_e", VP_F32, NK, d->H, &w->h_e);
    if (s == VP_OK) s = take(w, "dt.pol.h_port", VP_F32, NK, d->P, &w->h_port);
    if (s == VP_OK) s = take(w, "dt.pol.h_act", VP_I32, NK, 4, &w->h_act);
    if (s == VP_OK) s = take(w, "dt.pol.h_rtg", VP_F32, NK, 0, &w->h_rtg);
    if (s == VP_OK) s = take(w, "dt.pol.rtg_now", VP_F32, batch, 0, &w->rtg_now);
    if (s == VP_OK) s = take(w, "dt.pol.steps", VP_I32, batch, 0, &w->steps);
    if (s == VP_OK) s = take(w, "dt.pol.scores", VP_F32, batch, d->A, &w->scores);
    // an empty history conditioned on the target
    if (s == VP_OK) s = vp_fill(be, &w->h_e, 0.0f);
    if (s == VP_OK) s = vp_fill(be, &w->h_port, 0.0f);
    if (s == VP_OK) s = vp_fill_i32(be, &w->h_act, 0);
    if (s == VP_OK) s = vp_fill(be, &w->h_rtg, 0.0f);
    if (s == VP_OK) s = vp_fill(be, &w->rtg_now, p->goal);
    if (s == VP_OK) s = vp_fill_i32(be, &w->steps, 0);
    if (s != VP_OK) {
        dt_work_free(w);
        return vp_error_context(s, "policy dt: workspace of %lld rows", (long long)batch);
    }
    *out = w;
    return VP_OK;
}

static vp_status dt_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                           int64_t n, vp_tensor* enc) {
    VP_TRY(vp_dt_encode((const vp_dt_net*)p->impl, p->params, w->acts, features, bar_idx, n));
    *enc = vp_dt_encoding(w->acts);
    return VP_OK;
}

static vp_status dt_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                          int64_t n, vp_tensor* scores) {
    const char* fn = "policy dt: score";
    const vp_dt_net* net = (const vp_dt_net*)p->impl;
    const vp_dt_dims* d = &net->dims;
    vp_backend* be = p->backend;
    VP_REQUIRE(n >= 1 && n <= w->n, VP_ERR_INVALID_ARG, "%s: %lld rows for a workspace of %lld", fn, (long long)n,
               (long long)w->n);
    VP_TRY(vp_tensor_check_min_rows(fn, "enc", be, enc, VP_F32, n, d->H));
    VP_TRY(vp_tensor_check_min_rows(fn, "portfolio", be, portfolio, VP_F32, n, d->P));
    const vp_dt_kernels* k = NULL;
    VP_TRY(vp_dt_kernels_of(fn, be, &k));
    const int32_t* steps = (const int32_t*)w->steps.data;
    const vp_dt_hist_ptrs h = hist_of(w);
    // this step into the history; then per chunk of rows each one's sequence of its last steps,
    // the forward and the readout
    VP_TRY(k->hist_push(be, d, n, steps, (const float*)enc->data, (const float*)portfolio->data, h));
    for (int64_t i0 = 0; i0 < n; i0 += w->s) {
        const int64_t m = n - i0 < w->s ? n - i0 : w->s, K = d->K;
        const vp_dt_hist_ptrs hc = {h.e + i0 * K * d->H, h.port + i0 * K * d->P, h.act + i0 * K * 4, h.rtg + i0 * K,
                                    h.rtg_now + i0};
        VP_TRY(k->hist_seq(be, d, m, steps + i0, hc, (float*)w->e_seq.data, vp_dt_batch_ptrs_of(&w->seq)));
        VP_TRY(vp_dt_forward(net, p->params, w->acts, &w->e_seq, &w->seq, m));
        const vp_tensor lg = vp_dt_logits(w->acts);
        VP_TRY(k->readout(be, d, m, steps + i0, (const float*)lg.data, (float*)w->scores.data + i0 * d->A));
    }
    *scores = vp_tensor_2d(w->scores.data, VP_F32, w->scores.mem, n, d->A);
    return VP_OK;
}

static vp_status dt_observe(const vp_policy* p, vp_policy_work* w, const vp_tensor* actions, const vp_tensor* rewards,
                            int64_t n) {
    const char* fn = "policy dt: observe";
    const vp_dt_dims* d = &((const vp_dt_net*)p->impl)->dims;
    vp_backend* be = p->backend;
    VP_REQUIRE(n >= 1 && n <= w->n, VP_ERR_INVALID_ARG, "%s: %lld rows for a workspace of %lld", fn, (long long)n,
               (long long)w->n);
    VP_TRY(vp_tensor_check_min_rows(fn, "actions", be, actions, VP_I32, n, 4));
    VP_TRY(vp_tensor_check(fn, "rewards", be, rewards, VP_F32));
    const vp_dt_kernels* k = NULL;
    VP_TRY(vp_dt_kernels_of(fn, be, &k));
    return k->hist_observe(be, d, n, (int32_t*)w->steps.data, (const int32_t*)actions->data,
                           (const float*)rewards->data, hist_of(w));
}

static const vp_policy_ops DT_POLICY_OPS = {"dt", dt_work_init, dt_work_free, dt_encode, dt_score};

vp_policy vp_dt_policy(const vp_dt_net* n, const vp_tensor* params, float target) {
    vp_policy p = vp_model_rollout_policy(n ? &n->enc : NULL, params);
    p.ops = &DT_POLICY_OPS;
    p.impl = n;
    p.goal = target;
    p.observe = dt_observe;
    return p;
}
