/* The public ops: check every argument, then call the backend's table. */
#include <math.h>
#include <string.h>

#include "backend_impl.h"

/* Checks one tensor argument: present, typed, shaped and reachable by the backend. */
static vp_status check_t(const char* op, const char* arg, const vp_backend* b, const vp_tensor* t, vp_dtype dtype) {
    VP_REQUIRE(t != NULL, VP_ERR_INVALID_ARG, "%s: %s is NULL", op, arg);
    VP_REQUIRE(t->data != NULL, VP_ERR_INVALID_ARG, "%s: %s has no data (NULL pointer)", op, arg);
    VP_REQUIRE(t->ndim >= 1 && t->ndim <= VP_MAX_DIMS, VP_ERR_SHAPE, "%s: %s has ndim %d (1..%d allowed)", op, arg,
               t->ndim, VP_MAX_DIMS);
    for (int i = 0; i < t->ndim; ++i)
        VP_REQUIRE(t->shape[i] >= 1, VP_ERR_SHAPE, "%s: %s extent %d is %lld", op, arg, i, (long long)t->shape[i]);
    VP_REQUIRE(t->dtype == dtype, VP_ERR_INVALID_ARG, "%s: %s is %s, expected %s", op, arg, vp_dtype_name(t->dtype),
               vp_dtype_name(dtype));
    VP_REQUIRE(vp_backend_can_read(b, t->mem), VP_ERR_DEVICE, "%s: %s lives in %s memory, which backend %s cannot read",
               op, arg, vp_mem_name(t->mem), b->name);
    return VP_OK;
}

static vp_status check_b(const char* op, const vp_backend* b) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "%s: backend is NULL", op);
    return VP_OK;
}

static vp_status check_same_numel(const char* op, const char* an, const vp_tensor* a, const char* bn,
                                  const vp_tensor* t) {
    char da[96], db[96];
    VP_REQUIRE(vp_tensor_numel(a) == vp_tensor_numel(t), VP_ERR_SHAPE, "%s: %s %s and %s %s differ in size", op, an,
               vp_tensor_describe(a, da, sizeof da), bn, vp_tensor_describe(t, db, sizeof db));
    return VP_OK;
}

static vp_status check_numel(const char* op, const char* arg, const vp_tensor* t, int64_t n) {
    char d[96];
    VP_REQUIRE(vp_tensor_numel(t) == n, VP_ERR_SHAPE, "%s: %s is %s, expected %lld elements", op, arg,
               vp_tensor_describe(t, d, sizeof d), (long long)n);
    return VP_OK;
}

#define CHECK_B(op) VP_TRY(check_b(op, b))
#define CHECK_T(op, t, dt) VP_TRY(check_t(op, #t, b, t, dt))

/* ---- fill / copy / convert ---------------------------------------------------------- */

vp_status vp_fill(vp_backend* b, vp_tensor* x, float value) {
    CHECK_B("vp_fill");
    CHECK_T("vp_fill", x, VP_F32);
    return b->ops->fill(b, x, value);
}

vp_status vp_fill_i32(vp_backend* b, vp_tensor* x, int32_t value) {
    CHECK_B("vp_fill_i32");
    CHECK_T("vp_fill_i32", x, VP_I32);
    return b->ops->fill_i32(b, x, value);
}

vp_status vp_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    CHECK_B("vp_copy");
    VP_REQUIRE(src != NULL, VP_ERR_INVALID_ARG, "vp_copy: src is NULL");
    CHECK_T("vp_copy", src, src->dtype);
    CHECK_T("vp_copy", dst, src->dtype);
    VP_TRY(check_same_numel("vp_copy", "src", src, "dst", dst));
    return b->ops->copy(b, src, dst);
}

