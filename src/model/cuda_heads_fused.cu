/* CUDA kernels of the model's fused head passes (mops.h: c51_head, port_add): the C51
 * combine (dueling, log-softmax over atoms, expected value) in one pass per sample, and the
 * portfolio projection added to the encoding in one element-wise pass. */
#include "backend/kit.h"
#include "model/cuda_mops.h"
#include "vulpes/ops.h"

#define STREAM(be) vp_cuda_stream_of(be)

/* The largest atom count of the one-pass combine: two atoms per lane of a warp. */
#define C51_HEAD_MAX_Z 64

/* ---- kernels ------------------------------------------------------------------------------ */

/* The butterfly of vp_warp_sum / vp_warp_max over 32 lanes, replayed in one thread: t[i] is
 * lane i's value; after it t[0] holds what every lane of the warp ends with (each stage adds
 * lane i + o's value to lane i's, the pairs and operand order of lane 0's chain; the other
 * lanes' chains add the same pairs commuted, the same sums). */
__device__ __forceinline__ float lanes_sum(float* t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int i = 0; i < o; ++i) t[i] = t[i] + t[i + o];
    return t[0];
}

__device__ __forceinline__ float lanes_max(float* t) {
#pragma unroll
    for (int o = 16; o > 0; o >>= 1)
#pragma unroll
        for (int i = 0; i < o; ++i) t[i] = vp_nan_max(t[i], t[i + o]);
    return t[0];
}

/* Blocks of R samples: their advantage rows staged in shared memory (coalesced loads), then
 * the branch bases v - mean per (sample, branch, atom) (dueling_kernel's sum in action order
 * and its division), then a thread per (sample, action): its logits x + base, their
 * log-softmax over atoms and the expected value, each reduction replaying the warp kernels'
 * lane partials (lane t: atoms t, t + 32, in that order) and butterflies (softmax_kernel<32, 1>,
 * c51_q_kernel), so the bits are theirs (but for the sign of a zero maximum, which the warp's
 * lanes may each hold differently). The log-probabilities go back over the staged rows and
 * out coalesced. */
__global__ void c51_head_kernel(const float* __restrict__ v, int64_t ldv, const float* __restrict__ adv,
                                int64_t ldadv, float* logp, float* q, int64_t B, int Z, vp_branch_map br, int A,
                                float v_min, float dz, int R) {
    extern __shared__ float c51_sm[];
    const int AZ = A * Z;
    float* sx = c51_sm;              /* [R, A Z] advantages, then log-probabilities */
    float* sb = c51_sm + R * AZ;     /* [R, branches, Z] bases */
    for (int64_t r0 = (int64_t)blockIdx.x * R; r0 < B; r0 += (int64_t)gridDim.x * R) {
        const int nr = B - r0 < R ? (int)(B - r0) : R;
        for (int i = threadIdx.x; i < nr * AZ; i += blockDim.x) {
            const int r = i / AZ;
            sx[i] = adv[(r0 + r) * ldadv + (i - r * AZ)];
        }
        __syncthreads();
        for (int i = threadIdx.x; i < nr * Z; i += blockDim.x) {
            const int r = i / Z, z = i - r * Z;
            const float vz = v[(r0 + r) * ldv + z];
            const float* x = sx + r * AZ;
            int a0 = 0;
            for (int k = 0; k < br.n; ++k) {
                float sum = 0.0f;
                for (int a = a0; a < a0 + br.size[k]; ++a) sum += x[a * Z + z];
                const float mean = sum / (float)br.size[k];
                sb[(r * br.n + k) * Z + z] = vz - mean;
                a0 += br.size[k];
            }
        }
        __syncthreads();
        for (int i = threadIdx.x; i < nr * A; i += blockDim.x) {
            const int r = i / A, a = i - r * A;
            int k = 0, a0 = 0;
            while (a >= a0 + br.size[k]) a0 += br.size[k++];
            float* x = sx + r * AZ + a * Z;
            const float* base = sb + (r * br.n + k) * Z;
            float l[C51_HEAD_MAX_Z], t[32];
#pragma unroll
            for (int z = 0; z < C51_HEAD_MAX_Z; ++z) l[z] = z < Z ? x[z] + base[z] : 0.0f;
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                float m = -INFINITY;
                if (j < Z) m = vp_nan_max(m, l[j]);
                if (j + 32 < Z) m = vp_nan_max(m, l[j + 32]);
                t[j] = m;
            }
            const float mx = lanes_max(t);
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                float sm = 0.0f;
                if (j < Z) sm += expf(l[j] - mx);
                if (j + 32 < Z) sm += expf(l[j + 32] - mx);
                t[j] = sm;
            }
            const float ls = logf(lanes_sum(t));
#pragma unroll
            for (int j = 0; j < 32; ++j) {
                float acc = 0.0f;
                if (j < Z) {
                    const float p0 = l[j] - mx - ls;
                    x[j] = p0;
                    acc += (v_min + (float)j * dz) * expf(p0);
                }
                if (j + 32 < Z) {
                    const float p1 = l[j + 32] - mx - ls;
                    x[j + 32] = p1;
                    acc += (v_min + (float)(j + 32) * dz) * expf(p1);
                }
                t[j] = acc;
            }
            q[(r0 + r) * A + a] = lanes_sum(t);
        }
        __syncthreads();
        if (logp)
            for (int i = threadIdx.x; i < nr * AZ; i += blockDim.x) logp[r0 * AZ + i] = sx[i];
        __syncthreads();
    }
}

