/* CUDA backend internals shared by every op family: the backend state, the check
 * macros for CUDA runtime and cuBLASLt calls, the counted runtime wrappers, and the
 * warp / block reductions the row and column kernels are built from. */
#ifndef VP_CUDA_COMMON_CUH
#define VP_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend_impl.h"

/* Threads per block of the element-wise and reduction kernels. */
#define VP_CUDA_THREADS 256
/* Upper bound on the blocks of a grid-stride element-wise launch. */
#define VP_CUDA_MAX_BLOCKS 65535
/* Partial sums a deterministic whole-buffer reduction makes in its first pass. */
#define VP_CUDA_REDUCE_PARTS 1024
/* Rows up to this wide get a warp each in row kernels; wider rows a block each. */
#define VP_CUDA_WARP_ROW_MAX 1024
/* cuBLASLt workspace, taken once at init (32 MiB is NVIDIA's advice for Hopper). */
#define VP_CUDA_LT_WORKSPACE_BYTES ((size_t)32 << 20)
/* Scratch for per-block partial sums of deterministic reductions (floats). */
#define VP_CUDA_SCRATCH_FLOATS ((size_t)4 << 20)

typedef struct vp_cuda_gemm_cache vp_cuda_gemm_cache;

/* The CUDA backend's state (vp_backend.impl). */
typedef struct vp_cuda {
    int device;                 /* CUDA device ordinal */
    int sm_count;               /* multiprocessors */
    cudaStream_t stream;        /* the one non-default stream every op runs on */
    cublasLtHandle_t lt;        /* cuBLASLt handle */
    void* lt_workspace;         /* [VP_CUDA_LT_WORKSPACE_BYTES] bytes, device */
    float* scratch;             /* [VP_CUDA_SCRATCH_FLOATS] partial sums, device */
    vp_cuda_gemm_cache* gemm;   /* GEMM plan table (gemm.cu) */
} vp_cuda;

/* The CUDA state of a backend. */
static inline vp_cuda* vp_cuda_of(vp_backend* b) { return (vp_cuda*)b->impl; }

/* Fails the enclosing vp_status function when a CUDA runtime call fails, recording the
 * call text, the function, the file and the line. */
#define VP_CUDA_CHECK(call)                                                                  \
    do {                                                                                     \
        cudaError_t vp_cu_e_ = (call);                                                       \
        if (vp_cu_e_ != cudaSuccess)                                                         \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: %s failed: %s (%s)", __func__,   \
                                #call, cudaGetErrorName(vp_cu_e_), cudaGetErrorString(vp_cu_e_)); \
    } while (0)

/* The same for cuBLASLt calls. */
#define VP_CUBLAS_CHECK(call)                                                                \
    do {                                                                                     \
        cublasStatus_t vp_cb_e_ = (call);                                                    \
        if (vp_cb_e_ != CUBLAS_STATUS_SUCCESS)                                               \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: %s failed: %s (%s)", __func__,   \
                                #call, cublasLtGetStatusName(vp_cb_e_),                      \
                                cublasLtGetStatusString(vp_cb_e_));                          \
    } while (0)

/* Checks the kernel launch just issued (bad configuration, missing image). */
#define VP_CUDA_CHECK_LAUNCH(kernel_name)                                                    \
    do {                                                                                     \
        cudaError_t vp_cu_e_ = cudaGetLastError();                                           \
        if (vp_cu_e_ != cudaSuccess)                                                         \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: launch of %s failed: %s (%s)",   \
                                __func__, kernel_name, cudaGetErrorName(vp_cu_e_),           \
                                cudaGetErrorString(vp_cu_e_));                               \
    } while (0)

/* ---- counted runtime wrappers (cuda_backend.cu) --------------------------------------
 * `count` is 1 when the backend makes the call on its own (init), 0 when the public entry
 * point (vp_buffer_alloc, vp_upload, vp_download, vp_backend_sync) has counted it. */

/* cudaMalloc of `bytes` device bytes. */
vp_status vp_cuda_malloc(vp_backend* b, void** p, size_t bytes, int count);

/* cudaHostAlloc(mapped) of `bytes`; *host and *dev receive the two aliases. */
vp_status vp_cuda_host_alloc_mapped(vp_backend* b, void** host, void** dev, size_t bytes, int count);

/* A copy on the backend's stream, waited for (host memory may be pageable); the wait
 * is counted as a sync of its own. */
vp_status vp_cuda_memcpy(vp_backend* b, void* dst, const void* src, size_t bytes,
                         cudaMemcpyKind kind, int count);

/* Waits for the backend's stream. */
vp_status vp_cuda_stream_sync(vp_backend* b, int count);

/* ---- launch helpers ---------------------------------------------------------------- */

/* Blocks for a grid-stride loop over n items with `threads` each, capped. */
static inline unsigned vp_cuda_grid(int64_t n, int threads) {
    int64_t g = (n + threads - 1) / threads;
    if (g < 1) g = 1;
    if (g > VP_CUDA_MAX_BLOCKS) g = VP_CUDA_MAX_BLOCKS;
    return (unsigned)g;
}

/* Grid for row kernels: rows per block is 1 (block per row) or blockDim / 32 (warp per row). */
static inline unsigned vp_cuda_row_grid(int64_t rows, int rows_per_block) {
    return vp_cuda_grid((rows + rows_per_block - 1) / rows_per_block, 1);
}

/* Whether every pointer given is 16-byte aligned (for float4 access). */
static inline int vp_cuda_aligned16(const void* a, const void* b2, const void* c) {
    return (((uintptr_t)a | (uintptr_t)b2 | (uintptr_t)c) & 15u) == 0;
}

/* ---- device-side reductions (fixed order: deterministic) ---------------------------- */

#ifdef __CUDACC__
/* max that lets NaN win (fmaxf would drop it). */
__device__ __forceinline__ float vp_nan_max(float a, float b) { return (a > b || a != a) ? a : b; }

/* Sum over the 32 lanes of a warp (every lane gets the result). */
__device__ __forceinline__ float vp_warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    return v;
}

/* NaN-propagating max over the 32 lanes of a warp. */
__device__ __forceinline__ float vp_warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1) v = vp_nan_max(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

/* Sum (is_max 0) or max (is_max 1) over a group of G threads (G = 32: one warp, G =
 * blockDim.x: the whole block, which every thread must reach). `sh` holds 32 floats. */
template <int G>
__device__ __forceinline__ float vp_group_reduce(float v, int is_max, float* sh) {
    v = is_max ? vp_warp_max(v) : vp_warp_sum(v);
    if (G == 32) return v;
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
    __syncthreads(); /* sh may still be read by a previous reduction */
    if (lane == 0) sh[warp] = v;
    __syncthreads();
    float r = lane < nw ? sh[lane] : (is_max ? -INFINITY : 0.0f);
    return is_max ? vp_warp_max(r) : vp_warp_sum(r);
}
#endif

#endif /* VP_CUDA_COMMON_CUH */
