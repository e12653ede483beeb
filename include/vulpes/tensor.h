/* vulpes: tensors (a typed, shaped view of memory that knows where it lives). */
#ifndef VULPES_TENSOR_H
#define VULPES_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Where a buffer lives. */
typedef enum vp_mem {
    VP_MEM_HOST = 0, /* ordinary host memory: only the CPU backend reads it */
    VP_MEM_DEVICE,   /* device memory: only the CUDA backend reads it */
    VP_MEM_MAPPED,   /* pinned, device-mapped host memory: both sides read it, no copy */
    VP_MEM_COUNT
} vp_mem;

/* Element types. */
typedef enum vp_dtype {
    VP_F32 = 0, /* 32-bit IEEE float */
    VP_I32,     /* 32-bit signed integer */
    VP_BF16,    /* bfloat16 (stored as uint16_t) */
    VP_DTYPE_COUNT
} vp_dtype;

/* Most dimensions a tensor may have. */
#define VP_MAX_DIMS 4

/* A contiguous row-major view: shape[0] is the slowest dimension.
 * `data` is the pointer the owning backend dereferences (for VP_MEM_MAPPED on the
 * CUDA backend, the device alias of the host allocation). */
typedef struct vp_tensor {
    void* data;                 /* first element */
    vp_dtype dtype;             /* element type */
    vp_mem mem;                 /* where `data` lives */
    int ndim;                   /* 1..VP_MAX_DIMS */
    int64_t shape[VP_MAX_DIMS]; /* extents, shape[i] >= 1 for i < ndim */
} vp_tensor;

/* Bytes per element of a dtype (0 for an invalid dtype). */
size_t vp_dtype_size(vp_dtype t);

/* Name of a dtype ("f32"); never NULL. */
const char* vp_dtype_name(vp_dtype t);

/* Name of a memory kind ("device"); never NULL. */
const char* vp_mem_name(vp_mem m);

/* Number of elements (product of the extents); 0 for a NULL tensor. */
int64_t vp_tensor_numel(const vp_tensor* t);

/* Bytes the tensor spans. */
size_t vp_tensor_bytes(const vp_tensor* t);

/* A 1-D view [n] of `data`. */
vp_tensor vp_tensor_1d(void* data, vp_dtype dtype, vp_mem mem, int64_t n);

/* A 2-D view [rows, cols] of `data`. */
vp_tensor vp_tensor_2d(void* data, vp_dtype dtype, vp_mem mem, int64_t rows, int64_t cols);

/* A 3-D view [a, b, c] of `data`. */
vp_tensor vp_tensor_3d(void* data, vp_dtype dtype, vp_mem mem, int64_t a, int64_t b, int64_t c);

/* Rows of a 2-D (or higher) tensor viewed as a matrix: all leading dims folded into rows. */
int64_t vp_tensor_rows(const vp_tensor* t);

/* Last extent (columns of the row-major matrix view). */
int64_t vp_tensor_cols(const vp_tensor* t);

/* Writes "f32[8192, 256]@device" into buf [n]; returns buf. */
const char* vp_tensor_describe(const vp_tensor* t, char* buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_TENSOR_H */
