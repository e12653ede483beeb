/* Naive double-precision references of the ops, random inputs and comparisons, shared by
 * the op tests. Plain arrays only (no backend), so any test program can use them. */
#ifndef VP_OPS_REF_H
#define VP_OPS_REF_H

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vulpes/ops.h"
#include "vulpes/rng.h"

/* ---- inputs -------------------------------------------------------------------------- */

/* x[i] = uniform in [lo, hi) from (seed, stream, i). */
static inline void ref_fill_uniform(float* x, int64_t n, uint64_t seed, uint64_t stream, float lo, float hi) {
    for (int64_t i = 0; i < n; ++i) x[i] = lo + (hi - lo) * vp_rng_uniform(seed, stream, (uint64_t)i);
}

/* malloc'd float buffer of n elements, every element NaN (to see unwritten outputs). */
static inline float* ref_nan_buffer(int64_t n) {
    float* p = (float*)malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    for (int64_t i = 0; i < n; ++i) p[i] = NAN;
    return p;
}

/* malloc'd double buffer of n zeros. */
static inline double* ref_dbuf(int64_t n) { return (double*)calloc((size_t)(n > 0 ? n : 1), sizeof(double)); }

/* ---- bf16, decided by comparing the two neighbours (independent of the bit trick) ---- */

/* bf16 bits of x rounded to nearest, ties to the even mantissa; NaN gives a NaN. */
static inline uint16_t ref_f32_to_bf16(float x) {
    uint32_t u;
    memcpy(&u, &x, 4);
    if (isnan(x)) return (uint16_t)(0x7fc0u | ((u >> 16) & 0x8000u));
    if (isinf(x)) return (uint16_t)(u >> 16);
    /* lo: truncated toward zero; hi: one bf16 step further out (2^128 past the largest) */
    uint32_t lo = u & 0xffff0000u, hi = lo + 0x10000u;
    float flo;
    memcpy(&flo, &lo, 4);
    double vlo = fabs((double)flo), vhi;
    if ((hi & 0x7f800000u) == 0x7f800000u) {
        vhi = ldexp(1.0, 128);
    } else {
        float fhi;
        memcpy(&fhi, &hi, 4);
        vhi = fabs((double)fhi);
    }
    double ax = fabs((double)x), dlo = ax - vlo, dhi = vhi - ax;
    if (dlo < dhi) return (uint16_t)(lo >> 16);
    if (dhi < dlo) return (uint16_t)(hi >> 16);
    return ((lo >> 16) & 1u) ? (uint16_t)(hi >> 16) : (uint16_t)(lo >> 16);
}

/* The float value of bf16 bits. */
static inline float ref_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* ---- GEMM -------------------------------------------------------------------------------- */

/* One product in double: ref[i,j] = alpha * sum_p op(A)[i,p] op(B)[p,j] + beta * C0[i,j]
 * (C0 ignored when beta == 0), then the epilogue; absscale[i,j] receives
 * |alpha| sum_p |op(A) op(B)| + |beta C0| + |bias| for the error bound. A, B as stored. */
static inline void ref_gemm_one(int ta, int tb, int64_t m, int64_t n, int64_t k, double alpha, const double* A,
                                const double* B, double beta, const float* C0, vp_epilogue epi, const float* bias,
                                double* ref, double* absscale) {
    for (int64_t i = 0; i < m; ++i) {
        for (int64_t j = 0; j < n; ++j) {
            double acc = 0.0, aacc = 0.0;
            for (int64_t p = 0; p < k; ++p) {
                double a = ta ? A[p * m + i] : A[i * k + p];
                double bv = tb ? B[j * k + p] : B[p * n + j];
                acc += a * bv;
                aacc += fabs(a * bv);
            }
            double v = alpha * acc, s = fabs(alpha) * aacc;
            if (beta != 0.0) {
                v += beta * (double)C0[i * n + j];
                s += fabs(beta * (double)C0[i * n + j]);
            }
            if (epi != VP_EPI_NONE) {
                v += (double)bias[j];
                s += fabs((double)bias[j]);
                if (epi == VP_EPI_BIAS_RELU && v < 0.0) v = 0.0;
            }
            ref[i * n + j] = v;
            absscale[i * n + j] = s;
        }
    }
}

/* ---- element-wise ------------------------------------------------------------------------- */

/* f(x) in double with the same conventions as the ops (softplus linear above 20). */
static inline double ref_unary(vp_unary_op op, double x) {
    switch (op) {
    case VP_UNARY_RELU: return x > 0.0 ? x : 0.0;
    case VP_UNARY_SILU: return x / (1.0 + exp(-x));
    case VP_UNARY_SOFTPLUS: return x > 20.0 ? x : log1p(exp(x));
    case VP_UNARY_SIGMOID: return 1.0 / (1.0 + exp(-x));
    case VP_UNARY_EXP: return exp(x);
    case VP_UNARY_TANH: return tanh(x);
    case VP_UNARY_GELU: return 0.5 * x * erfc(-x / sqrt(2.0));
    default: return NAN;
    }
}