vp_status vp_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst) {
    CHECK_B("vp_convert");
    VP_REQUIRE(src != NULL && dst != NULL, VP_ERR_INVALID_ARG, "vp_convert: src or dst is NULL");
    VP_REQUIRE((src->dtype == VP_F32 && dst->dtype == VP_BF16) || (src->dtype == VP_BF16 && dst->dtype == VP_F32),
               VP_ERR_INVALID_ARG, "vp_convert: %s -> %s is not supported (f32 <-> bf16 only)",
               vp_dtype_name(src->dtype), vp_dtype_name(dst->dtype));
    CHECK_T("vp_convert", src, src->dtype);
    CHECK_T("vp_convert", dst, dst->dtype);
    VP_TRY(check_same_numel("vp_convert", "src", src, "dst", dst));
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

/* The elements a strided batch touches: (batch-1)*stride + one matrix. */
static int64_t span_of(int64_t batch, int64_t stride, int64_t one) { return (batch - 1) * stride + one; }

vp_status vp_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                  const vp_tensor* bias, vp_tensor* C) {
    const char* op = "vp_gemm";
    CHECK_B(op);
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "vp_gemm: descriptor is NULL");
    VP_REQUIRE(d->m >= 1 && d->n >= 1 && d->k >= 1 && d->batch >= 1, VP_ERR_SHAPE,
               "vp_gemm: m=%lld n=%lld k=%lld batch=%lld must all be >= 1", (long long)d->m, (long long)d->n,
               (long long)d->k, (long long)d->batch);
    VP_REQUIRE(d->stride_a >= 0 && d->stride_b >= 0 && d->stride_c >= 0, VP_ERR_SHAPE, "vp_gemm: negative stride");
    VP_REQUIRE(d->batch == 1 || d->stride_c >= d->m * d->n, VP_ERR_SHAPE,
               "vp_gemm: stride_c %lld < m*n %lld makes batches of C overlap", (long long)d->stride_c,
               (long long)(d->m * d->n));
    VP_REQUIRE(d->epilogue >= 0 && d->epilogue < VP_EPI_COUNT, VP_ERR_INVALID_ARG, "vp_gemm: bad epilogue %d",
               (int)d->epilogue);
    VP_REQUIRE(d->precision >= 0 && d->precision < VP_PREC_COUNT, VP_ERR_INVALID_ARG, "vp_gemm: bad precision %d",
               (int)d->precision);
    vp_dtype ab = d->precision == VP_PREC_BF16 ? VP_BF16 : VP_F32;
    CHECK_T(op, A, ab);
    CHECK_T(op, B, ab);
    CHECK_T(op, C, VP_F32);
    char ds[96];
    VP_REQUIRE(vp_tensor_numel(A) >= span_of(d->batch, d->stride_a, d->m * d->k), VP_ERR_SHAPE,
               "vp_gemm: A %s is smaller than batch %lld x [%lld, %lld] with stride %lld", vp_tensor_describe(A, ds, sizeof ds),
               (long long)d->batch, (long long)d->m, (long long)d->k, (long long)d->stride_a);
    VP_REQUIRE(vp_tensor_numel(B) >= span_of(d->batch, d->stride_b, d->k * d->n), VP_ERR_SHAPE,
               "vp_gemm: B %s is smaller than batch %lld x [%lld, %lld] with stride %lld", vp_tensor_describe(B, ds, sizeof ds),
               (long long)d->batch, (long long)d->k, (long long)d->n, (long long)d->stride_b);
    VP_REQUIRE(vp_tensor_numel(C) >= span_of(d->batch, d->stride_c, d->m * d->n), VP_ERR_SHAPE,
               "vp_gemm: C %s is smaller than batch %lld x [%lld, %lld] with stride %lld", vp_tensor_describe(C, ds, sizeof ds),
               (long long)d->batch, (long long)d->m, (long long)d->n, (long long)d->stride_c);
    if (d->epilogue != VP_EPI_NONE) {
        CHECK_T(op, bias, VP_F32);
        VP_TRY(check_numel(op, "bias", bias, d->n));
    }
    return b->ops->gemm(b, d, A, B, bias, C);
}

/* ---- element-wise ----------------------------------------------------------------------- */

vp_status vp_unary(vp_backend* b, vp_unary_op uop, const vp_tensor* x, vp_tensor* y) {
    CHECK_B("vp_unary");
    VP_REQUIRE(uop >= 0 && uop < VP_UNARY_COUNT, VP_ERR_INVALID_ARG, "vp_unary: bad op %d", (int)uop);
    CHECK_T("vp_unary", x, VP_F32);
    CHECK_T("vp_unary", y, VP_F32);
    VP_TRY(check_same_numel("vp_unary", "x", x, "y", y));
    return b->ops->unary(b, uop, x, y);
}

