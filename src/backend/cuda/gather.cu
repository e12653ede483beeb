/* CUDA gather of rows: kernel, then launcher. A warp copies a row, 16 bytes a lane when
 * rows are whole float4s and both tensors are aligned. */
#include "gather.cuh"

/* out [m, n] from src [r, n] by idx [m]; an out-of-range index writes a NaN row. */
__global__ void gather_rows_kernel(const float* __restrict__ src, const int32_t* __restrict__ idx, float* out,
                                   int64_t r, int64_t m, int64_t n, int vec) {
    const int rpb = blockDim.x / 32, lane = threadIdx.x & 31;
    for (int64_t i = (int64_t)blockIdx.x * rpb + threadIdx.x / 32; i < m; i += (int64_t)gridDim.x * rpb) {
        const int64_t k = idx[i];
        const int ok = k >= 0 && k < r;
        float* o = out + i * n;
        if (vec) {
            const float4* s4 = reinterpret_cast<const float4*>(src + (ok ? k : 0) * n);
            const float nan = __int_as_float(0x7fc00000);
            for (int64_t j = lane; j < n / 4; j += 32)
                reinterpret_cast<float4*>(o)[j] = ok ? s4[j] : make_float4(nan, nan, nan, nan);
        } else {
            const float* s = src + (ok ? k : 0) * n;
            for (int64_t j = lane; j < n; j += 32) o[j] = ok ? s[j] : __int_as_float(0x7fc00000);
        }
    }
}

vp_status vp_cuda_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out) {
    const int64_t r = vp_tensor_rows(src), n = vp_tensor_cols(src), m = vp_tensor_numel(idx);
    VP_REQUIRE(vp_tensor_numel(out) == m * n, VP_ERR_SHAPE, "cuda gather_rows: out has %lld elements, needs %lld",
               (long long)vp_tensor_numel(out), (long long)(m * n));
    const int vec = vp_cuda_aligned16(src->data, out->data, NULL) && n % 4 == 0;
    gather_rows_kernel<<<vp_cuda_row_grid(m, VP_CUDA_THREADS / 32), VP_CUDA_THREADS, 0, vp_cuda_of(b)->stream>>>(
        (const float*)src->data, (const int32_t*)idx->data, (float*)out->data, r, m, n, vec);
    VP_CUDA_CHECK_LAUNCH("gather_rows_kernel");
    return VP_OK;
}
