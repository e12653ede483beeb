/* CUDA kernels of the span encoding's Mamba2 mixer (mops.h: span_conv, span_scan): the conv +
 * SiLU and the step sizes once per bar of the span's table, a thread per channel over consecutive
 * rows; then a block per window that loads the window's rows from the tables by index into
 * shared memory and runs scan_forward's closed form (cuda_mamba.cu) with its arithmetic in its
 * order (cuda_mamba_math.cuh), so y has the bits of conv_forward then scan_forward over the
 * gathered rows; span_mix adds the gated RMSNorm in the same block. At the default network's
 * extents a warp runs each window instead (cuda_span_warp.cuh, the same arithmetic). Kernels, then
 * launchers. */
#include "backend/kit.h"
#include "model/cuda_mamba_math.cuh"
#include "model/cuda_mops.h"
#include "model/cuda_span_warp.cuh"

/* span_conv's blocks: SC_COLS column threads, each running up to SC_ROWS consecutive rows. */
#define SC_COLS 128
#define SC_ROWS 16

/* A thread per (column, `per` consecutive rows): the conv + SiLU of a bar past the padding
 * (bias, then w[j] x_j in order, rows clamped at 0), or the step size's softplus. CWT > 0: the
 * conv width known when compiled, its weights and the last CWT rows' inputs held in registers
 * (each input read once); CWT = 0: any width, the inputs read per row. */
template <int CWT>
__global__ void span_conv_kernel(vp_mamba_dims d, int64_t rows, int per, const float* __restrict__ xbcdt,
                                 const float* __restrict__ w, const float* __restrict__ bias,
                                 const float* __restrict__ dt_bias, float* __restrict__ act) {
    const int CW = CWT > 0 ? CWT : d.conv;
    const int CH = d.hidden + 2 * d.state, L = CH + d.heads;
    const int ch = blockIdx.y * SC_COLS + threadIdx.x;
    if (ch >= L) return;
    const int64_t r0 = (int64_t)blockIdx.x * per, r1 = r0 + per < rows ? r0 + per : rows;
    const float* x = xbcdt + ch;
    float* out = act + ch;
    if (ch >= CH) {
        const float db = dt_bias[ch - CH];
        for (int64_t r = r0; r < r1; ++r) out[r * L] = softplus_(x[r * L] + db);
        return;
    }
    const float bc = bias[ch];
    if constexpr (CWT > 0) {
        constexpr int C = CWT > 0 ? CWT : 1;
        float wr[C], win[C];
#pragma unroll
        for (int j = 0; j < C; ++j) wr[j] = w[ch * C + j];
#pragma unroll
        for (int j = 0; j < C - 1; ++j) {
            const int64_t s = r0 - (C - 1) + j;
            win[j] = x[(s > 0 ? s : 0) * L];
        }
        for (int64_t r = r0; r < r1; ++r) {
            win[C - 1] = x[r * L];
            float pre = bc;
#pragma unroll
            for (int j = 0; j < C; ++j) pre += wr[j] * win[j];
            out[r * L] = pre * sigm(pre);
#pragma unroll
            for (int j = 0; j < C - 1; ++j) win[j] = win[j + 1];
        }
    } else {
        for (int64_t r = r0; r < r1; ++r) {
            float pre = bc;
            for (int j = 0; j < CW; ++j) {
                const int64_t s = r - (CW - 1) + j;
                pre += w[ch * CW + j] * x[(s > 0 ? s : 0) * L];
            }
            out[r * L] = pre * sigm(pre);
        }
    }
}

/* conv_at over the window's rows: step s is xbcdt row max(base + s, 0) (channel ch), then SiLU. */
__device__ __forceinline__ float silu_conv_rows_at(const float* __restrict__ xbcdt, int64_t L, int base,
                                                   const float* __restrict__ w, const float* __restrict__ bias,
                                                   int64_t ch, int t, int cw) {
    float acc = bias[ch];
    for (int j = 0; j < cw; ++j) {
        const int s = t - (cw - 1) + j;
        if (s >= 0) {
            const int r = base + s;
            acc += w[ch * cw + j] * xbcdt[(int64_t)(r > 0 ? r : 0) * L + ch];
        }
    }
    return acc * sigm(acc);
}

/* Shared-memory bytes of span_scan_kernel: cb [K], dts [NH][K], w [NH][K], C [N], B [K][N], and
 * with `stage_x` the window's x rows [K][H]. */
static inline size_t span_scan_shared(int K, int NH, int N, int H, int stage_x) {
    return sizeof(float) * ((size_t)K + 2 * (size_t)NH * K + N + (size_t)K * N + (stage_x ? (size_t)K * H : 0));
}

