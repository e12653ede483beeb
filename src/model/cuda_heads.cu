/* CUDA kernels of the model outside the Mamba2 mixer (window indices, last-step rows,
 * dueling combine, C51 expected values, IQN embedding and mix): kernels, then
 * launchers, then the vp_mops_cuda table. */
#include "backend/kit.h"
#include "model/cuda_mops.h"

/* ---- kernels ------------------------------------------------------------------------------ */

/* idx[b*K + k] = max(bar[b] - K + 1 + k, 0); one thread per (sample, step). */
__global__ void window_index_kernel(const int32_t* __restrict__ bar, int32_t* idx, int64_t B, int K) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * K; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / K, k = i % K;
        const int64_t r = (int64_t)bar[b] - K + 1 + k;
        idx[i] = (int32_t)(r < 0 ? 0 : r);
    }
}

/* dst[b, :] = src[b, K-1, :] (add 0) or dst[b, K-1, :] += src[b, :] (add 1); (sample, feature). */
__global__ void last_rows_kernel(const float* __restrict__ src, float* dst, int64_t B, int K, int64_t n, int add) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / n, j = i % n, wide = (b * K + K - 1) * n + j;
        if (add)
            dst[wide] += src[i];
        else
            dst[i] = src[wide];
    }
}

/* Dueling combine (or its backward) at one (sample, atom), over every branch. */
__global__ void dueling_kernel(const float* __restrict__ v, const float* __restrict__ in, float* out, float* d_v,
                               int64_t B, int Z, vp_branch_map br, int A, int backward) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * Z; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / Z, z = i % Z;
        const float* x = in + b * A * Z + z;
        float* o = out + b * A * Z + z;
        float dv = 0.0f;
        int a0 = 0;
        for (int k = 0; k < br.n; ++k) {
            // branch mean of the advantages (forward) or of the logit gradients (backward)
            float sum = 0.0f;
            for (int a = a0; a < a0 + br.size[k]; ++a) sum += x[(int64_t)a * Z];
            const float mean = sum / (float)br.size[k];
            const float base = backward ? -mean : v[b * Z + z] - mean;
            for (int a = a0; a < a0 + br.size[k]; ++a) o[(int64_t)a * Z] = x[(int64_t)a * Z] + base;
            dv += sum;
            a0 += br.size[k];
        }
        if (backward) d_v[b * Z + z] = dv;
    }
}

/* q[r] = sum_z support[z] exp(logp[r, z]); a warp per row. */
__global__ void c51_q_kernel(const float* __restrict__ logp, float* q, int64_t rows, int Z, float v_min, float dz) {
    const int wpb = blockDim.x / 32, lane = threadIdx.x & 31;
    for (int64_t r = (int64_t)blockIdx.x * wpb + threadIdx.x / 32; r < rows; r += (int64_t)gridDim.x * wpb) {
        float acc = 0.0f;
        for (int z = lane; z < Z; z += 32) acc += (v_min + (float)z * dz) * expf(logp[r * Z + z]);
        acc = vp_warp_sum(acc);
        if (lane == 0) q[r] = acc;
    }
}

/* Row-wise kernels below run blocks of ROW_X x ROW_Y threads: threadIdx.y picks a row
 * (grid-stride over rows), threadIdx.x strides its columns, so no thread divides per element. */
#define ROW_X 64
#define ROW_Y 4

/* The grid of a row-wise kernel over `rows` rows. */
static unsigned row_blocks(int64_t rows) {
    int64_t g = (rows + ROW_Y - 1) / ROW_Y;
    return (unsigned)(g > 65535 * 8 ? 65535 * 8 : g);
}

/* out[r, i] = cos(tau[r] * float(pi * i)); a row per threadIdx.y. */
__global__ void iqn_cos_kernel(const float* __restrict__ tau, float* out, int64_t rows, int NC) {
    for (int64_t r = (int64_t)blockIdx.x * ROW_Y + threadIdx.y; r < rows; r += (int64_t)gridDim.x * ROW_Y) {
        const float t = tau[r];
        for (int k = threadIdx.x; k < NC; k += ROW_X) out[r * NC + k] = cosf(t * (float)(3.14159265358979323846 * k));
    }
}

/* out[b*T + j, f] = h[b, f] * phi[b*T + j, f]; a row per threadIdx.y (out may alias phi), four
 * columns per thread and turn when `vec` (H a multiple of 4 and the pointers 16-byte aligned). */
