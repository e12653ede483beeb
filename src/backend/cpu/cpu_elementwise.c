/* Element-wise ops on the CPU: fill, copy, f32 <-> bf16, unary functions and their
 * derivatives (their exponentials cpu_exp.h's), binary ops with row broadcast, axpby and
 * scaling by a stored scalar. */
#include <math.h>

#include "cpu_exp.h"
#include "cpu_impl.h"

/* ---- fill / copy / convert ---------------------------------------------------------- */

vp_status vp_cpu_fill(vp_backend* b, vp_tensor* x, float value) {
    (void)b;
    float* p = (float*)x->data; /* [numel] */
    const int64_t n = vp_tensor_numel(x);
    for (int64_t i = 0; i < n; ++i) p[i] = value;
    return VP_OK;
}

vp_status vp_cpu_fill_i32(vp_backend* b, vp_tensor* x, int32_t value) {
    (void)b;
    int32_t* p = (int32_t*)x->data; /* [numel] */
    const int64_t n = vp_tensor_numel(x);
    for (int64_t i = 0; i < n; ++i) p[i] = value;
    return VP_OK;
}

vp_status vp_cpu_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    (void)b;
    if (src->data != dst->data) memmove(dst->data, src->data, vp_tensor_bytes(src));
    return VP_OK;
}

vp_status vp_cpu_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    (void)b;
    const int64_t n = vp_tensor_numel(src);
    if (src->dtype == VP_F32) {
        /* f32 -> bf16, round to nearest even */
        const float* s = (const float*)src->data; /* [numel] */
        uint16_t* d = (uint16_t*)dst->data;       /* [numel] */
        for (int64_t i = 0; i < n; ++i) d[i] = vp_cpu_f32_to_bf16(s[i]);
    } else {
        /* bf16 -> f32, exact */
        const uint16_t* s = (const uint16_t*)src->data;
        float* d = (float*)dst->data;
        for (int64_t i = 0; i < n; ++i) d[i] = vp_cpu_bf16_to_f32(s[i]);
    }
    return VP_OK;
}

/* ---- unary functions --------------------------------------------------------------------- */

/* 1 / (1 + exp(-x)) without overflow for large |x| (cpu_exp.h). */
static inline float sigmoid_f(float x) { return vp_cpu_sigmoid(x); }

/* log(1 + exp(x)); x itself above 20 (PyTorch's threshold), log1p for the rest. */
static inline float softplus_f(float x) { return x > 20.0f ? x : log1pf(vp_cpu_expf(x)); }

/* f(x) for one element. NaN inputs give NaN outputs. */
static inline float unary_f(vp_unary_op op, float x) {
    switch (op) {
    case VP_UNARY_RELU: return x < 0.0f ? 0.0f : x;
    case VP_UNARY_SILU: return x * sigmoid_f(x);
    case VP_UNARY_SOFTPLUS: return softplus_f(x);
    case VP_UNARY_SIGMOID: return sigmoid_f(x);
    case VP_UNARY_EXP: return vp_cpu_expf(x);
    case VP_UNARY_TANH: return tanhf(x);
    case VP_UNARY_GELU: /* in double: the rounding of x / sqrt 2 would grow x^2-fold in the left tail */
        return (float)(0.5 * (double)x * erfc(-(double)x * 0.70710678118654752));
    default: return NAN;
    }
}

/* sigmoid(x) * (1 - sigmoid(x)) = e / (1 + e)^2 with e = exp(-|x|): no cancellation. */
static inline float sigmoid_grad_f(float x) {
    float e = vp_cpu_expf(-fabsf(x));
    return e / ((1.0f + e) * (1.0f + e));
}

/* 1 - tanh(x)^2 = 4 e / (1 + e)^2 with e = exp(-2|x|): no cancellation at large |x|. */
static inline float tanh_grad_f(float x) {
    float e = vp_cpu_expf(-2.0f * fabsf(x));
    return 4.0f * e / ((1.0f + e) * (1.0f + e));
}

