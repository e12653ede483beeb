/* CUDA kernels of the span encoding's Mamba2 mixer (mops.h: span_conv, span_scan): the conv +
 * SiLU and the step sizes once per bar of the span's table, (row, channel) threads; then a block
 * per window that reads the window's rows from the tables by index and runs scan_forward's
 * closed form (cuda_mamba.cu) with its arithmetic in its order (cuda_mamba_math.cuh), so y has
 * the bits of conv_forward then scan_forward over the gathered rows; span_mix adds the gated
 * RMSNorm in the same block. Kernels, then launchers. */
#include "backend/kit.h"
#include "model/cuda_mamba_math.cuh"
#include "model/cuda_mops.h"

/* Largest window, state and conv width (vp_model_cfg_check enforces them). */
#define SPAN_MAX_K 64
#define SPAN_MAX_N 64
#define SPAN_MAX_CW 64

/* span_conv's blocks: threadIdx.y picks a row (grid-stride), threadIdx.x strides its columns. */
#define SC_X 64
#define SC_Y 4

__global__ void span_conv_kernel(vp_mamba_dims d, int64_t rows, const float* __restrict__ xbcdt,
                                 const float* __restrict__ w, const float* __restrict__ bias,
                                 const float* __restrict__ dt_bias, float* __restrict__ act) {
    const int CW = d.conv;
    const int64_t CH = d.hidden + 2 * (int64_t)d.state, L = CH + d.heads;
    for (int64_t r = (int64_t)blockIdx.x * SC_Y + threadIdx.y; r < rows; r += (int64_t)gridDim.x * SC_Y)
        for (int64_t ch = threadIdx.x; ch < L; ch += SC_X) {
            float v;
            if (ch < CH) {
                // conv_at at a step past the padding: bias, then w[j] x_j in order (rows clamped at 0)
                float pre = bias[ch];
                for (int j = 0; j < CW; ++j) {
                    const int64_t s = r - (CW - 1) + j;
                    pre += w[ch * CW + j] * xbcdt[(s > 0 ? s : 0) * L + ch];
                }
                v = pre * sigm(pre);
            } else {
                v = softplus_(xbcdt[r * L + ch] + dt_bias[ch - CH]);
            }
            act[r * L + ch] = v;
        }
}

/* conv_at over the window's rows by index: step s is xbcdt row row[s] (channel ch), then SiLU. */
__device__ __forceinline__ float silu_conv_rows(const float* __restrict__ xbcdt, int64_t L, const int* row,
                                                const float* __restrict__ w, const float* __restrict__ bias,
                                                int64_t ch, int t, int cw) {
    float acc = bias[ch];
    for (int j = 0; j < cw; ++j) {
        const int s = t - (cw - 1) + j;
        if (s >= 0) acc += w[ch * cw + j] * xbcdt[(int64_t)row[s] * L + ch];
    }
    return acc * sigm(acc);
}

/* Shared-memory bytes of span_scan_kernel: cb [K], dts [NH][K], w [NH][K], C [N], rows [K]. */
static inline size_t span_scan_shared(int K, int NH, int N) {
    return sizeof(float) * (size_t)(K + 2 * NH * K + N) + sizeof(int) * (size_t)K;
}

/* vp_group_reduce's group of the whole block (any G but 32). */
#define SPAN_BLOCK_GROUP 1024

/* A block per window, a thread per head channel (blockDim = H rounded up to 32). GATE 0: out = y;
 * GATE 1: out = yn = RMSNorm(y * silu(z)) * norm_g (the backend's SiLU, product and RMSNorm
 * formulas; the sum of squares in the block's order). */
