/* The replay ring on the CPU backend: plain loops over the shared per-element math
 * (replay_math.h), in the same order and with the same sums as the CUDA kernels, so that
 * both backends write the same ring and draw the same slots. */
#include <math.h>

#include "learn/replay_impl.h"
#include "learn/replay_math.h"

vp_status vp_replay_cpu_push(vp_backend* b, const vp_replay_dev* d, const vp_replay_step_dev* s) {
    /* exclusive prefix sum of the transitions each env writes: their ring offsets, kept
     * as offsets within a tile plus tile offsets like the CUDA scan */
    int64_t total = 0, in_tile = 0;
    for (int64_t e = 0; e < d->n_envs; ++e) {
        if (e % VP_REPLAY_SCAN_TILE == 0) {
            d->tile_off[e / VP_REPLAY_SCAN_TILE] = (int32_t)total;
            in_tile = 0;
        }
        const int c = vp_replay_env_count(d, s, e);
        d->emit_off[e] = (int32_t)in_tile;
        in_tile += c;
        total += c;
    }
    vp_replay_ctrl_advance(d->ctrl, total, d->cap);

    /* append, write, drop: env by env */
    for (int64_t e = 0; e < d->n_envs; ++e) vp_replay_env_push(d, s, e, vp_replay_env_first(d, e));
    return VP_OK;
}

/* Rebuilds the sum tree's inner levels from the leaves: node i of level k is the sum of
 * nodes 2i and 2i + 1 of level k - 1 (a missing right child adds 0). */
static void build_tree(const vp_replay_dev* d) {
    for (int k = 1; k <= d->depth; ++k) {
        const float* src = k == 1 ? d->prio : d->tree + d->level_off[k - 1];
        float* dst = d->tree + d->level_off[k];
        const int64_t n_src = vp_replay_level_n(d->cap, k - 1), n_dst = vp_replay_level_n(d->cap, k);
        for (int64_t i = 0; i < n_dst; ++i) {
            float right = 2 * i + 1 < n_src ? src[2 * i + 1] : 0.0f;
            dst[i] = src[2 * i] + right;
        }
    }
}

vp_status vp_replay_cpu_sample(vp_backend* b, const vp_replay_dev* d, const vp_replay_batch_dev* o) {
    vp_replay_ctrl* ctl = d->ctrl;
    const int64_t step = ctl->sample_step, size = ctl->size;

    /* draw and gather; PER keeps each row's priority in the weight column for now */
    float total = 0.0f;
    if (d->prioritized) {
        build_tree(d);
        total = vp_replay_root(d);
    }
    for (int64_t j = 0; j < o->n; ++j) {
        int64_t i = vp_replay_sample_index(d, step, j, o->n, total, size);
        vp_replay_gather(d, o, step, j, i);
        o->w[j] = d->prioritized ? d->prio[i] : (size > 0 ? 1.0f : 0.0f);
    }

    /* PER weights: (p_min / p)^beta with p_min the batch's smallest priority */
    const float beta = vp_replay_beta(d->beta0, step, d->beta_steps);
    if (d->prioritized) {
        float p_min = INFINITY;
        for (int64_t j = 0; j < o->n; ++j) p_min = fminf(p_min, o->w[j]);
        for (int64_t j = 0; j < o->n; ++j) o->w[j] = vp_replay_is_weight(o->w[j], p_min, beta);
    }

    /* count the step */
    ctl->beta = beta;
    ctl->total = total;
    ctl->sample_step = vp_replay_count_add(step, 1);
    return VP_OK;
}

vp_status vp_replay_cpu_update(vp_backend* b, const vp_replay_dev* d, const int32_t* idx, const float* loss,
                               int64_t n) {
    vp_replay_ctrl* ctl = d->ctrl;
    /* in batch order: the last finite occurrence of a slot wins; the max sees every value */
    for (int64_t j = 0; j < n; ++j) {
        const int64_t i = idx[j];
        if (i < 0 || i >= d->cap || !isfinite(loss[j])) continue;
        const float p = vp_replay_priority(loss[j], d->eps, d->alpha);
        d->prio[i] = p;
        if (p > ctl->max_priority) ctl->max_priority = p;
    }
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

const vp_replay_kernels vp_replay_cpu = VP_KERNEL_TABLE(VP_REPLAY_KERNELS, vp_replay, vp_replay_cpu);