/* ---- rows: softmax and norms ------------------------------------------------------------------ */

/* y = softmax(x) or log_softmax(x) of one row of n, in double. */
static inline void ref_softmax_row(const double* x, int64_t n, int is_log, double* y) {
    double mx = -INFINITY, s = 0.0;
    for (int64_t j = 0; j < n; ++j) mx = x[j] > mx ? x[j] : mx;
    for (int64_t j = 0; j < n; ++j) s += exp(x[j] - mx);
    for (int64_t j = 0; j < n; ++j) y[j] = is_log ? x[j] - mx - log(s) : exp(x[j] - mx) / s;
}

/* LayerNorm of x [m, n] in double; mean, rstd [m] may be NULL. */
static inline void ref_layernorm(const double* x, const double* g, const double* be, double eps, int64_t m,
                                 int64_t n, double* y, double* mean, double* rstd) {
    for (int64_t i = 0; i < m; ++i) {
        const double* xr = x + i * n;
        double mu = 0.0, var = 0.0;
        for (int64_t j = 0; j < n; ++j) mu += xr[j];
        mu /= (double)n;
        for (int64_t j = 0; j < n; ++j) var += (xr[j] - mu) * (xr[j] - mu);
        double rs = 1.0 / sqrt(var / (double)n + eps);
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = (xr[j] - mu) * rs * g[j] + be[j];
        if (mean) mean[i] = mu;
        if (rstd) rstd[i] = rs;
    }
}

/* RMSNorm of x [m, n] in double; rstd [m] may be NULL. */
static inline void ref_rmsnorm(const double* x, const double* g, double eps, int64_t m, int64_t n, double* y,
                               double* rstd) {
    for (int64_t i = 0; i < m; ++i) {
        const double* xr = x + i * n;
        double ss = 0.0;
        for (int64_t j = 0; j < n; ++j) ss += xr[j] * xr[j];
        double rs = 1.0 / sqrt(ss / (double)n + eps);
        for (int64_t j = 0; j < n; ++j) y[i * n + j] = xr[j] * rs * g[j];
        if (rstd) rstd[i] = rs;
    }
}

/* ---- comparisons ----------------------------------------------------------------------------- */

/* ||got - ref|| / ||ref|| (ref all zero: ||got||); NaN anywhere in got gives +inf. */
static inline double ref_rel_err(const float* got, const double* ref, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(got[i])) return INFINITY;
        double d = (double)got[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Index of the first i with |got - ref| > atol + rtol |ref| (or got NaN), else -1. */
static inline int64_t ref_first_bad(const float* got, const double* ref, int64_t n, double atol, double rtol) {
    for (int64_t i = 0; i < n; ++i)
        if (isnan(got[i]) || fabs((double)got[i] - ref[i]) > atol + rtol * fabs(ref[i])) return i;
    return -1;
}

/* Double copy of a float array. */
static inline void ref_to_double(const float* x, int64_t n, double* out) {
    for (int64_t i = 0; i < n; ++i) out[i] = (double)x[i];
}

/* ---- attention --------------------------------------------------------------------------------- */

/* Scaled dot-product attention in double with the layout of vp_attention: q [B, Lq, NH * D],
 * k, v [B, Lk, NH * D], out [B, Lq, NH * D], lse [B, NH, Lq] (lse may be NULL). Each row's
 * softmax subtracts its maximum logit; the causal mask drops keys j > i. */
static inline void ref_attention(const vp_attn_desc* d, const double* q, const double* k, const double* v,
                                 double* out, double* lse) {
    const int64_t row = (int64_t)d->heads * d->dim;
    double s[VP_ATTN_MAX_LEN];
    for (int64_t b = 0; b < d->batch; ++b)
        for (int h = 0; h < d->heads; ++h)
            for (int i = 0; i < d->lq; ++i) {
                const double* qi = q + (b * d->lq + i) * row + (int64_t)h * d->dim;
                const int nk = d->causal ? i + 1 : d->lk;
                double mx = -INFINITY, sum = 0.0;
                for (int j = 0; j < nk; ++j) {
                    const double* kj = k + (b * d->lk + j) * row + (int64_t)h * d->dim;
                    double dot = 0.0;
                    for (int c = 0; c < d->dim; ++c) dot += qi[c] * kj[c];
                    s[j] = (double)d->scale * dot;
                    mx = s[j] > mx ? s[j] : mx;
                }
                for (int j = 0; j < nk; ++j) sum += exp(s[j] - mx);
                double* oi = out + (b * d->lq + i) * row + (int64_t)h * d->dim;
                for (int c = 0; c < d->dim; ++c) {
                    double acc = 0.0;
                    for (int j = 0; j < nk; ++j) acc += exp(s[j] - mx) * v[(b * d->lk + j) * row + (int64_t)h * d->dim + c];
                    oi[c] = acc / sum;
                }
                if (lse) lse[(b * d->heads + h) * d->lq + i] = mx + log(sum);
            }
}

#endif /* VP_OPS_REF_H */