__global__ void iqn_mix_kernel(const float* __restrict__ h, const float* phi, float* out, int64_t B, int T, int H,
                               int vec) {
    for (int64_t r = (int64_t)blockIdx.x * ROW_Y + threadIdx.y; r < B * T; r += (int64_t)gridDim.x * ROW_Y) {
        const float* hb = h + (r / T) * H;
        if (vec) {
            const float4* h4 = (const float4*)hb;
            const float4* p4 = (const float4*)(phi + r * H);
            float4* o4 = (float4*)(out + r * H);
            for (int f = threadIdx.x; f < H / 4; f += ROW_X) {
                const float4 x = p4[f], y = h4[f];
                o4[f] = make_float4(y.x * x.x, y.y * x.y, y.z * x.z, y.w * x.w);
            }
        } else {
            for (int f = threadIdx.x; f < H; f += ROW_X) out[r * H + f] = hb[f] * phi[r * H + f];
        }
    }
}

/* d_h[b, f] += sum_j d_out[b,j,f] phi[b,j,f]; d_phi = d_out * h * (phi > 0); p_b[b, f] = sum_j
 * d_phi[b,j,f]; one thread per (sample, feature). */
__global__ void iqn_mix_backward_kernel(const float* __restrict__ h, const float* __restrict__ phi,
                                        const float* d_out, float* d_h, float* d_phi, float* p_b, int64_t B, int T,
                                        int H) {
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < B * H; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / H, f = i % H;
        const float hv = h[i];
        float acc = 0.0f, pb = 0.0f;
        for (int j = 0; j < T; ++j) {
            const int64_t r = (b * T + j) * H + f;
            const float g = d_out[r], p = phi[r];
            acc += g * p;
            const float dp = p > 0.0f ? g * hv : 0.0f;
            d_phi[r] = dp;
            pb += dp;
        }
        d_h[i] += acc;
        p_b[i] = pb;
    }
}

/* d_iq1[r, m] = (iq1[r, m] > 0) sum_a dzq[r, a] w2[a, m]; p_b[b, m] = sum_j d_iq1[b*T+j, m];
 * p_w2[g, a, m] = sum over group g's rows of dzq[r, a] iq1[r, m]. A block per group of
 * VP_IQN_W2_GROUP samples (grid-stride), its samples in order; a sample's dzq rows [T, A]
 * staged in shared memory. FAST (A <= 16, M <= blockDim): a thread per unit m, w2's column m
 * and the group's p_w2 sums in registers, the dzq rows padded to 16 with zeros and read as
 * float4 broadcasts (the padding adds 0 * 0); otherwise threads stride over m, w2 [A, M] sits
 * in shared memory too and p_w2 accumulates in place, row by row in the same order. Dynamic
 * shared memory: FAST T * 16 floats, else A * M + T * A. */
