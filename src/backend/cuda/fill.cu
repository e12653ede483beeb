/* CUDA fill, copy and f32 <-> bf16 conversion: kernels, then launchers. */
#include "fill.cuh"

/* ---- kernels --------------------------------------------------------------------------- */

/* x[i] = v over n 32-bit words; 16-byte stores over the aligned body. */
__global__ void fill32_kernel(uint32_t* x, uint32_t v, int64_t n, int vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t body = vec ? n / 4 : 0;
    uint4 q = make_uint4(v, v, v, v);
    for (int64_t i = i0; i < body; i += stride) reinterpret_cast<uint4*>(x)[i] = q;
    for (int64_t i = body * 4 + i0; i < n; i += stride) x[i] = v;
}

/* dst[i] = src[i] over n 16-byte words, then the `tail` trailing 2-byte words. */
__global__ void copy16_kernel(const uint4* __restrict__ src, uint4* __restrict__ dst, int64_t n, int tail) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
    if (blockIdx.x == 0 && (int)threadIdx.x < tail)
        reinterpret_cast<uint16_t*>(dst + n)[threadIdx.x] = reinterpret_cast<const uint16_t*>(src + n)[threadIdx.x];
}

/* dst[i] = src[i] over n 2-byte words (unaligned fallback). */
__global__ void copy2_kernel(const uint16_t* __restrict__ src, uint16_t* __restrict__ dst, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = src[i];
}

/* f32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN of the same sign. */
__device__ __forceinline__ uint16_t f32_to_bf16(float f) {
    uint32_t u = __float_as_uint(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

__global__ void f32_to_bf16_kernel(const float* __restrict__ src, uint16_t* __restrict__ dst, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) dst[i] = f32_to_bf16(src[i]);
}

__global__ void bf16_to_f32_kernel(const uint16_t* __restrict__ src, float* __restrict__ dst, int64_t n) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = __uint_as_float((uint32_t)src[i] << 16);
}

/* ---- launchers ---------------------------------------------------------------------------- */

/* Fills n 32-bit words with a bit pattern. */
static vp_status fill32(vp_backend* b, void* x, uint32_t bits, int64_t n) {
    VP_REQUIRE(x != NULL && n >= 1, VP_ERR_INVALID_ARG, "cuda fill: empty or NULL tensor");
    int vec = ((uintptr_t)x & 15u) == 0;
    fill32_kernel<<<vp_cuda_grid(vec ? (n + 3) / 4 : n, VP_CUDA_THREADS), VP_CUDA_THREADS, 0,
                    vp_cuda_of(b)->stream>>>((uint32_t*)x, bits, n, vec);
    VP_CUDA_CHECK_LAUNCH("fill32_kernel");
    return VP_OK;
}

vp_status vp_cuda_fill(vp_backend* b, vp_tensor* x, float value) {
    uint32_t bits;
    memcpy(&bits, &value, sizeof bits);
    return fill32(b, x->data, bits, vp_tensor_numel(x));
}

vp_status vp_cuda_fill_i32(vp_backend* b, vp_tensor* x, int32_t value) {
    return fill32(b, x->data, (uint32_t)value, vp_tensor_numel(x));
}

vp_status vp_cuda_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    size_t bytes = vp_tensor_bytes(src);
    VP_REQUIRE(bytes == vp_tensor_bytes(dst) && bytes % 2 == 0, VP_ERR_SHAPE, "cuda copy: %zu vs %zu bytes", bytes,
               vp_tensor_bytes(dst));
    if (src->data == dst->data) return VP_OK;
    cudaStream_t st = vp_cuda_of(b)->stream;
    if (vp_cuda_aligned16(src->data, dst->data, NULL)) {
        int64_t n16 = (int64_t)(bytes / 16);
        int tail = (int)(bytes % 16) / 2;
        copy16_kernel<<<vp_cuda_grid(n16 > 0 ? n16 : 1, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, st>>>(
            (const uint4*)src->data, (uint4*)dst->data, n16, tail);
        VP_CUDA_CHECK_LAUNCH("copy16_kernel");
    } else {
        int64_t n2 = (int64_t)(bytes / 2);
        copy2_kernel<<<vp_cuda_grid(n2, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, st>>>((const uint16_t*)src->data,
                                                                                  (uint16_t*)dst->data, n2);
        VP_CUDA_CHECK_LAUNCH("copy2_kernel");
    }
    return VP_OK;
}

vp_status vp_cuda_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    int64_t n = vp_tensor_numel(src);
    VP_REQUIRE(n == vp_tensor_numel(dst), VP_ERR_SHAPE, "cuda convert: numel %lld vs %lld", (long long)n,
               (long long)vp_tensor_numel(dst));
    cudaStream_t st = vp_cuda_of(b)->stream;
    unsigned g = vp_cuda_grid(n, VP_CUDA_THREADS);
    if (src->dtype == VP_F32 && dst->dtype == VP_BF16) {
        f32_to_bf16_kernel<<<g, VP_CUDA_THREADS, 0, st>>>((const float*)src->data, (uint16_t*)dst->data, n);
        VP_CUDA_CHECK_LAUNCH("f32_to_bf16_kernel");
    } else if (src->dtype == VP_BF16 && dst->dtype == VP_F32) {
        bf16_to_f32_kernel<<<g, VP_CUDA_THREADS, 0, st>>>((const uint16_t*)src->data, (float*)dst->data, n);
        VP_CUDA_CHECK_LAUNCH("bf16_to_f32_kernel");
    } else {
        VP_FAIL(VP_ERR_INVALID_ARG, "cuda convert: %s -> %s is not supported", vp_dtype_name(src->dtype),
                vp_dtype_name(dst->dtype));
    }
    return VP_OK;
}
