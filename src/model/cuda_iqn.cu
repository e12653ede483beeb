/* The one-pass IQN embedding on CUDA (mops.h, vp_mops_iqn_embed_fn): for tiles of 32 rows,
 * the cosine features, phi = relu(cos pw^T + pb) on TF32 tensor cores (wmma m16n16k8, FP32
 * accumulation) and mix = h * phi, without the cosines or phi passing through global
 * memory unless a backward asks for them.
 *
 * Persistent blocks, two per multiprocessor (one's cosines overlap the other's products and
 * stores), each holding pw in shared memory for all its tiles (rounded to TF32 once, as the
 * products would round it), so the weights are read from global memory once per block, not
 * once per tile. Tiles of 32 rows, 8 warps: warp w computes rows [16 (w % 2), +16) x
 * columns [64 (w / 2), +64). Shared memory: pw [H][NC + 4], the cosine tile [32][NC + 4],
 * the output tile [32][H + 8] (rows padded against bank conflicts) and the tile's taus:
 * about 110 KiB. A thread's rows of h are loaded at the start of a tile, before any of its stores,
 * and the tile's taus once into shared memory, so no load waits behind the stores. */
#include <mma.h>

#include "backend/kit.h"
#include "model/cuda_mops.h"

#define EM_ROWS 32
#define EM_NC VP_IQN_EMBED_NC
#define EM_H VP_IQN_EMBED_H
#define EM_WARPS 8
#define EM_THREADS (EM_WARPS * 32)
#define EM_LDW (EM_NC + 4) /* row stride of pw in shared memory */
#define EM_LDC (EM_NC + 4) /* row stride of the cosine tile */
#define EM_LDO (EM_H + 8)  /* row stride of the output tile (8: fragment stores without bank conflicts) */
#define EM_SMEM_FLOATS (EM_H * EM_LDW + EM_ROWS * EM_LDC + EM_ROWS * EM_LDO + EM_NC + EM_ROWS)
#define EM_ROW_STEP (EM_THREADS / (EM_H / 4)) /* rows apart of one thread's outputs */
#define EM_ROWS_PER (EM_ROWS / EM_ROW_STEP)   /* output rows per thread per tile */
static_assert(EM_ROWS % EM_ROW_STEP == 0, "a thread's rows cover the tile");
#define EM_SMEM_BYTES (sizeof(float) * (size_t)EM_SMEM_FLOATS)

namespace wm = nvcuda::wmma;
typedef wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major> frag_a;
typedef wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::col_major> frag_b;
typedef wm::fragment<wm::accumulator, 16, 16, 8, float> frag_c;

