/* Internal: the per-sample math of PPO, written once (VP_HD) for the CPU loops (ppo_cpu.c)
 * and the CUDA kernels (ppo_cuda.cu): the branching categorical (log-probability, entropy,
 * sampling), GAE(lambda) of one env, the clipped surrogate with the optional clipped value
 * loss and the entropy bonus with their gradients, the minibatch advantage normalisation
 * and the per-epoch permutation. docs/ppo.md states the formulas. */
#ifndef VP_LEARN_PPO_MATH_H
#define VP_LEARN_PPO_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* Statistics columns of one minibatch's per-sample terms (summed over the minibatch, then
 * divided by its size). */
enum {
    VP_PPO_T_PG = 0,   /* max(-A ratio, -A clip(ratio)) */
    VP_PPO_T_V,        /* 0.5 max((v - R)^2, (v_clip - R)^2), or 0.5 (v - R)^2 unclipped */
    VP_PPO_T_ENT,      /* entropy of the joint policy (sum over the branches) */
    VP_PPO_T_KL,       /* (ratio - 1) - log ratio: CleanRL's approx_kl */
    VP_PPO_T_CLIPFRAC, /* 1 where |ratio - 1| > clip */
    VP_PPO_T_OLD_KL,   /* -log ratio: CleanRL's old_approx_kl */
    VP_PPO_T_COUNT
};

/* The settings of one loss launch, passed by value. */
typedef struct vp_ppo_loss_dims {
    int64_t m;               /* M: samples of the minibatch */
    vp_action_layout layout; /* branches and heads (A = layout.n_heads) */
    float clip;              /* epsilon of the surrogate */
    float vf_clip;           /* value clip range (0: the plain squared error) */
    float ent_coef;          /* entropy bonus coefficient */
    float vf_coef;           /* value loss coefficient */
} vp_ppo_loss_dims;

/* Log-probability of choice `a` in one branch's logits z [n] and the branch's entropy; when
 * p is not NULL, also its probabilities p [n]. Max-shifted log-sum-exp. */
VP_HD float vp_ppo_branch(const float* z /* [n] */, int n, int a, float* ent, float* p /* [n] or NULL */) {
    float mx = z[0];
    for (int j = 1; j < n; ++j) mx = z[j] > mx ? z[j] : mx;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += expf(z[j] - mx);
    const float lse = mx + logf(s);
    float h = 0.0f;
    for (int j = 0; j < n; ++j) {
        const float lp = z[j] - lse, pj = expf(lp);
        h -= pj * lp;
        if (p) p[j] = pj;
    }
    *ent = h;
    return z[a] - lse;
}

/* Joint log-probability of actions a [n_branches] under logits z [A] (the sum over the
 * branches) and the joint entropy (the sum of the branches' entropies) into *ent. */
VP_HD float vp_ppo_logp(const vp_action_layout* l, const float* z /* [A] */, const int32_t* a, float* ent) {
    float lp = 0.0f, h = 0.0f;
    for (int br = 0; br < l->n_branches; ++br) {
        float hb = 0.0f;
        lp += vp_ppo_branch(z + l->offset[br], l->size[br], a[br], &hb, (float*)0);
        h += hb;
    }
    *ent = h;
    return lp;
}

/* Samples one choice per branch from logits z [A] into a [n_branches] by the inverse CDF of
 * each branch's softmax at a uniform from word br of `draw`; returns the joint log-probability
 * and writes the joint entropy into *ent. */
VP_HD float vp_ppo_sample(const vp_action_layout* l, const float* z /* [A] */, vp_u32x4 draw,
                          int32_t* a /* [n_branches] */, float* ent) {
    for (int br = 0; br < l->n_branches; ++br) {
        const float* zb = z + l->offset[br];
        const int n = l->size[br];
        float mx = zb[0];
        for (int j = 1; j < n; ++j) mx = zb[j] > mx ? zb[j] : mx;
        float s = 0.0f;
        for (int j = 0; j < n; ++j) s += expf(zb[j] - mx);
        // the first choice whose cumulative mass exceeds u * total (the last one if rounding leaves none)
        const float u = vp_u32_to_unit(draw.v[br & 3]) * s;
        float c = 0.0f;
        int pick = n - 1;
        for (int j = 0; j < n; ++j) {
            c += expf(zb[j] - mx);
            if (u < c) {
                pick = j;
                break;
            }
        }
        a[br] = pick;
    }
    return vp_ppo_logp(l, z, a, ent);
}

