/* The Decision Transformer's kernels on CUDA: kernels, then launchers. The per-element math is
 * dt_math.h's, shared with the CPU loops (dt_cpu.c): one thread per element, row or sequence;
 * every gradient sum of the embedding runs in one thread in a fixed order (no float atomics), so
 * the same bits every run and the CPU's within rounding. */
#include <stdint.h>

#include "backend/kit.h"
#include "learn/dt_impl.h"

/* Threads per block. */
#define DT_THREADS 256

/* ---- kernels ------------------------------------------------------------------------------------ */

/* A grid-stride loop over k in [0, n) (vp_cuda_grid caps the blocks). */
#define DT_FOR(k, n) \
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < (n); k += (int64_t)gridDim.x * blockDim.x)

/* One thread per (step, column): the step's three tokens at that column. */
__global__ void dt_embed_kernel(vp_dt_embed_args a, float* x0) {
    const vp_dt_dims d = a.d;
    DT_FOR(k, a.B * d.K * d.D)
    vp_dt_embed_at(k / d.D, (int)(k % d.D), d.K, d.L, d.D, d.TM, &a.lay, a.stok, a.rtg, a.act, a.ts, a.ret_w, a.ret_b,
                   a.act_e, a.time_e, x0);
}

/* One thread per element of d stok, then per column of the return embedding, per element of the
 * action table and per element of the timestep table. */
__global__ void dt_embed_backward_kernel(vp_dt_embed_args a, const float* dx0, float* dstok, float* g_ret_w,
                                         float* g_ret_b, float* g_act_e, float* g_time_e) {
    const vp_dt_dims d = a.d;
    const int64_t BK = a.B * d.K, n_s = BK * d.D, n_a = (int64_t)d.A * d.D, n_t = (int64_t)d.TM * d.D;
    DT_FOR(k0, n_s + d.D + n_a + n_t) {
        int64_t k = k0;
        if (k < n_s) {
            vp_dt_embed_dstate_at(k / d.D, (int)(k % d.D), d.K, d.L, d.D, dx0, dstok);
            continue;
        }
        k -= n_s;
        if (k < d.D) {
            vp_dt_embed_dret_at((int)k, BK, d.K, d.L, d.D, a.rtg, dx0, g_ret_w, g_ret_b);
            continue;
        }
        k -= d.D;
        if (k < n_a) {
            vp_dt_embed_dact_at((int)(k / d.D), (int)(k % d.D), BK, d.K, d.L, d.D, &a.lay, a.act, dx0, g_act_e);
            continue;
        }
        k -= n_a;
        vp_dt_embed_dtime_at((int)(k / d.D), (int)(k % d.D), BK, d.K, d.L, d.D, d.TM, a.ts, dx0, g_time_e);
    }
}

__global__ void dt_gelu_kernel(int64_t n, const float* x, float* y) {
    DT_FOR(i, n) y[i] = vp_dt_gelu(x[i]);
}

__global__ void dt_gelu_backward_kernel(int64_t n, const float* x, const float* dy, float* dx) {
    DT_FOR(i, n) dx[i] = dy[i] * vp_dt_gelu_grad(x[i]);
}

/* One thread: the valid steps in order (B K is at most a few thousand). */
__global__ void dt_count_kernel(int64_t n, const float* valid, float* count) {
    float s = 0.0f;
    for (int64_t i = 0; i < n; ++i) s += valid[i];
    count[0] = s;
}

/* One thread per token row. */
__global__ void dt_loss_kernel(vp_dt_dims d, vp_action_layout lay, int64_t B, const float* logits, const int32_t* act,
                               const float* valid, const float* count, float* terms, float* d_logits) {
    const float inv = count[0] > 0.0f ? 1.0f / count[0] : 0.0f;
    DT_FOR(t, B * d.L) vp_dt_loss_row(t, d.K, d.L, &lay, logits, act, valid, inv, terms, d_logits);
}

/* One thread per sequence. */
__global__ void dt_sample_kernel(int K, int P, int64_t B, uint64_t seed, const int32_t* index, vp_dt_rows_ptrs d,
                                 vp_dt_batch_ptrs x) {
    DT_FOR(s, B) vp_dt_sample_seq(s, K, P, seed, VP_DT_SAMPLE_STREAM, (uint64_t)index[0], d, x);
}

/* One thread per (row, column of H + P + 1). */
__global__ void dt_hist_push_kernel(vp_dt_dims d, int64_t N, const int32_t* steps, const float* enc, const float* port,
                                    vp_dt_hist_ptrs h) {
    const int W = d.H + d.P + 1;
    DT_FOR(k, N * W) vp_dt_hist_push_at(k / W, (int)(k % W), d.K, d.H, d.P, steps[k / W], enc, port, h);
}

/* One thread per (row, step, column of H + P + 1). */
__global__ void dt_hist_seq_kernel(vp_dt_dims d, int64_t N, const int32_t* steps, vp_dt_hist_ptrs h, float* e_seq,
                                   vp_dt_batch_ptrs x) {
    const int W = d.H + d.P + 1;
    DT_FOR(k, N * d.K * W) {
        const int64_t ij = k / W;
        vp_dt_hist_seq_at(ij / d.K, (int)(ij % d.K), (int)(k % W), d.K, d.H, d.P, steps[ij / d.K], h, e_seq, x);
    }
}

