/* PPO's kernels on CUDA: kernels, then launchers. The per-sample math is ppo_math.h's, shared
 * with the CPU loops (ppo_cpu.c): one thread per env, row or sample; the minibatch advantage
 * moments in one block (double sums in a fixed order, so the same numbers every run, equal to
 * the CPU's sequential ones within double rounding). */
#include <stdint.h>

#include "backend/kit.h"
#include "learn/ppo_impl.h"
#include "vulpes/collect.h"

/* Threads per block of the per-env and per-sample kernels. */
#define PPO_THREADS 256

/* ---- kernels ------------------------------------------------------------------------------------ */

/* One thread per env: its sampled choices and the stored rows. */
__global__ void ppo_sample_kernel(int64_t E, uint64_t seed, const float* logits, const float* value,
                                  const int32_t* bar, const float* portfolio, const int64_t* ctr,
                                  int32_t* env_actions, vp_ppo_store_ptrs out) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= E) return;
    const vp_action_layout l = vp_action_layout_env();
    const vp_u32x4 draw = vp_rng_draw(seed, VP_COLLECT_STREAM + (uint64_t)i, (uint64_t)ctr[VP_PPO_CTR_STEP]);
    float ent = 0.0f;
    int32_t* a = out.actions + i * VP_ENV_BRANCHES;
    out.logp[i] = vp_ppo_sample(&l, logits + i * l.n_heads, draw, a, &ent);
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) env_actions[i * VP_ENV_BRANCHES + br] = a[br];
    out.value[i] = value[i];
    out.bar[i] = bar[i];
    for (int k = 0; k < VP_ENV_PORTFOLIO; ++k) out.portfolio[i * VP_ENV_PORTFOLIO + k] = portfolio[i * VP_ENV_PORTFOLIO + k];
}

/* One thread: a counter advances. */
__global__ void ppo_tick_kernel(int64_t* ctr, int which) {
    if (ctr[which] < INT64_MAX) ctr[which] += 1; /* a counter at its end stays there */
}

/* One thread per env: its GAE, backwards over the steps. */
__global__ void ppo_gae_kernel(int64_t T, int64_t E, float gamma, float lambda, const float* reward, const float* done,
                               const float* value, const float* last_value, float* adv, float* ret) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= E) return;
    vp_ppo_gae_env(T, E, i, reward, done, value, last_value[i], gamma, lambda, adv, ret);
}

/* One thread per row: its element of the epoch's permutation (the counter moves on in the
 * next launch, once every thread has read it). */
__global__ void ppo_permute_kernel(int64_t n, uint64_t seed, uint64_t stream, const int64_t* ctr, int32_t* perm) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    perm[k] = (int32_t)vp_ppo_perm_at(n, seed, stream, (uint64_t)ctr[VP_PPO_CTR_EPOCH], k);
}

/* One thread per row: the minibatch's rows. */
__global__ void ppo_gather_kernel(int64_t n, const int32_t* idx, vp_ppo_rows src, vp_ppo_rows dst) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= n) return;
    const int64_t r = idx[k];
    dst.bar[k] = src.bar[r];
    for (int j = 0; j < VP_ENV_PORTFOLIO; ++j) dst.portfolio[k * VP_ENV_PORTFOLIO + j] = src.portfolio[r * VP_ENV_PORTFOLIO + j];
    for (int j = 0; j < VP_ENV_BRANCHES; ++j) dst.actions[k * VP_ENV_BRANCHES + j] = src.actions[r * VP_ENV_BRANCHES + j];
    dst.logp[k] = src.logp[r];
    dst.value[k] = src.value[r];
    dst.adv[k] = src.adv[r];
    dst.ret[k] = src.ret[r];
}

/* Sum over the block of one double per thread (PPO_THREADS, a power of two), a fixed tree. */
__device__ double ppo_block_sum(double v, double* sh) {
    sh[threadIdx.x] = v;
    __syncthreads();
    for (int o = PPO_THREADS / 2; o > 0; o >>= 1) {
        if ((int)threadIdx.x < o) sh[threadIdx.x] += sh[threadIdx.x + o];
        __syncthreads();
    }
    const double r = sh[0];
    __syncthreads();
    return r;
}

/* One block: the advantages' mean and std (Bessel; vp_ppo_adv_moments' formulas in double),
 * then every advantage normalised. */
__global__ void ppo_norm_kernel(int64_t n, float* adv) {
    __shared__ double sh[PPO_THREADS];
    double s = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += PPO_THREADS) s += (double)adv[k];
    const double mu = ppo_block_sum(s, sh) / (double)n;
    double q = 0.0;
    for (int64_t k = threadIdx.x; k < n; k += PPO_THREADS) q += ((double)adv[k] - mu) * ((double)adv[k] - mu);
    const double sq = ppo_block_sum(q, sh);
    const float mean = (float)mu, den = (float)((n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0) + 1e-8);
    for (int64_t k = threadIdx.x; k < n; k += PPO_THREADS) adv[k] = (adv[k] - mean) / den;
}