/* vp_group_reduce's group of the whole block (any G but 32). */
#define SPAN_BLOCK_GROUP 1024

/* A block per window, a thread per head channel (blockDim = H rounded up to 32). Every value the
 * window reads from the tables (B at each step, C at the last, the step sizes and, with
 * STAGE_X, x at each step; a window's first CW - 1 steps from the conv of its rows) is loaded
 * first, by all threads at once, into shared memory; then the scan's sums run from there in
 * scan_forward's order. GATE 0: out = y; GATE 1: out = yn = RMSNorm(y * silu(z)) * norm_g (the
 * backend's SiLU, product and RMSNorm formulas; the sum of squares in the block's order).
 * CWT > 0: the conv width CW known when compiled, with K > CW - 1: each channel's first CW - 1
 * steps from its weights and inputs loaded once (silu_conv_first, cuda_mamba_math.cuh), the same sums; CWT = 0: any
 * width and window, silu_conv_rows_at per value. */
template <int GATE, int STAGE_X, int CWT>
__global__ void span_scan_kernel(vp_mamba_dims d, const int32_t* __restrict__ last, const float* __restrict__ xbcdt,
                                 const float* __restrict__ act, const float* __restrict__ w,
                                 const float* __restrict__ bias, const float* __restrict__ A_log,
                                 const float* __restrict__ D, const float* __restrict__ z,
                                 const float* __restrict__ norm_g, float eps, float* __restrict__ out) {
    extern __shared__ float sh[];
    __shared__ float red[32];
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim, CW = d.conv;
    const int64_t XB = H + N, CH = XB + N, L = CH + NH, b = blockIdx.x;
    const int tid = threadIdx.x, P = CW - 1 < K ? CW - 1 : K, base = last[b] - K + 1;
    float* cb = sh;              // [K]
    float* dts = sh + K;         // [NH][K]
    float* wt = dts + NH * K;    // [NH][K]
    float* cc = wt + NH * K;     // [N]
    float* bs = cc + N;          // [K][N]
    float* xs = bs + K * N;      // [K][H] (STAGE_X)
    // the window's step t is table row max(base + t, 0)
#define SPAN_ROW(t) ((int64_t)((base + (t)) > 0 ? (base + (t)) : 0))
    const int nb = K * N;
    if constexpr (CWT > 0) {
        // CWT == CW, K > CW - 1 (so P = CW - 1 and C's last step is past the conv's start): the
        // rows past the first P steps as loaded values, then each channel's first P steps (x with
        // STAGE_X, B) from its weights and inputs loaded once (silu_conv_first)
        constexpr int CF = CWT > 1 ? CWT - 1 : 1;
        for (int i = tid; i < nb - P * N + N + NH * K; i += blockDim.x) {
            if (i < nb - P * N) {
                const int t = P + i / N, n = i - (t - P) * N;
                bs[t * N + n] = act[SPAN_ROW(t) * L + H + n];
            } else if (i < nb - P * N + N) {
                const int n = i - (nb - P * N);
                cc[n] = act[SPAN_ROW(K - 1) * L + XB + n];
            } else {
                const int j = i - (nb - P * N) - N;
                dts[j] = act[SPAN_ROW(j % K) * L + CH + j / K];
            }
        }
        for (int c = STAGE_X ? tid : H + tid; c < H + N; c += blockDim.x) {
            float v[CF];
            silu_conv_first<CWT>(xbcdt, L, base, w, bias, c, P, v);
#pragma unroll
            for (int t = 0; t < CF; ++t)
                if (t < P) {
                    if (c < H) xs[t * H + c] = v[t];
                    else bs[t * N + (c - H)] = v[t];
                }
        }
        if (STAGE_X && tid < H)
#pragma unroll 4
            for (int t = P; t < K; ++t) xs[t * H + tid] = act[SPAN_ROW(t) * L + tid];
    } else {
        // one round of loads: B [K][N], C [N] at the last step, the step sizes [NH][K]
        const int nload = nb + N + NH * K;
        for (int i = tid; i < nload; i += blockDim.x) {
            if (i < nb) {
                const int t = i / N, n = i - t * N;
                bs[i] = t < P ? silu_conv_rows_at(xbcdt, L, base, w, bias, H + n, t, CW) : act[SPAN_ROW(t) * L + H + n];
            } else if (i < nb + N) {
                const int n = i - nb;
                cc[n] = K - 1 < P ? silu_conv_rows_at(xbcdt, L, base, w, bias, XB + n, K - 1, CW)
                                  : act[SPAN_ROW(K - 1) * L + XB + n];
            } else {
                const int j = i - nb - N;
                dts[j] = act[SPAN_ROW(j % K) * L + CH + j / K];
            }
        }
        if (STAGE_X && tid < H)
#pragma unroll 4
            for (int t = 0; t < K; ++t)
                xs[t * H + tid] = t < P ? silu_conv_rows_at(xbcdt, L, base, w, bias, tid, t, CW) : act[SPAN_ROW(t) * L + tid];
    }
    __syncthreads();
    // B_t . C
    for (int t = tid; t < K; t += blockDim.x) {
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) {
            const float bv = bs[t * N + n];
            acc += bv * cc[n];
        }
        cb[t] = acc;
    }
    __syncthreads();
    // per-head weights of each step
    for (int h = tid; h < NH; h += blockDim.x) {
        const float A = -expf(A_log[h]);
        float S = 0.0f;
        for (int t = K - 1; t >= 0; --t) {
            wt[h * K + t] = dts[h * K + t] * cb[t] * expf(A * S);
            S += dts[h * K + t];
        }
    }
    __syncthreads();
    // y = sum_t w_t x_t + D x_K
    float acc = 0.0f;
    if (tid < H) {
        const int h = tid / PD;
        const float xK = STAGE_X ? xs[(K - 1) * H + tid]
                       : K - 1 < P ? silu_conv_rows_at(xbcdt, L, base, w, bias, tid, K - 1, CW)
                                   : act[SPAN_ROW(K - 1) * L + tid];
        acc = D[h] * xK;
        for (int t = 0; t < K; ++t) {
            const float xv = STAGE_X ? xs[t * H + tid]
                             : t < P ? silu_conv_rows_at(xbcdt, L, base, w, bias, tid, t, CW)
                                     : act[SPAN_ROW(t) * L + tid];
            acc += wt[h * K + t] * xv;
        }
        if (!GATE) out[b * H + tid] = acc;
    }
