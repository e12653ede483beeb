/* CUDA kernels of the TLOB encoder (tlops.h): the batched transpose between the temporal and
 * the feature layout; kernel, then launcher, then the table. */
#include "backend/kit.h"
#include "model/tlops.h"

/* Tile edge of the transpose: a 32 x 33 shared tile (the pad avoids bank conflicts). */
#define TL_TILE 32

/* dst[b, j, i] = src[b, i, j]; grid (ceil(c / 32), ceil(r / 32), up to 65535 matrices at a
 * time), block (32, 8): each block moves one 32 x 32 tile of a matrix through shared memory
 * so reads and writes are both coalesced, then the tile of the matrix gridDim.z further. */
__global__ void tl_transpose_kernel(const float* __restrict__ src, float* __restrict__ dst, int64_t B, int64_t r,
                                    int64_t c) {
    __shared__ float tile[TL_TILE][TL_TILE + 1];
    const int64_t i0 = (int64_t)blockIdx.y * TL_TILE, j0 = (int64_t)blockIdx.x * TL_TILE;
    for (int64_t b = blockIdx.z; b < B; b += gridDim.z) {
        const float* s = src + b * r * c;
        float* d = dst + b * r * c;
        for (int di = threadIdx.y; di < TL_TILE; di += blockDim.y) {
            const int64_t i = i0 + di, j = j0 + threadIdx.x;
            if (i < r && j < c) tile[di][threadIdx.x] = s[i * c + j];
        }
        __syncthreads();
        for (int dj = threadIdx.y; dj < TL_TILE; dj += blockDim.y) {
            const int64_t j = j0 + dj, i = i0 + threadIdx.x;
            if (i < r && j < c) d[j * r + i] = tile[threadIdx.x][dj];
        }
        __syncthreads();
    }
}

extern "C" vp_status vp_tlcuda_transpose(vp_backend* be, int64_t B, int64_t r, int64_t c, const float* src,
                                         float* dst) {
    VP_REQUIRE(src && dst && src != dst && B >= 1 && r >= 1 && c >= 1 && r <= (1 << 20) && c <= (1 << 20),
               VP_ERR_INVALID_ARG,
               "cuda tl_transpose: bad arguments (B %lld, r %lld, c %lld)", (long long)B, (long long)r, (long long)c);
    const dim3 grid((unsigned)((c + TL_TILE - 1) / TL_TILE), (unsigned)((r + TL_TILE - 1) / TL_TILE),
                    (unsigned)(B < 65535 ? B : 65535));
    tl_transpose_kernel<<<grid, dim3(TL_TILE, 8), 0, vp_cuda_stream_of(be)>>>(src, dst, B, r, c);
    VP_CUDA_CHECK_LAUNCH("tl_transpose_kernel");
    return VP_OK;
}

extern "C" const vp_tlops vp_tlops_cuda = VP_KERNEL_TABLE(VP_TLOPS_KERNELS, vp_tlops, vp_tlcuda);
