/* Collection on the CUDA backend: kernels, then launchers. The per-env math is
 * collect_math.h's, shared with the CPU loop (collect_cpu.c), so both backends choose the
 * same actions. */
#include <stdint.h>

#include "backend/kit.h"
#include "learn/collect_impl.h"

/* Threads per block of the act kernel. */
#define CL_THREADS 256

/* ---- kernels ------------------------------------------------------------------------------------ */

/* One thread per env: its epsilon-greedy choices from its Q row. */
__global__ void collect_act_kernel(vp_collect_dims d, const float* q, const int64_t* step, int32_t* actions) {
    const int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= d.n_envs) return;
    vp_collect_act_index(&d, q + i * d.layout.n_heads, step[0], i, actions + i * VP_ENV_BRANCHES);
}

/* One thread: the counter advances. */
__global__ void collect_tick_kernel(int64_t* step) {
    if (step[0] < INT64_MAX) step[0] += 1; /* a counter at its end stays there */
}

/* One thread per element of out [n, width]: consecutive threads read consecutive floats of a
 * row; the thread of column 0 also copies its env's window end. With a hand-over (hand.step
 * non-NULL) the bars are read from hand.next_bar, the row's column threads below
 * VP_ENV_PORTFOLIO copy its portfolio, the thread of column 0 its bar, and the first thread
 * advances the counter (nothing here reads what the hand-over writes). */
__global__ void collect_gather_kernel(vp_collect_gather_dims d, const float* table, const int32_t* bar, float* out,
                                      const int32_t* wend_src, int32_t* wend_dst, vp_collect_hand hand) {
    const int handing = hand.step != NULL;
    if (handing && blockIdx.x == 0 && threadIdx.x == 0 && threadIdx.y == 0 && hand.step[0] < INT64_MAX)
        hand.step[0] += 1; /* a counter at its end stays there */
    if (handing) bar = hand.next_bar;
    // threadIdx.y picks a row (grid-stride over rows), threadIdx.x strides its columns: no
    // division per element; four floats at a time where the rows allow it
    const int vec = d.width % 4 == 0 && ((uintptr_t)table | (uintptr_t)out) % 16 == 0;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.y + threadIdx.y; i < d.n; i += (int64_t)gridDim.x * blockDim.y) {
        const int32_t t = bar[i];
        const int64_t r = (int64_t)t - d.begin;
        if (vec && r >= 0 && r < d.rows) {
            const float4* src = (const float4*)(table + r * d.width);
            float4* dst = (float4*)(out + i * d.width);
            for (int64_t j = threadIdx.x; j < d.width / 4; j += blockDim.x) dst[j] = src[j];
        } else {
            for (int64_t j = threadIdx.x; j < d.width; j += blockDim.x)
                out[i * d.width + j] = vp_collect_gather_elem(&d, table, t, j);
        }
        if (threadIdx.x == 0 && wend_src && wend_dst) wend_dst[i] = wend_src[i];
        if (handing) {
            if (threadIdx.x < VP_ENV_PORTFOLIO)
                hand.port[i * VP_ENV_PORTFOLIO + threadIdx.x] = hand.next_port[i * VP_ENV_PORTFOLIO + threadIdx.x];
            if (threadIdx.x == 0) hand.bar[i] = t;
        }
    }
}

/* One thread per float of the portfolio block [n, P]: the bar copied by the thread of column 0,
 * the counter advanced by thread 0 (every thread reads nothing the tick writes). */
__global__ void collect_handover_kernel(int64_t n, const int32_t* next_bar, const float* next_port, int32_t* bar,
                                        float* port, int64_t* step) {
    const int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (e == 0 && step[0] < INT64_MAX) step[0] += 1; /* a counter at its end stays there */
    if (e >= n * VP_ENV_PORTFOLIO) return;
    port[e] = next_port[e];
    if (e % VP_ENV_PORTFOLIO == 0) bar[e / VP_ENV_PORTFOLIO] = next_bar[e / VP_ENV_PORTFOLIO];
}

