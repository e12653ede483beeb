/* The one-pass IQN embedding on CUDA (mops.h, vp_mops_iqn_embed_fn): for tiles of 32 rows,
 * the cosine features, phi = relu(cos pw^T + pb) on TF32 tensor cores (wmma m16n16k8, FP32
 * accumulation) and mix = h * phi, without the cosines or phi passing through global
 * memory unless a backward asks for them.
 *
 * Persistent blocks, two per multiprocessor (one's cosines overlap the other's products and
 * stores), each holding pw in shared memory for all its tiles (rounded to TF32 once, as the
 * products would round it), so the weights are read from global memory once per block, not
 * once per tile. Tiles of 32 rows, 8 warps: warp w computes rows [16 (w % 2), +16) x
 * columns [64 (w / 2), +64). Shared memory: pw [H][NC + 4], the cosine tile [32][NC + 4]
 * and the output tile [32][H + 4] (rows padded against bank conflicts): 112 KiB. */
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
#define EM_LDO (EM_H + 4)  /* row stride of the output tile */
#define EM_SMEM_FLOATS (EM_H * EM_LDW + EM_ROWS * EM_LDC + EM_ROWS * EM_LDO + EM_NC)
#define EM_SMEM_BYTES (sizeof(float) * (size_t)EM_SMEM_FLOATS)

namespace wm = nvcuda::wmma;
typedef wm::fragment<wm::matrix_a, 16, 16, 8, wm::precision::tf32, wm::row_major> frag_a;
typedef wm::fragment<wm::matrix_b, 16, 16, 8, wm::precision::tf32, wm::col_major> frag_b;
typedef wm::fragment<wm::accumulator, 16, 16, 8, float> frag_c;

__global__ void __launch_bounds__(EM_THREADS, 2)
    iqn_embed_kernel(int64_t Q, int T, const float* __restrict__ tau, const float* __restrict__ h,
                     const float* __restrict__ pw, const float* __restrict__ pb, float* cosf_out, float* phi_out,
                     float* mix) {
    extern __shared__ __align__(128) float sm[];
    float* sw = sm;                          /* [H][EM_LDW]: pw, TF32-rounded */
    float* sc = sw + EM_H * EM_LDW;          /* [32][EM_LDC]: cosines */
    float* so = sc + EM_ROWS * EM_LDC;       /* [32][EM_LDO]: phi pre-activations */
    float* spi = so + EM_ROWS * EM_LDO;      /* [NC]: float(pi i) */
    const int tid = threadIdx.x, warp = tid / 32;
    for (int k = tid; k < EM_H * EM_NC; k += EM_THREADS)
        sw[(k / EM_NC) * EM_LDW + k % EM_NC] = wm::__float_to_tf32(pw[k]);
    if (tid < EM_NC) spi[tid] = (float)(3.14159265358979323846 * tid);
    // each thread's four output columns stay the same over the tile (EM_THREADS % (H / 4) == 0)
    const int c4 = tid % (EM_H / 4), r_first = tid / (EM_H / 4), r_step = EM_THREADS / (EM_H / 4);
    const float4 bias = ((const float4*)pb)[c4];
    const int64_t tiles = (Q + EM_ROWS - 1) / EM_ROWS;
    for (int64_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        const int64_t r0 = tile * EM_ROWS;
        __syncthreads(); // pw and spi are in place; the previous tile's outputs are read
        // 1. cosines (rows past Q from tau 0, never written)
        for (int k = tid; k < EM_ROWS * EM_NC; k += EM_THREADS) {
            const int i = k / EM_NC, c = k % EM_NC;
            const int64_t r = r0 + i;
            const float v = cosf((r < Q ? tau[r] : 0.0f) * spi[c]);
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
        for (int i = r_first; i < EM_ROWS; i += r_step) {
            const int64_t r = r0 + i;
            if (r >= Q) break;
            const float4 s = *(const float4*)(so + i * EM_LDO + 4 * c4);
            const float4 p = make_float4(fmaxf(s.x + bias.x, 0.0f), fmaxf(s.y + bias.y, 0.0f),
                                         fmaxf(s.z + bias.z, 0.0f), fmaxf(s.w + bias.w, 0.0f));
            const float4 hv = ((const float4*)(h + (r / T) * EM_H))[c4];
            if (phi_out) ((float4*)(phi_out + r * EM_H))[c4] = p;
            ((float4*)(mix + r * EM_H))[c4] = make_float4(hv.x * p.x, hv.y * p.y, hv.z * p.z, hv.w * p.w);
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
