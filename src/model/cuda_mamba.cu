/* CUDA kernels of the Mamba2 mixer: causal depthwise conv + SiLU over (sample, step,
 * channel), and the selective scan to the last step in its closed form, a block per
 * sample so that the sums over a head's channels and over heads stay inside the block,
 * in a fixed order. Kernels, then launchers. */
#include "backend/kit.h"
#include "model/cuda_mamba_math.cuh"
#include "model/cuda_mops.h"

/* d silu(x) / dx. */
__device__ __forceinline__ float silu_grad(float x) {
    const float s = sigm(x);
    return s * (1.0f + x * (1.0f - s));
}

/* ---- conv ---------------------------------------------------------------------------------- */

/* A thread per (sample, channel): the x, B channels' outputs at every step, the C channels'
 * at the last step only. With the default window and width as template arguments (KT, CWT;
 * 0: read from d) the channel's K inputs are loaded once into registers and each step's sum
 * is conv_at's, term for term, from them; otherwise conv_at reads them (L1 keeps them). */
template <int KT, int CWT>
__global__ void conv_forward_kernel(vp_mamba_dims d, const float* __restrict__ xbcdt, const float* __restrict__ w,
                                    const float* __restrict__ bias, float* __restrict__ xb_pre,
                                    float* __restrict__ xb, float* __restrict__ c_pre, float* __restrict__ c) {
    const int K = KT ? KT : d.window, N = d.state, CW = CWT ? CWT : d.conv;
    const int64_t XB = d.hidden + N, CH = XB + N, L = CH + d.heads, n = d.batch * CH;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / CH, ch = i - b * CH;
        const float* in = xbcdt + b * K * L + ch;
        const float* wc = w + ch * CW;
        const float bc = bias[ch];
        if (ch >= XB) {
            const int64_t o = b * N + (ch - XB);
            const float pre = conv_at(in, L, wc, bc, K - 1, CW);
            if (c_pre) c_pre[o] = pre;
            c[o] = pre * sigm(pre);
            continue;
        }
        if (KT) {
            float x[KT > 0 ? KT : 1], wr[CWT > 0 ? CWT : 1];
#pragma unroll
            for (int t = 0; t < KT; ++t) x[t] = in[(int64_t)t * L];
#pragma unroll
            for (int j = 0; j < CWT; ++j) wr[j] = wc[j];
            float pre[KT > 0 ? KT : 1];
            conv_taps<(CWT > 0 ? CWT : 1), (KT > 0 ? KT : 1)>(wr, x, bc, pre);
#pragma unroll
            for (int t = 0; t < KT; ++t) {
                const int64_t o = (b * K + t) * XB + ch;
                if (xb_pre) xb_pre[o] = pre[t];
                xb[o] = pre[t] * sigm(pre[t]);
            }
        } else {
            for (int t = 0; t < K; ++t) {
                const float pre = conv_at(in, L, wc, bc, t, CW);
                const int64_t o = (b * K + t) * XB + ch;
                if (xb_pre) xb_pre[o] = pre;
                xb[o] = pre * sigm(pre);
            }
        }
    }
}

/* One thread per (sample, channel): input gradient and this sample's w, b gradients. */
__global__ void conv_backward_kernel(vp_mamba_dims d, const float* __restrict__ xbcdt, const float* __restrict__ w,
                                     const float* __restrict__ xb_pre, const float* __restrict__ c_pre,
                                     const float* __restrict__ d_xb, const float* __restrict__ d_c, float* d_xbcdt,
                                     float* w_part, float* b_part) {
    const int K = d.window, N = d.state, CW = d.conv;
    const int64_t XB = d.hidden + N, CH = XB + N, L = CH + d.heads;
    float dout[VP_MAMBA_MAX_K];
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < d.batch * CH;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / CH, ch = i % CH;
        // gradient of the conv output through SiLU (C channels: last step only)
        for (int t = 0; t < K; ++t) {
            if (ch < XB) {
                const int64_t o = (b * K + t) * XB + ch;
                dout[t] = d_xb[o] * silu_grad(xb_pre[o]);
            } else {
                const int64_t o = b * N + (ch - XB);
                dout[t] = t == K - 1 ? d_c[o] * silu_grad(c_pre[o]) : 0.0f;
            }
        }
        const float* wc = w + ch * CW;
        const float* in = xbcdt + b * K * L + ch;
        // transposed causal conv
        for (int s = 0; s < K; ++s) {
            float acc = 0.0f;
            for (int j = 0; j < CW; ++j) {
                const int t = s + CW - 1 - j;
                if (t < K) acc += wc[j] * dout[t];
            }
            d_xbcdt[(b * K + s) * L + ch] = acc;
        }
        // this sample's parameter gradients
        float db = 0.0f;
        for (int t = 0; t < K; ++t) db += dout[t];
        b_part[i] = db;
        for (int j = 0; j < CW; ++j) {
            float acc = 0.0f;
            for (int t = 0; t < K; ++t) {
                const int s = t - (CW - 1) + j;
                if (s >= 0) acc += dout[t] * in[(int64_t)s * L];
            }
            w_part[i * CW + j] = acc;
        }
    }
}