#undef SPAN_ROW
    if (!GATE) return;
    // the gate: g = y silu(z), then g / sqrt(mean(g^2) + eps) * norm_g (every thread reduces)
    float gv = 0.0f;
    if (tid < H) {
        const float zv = z[b * H + tid];
        gv = acc * (zv * sigm(zv));
    }
    const float rs = 1.0f / sqrtf(vp_group_reduce<SPAN_BLOCK_GROUP>(gv * gv, 0, red) * (1.0f / (float)H) + eps);
    if (tid < H) out[b * H + tid] = gv * rs * norm_g[tid];
}

/* ---- launchers ----------------------------------------------------------------------------------- */

/* Checks the extents the kernels assume. */
static vp_status check_dims(const char* fn, const vp_mamba_dims* d) {
    VP_REQUIRE(vp_mamba_dims_fit(d), VP_ERR_INVALID_ARG, "%s: bad Mamba2 extents", fn);
    return VP_OK;
}

extern "C" vp_status vp_cuda_span_conv(vp_backend* be, const vp_mamba_dims* d, int64_t rows, const float* xbcdt,
                                       const float* w, const float* bias, const float* dt_bias, float* act) {
    VP_TRY(check_dims("cuda span_conv", d));
    VP_REQUIRE(rows >= 1 && xbcdt && w && bias && dt_bias && act, VP_ERR_INVALID_ARG,
               "cuda span_conv: %lld rows or a NULL pointer", (long long)rows);
    // SC_ROWS rows a thread, fewer where that would leave under about 1024 row blocks (each
    // thread's rows run one after another)
    const int per = rows / 1024 < 1 ? 1 : rows / 1024 < SC_ROWS ? (int)(rows / 1024) : SC_ROWS;
    const int64_t L = d->hidden + 2 * (int64_t)d->state + d->heads, g = (rows + per - 1) / per;
    VP_REQUIRE(g <= 0x7fffffff && L * d->conv <= 0x7fffffff, VP_ERR_UNSUPPORTED,
               "cuda span_conv: %lld rows of %lld columns", (long long)rows, (long long)L);
    const dim3 grid((unsigned)g, (unsigned)((L + SC_COLS - 1) / SC_COLS));
    if (d->conv == 4)
        span_conv_kernel<4><<<grid, SC_COLS, 0, vp_cuda_stream_of(be)>>>(*d, rows, per, xbcdt, w, bias, dt_bias, act);
    else
        span_conv_kernel<0><<<grid, SC_COLS, 0, vp_cuda_stream_of(be)>>>(*d, rows, per, xbcdt, w, bias, dt_bias, act);
    VP_CUDA_CHECK_LAUNCH("span_conv_kernel");
    return VP_OK;
}

