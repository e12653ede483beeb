/* CUDA kernel of the cross-branch messages (hmops.h): the per-branch advantage blocks to the
 * advantage layout and back; kernel, then launcher. */
#include "backend/kit.h"
#include "model/hmops.h"

/* One thread per advantage element (sample, action, atom). */
__global__ void xb_pack_kernel(const float* __restrict__ src, float* dst, int64_t B, int Z, vp_branch_map br, int A,
                               int to_adv) {
    const int64_t n = B * A * Z;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        const int64_t b = i / ((int64_t)A * Z), c = i % ((int64_t)A * Z);
        const int a = (int)(c / Z);
        int o = 0, k = 0;
        while (k + 1 < br.n && a >= o + br.size[k]) o += br.size[k++];
        const int64_t w = (int64_t)br.size[k] * Z;
        const int64_t blk = B * o * Z + b * w + (c - (int64_t)o * Z);
        if (to_adv)
            dst[i] = src[blk];
        else
            dst[blk] = src[i];
    }
}

extern "C" vp_status vp_hcuda_xb_pack(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, int to_adv,
                                      const float* src, float* dst) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && src && dst && B >= 1 && Z >= 1, VP_ERR_INVALID_ARG,
               "cuda xb_pack: bad arguments");
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    xb_pack_kernel<<<vp_cuda_grid(B * A * Z, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        src, dst, B, Z, *br, A, to_adv);
    VP_CUDA_CHECK_LAUNCH("xb_pack_kernel");
    return VP_OK;
}