/* ---- scan ------------------------------------------------------------------------------------
 * Only the last step's output is used and the decay exp(dt A) is per head, so the scan has
 * a closed form per sample: with cb_t = B_t . C and E_t(h) = exp(A_h sum_{u>t} dt_u(h)),
 *   y[p] = sum_t w_t(h) x_t[p] + D_h x_K[p],   w_t(h) = dt_t(h) cb_t E_t(h),
 * and the backward needs only per-head sums over channels, G_t(h) = sum_p dy[p] x_t[p]:
 *   dx_t[p] = w_t dy[p] (+ D dy at the last step), dD = G_{K-1},
 *   ddt_u = G_u cb_u E_u + A sum_{t<u} G_t dt_t cb_t E_t, dA = sum_t G_t dt_t cb_t E_t S_t,
 *   dcb_t = sum_h G_t dt_t E_t, dB_t = dcb_t C, dC = sum_t dcb_t B_t.
 * A block per sample, a thread per head channel (blockDim = H rounded up to 32). */

/* Shared-memory floats of the scan kernels for K steps, NH heads and `groups` groups. */
__host__ __device__ static inline int scan_shared_floats(int K, int NH, int groups) {
    return 2 * K + 3 * NH * K + groups * K;
}

__global__ void scan_forward_kernel(vp_mamba_dims d, const float* __restrict__ xb, const float* __restrict__ c,
                                    const float* __restrict__ xbcdt, const float* __restrict__ dt_bias,
                                    const float* __restrict__ A_log, const float* __restrict__ D, float* dt, float* y) {
    extern __shared__ float sh[];
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim;
    const int64_t XB = H + N, L = XB + N + NH, b = blockIdx.x;
    const int tid = threadIdx.x;
    float* cb = sh;            // [K]
    float* dts = sh + 2 * K;   // [NH][K]
    float* w = dts + NH * K;   // [NH][K]
    // B_t . C and the step sizes
    for (int t = tid; t < K; t += blockDim.x) {
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) acc += xb[(b * K + t) * XB + H + n] * c[b * N + n];
        cb[t] = acc;
    }
    for (int i = tid; i < NH * K; i += blockDim.x) {
        const int h = i / K, t = i % K;
        const int64_t r = b * K + t;
        const float v = softplus_(xbcdt[r * L + XB + N + h] + dt_bias[h]);
        dt[r * NH + h] = v;
        dts[i] = v;
    }
    __syncthreads();
    // per-head weights of each step
    for (int h = tid; h < NH; h += blockDim.x) {
        const float A = -expf(A_log[h]);
        float S = 0.0f;
        for (int t = K - 1; t >= 0; --t) {
            w[h * K + t] = dts[h * K + t] * cb[t] * expf(A * S);
            S += dts[h * K + t];
        }
    }
    __syncthreads();
    // y = sum_t w_t x_t + D x_K
    if (tid < H) {
        const int h = tid / PD;
        float acc = D[h] * xb[(b * K + K - 1) * XB + tid];
        for (int t = 0; t < K; ++t) acc += w[h * K + t] * xb[(b * K + t) * XB + tid];
        y[b * H + tid] = acc;
    }
}

