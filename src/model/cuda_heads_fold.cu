/* CUDA forms of the folded C51 output layers (mops.h: c51_fold, c51_fold_q; the layout in
 * heads_fold_math.h).
 *
 * c51_fold_q is one pass from the hidden rows to Q: no advantage rows, no log-probabilities.
 * A block of 8 warps takes one branch (blockIdx.y) and runs over blocks of 128 samples, a warp
 * per 16 samples. It first copies the value tile and its branch's action tiles (28 KiB each,
 * already in the order the products read them) into shared memory (cp.async), then per warp:
 * the value logits from v1 (m16n8k8 TF32 products, 16 k-steps x 7 atom tiles, FP32
 * accumulators started at the biases), ah's operand fragments into registers once, and per
 * action of the branch the folded advantage logits, added to the value's, then the softmax's
 * max and sums over the 51 atoms of a row: each lane holds 14 atoms of two rows, the four lanes
 * of a row meet in two butterflies. q = sum z e / sum e. */
#include "backend/kit.h"
#include "model/cuda_mops.h"
#include "model/heads_fold_math.h"

#define FQ_HH 128               /* the hidden width served */
#define FQ_KS (FQ_HH / 8)       /* k-steps of 8 inputs */
#define FQ_NT 7                 /* atom tiles of 8: ZN 56 */
#define FQ_WARPS 8              /* warps a block, 16 samples each */
#define FQ_ROWS (FQ_WARPS * 16) /* samples a block takes at a time */
#define FQ_TILE (FQ_KS * FQ_NT * 64)
#define FQ_MAX_TILES 7 /* the value tile and a branch of up to 6 actions */
#define FQ_SMEM_MAX ((size_t)FQ_MAX_TILES * FQ_TILE * sizeof(float))

/* ---- kernels ------------------------------------------------------------------------------ */

/* One thread per float of the folded buffer (tile weights, then the bias rows). */
__global__ void c51_fold_kernel(int HH, int Z, vp_branch_map br, int A, const float* __restrict__ v2w,
                                const float* __restrict__ v2b, const float* __restrict__ a2w,
                                const float* __restrict__ a2b, float* __restrict__ out) {
    const int ZN = (int)vp_c51f_zn(Z);
    const int64_t tile = vp_c51f_tile(Z, HH), nw = (int64_t)(1 + A) * tile, n_all = nw + (int64_t)(1 + A) * ZN;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_all; i += (int64_t)gridDim.x * blockDim.x) {
        int t, n, k = -1;
        if (i < nw) {
            // invert vp_c51f_at: slot, lane, atom tile, k-step
            t = (int)(i / tile);
            const int64_t r = i - (int64_t)t * tile;
            const int j = (int)(r & 1), lane = (int)((r >> 1) & 31);
            const int64_t rest = r >> 6;
            const int nt = (int)(rest % (ZN / 8)), kk = (int)(rest / (ZN / 8));
            n = nt * 8 + (lane >> 2);
            k = kk * 8 + (lane & 3) + 4 * j;
        } else {
            t = (int)((i - nw) / ZN);
            n = (int)(i - nw - (int64_t)t * ZN);
        }
        float x = 0.0f;
        if (n < Z) {
            if (t == 0) {
                x = k >= 0 ? vp_tf32(v2w[(int64_t)n * HH + k]) : v2b[n];
            } else {
                // the action's branch: its first action and size
                const int a = t - 1;
                int a0 = 0, na = 0;
                for (int b = 0; b < br.n; ++b) {
                    if (a >= a0 && a < a0 + br.size[b]) {
                        na = br.size[b];
                        break;
                    }
                    a0 += br.size[b];
                }
                float s = 0.0f;
                if (k >= 0) {
                    for (int q = 0; q < na; ++q) s += a2w[((int64_t)(a0 + q) * Z + n) * HH + k];
                    x = vp_tf32(a2w[((int64_t)a * Z + n) * HH + k] - s / (float)na);
                } else {
                    for (int q = 0; q < na; ++q) s += a2b[(int64_t)(a0 + q) * Z + n];
                    x = a2b[(int64_t)a * Z + n] - s / (float)na;
                }
            }
        }
        out[i] = x;
    }
}