/* One thread per sample: its terms and gradients. */
__global__ void ppo_loss_kernel(vp_ppo_loss_dims d, const float* logits, const float* value, vp_ppo_rows mb,
                                float* terms, float* d_logits, float* d_value) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= d.m) return;
    const int A = d.layout.n_heads;
    vp_ppo_sample_loss(&d, logits + k * A, value[k], mb.actions + k * VP_ENV_BRANCHES, mb.logp[k], mb.value[k],
                       mb.adv[k], mb.ret[k], terms + k * VP_PPO_T_COUNT, d_logits + k * A, d_value + k);
}

/* ---- launchers ---------------------------------------------------------------------------------- */

/* The stream of b, failing the launcher when b is not a CUDA backend. */
#define PPO_STREAM(fn)                                                                                      \
    cudaStream_t st = vp_cuda_stream_of(b);                                                                 \
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "%s: backend %s is not CUDA", fn, vp_backend_name(b))

/* Blocks of PPO_THREADS for n items. */
static unsigned blocks_for(int64_t n) { return (unsigned)((n + PPO_THREADS - 1) / PPO_THREADS); }

extern "C" vp_status vp_ppo_cuda_sample(vp_backend* b, int64_t E, uint64_t seed, const float* logits,
                                        const float* value, const int32_t* bar, const float* portfolio,
                                        const int64_t* ctr, int32_t* env_actions, vp_ppo_store_ptrs out) {
    VP_REQUIRE(E >= 1, VP_ERR_SHAPE, "vp_ppo_cuda_sample: %lld envs", (long long)E);
    PPO_STREAM("vp_ppo_cuda_sample");
    ppo_sample_kernel<<<blocks_for(E), PPO_THREADS, 0, st>>>(E, seed, logits, value, bar, portfolio, ctr, env_actions, out);
    VP_CUDA_CHECK_LAUNCH("ppo_sample_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ppo_cuda_tick(vp_backend* b, int64_t* ctr, int which) {
    PPO_STREAM("vp_ppo_cuda_tick");
    ppo_tick_kernel<<<1, 1, 0, st>>>(ctr, which);
    VP_CUDA_CHECK_LAUNCH("ppo_tick_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ppo_cuda_gae(vp_backend* b, int64_t T, int64_t E, float gamma, float lambda,
                                     const float* reward, const float* done, const float* value,
                                     const float* last_value, float* adv, float* ret) {
    VP_REQUIRE(T >= 1 && E >= 1, VP_ERR_SHAPE, "vp_ppo_cuda_gae: %lld steps of %lld envs", (long long)T, (long long)E);
    PPO_STREAM("vp_ppo_cuda_gae");
    ppo_gae_kernel<<<blocks_for(E), PPO_THREADS, 0, st>>>(T, E, gamma, lambda, reward, done, value, last_value, adv, ret);
    VP_CUDA_CHECK_LAUNCH("ppo_gae_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ppo_cuda_permute(vp_backend* b, int64_t n, uint64_t seed, uint64_t stream, int64_t* ctr,
                                         int32_t* perm) {
    VP_REQUIRE(n >= 1, VP_ERR_SHAPE, "vp_ppo_cuda_permute: %lld rows", (long long)n);
    PPO_STREAM("vp_ppo_cuda_permute");
    ppo_permute_kernel<<<blocks_for(n), PPO_THREADS, 0, st>>>(n, seed, stream, ctr, perm);
    VP_CUDA_CHECK_LAUNCH("ppo_permute_kernel");
    ppo_tick_kernel<<<1, 1, 0, st>>>(ctr, VP_PPO_CTR_EPOCH);
    VP_CUDA_CHECK_LAUNCH("ppo_tick_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ppo_cuda_gather(vp_backend* b, int64_t n, const int32_t* idx, vp_ppo_rows src,
                                        vp_ppo_rows dst, int norm) {
    VP_REQUIRE(n >= 1, VP_ERR_SHAPE, "vp_ppo_cuda_gather: %lld rows", (long long)n);
    PPO_STREAM("vp_ppo_cuda_gather");
    ppo_gather_kernel<<<blocks_for(n), PPO_THREADS, 0, st>>>(n, idx, src, dst);
    VP_CUDA_CHECK_LAUNCH("ppo_gather_kernel");
    if (!norm) return VP_OK;
    ppo_norm_kernel<<<1, PPO_THREADS, 0, st>>>(n, dst.adv);
    VP_CUDA_CHECK_LAUNCH("ppo_norm_kernel");
    return VP_OK;
}

extern "C" vp_status vp_ppo_cuda_loss(vp_backend* b, const vp_ppo_loss_dims* d, const float* logits,
                                      const float* value, vp_ppo_rows mb, float* terms, float* d_logits,
                                      float* d_value) {
    VP_REQUIRE(d != NULL && d->m >= 1, VP_ERR_SHAPE, "vp_ppo_cuda_loss: empty minibatch");
    PPO_STREAM("vp_ppo_cuda_loss");
    ppo_loss_kernel<<<blocks_for(d->m), PPO_THREADS, 0, st>>>(*d, logits, value, mb, terms, d_logits, d_value);
    VP_CUDA_CHECK_LAUNCH("ppo_loss_kernel");
    return VP_OK;
}

extern "C" const vp_ppo_kernels vp_ppo_cuda = VP_KERNEL_TABLE(VP_PPO_KERNELS, vp_ppo, vp_ppo_cuda);