/* dy * f'(x) for one element. */
static inline float unary_grad_f(vp_unary_op op, float x, float dy) {
    switch (op) {
    case VP_UNARY_RELU: return x > 0.0f ? dy : 0.0f;
    case VP_UNARY_SILU: return dy * (sigmoid_f(x) + x * sigmoid_grad_f(x)); /* s (1 + x (1 - s)) */
    case VP_UNARY_SOFTPLUS: return x > 20.0f ? dy : dy * sigmoid_f(x);
    case VP_UNARY_SIGMOID: return dy * sigmoid_grad_f(x);
    case VP_UNARY_EXP: return dy * vp_cpu_expf(x);
    case VP_UNARY_TANH: return dy * tanh_grad_f(x);
    case VP_UNARY_GELU: /* Phi(x) + x phi(x) */
        return dy * (float)(0.5 * erfc(-(double)x * 0.70710678118654752) +
                            (double)x * 0.39894228040143268 * exp(-0.5 * (double)x * (double)x));
    default: return NAN;
    }
}

vp_status vp_cpu_unary(vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y) {
    (void)b;
    const float* xp = (const float*)x->data; /* [numel] */
    float* yp = (float*)y->data;             /* [numel], may alias x */
    const int64_t n = vp_tensor_numel(x);
    // the sigmoid and SiLU rows 16 at a time (the same bits as unary_f's)
    if (op == VP_UNARY_SILU || op == VP_UNARY_SIGMOID) {
        vp_cpu_sigmoid_rows(xp, yp, n, op == VP_UNARY_SILU);
        return VP_OK;
    }
    for (int64_t i = 0; i < n; ++i) yp[i] = unary_f(op, xp[i]);
    return VP_OK;
}

vp_status vp_cpu_unary_backward(vp_backend* b, vp_unary_op op, const vp_tensor* x, const vp_tensor* dy,
                                vp_tensor* dx) {
    (void)b;
    const float* xp = (const float*)x->data;   /* [numel] */
    const float* dyp = (const float*)dy->data; /* [numel] */
    float* dxp = (float*)dx->data;             /* [numel], may alias dy */
    const int64_t n = vp_tensor_numel(x);
    for (int64_t i = 0; i < n; ++i) dxp[i] = unary_grad_f(op, xp[i], dyp[i]);
    return VP_OK;
}

/* ---- binary, axpby, scale ------------------------------------------------------------------ */

vp_status vp_cpu_binary(vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c) {
    (void)b;
    const float* ap = (const float*)a->data;  /* [rows, cols] */
    const float* bp = (const float*)bb->data; /* [rows, cols] or [cols] broadcast */
    float* cp = (float*)c->data;              /* [rows, cols], may alias a */
    const int64_t n = vp_tensor_numel(a);
    const int64_t nb = vp_tensor_numel(bb);
    const int64_t cols = nb == n ? n : nb;
    /* walk a in rows of `cols`, b restarting at each row when broadcast */
    for (int64_t r = 0; r < n; r += cols) {
        const float* br = nb == n ? bp + r : bp;
        for (int64_t j = 0; j < cols; ++j) {
            float u = ap[r + j], v = br[j];
            cp[r + j] = op == VP_BINARY_ADD ? u + v : op == VP_BINARY_SUB ? u - v : u * v;
        }
    }
    return VP_OK;
}

vp_status vp_cpu_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y) {
    (void)b;
    const float* xp = (const float*)x->data; /* [numel] */
    float* yp = (float*)y->data;             /* [numel] */
    const int64_t n = vp_tensor_numel(x);
    /* beta == 0: y is written, never read (NaN in y does not leak) */
    if (beta == 0.0f) {
        for (int64_t i = 0; i < n; ++i) yp[i] = alpha * xp[i];
    } else {
        for (int64_t i = 0; i < n; ++i) yp[i] = alpha * xp[i] + beta * yp[i];
    }
    return VP_OK;
}

vp_status vp_cpu_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s) {
    (void)b;
    float* xp = (float*)x->data;                 /* [numel] */
    const float sv = ((const float*)s->data)[0]; /* [1] */
    const int64_t n = vp_tensor_numel(x);
    for (int64_t i = 0; i < n; ++i) xp[i] *= sv;
    return VP_OK;
}
