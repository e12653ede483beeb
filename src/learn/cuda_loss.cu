/* The loss kernels on CUDA: kernels, then launchers. Grids run over samples (a block per
 * sample for the losses, whose branches and atoms or taus share the block) or over
 * elements; every sum is made in a fixed order by one thread or a fixed tree, so results
 * are deterministic. The per-element math is loss_math.h, shared with the CPU loops. */
#include "backend/kit.h"

extern "C" {
#include "vulpes/action.h"
#include "learn/loss_impl.h"
#include "learn/loss_math.h"
}

#define LOSS_THREADS 256

/* Dims passed by value to kernels. */
struct loss_kdims {
    int64_t batch;
    int A, nb, Z, N, M;
    int size[VP_MAX_BRANCHES];
    int offset[VP_MAX_BRANCHES];
    float v_min, v_max, dz, kappa;
};

static loss_kdims kdims(const vp_loss_dims* d) {
    loss_kdims k;
    k.batch = d->batch;
    k.A = d->n_actions;
    k.nb = d->n_branches;
    k.Z = d->n_atoms;
    k.N = d->n_taus;
    k.M = d->n_target_taus;
    for (int br = 0; br < VP_MAX_BRANCHES; ++br) {
        k.size[br] = br < d->n_branches ? d->branch_size[br] : 0;
        k.offset[br] = br < d->n_branches ? d->branch_offset[br] : 0;
    }
    k.v_min = d->v_min;
    k.v_max = d->v_max;
    k.dz = (d->v_max - d->v_min) / (float)(d->n_atoms - 1);
    k.kappa = d->kappa;
    return k;
}

/* Head of choice c in branch br, or -1 outside the branch. */
__device__ __forceinline__ int head_of(const loss_kdims& k, int br, int32_t c) {
    return (c >= 0 && c < k.size[br]) ? k.offset[br] + c : -1;
}

/* ---- kernels ------------------------------------------------------------------------------ */

/* One thread per (sample, branch): argmax of the branch's Q, ties to the lowest index,
 * NaN never chosen over a number. */
__global__ void select_kernel(loss_kdims k, const float* __restrict__ q, int32_t* __restrict__ a_star) {
    const int64_t n = k.batch * k.nb;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / k.nb;
        const int br = (int)(e % k.nb);
        a_star[e] = vp_action_argmax(q + i * k.A + k.offset[br], k.size[br]);
    }
}

/* One thread per (row, target atom). */
__global__ void project_kernel(loss_kdims k, int64_t rows, int n, const float* __restrict__ support,
                               const float* __restrict__ probs, float* __restrict__ out) {
    const int64_t total = rows * k.Z;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = e / k.Z;
        out[e] = vp_c51_project_atom(support + r * n, probs + r * n, n, k.v_min, k.v_max, k.dz, (int)(e % k.Z));
    }
}

/* One thread per (row, grid atom): the projection onto a non-uniform grid. */
__global__ void project_grid_kernel(loss_kdims k, int64_t rows, int n, const float* __restrict__ grid,
                                    const float* __restrict__ support, const float* __restrict__ probs,
                                    float* __restrict__ out) {
    const int64_t total = rows * k.Z;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < total; e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t r = e / k.Z;
        const int j = (int)(e % k.Z);
        float acc = 0.0f;
        for (int i = 0; i < n; ++i)
            acc += probs[r * n + i] * vp_grid_hat(vp_clampf(support[r * n + i], grid[0], grid[k.Z - 1]), grid, k.Z, j);
        out[e] = acc;
    }
}

/* One block per sample: target probabilities of a* per branch into shared memory, the
 * projection per (branch, atom), the cross-entropy partials, then the whole gradient row. */
