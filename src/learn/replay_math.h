/* Internal: the replay ring's per-element math, written once for the CPU loops
 * (replay_cpu.c) and the CUDA kernels (replay_cuda.cu) so that both backends compute
 * the same bits. Float expressions avoid a*b+c shapes the CUDA compiler would contract
 * into fused multiply-adds; where a fused op is wanted it is spelled fma / fmaf. Powers use
 * vp_replay_pow rather than powf, whose last bits differ between the C library and CUDA. */
#ifndef VULPES_REPLAY_MATH_H
#define VULPES_REPLAY_MATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "learn/replay_impl.h"
#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* ---- schedules and scalar formulas ------------------------------------------------------- */

/* Nodes of sum-tree level k over `cap` leaves: ceil(cap / 2^k) (level 0: the leaves). */
VP_HD int64_t vp_replay_level_n(int64_t cap, int k) { return ((cap - 1) >> k) + 1; }

/* gamma^k by k multiplications in order. */
VP_HD float vp_replay_gamma_pow(float gamma, int k) {
    float g = 1.0f;
    for (int i = 0; i < k; ++i) g = g * gamma;
    return g;
}

/* n-step return of pending rewards r[i..c-1]: sum_j gamma^(j-i) r[j], by Horner from the
 * last reward with fused multiply-adds. r: [c]. */
VP_HD float vp_replay_nstep_return(const float* r, int i, int c, float gamma) {
    float g = r[c - 1];
    for (int j = c - 2; j >= i; --j) g = fmaf(gamma, g, r[j]);
    return g;
}

/* IS exponent at sampling step `step`: beta0 + (1 - beta0) min(1, step / steps). */
VP_HD float vp_replay_beta(float beta0, int64_t step, int64_t steps) {
    if (step >= steps) return 1.0f;
    return fmaf(1.0f - beta0, (float)step / (float)steps, beta0);
}

/* A double product the CUDA compiler may not fuse into a following add. */
#if defined(__CUDA_ARCH__)
#define VP_RP_DMUL(a, b) __dmul_rn((a), (b))
#else
#define VP_RP_DMUL(a, b) ((a) * (b))
#endif

/* x^a for float x >= 0 and a >= 0, within an ulp of the true power, from IEEE-exact steps
 * only (double add, multiply, divide, fma, floor, bit moves), so the CPU and CUDA give the
 * same bits where powf would differ in the last ones: x = m 2^e, log2 m by the atanh series,
 * then 2^y by splitting y into an integer and a Taylor polynomial over [-1/2, 1/2]. */
VP_HD float vp_replay_pow(float x, float a) {
    if (a == 0.0f) return 1.0f;
    if (!(x > 0.0f)) return 0.0f;
    if (a == 1.0f || x == 1.0f) return x;
    if (x == INFINITY) return INFINITY;

    /* x = m 2^e with m in [sqrt(1/2), sqrt(2)) (subnormals scaled up by 2^24 first) */
    int e = 0;
    if (x < 1.17549435e-38f) {
        x = x * 16777216.0f;
        e = -24;
    }
#if defined(__CUDA_ARCH__)
    uint32_t bits = __float_as_uint(x);
#else
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
#endif
    e += (int)((bits >> 23) & 0xffu) - 127;
    double m = 1.0 + VP_RP_DMUL((double)(bits & 0x7fffffu), 1.0 / 8388608.0);
    if (m > 1.4142135623730951) {
        m = VP_RP_DMUL(m, 0.5);
        e += 1;
    }

    /* ln m = 2 s (1 + s^2/3 + s^4/5 + ... + s^20/21), s = (m - 1) / (m + 1), |s| < 0.172 */
    const double s = (m - 1.0) / (m + 1.0), s2 = VP_RP_DMUL(s, s);
    double q = 1.0 / 21.0;
    q = fma(q, s2, 1.0 / 19.0);
    q = fma(q, s2, 1.0 / 17.0);
    q = fma(q, s2, 1.0 / 15.0);
    q = fma(q, s2, 1.0 / 13.0);
    q = fma(q, s2, 1.0 / 11.0);
    q = fma(q, s2, 1.0 / 9.0);
    q = fma(q, s2, 1.0 / 7.0);
    q = fma(q, s2, 1.0 / 5.0);
    q = fma(q, s2, 1.0 / 3.0);
    q = fma(q, s2, 1.0);
    const double ln_m = VP_RP_DMUL(VP_RP_DMUL(2.0, s), q);

    /* y = a log2 x; the float result over- or underflows outside [-151, 128] */
    const double y = VP_RP_DMUL((double)a, fma(ln_m, 1.4426950408889634, (double)e));
    if (y >= 128.0) return INFINITY;
    if (y < -151.0) return 0.0f;

    /* 2^y = 2^k e^(f ln 2), k = round(y), |f| <= 1/2: Taylor to degree 13 (error < 1e-17) */
    const double k = floor(y + 0.5);
    const double t = VP_RP_DMUL(y - k, 0.6931471805599453);
    double p = 1.0 / 6227020800.0;
    p = fma(p, t, 1.0 / 479001600.0);
    p = fma(p, t, 1.0 / 39916800.0);
    p = fma(p, t, 1.0 / 3628800.0);
    p = fma(p, t, 1.0 / 362880.0);
    p = fma(p, t, 1.0 / 40320.0);
    p = fma(p, t, 1.0 / 5040.0);
    p = fma(p, t, 1.0 / 720.0);
    p = fma(p, t, 1.0 / 120.0);
    p = fma(p, t, 1.0 / 24.0);
    p = fma(p, t, 1.0 / 6.0);
    p = fma(p, t, 0.5);
    p = fma(p, t, 1.0);
    p = fma(p, t, 1.0);
    uint64_t scale_bits = (uint64_t)((int64_t)k + 1023) << 52;
#if defined(__CUDA_ARCH__)
    double scale = __longlong_as_double((long long)scale_bits);
#else
    double scale;
    memcpy(&scale, &scale_bits, sizeof scale);
#endif
    return (float)VP_RP_DMUL(p, scale);
}

