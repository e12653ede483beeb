/* CUDA kernels of the Mamba2 mixer: causal depthwise conv + SiLU over (sample, step,
 * channel), the selective scan over (sample, head, channel) with the state in
 * registers, and its backward with a block per sample so the sums over channels (dB,
 * dC) and over a head's channels (ddt, dA, dD) stay inside the block, in a fixed order.
 * Kernels, then launchers. */
#include "backend/cuda/common.cuh"
#include "model/cuda_mops.h"

/* Largest window the kernels keep per thread (vp_model_cfg_check enforces it). */
#define VP_MAMBA_MAX_K 64

/* 1 / (1 + exp(-x)) without overflow. */
__device__ __forceinline__ float sigm(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

/* d silu(x) / dx. */
__device__ __forceinline__ float silu_grad(float x) {
    const float s = sigm(x);
    return s * (1.0f + x * (1.0f - s));
}

/* log(1 + exp(x)), linear above 20 (as the softplus op). */
__device__ __forceinline__ float softplus_(float x) { return x > 20.0f ? x : log1pf(expf(x)); }

/* Conv output at step t of channel ch of one sample: in points at the sample's first row. */
__device__ __forceinline__ float conv_at(const float* in, int64_t L, const float* w, float bias, int t, int cw) {
    float acc = bias;
    for (int j = 0; j < cw; ++j) {
        const int s = t - (cw - 1) + j;
        if (s >= 0) acc += w[j] * in[(int64_t)s * L];
    }
    return acc;
}

/* ---- conv ---------------------------------------------------------------------------------- */

/* x, B channels at every step (B*K*XB items), then C channels at the last step (B*N). */
__global__ void conv_forward_kernel(vp_mamba_dims d, const float* __restrict__ xbcdt, const float* __restrict__ w,
                                    const float* __restrict__ bias, float* xb_pre, float* xb, float* c_pre, float* c) {
    const int K = d.window, N = d.state, CW = d.conv;
    const int64_t XB = d.hidden + N, L = XB + N + d.heads, nxb = d.batch * K * XB, n = nxb + d.batch * N;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        if (i < nxb) {
            const int64_t r = i / XB, ch = i % XB, b = r / K;
            const int t = (int)(r % K);
            const float pre = conv_at(xbcdt + b * K * L + ch, L, w + ch * CW, bias[ch], t, CW);
            if (xb_pre) xb_pre[i] = pre;
            xb[i] = pre * sigm(pre);
        } else {
            const int64_t k = i - nxb, b = k / N, ch = XB + k % N;
            const float pre = conv_at(xbcdt + b * K * L + ch, L, w + ch * CW, bias[ch], K - 1, CW);
            if (c_pre) c_pre[k] = pre;
            c[k] = pre * sigm(pre);
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

/* ---- scan ------------------------------------------------------------------------------------ */

/* One thread per (sample, head channel); the state row [N] lives in registers (NM >= N). */
template <int NM>
__global__ void scan_forward_kernel(vp_mamba_dims d, const float* __restrict__ xb, const float* __restrict__ c,
                                    const float* __restrict__ xbcdt, const float* __restrict__ dt_bias,
                                    const float* __restrict__ A_log, const float* __restrict__ D, float* dt, float* y) {
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim;
    const int64_t XB = H + N, L = XB + N + NH;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < d.batch * H;
         i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / H;
        const int col = (int)(i % H), h = col / PD, p = col % PD;
        const float A = -expf(A_log[h]), bias = dt_bias[h];
        float s[NM];
#pragma unroll
        for (int n = 0; n < NM; ++n) s[n] = 0.0f;
        for (int t = 0; t < K; ++t) {
            const int64_t r = b * K + t;
            const float dtv = softplus_(xbcdt[r * L + XB + N + h] + bias);
            if (p == 0) dt[r * NH + h] = dtv;
            const float a = expf(dtv * A), u = dtv * xb[r * XB + col];
            const float* Bt = xb + r * XB + H;
#pragma unroll
            for (int n = 0; n < NM; ++n)
                if (n < N) s[n] = a * s[n] + u * Bt[n];
        }
        float acc = D[h] * xb[(b * K + K - 1) * XB + col];
#pragma unroll
        for (int n = 0; n < NM; ++n)
            if (n < N) acc += s[n] * c[b * N + n];
        y[i] = acc;
    }
}

/* Sum over aligned groups of w lanes (w a power of two <= 32); every lane gets its group's sum. */
__device__ __forceinline__ float group_sum(float v, int w) {
    for (int o = w >> 1; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* A block per sample, a thread per head channel (blockDim = H rounded up to 32). Shared
 * memory: per-warp partials [warps][K*N + N] of dB and dC, per-group partials
 * [groups][K + 2] of ddt (per step), dA and dD, a group being min(PD, 32) lanes. */
template <int NM>
__global__ void scan_backward_kernel(vp_mamba_dims d, const float* __restrict__ xb, const float* __restrict__ c,
                                     const float* __restrict__ xbcdt, const float* __restrict__ dt,
                                     const float* __restrict__ dt_bias, const float* __restrict__ A_log,
                                     const float* __restrict__ D, const float* __restrict__ d_y, float* d_xb,
                                     float* d_c, float* d_xbcdt, float* p_alog, float* p_d, float* p_dtb) {
    extern __shared__ float sh[];
    const int K = d.window, H = d.hidden, N = d.state, NH = d.heads, PD = d.head_dim;
    const int64_t XB = H + N, L = XB + N + NH, b = blockIdx.x;
    const int col = threadIdx.x, lane = col & 31, warp = col >> 5, nwarps = blockDim.x >> 5;
    const int gw = PD < 32 ? PD : 32, group = col / gw, KN = K * N;
    const int active = col < H, h = active ? col / PD : 0;
    float* wpart = sh;                           // [nwarps][K*N + N]
    float* gpart = sh + nwarps * (KN + N);       // [blockDim / gw][K + 2]
    const float A = -expf(A_log[h]), Dh = D[h];
    const float dy = active ? d_y[b * H + col] : 0.0f;
    // x of this channel at each step (0 for idle threads)
    float s[NM], ds[NM], sp[NM];
#pragma unroll
    for (int n = 0; n < NM; ++n) s[n] = 0.0f;
    for (int t = 0; t < K; ++t) {
        const int64_t r = b * K + t;
        const float dtv = dt[r * NH + h], a = expf(dtv * A), u = active ? dtv * xb[r * XB + col] : 0.0f;
#pragma unroll
        for (int n = 0; n < NM; ++n)
            if (n < N) s[n] = a * s[n] + u * xb[r * XB + H + n];
    }
    // output y = s_K C + D x_K
    const float xK = active ? xb[(b * K + K - 1) * XB + col] : 0.0f;
    float dD = dy * xK, gA = 0.0f;
#pragma unroll
    for (int n = 0; n < NM; ++n)
        if (n < N) {
            ds[n] = dy * c[b * N + n];
            const float v = vp_warp_sum(dy * s[n]);
            if (lane == 0) wpart[warp * (KN + N) + KN + n] = v;
        }
    // back through the recurrence, recomputing s_{t-1} from the window's start
    for (int t = K - 1; t >= 0; --t) {
        const int64_t r = b * K + t;
        const float dtv = dt[r * NH + h], a = expf(dtv * A), xv = active ? xb[r * XB + col] : 0.0f;
#pragma unroll
        for (int n = 0; n < NM; ++n) sp[n] = 0.0f;
        for (int t2 = 0; t2 < t; ++t2) {
            const int64_t r2 = b * K + t2;
            const float dt2 = dt[r2 * NH + h], a2 = expf(dt2 * A), u2 = active ? dt2 * xb[r2 * XB + col] : 0.0f;
#pragma unroll
            for (int n = 0; n < NM; ++n)
                if (n < N) sp[n] = a2 * sp[n] + u2 * xb[r2 * XB + H + n];
        }
        float gx = 0.0f, gdt = 0.0f, gAs = 0.0f;
#pragma unroll
        for (int n = 0; n < NM; ++n)
            if (n < N) {
                const float Bn = xb[r * XB + H + n];
                gx += ds[n] * Bn;
                gdt += ds[n] * (xv * Bn + A * a * sp[n]);
                gAs += ds[n] * sp[n];
                const float v = vp_warp_sum(dtv * ds[n] * xv);
                if (lane == 0) wpart[warp * (KN + N) + t * N + n] = v;
                ds[n] *= a;
            }
        if (active) d_xb[r * XB + col] = dtv * gx + (t == K - 1 ? Dh * dy : 0.0f);
        gdt = group_sum(gdt, gw);
        if (col % gw == 0) gpart[group * (K + 2) + t] = gdt;
        gA += dtv * a * gAs;
    }
    gA = group_sum(gA, gw);
    dD = group_sum(dD, gw);
    if (col % gw == 0) {
        gpart[group * (K + 2) + K] = gA;
        gpart[group * (K + 2) + K + 1] = dD;
    }
    __syncthreads();
    // per head: dt through softplus, dt_bias, A_log, D (groups of a head in order)
    const int gph = PD / gw;
    for (int hh = threadIdx.x; hh < NH; hh += blockDim.x) {
        const float Ah = -expf(A_log[hh]);
        float dtb = 0.0f, sA = 0.0f, sD = 0.0f;
        for (int t = 0; t < K; ++t) {
            float g = 0.0f;
            for (int k = 0; k < gph; ++k) g += gpart[(hh * gph + k) * (K + 2) + t];
            const int64_t r = b * K + t;
            g *= sigm(xbcdt[r * L + XB + N + hh] + dt_bias[hh]);
            d_xbcdt[r * L + XB + N + hh] = g;
            dtb += g;
        }
        for (int k = 0; k < gph; ++k) {
            sA += gpart[(hh * gph + k) * (K + 2) + K];
            sD += gpart[(hh * gph + k) * (K + 2) + K + 1];
        }
        p_alog[b * NH + hh] = sA * Ah;
        p_d[b * NH + hh] = sD;
        p_dtb[b * NH + hh] = dtb;
    }
    // dB per step and dC: warps in order
    for (int i = threadIdx.x; i < KN + N; i += blockDim.x) {
        float v = 0.0f;
        for (int k = 0; k < nwarps; ++k) v += wpart[k * (KN + N) + i];
        if (i < KN)
            d_xb[(b * K + i / N) * XB + H + i % N] = v;
        else
            d_c[b * N + (i - KN)] = v;
    }
}

/* ---- launchers ----------------------------------------------------------------------------------- */

#define STREAM(be) (vp_cuda_of(be)->stream)

/* Checks the extents every Mamba2 kernel assumes. */
static vp_status check_dims(const char* fn, const vp_mamba_dims* d) {
    VP_REQUIRE(d != NULL && d->batch >= 1 && d->window >= 1 && d->window <= VP_MAMBA_MAX_K && d->state >= 1 &&
                   d->state <= 64 && d->heads >= 1 && d->head_dim >= 1 && d->hidden == d->heads * d->head_dim &&
                   d->conv >= 1,
               VP_ERR_INVALID_ARG, "%s: bad Mamba2 extents", fn);
    return VP_OK;
}

extern "C" vp_status vp_cuda_conv_forward(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt, const float* w,
                                          const float* bias, float* xb_pre, float* xb, float* c_pre, float* c) {
    VP_TRY(check_dims("cuda conv_forward", d));
    VP_REQUIRE(xbcdt && w && bias && xb && c, VP_ERR_INVALID_ARG, "cuda conv_forward: NULL pointer");
    const int64_t n = d->batch * ((int64_t)d->window * (d->hidden + d->state) + d->state);
    conv_forward_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(*d, xbcdt, w, bias, xb_pre,
                                                                                          xb, c_pre, c);
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

extern "C" vp_status vp_cuda_scan_forward(vp_backend* be, const vp_mamba_dims* d, const float* xb, const float* c,
                                          const float* xbcdt, const float* dt_bias, const float* A_log,
                                          const float* D, float* dt, float* y) {
    VP_TRY(check_dims("cuda scan_forward", d));
    VP_REQUIRE(xb && c && xbcdt && dt_bias && A_log && D && dt && y, VP_ERR_INVALID_ARG,
               "cuda scan_forward: NULL pointer");
    const int64_t n = d->batch * d->hidden;
    const unsigned grid = vp_cuda_grid(n, VP_CUDA_THREADS);
    if (d->state <= 16)
        scan_forward_kernel<16><<<grid, VP_CUDA_THREADS, 0, STREAM(be)>>>(*d, xb, c, xbcdt, dt_bias, A_log, D, dt, y);
    else
        scan_forward_kernel<64><<<grid, VP_CUDA_THREADS, 0, STREAM(be)>>>(*d, xb, c, xbcdt, dt_bias, A_log, D, dt, y);
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
    const int PD = d->head_dim;
    VP_REQUIRE((PD <= 32 && (PD & (PD - 1)) == 0) || PD % 32 == 0, VP_ERR_UNSUPPORTED,
               "cuda scan_backward: head dim %d must be a power of two up to 32 or a multiple of 32", PD);
    VP_REQUIRE(d->hidden <= 1024, VP_ERR_UNSUPPORTED, "cuda scan_backward: hidden %d > 1024 (a block per sample)",
               d->hidden);
    const int threads = (d->hidden + 31) / 32 * 32, gw = PD < 32 ? PD : 32;
    const size_t shm = sizeof(float) * ((size_t)(threads / 32) * (size_t)(d->window * d->state + d->state) +
                                        (size_t)(threads / gw) * (size_t)(d->window + 2));
    VP_REQUIRE(shm <= 48 * 1024, VP_ERR_UNSUPPORTED, "cuda scan_backward: %zu bytes of shared memory > 48 KiB", shm);
    VP_REQUIRE(d->batch <= 0x7fffffff, VP_ERR_SHAPE, "cuda scan_backward: batch %lld too large", (long long)d->batch);
    const unsigned grid = (unsigned)d->batch;
    if (d->state <= 16)
        scan_backward_kernel<16><<<grid, threads, shm, STREAM(be)>>>(*d, xb, c, xbcdt, dt, dt_bias, A_log, D, d_y, d_xb,
                                                                     d_c, d_xbcdt, p_alog, p_d, p_dtb);
    else
        scan_backward_kernel<64><<<grid, threads, shm, STREAM(be)>>>(*d, xb, c, xbcdt, dt, dt_bias, A_log, D, d_y, d_xb,
                                                                     d_c, d_xbcdt, p_alog, p_d, p_dtb);
    VP_CUDA_CHECK_LAUNCH("scan_backward_kernel");
    return VP_OK;
}