__global__ void c51_kernel(loss_kdims k, vp_loss_batch_ptrs t, const float* __restrict__ log_probs,
                           const float* __restrict__ target_log_probs, float* __restrict__ proj,
                           float* __restrict__ loss, float* __restrict__ d_log_probs) {
    __shared__ float probs[VP_MAX_BRANCHES * VP_LOSS_MAX_ATOMS];
    __shared__ float m[VP_MAX_BRANCHES * VP_LOSS_MAX_ATOMS];
    __shared__ float ce[VP_MAX_BRANCHES * VP_LOSS_MAX_ATOMS];
    extern __shared__ float grids[]; /* [2, nb, Z] with the general projection, else none */
    __shared__ int heads[VP_MAX_BRANCHES];
    __shared__ int bad;
    const int64_t i = blockIdx.x;
    const int Z = k.Z, A = k.A, nb = k.nb;
    // adaptive atoms or PopArt: the general projection on per-branch grids (uniform without supports)
    const int general = t.support != NULL || t.popart != NULL;
    const float mu = t.popart ? t.popart[VP_POPART_MU] : 0.0f, sigma = t.popart ? t.popart[VP_POPART_SIGMA] : 1.0f;
    float* grid = grids;          // [nb, Z] the online grid per branch
    float* src = grids + nb * Z;  // [nb, Z] the target atoms per branch
    for (int e = threadIdx.x; general && e < nb * Z; e += blockDim.x) {
        const int j = e % Z;
        const float u = j == Z - 1 ? k.v_max : vp_c51_atom(k.v_min, k.dz, j);
        grid[e] = t.support ? t.support[e] : u;
        src[e] = t.support ? t.target_support[e] : u;
    }
    // Taken heads; an index outside its branch marks the sample bad.
    if (threadIdx.x == 0) {
        bad = 0;
        for (int br = 0; br < nb; ++br) {
            int h = head_of(k, br, t.actions[i * nb + br]);
            int hs = head_of(k, br, t.next_actions[i * nb + br]);
            heads[br] = h;
            if (h < 0 || hs < 0) bad = 1;
        }
    }
    __syncthreads();
    // Target probabilities of a* for every branch.
    for (int e = threadIdx.x; e < nb * Z; e += blockDim.x) {
        const int br = e / Z, j = e % Z;
        const int hs = head_of(k, br, t.next_actions[i * nb + br]);
        probs[e] = hs >= 0 ? expf(target_log_probs[(i * A + hs) * Z + j]) : NAN;
    }
    __syncthreads();
    // Projection and cross-entropy partials per (branch, atom).
    const float r = t.reward[i], disc = t.discount[i];
    for (int e = threadIdx.x; e < nb * Z; e += blockDim.x) {
        const int br = e / Z, j = e % Z;
        float mj = bad       ? NAN
                   : general ? vp_c51_target_atom_grid(r, disc, probs + br * Z, src + br * Z, grid + br * Z, Z, mu,
                                                       sigma, j)
                             : vp_c51_target_atom(r, disc, probs + br * Z, Z, k.v_min, k.v_max, k.dz, j);
        m[e] = mj;
        proj[(i * nb + br) * Z + j] = mj;
        ce[e] = bad ? NAN : -mj * log_probs[(i * A + heads[br]) * Z + j];
    }
    __syncthreads();
    // The whole gradient row: g * m on the taken heads, zero elsewhere.
    const float g = -t.is_weight[i] / ((float)k.batch * (float)nb);
    for (int e = threadIdx.x; e < A * Z; e += blockDim.x) {
        const int a = e / Z, j = e % Z;
        float v = 0.0f;
        for (int br = 0; br < nb; ++br)
            if (a == heads[br]) v = g * m[br * Z + j];
        d_log_probs[(i * A) * Z + e] = v;
    }
    // Per-sample loss: one thread sums in a fixed order (branch-major, as the CPU).
    if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int br = 0; br < nb; ++br) {
            float s = 0.0f;
            for (int j = 0; j < Z; ++j) s += ce[br * Z + j];
            sum += s;
        }
        loss[i] = sum / (float)nb;
    }
}

/* One block per sample: target quantiles of a* into shared memory, one thread per
 * (branch, online tau) against all target taus, then the per-sample sum. Dynamic shared
 * memory: nb * M target values and nb * N partial losses. */
