/* Internal: hindsight relabelling on the replay ring (docs/modules.md "Hindsight relabelling"),
 * per-element math shared by the CPU loops and the CUDA kernels through replay_math.h.
 *
 * On a ring made with cfg.her = 1 the last entry of every portfolio row (index P - 1) is the
 * goal g the policy was conditioned on: a target return of the episode in reward units. Each
 * transition keeps its env (ep_env), its episode's number within that env (ep_id) and the
 * weight of the goal term in its n-step return (goal_w: gamma^(steps from s_t to the
 * episode's last step) when its window reaches the episode's end, else 0). Each env keeps its
 * running episode return (p_ret) and count of finished episodes (p_ep); when an episode ends
 * its achieved return R_ep = the sum of its rewards goes into the env's table of the last T
 * finished episodes (tab_ret, tab_id at row id mod T). A sampled row whose episode is in the
 * table is relabelled (g := R_ep in both portfolio rows) when its Philox coin falls below
 * her_ratio; its reward gains goal_w x -lambda |R_ep - g| (0 once relabelled). */
#ifndef VULPES_REPLAY_HER_H
#define VULPES_REPLAY_HER_H

#include <math.h>
#include <stdint.h>

#include "learn/replay_impl.h"
#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* A float product the CUDA compiler may not fuse into a following add. */
#if defined(__CUDA_ARCH__)
#define VP_RH_FMUL(a, b) __fmul_rn((a), (b))
#else
#define VP_RH_FMUL(a, b) ((a) * (b))
#endif

/* Push side, env e: adds the step's reward r to the running episode return; at an episode
 * end (code != 0) files R_ep under the episode's number and starts the next episode.
 * Called once per env and push, after the env's transitions of this push were written. */
VP_HD void vp_replay_her_env_end(const vp_replay_dev* d, int64_t e, float r, int code) {
    const int64_t E = d->n_envs;
    const float ret = d->p_ret[e] + r;
    if (code != 0) {
        const int32_t id = d->p_ep[e];
        const int64_t row = (int64_t)(id % d->her_tab) * E + e;
        d->tab_ret[row] = ret;
        d->tab_id[row] = id;
        d->p_ep[e] = id < INT32_MAX ? id + 1 : 0;
        d->p_ret[e] = 0.0f;
    } else {
        d->p_ret[e] = ret;
    }
}

/* Push side, slot `slot` written for env e as the m-th of c pending steps at a push with
 * done code `code`: its env, its episode and the goal term's weight gamma^(c - 1 - m) when
 * the window's last step ends the episode, else 0. */
VP_HD void vp_replay_her_slot(const vp_replay_dev* d, int64_t slot, int64_t e, int m, int c, int code) {
    d->ep_env[slot] = (int32_t)e;
    d->ep_id[slot] = d->p_ep[e];
    d->goal_w[slot] = code != 0 ? vp_replay_gamma_pow(d->gamma, c - 1 - m) : 0.0f;
}

/* Sample side: slot i's achieved return into *ret; 1 when its episode has ended and is
 * still in its env's table, else 0 (an unfinished episode, or one the table has dropped). */
VP_HD int vp_replay_her_outcome(const vp_replay_dev* d, int64_t i, float* ret) {
    const int64_t e = d->ep_env[i];
    const int32_t id = d->ep_id[i];
    if (e < 0 || e >= d->n_envs || id < 0) return 0;
    const int64_t row = (int64_t)(id % d->her_tab) * d->n_envs + e;
    if (d->tab_id[row] != id) return 0;
    *ret = d->tab_ret[row];
    return 1;
}

/* Sample side, row j of a batch gathered from slot i at sampling step `step`, its reward so
 * far `base` (extrinsic, plus intrinsic on an intrinsic ring): relabels the goal entry of both
 * portfolio rows when the episode is known and the coin (the second word of the row's Philox
 * draw, the first picked the slot) falls below her_ratio, and returns base + the goal term. */
VP_HD float vp_replay_her_gather(const vp_replay_dev* d, const vp_replay_batch_dev* o, int64_t step, int64_t j,
                                 int64_t i, float base) {
    const int P = d->n_port;
    float ret = 0.0f, g = d->port[i * P + P - 1];
    const int known = vp_replay_her_outcome(d, i, &ret);
    const uint64_t index = ((uint64_t)step << 32) | (uint64_t)(uint32_t)j;
    const float coin = vp_u32_to_unit(vp_rng_draw(d->seed, d->stream, index).v[1]);
    const int relabel = known && coin < d->her_ratio;
    if (relabel) {
        g = ret;
        o->port[j * P + P - 1] = ret;
        o->next_port[j * P + P - 1] = ret;
    }
    float term = 0.0f;
    if (known && d->goal_w[i] > 0.0f) term = VP_RH_FMUL(d->goal_w[i], -VP_RH_FMUL(d->her_lambda, fabsf(ret - g)));
    if (o->rew_goal) o->rew_goal[j] = term;
    if (o->relabelled) o->relabelled[j] = relabel;
    return base + term;
}

#endif /* VULPES_REPLAY_HER_H */
