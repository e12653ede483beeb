/* The public ops: check every argument, then call the backend's table. */
#include <math.h>
#include <string.h>

#include "backend_impl.h"
#include "kit.h"
#include "ops_check.h"

/* ---- fill / copy / convert ---------------------------------------------------------- */

vp_status vp_fill(vp_backend* b, vp_tensor* x, float value) {
    CHECK_B();
    CHECK_T(x, VP_F32);
    return b->ops->fill(b, x, value);
}

vp_status vp_fill_i32(vp_backend* b, vp_tensor* x, int32_t value) {
    CHECK_B();
    CHECK_T(x, VP_I32);
    return b->ops->fill_i32(b, x, value);
}

vp_status vp_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    CHECK_B();
    VP_REQUIRE(src != NULL, VP_ERR_INVALID_ARG, "vp_copy: src is NULL");
    CHECK_T(src, src->dtype);
    CHECK_LIKE(src, dst);
    return b->ops->copy(b, src, dst);
}

vp_status vp_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    CHECK_B();
    VP_REQUIRE(src != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_convert: src or dst is NULL");
    VP_REQUIRE((src->dtype == VP_F32 && dst->dtype == VP_BF16) || (src->dtype == VP_BF16 && dst->dtype == VP_F32),
               VP_ERR_INVALID_ARG, "vp_convert: %s -> %s is not supported (f32 <-> bf16 only)",
               vp_dtype_name(src->dtype), vp_dtype_name(dst->dtype));
    CHECK_T(src, src->dtype);
    CHECK_T(dst, dst->dtype);
    VP_TRY(vp_tensor_check_same_numel(__func__, "src", src, "dst", dst));
    return b->ops->convert(b, src, dst);
}

/* ---- GEMM ---------------------------------------------------------------------------- */

vp_gemm_desc vp_gemm_plain(int trans_a, int trans_b, int64_t m, int64_t n, int64_t k) {
    vp_gemm_desc d;
    memset(&d, 0, sizeof d);
    d.trans_a = trans_a;
    d.trans_b = trans_b;
    d.m = m;
    d.n = n;
    d.k = k;
    d.batch = 1;
    d.alpha = 1.0f;
    d.beta = 0.0f;
    d.epilogue = VP_EPI_NONE;
    d.precision = VP_PREC_TF32;
    return d;
}

/* Fails unless operand t of vp_gemm holds the elements a strided batch of [rows, cols]
 * matrices touches: (batch - 1) * stride + rows * cols. */
static vp_status check_span(const char* arg, const vp_tensor* t, int64_t batch, int64_t stride, int64_t rows,
                            int64_t cols) {
    char ds[96];
    VP_REQUIRE(vp_tensor_numel(t) >= (batch - 1) * stride + rows * cols, VP_ERR_SHAPE,
               "vp_gemm: %s %s is smaller than batch %lld x [%lld, %lld] with stride %lld", arg,
               vp_tensor_describe(t, ds, sizeof ds), (long long)batch, (long long)rows, (long long)cols,
               (long long)stride);
    return VP_OK;
}

vp_status vp_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                  const vp_tensor* bias, vp_tensor* C) {
    CHECK_B();
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "vp_gemm: descriptor is NULL");
    VP_REQUIRE(d->m >= 1 && d->n >= 1 && d->k >= 1 && d->batch >= 1, VP_ERR_SHAPE,
               "vp_gemm: m=%lld n=%lld k=%lld batch=%lld must all be >= 1", (long long)d->m, (long long)d->n,
               (long long)d->k, (long long)d->batch);
    VP_REQUIRE(d->stride_a >= 0 && d->stride_b >= 0 && d->stride_c >= 0 && d->stride_bias >= 0, VP_ERR_SHAPE,
               "vp_gemm: negative stride");
    VP_REQUIRE(d->batch == 1 || d->stride_c >= d->m * d->n, VP_ERR_SHAPE,
               "vp_gemm: stride_c %lld < m*n %lld makes batches of C overlap", (long long)d->stride_c,
               (long long)(d->m * d->n));
    CHECK_ENUM(d->epilogue, VP_EPI_COUNT, "epilogue");
    CHECK_ENUM(d->precision, VP_PREC_COUNT, "precision");
    vp_dtype ab = d->precision == VP_PREC_BF16 ? VP_BF16 : VP_F32;
    CHECK_T(A, ab);
    CHECK_T(B, ab);
    CHECK_T(C, VP_F32);
    VP_TRY(check_span("A", A, d->batch, d->stride_a, d->m, d->k));
    VP_TRY(check_span("B", B, d->batch, d->stride_b, d->k, d->n));
    VP_TRY(check_span("C", C, d->batch, d->stride_c, d->m, d->n));
    if (d->epilogue != VP_EPI_NONE && d->batch > 1 && d->stride_bias > 0) {
        VP_TRY(vp_tensor_check(__func__, "bias", b, bias, VP_F32));
        VP_TRY(check_span("bias", bias, d->batch, d->stride_bias, 1, d->n));
    } else if (d->epilogue != VP_EPI_NONE) {
        CHECK_T_NUMEL(bias, VP_F32, d->n);
    }
    return b->ops->gemm(b, d, A, B, bias, C);
}

