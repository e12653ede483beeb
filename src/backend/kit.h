/* The kernel kit: what the kernels of the layers above the backend (model, learn, env,
 * eval) need from it, without the backend's private headers (backend_impl.h, cpu/,
 * cuda/). Plain C; a CUDA translation unit also gets the stream as a cudaStream_t, the
 * launch and runtime checks, the grid helpers and the warp / block reductions.
 *
 * A layer's kernels follow one pattern:
 *   1. its header lists them once as an X-macro, LIST(X, family, impl) expanding to
 *      X(family, impl, name) for each, and gives each kernel its function type
 *      family_name_fn with its contract beside it;
 *   2. VP_KERNEL_FIELDS makes the table struct, VP_KERNEL_DECLARE each implementation's
 *      declarations (impl_name), VP_KERNEL_TABLE each implementation's table;
 *   3. the layer's public entry points check their tensors with vp_tensor_check_* and
 *      take the table of the backend's kind with vp_kernels_select.
 * src/model/mops.h is the worked example. */
#ifndef VULPES_BACKEND_KIT_H
#define VULPES_BACKEND_KIT_H

#include <stdint.h>

#include "vulpes/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the stream ----------------------------------------------------------------------------- */

/* The cudaStream_t (as void*) the backend issues its work on: kernels of other layers launch
 * on it so that they order with the ops; NULL for the CPU backend or a NULL backend. */
void* vp_backend_stream(vp_backend* b);

/* ---- tensor-argument checks ------------------------------------------------------------------
 * Each fails the call with a message "fn: arg ..." and returns:
 *   VP_ERR_INVALID_ARG  t is NULL, has no data, or has another dtype;
 *   VP_ERR_SHAPE        ndim outside 1..VP_MAX_DIMS, an extent < 1, or the wrong size;
 *   VP_ERR_DEVICE       t lives in memory backend b cannot read.
 * The checks run in that order (presence, shape, dtype, memory, size). */

/* t is present, well formed, of `dtype` and readable by b. */
vp_status vp_tensor_check(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t, vp_dtype dtype);

/* As vp_tensor_check, and t holds exactly `numel` elements. */
vp_status vp_tensor_check_numel(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                                vp_dtype dtype, int64_t numel);

/* As vp_tensor_check, and t holds [rows, cols]: rows * cols elements with a last extent of
 * cols (any last extent when cols is 1). */
vp_status vp_tensor_check_rows(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                               vp_dtype dtype, int64_t rows, int64_t cols);

/* As vp_tensor_check, and t holds at least min_rows rows of cols columns (its last extent);
 * cols <= 0 counts elements instead of rows. */
vp_status vp_tensor_check_min_rows(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                                   vp_dtype dtype, int64_t min_rows, int64_t cols);

/* Tensors a and t (both present) hold the same number of elements. */
vp_status vp_tensor_check_same_numel(const char* fn, const char* a_name, const vp_tensor* a, const char* t_name,
                                     const vp_tensor* t);

/* ---- kernel tables ----------------------------------------------------------------------------- */

#define VP_KERNEL_FIELD_(family, impl, name) family##_##name##_fn* name;
#define VP_KERNEL_DECLARE_(family, impl, name) family##_##name##_fn impl##_##name;
#define VP_KERNEL_ENTRY_(family, impl, name) impl##_##name,

/* The members of a kernel table: one pointer of type family_<name>_fn per kernel of LIST. */
#define VP_KERNEL_FIELDS(LIST, family) LIST(VP_KERNEL_FIELD_, family, family)

/* Declares impl_<name> of type family_<name>_fn for every kernel of LIST. */
#define VP_KERNEL_DECLARE(LIST, family, impl) LIST(VP_KERNEL_DECLARE_, family, impl)

/* The initialiser of the table whose kernels are impl_<name>: each entry is named from the
 * list, in the list's order (valid in C and C++). */
#define VP_KERNEL_TABLE(LIST, family, impl) {LIST(VP_KERNEL_ENTRY_, family, impl)}

/* The address of a layer's CUDA table, or NULL in a build without CUDA (where the table
 * is not compiled), for vp_kernels_select. */
#ifdef VP_HAVE_CUDA
#define VP_KERNELS_CUDA(table) ((const void*)&(table))
#else
#define VP_KERNELS_CUDA(table) ((const void*)0)
#endif

/* *out = the kernel table of b's kind: `cpu` for the CPU backend, `cuda` (VP_KERNELS_CUDA)
 * for the CUDA one. Fails naming fn and `what` (e.g. "loss kernels"): VP_ERR_INVALID_ARG
 * for a NULL backend or an unknown kind, VP_ERR_UNSUPPORTED when this build has no table
 * for the kind. */
vp_status vp_kernels_select(const char* fn, const char* what, const vp_backend* b, const void* cpu,
                            const void* cuda, const void** out);

#ifdef __cplusplus
}
#endif

/* ---- CUDA translation units: stream, checks, grids, reductions --------------------------------- */
#ifdef __CUDACC__
#include <cuda_runtime.h>

/* Threads per block of the element-wise and reduction kernels. */
#define VP_CUDA_THREADS 256
/* Upper bound on the blocks of a grid-stride element-wise launch. */
#define VP_CUDA_MAX_BLOCKS 65535

/* The backend's stream as a cudaStream_t. */
static inline cudaStream_t vp_cuda_stream_of(vp_backend* b) { return (cudaStream_t)vp_backend_stream(b); }

/* Fails the enclosing vp_status function when a CUDA runtime call fails, recording the
 * call text, the function, the file and the line. */
#define VP_CUDA_CHECK(call)                                                                          \
    do {                                                                                             \
        cudaError_t vp_cu_e_ = (call);                                                               \
        if (vp_cu_e_ != cudaSuccess)                                                                 \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: %s failed: %s (%s)", __func__, #call,    \
                                cudaGetErrorName(vp_cu_e_), cudaGetErrorString(vp_cu_e_));           \
    } while (0)

/* Checks the kernel launch just issued (bad configuration, missing image). */
#define VP_CUDA_CHECK_LAUNCH(kernel_name)                                                            \
    do {                                                                                             \
        cudaError_t vp_cu_e_ = cudaGetLastError();                                                   \
        if (vp_cu_e_ != cudaSuccess)                                                                 \
            return vp_set_error(VP_ERR_CUDA, VP_WHERE, "%s: launch of %s failed: %s (%s)", __func__, \
                                kernel_name, cudaGetErrorName(vp_cu_e_), cudaGetErrorString(vp_cu_e_)); \
    } while (0)

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

/* ---- device-side reductions (fixed order: deterministic) ---- */

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
#endif /* __CUDACC__ */

#endif /* VULPES_BACKEND_KIT_H */