/* GAE(lambda) of env i over T steps of E envs, rows t * E + i of reward, done, value [T * E]
 * (done 1: the episode ended at step t, so step t + 1 starts a new one), bootstrapped from
 * last_value (the value of the observation after step T - 1): writes adv and ret = adv + value. */
VP_HD void vp_ppo_gae_env(int64_t T, int64_t E, int64_t i, const float* reward, const float* done,
                          const float* value, float last_value, float gamma, float lambda, float* adv, float* ret) {
    float run = 0.0f, next_v = last_value;
    for (int64_t t = T - 1; t >= 0; --t) {
        const int64_t r = t * E + i;
        const float keep = 1.0f - done[r];
        const float delta = reward[r] + gamma * next_v * keep - value[r];
        run = delta + gamma * lambda * keep * run;
        adv[r] = run;
        ret[r] = run + value[r];
        next_v = value[r];
    }
}

/* The gradient share PyTorch's torch.max(a, b) gives its first argument: 1, 0.5 on a tie, 0. */
VP_HD float vp_ppo_max_share(float a, float b) { return a > b ? 1.0f : (a == b ? 0.5f : 0.0f); }

/* One sample's loss terms and gradients: logits z [A] and value v of the current network,
 * action a, the collection's log-probability old_lp and value old_v, the normalised advantage
 * adv and the return ret. Writes terms t [VP_PPO_T_COUNT] (not divided by M) and the
 * gradients of the minibatch loss (pg + vf_coef v - ent_coef ent, each the minibatch mean)
 * d z [A] and *dv. */
VP_HD void vp_ppo_sample_loss(const vp_ppo_loss_dims* d, const float* z /* [A] */, float v, const int32_t* a,
                              float old_lp, float old_v, float adv, float ret, float* t /* [VP_PPO_T_COUNT] */,
                              float* dz /* [A] */, float* dv) {
    const vp_action_layout* l = &d->layout;
    const float inv_m = 1.0f / (float)d->m;
    float ent = 0.0f;
    const float lp = vp_ppo_logp(l, z, a, &ent);
    const float logratio = lp - old_lp, ratio = expf(logratio);
    // the clipped surrogate: d pg / d ratio through torch.max and torch.clamp
    const float lo = 1.0f - d->clip, hi = 1.0f + d->clip;
    const float rc = ratio < lo ? lo : (ratio > hi ? hi : ratio);
    const float pg1 = -adv * ratio, pg2 = -adv * rc;
    const float s1 = vp_ppo_max_share(pg1, pg2), s2 = vp_ppo_max_share(pg2, pg1);
    const float in_clip = (ratio >= lo && ratio <= hi) ? 1.0f : 0.0f;
    const float d_lp = (-adv * s1 + -adv * s2 * in_clip) * ratio * inv_m;
    t[VP_PPO_T_PG] = pg1 > pg2 ? pg1 : pg2;
    t[VP_PPO_T_ENT] = ent;
    t[VP_PPO_T_KL] = (ratio - 1.0f) - logratio;
    t[VP_PPO_T_CLIPFRAC] = fabsf(ratio - 1.0f) > d->clip ? 1.0f : 0.0f;
    t[VP_PPO_T_OLD_KL] = -logratio;
    // d log p / d z = onehot - p; d H / d z = -p (log p + H_branch), per branch
    for (int br = 0; br < l->n_branches; ++br) {
        const int o = l->offset[br], n = l->size[br];
        float p[8], hb = 0.0f;
        vp_ppo_branch(z + o, n, a[br], &hb, p);
        for (int j = 0; j < n; ++j) {
            const float lpj = logf(p[j] > 1e-38f ? p[j] : 1e-38f);
            const float g_lp = (j == a[br] ? 1.0f : 0.0f) - p[j];
            const float g_h = -p[j] * (lpj + hb);
            dz[o + j] = d_lp * g_lp - d->ent_coef * inv_m * g_h;
        }
    }
    // the value loss, clipped around the collection's value when vf_clip > 0
    const float e = v - ret;
    if (d->vf_clip > 0.0f) {
        const float dvv = v - old_v;
        const float dc = dvv < -d->vf_clip ? -d->vf_clip : (dvv > d->vf_clip ? d->vf_clip : dvv);
        const float ec = old_v + dc - ret;
        const float u = e * e, c = ec * ec;
        const float su = vp_ppo_max_share(u, c), sc = vp_ppo_max_share(c, u);
        const float c_in = (dvv >= -d->vf_clip && dvv <= d->vf_clip) ? 1.0f : 0.0f;
        t[VP_PPO_T_V] = 0.5f * (u > c ? u : c);
        *dv = d->vf_coef * inv_m * (su * e + sc * ec * c_in);
    } else {
        t[VP_PPO_T_V] = 0.5f * e * e;
        *dv = d->vf_coef * inv_m * e;
    }
}