__global__ void iqn_kernel(loss_kdims k, vp_loss_batch_ptrs t, const float* __restrict__ iqn,
                           const float* __restrict__ target_iqn, const float* __restrict__ taus,
                           float* __restrict__ loss, float* __restrict__ d_iqn) {
    extern __shared__ float sh[];
    const int N = k.N, M = k.M, A = k.A, nb = k.nb;
    float* targets = sh;          // [nb, M]
    float* part = sh + nb * M;    // [nb, N]
    const int64_t i = blockIdx.x;
    const float r = t.reward[i], disc = t.discount[i];
    const float mu = t.popart ? t.popart[VP_POPART_MU] : 0.0f, sigma = t.popart ? t.popart[VP_POPART_SIGMA] : 1.0f;
    // Zero the gradient row and gather the Bellman targets of a* (normalised with PopArt).
    for (int e = threadIdx.x; e < N * A; e += blockDim.x) d_iqn[i * N * A + e] = 0.0f;
    for (int e = threadIdx.x; e < nb * M; e += blockDim.x) {
        const int br = e / M, kk = e % M;
        const int hs = head_of(k, br, t.next_actions[i * nb + br]);
        const float tq = hs >= 0 ? target_iqn[(i * M + kk) * A + hs] : NAN;
        targets[e] = hs < 0 ? NAN : t.popart ? vp_popart_target(r, disc, tq, mu, sigma) : r + disc * tq;
    }
    __syncthreads();
    // One online quantile against every target quantile.
    const float inv_m = 1.0f / (float)M, inv_kappa = 1.0f / k.kappa;
    const float g = -t.is_weight[i] / (float)k.batch * inv_m / (float)nb;
    for (int e = threadIdx.x; e < nb * N; e += blockDim.x) {
        const int br = e / N, jn = e % N;
        const int h = head_of(k, br, t.actions[i * nb + br]);
        if (h < 0) {
            part[e] = NAN;
            continue;
        }
        const float theta = iqn[(i * N + jn) * A + h];
        const float tau = taus[i * N + jn];
        float lj = 0.0f, dj = 0.0f;
        for (int kk = 0; kk < M; ++kk) {
            float dd;
            lj += vp_quantile_huber(targets[br * M + kk] - theta, tau, k.kappa, inv_kappa, &dd);
            dj += dd;
        }
        part[e] = lj * inv_m;
        d_iqn[(i * N + jn) * A + h] = g * dj;
    }
    __syncthreads();
    // Per-sample loss in the CPU's order (branch-major, then taus).
    if (threadIdx.x == 0) {
        float sum = 0.0f;
        for (int e = 0; e < nb * N; ++e) sum += part[e];
        loss[i] = sum / (float)nb;
    }
}

/* One thread per tau. */
__global__ void taus_kernel(uint64_t seed, uint64_t stream, const int32_t* __restrict__ step, int64_t n,
                            float* __restrict__ taus) {
    const uint64_t base = (uint64_t)(step ? (uint32_t)step[0] : 0u) * (uint64_t)n;
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < n; e += (int64_t)gridDim.x * blockDim.x)
        taus[e] = vp_u32_to_open_unit(vp_rng_draw(seed, stream, base + (uint64_t)e).v[0]);
}

/* One block of STATS_THREADS: per-thread sums in double over four interleaved strided
 * accumulators (independent loads in flight), joined in a fixed order, then a fixed
 * shared-memory tree. */
#define STATS_THREADS 1024
#define STATS_LANES 4
static_assert(STATS_LANES == 4, "the accumulators are initialised and joined as four");
__global__ void __launch_bounds__(STATS_THREADS)
    stats_kernel(loss_kdims k, const float* __restrict__ c51, const float* __restrict__ iqn,
                 const float* __restrict__ w, const float* __restrict__ q, const float* __restrict__ grad_norm,
                 float* stats) {
    __shared__ double s_c[STATS_THREADS], s_i[STATS_THREADS], s_q[STATS_THREADS];
    __shared__ float s_m[STATS_THREADS];
    const int tid = threadIdx.x;
    double lc = 0.0, li = 0.0;
    for (int64_t e = tid; e < k.batch; e += STATS_THREADS) {
        lc += (double)w[e] * (double)c51[e];
        if (iqn) li += (double)w[e] * (double)iqn[e];
    }
    const int64_t nq = k.batch * k.A, span = (int64_t)STATS_THREADS * STATS_LANES;
    double qa[STATS_LANES] = {0.0, 0.0, 0.0, 0.0};
    float qm = -INFINITY;
    for (int64_t e0 = tid; e0 < nq; e0 += span) {
#pragma unroll
        for (int l = 0; l < STATS_LANES; ++l) {
            const int64_t e = e0 + (int64_t)l * STATS_THREADS;
            if (e < nq) {
                const float v = q[e];
                qa[l] += (double)v;
                qm = vp_nan_max(qm, v);
            }
        }
    }
    s_c[tid] = lc;
    s_i[tid] = li;
    s_q[tid] = (qa[0] + qa[1]) + (qa[2] + qa[3]);
    s_m[tid] = qm;
    __syncthreads();
    for (int h = STATS_THREADS / 2; h > 0; h >>= 1) {
        if (tid < h) {
            s_c[tid] += s_c[tid + h];
            s_i[tid] += s_i[tid + h];
            s_q[tid] += s_q[tid + h];
            s_m[tid] = vp_nan_max(s_m[tid], s_m[tid + h]);
        }
        __syncthreads();
    }
    if (tid == 0) {
        const double c = s_c[0] / (double)k.batch, ii = s_i[0] / (double)k.batch;
        stats[VP_STAT_LOSS] = (float)(c + ii);
        stats[VP_STAT_C51] = (float)c;
        stats[VP_STAT_IQN] = (float)ii;
        stats[VP_STAT_GRAD_NORM] = grad_norm[0];
        stats[VP_STAT_Q_MEAN] = (float)(s_q[0] / (double)nq);
        stats[VP_STAT_Q_MAX] = s_m[0];
        int bad = 0;
        for (int s = VP_STAT_LOSS; s <= VP_STAT_Q_MAX; ++s) bad |= !isfinite(stats[s]);
        stats[VP_STAT_NAN] = bad ? 1.0f : 0.0f;
        stats[VP_STAT_NAN_STEPS] += bad ? 1.0f : 0.0f;
    }
}