vp_status vp_unary_backward(vp_backend* b, vp_unary_op uop, const vp_tensor* x, const vp_tensor* dy, vp_tensor* dx) {
    const char* op = "vp_unary_backward";
    CHECK_B(op);
    VP_REQUIRE(uop >= 0 && uop < VP_UNARY_COUNT, VP_ERR_INVALID_ARG, "%s: bad op %d", op, (int)uop);
    CHECK_T(op, x, VP_F32);
    CHECK_T(op, dy, VP_F32);
    CHECK_T(op, dx, VP_F32);
    VP_TRY(check_same_numel(op, "x", x, "dy", dy));
    VP_TRY(check_same_numel(op, "x", x, "dx", dx));
    return b->ops->unary_backward(b, uop, x, dy, dx);
}

vp_status vp_binary(vp_backend* b, vp_binary_op bop, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c) {
    const char* op = "vp_binary";
    CHECK_B(op);
    VP_REQUIRE(bop >= 0 && bop < VP_BINARY_COUNT, VP_ERR_INVALID_ARG, "%s: bad op %d", op, (int)bop);
    CHECK_T(op, a, VP_F32);
    CHECK_T(op, bb, VP_F32);
    CHECK_T(op, c, VP_F32);
    char da[96], db[96];
    VP_REQUIRE(vp_tensor_numel(bb) == vp_tensor_numel(a) || vp_tensor_numel(bb) == vp_tensor_cols(a), VP_ERR_SHAPE,
               "vp_binary: b %s neither matches a %s nor broadcasts over its rows", vp_tensor_describe(bb, db, sizeof db),
               vp_tensor_describe(a, da, sizeof da));
    VP_TRY(check_same_numel(op, "a", a, "c", c));
    return b->ops->binary(b, bop, a, bb, c);
}

vp_status vp_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y) {
    CHECK_B("vp_axpby");
    CHECK_T("vp_axpby", x, VP_F32);
    CHECK_T("vp_axpby", y, VP_F32);
    VP_TRY(check_same_numel("vp_axpby", "x", x, "y", y));
    return b->ops->axpby(b, alpha, x, beta, y);
}

vp_status vp_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s) {
    CHECK_B("vp_scale_by");
    CHECK_T("vp_scale_by", x, VP_F32);
    CHECK_T("vp_scale_by", s, VP_F32);
    VP_TRY(check_numel("vp_scale_by", "s", s, 1));
    return b->ops->scale_by(b, x, s);
}

/* ---- softmax ------------------------------------------------------------------------------ */

static vp_status softmax_common(vp_backend* b, const char* op, const vp_tensor* x, vp_tensor* y) {
    CHECK_B(op);
    CHECK_T(op, x, VP_F32);
    CHECK_T(op, y, VP_F32);
    return check_same_numel(op, "x", x, "y", y);
}

vp_status vp_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y) {
    VP_TRY(softmax_common(b, "vp_softmax", x, y));
    return b->ops->softmax(b, x, y, 0);
}

vp_status vp_log_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y) {
    VP_TRY(softmax_common(b, "vp_log_softmax", x, y));
    return b->ops->softmax(b, x, y, 1);
}

static vp_status softmax_bwd_common(vp_backend* b, const char* op, const vp_tensor* y, const vp_tensor* dy,
                                    vp_tensor* dx) {
    CHECK_B(op);
    CHECK_T(op, y, VP_F32);
    CHECK_T(op, dy, VP_F32);
    CHECK_T(op, dx, VP_F32);
    VP_TRY(check_same_numel(op, "y", y, "dy", dy));
    return check_same_numel(op, "y", y, "dx", dx);
}

vp_status vp_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx) {
    VP_TRY(softmax_bwd_common(b, "vp_softmax_backward", y, dy, dx));
    return b->ops->softmax_backward(b, y, dy, dx, 0);
}

vp_status vp_log_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx) {
    VP_TRY(softmax_bwd_common(b, "vp_log_softmax_backward", y, dy, dx));
    return b->ops->softmax_backward(b, y, dy, dx, 1);
}

/* ---- normalisation ------------------------------------------------------------------------- */