/* The extents, pointers and launch shape span_scan_kernel needs. */
static vp_status span_launch_check(const char* fn, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                                   const float* act, const float* w, const float* bias, const float* A_log,
                                   const float* D, const float* out) {
    VP_TRY(check_dims(fn, d));
    VP_REQUIRE(d->batch >= 1 && d->batch <= 0x7fffffff && last && xbcdt && act && w && bias && A_log && D && out,
               VP_ERR_INVALID_ARG, "%s: %lld windows or a NULL pointer", fn, (long long)d->batch);
    VP_REQUIRE(d->hidden <= 1024, VP_ERR_UNSUPPORTED, "%s: hidden %d > 1024 (a block per window)", fn, d->hidden);
    const size_t shm = span_scan_shared(d->window, d->heads, d->state, d->hidden, 0);
    VP_REQUIRE(shm <= 48 * 1024, VP_ERR_UNSUPPORTED, "%s: %zu bytes of shared memory > 48 KiB", fn, shm);
    return VP_OK;
}

/* Launches span_scan_warp_kernel<GATE> where the extents are the default network's, else
 * span_scan_kernel<GATE>: x staged in shared memory where the window's rows fit in 48 KiB with
 * the rest, read from the tables at its sum otherwise (the same arithmetic). */
template <int GATE>
static vp_status span_launch(vp_backend* be, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                             const float* act, const float* w, const float* bias, const float* A_log, const float* D,
                             const float* z, const float* norm_g, float eps, float* out) {
    const size_t staged = span_scan_shared(d->window, d->heads, d->state, d->hidden, 1);
    const size_t unstaged = span_scan_shared(d->window, d->heads, d->state, d->hidden, 0);
    const int threads = (d->hidden + 31) / 32 * 32, stage = staged <= 48 * 1024;
    // the default conv width known when compiled where the window is longer than the conv's start
    const int fixed = d->conv == 4 && d->window > 3;
    const unsigned g = (unsigned)d->batch;
    cudaStream_t st = vp_cuda_stream_of(be);
    if (span_warp_fits(d)) {
        // the default network's shape: a warp per window (cuda_span_warp.cuh), the same bits
        const unsigned gw = (unsigned)((d->batch + SPAN_WARP_WINDOWS - 1) / SPAN_WARP_WINDOWS);
        span_scan_warp_kernel<GATE, 8, 16, 4, 8><<<gw, SPAN_WARP_WINDOWS * 32, 0, st>>>(
            *d, last, xbcdt, act, w, bias, A_log, D, z, norm_g, eps, out);
        VP_CUDA_CHECK_LAUNCH(GATE ? "span_scan_warp_kernel<gate>" : "span_scan_warp_kernel");
        return VP_OK;
    }
#define SPAN_LAUNCH(SX, CWT) \
    span_scan_kernel<GATE, SX, CWT><<<g, threads, SX ? staged : unstaged, st>>>(*d, last, xbcdt, act, w, bias, A_log, \
                                                                             D, z, norm_g, eps, out)
    if (stage && fixed) SPAN_LAUNCH(1, 4);
    else if (stage) SPAN_LAUNCH(1, 0);
    else if (fixed) SPAN_LAUNCH(0, 4);
    else SPAN_LAUNCH(0, 0);
#undef SPAN_LAUNCH
    VP_CUDA_CHECK_LAUNCH(GATE ? "span_scan_kernel<gate>" : "span_scan_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_span_scan(vp_backend* be, const vp_mamba_dims* d, const int32_t* last,
                                       const float* xbcdt, const float* act, const float* w, const float* bias,
                                       const float* A_log, const float* D, float* y) {
    VP_TRY(span_launch_check("cuda span_scan", d, last, xbcdt, act, w, bias, A_log, D, y));
    return span_launch<0>(be, d, last, xbcdt, act, w, bias, A_log, D, NULL, NULL, 0.0f, y);
}

extern "C" vp_status vp_cuda_span_mix(vp_backend* be, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                                      const float* act, const float* w, const float* bias, const float* A_log,
                                      const float* D, const float* z, const float* norm_g, float eps, float* y,
                                      float* sz, float* g, float* rstd, float* yn) {
    (void)y, (void)sz, (void)g, (void)rstd; /* the CPU's scratch: one pass here */
    VP_TRY(span_launch_check("cuda span_mix", d, last, xbcdt, act, w, bias, A_log, D, yn));
    VP_REQUIRE(z && norm_g, VP_ERR_INVALID_ARG, "cuda span_mix: NULL z or norm_g");
    return span_launch<1>(be, d, last, xbcdt, act, w, bias, A_log, D, z, norm_g, eps, yn);
}
