/* Internal: the per-element math of the Decision Transformer, written once (VP_HD) for the CPU
 * loops (dt_cpu.c) and the CUDA kernels (dt_cuda.cu): the token embedding and its backward, the
 * exact GELU, the per-branch cross-entropy at the state tokens, the training batch's draw and
 * the policy's history of the last K steps. docs/dt.md states the formulas. */
#ifndef VP_LEARN_DT_MATH_H
#define VP_LEARN_DT_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* The token of step j of sequence b of kind k (0 return-to-go, 1 state, 2 action): its row. */
VP_HD int64_t vp_dt_token(int64_t b, int j, int k, int L) { return b * L + 3 * j + k; }

/* A step's timestep row: ts clamped to [0, TM - 1]. */
VP_HD int vp_dt_time_row(int32_t ts, int TM) { return ts < 0 ? 0 : (ts >= TM ? TM - 1 : (int)ts); }

/* Column c of the three tokens of step r (= b K + j) into x0 [B L, D]:
 * R: rtg ret_w + ret_b; s: stok (the state linear's output); a: the sum over the branches of the
 * action embedding's row offset[br] + a[br]; each plus the timestep row. */
VP_HD void vp_dt_embed_at(int64_t r, int c, int K, int L, int D, int TM, const vp_action_layout* lay,
                          const float* stok /* [B K, D] */, const float* rtg, const int32_t* act /* [B K, 4] */,
                          const int32_t* ts, const float* ret_w, const float* ret_b, const float* act_e /* [A, D] */,
                          const float* time_e /* [TM, D] */, float* x0 /* [B L, D] */) {
    const int64_t b = r / K;
    const int j = (int)(r % K);
    const float te = time_e[(int64_t)vp_dt_time_row(ts[r], TM) * D + c];
    float ae = 0.0f;
    for (int br = 0; br < lay->n_branches; ++br) ae += act_e[(int64_t)(lay->offset[br] + act[r * 4 + br]) * D + c];
    x0[vp_dt_token(b, j, 0, L) * D + c] = rtg[r] * ret_w[c] + ret_b[c] + te;
    x0[vp_dt_token(b, j, 1, L) * D + c] = stok[r * D + c] + te;
    x0[vp_dt_token(b, j, 2, L) * D + c] = ae + te;
}

/* Column c of the state-token gradient of step r: d stok = d x0 at its state token. */
VP_HD void vp_dt_embed_dstate_at(int64_t r, int c, int K, int L, int D, const float* dx0, float* dstok) {
    dstok[r * D + c] = dx0[vp_dt_token(r / K, (int)(r % K), 1, L) * D + c];
}

/* Column c of the return embedding's gradients over the BK steps (fixed order). */
VP_HD void vp_dt_embed_dret_at(int c, int64_t BK, int K, int L, int D, const float* rtg, const float* dx0,
                               float* g_w, float* g_b) {
    float gw = 0.0f, gb = 0.0f;
    for (int64_t r = 0; r < BK; ++r) {
        const float g = dx0[vp_dt_token(r / K, (int)(r % K), 0, L) * D + c];
        gw += rtg[r] * g;
        gb += g;
    }
    g_w[c] = gw;
    g_b[c] = gb;
}

/* Column c of row `row` of the action embedding's gradient: the steps whose choice of some
 * branch is that row (fixed order). */
VP_HD void vp_dt_embed_dact_at(int row, int c, int64_t BK, int K, int L, int D, const vp_action_layout* lay,
                               const int32_t* act, const float* dx0, float* g_e /* [A, D] */) {
    float g = 0.0f;
    for (int64_t r = 0; r < BK; ++r)
        for (int br = 0; br < lay->n_branches; ++br)
            if (lay->offset[br] + act[r * 4 + br] == row) g += dx0[vp_dt_token(r / K, (int)(r % K), 2, L) * D + c];
    g_e[(int64_t)row * D + c] = g;
}

/* Column c of row `row` of the timestep embedding's gradient: the three tokens of every step of
 * that timestep row (fixed order). */
VP_HD void vp_dt_embed_dtime_at(int row, int c, int64_t BK, int K, int L, int D, int TM, const int32_t* ts,
                                const float* dx0, float* g_e /* [TM, D] */) {
    float g = 0.0f;
    for (int64_t r = 0; r < BK; ++r) {
        if (vp_dt_time_row(ts[r], TM) != row) continue;
        const int64_t t0 = vp_dt_token(r / K, (int)(r % K), 0, L) * D + c;
        g += dx0[t0] + dx0[t0 + D] + dx0[t0 + 2 * D];
    }
    g_e[(int64_t)row * D + c] = g;
}