/* One thread per score. */
__global__ void dt_readout_kernel(vp_dt_dims d, int64_t N, const int32_t* steps, const float* logits, float* scores) {
    DT_FOR(k, N * d.A) vp_dt_readout_at(k / d.A, (int)(k % d.A), d.K, d.L, d.A, steps[k / d.A], logits, scores);
}

/* One thread per row. */
__global__ void dt_hist_observe_kernel(int K, int64_t N, int32_t* steps, const int32_t* actions,
                                       const float* rewards, vp_dt_hist_ptrs h) {
    DT_FOR(i, N) vp_dt_hist_observe_at(i, K, steps, actions, rewards, h);
}

/* ---- launchers ---------------------------------------------------------------------------------- */

extern "C" {

vp_status vp_dt_cuda_embed(vp_backend* b, const vp_dt_embed_args* a, float* x0) {
    const int64_t n = a->B * a->d.K * a->d.D;
    dt_embed_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(*a, x0);
    VP_CUDA_CHECK_LAUNCH("dt_embed_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_embed_backward(vp_backend* b, const vp_dt_embed_args* a, const float* dx0, float* dstok,
                                    float* g_ret_w, float* g_ret_b, float* g_act_e, float* g_time_e) {
    const vp_dt_dims* d = &a->d;
    const int64_t n = a->B * d->K * d->D + d->D + (int64_t)d->A * d->D + (int64_t)d->TM * d->D;
    dt_embed_backward_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(
        *a, dx0, dstok, g_ret_w, g_ret_b, g_act_e, g_time_e);
    VP_CUDA_CHECK_LAUNCH("dt_embed_backward_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_gelu(vp_backend* b, int64_t n, const float* x, float* y) {
    dt_gelu_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(n, x, y);
    VP_CUDA_CHECK_LAUNCH("dt_gelu_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_gelu_backward(vp_backend* b, int64_t n, const float* x, const float* dy, float* dx) {
    dt_gelu_backward_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(n, x, dy, dx);
    VP_CUDA_CHECK_LAUNCH("dt_gelu_backward_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_count(vp_backend* b, int64_t n, const float* valid, float* count) {
    dt_count_kernel<<<1, 1, 0, vp_cuda_stream_of(b)>>>(n, valid, count);
    VP_CUDA_CHECK_LAUNCH("dt_count_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_loss(vp_backend* b, const vp_dt_dims* d, const vp_action_layout* lay, int64_t B,
                          const float* logits, const int32_t* act, const float* valid, const float* count, float* terms,
                          float* d_logits) {
    const int64_t n = B * d->L;
    dt_loss_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, *lay, B, logits, act, valid,
                                                                                         count, terms, d_logits);
    VP_CUDA_CHECK_LAUNCH("dt_loss_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_sample(vp_backend* b, const vp_dt_dims* dd, int64_t B, uint64_t seed, const int32_t* index,
                            vp_dt_rows_ptrs d, vp_dt_batch_ptrs x) {
    dt_sample_kernel<<<vp_cuda_grid(B, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(dd->K, dd->P, B, seed, index,
                                                                                           d, x);
    VP_CUDA_CHECK_LAUNCH("dt_sample_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_hist_push(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, const float* enc,
                               const float* port, vp_dt_hist_ptrs h) {
    const int64_t n = N * (d->H + d->P + 1);
    dt_hist_push_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, N, steps, enc, port, h);
    VP_CUDA_CHECK_LAUNCH("dt_hist_push_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_hist_seq(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, vp_dt_hist_ptrs h,
                              float* e_seq, vp_dt_batch_ptrs x) {
    const int64_t n = N * d->K * (d->H + d->P + 1);
    dt_hist_seq_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, N, steps, h, e_seq, x);
    VP_CUDA_CHECK_LAUNCH("dt_hist_seq_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_readout(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps, const float* logits,
                             float* scores) {
    const int64_t n = N * d->A;
    dt_readout_kernel<<<vp_cuda_grid(n, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(*d, N, steps, logits, scores);
    VP_CUDA_CHECK_LAUNCH("dt_readout_kernel");
    return VP_OK;
}

vp_status vp_dt_cuda_hist_observe(vp_backend* b, const vp_dt_dims* d, int64_t N, int32_t* steps,
                                  const int32_t* actions, const float* rewards, vp_dt_hist_ptrs h) {
    dt_hist_observe_kernel<<<vp_cuda_grid(N, DT_THREADS), DT_THREADS, 0, vp_cuda_stream_of(b)>>>(d->K, N, steps, actions,
                                                                                                 rewards, h);
    VP_CUDA_CHECK_LAUNCH("dt_hist_observe_kernel");
    return VP_OK;
}

const vp_dt_kernels vp_dt_cuda = VP_KERNEL_TABLE(VP_DT_KERNELS, vp_dt, vp_dt_cuda);

} /* extern "C" */
