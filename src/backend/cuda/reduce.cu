/* CUDA deterministic reductions: kernels, then launchers. */
#include "reduce.cuh"

/* Element map of a reduction before it is summed (or maxed). */
__device__ __forceinline__ float reduce_map(int op, float v) { return op == VP_REDUCE_SUMSQ ? v * v : v; }

/* Combines two partial results. */
__device__ __forceinline__ float reduce_join(int is_max, float a, float v) { return is_max ? vp_nan_max(a, v) : a + v; }

/* ---- kernels ------------------------------------------------------------------------------ */

/* out[r] = reduce(x[r, :]), a group of G threads per row; x [m, n], out [m]. */
template <int G>
__global__ void reduce_rows_kernel(int op, const float* __restrict__ x, float* out, int64_t m, int64_t n) {
    __shared__ float sh[32];
    const int is_max = op == VP_REDUCE_MAX;
    const int rpb = blockDim.x / G, t = threadIdx.x % G;
    for (int64_t r = (int64_t)blockIdx.x * rpb + threadIdx.x / G; r < m; r += (int64_t)gridDim.x * rpb) {
        const float* xr = x + r * n;
        float acc = is_max ? -INFINITY : 0.0f;
        for (int64_t j = t; j < n; j += G) acc = reduce_join(is_max, acc, reduce_map(op, xr[j]));
        acc = vp_group_reduce<G>(acc, is_max, sh);
        if (t == 0) out[r] = acc;
    }
}

/* Column partials: block (tile, part) covers 32 columns and the rows of chunk `part`;
 * threadIdx.y strides the rows, then the 8 lanes are joined in fixed order. Writes
 * dst0[part * n + j] (and dst1 for LN). blockDim = (32, 8). */
template <int MODE>
__global__ void col_partials_kernel(const float* __restrict__ x, const float* __restrict__ dy,
                                    const float* __restrict__ mean, const float* __restrict__ rstd, int64_t m,
                                    int64_t n, int64_t rows_per_part, float* dst0, float* dst1) {
    __shared__ float sh0[8][33], sh1[8][33];
    const int is_max = MODE == VP_CUDA_COL_MAX;
    const int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    const int64_t r0 = (int64_t)blockIdx.y * rows_per_part;
    const int64_t r1 = r0 + rows_per_part < m ? r0 + rows_per_part : m;
    float a0 = is_max ? -INFINITY : 0.0f, a1 = 0.0f;
    if (j < n) {
        for (int64_t r = r0 + threadIdx.y; r < r1; r += 8) {
            const float v = x[r * n + j];
            if (MODE == VP_CUDA_COL_SUM) a0 += v;
            else if (MODE == VP_CUDA_COL_SUMSQ) a0 += v * v;
            else if (MODE == VP_CUDA_COL_MAX) a0 = vp_nan_max(a0, v);
            else if (MODE == VP_CUDA_COL_LN) {
                const float g = dy[r * n + j];
                a0 += g * ((v - mean[r]) * rstd[r]);
                a1 += g;
            } else {
                a0 += dy[r * n + j] * (v * rstd[r]);
            }
        }
    }
    sh0[threadIdx.y][threadIdx.x] = a0;
    sh1[threadIdx.y][threadIdx.x] = a1;
    __syncthreads();
    if (threadIdx.y == 0 && j < n) {
        for (int k = 1; k < 8; ++k) {
            a0 = reduce_join(is_max, a0, sh0[k][threadIdx.x]);
            a1 += sh1[k][threadIdx.x];
        }
        dst0[(int64_t)blockIdx.y * n + j] = a0;
        if (MODE == VP_CUDA_COL_LN) dst1[(int64_t)blockIdx.y * n + j] = a1;
    }
}

/* out[j] = join over parts of part[p * n + j], in a fixed order: lane y of block (32, 32)
 * joins parts y, y + 32, ... of its column in turn, then lane 0 joins the 32 lanes' values
 * in lane order. Block x covers columns 32x .. 32x + 31. */
__global__ void col_combine_kernel(const float* __restrict__ part, int64_t parts, int64_t n, int is_max, float* out) {
    __shared__ float sh[32][33];
    const int64_t j = (int64_t)blockIdx.x * 32 + threadIdx.x;
    float acc = is_max ? -INFINITY : 0.0f;
    if (j < n)
        for (int64_t p = threadIdx.y; p < parts; p += 32) acc = reduce_join(is_max, acc, part[p * n + j]);
    sh[threadIdx.y][threadIdx.x] = acc;
    __syncthreads();
    if (threadIdx.y == 0 && j < n) {
        for (int k = 1; k < 32; ++k) acc = reduce_join(is_max, acc, sh[k][threadIdx.x]);
        out[j] = acc;
    }
}

/* First pass over all of x [n]: block b writes its partial to part[b]. Thread t handles the
 * 4-element groups t, t + stride, ... in element order (one float4 load when aligned), so
 * the sum order does not depend on alignment. */