/* The exact GELU x Phi(x) and its derivative Phi(x) + x phi(x). */
VP_HD float vp_dt_gelu(float x) { return 0.5f * x * (1.0f + erff(x * 0.70710678118654752f)); }
VP_HD float vp_dt_gelu_grad(float x) {
    const float cdf = 0.5f * (1.0f + erff(x * 0.70710678118654752f));
    return cdf + x * 0.39894228040143268f * expf(-0.5f * x * x);
}

/* Token row t of logits [B L, A]: at the state token of a valid step, the sum over the branches
 * of -log softmax(z_br)[a_br] into *term and (softmax - onehot) * inv_count into dz; elsewhere 0. */
VP_HD void vp_dt_loss_row(int64_t t, int K, int L, const vp_action_layout* lay, const float* logits, const int32_t* act,
                          const float* valid, float inv_count, float* term /* [B K] or row value */, float* d_logits) {
    const int A = lay->n_heads;
    const float* z = logits + t * A;
    float* dz = d_logits + t * A;
    const int64_t b = t / L;
    const int pos = (int)(t % L), j = pos / 3;
    const int64_t r = b * K + j;
    const int on = pos % 3 == 1 && valid[r] > 0.5f;
    if (!on) {
        for (int h = 0; h < A; ++h) dz[h] = 0.0f;
        if (pos % 3 == 1) term[r] = 0.0f;
        return;
    }
    float sum = 0.0f;
    for (int br = 0; br < lay->n_branches; ++br) {
        const int o = lay->offset[br], n = lay->size[br], a = act[r * 4 + br];
        float mx = z[o];
        for (int h = 1; h < n; ++h) mx = z[o + h] > mx ? z[o + h] : mx;
        float s = 0.0f;
        for (int h = 0; h < n; ++h) s += expf(z[o + h] - mx);
        const float lse = mx + logf(s);
        sum += lse - z[o + a];
        for (int h = 0; h < n; ++h) dz[o + h] = (expf(z[o + h] - lse) - (h == a ? 1.0f : 0.0f)) * inv_count;
    }
    term[r] = sum;
}

/* The dataset's rows a batch reads. */
typedef struct vp_dt_rows_ptrs {
    int64_t n_rows;       /* R */
    int64_t n_envs;       /* E */
    const int32_t* bar;   /* [R] */
    const float* port;    /* [R, P] */
    const int32_t* act;   /* [R, 4] */
    const float* rtg;     /* [R] */
    const int32_t* ts;    /* [R] */
} vp_dt_rows_ptrs;

/* A batch's arrays. */
typedef struct vp_dt_batch_ptrs {
    int32_t* bar;  /* [B K] */
    float* port;   /* [B K, P] */
    int32_t* act;  /* [B K, 4] */
    float* rtg;    /* [B K] */
    int32_t* ts;   /* [B K] */
    float* valid;  /* [B K] */
} vp_dt_batch_ptrs;

/* Sequence b of the batch of draw `index`: the row r = word x R / 2^32 of the draw (seed, stream
 * + b, index) ends it; its steps are the min(K, ts[r] + 1) rows of r's episode up to r, at positions
 * 0.. of the sequence, the rest padding (the start row's bar, zeros, valid 0). */
VP_HD void vp_dt_sample_seq(int64_t b, int K, int P, uint64_t seed, uint64_t stream, uint64_t index, vp_dt_rows_ptrs d,
                            vp_dt_batch_ptrs x) {
    const vp_u32x4 w = vp_rng_draw(seed, stream + (uint64_t)b, index);
    const int64_t r = (int64_t)(((uint64_t)w.v[0] * (uint64_t)d.n_rows) >> 32);
    const int64_t t = r / d.n_envs, e = r % d.n_envs;
    const int64_t back = d.ts[r] < K - 1 ? d.ts[r] : K - 1;
    const int64_t t0 = t - back;
    for (int j = 0; j < K; ++j) {
        const int64_t o = b * K + j;
        const int in = j <= back;
        const int64_t src = (t0 + (in ? j : 0)) * d.n_envs + e;
        x.bar[o] = d.bar[src];
        for (int k = 0; k < P; ++k) x.port[o * P + k] = in ? d.port[src * P + k] : 0.0f;
        for (int k = 0; k < 4; ++k) x.act[o * 4 + k] = in ? d.act[src * 4 + k] : 0;
        x.rtg[o] = in ? d.rtg[src] : 0.0f;
        x.ts[o] = in ? d.ts[src] : 0;
        x.valid[o] = in ? 1.0f : 0.0f;
    }
}