template <int GATE>
__global__ void span_scan_kernel(vp_mamba_dims d, const int32_t* __restrict__ last, const float* __restrict__ xbcdt,
                                 const float* __restrict__ act, const float* __restrict__ w,
                                 const float* __restrict__ bias, const float* __restrict__ A_log,
                                 const float* __restrict__ D, const float* __restrict__ z,
                                 const float* __restrict__ norm_g, float eps, float* __restrict__ out) {
    extern __shared__ float sh[];
    __shared__ float red[32];
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim, CW = d.conv;
    const int64_t XB = H + N, CH = XB + N, L = CH + NH, b = blockIdx.x;
    const int tid = threadIdx.x, P = CW - 1 < K ? CW - 1 : K;
    float* cb = sh;              // [K]
    float* dts = sh + K;         // [NH][K]
    float* wt = dts + NH * K;    // [NH][K]
    float* cc = wt + NH * K;     // [N]
    int* row = (int*)(cc + N);   // [K]
    for (int t = tid; t < K; t += blockDim.x) {
        const int r = last[b] - K + 1 + t;
        row[t] = r > 0 ? r : 0;
    }
    __syncthreads();
    // C at the last step and the step sizes
    for (int n = tid; n < N; n += blockDim.x)
        cc[n] = K - 1 < P ? silu_conv_rows(xbcdt, L, row, w, bias, XB + n, K - 1, CW)
                          : act[(int64_t)row[K - 1] * L + XB + n];
    for (int i = tid; i < NH * K; i += blockDim.x) dts[i] = act[(int64_t)row[i % K] * L + CH + i / K];
    __syncthreads();
    // B_t . C
    for (int t = tid; t < K; t += blockDim.x) {
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) {
            const float bv = t < P ? silu_conv_rows(xbcdt, L, row, w, bias, H + n, t, CW)
                                   : act[(int64_t)row[t] * L + H + n];
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
        const float xK = K - 1 < P ? silu_conv_rows(xbcdt, L, row, w, bias, tid, K - 1, CW)
                                   : act[(int64_t)row[K - 1] * L + tid];
        acc = D[h] * xK;
        for (int t = 0; t < K; ++t) {
            const float xv = t < P ? silu_conv_rows(xbcdt, L, row, w, bias, tid, t, CW)
                                   : act[(int64_t)row[t] * L + tid];
            acc += wt[h * K + t] * xv;
        }
        if (!GATE) out[b * H + tid] = acc;
    }
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
    VP_REQUIRE(d != NULL && d->window >= 1 && d->window <= SPAN_MAX_K && d->state >= 1 && d->state <= SPAN_MAX_N &&
                   d->heads >= 1 && d->head_dim >= 1 && d->hidden == d->heads * d->head_dim && d->conv >= 1 &&
                   d->conv <= SPAN_MAX_CW,
               VP_ERR_INVALID_ARG, "%s: bad Mamba2 extents", fn);
    return VP_OK;
}

extern "C" vp_status vp_cuda_span_conv(vp_backend* be, const vp_mamba_dims* d, int64_t rows, const float* xbcdt,
                                       const float* w, const float* bias, const float* dt_bias, float* act) {
    VP_TRY(check_dims("cuda span_conv", d));
    VP_REQUIRE(rows >= 1 && xbcdt && w && bias && dt_bias && act, VP_ERR_INVALID_ARG,
               "cuda span_conv: %lld rows or a NULL pointer", (long long)rows);
    const int64_t g = (rows + SC_Y - 1) / SC_Y;
    span_conv_kernel<<<(unsigned)(g < 65535 * 8 ? g : 65535 * 8), dim3(SC_X, SC_Y), 0, vp_cuda_stream_of(be)>>>(
        *d, rows, xbcdt, w, bias, dt_bias, act);
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
    const size_t shm = span_scan_shared(d->window, d->heads, d->state);
    VP_REQUIRE(shm <= 48 * 1024, VP_ERR_UNSUPPORTED, "%s: %zu bytes of shared memory > 48 KiB", fn, shm);
    return VP_OK;
}

extern "C" vp_status vp_cuda_span_scan(vp_backend* be, const vp_mamba_dims* d, const int32_t* last,
                                       const float* xbcdt, const float* act, const float* w, const float* bias,
                                       const float* A_log, const float* D, float* y) {
    VP_TRY(span_launch_check("cuda span_scan", d, last, xbcdt, act, w, bias, A_log, D, y));
    const size_t shm = span_scan_shared(d->window, d->heads, d->state);
    const int threads = (d->hidden + 31) / 32 * 32;
    span_scan_kernel<0><<<(unsigned)d->batch, threads, shm, vp_cuda_stream_of(be)>>>(*d, last, xbcdt, act, w, bias,
                                                                                      A_log, D, NULL, NULL, 0.0f, y);
    VP_CUDA_CHECK_LAUNCH("span_scan_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_span_mix(vp_backend* be, const vp_mamba_dims* d, const int32_t* last, const float* xbcdt,
                                      const float* act, const float* w, const float* bias, const float* A_log,
                                      const float* D, const float* z, const float* norm_g, float eps, float* y,
                                      float* sz, float* g, float* rstd, float* yn) {
    (void)y, (void)sz, (void)g, (void)rstd; /* the CPU's scratch: one pass here */
    VP_TRY(span_launch_check("cuda span_mix", d, last, xbcdt, act, w, bias, A_log, D, yn));
    VP_REQUIRE(z && norm_g, VP_ERR_INVALID_ARG, "cuda span_mix: NULL z or norm_g");
    const size_t shm = span_scan_shared(d->window, d->heads, d->state);
    const int threads = (d->hidden + 31) / 32 * 32;
    span_scan_kernel<1><<<(unsigned)d->batch, threads, shm, vp_cuda_stream_of(be)>>>(*d, last, xbcdt, act, w, bias,
                                                                                      A_log, D, z, norm_g, eps, yn);
    VP_CUDA_CHECK_LAUNCH("span_scan_kernel<gate>");
    return VP_OK;
}
