/* The learner modules' kernels on CUDA (docs/modules.md), then their launchers: the adaptive
 * atoms' spacing gradient and PopArt's step. Sums run in the CPU loops' orders
 * (cpu_lmods.c) by one thread each, or a fixed tree for PopArt's moments; nothing atomic. */
#include "backend/kit.h"

extern "C" {
#include "learn/loss_impl.h"
#include "learn/loss_math.h"
}

#define LMODS_THREADS 256

/* Head of choice c in branch br, or -1 outside the branch. */
__device__ __forceinline__ int lm_head_of(const vp_loss_dims& d, int br, int32_t c) {
    return (c >= 0 && c < d.branch_size[br]) ? d.branch_offset[br] + c : -1;
}

/* One thread per (sample, branch): w (Q - y) / (B nb), NaN for a bad action. */
__global__ void atoms_resid_kernel(vp_loss_dims d, vp_loss_batch_ptrs t, const float* __restrict__ log_probs,
                                   const float* __restrict__ target_q, float* __restrict__ resid) {
    const int nb = d.n_branches, A = d.n_actions, Z = d.n_atoms;
    const float mu = t.popart ? t.popart[VP_POPART_MU] : 0.0f, sigma = t.popart ? t.popart[VP_POPART_SIGMA] : 1.0f;
    const float inv = 1.0f / ((float)d.batch * (float)nb);
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < d.batch * nb;
         e += (int64_t)gridDim.x * blockDim.x) {
        const int64_t i = e / nb;
        const int br = (int)(e % nb);
        const int h = lm_head_of(d, br, t.actions[e]), hs = lm_head_of(d, br, t.next_actions[e]);
        if (h < 0 || hs < 0) {
            resid[e] = NAN;
            continue;
        }
        const float q = vp_atoms_q(t.support + br * Z, log_probs + (i * A + h) * Z, Z);
        const float y = vp_popart_target(t.reward[i], t.discount[i], target_q[i * A + hs], mu, sigma);
        resid[e] = t.is_weight[i] * inv * (q - y);
    }
}

/* One block per branch: thread k sums resid p_k over the samples in order, then one thread
 * takes the gradient through the support. */
__global__ void atoms_spacing_kernel(vp_loss_dims d, vp_loss_batch_ptrs t, const float* __restrict__ log_probs,
                                     const float* __restrict__ resid, const float* __restrict__ spacing,
                                     float* __restrict__ d_spacing) {
    __shared__ float g[VP_LOSS_MAX_ATOMS];
    const int br = blockIdx.x, nb = d.n_branches, A = d.n_actions, Z = d.n_atoms;
    for (int k = threadIdx.x; k < Z; k += blockDim.x) {
        float acc = 0.0f;
        for (int64_t i = 0; i < d.batch; ++i) {
            const int h = lm_head_of(d, br, t.actions[i * nb + br]);
            const float e = resid[i * nb + br];
            acc += h < 0 ? e : e * expf(log_probs[(i * A + h) * Z + k]);
        }
        g[k] = acc;
    }
    __syncthreads();
    if (threadIdx.x == 0)
        vp_atoms_support_backward(spacing + br * (Z - 1), Z, d.v_min, d.v_max, g, d_spacing + br * (Z - 1));
}

/* One block: the targets' moments (strided per-thread double sums, a fixed tree), the state
 * update by one thread, then every thread rescales the output layers. */
__global__ void popart_kernel(vp_loss_dims d, vp_loss_batch_ptrs t, const float* __restrict__ target_q, float beta,
                              float* state, int64_t HH, float* w, float* bias, float* tw, float* tb) {
    __shared__ double s1[LMODS_THREADS], s2[LMODS_THREADS];
    __shared__ float now[VP_POPART_N];
    const int tid = threadIdx.x, nb = d.n_branches, A = d.n_actions;
    const float mu0 = state[VP_POPART_MU], sg0 = state[VP_POPART_SIGMA];
    double m1 = 0.0, m2 = 0.0;
    for (int64_t e = tid; e < d.batch * nb; e += LMODS_THREADS) {
        const int64_t i = e / nb;
        const int hs = lm_head_of(d, (int)(e % nb), t.next_actions[e]);
        const float y = hs < 0 ? NAN : t.reward[i] + t.discount[i] * (sg0 * target_q[i * A + hs] + mu0);
        m1 += (double)y;
        m2 += (double)y * (double)y;
    }
    s1[tid] = m1;
    s2[tid] = m2;
    __syncthreads();
    for (int h = LMODS_THREADS / 2; h > 0; h >>= 1) {
        if (tid < h) {
            s1[tid] += s1[tid + h];
            s2[tid] += s2[tid + h];
        }
        __syncthreads();
    }
    if (tid == 0) {
        const double n = (double)d.batch * (double)nb;
        for (int j = 0; j < VP_POPART_N; ++j) now[j] = state[j];
        vp_popart_moments(now, s1[0] / n, s2[0] / n, beta);
        for (int j = 0; j < VP_POPART_N; ++j) state[j] = now[j];
    }
    __syncthreads();
    // w *= sigma_old / sigma_new, bias = (sigma_old bias + mu_old - mu_new) / sigma_new
    const float mu1 = now[VP_POPART_MU], sg1 = now[VP_POPART_SIGMA], a = sg0 / sg1;
    for (int64_t e = tid; e < A * HH; e += LMODS_THREADS) {
        if (w) w[e] *= a;
        if (tw) tw[e] *= a;
    }
    for (int64_t e = tid; e < A; e += LMODS_THREADS) {
        if (bias) bias[e] = (sg0 * bias[e] + mu0 - mu1) / sg1;
        if (tb) tb[e] = (sg0 * tb[e] + mu0 - mu1) / sg1;
    }
}

extern "C" vp_status vp_loss_cuda_atoms_grad(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                             const float* log_probs, const float* target_q, const float* spacing,
                                             float* resid, float* d_spacing) {
    atoms_resid_kernel<<<vp_cuda_grid(d->batch * d->n_branches, LMODS_THREADS), LMODS_THREADS, 0,
                         vp_cuda_stream_of(b)>>>(*d, *t, log_probs, target_q, resid);
    VP_CUDA_CHECK_LAUNCH("atoms_resid_kernel");
    const int threads = d->n_atoms <= 64 ? 64 : 256;
    atoms_spacing_kernel<<<(unsigned)d->n_branches, threads, 0, vp_cuda_stream_of(b)>>>(*d, *t, log_probs, resid,
                                                                                        spacing, d_spacing);
    VP_CUDA_CHECK_LAUNCH("atoms_spacing_kernel");
    return VP_OK;
}

extern "C" vp_status vp_loss_cuda_popart(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                         const float* target_q, float beta, float* state, int64_t HH, float* w,
                                         float* bias, float* tw, float* tb) {
    popart_kernel<<<1, LMODS_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, *t, target_q, beta, state, HH, w, bias, tw, tb);
    VP_CUDA_CHECK_LAUNCH("popart_kernel");
    return VP_OK;
}