/* The output layers into their padded copies (mops.h c51_pad): one thread per copied float. */
__global__ void c51_pad_kernel(int Z, int AZ, int HH, const float* __restrict__ v2w, const float* __restrict__ v2b,
                               const float* __restrict__ a2w, const float* __restrict__ a2b, float* out) {
    const int64_t Zp = vp_pad4(Z), AZp = vp_pad4(AZ);
    const int64_t n1 = (int64_t)Z * HH, n2 = n1 + Z, n3 = n2 + (int64_t)AZ * HH, n4 = n3 + AZ;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += (int64_t)gridDim.x * blockDim.x) {
        if (i < n1) out[i] = v2w[i];
        else if (i < n2) out[Zp * HH + (i - n1)] = v2b[i - n1];
        else if (i < n3) out[Zp * HH + Zp + (i - n2)] = a2w[i - n2];
        else out[Zp * HH + Zp + AZp * HH + (i - n3)] = a2b[i - n3];
    }
}

/* h[b, j] = e[b, j] + (bias[j] + sum_k p[b, k] W[j, k]): a thread per column j (its weight row
 * and bias in registers, P <= PORT_MAX_P), blocks of rows (grid-stride); each row's p is read
 * by every thread of the block at the same address (a broadcast). */
#define PORT_MAX_P 16
__global__ void port_add_kernel(const float* e, const float* __restrict__ p, const float* __restrict__ W,
                                const float* __restrict__ bias, float* h, int64_t B, int H, int P, int rows) {
    const int j = blockIdx.y * blockDim.x + threadIdx.x;
    if (j >= H) return;
    float w[PORT_MAX_P];
#pragma unroll
    for (int k = 0; k < PORT_MAX_P; ++k) w[k] = k < P ? W[(int64_t)j * P + k] : 0.0f;
    const float bj = bias[j];
    const int vec = P % 4 == 0 && (uintptr_t)p % 16 == 0;
    for (int64_t r0 = (int64_t)blockIdx.x * rows; r0 < B; r0 += (int64_t)gridDim.x * rows) {
        const int64_t r1 = r0 + rows < B ? r0 + rows : B;
        for (int64_t b = r0; b < r1; ++b) {
            const float* pb = p + b * P;
            float pv[PORT_MAX_P];
            if (vec) {
                // the row as float4 loads (P a multiple of 4, rows aligned)
#pragma unroll
                for (int k = 0; k < PORT_MAX_P; k += 4)
                    if (k < P) {
                        const float4 q4 = *(const float4*)(pb + k);
                        pv[k] = q4.x, pv[k + 1] = q4.y, pv[k + 2] = q4.z, pv[k + 3] = q4.w;
                    }
            } else {
#pragma unroll
                for (int k = 0; k < PORT_MAX_P; ++k) pv[k] = k < P ? pb[k] : 0.0f;
            }
            float acc = bj;
#pragma unroll
            for (int k = 0; k < PORT_MAX_P; ++k)
                if (k < P) acc = fmaf(pv[k], w[k], acc);
            h[b * H + j] = e[b * H + j] + acc;
        }
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_cuda_c51_head(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, float v_min,
                                      float v_max, const float* v, int64_t ldv, const float* adv, int64_t ldadv,
                                      float* logp, float* q) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && v && adv && q && B >= 1 && Z >= 2 && (logp || Z <= C51_HEAD_MAX_Z),
               VP_ERR_INVALID_ARG, "cuda c51_head: bad arguments");
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    VP_REQUIRE(ldv >= Z && ldadv >= (int64_t)A * Z, VP_ERR_INVALID_ARG,
               "cuda c51_head: rows of %lld and %lld floats, under Z %d and A Z %d", (long long)ldv, (long long)ldadv, Z,
               A * Z);
    if (Z > C51_HEAD_MAX_Z) {
        VP_REQUIRE(ldv == Z && ldadv == (int64_t)A * Z, VP_ERR_INVALID_ARG,
                   "cuda c51_head: padded rows need Z <= %d (Z is %d)", C51_HEAD_MAX_Z, Z);
        // the three kernels one after another
        VP_TRY(vp_cuda_dueling_forward(be, B, Z, br, v, adv, logp));
        vp_tensor lp = vp_tensor_2d(logp, VP_F32, VP_MEM_DEVICE, B * A, Z);
        VP_TRY(vp_log_softmax(be, &lp, &lp));
        return vp_cuda_c51_q(be, B * A, Z, v_min, v_max, logp, q);
    }
    const float dz = (v_max - v_min) / (float)(Z - 1);
    // samples per block: as many as 40 KB of shared memory stage (advantages and bases), at most 16
    const size_t per = (size_t)(A * Z + br->n * Z) * sizeof(float);
    int R = (int)((40u * 1024u) / per);
    R = R < 1 ? 1 : R > 16 ? 16 : R;
    VP_REQUIRE((size_t)R * per <= 48u * 1024u, VP_ERR_UNSUPPORTED,
               "cuda c51_head: a sample's %d actions x %d atoms exceed the combine's shared memory", A, Z);
    const int threads = (R * A + 31) / 32 * 32;
    const int64_t blocks = (B + R - 1) / R;
    c51_head_kernel<<<(unsigned)(blocks < 65535 ? blocks : 65535), threads < 64 ? 64 : threads, (size_t)R * per,
                      STREAM(be)>>>(v, ldv, adv, ldadv, logp, q, B, Z, *br, A, v_min, dz, R);
    VP_CUDA_CHECK_LAUNCH("c51_head_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_c51_pad(vp_backend* be, int Z, int AZ, int HH, const float* v2w, const float* v2b,
                                     const float* a2w, const float* a2b, float* out) {
    VP_REQUIRE(Z >= 1 && AZ >= 1 && HH >= 1 && v2w && v2b && a2w && a2b && out, VP_ERR_INVALID_ARG,
               "cuda c51_pad: bad arguments");
    const int64_t n = (int64_t)(Z + AZ) * (HH + 1);
    c51_pad_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, STREAM(be)>>>(Z, AZ, HH, v2w, v2b, a2w, a2b,
                                                                                        out);
    VP_CUDA_CHECK_LAUNCH("c51_pad_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_port_add(vp_backend* be, int64_t B, int H, int P, const float* e, const float* p,
                                      const float* W, const float* bias, float* h) {
    VP_REQUIRE(e && p && W && bias && h && B >= 1 && H >= 1 && P >= 1 && P <= PORT_MAX_P, VP_ERR_INVALID_ARG,
               "cuda port_add: bad arguments (P %d: 1 .. %d)", P, PORT_MAX_P);
    // a thread per column (blocks of up to 256 columns), 16 rows per block at a time
    const int tx = H < 256 ? H : 256, rows = 16;
    const int64_t row_blocks = (B + rows - 1) / rows;
    const dim3 grid((unsigned)(row_blocks < 8192 ? row_blocks : 8192), (unsigned)((H + tx - 1) / tx));
    port_add_kernel<<<grid, tx, 0, STREAM(be)>>>(e, p, W, bias, h, B, H, P, rows);
    VP_CUDA_CHECK_LAUNCH("port_add_kernel");
    return VP_OK;
}