template <int FAST>
__global__ void iqn_l2_backward_kernel(const float* __restrict__ iq1, const float* __restrict__ dzq,
                                       const float* __restrict__ w2, float* __restrict__ d_iq1,
                                       float* __restrict__ p_b, float* __restrict__ p_w2, int64_t B, int T, int M,
                                       int A) {
    extern __shared__ __align__(16) float sh[];
    float* sw = sh;                       /* generic: [A, M] */
    float* sdz = FAST ? sh : sh + A * M;  /* [T, LD] */
    const int LD = FAST ? 16 : A;
    const int64_t AM = (int64_t)A * M, groups = (B + VP_IQN_W2_GROUP - 1) / VP_IQN_W2_GROUP;
    if (!FAST)
        for (int k = threadIdx.x; k < A * M; k += blockDim.x) sw[k] = w2[k];
    const int mf = threadIdx.x; /* FAST: this thread's unit */
    float wr[16];
    if (FAST)
        for (int a = 0; a < 16; ++a) wr[a] = a < A && mf < M ? w2[a * M + mf] : 0.0f;
    for (int64_t grp = blockIdx.x; grp < groups; grp += gridDim.x) {
        float* pw = p_w2 + grp * AM;
        float acc[16];
        for (int a = 0; a < 16; ++a) acc[a] = 0.0f;
        if (!FAST)
            for (int64_t k = threadIdx.x; k < AM; k += blockDim.x) pw[k] = 0.0f;
        const int64_t b_end = (grp + 1) * VP_IQN_W2_GROUP < B ? (grp + 1) * VP_IQN_W2_GROUP : B;
        for (int64_t b = grp * VP_IQN_W2_GROUP; b < b_end; ++b) {
            __syncthreads(); // the previous sample's dzq rows (and p_w2 zeros) are done with
            for (int k = threadIdx.x; k < T * LD; k += blockDim.x) {
                const int j = k / LD, a = k % LD;
                sdz[k] = a < A ? dzq[(b * T + j) * A + a] : 0.0f;
            }
            __syncthreads();
            if (FAST) {
                if (mf >= M) continue;
                float pb = 0.0f;
                for (int j = 0; j < T; ++j) {
                    const int64_t r = b * T + j;
                    const float x = iq1[r * M + mf];
                    const float4* d4 = (const float4*)(sdz + j * 16);
                    float g = 0.0f;
#pragma unroll
                    for (int q = 0; q < 4; ++q) {
                        const float4 v = d4[q];
                        g += v.x * wr[4 * q];
                        g += v.y * wr[4 * q + 1];
                        g += v.z * wr[4 * q + 2];
                        g += v.w * wr[4 * q + 3];
                        acc[4 * q] += v.x * x;
                        acc[4 * q + 1] += v.y * x;
                        acc[4 * q + 2] += v.z * x;
                        acc[4 * q + 3] += v.w * x;
                    }
                    g = x > 0.0f ? g : 0.0f;
                    d_iq1[r * M + mf] = g;
                    pb += g;
                }
                p_b[b * M + mf] = pb;
            } else {
                for (int m = threadIdx.x; m < M; m += blockDim.x) {
                    float pb = 0.0f;
                    for (int j = 0; j < T; ++j) {
                        const int64_t r = b * T + j;
                        const float x = iq1[r * M + m];
                        const float* dz = sdz + j * A;
                        float g = 0.0f;
                        for (int a = 0; a < A; ++a) {
                            g += dz[a] * sw[a * M + m];
                            pw[(int64_t)a * M + m] += dz[a] * x;
                        }
                        g = x > 0.0f ? g : 0.0f;
                        d_iq1[r * M + m] = g;
                        pb += g;
                    }
                    p_b[b * M + m] = pb;
                }
            }
        }
        if (FAST && mf < M)
            for (int a = 0; a < A; ++a) pw[(int64_t)a * M + mf] = acc[a];
    }
}

/* ---- launchers -------------------------------------------------------------------------------- */

#define STREAM(be) vp_cuda_stream_of(be)