/* Stored priority of a finite loss: (max(loss, 0) + eps)^alpha. */
VP_HD float vp_replay_priority(float loss, float eps, float alpha) {
    float l = loss > 0.0f ? loss : 0.0f;
    return vp_replay_pow(l + eps, alpha);
}

/* Normalised IS weight of a slot with priority p in a batch whose smallest priority is
 * p_min: (N P(i))^-beta / max_batch (N P(j))^-beta = (p_min / p)^beta; 0 when either is 0
 * (an empty ring). */
VP_HD float vp_replay_is_weight(float p, float p_min, float beta) {
    if (!(p > 0.0f) || !(p_min > 0.0f)) return 0.0f;
    return vp_replay_pow(p_min / p, beta);
}

/* ---- drawing a slot ---------------------------------------------------------------------------- */

/* The Philox word of sample j at sampling step `step` (index = step * 2^32 + j). */
VP_HD uint32_t vp_replay_word(const vp_replay_dev* d, int64_t step, int64_t j) {
    uint64_t index = ((uint64_t)step << 32) | (uint64_t)(uint32_t)j;
    return vp_rng_draw(d->seed, d->stream, index).v[0];
}

/* The point of stratum j of n in [0, total): (j + unit) * (total / n). */
VP_HD float vp_replay_stratum_u(int64_t j, int64_t n, float unit, float total) {
    return ((float)j + unit) * (total / (float)n);
}

/* A uniform slot in [0, size) from one word (multiply-shift, integer only). */
VP_HD int64_t vp_replay_uniform_index(uint32_t word, int64_t size) {
    return (int64_t)(((uint64_t)word * (uint64_t)size) >> 32);
}

/* The sum tree's root: the priority mass of the ring. */
VP_HD float vp_replay_root(const vp_replay_dev* d) {
    return d->depth == 0 ? d->prio[0] : d->tree[d->level_off[d->depth]];
}

/* Walks the sum tree from the root to the leaf holding mass point u: left when u is below
 * the left child's mass (or the right child is empty), else right with u reduced by the
 * left mass. Only children of positive mass are entered, so a leaf of positive priority
 * is reached whenever the root is positive, even when rounding left u past the end. */
VP_HD int64_t vp_replay_descend(const vp_replay_dev* d, float u) {
    int64_t i = 0;
    for (int k = d->depth; k > 0; --k) {
        const float* lvl = k == 1 ? d->prio : d->tree + d->level_off[k - 1];
        int64_t n = vp_replay_level_n(d->cap, k - 1);
        int64_t l = 2 * i;
        float left = lvl[l];
        float right = l + 1 < n ? lvl[l + 1] : 0.0f;
        if (u < left || !(right > 0.0f)) {
            i = l;
        } else {
            u -= left;
            i = l + 1;
        }
    }
    return i;
}

/* Slot of sample j of n at sampling step `step`: PER descends the tree at the point of
 * stratum j; uniform maps the word onto [0, size). 0 from an empty ring. */
VP_HD int64_t vp_replay_sample_index(const vp_replay_dev* d, int64_t step, int64_t j, int64_t n, float total,
                                     int64_t size) {
    uint32_t w = vp_replay_word(d, step, j);
    if (d->prioritized) {
        if (!(total > 0.0f)) return 0;
        return vp_replay_descend(d, vp_replay_stratum_u(j, n, vp_u32_to_unit(w), total));
    }
    return size > 0 ? vp_replay_uniform_index(w, size) : 0;
}

#include "learn/replay_her.h"

