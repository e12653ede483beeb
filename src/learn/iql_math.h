/* Internal: the per-sample math of IQL, written once (VP_HD) for the CPU loops (iql_cpu.c) and
 * the CUDA kernels (iql_cuda.cu): the expectile loss, the joint Q of a branching action, one
 * sample's losses with their gradients, and the draw of a dataset row. docs/iql.md states the
 * formulas. */
#ifndef VP_LEARN_IQL_MATH_H
#define VP_LEARN_IQL_MATH_H

#include <math.h>
#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/defs.h"
#include "vulpes/rng.h"

/* The settings of one loss launch, passed by value. */
typedef struct vp_iql_loss_dims {
    int64_t m;               /* B: samples of the batch */
    vp_action_layout layout; /* branches and heads (A = layout.n_heads) */
    float expectile;         /* tau of L_tau */
    float beta;              /* inverse temperature of the weights */
    float adv_clip;          /* largest weight */
    float gamma;             /* discount */
} vp_iql_loss_dims;

/* L_tau(u) = |tau - 1(u < 0)| u^2; its derivative in u into *du. */
VP_HD float vp_iql_expectile(float u, float tau, float* du) {
    const float w = u < 0.0f ? 1.0f - tau : tau;
    *du = 2.0f * w * u;
    return w * u * u;
}

/* The joint Q(s, a) of per-head values q [A]: the mean over the branches of q at each branch's
 * choice a [n_branches]. */
VP_HD float vp_iql_joint_q(const vp_action_layout* l, const float* q /* [A] */, const int32_t* a) {
    float s = 0.0f;
    for (int br = 0; br < l->n_branches; ++br) s += q[l->offset[br] + a[br]];
    return s / (float)l->n_branches;
}

/* The advantage weight min(exp(beta adv), clip), exactly clip once beta adv reaches log(clip). */
VP_HD float vp_iql_weight(float adv, float beta, float clip) {
    const float x = beta * adv;
    return x >= logf(clip) ? clip : expf(x);
}

/* Log-probability of choice `a` under one branch's logits z [n], its probabilities into p [n]
 * (max-shifted log-sum-exp). */
VP_HD float vp_iql_branch_logp(const float* z /* [n] */, int n, int a, float* p /* [n] */) {
    float mx = z[0];
    for (int j = 1; j < n; ++j) mx = z[j] > mx ? z[j] : mx;
    float s = 0.0f;
    for (int j = 0; j < n; ++j) s += expf(z[j] - mx);
    const float lse = mx + logf(s);
    for (int j = 0; j < n; ++j) p[j] = expf(z[j] - lse);
    return z[a] - lse;
}

/* Columns of one sample's terms (summed over the batch, then divided by its size). */
enum {
    VP_IQL_T_V = 0,   /* L_tau(qt - v) */
    VP_IQL_T_Q,       /* (q1 - y)^2 + (q2 - y)^2 */
    VP_IQL_T_PI,      /* -w log pi(a | s) */
    VP_IQL_T_ADV,     /* qt - v */
    VP_IQL_T_WEIGHT,  /* w */
    VP_IQL_T_QVAL,    /* q1 */
    VP_IQL_T_VVAL,    /* v */
    VP_IQL_T_COUNT
};

/* One sample's terms and gradients: the online Q heads q1, q2 [A], the target Q heads qt1, qt2
 * [A], the value v = V(s), v1 = V(s'), the policy logits z [A], the action a, reward r and done.
 * With qt = min(joint qt1, joint qt2), y = r + gamma (1 - done) v1, w = vp_iql_weight(qt - v):
 * terms t [VP_IQL_T_COUNT] (not divided by B) and the gradients of the batch loss
 * mean(L_tau(qt - v)) + mean((q1 - y)^2 + (q2 - y)^2) + mean(-w log pi(a | s)) (qt, y and w held
 * constant) d q1, d q2, d z [A] and *dv. */
VP_HD void vp_iql_sample_loss(const vp_iql_loss_dims* d, const float* q1, const float* q2, const float* qt1,
                              const float* qt2, float v, float v1, const float* z, const int32_t* a, float r,
                              float done, float* t /* [VP_IQL_T_COUNT] */, float* dq1 /* [A] */, float* dq2 /* [A] */,
                              float* dz /* [A] */, float* dv) {
    const vp_action_layout* l = &d->layout;
    const float inv_m = 1.0f / (float)d->m, inv_nb = 1.0f / (float)l->n_branches;
    // the value toward the target Q's expectile
    const float j1 = vp_iql_joint_q(l, qt1, a), j2 = vp_iql_joint_q(l, qt2, a);
    const float qt = j1 < j2 ? j1 : j2;
    const float adv = qt - v;
    float du = 0.0f;
    t[VP_IQL_T_V] = vp_iql_expectile(adv, d->expectile, &du);
    *dv = -du * inv_m;
    // the Q heads toward r + gamma (1 - done) V(s')
    const float y = r + d->gamma * (1.0f - done) * v1;
    const float e1 = vp_iql_joint_q(l, q1, a) - y, e2 = vp_iql_joint_q(l, q2, a) - y;
    t[VP_IQL_T_Q] = e1 * e1 + e2 * e2;
    // the policy by advantage-weighted log-likelihood
    const float w = vp_iql_weight(adv, d->beta, d->adv_clip);
    float lp = 0.0f;
    for (int br = 0; br < l->n_branches; ++br) {
        const int o = l->offset[br], n = l->size[br];
        float p[8];
        lp += vp_iql_branch_logp(z + o, n, a[br], p);
        for (int j = 0; j < n; ++j) {
            const float hit = j == a[br] ? 1.0f : 0.0f;
            dz[o + j] = -w * (hit - p[j]) * inv_m;
            dq1[o + j] = hit * 2.0f * e1 * inv_nb * inv_m;
            dq2[o + j] = hit * 2.0f * e2 * inv_nb * inv_m;
        }
    }
    t[VP_IQL_T_PI] = -w * lp;
    t[VP_IQL_T_ADV] = adv;
    t[VP_IQL_T_WEIGHT] = w;
    t[VP_IQL_T_QVAL] = e1 + y;
    t[VP_IQL_T_VVAL] = v;
}

/* Row k of update `update` of a batch of B from n = T x E dataset rows: a uniform index in
 * [0, n) from the Philox draw (seed, stream, update x B + k) (64 bits reduced mod n). */
VP_HD int64_t vp_iql_row_at(int64_t n, int64_t B, uint64_t seed, uint64_t stream, int64_t update, int64_t k) {
    const vp_u32x4 d = vp_rng_draw(seed, stream, (uint64_t)update * (uint64_t)B + (uint64_t)k);
    const uint64_t x = ((uint64_t)d.v[0] << 32) | (uint64_t)d.v[1];
    return (int64_t)(x % (uint64_t)n);
}

#endif /* VP_LEARN_IQL_MATH_H */