/* Mean and std + 1e-8 of x [n] (std with Bessel's correction, as torch.std; n == 1: std 0),
 * in double for a sum whose order is fixed; CleanRL's normalisation is (x - mean) / den. */
VP_HD void vp_ppo_adv_moments(const float* x, int64_t n, float* mean, float* den) {
    double s = 0.0;
    for (int64_t k = 0; k < n; ++k) s += (double)x[k];
    const double mu = s / (double)n;
    double q = 0.0;
    for (int64_t k = 0; k < n; ++k) q += ((double)x[k] - mu) * ((double)x[k] - mu);
    const double sd = n > 1 ? sqrt(q / (double)(n - 1)) : 0.0;
    *mean = (float)mu;
    *den = (float)(sd + 1e-8);
}

/* The round function of the permutation's Feistel network: a murmur3 finaliser of x mixed
 * with the round key. */
VP_HD uint32_t vp_ppo_feistel_round(uint32_t x, uint32_t key) {
    uint32_t z = (x * 0x9E3779B1u) ^ key;
    z ^= z >> 15;
    z *= 0x85EBCA77u;
    z ^= z >> 13;
    z *= 0xC2B2AE3Du;
    z ^= z >> 16;
    return z;
}

/* Element k (0 <= k < n <= 2^31) of the permutation of epoch `epoch` of 0 .. n - 1: a 4-round
 * Feistel network over 2h bits (the least h with 4^h >= n), its round keys the Philox words
 * (seed, stream, epoch), applied again while the value is n or more (cycle walking: the walk
 * from k stays on k's cycle of the bijection, so it ends below n, in fewer than 4 steps on
 * average). Each element is computed alone, so every row of a permutation in parallel. */
VP_HD int64_t vp_ppo_perm_at(int64_t n, uint64_t seed, uint64_t stream, uint64_t epoch, int64_t k) {
    int h = 1;
    while (h < 16 && ((int64_t)1 << (2 * h)) < n) ++h;
    const uint32_t mask = (uint32_t)(((uint64_t)1 << h) - 1u);
    const vp_u32x4 key = vp_rng_draw(seed, stream, epoch);
    uint64_t x = (uint64_t)k;
    do {
        uint32_t L = (uint32_t)(x >> h), R = (uint32_t)x & mask;
        for (int r = 0; r < 4; ++r) {
            const uint32_t f = vp_ppo_feistel_round(R, key.v[r]) & mask;
            const uint32_t nl = R;
            R = L ^ f;
            L = nl;
        }
        x = ((uint64_t)L << h) | R;
    } while (x >= (uint64_t)n);
    return (int64_t)x;
}

#endif /* VP_LEARN_PPO_MATH_H */