/* x [m, n]: checks y like x, per-column vectors of n, per-row vectors of m. */
static vp_status check_norm(const char* op, const vp_backend* b, const vp_tensor* x, const vp_tensor* y,
                            const vp_tensor* const* cols, const char* const* col_names, int ncols,
                            const vp_tensor* const* rows, const char* const* row_names, int nrows) {
    VP_TRY(check_t(op, "x", b, x, VP_F32));
    VP_TRY(check_t(op, "y/dx", b, y, VP_F32));
    VP_TRY(check_same_numel(op, "x", x, "y/dx", y));
    for (int i = 0; i < ncols; ++i) {
        VP_TRY(check_t(op, col_names[i], b, cols[i], VP_F32));
        VP_TRY(check_numel(op, col_names[i], cols[i], vp_tensor_cols(x)));
    }
    for (int i = 0; i < nrows; ++i) {
        VP_TRY(check_t(op, row_names[i], b, rows[i], VP_F32));
        VP_TRY(check_numel(op, row_names[i], rows[i], vp_tensor_rows(x)));
    }
    return VP_OK;
}

vp_status vp_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta, float eps,
                       vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    CHECK_B("vp_layernorm");
    VP_REQUIRE(eps > 0.0f && isfinite(eps), VP_ERR_INVALID_ARG, "vp_layernorm: eps %g must be positive", (double)eps);
    const vp_tensor* cols[2] = {gamma, beta};
    const char* cn[2] = {"gamma", "beta"};
    const vp_tensor* rows[2] = {mean, rstd};
    const char* rn[2] = {"mean", "rstd"};
    VP_TRY(check_norm("vp_layernorm", b, x, y, cols, cn, 2, rows, rn, 2));
    return b->ops->layernorm(b, x, gamma, beta, eps, y, mean, rstd);
}

vp_status vp_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                                const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,
                                vp_tensor* dbeta) {
    const char* op = "vp_layernorm_backward";
    CHECK_B(op);
    const vp_tensor* cols[3] = {gamma, dgamma, dbeta};
    const char* cn[3] = {"gamma", "dgamma", "dbeta"};
    const vp_tensor* rows[2] = {mean, rstd};
    const char* rn[2] = {"mean", "rstd"};
    VP_TRY(check_norm(op, b, x, dx, cols, cn, 3, rows, rn, 2));
    CHECK_T(op, dy, VP_F32);
    VP_TRY(check_same_numel(op, "x", x, "dy", dy));
    return b->ops->layernorm_backward(b, dy, x, gamma, mean, rstd, dx, dgamma, dbeta);
}

vp_status vp_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                     vp_tensor* rstd) {
    CHECK_B("vp_rmsnorm");
    VP_REQUIRE(eps > 0.0f && isfinite(eps), VP_ERR_INVALID_ARG, "vp_rmsnorm: eps %g must be positive", (double)eps);
    const vp_tensor* cols[1] = {gamma};
    const char* cn[1] = {"gamma"};
    const vp_tensor* rows[1] = {rstd};
    const char* rn[1] = {"rstd"};
    VP_TRY(check_norm("vp_rmsnorm", b, x, y, cols, cn, 1, rows, rn, 1));
    return b->ops->rmsnorm(b, x, gamma, eps, y, rstd);
}

vp_status vp_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,
                              const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma) {
    const char* op = "vp_rmsnorm_backward";
    CHECK_B(op);
    const vp_tensor* cols[2] = {gamma, dgamma};
    const char* cn[2] = {"gamma", "dgamma"};
    const vp_tensor* rows[1] = {rstd};
    const char* rn[1] = {"rstd"};
    VP_TRY(check_norm(op, b, x, dx, cols, cn, 2, rows, rn, 1));
    CHECK_T(op, dy, VP_F32);
    VP_TRY(check_same_numel(op, "x", x, "dy", dy));
    return b->ops->rmsnorm_backward(b, dy, x, gamma, rstd, dx, dgamma);
}

/* ---- reductions ------------------------------------------------------------------------------ */

static vp_status check_reduce(const char* op, const vp_backend* b, vp_reduce_op rop, const vp_tensor* x,
                              const vp_tensor* out, int64_t n_out) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "%s: backend is NULL", op);
    VP_REQUIRE(rop >= 0 && rop < VP_REDUCE_COUNT, VP_ERR_INVALID_ARG, "%s: bad reduce op %d", op, (int)rop);
    VP_TRY(check_t(op, "x", b, x, VP_F32));
    VP_TRY(check_t(op, "out", b, out, VP_F32));
    if (n_out < 0) n_out = 1;
    return check_numel(op, "out", out, n_out);
}