__global__ void all_partials_kernel(int op, const float* __restrict__ x, int64_t n, int vec, float* part) {
    __shared__ float sh[32];
    const int is_max = op == VP_REDUCE_MAX;
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t groups = (n + 3) / 4;
    float acc = is_max ? -INFINITY : 0.0f;
    for (int64_t g = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; g < groups; g += stride) {
        if (vec && 4 * g + 3 < n) {
            const float4 v = reinterpret_cast<const float4*>(x)[g];
            acc = reduce_join(is_max, acc, reduce_map(op, v.x));
            acc = reduce_join(is_max, acc, reduce_map(op, v.y));
            acc = reduce_join(is_max, acc, reduce_map(op, v.z));
            acc = reduce_join(is_max, acc, reduce_map(op, v.w));
        } else {
            for (int64_t i = 4 * g; i < 4 * g + 4 && i < n; ++i) acc = reduce_join(is_max, acc, reduce_map(op, x[i]));
        }
    }
    acc = vp_group_reduce<VP_CUDA_THREADS>(acc, is_max, sh);
    if (threadIdx.x == 0) part[blockIdx.x] = acc;
}

/* Second pass: one block joins the `parts` partials in fixed order. out[0] receives the
 * result; with `coef` non-NULL the result is a sum of squares finished as a clip:
 * out[0] = sqrt(sum), coef[0] = min(1, max_norm / (out[0] + 1e-6)). */
__global__ void all_finish_kernel(const float* __restrict__ part, int parts, int is_max, float* out, float* coef,
                                  float max_norm, const float* __restrict__ max_norm_at) {
    __shared__ float sh[32];
    float acc = is_max ? -INFINITY : 0.0f;
    for (int p = threadIdx.x; p < parts; p += blockDim.x) acc = reduce_join(is_max, acc, part[p]);
    acc = vp_group_reduce<VP_CUDA_THREADS>(acc, is_max, sh);
    if (threadIdx.x != 0) return;
    if (!coef) {
        out[0] = acc;
        return;
    }
    const float norm = sqrtf(acc);
    const float c = (max_norm_at ? max_norm_at[0] : max_norm) / (norm + 1e-6f);
    out[0] = norm;
    coef[0] = (c < 1.0f || c != c) ? c : 1.0f;
}

/* ---- launchers ------------------------------------------------------------------------------ */

vp_status vp_cuda_reduce_rows(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    VP_REQUIRE(vp_tensor_numel(out) == m, VP_ERR_SHAPE, "cuda reduce_rows: out has %lld elements for %lld rows",
               (long long)vp_tensor_numel(out), (long long)m);
    cudaStream_t st = vp_cuda_of(b)->stream;
    if (n <= VP_CUDA_WARP_ROW_MAX)
        reduce_rows_kernel<32><<<vp_cuda_row_grid(m, VP_CUDA_THREADS / 32), VP_CUDA_THREADS, 0, st>>>(
            (int)op, (const float*)x->data, (float*)out->data, m, n);
    else
        reduce_rows_kernel<VP_CUDA_THREADS><<<vp_cuda_row_grid(m, 1), VP_CUDA_THREADS, 0, st>>>(
            (int)op, (const float*)x->data, (float*)out->data, m, n);
    VP_CUDA_CHECK_LAUNCH("reduce_rows_kernel");
    return VP_OK;
}

