/* The loss kernels on the CPU: plain loops over samples (and branches), computing exactly
 * the per-element math of loss_math.h that the CUDA kernels use. */
#include <math.h>
#include <string.h>

#include "vulpes/action.h"
#include "learn/loss_impl.h"
#include "learn/loss_math.h"

/* Head index of choice c in branch br, or -1 when c is outside the branch. */
static int head_of(const vp_loss_dims* d, int br, int32_t c) {
    return (c >= 0 && c < d->branch_size[br]) ? d->branch_offset[br] + c : -1;
}

vp_status vp_loss_cpu_select(vp_backend* b, const vp_loss_dims* d, const float* q, int32_t* a_star) {
    const int A = d->n_actions, nb = d->n_branches;
    for (int64_t i = 0; i < d->batch; ++i) {
        for (int br = 0; br < nb; ++br) {
            // the one branch argmax: ties keep the lowest index, a NaN never wins
            a_star[i * nb + br] = vp_action_argmax(q + i * A + d->branch_offset[br], d->branch_size[br]);
        }
    }
    return VP_OK;
}

vp_status vp_loss_cpu_project(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n, const float* support,
                              const float* probs, float* out) {
    const int Z = d->n_atoms;
    const float dz = (d->v_max - d->v_min) / (float)(Z - 1);
    for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < Z; ++j)
            out[r * Z + j] = vp_c51_project_atom(support + r * n, probs + r * n, n, d->v_min, d->v_max, dz, j);
    return VP_OK;
}

vp_status vp_loss_cpu_project_grid(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n, const float* grid,
                                   const float* support, const float* probs, float* out) {
    const int Z = d->n_atoms;
    for (int64_t r = 0; r < rows; ++r)
        for (int j = 0; j < Z; ++j) {
            float acc = 0.0f;
            for (int i = 0; i < n; ++i)
                acc += probs[r * n + i] * vp_grid_hat(vp_clampf(support[r * n + i], grid[0], grid[Z - 1]), grid, Z, j);
            out[r * Z + j] = acc;
        }
    return VP_OK;
}

vp_status vp_loss_cpu_c51(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t, const float* log_probs,
                          const float* target_log_probs, float* proj, float* loss, float* d_log_probs) {
    const int A = d->n_actions, Z = d->n_atoms, nb = d->n_branches;
    const float dz = (d->v_max - d->v_min) / (float)(Z - 1);
    const float inv_b = 1.0f / (float)d->batch;
    float probs[VP_LOSS_MAX_ATOMS], uniform[VP_LOSS_MAX_ATOMS];
    // adaptive atoms or PopArt: the general projection (per-branch grids, normalised targets)
    const int general = t->support != NULL || t->popart != NULL;
    const float mu = t->popart ? t->popart[VP_POPART_MU] : 0.0f, sigma = t->popart ? t->popart[VP_POPART_SIGMA] : 1.0f;
    for (int j = 0; j < Z; ++j) uniform[j] = vp_c51_atom(d->v_min, dz, j);
    uniform[Z - 1] = d->v_max;
    memset(d_log_probs, 0, sizeof(float) * (size_t)(d->batch * A * Z));
    for (int64_t i = 0; i < d->batch; ++i) {
        float sum = 0.0f;
        const float g = -t->is_weight[i] * inv_b / (float)nb;
        for (int br = 0; br < nb; ++br) {
            int h = head_of(d, br, t->actions[i * nb + br]);
            int hs = head_of(d, br, t->next_actions[i * nb + br]);
            float* m = proj + (i * nb + br) * Z;
            if (h < 0 || hs < 0) {
                // A bad action index poisons the sample instead of reading out of bounds.
                for (int j = 0; j < Z; ++j) m[j] = NAN;
                sum = NAN;
                continue;
            }
            // Target distribution of a* under r + discount * z, projected onto the support.
            const float* tl = target_log_probs + (i * A + hs) * Z;
            for (int j = 0; j < Z; ++j) probs[j] = expf(tl[j]);
            const float* grid = t->support ? t->support + br * Z : uniform;
            const float* src = t->support ? t->target_support + br * Z : uniform;
            for (int j = 0; j < Z; ++j)
                m[j] = general ? vp_c51_target_atom_grid(t->reward[i], t->discount[i], probs, src, grid, Z, mu, sigma, j)
                               : vp_c51_target_atom(t->reward[i], t->discount[i], probs, Z, d->v_min, d->v_max, dz, j);
            // Cross-entropy with the online distribution of the taken head, and its gradient.
            const float* lp = log_probs + (i * A + h) * Z;
            float* dl = d_log_probs + (i * A + h) * Z;
            float ce = 0.0f;
            for (int j = 0; j < Z; ++j) {
                ce -= m[j] * lp[j];
                dl[j] = g * m[j];
            }
            sum += ce;
        }
        loss[i] = sum / (float)nb;
    }
    return VP_OK;
}