__global__ void __launch_bounds__(EM_THREADS, 2)
    iqn_embed_kernel(int64_t Q, int T, const float* __restrict__ tau, const float* __restrict__ h,
                     const float* __restrict__ pw, const float* __restrict__ pb, float* __restrict__ cosf_out,
                     float* __restrict__ phi_out, float* __restrict__ mix) {
    extern __shared__ __align__(128) float sm[];
    float* sw = sm;                          /* [H][EM_LDW]: pw, TF32-rounded */
    float* sc = sw + EM_H * EM_LDW;          /* [32][EM_LDC]: cosines */
    float* so = sc + EM_ROWS * EM_LDC;       /* [32][EM_LDO]: phi pre-activations */
    float* spi = so + EM_ROWS * EM_LDO;      /* [NC]: float(pi i) */
    float* stau = spi + EM_NC;               /* [32]: the tile's taus */
    const int tid = threadIdx.x, warp = tid / 32;
    for (int k = tid; k < EM_H * EM_NC; k += EM_THREADS)
        sw[(k / EM_NC) * EM_LDW + k % EM_NC] = wm::__float_to_tf32(pw[k]);
    if (tid < EM_NC) spi[tid] = (float)(3.14159265358979323846 * tid);
    // each thread's four output columns stay the same over the tile (EM_THREADS % (H / 4) == 0),
    // and so do its rows: r_first + EM_ROW_STEP * u, u < EM_ROWS_PER
    const int c4 = tid % (EM_H / 4), r_first = tid / (EM_H / 4);
    const float4 bias = ((const float4*)pb)[c4];
    const int64_t tiles = (Q + EM_ROWS - 1) / EM_ROWS;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t r0 = tile * EM_ROWS, b0 = r0 / T;
        const int rem = (int)(r0 - b0 * T);
        // this thread's rows of h, loaded before the tile's other work so that their latency
        // overlaps the cosines and the product (rows past Q read none): one row when the tile
        // lies in one sample (T a multiple of the tile, as the default 64), else row by row
        float4 hv[EM_ROWS_PER];
        if (T % EM_ROWS == 0) {
            const float4 v = ((const float4*)(h + b0 * EM_H))[c4];
#pragma unroll
            for (int u = 0; u < EM_ROWS_PER; ++u) hv[u] = v;
        } else {
#pragma unroll
            for (int u = 0; u < EM_ROWS_PER; ++u) {
                const int i = r_first + EM_ROW_STEP * u;
                hv[u] = r0 + i < Q ? ((const float4*)(h + (b0 + (rem + i) / T) * EM_H))[c4] : make_float4(0, 0, 0, 0);
            }
        }
        __syncthreads(); // pw and spi are in place; the previous tile's outputs and taus are read
        if (tid < EM_ROWS) stau[tid] = r0 + tid < Q ? tau[r0 + tid] : 0.0f;
        __syncthreads();
        // 1. cosines (rows past Q from tau 0, never written)
        for (int k = tid; k < EM_ROWS * EM_NC; k += EM_THREADS) {
            const int i = k / EM_NC, c = k % EM_NC;
            const int64_t r = r0 + i;
            const float v = cosf(stau[i] * spi[c]);
            sc[i * EM_LDC + c] = wm::__float_to_tf32(v);
            if (cosf_out && r < Q) cosf_out[r * EM_NC + c] = v;
        }
        __syncthreads();
        // 2. the product: rows [16 (w % 2), +16) x columns [64 (w / 2), +64)
        {
            const int rb = 16 * (warp & 1), cb = 64 * (warp >> 1);
            frag_c acc[4];
            for (int j = 0; j < 4; ++j) wm::fill_fragment(acc[j], 0.0f);
            for (int k0 = 0; k0 < EM_NC; k0 += 8) {
                frag_a fa;
                wm::load_matrix_sync(fa, sc + rb * EM_LDC + k0, EM_LDC);
                for (int j = 0; j < 4; ++j) {
                    frag_b fb;
                    wm::load_matrix_sync(fb, sw + (cb + 16 * j) * EM_LDW + k0, EM_LDW);
                    wm::mma_sync(acc[j], fa, fb, acc[j]);
                }
            }
            for (int j = 0; j < 4; ++j)
                wm::store_matrix_sync(so + rb * EM_LDO + cb + 16 * j, acc[j], EM_LDO, wm::mem_row_major);
        }
        __syncthreads();
        // 3. phi = relu(. + pb), mix = h * phi: four columns per thread
#pragma unroll
        for (int u = 0; u < EM_ROWS_PER; ++u) {
            const int i = r_first + EM_ROW_STEP * u;
            const int64_t r = r0 + i;
            if (r >= Q) break;
            const float4 s = *(const float4*)(so + i * EM_LDO + 4 * c4);
            const float4 p = make_float4(fmaxf(s.x + bias.x, 0.0f), fmaxf(s.y + bias.y, 0.0f),
                                         fmaxf(s.z + bias.z, 0.0f), fmaxf(s.w + bias.w, 0.0f));
            if (phi_out) ((float4*)(phi_out + r * EM_H))[c4] = p;
            ((float4*)(mix + r * EM_H))[c4] =
                make_float4(hv[u].x * p.x, hv[u].y * p.y, hv[u].z * p.z, hv[u].w * p.w);
        }
    }
}

extern "C" vp_status vp_cuda_iqn_embed(vp_backend* be, const vp_iqn_dims* d, const float* tau, const float* h,
                                       const float* pw, const float* pb, float* cosf_out, float* phi_out,
                                       float* mix) {
    VP_REQUIRE(d && tau && h && pw && pb && mix && d->batch >= 1 && d->taus >= 1, VP_ERR_INVALID_ARG,
               "cuda iqn_embed: bad arguments");
    VP_REQUIRE(d->cos == EM_NC && d->hidden == EM_H, VP_ERR_UNSUPPORTED,
               "cuda iqn_embed: built for %d cosines and width %d, got %d and %d", EM_NC, EM_H, d->cos, d->hidden);
    VP_REQUIRE(((uintptr_t)h | (uintptr_t)pb | (uintptr_t)mix | (uintptr_t)(phi_out ? phi_out : mix)) % 16 == 0,
               VP_ERR_INVALID_ARG, "cuda iqn_embed: h, pb, phi and mix must be 16-byte aligned");
    // the shared-memory attribute and the SM count are a device's: set once per device (the jobs
    // of a pool run on several)
    static int sms_of[64];
    int dev = 0;
    VP_CUDA_CHECK(cudaGetDevice(&dev));
    VP_REQUIRE(dev >= 0 && dev < 64, VP_ERR_UNSUPPORTED, "cuda iqn_embed: device %d (at most 64 devices)", dev);
    if (sms_of[dev] == 0) {
        int n = 0;
        VP_CUDA_CHECK(cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, dev));
        VP_CUDA_CHECK(cudaFuncSetAttribute(iqn_embed_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                           (int)EM_SMEM_BYTES));
        sms_of[dev] = n > 0 ? n : 1;
    }
    const int sms = sms_of[dev];
    const int64_t Q = d->batch * d->taus, tiles = (Q + EM_ROWS - 1) / EM_ROWS;
    const unsigned blocks = (unsigned)(tiles < 2 * sms ? tiles : 2 * sms);
    iqn_embed_kernel<<<blocks, EM_THREADS, EM_SMEM_BYTES, vp_cuda_stream_of(be)>>>(Q, d->taus, tau, h, pw, pb, cosf_out,
                                                                                  phi_out, mix);
    VP_CUDA_CHECK_LAUNCH("iqn_embed_kernel");
    return VP_OK;
}