vp_status vp_reduce_rows(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce("vp_reduce_rows", b, rop, x, out, x ? vp_tensor_rows(x) : -1));
    return b->ops->reduce_rows(b, rop, x, out);
}

vp_status vp_reduce_cols(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce("vp_reduce_cols", b, rop, x, out, x ? vp_tensor_cols(x) : -1));
    return b->ops->reduce_cols(b, rop, x, out);
}

vp_status vp_reduce_all(vp_backend* b, vp_reduce_op rop, const vp_tensor* x, vp_tensor* out) {
    VP_TRY(check_reduce("vp_reduce_all", b, rop, x, out, 1));
    return b->ops->reduce_all(b, rop, x, out);
}

/* ---- gather -------------------------------------------------------------------------------------- */

vp_status vp_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out) {
    const char* op = "vp_gather_rows";
    CHECK_B(op);
    CHECK_T(op, src, VP_F32);
    CHECK_T(op, idx, VP_I32);
    CHECK_T(op, out, VP_F32);
    VP_TRY(check_numel(op, "out", out, vp_tensor_numel(idx) * vp_tensor_cols(src)));
    return b->ops->gather_rows(b, src, idx, out);
}

/* ---- optimiser ------------------------------------------------------------------------------------ */

vp_status vp_adamw(vp_backend* b, const vp_adamw_cfg* cfg, vp_tensor* param, const vp_tensor* grad, vp_tensor* m,
                   vp_tensor* v, const vp_tensor* step, const vp_tensor* grad_scale) {
    const char* op = "vp_adamw";
    CHECK_B(op);
    VP_REQUIRE(cfg != NULL, VP_ERR_INVALID_ARG, "vp_adamw: cfg is NULL");
    VP_REQUIRE(cfg->lr >= 0.0f && isfinite(cfg->lr), VP_ERR_INVALID_ARG, "vp_adamw: lr %g", (double)cfg->lr);
    VP_REQUIRE(cfg->beta1 >= 0.0f && cfg->beta1 < 1.0f && cfg->beta2 >= 0.0f && cfg->beta2 < 1.0f, VP_ERR_INVALID_ARG,
               "vp_adamw: betas (%g, %g) must lie in [0, 1)", (double)cfg->beta1, (double)cfg->beta2);
    VP_REQUIRE(cfg->eps > 0.0f, VP_ERR_INVALID_ARG, "vp_adamw: eps %g must be positive", (double)cfg->eps);
    VP_REQUIRE(cfg->weight_decay >= 0.0f, VP_ERR_INVALID_ARG, "vp_adamw: weight_decay %g < 0",
               (double)cfg->weight_decay);
    CHECK_T(op, param, VP_F32);
    CHECK_T(op, grad, VP_F32);
    CHECK_T(op, m, VP_F32);
    CHECK_T(op, v, VP_F32);
    CHECK_T(op, step, VP_I32);
    VP_TRY(check_same_numel(op, "param", param, "grad", grad));
    VP_TRY(check_same_numel(op, "param", param, "m", m));
    VP_TRY(check_same_numel(op, "param", param, "v", v));
    VP_TRY(check_numel(op, "step", step, 1));
    if (grad_scale) {
        CHECK_T(op, grad_scale, VP_F32);
        VP_TRY(check_numel(op, "grad_scale", grad_scale, 1));
    }
    return b->ops->adamw(b, cfg, param, grad, m, v, step, grad_scale);
}

vp_status vp_step_increment(vp_backend* b, vp_tensor* counter) {
    CHECK_B("vp_step_increment");
    CHECK_T("vp_step_increment", counter, VP_I32);
    VP_TRY(check_numel("vp_step_increment", "counter", counter, 1));
    return b->ops->step_increment(b, counter);
}

vp_status vp_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, vp_tensor* norm, vp_tensor* coef) {
    const char* op = "vp_clip_coef";
    CHECK_B(op);
    VP_REQUIRE(max_norm > 0.0f, VP_ERR_INVALID_ARG, "vp_clip_coef: max_norm %g must be positive", (double)max_norm);
    CHECK_T(op, x, VP_F32);
    CHECK_T(op, norm, VP_F32);
    CHECK_T(op, coef, VP_F32);
    VP_TRY(check_numel(op, "norm", norm, 1));
    VP_TRY(check_numel(op, "coef", coef, 1));
    return b->ops->clip_coef(b, x, max_norm, norm, coef);
}