vp_status vp_loss_cpu_iqn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t, const float* iqn,
                          const float* target_iqn, const float* taus, float* loss, float* d_iqn) {
    const int A = d->n_actions, nb = d->n_branches, N = d->n_taus, M = d->n_target_taus;
    const float inv_b = 1.0f / (float)d->batch, inv_m = 1.0f / (float)M, inv_kappa = 1.0f / d->kappa;
    memset(d_iqn, 0, sizeof(float) * (size_t)(d->batch * N * A));
    for (int64_t i = 0; i < d->batch; ++i) {
        float sum = 0.0f;
        // d total / d theta = -w / (B nb M) * sum_k rho'(delta_jk).
        const float g = -t->is_weight[i] * inv_b * inv_m / (float)nb;
        const float r = t->reward[i], disc = t->discount[i];
        const float mu = t->popart ? t->popart[VP_POPART_MU] : 0.0f, sigma = t->popart ? t->popart[VP_POPART_SIGMA] : 1.0f;
        for (int br = 0; br < nb; ++br) {
            int h = head_of(d, br, t->actions[i * nb + br]);
            int hs = head_of(d, br, t->next_actions[i * nb + br]);
            if (h < 0 || hs < 0) {
                sum = NAN;
                continue;
            }
            // Each online quantile against every target quantile.
            for (int jn = 0; jn < N; ++jn) {
                const float theta = iqn[(i * N + jn) * A + h];
                const float tau = taus[i * N + jn];
                float lj = 0.0f, dj = 0.0f;
                for (int k = 0; k < M; ++k) {
                    const float tq = target_iqn[(i * M + k) * A + hs];
                    float target = t->popart ? vp_popart_target(r, disc, tq, mu, sigma) : r + disc * tq;
                    float dd;
                    lj += vp_quantile_huber(target - theta, tau, d->kappa, inv_kappa, &dd);
                    dj += dd;
                }
                sum += lj * inv_m;
                d_iqn[(i * N + jn) * A + h] = g * dj;
            }
        }
        loss[i] = sum / (float)nb;
    }
    return VP_OK;
}

vp_status vp_loss_cpu_taus(vp_backend* b, uint64_t seed, uint64_t stream, const int32_t* step, int64_t n,
                           float* taus) {
    const uint64_t base = (uint64_t)(step ? (uint32_t)step[0] : 0u) * (uint64_t)n;
    for (int64_t e = 0; e < n; ++e) taus[e] = vp_u32_to_open_unit(vp_rng_draw(seed, stream, base + (uint64_t)e).v[0]);
    return VP_OK;
}

vp_status vp_loss_cpu_stats(vp_backend* b, const vp_loss_dims* d, const float* c51, const float* iqn,
                            const float* is_weight, const float* q, const float* grad_norm, float* stats) {
    // Importance-weighted means of the loss parts, in a fixed order.
    double lc = 0.0, li = 0.0;
    for (int64_t i = 0; i < d->batch; ++i) {
        lc += (double)is_weight[i] * (double)c51[i];
        if (iqn) li += (double)is_weight[i] * (double)iqn[i];
    }
    lc /= (double)d->batch;
    li /= (double)d->batch;
    // Q statistics over every sample and head; NaN propagates into both.
    const int64_t nq = d->batch * d->n_actions;
    double qs = 0.0;
    float qmax = -INFINITY;
    for (int64_t e = 0; e < nq; ++e) {
        qs += (double)q[e];
        if (isnan(q[e]))
            qmax = NAN;
        else if (q[e] > qmax)
            qmax = q[e];
    }
    stats[VP_STAT_LOSS] = (float)(lc + li);
    stats[VP_STAT_C51] = (float)lc;
    stats[VP_STAT_IQN] = (float)li;
    stats[VP_STAT_GRAD_NORM] = grad_norm[0];
    stats[VP_STAT_Q_MEAN] = (float)(qs / (double)nq);
    stats[VP_STAT_Q_MAX] = qmax;
    // The NaN flag covers every statistic above; the counter remembers past steps.
    int bad = 0;
    for (int s = VP_STAT_LOSS; s <= VP_STAT_Q_MAX; ++s) bad |= !isfinite(stats[s]);
    stats[VP_STAT_NAN] = bad ? 1.0f : 0.0f;
    stats[VP_STAT_NAN_STEPS] += bad ? 1.0f : 0.0f;
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

const vp_loss_kernels vp_loss_cpu = VP_KERNEL_TABLE(VP_LOSS_KERNELS, vp_loss, vp_loss_cpu);
