/* IQL's kernels on CUDA: kernels, then launchers. The per-sample math is iql_math.h's, shared
 * with the CPU loops (iql_cpu.c): one thread per batch row. */
#include <stdint.h>

#include "backend/kit.h"
#include "learn/iql_impl.h"

/* Threads per block of the per-row kernels. */
#define IQL_THREADS 256

/* ---- kernels ------------------------------------------------------------------------------------ */

/* One thread per batch row: its dataset row's transition (s at row t, s' at row t + 1). */
__global__ void iql_sample_kernel(int64_t B, uint64_t seed, uint64_t stream, const int64_t* ctr, vp_iql_data_ptrs d,
                                  vp_iql_rows out) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= B) return;
    const int64_t r = vp_iql_row_at(d.steps * d.n_envs, B, seed, stream, ctr[0], k), nx = r + d.n_envs;
    out.bar[k] = d.bar[r];
    out.bar1[k] = d.bar[nx];
    for (int j = 0; j < VP_ENV_PORTFOLIO; ++j) {
        out.portfolio[k * VP_ENV_PORTFOLIO + j] = d.portfolio[r * VP_ENV_PORTFOLIO + j];
        out.portfolio1[k * VP_ENV_PORTFOLIO + j] = d.portfolio[nx * VP_ENV_PORTFOLIO + j];
    }
    for (int j = 0; j < VP_ENV_BRANCHES; ++j) out.action[k * VP_ENV_BRANCHES + j] = d.action[r * VP_ENV_BRANCHES + j];
    out.reward[k] = d.reward[r];
    out.done[k] = d.done[r];
}

/* One thread: the counter advances (after every row of the launch before read it). */
__global__ void iql_tick_kernel(int64_t* ctr) {
    if (ctr[0] < INT64_MAX) ctr[0] += 1; /* a counter at its end stays there */
}

/* One thread per sample: its terms and gradients. */
__global__ void iql_loss_kernel(vp_iql_loss_dims d, const float* q1, const float* q2, const float* qt1,
                                const float* qt2, const float* v, const float* v1, const float* logits,
                                vp_iql_rows rows, float* terms, float* d_q1, float* d_q2, float* d_logits, float* d_v) {
    const int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (k >= d.m) return;
    const int64_t A = d.layout.n_heads;
    vp_iql_sample_loss(&d, q1 + k * A, q2 + k * A, qt1 + k * A, qt2 + k * A, v[k], v1[k], logits + k * A,
                       rows.action + k * VP_ENV_BRANCHES, rows.reward[k], rows.done[k], terms + k * VP_IQL_T_COUNT,
                       d_q1 + k * A, d_q2 + k * A, d_logits + k * A, d_v + k);
}

/* ---- launchers ---------------------------------------------------------------------------------- */

/* The stream of b, failing the launcher when b is not a CUDA backend. */
#define IQL_STREAM(fn)                                                                                      \
    cudaStream_t st = vp_cuda_stream_of(b);                                                                 \
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "%s: backend %s is not CUDA", fn, vp_backend_name(b))

/* Blocks of IQL_THREADS for n items. */
static unsigned blocks_for(int64_t n) { return (unsigned)((n + IQL_THREADS - 1) / IQL_THREADS); }

extern "C" vp_status vp_iql_cuda_sample(vp_backend* b, int64_t B, uint64_t seed, uint64_t stream, const int64_t* ctr,
                                        vp_iql_data_ptrs d, vp_iql_rows out) {
    VP_REQUIRE(B >= 1 && d.steps >= 1 && d.n_envs >= 1, VP_ERR_SHAPE,
               "vp_iql_cuda_sample: %lld rows from %lld steps of %lld envs", (long long)B, (long long)d.steps,
               (long long)d.n_envs);
    IQL_STREAM("vp_iql_cuda_sample");
    iql_sample_kernel<<<blocks_for(B), IQL_THREADS, 0, st>>>(B, seed, stream, ctr, d, out);
    VP_CUDA_CHECK_LAUNCH("iql_sample_kernel");
    return VP_OK;
}

extern "C" vp_status vp_iql_cuda_tick(vp_backend* b, int64_t* ctr) {
    IQL_STREAM("vp_iql_cuda_tick");
    iql_tick_kernel<<<1, 1, 0, st>>>(ctr);
    VP_CUDA_CHECK_LAUNCH("iql_tick_kernel");
    return VP_OK;
}

extern "C" vp_status vp_iql_cuda_loss(vp_backend* b, const vp_iql_loss_dims* d, const float* q1, const float* q2,
                                      const float* qt1, const float* qt2, const float* v, const float* v1,
                                      const float* logits, vp_iql_rows rows, float* terms, float* d_q1, float* d_q2,
                                      float* d_logits, float* d_v) {
    VP_REQUIRE(d != NULL && d->m >= 1, VP_ERR_SHAPE, "vp_iql_cuda_loss: empty batch");
    IQL_STREAM("vp_iql_cuda_loss");
    iql_loss_kernel<<<blocks_for(d->m), IQL_THREADS, 0, st>>>(*d, q1, q2, qt1, qt2, v, v1, logits, rows, terms, d_q1,
                                                                d_q2, d_logits, d_v);
    VP_CUDA_CHECK_LAUNCH("iql_loss_kernel");
    return VP_OK;
}

extern "C" const vp_iql_kernels vp_iql_cuda = VP_KERNEL_TABLE(VP_IQL_KERNELS, vp_iql, vp_iql_cuda);