/* Copies slot i of the ring into row j of a batch drawn at sampling step `step` (a HER ring
 * also relabels the row's goal, replay_her.h). */
VP_HD void vp_replay_gather(const vp_replay_dev* d, const vp_replay_batch_dev* o, int64_t step, int64_t j,
                            int64_t i) {
    const int P = d->n_port, NB = d->n_branch;
    o->idx[j] = (int32_t)i;
    o->bar[j] = d->bar[i];
    o->next_bar[j] = d->next_bar[i];
    for (int k = 0; k < P; ++k) {
        o->port[j * P + k] = d->port[i * P + k];
        o->next_port[j * P + k] = d->next_port[i * P + k];
    }
    for (int k = 0; k < NB; ++k) o->act[j * NB + k] = d->act[i * NB + k];
    /* the learner's reward: the extrinsic return plus, on an intrinsic ring, the intrinsic one */
    const float ri = d->intrinsic ? d->rew_int[i] : 0.0f;
    const float base = d->intrinsic ? d->rew[i] + ri : d->rew[i];
    /* a HER ring adds the goal term after relabelling */
    o->rew[j] = d->her ? vp_replay_her_gather(d, o, step, j, i, base) : base;
    if (!d->her && o->rew_goal) o->rew_goal[j] = 0.0f;
    if (!d->her && o->relabelled) o->relabelled[j] = 0;
    if (o->rew_int) o->rew_int[j] = ri;
    if (o->port1)
        for (int k = 0; k < P; ++k) o->port1[j * P + k] = d->intrinsic ? d->port1[i * P + k] : 0.0f;
    if (o->done1) o->done1[j] = d->intrinsic ? d->done1[i] : 0.0f;
    o->disc[j] = d->disc[i];
}

/* ---- push ----------------------------------------------------------------------------------- */

/* Env e's done code at this push: 0 running, 1 terminal, 2 truncated. */
VP_HD int vp_replay_done_code(const vp_replay_step_dev* s, int64_t e) {
    if (s->done_f32) {
        float v = ((const float*)s->done)[e];
        return v == 0.0f ? 0 : (v == 2.0f ? 2 : 1);
    }
    int32_t v = ((const int32_t*)s->done)[e];
    return v == VP_REPLAY_RUNNING ? 0 : (v == VP_REPLAY_TRUNCATED ? 2 : 1);
}

/* Transitions env e writes at this push: all pending steps at an episode end, the oldest
 * one when the window is full, else none. */
VP_HD int vp_replay_env_count(const vp_replay_dev* d, const vp_replay_step_dev* s, int64_t e) {
    int c = d->p_count[e] + 1;
    if (vp_replay_done_code(s, e) != 0) return c;
    return c == d->n_step ? 1 : 0;
}

/* The push's copies run VP_REPLAY_RUN values at a time, every load of a run before its
 * first store: the ring's rows could alias the step's for all a compiler knows, so a load
 * written after a store waits for it, and a copy that alternates the two pays a memory round
 * trip per value. */
#define VP_REPLAY_RUN 8

/* dst[k] = src[k] and dst2[k] = src2[k] for k < n (dst2 / src2 may be NULL): the values only. */
VP_HD void vp_replay_copy_rows(float* dst, const float* src, float* dst2, const float* src2, int n) {
    for (int k0 = 0; k0 < n; k0 += VP_REPLAY_RUN) {
        float v[VP_REPLAY_RUN] = {0}, v2[VP_REPLAY_RUN] = {0};
        const int m = n - k0 < VP_REPLAY_RUN ? n - k0 : VP_REPLAY_RUN;
        for (int i = 0; i < VP_REPLAY_RUN; ++i)
            if (i < m) {
                v[i] = src[k0 + i];
                if (src2) v2[i] = src2[k0 + i];
            }
        for (int i = 0; i < VP_REPLAY_RUN; ++i)
            if (i < m) {
                dst[k0 + i] = v[i];
                if (dst2) dst2[k0 + i] = v2[i];
            }
    }
}

/* Appends the step of env e to its pending window, writes the transitions it completes
 * into ring positions first, first + 1, ... (mod C) at the running max priority, and
 * drops them from the window. Each part reads what it needs before it writes (the values
 * and their order of use are those of a plain copy). */
