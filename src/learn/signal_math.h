/* Internal: the bus math, written once (VP_HD) for the CPU loops (signal_cpu.c) and the
 * CUDA kernels (cuda_signals.cu): what one row or one sample adds to the step's sums, the
 * finish (means, EMAs, drift), the rules and the learning-rate schedule. The sums are
 * joined in another order on each backend, so the two agree to rounding, not bit for bit. */
#ifndef VP_LEARN_SIGNAL_MATH_H
#define VP_LEARN_SIGNAL_MATH_H

#include <math.h>
#include <stdint.h>

#include "learn/signal_impl.h"
#include "vulpes/action.h"
#include "vulpes/defs.h"
#include "vulpes/learner.h"

/* The step's sums, in slot order of a sums array. */
enum {
    VP_SUM_ENTROPY = 0, /* sum over rows of the entropy */
    VP_SUM_UTIL,        /* sum over rows of exp(entropy) / Z */
    VP_SUM_EDGE,        /* sum over greedy rows of E[Z] */
    VP_SUM_EDGE_VAR,    /* sum over greedy rows of Var[Z] */
    VP_SUM_GRAD0,       /* sums of squares of d log-probs, branches 0..3 */
    VP_SUM_GRAD1,
    VP_SUM_GRAD2,
    VP_SUM_GRAD3,
    VP_SUM_Q,           /* sum of Q */
    VP_SUM_Q2,          /* sum of Q^2 */
    VP_SUM_QDIV,        /* sum of |Q_online(s') - Q_target(s')| */
    VP_SUM_TD,          /* sum over samples and branches of |TD error| */
    VP_SUM_COUNT
};

/* The branch of head a (heads run branch by branch). */
VP_HD int vp_sig_branch_of(const vp_sig_params* p, int a) {
    int br = 0;
    while (br + 1 < p->n_branches && a >= p->branch_offset[br + 1]) ++br;
    return br;
}

/* Adds row r = (sample i, head a) of the C51 distributions: its entropy, exp(entropy) / Z, its
 * gradient's sum of squares, and E[Z], Var[Z] when a is its branch's greedy head (Z on the branch's
 * learned support when in->support is set). */
VP_HD void vp_sig_row(const vp_sig_params* p, const vp_sig_inputs* in, int64_t r, double* acc) {
    const int Z = p->n_atoms, A = p->n_actions;
    const int64_t i = r / A;
    const int a = (int)(r % A);
    const float* lp = in->log_probs + r * Z;    /* [Z] */
    const float* dlp = in->d_log_probs + r * Z; /* [Z] */
    const int br = vp_sig_branch_of(p, a);
    const float* sup = in->support ? in->support + (int64_t)br * Z : NULL; /* [Z] or NULL */
    double h = 0.0, m1 = 0.0, m2 = 0.0, g = 0.0;
    for (int j = 0; j < Z; ++j) {
        const double l = (double)lp[j], pj = exp(l);
        const double z = sup ? (double)sup[j] : (double)p->v_min + (double)j * (double)p->dz;
        if (pj > 0.0) h -= pj * l;
        m1 += pj * z;
        m2 += pj * z * z;
        g += (double)dlp[j] * (double)dlp[j];
    }
    acc[VP_SUM_ENTROPY] += h;
    acc[VP_SUM_UTIL] += exp(h) / (double)Z;
    if (br < VP_SIG_BRANCH_SLOTS) acc[VP_SUM_GRAD0 + br] += g;
    const int off = p->branch_offset[br];
    if (a == off + vp_action_argmax(in->q + i * A + off, p->branch_size[br])) {
        const double v = m2 - m1 * m1;
        acc[VP_SUM_EDGE] += m1;
        acc[VP_SUM_EDGE_VAR] += v > 0.0 ? v : 0.0;
    }
}

/* Adds sample i: its Q values and their square, the online-target divergence at s', and the
 * TD error |r + d Q_tgt(s', a*) - Q(s, a)| of each branch. */