vp_status vp_cuda_col_reduce(vp_backend* b, vp_cuda_col_mode mode, const float* x, const float* dy,
                             const float* mean, const float* rstd, int64_t m, int64_t n, float* out0,
                             float* out1) {
    vp_cuda* c = vp_cuda_of(b);
    const int nout = mode == VP_CUDA_COL_LN ? 2 : 1;
    VP_REQUIRE(x && out0 && (nout == 1 || out1) && m >= 1 && n >= 1, VP_ERR_INVALID_ARG,
               "cuda col_reduce: missing pointer or empty shape");
    VP_REQUIRE(mode < VP_CUDA_COL_LN || (dy && rstd && (mode != VP_CUDA_COL_LN || mean)), VP_ERR_INVALID_ARG,
               "cuda col_reduce: norm modes need dy, rstd (and mean)");
    /* fixed partition: at most 1024 chunks of >= 64 rows, bounded by the scratch size */
    int64_t pmax = (int64_t)(VP_CUDA_SCRATCH_FLOATS / ((size_t)nout * (size_t)n));
    if (pmax > 1024) pmax = 1024;
    if (pmax < 1) pmax = 1;
    int64_t rows = (m + pmax - 1) / pmax;
    if (rows < 64) rows = 64;
    const int64_t parts = (m + rows - 1) / rows;
    /* one chunk writes the outputs directly; several go through the scratch */
    float* d0 = parts == 1 ? out0 : c->scratch;
    float* d1 = parts == 1 ? out1 : c->scratch + parts * n;
    VP_REQUIRE((n + 31) / 32 <= 0x7fffffff, VP_ERR_SHAPE, "cuda col_reduce: %lld columns is too many", (long long)n);
    dim3 grid((unsigned)((n + 31) / 32), (unsigned)parts), block(32, 8);
    switch (mode) {
    case VP_CUDA_COL_SUM:
        col_partials_kernel<VP_CUDA_COL_SUM><<<grid, block, 0, c->stream>>>(x, dy, mean, rstd, m, n, rows, d0, d1);
        break;
    case VP_CUDA_COL_SUMSQ:
        col_partials_kernel<VP_CUDA_COL_SUMSQ><<<grid, block, 0, c->stream>>>(x, dy, mean, rstd, m, n, rows, d0, d1);
        break;
    case VP_CUDA_COL_MAX:
        col_partials_kernel<VP_CUDA_COL_MAX><<<grid, block, 0, c->stream>>>(x, dy, mean, rstd, m, n, rows, d0, d1);
        break;
    case VP_CUDA_COL_LN:
        col_partials_kernel<VP_CUDA_COL_LN><<<grid, block, 0, c->stream>>>(x, dy, mean, rstd, m, n, rows, d0, d1);
        break;
    case VP_CUDA_COL_RMS:
        col_partials_kernel<VP_CUDA_COL_RMS><<<grid, block, 0, c->stream>>>(x, dy, mean, rstd, m, n, rows, d0, d1);
        break;
    default: VP_FAIL(VP_ERR_INVALID_ARG, "cuda col_reduce: bad mode %d", (int)mode);
    }
    VP_CUDA_CHECK_LAUNCH("col_partials_kernel");
    if (parts == 1) return VP_OK;
    const int is_max = mode == VP_CUDA_COL_MAX;
    const dim3 g((unsigned)((n + 31) / 32)), cb(32, 32);
    col_combine_kernel<<<g, cb, 0, c->stream>>>(d0, parts, n, is_max, out0);
    VP_CUDA_CHECK_LAUNCH("col_combine_kernel");
    if (nout == 2) {
        col_combine_kernel<<<g, cb, 0, c->stream>>>(d1, parts, n, 0, out1);
        VP_CUDA_CHECK_LAUNCH("col_combine_kernel");
    }
    return VP_OK;
}

vp_status vp_cuda_reduce_cols(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    VP_REQUIRE(vp_tensor_numel(out) == n, VP_ERR_SHAPE, "cuda reduce_cols: out has %lld elements for %lld columns",
               (long long)vp_tensor_numel(out), (long long)n);
    const vp_cuda_col_mode mode =
        op == VP_REDUCE_SUM ? VP_CUDA_COL_SUM : op == VP_REDUCE_SUMSQ ? VP_CUDA_COL_SUMSQ : VP_CUDA_COL_MAX;
    return vp_cuda_col_reduce(b, mode, (const float*)x->data, NULL, NULL, NULL, m, n, (float*)out->data, NULL);
}

/* Both passes of a whole-buffer reduction; `coef` non-NULL finishes it as a clip at max_norm
 * (max_norm_at[0] instead when that is not NULL). */
static vp_status reduce_all_impl(vp_backend* b, vp_reduce_op op, const float* x, int64_t n, float* out, float* coef,
                                 float max_norm, const float* max_norm_at) {
    vp_cuda* c = vp_cuda_of(b);
    /* fixed partition: the block count depends on n only */
    int64_t parts = (n + 4 * VP_CUDA_THREADS - 1) / (4 * VP_CUDA_THREADS);
    if (parts > VP_CUDA_REDUCE_PARTS) parts = VP_CUDA_REDUCE_PARTS;
    const int vec = ((uintptr_t)x & 15u) == 0;
    all_partials_kernel<<<(unsigned)parts, VP_CUDA_THREADS, 0, c->stream>>>((int)op, x, n, vec, c->scratch);
    VP_CUDA_CHECK_LAUNCH("all_partials_kernel");
    all_finish_kernel<<<1, VP_CUDA_THREADS, 0, c->stream>>>(c->scratch, (int)parts, op == VP_REDUCE_MAX, out, coef,
                                                            max_norm, max_norm_at);
    VP_CUDA_CHECK_LAUNCH("all_finish_kernel");
    return VP_OK;
}

vp_status vp_cuda_reduce_all(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    return reduce_all_impl(b, op, (const float*)x->data, vp_tensor_numel(x), (float*)out->data, NULL, 0.0f, NULL);
}

vp_status vp_cuda_norm_and_clip(vp_backend* b, const float* x, int64_t n, float max_norm, const float* max_norm_at,
                                float* norm, float* coef) {
    VP_REQUIRE(x && norm && coef && n >= 1, VP_ERR_INVALID_ARG, "cuda norm_and_clip: missing pointer or empty x");
    return reduce_all_impl(b, VP_REDUCE_SUMSQ, x, n, norm, coef, max_norm, max_norm_at);
}