VP_HD void vp_replay_env_push(const vp_replay_dev* d, const vp_replay_step_dev* s, int64_t e, int64_t first) {
    const int64_t E = d->n_envs;
    const int P = d->n_port, NB = d->n_branch, n = d->n_step;
    int c = d->p_count[e], st = d->p_start[e];
    const int code = vp_replay_done_code(s, e);
    const float max_p = d->ctrl->max_priority;

    /* the pending rewards (steps st .. st + c - 1, none of them the slot appended below),
     * then step t behind them */
    float rw[VP_REPLAY_MAX_NSTEP], ri[VP_REPLAY_MAX_NSTEP];
    for (int i = 0; i < c; ++i) rw[i] = d->p_rew[((st + i) % n) * E + e];
    if (d->intrinsic)
        for (int i = 0; i < c; ++i) ri[i] = d->p_rew_int[((st + i) % n) * E + e];
    const int64_t q = (st + c) % n, qe = q * E + e;
    {
        const int32_t bar = s->bar[e], wend = s->wend[e];
        const float rew = s->rew[e], rint = d->intrinsic && s->rew_int ? s->rew_int[e] : 0.0f;
        int32_t act[VP_REPLAY_MAX_BRANCHES] = {0};
        for (int k = 0; k < VP_REPLAY_MAX_BRANCHES; ++k)
            if (k < NB) act[k] = s->act[e * NB + k];
        d->p_bar[qe] = bar;
        d->p_wend[qe] = wend;
        d->p_rew[qe] = rew;
        for (int k = 0; k < VP_REPLAY_MAX_BRANCHES; ++k)
            if (k < NB) d->p_act[qe * NB + k] = act[k];
        rw[c] = rew;
        if (d->intrinsic) {
            d->p_rew_int[qe] = rint;
            ri[c] = rint;
        }
        vp_replay_copy_rows(d->p_port + qe * P, s->port + e * P, d->intrinsic ? d->p_port1 + qe * P : NULL,
                            d->intrinsic ? s->next_port + e * P : NULL, P);
    }
    c += 1;

    /* write the completed transitions, oldest first */
    const int emit = code != 0 ? c : (c == n ? 1 : 0);
    if (emit > 0) {
        const int32_t next_bar = s->next_bar[e];
        for (int m = 0; m < emit; ++m) {
            const int64_t pe = ((st + m) % n) * E + e, slot = (first + m) % d->cap;
            const int32_t bar = d->p_bar[pe], wend = d->p_wend[pe];
            int32_t act[VP_REPLAY_MAX_BRANCHES] = {0};
            for (int k = 0; k < VP_REPLAY_MAX_BRANCHES; ++k)
                if (k < NB) act[k] = d->p_act[pe * NB + k];
            vp_replay_copy_rows(d->port + slot * P, d->p_port + pe * P, d->next_port + slot * P,
                                s->next_port + e * P, P);
            d->bar[slot] = bar;
            d->wend[slot] = wend;
            d->next_bar[slot] = next_bar;
            for (int k = 0; k < VP_REPLAY_MAX_BRANCHES; ++k)
                if (k < NB) d->act[slot * NB + k] = act[k];
            d->rew[slot] = vp_replay_nstep_return(rw, m, c, d->gamma);
            if (d->intrinsic) {
                d->rew_int[slot] = vp_replay_nstep_return(ri, m, c, d->gamma);
                vp_replay_copy_rows(d->port1 + slot * P, d->p_port1 + pe * P, NULL, NULL, P);
                /* pending steps before the last all went on; the last one ends the episode when code != 0 */
                d->done1[slot] = code != 0 && m == c - 1 ? 1.0f : 0.0f;
            }
            d->disc[slot] = code == 1 ? 0.0f : vp_replay_gamma_pow(d->gamma, c - m);
            d->done[slot] = code;
            d->prio[slot] = max_p;
            if (d->her) vp_replay_her_slot(d, slot, e, m, c, code);
        }
    }
    if (d->her) vp_replay_her_env_end(d, e, s->rew[e], code);

    /* keep what is still pending */
    if (code != 0) {
        c = 0;
        st = 0;
    } else if (emit > 0) {
        st = (st + 1) % n;
        c -= 1;
    }
    d->p_count[e] = c;
    d->p_start[e] = st;
}

/* Ring position (before the modulo) of env e's first transition at this push. */
VP_HD int64_t vp_replay_env_first(const vp_replay_dev* d, int64_t e) {
    return d->ctrl->base + d->tile_off[e / VP_REPLAY_SCAN_TILE] + d->emit_off[e];
}

/* a + b for a counter and b >= 0, held at INT64_MAX instead of overflowing. */
VP_HD int64_t vp_replay_count_add(int64_t a, int64_t b) { return a > INT64_MAX - b ? INT64_MAX : a + b; }

/* Moves the ring's counters past a push that wrote `total` transitions (0 <= total <= cap). */
VP_HD void vp_replay_ctrl_advance(vp_replay_ctrl* ctl, int64_t total, int64_t cap) {
    ctl->base = ctl->head;
    ctl->head = (ctl->head + total) % cap;
    ctl->size = ctl->size < cap - total ? ctl->size + total : cap;
    ctl->emitted = vp_replay_count_add(ctl->emitted, total);
    ctl->pushes = vp_replay_count_add(ctl->pushes, 1);
}

#endif /* VULPES_REPLAY_MATH_H */