/* ---- element-wise ----------------------------------------------------------------------- */

vp_status vp_unary(vp_backend* b, vp_unary_op uop, const vp_tensor* x, vp_tensor* y) {
    CHECK_B();
    CHECK_ENUM(uop, VP_UNARY_COUNT, "op");
    CHECK_T(x, VP_F32);
    CHECK_LIKE(x, y);
    return b->ops->unary(b, uop, x, y);
}

vp_status vp_unary_backward(vp_backend* b, vp_unary_op uop, const vp_tensor* x, const vp_tensor* dy, vp_tensor* dx) {
    CHECK_B();
    CHECK_ENUM(uop, VP_UNARY_COUNT, "op");
    CHECK_T(x, VP_F32);
    CHECK_LIKE(x, dy);
    CHECK_LIKE(x, dx);
    return b->ops->unary_backward(b, uop, x, dy, dx);
}

vp_status vp_binary(vp_backend* b, vp_binary_op bop, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c) {
    CHECK_B();
    CHECK_ENUM(bop, VP_BINARY_COUNT, "op");
    CHECK_T(a, VP_F32);
    CHECK_T(bb, VP_F32);
    char da[96], db[96];
    VP_REQUIRE(vp_tensor_numel(bb) == vp_tensor_numel(a) || vp_tensor_numel(bb) == vp_tensor_cols(a), VP_ERR_SHAPE,
               "vp_binary: b %s neither matches a %s nor broadcasts over its rows", vp_tensor_describe(bb, db, sizeof db),
               vp_tensor_describe(a, da, sizeof da));
    CHECK_LIKE(a, c);
    return b->ops->binary(b, bop, a, bb, c);
}

vp_status vp_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y) {
    CHECK_B();
    CHECK_T(x, VP_F32);
    CHECK_LIKE(x, y);
    return b->ops->axpby(b, alpha, x, beta, y);
}

vp_status vp_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s) {
    CHECK_B();
    CHECK_T(x, VP_F32);
    CHECK_T_NUMEL(s, VP_F32, 1);
    return b->ops->scale_by(b, x, s);
}

/* ---- softmax ------------------------------------------------------------------------------ */

/* x [m, n] f32, y like x. */
static vp_status check_softmax(const char* op, vp_backend* b, const vp_tensor* x, vp_tensor* y) {
    VP_TRY(check_b(op, b));
    VP_TRY(vp_tensor_check(op, "x", b, x, VP_F32));
    return check_like(op, b, "x", x, "y", y);
}

vp_status vp_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y) {
    VP_TRY(check_softmax(__func__, b, x, y));
    return b->ops->softmax(b, x, y, 0);
}

vp_status vp_log_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y) {
    VP_TRY(check_softmax(__func__, b, x, y));
    return b->ops->softmax(b, x, y, 1);
}

/* y [m, n] f32; dy and dx like y. */
static vp_status check_softmax_bwd(const char* op, vp_backend* b, const vp_tensor* y, const vp_tensor* dy,
                                   vp_tensor* dx) {
    VP_TRY(check_b(op, b));
    VP_TRY(vp_tensor_check(op, "y", b, y, VP_F32));
    VP_TRY(check_like(op, b, "y", y, "dy", dy));
    return check_like(op, b, "y", y, "dx", dx);
}

vp_status vp_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx) {
    VP_TRY(check_softmax_bwd(__func__, b, y, dy, dx));
    return b->ops->softmax_backward(b, y, dy, dx, 0);
}

vp_status vp_log_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx) {
    VP_TRY(check_softmax_bwd(__func__, b, y, dy, dx));
    return b->ops->softmax_backward(b, y, dy, dx, 1);
}

/* ---- normalisation ------------------------------------------------------------------------- */

/* x [m, n] f32 with y (the output, or dx) and dy (backward only, else NULL) like x, then
 * per-column vectors cols[] of n and per-row vectors rows[] of m, as many as the
 * NULL-terminated names[]; `eps` (forward only) must be positive. */
