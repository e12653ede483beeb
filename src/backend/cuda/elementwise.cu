/* CUDA element-wise ops: kernels, then launchers. Each kernel is a grid-stride loop with
 * 16-byte loads and stores over the body when every pointer is 16-byte aligned. */
#include "elementwise.cuh"

/* ---- the functions (PyTorch's definitions) ------------------------------------------------ */

/* 1 / (1 + exp(-x)) without overflow for large |x|. */
__device__ __forceinline__ float sigmoidf_(float x) {
    if (x >= 0.0f) return 1.0f / (1.0f + expf(-x));
    const float e = expf(x);
    return e / (1.0f + e);
}

/* sigmoid'(x) = e / (1 + e)^2 with e = exp(-|x|): no cancellation. */
__device__ __forceinline__ float sigmoid_grad_(float x) {
    const float e = expf(-fabsf(x));
    return e / ((1.0f + e) * (1.0f + e));
}

/* tanh'(x) = 4 e / (1 + e)^2 with e = exp(-2|x|): no cancellation at large |x|. */
__device__ __forceinline__ float tanh_grad_(float x) {
    const float e = expf(-2.0f * fabsf(x));
    return 4.0f * e / ((1.0f + e) * (1.0f + e));
}

/* f(x); NaN in, NaN out. */
template <int OP>
__device__ __forceinline__ float unary_f(float x) {
    if (OP == VP_UNARY_RELU) return x < 0.0f ? 0.0f : x;
    if (OP == VP_UNARY_SILU) return x * sigmoidf_(x);
    if (OP == VP_UNARY_SOFTPLUS) return x > 20.0f ? x : log1pf(expf(x));
    if (OP == VP_UNARY_SIGMOID) return sigmoidf_(x);
    if (OP == VP_UNARY_EXP) return expf(x);
    if (OP == VP_UNARY_GELU) return 0.5f * x * erfcf(-x * 0.70710678118654752f);
    return tanhf(x);
}

/* dy * f'(x). */
template <int OP>
__device__ __forceinline__ float unary_df(float x, float dy) {
    if (OP == VP_UNARY_RELU) return x > 0.0f ? dy : 0.0f;
    if (OP == VP_UNARY_SILU) return dy * (sigmoidf_(x) + x * sigmoid_grad_(x));
    if (OP == VP_UNARY_SOFTPLUS) return x > 20.0f ? dy : dy * sigmoidf_(x);
    if (OP == VP_UNARY_SIGMOID) return dy * sigmoid_grad_(x);
    if (OP == VP_UNARY_EXP) return dy * expf(x);
    if (OP == VP_UNARY_GELU)
        return dy * (0.5f * erfcf(-x * 0.70710678118654752f) + x * 0.39894228040143268f * expf(-0.5f * x * x));
    return dy * tanh_grad_(x);
}

/* ---- kernels ------------------------------------------------------------------------------ */

/* y = f(x): float4 groups over the aligned body, then the scalar tail (y may alias x). */
template <int OP>
__global__ void unary_kernel(const float* x, float* y, int64_t n, int vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    for (int64_t i = i0; i < body; i += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        v.x = unary_f<OP>(v.x), v.y = unary_f<OP>(v.y), v.z = unary_f<OP>(v.z), v.w = unary_f<OP>(v.w);
        reinterpret_cast<float4*>(y)[i] = v;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride) y[i] = unary_f<OP>(x[i]);
}

/* dx = dy * f'(x) (dx may alias dy). */
template <int OP>
__global__ void unary_backward_kernel(const float* x, const float* dy, float* dx, int64_t n, int vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    for (int64_t i = i0; i < body; i += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        float4 g = reinterpret_cast<const float4*>(dy)[i];
        g.x = unary_df<OP>(v.x, g.x), g.y = unary_df<OP>(v.y, g.y);
        g.z = unary_df<OP>(v.z, g.z), g.w = unary_df<OP>(v.w, g.w);
        reinterpret_cast<float4*>(dx)[i] = g;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride) dx[i] = unary_df<OP>(x[i], dy[i]);
}

template <int OP>
__device__ __forceinline__ float binary_f(float a, float b) {
    if (OP == VP_BINARY_ADD) return a + b;
    if (OP == VP_BINARY_SUB) return a - b;
    return a * b;
}