VP_HD void vp_sig_sample(const vp_sig_params* p, const vp_sig_inputs* in, int64_t i, double* acc) {
    const int A = p->n_actions, nb = p->n_branches;
    const float* q = in->q + i * A;
    const float* qn = in->q_next + i * A;
    const float* qt = in->q_tnext + i * A;
    for (int a = 0; a < A; ++a) {
        acc[VP_SUM_Q] += (double)q[a];
        acc[VP_SUM_Q2] += (double)q[a] * (double)q[a];
        acc[VP_SUM_QDIV] += fabs((double)qn[a] - (double)qt[a]);
    }
    for (int br = 0; br < nb; ++br) {
        const int off = p->branch_offset[br], n = p->branch_size[br];
        int32_t ai = in->actions[i * nb + br], as = in->a_star[i * nb + br];
        ai = ai < 0 ? 0 : (ai >= n ? n - 1 : ai);
        as = as < 0 ? 0 : (as >= n ? n - 1 : as);
        const double td = (double)in->reward[i] + (double)in->discount[i] * (double)qt[off + as] - (double)q[off + ai];
        acc[VP_SUM_TD] += fabs(td);
    }
}

/* old + rate (x - old); x itself at the first step; old when x is not finite. */
VP_HD float vp_sig_ema(float old, float x, float rate, int first) {
    if (!isfinite(x)) return old;
    return first ? x : old + rate * (x - old);
}

/* (fast - slow) / max(|slow|, 1e-8). */
VP_HD float vp_sig_trend(float fast, float slow) {
    const float d = fabsf(slow) > 1e-8f ? fabsf(slow) : 1e-8f;
    return (fast - slow) / d;
}

/* x clamped to [lo, hi]. */
VP_HD float vp_sig_clamp(float x, float lo, float hi) { return x < lo ? lo : (x > hi ? hi : x); }

/* The rules, each on its switch, from this step's bus: a non-finite result leaves its control
 * as it was (docs/modules.md gives the formulas). */
VP_HD void vp_sig_rules(const vp_sig_params* p, float* ctl, const float* sig) {
    if (p->rules & VP_SIG_RULE_TAU) {
        // tau = learn.tau * div_ref / max(q_div / (sd(Q) + 1e-6), 1e-6) within [tau_min, tau_max]
        const float rel = sig[VP_SIG_Q_DIV] / (sqrtf(sig[VP_SIG_Q_VAR]) + 1e-6f);
        const float t = p->tau0 * p->div_ref / (rel > 1e-6f ? rel : 1e-6f);
        if (isfinite(t)) ctl[VP_CTL_TAU] = vp_sig_clamp(t, p->tau_min, p->tau_max);
    }
    if (p->rules & VP_SIG_RULE_EPS) {
        // scale = 1 + eps_gain * td_trend within [eps_scale_min, eps_scale_max]
        const float s = 1.0f + p->eps_gain * sig[VP_SIG_TD_TREND];
        if (isfinite(s)) ctl[VP_CTL_EPS_SCALE] = vp_sig_clamp(s, p->eps_min, p->eps_max);
    }
    if (p->rules & VP_SIG_RULE_GAMMA) {
        // gamma -= gamma_rate * loss_trend within [gamma_min, gamma_max]; the discount factor follows
        const float g = ctl[VP_CTL_GAMMA] - p->gamma_rate * sig[VP_SIG_LOSS_TREND];
        if (isfinite(g)) {
            ctl[VP_CTL_GAMMA] = vp_sig_clamp(g, p->gamma_min, p->gamma_max);
            ctl[VP_CTL_DISC_SCALE] = (float)pow((double)ctl[VP_CTL_GAMMA] / (double)p->gamma0, (double)p->n_step);
        }
    }
    if (p->rules & VP_SIG_RULE_KELLY) {
        // cap = kelly_fraction * edge / max(edge_var, 1e-12) within [kelly_min, 1]
        const float ev = sig[VP_SIG_EDGE_VAR] > 1e-12f ? sig[VP_SIG_EDGE_VAR] : 1e-12f;
        const float f = p->kelly_fraction * sig[VP_SIG_EDGE] / ev;
        if (isfinite(f)) ctl[VP_CTL_KELLY_CAP] = vp_sig_clamp(f, p->kelly_min, 1.0f);
    }
}

/* The finish of a step: means from the sums, the EMAs and trends, the target drift, the rule
 * counter (and the rules when it reaches p->every), the controls mirrored onto the bus. */