extern "C" vp_status vp_cuda_window_index(vp_backend* be, int64_t B, int K, const int32_t* bar, int32_t* idx) {
    VP_REQUIRE(bar && idx && B >= 1 && K >= 1, VP_ERR_INVALID_ARG, "cuda window_index: bad arguments");
    window_index_kernel<<<vp_cuda_grid(B * K, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(bar, idx, B, K);
    VP_CUDA_CHECK_LAUNCH("window_index_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_take_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst) {
    VP_REQUIRE(src && dst && B >= 1 && K >= 1 && n >= 1, VP_ERR_INVALID_ARG, "cuda take_last: bad arguments");
    last_rows_kernel<<<vp_cuda_grid(B * n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(src, dst, B, K, n, 0);
    VP_CUDA_CHECK_LAUNCH("last_rows_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_add_last(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst) {
    VP_REQUIRE(src && dst && B >= 1 && K >= 1 && n >= 1, VP_ERR_INVALID_ARG, "cuda add_last: bad arguments");
    last_rows_kernel<<<vp_cuda_grid(B * n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(src, dst, B, K, n, 1);
    VP_CUDA_CHECK_LAUNCH("last_rows_kernel");
    return VP_OK;
}

/* Total actions of a branch map. */
static int actions_of(const vp_branch_map* br) {
    int a = 0;
    for (int i = 0; i < br->n; ++i) a += br->size[i];
    return a;
}

extern "C" vp_status vp_cuda_dueling_forward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                             const float* v, const float* adv, float* logit) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && v && adv && logit, VP_ERR_INVALID_ARG,
               "cuda dueling_forward: bad arguments");
    dueling_kernel<<<vp_cuda_grid(B * Z, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(v, adv, logit, NULL, B, Z,
                                                                                         *br, actions_of(br), 0);
    VP_CUDA_CHECK_LAUNCH("dueling_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_dueling_backward(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                              const float* d_logit, float* d_v, float* d_adv) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && d_logit && d_v && d_adv, VP_ERR_INVALID_ARG,
               "cuda dueling_backward: bad arguments");
    dueling_kernel<<<vp_cuda_grid(B * Z, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(
        NULL, d_logit, d_adv, d_v, B, Z, *br, actions_of(br), 1);
    VP_CUDA_CHECK_LAUNCH("dueling_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_c51_q(vp_backend* be, int64_t rows, int Z, float v_min, float v_max, const float* logp,
                                   float* q) {
    VP_REQUIRE(logp && q && rows >= 1 && Z >= 2, VP_ERR_INVALID_ARG, "cuda c51_q: bad arguments");
    const float dz = (v_max - v_min) / (float)(Z - 1);
    c51_q_kernel<<<vp_cuda_row_grid(rows, VP_CUDA_THREADS / 32), VP_CUDA_THREADS, 0, STREAM(be)>>>(logp, q, rows, Z,
                                                                                              v_min, dz);
    VP_CUDA_CHECK_LAUNCH("c51_q_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_iqn_cos(vp_backend* be, int64_t rows, int NC, const float* tau, float* out) {
    VP_REQUIRE(tau && out && rows >= 1 && NC >= 1, VP_ERR_INVALID_ARG, "cuda iqn_cos: bad arguments");
    iqn_cos_kernel<<<row_blocks(rows), dim3(ROW_X, ROW_Y), 0, STREAM(be)>>>(tau, out, rows, NC);
    VP_CUDA_CHECK_LAUNCH("iqn_cos_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_iqn_mix_forward(vp_backend* be, int64_t B, int T, int H, const float* h, const float* phi,
                                             float* out) {
    VP_REQUIRE(h && phi && out && B >= 1 && T >= 1 && H >= 1, VP_ERR_INVALID_ARG, "cuda iqn_mix_forward: bad arguments");
    const int vec = H % 4 == 0 && ((uintptr_t)h | (uintptr_t)phi | (uintptr_t)out) % 16 == 0;
    iqn_mix_kernel<<<row_blocks(B * T), dim3(ROW_X, ROW_Y), 0, STREAM(be)>>>(h, phi, out, B, T, H, vec);
    VP_CUDA_CHECK_LAUNCH("iqn_mix_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_iqn_mix_backward(vp_backend* be, int64_t B, int T, int H, const float* h,
                                              const float* phi, const float* d_out, float* d_h, float* d_phi,
                                              float* p_b) {
    VP_REQUIRE(h && phi && d_out && d_h && d_phi && p_b && B >= 1 && T >= 1 && H >= 1, VP_ERR_INVALID_ARG,
               "cuda iqn_mix_backward: bad arguments");
    iqn_mix_backward_kernel<<<vp_cuda_grid(B * H, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(
        h, phi, d_out, d_h, d_phi, p_b, B, T, H);
    VP_CUDA_CHECK_LAUNCH("iqn_mix_backward_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_iqn_l2_backward(vp_backend* be, int64_t B, int T, int M, int A, const float* iq1,
                                             const float* dzq, const float* w2, float* d_iq1, float* p_b,
                                             float* p_w2) {
    VP_REQUIRE(iq1 && dzq && w2 && d_iq1 && p_b && p_w2 && B >= 1 && T >= 1 && M >= 1 && A >= 1,
               VP_ERR_INVALID_ARG, "cuda iqn_l2_backward: bad arguments");
    const int fast = A <= 16 && M <= 1024;
    const size_t smem = sizeof(float) * (fast ? (size_t)T * 16 : (size_t)A * (size_t)M + (size_t)T * (size_t)A);
    VP_REQUIRE(smem <= 48 * 1024, VP_ERR_SHAPE,
               "cuda iqn_l2_backward: %d x %d output weights and %d x %d quantile gradients exceed 48 KiB", A, M, T, A);
    const int threads = fast ? (M + 31) / 32 * 32 : (M >= 256 ? 256 : (M + 31) / 32 * 32);
    const int64_t groups = (B + VP_IQN_W2_GROUP - 1) / VP_IQN_W2_GROUP;
    const unsigned blocks = (unsigned)(groups < 1048576 ? groups : 1048576);
    if (fast)
        iqn_l2_backward_kernel<1><<<blocks, threads, smem, STREAM(be)>>>(iq1, dzq, w2, d_iq1, p_b, p_w2, B, T, M, A);
    else
        iqn_l2_backward_kernel<0><<<blocks, threads, smem, STREAM(be)>>>(iq1, dzq, w2, d_iq1, p_b, p_w2, B, T, M, A);
    VP_CUDA_CHECK_LAUNCH("iqn_l2_backward_kernel");
    return VP_OK;
}

/* ---- the table ------------------------------------------------------------------------------------ */

extern "C" const vp_mops vp_mops_cuda = VP_MOPS_TABLE(vp_cuda);