static vp_status check_norm(const char* op, const vp_backend* b, float eps, const vp_tensor* x, const vp_tensor* y,
                            const vp_tensor* dy, const vp_tensor* const* cols, const char* const* col_names,
                            const vp_tensor* const* rows, const char* const* row_names) {
    VP_TRY(check_b(op, b));
    if (!dy) VP_REQUIRE(eps > 0.0f && isfinite(eps), VP_ERR_INVALID_ARG, "%s: eps %g must be positive", op, (double)eps);
    VP_TRY(vp_tensor_check(op, "x", b, x, VP_F32));
    VP_TRY(check_like(op, b, "x", x, dy ? "dx" : "y", y));
    for (int i = 0; col_names[i]; ++i)
        VP_TRY(vp_tensor_check_numel(op, col_names[i], b, cols[i], VP_F32, vp_tensor_cols(x)));
    for (int i = 0; row_names[i]; ++i)
        VP_TRY(vp_tensor_check_numel(op, row_names[i], b, rows[i], VP_F32, vp_tensor_rows(x)));
    if (dy) VP_TRY(check_like(op, b, "x", x, "dy", dy));
    return VP_OK;
}

/* vp_layernorm and vp_layernorm_relu: checks, then the backend's kernel. */
static vp_status layernorm(const char* fn, vp_backend* b, const vp_tensor* x, const vp_tensor* gamma,
                           const vp_tensor* beta, float eps, int relu, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    const vp_tensor* cols[] = {gamma, beta};
    const char* cn[] = {"gamma", "beta", NULL};
    const vp_tensor* rows[] = {mean, rstd};
    const char* rn[] = {"mean", "rstd", NULL};
    VP_TRY(check_norm(fn, b, eps, x, y, NULL, cols, cn, rows, rn));
    return b->ops->layernorm(b, x, gamma, beta, eps, relu, y, mean, rstd);
}

vp_status vp_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta, float eps,
                       vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    return layernorm(__func__, b, x, gamma, beta, eps, 0, y, mean, rstd);
}

vp_status vp_layernorm_relu(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,
                            float eps, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    return layernorm(__func__, b, x, gamma, beta, eps, 1, y, mean, rstd);
}

vp_status vp_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,
                                vp_tensor* dbeta) {
    const vp_tensor* cols[] = {gamma, dgamma, dbeta};
    const char* cn[] = {"gamma", "dgamma", "dbeta", NULL};
    const vp_tensor* rows[] = {mean, rstd};
    const char* rn[] = {"mean", "rstd", NULL};
    VP_TRY(check_norm(__func__, b, 0.0f, x, dx, dy, cols, cn, rows, rn));
    return b->ops->layernorm_backward(b, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

vp_status vp_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                     vp_tensor* rstd) {
    const vp_tensor* cols[] = {gamma};
    const char* cn[] = {"gamma", NULL};
    const vp_tensor* rows[] = {rstd};
    const char* rn[] = {"rstd", NULL};
    VP_TRY(check_norm(__func__, b, eps, x, y, NULL, cols, cn, rows, rn));
    return b->ops->rmsnorm(b, x, gamma, eps, y, rstd);
}

vp_status vp_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                              const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma) {
    const vp_tensor* cols[] = {gamma, dgamma};
    const char* cn[] = {"gamma", "dgamma", NULL};
    const vp_tensor* rows[] = {rstd};
    const char* rn[] = {"rstd", NULL};
    VP_TRY(check_norm(__func__, b, 0.0f, x, dx, dy, cols, cn, rows, rn));
    return b->ops->rmsnorm_backward(b, dy, x, gamma, rstd, dx, dgamma);
}

/* ---- reductions ------------------------------------------------------------------------------ */

/* x f32 and out f32 of n_out elements (n_out < 0: x is NULL, which vp_tensor_check reports). */
static vp_status check_reduce(const char* op, const vp_backend* b, vp_reduce_op rop, const vp_tensor* x,
                              const vp_tensor* out, int64_t n_out) {
    VP_TRY(check_b(op, b));
    VP_REQUIRE(rop >= 0 && rop < VP_REDUCE_COUNT, VP_ERR_INVALID_ARG, "%s: bad reduce op %d", op, (int)rop);
    VP_TRY(vp_tensor_check(op, "x", b, x, VP_F32));
    return vp_tensor_check_numel(op, "out", b, out, VP_F32, n_out < 0 ? 1 : n_out);
}

vp_status vp_reduce_rows(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce(__func__, b, rop, x, out, x ? vp_tensor_rows(x) : -1));
    return b->ops->reduce_rows(b, rop, x, out);
}

vp_status vp_reduce_cols(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce(__func__, b, rop, x, out, x ? vp_tensor_cols(x) : -1));
    return b->ops->reduce_cols(b, rop, x, out);
}

vp_status vp_reduce_all(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce(__func__, b, rop, x, out, 1));
    return b->ops->reduce_all(b, rop, x, out);
}

/* ---- gather -------------------------------------------------------------------------------------- */

vp_status vp_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out) {
    CHECK_B();
    CHECK_T(src, VP_F32);
    CHECK_T(idx, VP_I32);
    CHECK_T_NUMEL(out, VP_F32, vp_tensor_numel(idx) * vp_tensor_cols(src));
    return b->ops->gather_rows(b, src, idx, out);
}