/* c[i] = a[i] op b[i % nb] (nb = n: no broadcast; nb = cols: one row broadcast). */
template <int OP>
__global__ void binary_kernel(const float* a, const float* __restrict__ bb, float* c, int64_t n, int64_t nb,
                              int vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    for (int64_t i = i0; i < body; i += stride) {
        float4 va = reinterpret_cast<const float4*>(a)[i];
        float4 vb = reinterpret_cast<const float4*>(bb)[nb == n ? i : (i % (nb / 4))];
        va.x = binary_f<OP>(va.x, vb.x), va.y = binary_f<OP>(va.y, vb.y);
        va.z = binary_f<OP>(va.z, vb.z), va.w = binary_f<OP>(va.w, vb.w);
        reinterpret_cast<float4*>(c)[i] = va;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride) c[i] = binary_f<OP>(a[i], bb[nb == n ? i : i % nb]);
}

/* y = alpha x + beta y; y is not read when beta == 0. */
__global__ void axpby_kernel(float alpha, const float* __restrict__ x, float beta, float* y, int64_t n, int vec) {
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    const int rd = beta != 0.0f;
    for (int64_t i = i0; i < body; i += stride) {
        float4 v = reinterpret_cast<const float4*>(x)[i];
        float4 w = rd ? reinterpret_cast<const float4*>(y)[i] : make_float4(0.f, 0.f, 0.f, 0.f);
        v.x = alpha * v.x + (rd ? beta * w.x : 0.0f), v.y = alpha * v.y + (rd ? beta * w.y : 0.0f);
        v.z = alpha * v.z + (rd ? beta * w.z : 0.0f), v.w = alpha * v.w + (rd ? beta * w.w : 0.0f);
        reinterpret_cast<float4*>(y)[i] = v;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride) y[i] = alpha * x[i] + (rd ? beta * y[i] : 0.0f);
}

/* x *= s[0]. */
__global__ void scale_by_kernel(float* x, const float* __restrict__ s, int64_t n, int vec) {
    const float k = s[0];
    const int64_t stride = (int64_t)gridDim.x * blockDim.x;
    const int64_t i0 = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    const int64_t body = vec ? n / 4 : 0;
    for (int64_t i = i0; i < body; i += stride) {
        float4 v = reinterpret_cast<float4*>(x)[i];
        v.x *= k, v.y *= k, v.z *= k, v.w *= k;
        reinterpret_cast<float4*>(x)[i] = v;
    }
    for (int64_t i = body * 4 + i0; i < n; i += stride) x[i] *= k;
}

/* ---- launchers ------------------------------------------------------------------------------ */

/* Blocks for n elements, four per thread over the vector body. */
static unsigned ew_grid(int64_t n, int vec) { return vp_cuda_grid(vec ? (n + 3) / 4 : n, VP_CUDA_THREADS); }

vp_status vp_cuda_unary(vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y) {
    const int64_t n = vp_tensor_numel(x);
    const float* xp = (const float*)x->data;
    float* yp = (float*)y->data;
    const int vec = vp_cuda_aligned16(xp, yp, NULL);
    const unsigned g = ew_grid(n, vec);
    cudaStream_t st = vp_cuda_of(b)->stream;
    switch (op) {
    case VP_UNARY_RELU: unary_kernel<VP_UNARY_RELU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_SILU: unary_kernel<VP_UNARY_SILU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_SOFTPLUS: unary_kernel<VP_UNARY_SOFTPLUS><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_SIGMOID: unary_kernel<VP_UNARY_SIGMOID><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_EXP: unary_kernel<VP_UNARY_EXP><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_TANH: unary_kernel<VP_UNARY_TANH><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    case VP_UNARY_GELU: unary_kernel<VP_UNARY_GELU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, yp, n, vec); break;
    default: VP_FAIL(VP_ERR_INVALID_ARG, "cuda unary: bad op %d", (int)op);
    }
    VP_CUDA_CHECK_LAUNCH("unary_kernel");
    return VP_OK;
}

