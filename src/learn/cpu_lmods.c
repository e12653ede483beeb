/* The learner modules' kernels on the CPU (docs/modules.md): the adaptive atoms' spacing
 * gradient and PopArt's statistics update and output-layer rescale, in the fixed orders the
 * CUDA kernels (cuda_lmods.cu) follow. */
#include <math.h>

#include "learn/loss_impl.h"
#include "learn/loss_math.h"

/* Head index of choice c in branch br, or -1 when c is outside the branch. */
static int head_of(const vp_loss_dims* d, int br, int32_t c) {
    return (c >= 0 && c < d->branch_size[br]) ? d->branch_offset[br] + c : -1;
}

vp_status vp_loss_cpu_atoms_grad(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                 const float* log_probs, const float* target_q, const float* spacing, float* resid,
                                 float* d_spacing) {
    const int A = d->n_actions, Z = d->n_atoms, nb = d->n_branches;
    const float mu = t->popart ? t->popart[VP_POPART_MU] : 0.0f, sigma = t->popart ? t->popart[VP_POPART_SIGMA] : 1.0f;
    const float inv = 1.0f / ((float)d->batch * (float)nb);
    // the residual of each (sample, branch): w (Q - y) / (B nb), NaN for a bad action
    for (int64_t i = 0; i < d->batch; ++i)
        for (int br = 0; br < nb; ++br) {
            const int h = head_of(d, br, t->actions[i * nb + br]), hs = head_of(d, br, t->next_actions[i * nb + br]);
            if (h < 0 || hs < 0) {
                resid[i * nb + br] = NAN;
                continue;
            }
            const float q = vp_atoms_q(t->support + br * Z, log_probs + (i * A + h) * Z, Z);
            const float y = vp_popart_target(t->reward[i], t->discount[i], target_q[i * A + hs], mu, sigma);
            resid[i * nb + br] = t->is_weight[i] * inv * (q - y);
        }
    // per branch: dL/dz_k = sum_i resid p_k (samples in order), then through the support
    float g[VP_LOSS_MAX_ATOMS];
    for (int br = 0; br < nb; ++br) {
        for (int k = 0; k < Z; ++k) {
            float acc = 0.0f;
            for (int64_t i = 0; i < d->batch; ++i) {
                const int h = head_of(d, br, t->actions[i * nb + br]);
                const float e = resid[i * nb + br];
                acc += h < 0 ? e : e * expf(log_probs[(i * A + h) * Z + k]);
            }
            g[k] = acc;
        }
        vp_atoms_support_backward(spacing + br * (Z - 1), Z, d->v_min, d->v_max, g, d_spacing + br * (Z - 1));
    }
    return VP_OK;
}

/* w *= a and bias = (s0 bias + mu0 - mu1) / s1 over an output layer (NULL: none). */
static void popart_rescale(float* w, float* bias, int64_t A, int64_t HH, float a, float s0, float mu0, float mu1,
                           float s1) {
    if (!w) return;
    for (int64_t e = 0; e < A * HH; ++e) w[e] *= a;
    for (int64_t e = 0; e < A; ++e) bias[e] = (s0 * bias[e] + mu0 - mu1) / s1;
}

vp_status vp_loss_cpu_popart(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t, const float* target_q,
                             float beta, float* state, int64_t HH, float* w, float* bias, float* tw, float* tb) {
    const int A = d->n_actions, nb = d->n_branches;
    const float mu0 = state[VP_POPART_MU], s0 = state[VP_POPART_SIGMA];
    // the unnormalised targets' first two moments, in sample-then-branch order
    double m1 = 0.0, m2 = 0.0;
    for (int64_t i = 0; i < d->batch; ++i)
        for (int br = 0; br < nb; ++br) {
            const int hs = head_of(d, br, t->next_actions[i * nb + br]);
            const float y = hs < 0 ? NAN : t->reward[i] + t->discount[i] * (s0 * target_q[i * A + hs] + mu0);
            m1 += (double)y;
            m2 += (double)y * (double)y;
        }
    const double n = (double)d->batch * (double)nb;
    vp_popart_moments(state, m1 / n, m2 / n, beta);
    // preserve the outputs of both networks' layers
    const float mu1 = state[VP_POPART_MU], s1 = state[VP_POPART_SIGMA], a = s0 / s1;
    popart_rescale(w, bias, A, HH, a, s0, mu0, mu1, s1);
    popart_rescale(tw, tb, A, HH, a, s0, mu0, mu1, s1);
    return VP_OK;
}