/* ---- launchers ---------------------------------------------------------------------------------- */

extern "C" vp_status vp_collect_cuda_act(vp_backend* b, const vp_collect_dims* d, const float* q,
                                         const int64_t* step, int32_t* actions) {
    VP_REQUIRE(b != NULL && d != NULL && q != NULL && step != NULL && actions != NULL, VP_ERR_INVALID_ARG,
               "vp_collect_cuda_act: NULL argument");
    VP_REQUIRE(d->n_envs >= 1, VP_ERR_SHAPE, "vp_collect_cuda_act: %lld envs", (long long)d->n_envs);
    cudaStream_t st = vp_cuda_stream_of(b);
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "vp_collect_cuda_act: backend %s is not CUDA", vp_backend_name(b));
    const int64_t blocks = (d->n_envs + CL_THREADS - 1) / CL_THREADS;
    collect_act_kernel<<<(unsigned)blocks, CL_THREADS, 0, st>>>(*d, q, step, actions);
    VP_CUDA_CHECK_LAUNCH("collect_act_kernel");
    return VP_OK;
}

extern "C" vp_status vp_collect_cuda_tick(vp_backend* b, int64_t* step) {
    VP_REQUIRE(b != NULL && step != NULL, VP_ERR_INVALID_ARG, "vp_collect_cuda_tick: NULL argument");
    cudaStream_t st = vp_cuda_stream_of(b);
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "vp_collect_cuda_tick: backend %s is not CUDA", vp_backend_name(b));
    collect_tick_kernel<<<1, 1, 0, st>>>(step);
    VP_CUDA_CHECK_LAUNCH("collect_tick_kernel");
    return VP_OK;
}

extern "C" vp_status vp_collect_cuda_gather(vp_backend* b, const vp_collect_gather_dims* d, const float* table,
                                            const int32_t* bar, float* out, const int32_t* wend_src,
                                            int32_t* wend_dst, const vp_collect_hand* hand) {
    VP_REQUIRE(b != NULL && d != NULL && table != NULL && (bar != NULL || hand != NULL) && out != NULL,
               VP_ERR_INVALID_ARG, "vp_collect_cuda_gather: NULL argument");
    cudaStream_t st = vp_cuda_stream_of(b);
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "vp_collect_cuda_gather: backend %s is not CUDA", vp_backend_name(b));
    const dim3 block(64, 4);
    static_assert(VP_ENV_PORTFOLIO <= 64, "a row's portfolio is copied by its first column threads");
    const vp_collect_hand none = {NULL, NULL, NULL, NULL, NULL};
    collect_gather_kernel<<<vp_cuda_row_grid(d->n, 4), block, 0, st>>>(*d, table, bar, out, wend_src, wend_dst,
                                                                         hand ? *hand : none);
    VP_CUDA_CHECK_LAUNCH("collect_gather_kernel");
    return VP_OK;
}

extern "C" vp_status vp_collect_cuda_handover(vp_backend* b, int64_t n, const int32_t* next_bar, const float* next_port,
                                              int32_t* bar, float* port, int64_t* step) {
    VP_REQUIRE(b != NULL && next_bar != NULL && next_port != NULL && bar != NULL && port != NULL && step != NULL,
               VP_ERR_INVALID_ARG, "vp_collect_cuda_handover: NULL argument");
    cudaStream_t st = vp_cuda_stream_of(b);
    VP_REQUIRE(st != NULL, VP_ERR_INVALID_ARG, "vp_collect_cuda_handover: backend %s is not CUDA", vp_backend_name(b));
    const int64_t blocks = (n * VP_ENV_PORTFOLIO + CL_THREADS - 1) / CL_THREADS;
    collect_handover_kernel<<<(unsigned)blocks, CL_THREADS, 0, st>>>(n, next_bar, next_port, bar, port, step);
    VP_CUDA_CHECK_LAUNCH("collect_handover_kernel");
    return VP_OK;
}

extern "C" const vp_collect_kernels vp_collect_cuda = VP_KERNEL_TABLE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cuda);
