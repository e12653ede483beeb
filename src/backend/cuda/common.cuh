/* CUDA backend internals shared by every op family: the backend state, the check macro
 * for cuBLASLt calls and the counted runtime wrappers. The runtime and launch checks, the
 * grid helpers and the warp / block reductions come from the kernel kit (backend/kit.h),
 * which the layers' kernels use too. */
#ifndef VP_CUDA_COMMON_CUH
#define VP_CUDA_COMMON_CUH

#include <cublasLt.h>
#include <cuda_runtime.h>
#include <stdint.h>
#include <string.h>

#include "backend/backend_impl.h"
#include "backend/kit.h"

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
    cudaStream_t stream;        /* the non-default stream every op issued to this backend runs on */
    cublasLtHandle_t lt;        /* cuBLASLt handle */
    void* lt_workspace;         /* [VP_CUDA_LT_WORKSPACE_BYTES] bytes, device */
    float* scratch;             /* [VP_CUDA_SCRATCH_FLOATS] partial sums, device */
    vp_cuda_gemm_cache* gemm;   /* GEMM plan table (gemm.cu) */
    cudaEvent_t done;           /* recorded by vp_backend_after when other work waits on this stream */
    vp_backend* parent;         /* a lane's backend (its handle and plan table are the parent's); NULL */
} vp_cuda;

/* The CUDA state of a backend. */
static inline vp_cuda* vp_cuda_of(vp_backend* b) { return (vp_cuda*)b->impl; }

/* Fails the enclosing vp_status function when a cuBLASLt call fails, recording the call
 * text, the function, the file and the line. */
#define VP_CUBLAS_CHECK(call)                                                                \
    do {                                                                                     \
        cublasStatus_t vp_cb_e_ = (call);                                                    \
        if (vp_cb_e_ != CUBLAS_STATUS_SUCCESS)                                               \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: %s failed: %s (%s)", __func__,   \
                                #call, cublasLtGetStatusName(vp_cb_e_),                      \
                                cublasLtGetStatusString(vp_cb_e_));                          \
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

/* Whether every pointer given is 16-byte aligned (for float4 access). */
static inline int vp_cuda_aligned16(const void* a, const void* b2, const void* c) {
    return (((uintptr_t)a | (uintptr_t)b2 | (uintptr_t)c) & 15u) == 0;
}

#endif /* VP_CUDA_COMMON_CUH */