/* ---- the policy's history: the last K steps of each of N rows, a ring indexed by step % K; each
 * row counts its own steps (a score's push is kept by the observe of a step taken, and a row whose
 * window took no step, reward NaN, pushes into the same slot again at its next score) ---- */

/* The history of a policy's workspace. */
typedef struct vp_dt_hist_ptrs {
    float* e;      /* [N, K, H] encodings */
    float* port;   /* [N, K, P] portfolio vectors */
    int32_t* act;  /* [N, K, 4] actions taken (0 until observed) */
    float* rtg;    /* [N, K] returns-to-go the steps were conditioned on */
    float* rtg_now;/* [N] the return-to-go of the next step */
} vp_dt_hist_ptrs;

/* Column c (< H + P + 1) of row i at step c0 = steps[0]: its encoding, portfolio and return-to-go
 * into slot c0 % K (column 0 also clears the slot's action). */
VP_HD void vp_dt_hist_push_at(int64_t i, int c, int K, int H, int P, int32_t c0, const float* enc, const float* port,
                              vp_dt_hist_ptrs h) {
    const int64_t s = i * K + (c0 % K);
    if (c < H) h.e[s * H + c] = enc[i * H + c];
    else if (c < H + P) h.port[s * P + (c - H)] = port[i * P + (c - H)];
    else h.rtg[s] = h.rtg_now[i];
    if (c == 0)
        for (int k = 0; k < 4; ++k) h.act[s * 4 + k] = 0;
}

/* Column c (< H + P + 1) of step j of row i's sequence at step c0: the row's last n = min(c0 + 1,
 * K) steps in order at positions 0 .. n - 1 (timestep first + j, first = c0 + 1 - n), padding
 * after; into the batch x and the encodings e_seq [N K, H]. */
VP_HD void vp_dt_hist_seq_at(int64_t i, int j, int c, int K, int H, int P, int32_t c0, vp_dt_hist_ptrs h,
                             float* e_seq, vp_dt_batch_ptrs x) {
    const int n = c0 + 1 < K ? c0 + 1 : K;
    const int32_t first = c0 + 1 - n;
    const int in = j < n;
    const int64_t s = i * K + (in ? (first + j) % K : 0), o = i * K + j;
    if (c < H) e_seq[o * H + c] = in ? h.e[s * H + c] : 0.0f;
    else if (c < H + P) x.port[o * P + (c - H)] = in ? h.port[s * P + (c - H)] : 0.0f;
    else {
        x.rtg[o] = in ? h.rtg[s] : 0.0f;
        x.ts[o] = in ? first + j : 0;
        x.valid[o] = in ? 1.0f : 0.0f;
        x.bar[o] = 0;
        for (int k = 0; k < 4; ++k) x.act[o * 4 + k] = in ? h.act[s * 4 + k] : 0;
    }
}

/* Score column a of row i: the logits at the state token of the sequence's last step. */
VP_HD void vp_dt_readout_at(int64_t i, int a, int K, int L, int A, int32_t c0, const float* logits, float* scores) {
    const int j = c0 < K - 1 ? c0 : K - 1;
    scores[i * A + a] = logits[vp_dt_token(i, j, 1, L) * A + a];
}

/* Row i after the environment's step: with a reward (the window stepped) the actions taken into
 * slot steps[i] % K, the reward off the return-to-go and steps[i] + 1; with NaN nothing. */
VP_HD void vp_dt_hist_observe_at(int64_t i, int K, int32_t* steps, const int32_t* actions, const float* rewards,
                                 vp_dt_hist_ptrs h) {
    const float r = rewards[i];
    if (r != r) return;
    const int64_t s = i * K + (steps[i] % K);
    for (int k = 0; k < 4; ++k) h.act[s * 4 + k] = actions[i * 4 + k];
    h.rtg_now[i] -= r;
    if (steps[i] < 2147483647) steps[i] += 1;
}

#endif /* VP_LEARN_DT_MATH_H */