vp_status vp_cuda_unary_backward(vp_backend* b, vp_unary_op op, const vp_tensor* x, const vp_tensor* dy,
                                 vp_tensor* dx) {
    const int64_t n = vp_tensor_numel(x);
    const float* xp = (const float*)x->data;
    const float* gp = (const float*)dy->data;
    float* dp = (float*)dx->data;
    const int vec = vp_cuda_aligned16(xp, gp, dp);
    const unsigned g = ew_grid(n, vec);
    cudaStream_t st = vp_cuda_of(b)->stream;
    switch (op) {
    case VP_UNARY_RELU: unary_backward_kernel<VP_UNARY_RELU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec); break;
    case VP_UNARY_SILU: unary_backward_kernel<VP_UNARY_SILU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec); break;
    case VP_UNARY_SOFTPLUS:
        unary_backward_kernel<VP_UNARY_SOFTPLUS><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec);
        break;
    case VP_UNARY_SIGMOID:
        unary_backward_kernel<VP_UNARY_SIGMOID><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec);
        break;
    case VP_UNARY_EXP: unary_backward_kernel<VP_UNARY_EXP><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec); break;
    case VP_UNARY_TANH: unary_backward_kernel<VP_UNARY_TANH><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec); break;
    case VP_UNARY_GELU: unary_backward_kernel<VP_UNARY_GELU><<<g, VP_CUDA_THREADS, 0, st>>>(xp, gp, dp, n, vec); break;
    default: VP_FAIL(VP_ERR_INVALID_ARG, "cuda unary_backward: bad op %d", (int)op);
    }
    VP_CUDA_CHECK_LAUNCH("unary_backward_kernel");
    return VP_OK;
}

vp_status vp_cuda_binary(vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c) {
    const int64_t n = vp_tensor_numel(a);
    const int64_t nb = vp_tensor_numel(bb);
    VP_REQUIRE(nb == n || nb == vp_tensor_cols(a), VP_ERR_SHAPE, "cuda binary: b has %lld elements for a of %lld",
               (long long)nb, (long long)n);
    const float* ap = (const float*)a->data;
    const float* bp = (const float*)bb->data;
    float* cp = (float*)c->data;
    /* the vector body needs whole float4 rows when b is broadcast */
    const int vec = vp_cuda_aligned16(ap, bp, cp) && (nb == n || nb % 4 == 0);
    const unsigned g = ew_grid(n, vec);
    cudaStream_t st = vp_cuda_of(b)->stream;
    switch (op) {
    case VP_BINARY_ADD: binary_kernel<VP_BINARY_ADD><<<g, VP_CUDA_THREADS, 0, st>>>(ap, bp, cp, n, nb, vec); break;
    case VP_BINARY_SUB: binary_kernel<VP_BINARY_SUB><<<g, VP_CUDA_THREADS, 0, st>>>(ap, bp, cp, n, nb, vec); break;
    case VP_BINARY_MUL: binary_kernel<VP_BINARY_MUL><<<g, VP_CUDA_THREADS, 0, st>>>(ap, bp, cp, n, nb, vec); break;
    default: VP_FAIL(VP_ERR_INVALID_ARG, "cuda binary: bad op %d", (int)op);
    }
    VP_CUDA_CHECK_LAUNCH("binary_kernel");
    return VP_OK;
}

vp_status vp_cuda_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y) {
    const int64_t n = vp_tensor_numel(x);
    const int vec = vp_cuda_aligned16(x->data, y->data, NULL);
    axpby_kernel<<<ew_grid(n, vec), VP_CUDA_THREADS, 0, vp_cuda_of(b)->stream>>>(alpha, (const float*)x->data, beta,
                                                                                (float*)y->data, n, vec);
    VP_CUDA_CHECK_LAUNCH("axpby_kernel");
    return VP_OK;
}

vp_status vp_cuda_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s) {
    const int64_t n = vp_tensor_numel(x);
    const int vec = vp_cuda_aligned16(x->data, NULL, NULL);
    scale_by_kernel<<<ew_grid(n, vec), VP_CUDA_THREADS, 0, vp_cuda_of(b)->stream>>>(
        (float*)x->data, (const float*)s->data, n, vec);
    VP_CUDA_CHECK_LAUNCH("scale_by_kernel");
    return VP_OK;
}