VP_HD void vp_sig_finish(const vp_sig_params* p, const double* sums, const float* stats, float* ctl, float* sig) {
    const double rows = (double)p->batch * (double)p->n_actions;
    const double picks = (double)p->batch * (double)p->n_branches;
    const int first = sig[VP_SIG_STEPS] == 0.0f;
    // this step's values
    const float loss = stats[VP_STAT_LOSS];
    const float td = (float)(sums[VP_SUM_TD] / picks);
    const double qm = sums[VP_SUM_Q] / rows, qv = sums[VP_SUM_Q2] / rows - qm * qm;
    sig[VP_SIG_TD_ABS] = td;
    sig[VP_SIG_Q_MEAN] = (float)qm;
    sig[VP_SIG_Q_VAR] = (float)(qv > 0.0 ? qv : 0.0);
    sig[VP_SIG_Q_DIV] = (float)(sums[VP_SUM_QDIV] / rows);
    sig[VP_SIG_ENTROPY] = (float)(sums[VP_SUM_ENTROPY] / rows);
    sig[VP_SIG_ATOM_UTIL] = (float)(sums[VP_SUM_UTIL] / rows);
    for (int k = 0; k < VP_SIG_BRANCH_SLOTS; ++k) sig[VP_SIG_GRAD_BR0 + k] = (float)sqrt(sums[VP_SUM_GRAD0 + k]);
    sig[VP_SIG_TARGET_DRIFT] = sqrtf(ctl[VP_CTL_DRIFT_SS]) / (sqrtf(ctl[VP_CTL_PARAM_SS]) + 1e-12f);
    sig[VP_SIG_EDGE] = (float)(sums[VP_SUM_EDGE] / picks);
    sig[VP_SIG_EDGE_VAR] = (float)(sums[VP_SUM_EDGE_VAR] / picks);
    // the EMAs and their trends
    sig[VP_SIG_LOSS_FAST] = vp_sig_ema(sig[VP_SIG_LOSS_FAST], loss, p->fast_rate, first);
    sig[VP_SIG_LOSS_SLOW] = vp_sig_ema(sig[VP_SIG_LOSS_SLOW], loss, p->slow_rate, first);
    sig[VP_SIG_LOSS_TREND] = vp_sig_trend(sig[VP_SIG_LOSS_FAST], sig[VP_SIG_LOSS_SLOW]);
    sig[VP_SIG_TD_FAST] = vp_sig_ema(sig[VP_SIG_TD_FAST], td, p->fast_rate, first);
    sig[VP_SIG_TD_SLOW] = vp_sig_ema(sig[VP_SIG_TD_SLOW], td, p->slow_rate, first);
    sig[VP_SIG_TD_TREND] = vp_sig_trend(sig[VP_SIG_TD_FAST], sig[VP_SIG_TD_SLOW]);
    sig[VP_SIG_STEPS] += 1.0f;
    // the controls this step used, then the rules for the steps after it
    sig[VP_SIG_LR] = ctl[VP_CTL_LR];
    sig[VP_SIG_CLIP] = ctl[VP_CTL_CLIP];
    ctl[VP_CTL_TICK] += 1.0f;
    if (ctl[VP_CTL_TICK] >= p->every) {
        ctl[VP_CTL_TICK] = 0.0f;
        sig[VP_SIG_RULE_RUNS] += 1.0f;
        vp_sig_rules(p, ctl, sig);
    }
    sig[VP_SIG_TAU] = ctl[VP_CTL_TAU];
    sig[VP_SIG_EPS_SCALE] = ctl[VP_CTL_EPS_SCALE];
    sig[VP_SIG_GAMMA] = ctl[VP_CTL_GAMMA];
    sig[VP_SIG_KELLY_CAP] = ctl[VP_CTL_KELLY_CAP];
}

/* The learning rate of the step with k learner steps before it: constant lr0; cosine
 * lr0 0.5 (1 + cos(pi min(k, K) / K)); warm-up cosine lr0 (k + 1) / W for k < W, then the
 * cosine over the K - W steps after (lr0 throughout the cosine part when K <= W). */
VP_HD float vp_sig_lr_at(int schedule, float lr0, int64_t warmup, int64_t total, int64_t k) {
    if (schedule == VP_LR_CONSTANT) return lr0;
    const int64_t w = schedule == VP_LR_WARMUP_COSINE ? warmup : 0;
    if (k < w) return (float)((double)lr0 * (double)(k + 1) / (double)w);
    const int64_t span = total - w, done = k - w;
    if (span <= 0) return lr0;
    const double frac = (double)(done < span ? done : span) / (double)span;
    return (float)((double)lr0 * 0.5 * (1.0 + cos(3.14159265358979323846 * frac)));
}

#endif /* VP_LEARN_SIGNAL_MATH_H */