__device__ __forceinline__ uint32_t tf32_of(float x) { return __float_as_uint(vp_tf32(x)); }

/* c += a b on TF32 tensor cores: a the 16 x 8 fragment (rows g, g + 8; inputs t, t + 4 of
 * lane 4 g + t), b the 8 x 8 one (inputs t, t + 4 of atom g), c rows g, g + 8 at atoms 2 t, 2 t + 1. */
__device__ __forceinline__ void mma_tf32(float (&c)[4], const uint32_t (&a)[4], float b0, float b1) {
    asm("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, "
        "{%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(__float_as_uint(b0)), "r"(__float_as_uint(b1)));
}

__device__ __forceinline__ void cp_async16(float* smem, const float* gmem) {
    const unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

/* The operand fragments of rows ra, rb (a warp's g and g + 8) of x, every k-step. */
__device__ __forceinline__ void load_frags(uint32_t (&f)[FQ_KS][4], const float* __restrict__ x, int64_t ld,
                                           int64_t ra, int64_t rb, int tg) {
    const float *pa = x + ra * ld + tg, *pb = x + rb * ld + tg;
#pragma unroll
    for (int kk = 0; kk < FQ_KS; ++kk) {
        f[kk][0] = tf32_of(pa[kk * 8]);
        f[kk][1] = tf32_of(pb[kk * 8]);
        f[kk][2] = tf32_of(pa[kk * 8 + 4]);
        f[kk][3] = tf32_of(pb[kk * 8 + 4]);
    }
}

/* acc = bias + f w over a tile: w the tile in shared memory, bias its row (global). */
__device__ __forceinline__ void tile_product(float (&acc)[FQ_NT][4], const uint32_t (&f)[FQ_KS][4],
                                             const float* w, const float* __restrict__ bias, int lane) {
    const int tg = lane & 3;
#pragma unroll
    for (int nt = 0; nt < FQ_NT; ++nt) {
        const float2 b = *(const float2*)(bias + nt * 8 + 2 * tg);
        acc[nt][0] = b.x, acc[nt][1] = b.y, acc[nt][2] = b.x, acc[nt][3] = b.y;
    }
    const float2* w2 = (const float2*)w + lane;
#pragma unroll
    for (int kk = 0; kk < FQ_KS; ++kk)
#pragma unroll
        for (int nt = 0; nt < FQ_NT; ++nt) {
            const float2 b = w2[(kk * FQ_NT + nt) * 32];
            mma_tf32(acc[nt], f[kk], b.x, b.y);
        }
}

/* Max (is_max) or sum over the four lanes of a row (lanes 4 g .. 4 g + 3). */
__device__ __forceinline__ float quad_max(float v) {
    v = vp_nan_max(v, __shfl_xor_sync(0xffffffffu, v, 1));
    return vp_nan_max(v, __shfl_xor_sync(0xffffffffu, v, 2));
}
__device__ __forceinline__ float quad_sum(float v) {
    v += __shfl_xor_sync(0xffffffffu, v, 1);
    return v + __shfl_xor_sync(0xffffffffu, v, 2);
}

__global__ void __launch_bounds__(FQ_WARPS * 32, 1)
    c51_fold_q_kernel(int64_t B, int Z, int A, vp_branch_map br, const float* __restrict__ v1,
                      const float* __restrict__ ah, int64_t ld, const float* __restrict__ fold, float v_min, float dz,
                      float* __restrict__ q) {
    extern __shared__ __align__(16) float fq_w[];
    const int kb = blockIdx.y;
    int a0 = 0, na = 0;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
        if (j < kb) a0 += br.size[j];
        if (j == kb) na = br.size[j];
    }
    // the value tile (group 0), then the branch's action tiles (group 1)
    for (int i = threadIdx.x; i < FQ_TILE / 4; i += blockDim.x) cp_async16(fq_w + 4 * i, fold + 4 * i);
    cp_async_commit();
    const float* src = fold + (int64_t)(1 + a0) * FQ_TILE;
    for (int i = threadIdx.x; i < na * (FQ_TILE / 4); i += blockDim.x)
        cp_async16(fq_w + FQ_TILE + 4 * i, src + 4 * i);
    cp_async_commit();
    const float* bias = fold + (int64_t)(1 + A) * FQ_TILE; // [1 + A][56]
    const int lane = threadIdx.x & 31, g = lane >> 2, tg = lane & 3;
    const int64_t step = (int64_t)gridDim.x * FQ_ROWS;
    int64_t r0 = (int64_t)blockIdx.x * FQ_ROWS + (threadIdx.x >> 5) * 16;
    float vacc[FQ_NT][4];
    uint32_t f[FQ_KS][4];
    // the first rows' value logits while the action tiles arrive
    cp_async_wait<1>();
    __syncthreads();
    int have = 0;
    if (r0 < B) {
        const int64_t ra = r0 + g < B ? r0 + g : B - 1, rb = r0 + g + 8 < B ? r0 + g + 8 : B - 1;
        load_frags(f, v1, ld, ra, rb, tg);
        tile_product(vacc, f, fq_w, bias, lane);
        have = 1;
    }
    cp_async_wait<0>();
    __syncthreads();
    for (; r0 < B; r0 += step) {
        const int64_t ra = r0 + g < B ? r0 + g : B - 1, rb = r0 + g + 8 < B ? r0 + g + 8 : B - 1;
        if (!have) {
            load_frags(f, v1, ld, ra, rb, tg);
            tile_product(vacc, f, fq_w, bias, lane);
        }
        have = 0;
        load_frags(f, ah, ld, ra, rb, tg);
        for (int j = 0; j < na; ++j) {
            const int a = a0 + j;
            float l[FQ_NT][4];
            tile_product(l, f, fq_w + (1 + j) * FQ_TILE, bias + (int64_t)(1 + a) * (FQ_NT * 8), lane);
            // the logits of rows g (l[.][0..1]) and g + 8 (l[.][2..3]) at atoms nt 8 + 2 tg + {0, 1}
            float m0 = -INFINITY, m1 = -INFINITY;
#pragma unroll
            for (int nt = 0; nt < FQ_NT; ++nt)
#pragma unroll
                for (int c = 0; c < 2; ++c) {
                    l[nt][c] += vacc[nt][c];
                    l[nt][2 + c] += vacc[nt][2 + c];
                    if (nt * 8 + 2 * tg + c < Z) m0 = vp_nan_max(m0, l[nt][c]), m1 = vp_nan_max(m1, l[nt][2 + c]);
                }
            m0 = quad_max(m0), m1 = quad_max(m1);
            float s0 = 0.0f, t0 = 0.0f, s1 = 0.0f, t1 = 0.0f;
#pragma unroll
            for (int nt = 0; nt < FQ_NT; ++nt)
#pragma unroll
                for (int c = 0; c < 2; ++c) {
                    const int z = nt * 8 + 2 * tg + c;
                    if (z < Z) {
                        const float sz = v_min + (float)z * dz;
                        const float e0 = expf(l[nt][c] - m0), e1 = expf(l[nt][2 + c] - m1);
                        s0 += e0, t0 += e0 * sz;
                        s1 += e1, t1 += e1 * sz;
                    }
                }
            s0 = quad_sum(s0), t0 = quad_sum(t0), s1 = quad_sum(s1), t1 = quad_sum(t1);
            if (tg == 0) {
                if (r0 + g < B) q[(r0 + g) * A + a] = t0 / s0;
                if (r0 + g + 8 < B) q[(r0 + g + 8) * A + a] = t1 / s1;
            }
        }
    }
}

/* ---- launchers ------------------------------------------------------------------------------ */

extern "C" vp_status vp_cuda_c51_fold(vp_backend* be, int HH, int Z, const vp_branch_map* br, const float* v2w,
                                      const float* v2b, const float* a2w, const float* a2b, float* out) {
    const int A = vp_branch_map_actions(br);
    VP_REQUIRE(A >= 1 && HH >= 8 && HH % 8 == 0 && Z >= 1 && v2w && v2b && a2w && a2b && out, VP_ERR_INVALID_ARG,
               "cuda c51_fold: bad arguments (HH %d: a multiple of 8; Z %d)", HH, Z);
    const int64_t n = vp_c51f_floats(Z, HH, A);
    c51_fold_kernel<<<vp_cuda_grid(n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        HH, Z, *br, A, v2w, v2b, a2w, a2b, out);
    VP_CUDA_CHECK_LAUNCH("c51_fold_kernel");
    return VP_OK;
}

extern "C" vp_status vp_cuda_c51_fold_q(vp_backend* be, int64_t B, int HH, int Z, const vp_branch_map* br,
                                        float v_min, float v_max, const float* v1, const float* ah, int64_t ld,
                                        const float* fold, float* q) {
    const int A = vp_branch_map_actions(br);
    VP_REQUIRE(A >= 1 && B >= 1 && ld >= HH && v1 && ah && fold && q, VP_ERR_INVALID_ARG,
               "cuda c51_fold_q: bad arguments (B %lld, ld %lld)", (long long)B, (long long)ld);
    VP_REQUIRE(vp_c51_fold_q_fits(HH, Z, br), VP_ERR_UNSUPPORTED,
               "cuda c51_fold_q: built for HH 128, 49 <= Z <= 56 and branches of at most 6 actions (HH %d, Z %d)",
               HH, Z);
    VP_REQUIRE(((uintptr_t)fold % 16) == 0, VP_ERR_INVALID_ARG,
               "cuda c51_fold_q: the folded layers must be 16-byte aligned");
    // the shared-memory attribute and the SM count are a device's: set once per device
    static int sms_of[64];
    int dev = 0;
    VP_CUDA_CHECK(cudaGetDevice(&dev));
    VP_REQUIRE(dev >= 0 && dev < 64, VP_ERR_UNSUPPORTED, "cuda c51_fold_q: device %d (at most 64 devices)", dev);
    if (sms_of[dev] == 0) {
        int n = 0;
        VP_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
        VP_CUDA_CHECK(cudaFuncSetAttribute(c51_fold_q_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)FQ_SMEM_MAX));
        sms_of[dev] = n > 0 ? n : 1;
    }
    int na_max = 0;
    for (int i = 0; i < br->n; ++i) na_max = br->size[i] > na_max ? br->size[i] : na_max;
    // a block per (128 samples, branch), at most a multiprocessor's worth of blocks per branch
    // (each block copies its tiles once, then runs over its sample blocks)
    const int64_t row_blocks = (B + FQ_ROWS - 1) / FQ_ROWS;
    int64_t per = sms_of[dev] / br->n;
    if (per < 1) per = 1;
    const dim3 grid((unsigned)(row_blocks < per ? row_blocks : per), (unsigned)br->n);
    const size_t smem = (size_t)(1 + na_max) * FQ_TILE * sizeof(float);
    const float dz = (v_max - v_min) / (float)(Z - 1);
    c51_fold_q_kernel<<<grid, FQ_WARPS * 32, smem, vp_cuda_stream_of(be)>>>(B, Z, A, *br, v1, ah, ld, fold, v_min,
                                                                           dz, q);
    VP_CUDA_CHECK_LAUNCH("c51_fold_q_kernel");
    return VP_OK;
}
