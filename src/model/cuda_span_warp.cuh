/* Internal to cuda_span.cu: span_scan_kernel's arithmetic for the default network's shape with a
 * warp per window (K = 8 steps, N = 16 state channels, conv width 4, H = 32 J channels, NH K <= 32,
 * PD a multiple of 32). The block form runs a window's phases on a block of H threads, most of
 * them waiting at the barriers while 8 or 4 threads run the B . C products and the step weights;
 * here one warp runs them all: first the step weights (lanes over B, C and the step sizes), then
 * lane l's channels l, l + 32, ..., l + 32 (J - 1) one after another, each channel's x at every
 * step loaded, its sum and its gate product formed before the next. The phases meet at
 * __syncwarp only and a block carries SPAN_WARP_WINDOWS windows. Every value is the block
 * form's expression in its order, its products and sums written as the rounded operations the
 * block form's loops compile to (a fully unrolled sum would leave the compiler free to contract
 * its first product elsewhere): the same bits, which test_gpu_span checks against the gathered
 * path. The gate's sum of squares is the block reduction's tree (a
 * butterfly per 32 channels, then one over the J partials). */
#ifndef VULPES_MODEL_CUDA_SPAN_WARP_CUH
#define VULPES_MODEL_CUDA_SPAN_WARP_CUH

#include "backend/kit.h"
#include "model/cuda_mamba_math.cuh"

/* Windows (warps) per block, and the blocks a multiprocessor should hold (registers capped to
 * fit them: the kernel is bound by load latency, which more warps hide). */
#define SPAN_WARP_WINDOWS 8
#define SPAN_WARP_BLOCKS 4

/* Whether span_scan_warp_kernel<.., 8, 16, 4, 8> serves these extents. */
static inline int span_warp_fits(const vp_mamba_dims* d) {
    return d->window == 8 && d->state == 16 && d->conv == 4 && d->hidden == 256 && d->heads * d->window <= 32 &&
           d->head_dim % 32 == 0;
}

/* GATE 0: out = y; GATE 1: out = RMSNorm(y * silu(z)) * norm_g (span_scan_kernel's GATE). */
template <int GATE, int K, int N, int CW, int J>
__global__ void __launch_bounds__(SPAN_WARP_WINDOWS * 32, SPAN_WARP_BLOCKS)
    span_scan_warp_kernel(vp_mamba_dims d, const int32_t* __restrict__ last, const float* __restrict__ xbcdt,
                          const float* __restrict__ act, const float* __restrict__ w, const float* __restrict__ bias,
                          const float* __restrict__ A_log, const float* __restrict__ D, const float* __restrict__ z,
                          const float* __restrict__ norm_g, float eps, float* __restrict__ out) {
    static_assert(CW == 4 && K > CW - 1 && N <= 32 && J >= 1 && J <= 32, "span_scan_warp_kernel: shape");
    constexpr int H = 32 * J, P = CW - 1;
    constexpr int64_t XB = H + N, CH = XB + N;
    __shared__ float shm[SPAN_WARP_WINDOWS][K * N + N + 64];
    const int lane = threadIdx.x & 31, wid = threadIdx.x >> 5;
    const int64_t b = (int64_t)blockIdx.x * SPAN_WARP_WINDOWS + wid;
    if (b >= d.batch) return; /* a whole warp: no block barrier below */
    const int NH = d.heads, PD = d.head_dim;
    const int64_t L = CH + NH;
    float* bs = shm[wid];     // [K][N]
    float* cc = bs + K * N;   // [N]
    float* dts = cc + N;      // [NH][K], NH K <= 32
    float* wt = dts + 32;     // [NH][K]
    const int base = last[b] - K + 1;
#define SPAN_WROW(t) ((int64_t)((base + (t)) > 0 ? (base + (t)) : 0))
    // first the step weights: B past the padding, C at the last step, the step sizes, B's padded
    // steps from its conv; B_t . C on lane t; the weight of step t of head h on lane h K + t
    for (int i = lane; i < (K - P) * N; i += 32) {
        const int t = P + i / N, n = i - (t - P) * N;
        bs[t * N + n] = act[SPAN_WROW(t) * L + H + n];
    }
    if (lane < N) {
        cc[lane] = act[SPAN_WROW(K - 1) * L + XB + lane];
        float v[P];
        silu_conv_first<CW>(xbcdt, L, base, w, bias, H + lane, P, v); // B's padded steps
#pragma unroll
        for (int t = 0; t < P; ++t) bs[t * N + lane] = v[t];
    }
    if (lane < NH * K) dts[lane] = act[SPAN_WROW(lane % K) * L + CH + lane / K];
    __syncwarp();
    float cbv = 0.0f;
    if (lane < K) {
#pragma unroll
        for (int n = 0; n < N; ++n) {
            const float bv = bs[lane * N + n];
            cbv = __fmaf_rn(bv, cc[n], cbv);
        }
    }
    const int th = lane % K;
    const float cbt = __shfl_sync(0xffffffffu, cbv, th);
    if (lane < NH * K) {
        const int h = lane / K;
        const float A = -expf(A_log[h]);
        float S = 0.0f; // the later steps' sizes, from the last step back (the block form's order)
        for (int s = K - 1; s > th; --s) S += dts[h * K + s];
        wt[lane] = dts[lane] * cbt * expf(A * S);
    }
    __syncwarp();
    // then channel by channel: x at every step, y = D x_K + sum_t w_t x_t, and the gate's product
    float* o = out + b * H + lane;
    float gv[J];
#pragma unroll
    for (int j = 0; j < J; ++j) {
        const int c = 32 * j + lane, h = 32 * j / PD;
        float x[K];
#pragma unroll
        for (int t = P; t < K; ++t) x[t] = act[SPAN_WROW(t) * L + c];
        const float zv = GATE ? z[b * H + c] : 0.0f;
        silu_conv_first<CW>(xbcdt, L, base, w, bias, c, P, x); // x's first P steps, which see the padding
        float acc = __fmul_rn(D[h], x[K - 1]);
#pragma unroll
        for (int t = 0; t < K; ++t) acc = __fmaf_rn(wt[h * K + t], x[t], acc);
        if (GATE) gv[j] = acc * (zv * sigm(zv));
        else o[32 * j] = acc;
    }
#undef SPAN_WROW
    if (!GATE) return;
    // the sum of squares as vp_group_reduce over a block of H threads: a butterfly per 32
    // channels, then one over the J partials
    float r = 0.0f;
#pragma unroll
    for (int j = 0; j < J; ++j) {
        const float part = vp_warp_sum(gv[j] * gv[j]);
        if (lane == j) r = part;
    }
    const float rs = 1.0f / sqrtf(vp_warp_sum(r) * (1.0f / (float)H) + eps);
#pragma unroll
    for (int j = 0; j < J; ++j) o[32 * j] = gv[j] * rs * norm_g[32 * j + lane];
}

#endif /* VULPES_MODEL_CUDA_SPAN_WARP_CUH */