/* ---- launchers ---------------------------------------------------------------------------- */

extern "C" vp_status vp_loss_cuda_select(vp_backend* b, const vp_loss_dims* d, const float* q, int32_t* a_star) {
    select_kernel<<<vp_cuda_grid(d->batch * d->n_branches, LOSS_THREADS), LOSS_THREADS, 0, vp_cuda_stream_of(b)>>>(
        kdims(d), q, a_star);
    VP_CUDA_CHECK_LAUNCH("select_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_project(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n,
                                          const float* support, const float* probs, float* out) {
    project_kernel<<<vp_cuda_grid(rows * d->n_atoms, LOSS_THREADS), LOSS_THREADS, 0, vp_cuda_stream_of(b)>>>(
        kdims(d), rows, n, support, probs, out);
    VP_CUDA_CHECK_LAUNCH("project_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_project_grid(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n,
                                               const float* grid, const float* support, const float* probs,
                                               float* out) {
    project_grid_kernel<<<vp_cuda_grid(rows * d->n_atoms, LOSS_THREADS), LOSS_THREADS, 0, vp_cuda_stream_of(b)>>>(
        kdims(d), rows, n, grid, support, probs, out);
    VP_CUDA_CHECK_LAUNCH("project_grid_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_c51(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                      const float* log_probs, const float* target_log_probs, float* proj, float* loss,
                                      float* d_log_probs) {
    VP_REQUIRE(d->batch <= INT32_MAX, VP_ERR_SHAPE, "cuda c51: batch %lld too large", (long long)d->batch);
    // the general projection (adaptive atoms or PopArt) keeps both grids in dynamic shared memory
    const size_t shmem = (t->support || t->popart) ? sizeof(float) * 2 * (size_t)d->n_branches * (size_t)d->n_atoms : 0;
    c51_kernel<<<(unsigned)d->batch, LOSS_THREADS, shmem, vp_cuda_stream_of(b)>>>(kdims(d), *t, log_probs,
                                                                              target_log_probs, proj, loss,
                                                                              d_log_probs);
    VP_CUDA_CHECK_LAUNCH("c51_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_iqn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                      const float* iqn, const float* target_iqn, const float* taus, float* loss,
                                      float* d_iqn) {
    VP_REQUIRE(d->batch <= INT32_MAX, VP_ERR_SHAPE, "cuda iqn: batch %lld too large", (long long)d->batch);
    const size_t shmem = sizeof(float) * (size_t)d->n_branches * (size_t)(d->n_taus + d->n_target_taus);
    iqn_kernel<<<(unsigned)d->batch, LOSS_THREADS, shmem, vp_cuda_stream_of(b)>>>(kdims(d), *t, iqn, target_iqn,
                                                                                  taus, loss, d_iqn);
    VP_CUDA_CHECK_LAUNCH("iqn_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_taus(vp_backend* b, uint64_t seed, uint64_t stream, const int32_t* step,
                                       int64_t n, float* taus) {
    taus_kernel<<<vp_cuda_grid(n, LOSS_THREADS), LOSS_THREADS, 0, vp_cuda_stream_of(b)>>>(seed, stream, step, n,
                                                                                         taus);
    VP_CUDA_CHECK_LAUNCH("taus_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_stats(vp_backend* b, const vp_loss_dims* d, const float* c51, const float* iqn,
                                        const float* is_weight, const float* q, const float* grad_norm,
                                        float* stats) {
    stats_kernel<<<1, STATS_THREADS, 0, vp_cuda_stream_of(b)>>>(kdims(d), c51, iqn, is_weight, q, grad_norm, stats);
    VP_CUDA_CHECK_LAUNCH("stats_kernel");
    return VP_OK;
}

/* ---- the table ---------------------------------------------------------------------------- */

extern "C" const vp_loss_kernels vp_loss_cuda = VP_KERNEL_TABLE(VP_LOSS_KERNELS, vp_loss, vp_loss_cuda);