/* Sum over aligned groups of gw lanes (gw a power of two <= 32); every lane gets its group's sum. */
__device__ __forceinline__ float group_sum(float v, int gw) {
    for (int o = gw >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

__global__ void scan_backward_kernel(vp_mamba_dims d, const float* __restrict__ xb, const float* __restrict__ c,
                                     const float* __restrict__ xbcdt, const float* __restrict__ dt,
                                     const float* __restrict__ dt_bias, const float* __restrict__ A_log,
                                     const float* __restrict__ D, const float* __restrict__ d_y, float* d_xb,
                                     float* d_c, float* d_xbcdt, float* p_alog, float* p_d, float* p_dtb) {
    extern __shared__ float sh[];
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim;
    const int64_t XB = H + N, L = XB + N + NH, b = blockIdx.x;
    const int tid = threadIdx.x, gw = PD < 32 ? PD : 32, gph = PD / gw;
    const int active = tid < H, h_me = active ? tid / PD : 0;
    float* cb = sh;              // [K]
    float* dcb = sh + K;         // [K]
    float* dts = sh + 2 * K;     // [NH][K]
    float* w = dts + NH * K;     // [NH][K]
    float* dcbh = w + NH * K;    // [NH][K] per-head shares of dcb
    float* gpart = dcbh + NH * K; // [groups][K] per-group sums of dy x_t
    // per-group sums of dy x_t (idle lanes add zeros), B_t . C and the step sizes
    const float dy = active ? d_y[b * H + tid] : 0.0f;
    for (int t = 0; t < K; ++t) {
        const float v = group_sum(active ? dy * xb[(b * K + t) * XB + tid] : 0.0f, gw);
        if (tid % gw == 0) gpart[(tid / gw) * K + t] = v;
    }
    for (int t = tid; t < K; t += blockDim.x) {
        float acc = 0.0f;
        for (int n = 0; n < N; ++n) acc += xb[(b * K + t) * XB + H + n] * c[b * N + n];
        cb[t] = acc;
    }
    for (int i = tid; i < NH * K; i += blockDim.x) dts[i] = dt[(b * K + i % K) * NH + i / K];
    __syncthreads();
    // per head: weights, dt (through softplus), A_log, D, and the shares of dcb
    for (int h = tid; h < NH; h += blockDim.x) {
        const float A = -expf(A_log[h]);
        const float* dth = dts + h * K;
        float S = 0.0f;
        for (int t = K - 1; t >= 0; --t) {
            w[h * K + t] = dth[t] * cb[t] * expf(A * S);
            dcbh[h * K + t] = S; // suffix sum, replaced below
            S += dth[t];
        }
        float run = 0.0f, dA = 0.0f, dtb = 0.0f, G = 0.0f;
        for (int t = 0; t < K; ++t) {
            G = 0.0f;
            for (int k = 0; k < gph; ++k) G += gpart[(h * gph + k) * K + t];
            const float St = dcbh[h * K + t], E = expf(A * St);
            const float ddt = G * cb[t] * E + run, dE = G * dth[t] * cb[t];
            run += A * dE * E;
            dA += dE * E * St;
            dcbh[h * K + t] = G * dth[t] * E;
            const int64_t r = b * K + t;
            const float g = ddt * sigm(xbcdt[r * L + XB + N + h] + dt_bias[h]);
            d_xbcdt[r * L + XB + N + h] = g;
            dtb += g;
        }
        p_alog[b * NH + h] = dA * A;
        p_d[b * NH + h] = G; // G at the last step: sum_p dy x_K
        p_dtb[b * NH + h] = dtb;
    }
    __syncthreads();
    // x gradients of this channel; dcb summed over heads in order
    if (active)
        for (int t = 0; t < K; ++t)
            d_xb[(b * K + t) * XB + tid] = w[h_me * K + t] * dy + (t == K - 1 ? D[h_me] * dy : 0.0f);
    for (int t = tid; t < K; t += blockDim.x) {
        float v = 0.0f;
        for (int h = 0; h < NH; ++h) v += dcbh[h * K + t];
        dcb[t] = v;
    }
    __syncthreads();
    // dB_t = dcb_t C, dC = sum_t dcb_t B_t
    for (int i = tid; i < K * N; i += blockDim.x) d_xb[(b * K + i / N) * XB + H + i % N] = dcb[i / N] * c[b * N + i % N];
    for (int n = tid; n < N; n += blockDim.x) {
        float v = 0.0f;
        for (int t = 0; t < K; ++t) v += dcb[t] * xb[(b * K + t) * XB + H + n];
        d_c[b * N + n] = v;
    }
}

/* ---- launchers ----------------------------------------------------------------------------------- */

#define STREAM(be) vp_cuda_stream_of(be)

/* Checks the extents every Mamba2 kernel assumes. */
static vp_status check_dims(const char* fn, const vp_mamba_dims* d) {
    VP_REQUIRE(vp_mamba_dims_fit(d) && d->batch >= 1, VP_ERR_INVALID_ARG, "%s: bad Mamba2 extents", fn);
    return VP_OK;
}

extern "C" vp_status vp_cuda_conv_forward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                                          const float* bias, float* xb_pre, float* xb, float* c_pre, float* c) {
    VP_TRY(check_dims("cuda conv_forward", d));
    VP_REQUIRE(xbcdt && w && bias && xb && c, VP_ERR_INVALID_ARG, "cuda conv_forward: NULL pointer");
    const int64_t n = d->batch * (d->hidden + 2 * (int64_t)d->state);
    const unsigned g = vp_cuda_grid(n, VP_CUDA_THREADS);
    if (d->window == 8 && d->conv == 4)
        conv_forward_kernel<8, 4><<<g, VP_CUDA_THREADS, 0, STREAM(be)>>>(*d, xbcdt, w, bias, xb_pre, xb, c_pre, c);
    else
        conv_forward_kernel<0, 0><<<g, VP_CUDA_THREADS, 0, STREAM(be)>>>(*d, xbcdt, w, bias, xb_pre, xb, c_pre, c);
    VP_CUDA_CHECK_LAUNCH("conv_forward_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_conv_backward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                                           const float* xb_pre, const float* c_pre, const float* d_xb,
                                           const float* d_c, float* d_xbcdt, float* w_part, float* b_part) {
    VP_TRY(check_dims("cuda conv_backward", d));
    VP_REQUIRE(xbcdt && w && xb_pre && c_pre && d_xb && d_c && d_xbcdt && w_part && b_part, VP_ERR_INVALID_ARG,
               "cuda conv_backward: NULL pointer (the forward must keep the pre-SiLU values)");
    const int64_t n = d->batch * (d->hidden + 2 * (int64_t)d->state);
    conv_backward_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(
        *d, xbcdt, w, xb_pre, c_pre, d_xb, d_c, d_xbcdt, w_part, b_part);
    VP_CUDA_CHECK_LAUNCH("conv_backward_kernel");
    return VP_OK;
}

/* Block size and shared bytes of the scan kernels; fails when the shape does not fit. */
static vp_status scan_launch_shape(const char* fn, const vp_mamba_dims* d, int* threads, size_t* shm) {
    const int PD = d->head_dim;
    VP_REQUIRE((PD <= 32 && (PD & (PD - 1)) == 0) || PD % 32 == 0, VP_ERR_UNSUPPORTED,
               "%s: head dim %d must be a power of two up to 32 or a multiple of 32", fn, PD);
    VP_REQUIRE(d->hidden <= 1024, VP_ERR_UNSUPPORTED, "%s: hidden %d > 1024 (a block per sample)", fn, d->hidden);
    VP_REQUIRE(d->batch <= 0x7fffffff, VP_ERR_SHAPE, "%s: batch %lld too large", fn, (long long)d->batch);
    *threads = (d->hidden + 31) / 32 * 32;
    const int gw = PD < 32 ? PD : 32;
    *shm = sizeof(float) * (size_t)scan_shared_floats(d->window, d->heads, *threads / gw);
    VP_REQUIRE(*shm <= 48 * 1024, VP_ERR_UNSUPPORTED, "%s: %zu bytes of shared memory > 48 KiB", fn, *shm);
    return VP_OK;
}

extern "C" vp_status vp_cuda_scan_forward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                                          const float* xbcdt, const float* dt_bias, const float* A_log,
                                          const float* D, float* dt, float* y) {
    VP_TRY(check_dims("cuda scan_forward", d));
    VP_REQUIRE(xb && c && xbcdt && dt_bias && A_log && D && dt && y, VP_ERR_INVALID_ARG,
               "cuda scan_forward: NULL pointer");
    int threads = 0;
    size_t shm = 0;
    VP_TRY(scan_launch_shape("cuda scan_forward", d, &threads, &shm));
    scan_forward_kernel<<<(unsigned)d->batch, threads, shm, STREAM(be)>>>(*d, xb, c, xbcdt, dt_bias, A_log, D, dt, y);
    VP_CUDA_CHECK_LAUNCH("scan_forward_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_scan_backward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                                           const float* xbcdt, const float* dt, const float* dt_bias,
                                           const float* A_log, const float* D, const float* d_y, float* d_xb,
                                           float* d_c, float* d_xbcdt, float* p_alog, float* p_d, float* p_dtb) {
    VP_TRY(check_dims("cuda scan_backward", d));
    VP_REQUIRE(xb && c && xbcdt && dt && dt_bias && A_log && D && d_y && d_xb && d_c && d_xbcdt && p_alog && p_d &&
                   p_dtb,
               VP_ERR_INVALID_ARG, "cuda scan_backward: NULL pointer");
    int threads = 0;
    size_t shm = 0;
    VP_TRY(scan_launch_shape("cuda scan_backward", d, &threads, &shm));
    scan_backward_kernel<<<(unsigned)d->batch, threads, shm, STREAM(be)>>>(
        *d, xb, c, xbcdt, dt, dt_bias, A_log, D, d_y, d_xb, d_c, d_xbcdt, p_alog, p_d, p_dtb);
    VP_CUDA_CHECK_LAUNCH("scan_backward_kernel");
    return VP_OK;
}
