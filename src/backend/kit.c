/* The kernel kit: the stream, the tensor-argument checks every layer (and ops.c) uses,
 * and the choice of a kernel table by backend kind. */
#include "backend/kit.h"

#include "backend_impl.h"

void* vp_backend_stream(vp_backend* b) { return b ? b->ops->stream(b) : NULL; }

/* ---- tensor-argument checks ------------------------------------------------------------------- */

vp_status vp_tensor_check(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t, vp_dtype dtype) {
    VP_REQUIRE(t != NULL, VP_ERR_INVALID_ARG, "%s: %s is NULL", fn, arg);
    VP_REQUIRE(t->data != NULL, VP_ERR_INVALID_ARG, "%s: %s has no data (NULL pointer)", fn, arg);
    VP_REQUIRE(t->ndim >= 1 && t->ndim <= VP_MAX_DIMS, VP_ERR_SHAPE, "%s: %s has ndim %d (1..%d allowed)", fn, arg,
               t->ndim, VP_MAX_DIMS);
    for (int i = 0; i < t->ndim; ++i)
        VP_REQUIRE(t->shape[i] >= 1, VP_ERR_SHAPE, "%s: %s extent %d is %lld", fn, arg, i, (long long)t->shape[i]);
    VP_REQUIRE(t->dtype == dtype, VP_ERR_INVALID_ARG, "%s: %s is %s, expected %s", fn, arg, vp_dtype_name(t->dtype),
               vp_dtype_name(dtype));
    VP_REQUIRE(vp_backend_can_read(b, t->mem), VP_ERR_DEVICE, "%s: %s lives in %s memory, which backend %s cannot read",
               fn, arg, vp_mem_name(t->mem), vp_backend_name(b));
    return VP_OK;
}

vp_status vp_tensor_check_numel(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                                vp_dtype dtype, int64_t numel) {
    char d[96];
    VP_TRY(vp_tensor_check(fn, arg, b, t, dtype));
    VP_REQUIRE(vp_tensor_numel(t) == numel, VP_ERR_SHAPE, "%s: %s is %s, expected %lld elements", fn, arg,
               vp_tensor_describe(t, d, sizeof d), (long long)numel);
    return VP_OK;
}

vp_status vp_tensor_check_rows(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                               vp_dtype dtype, int64_t rows, int64_t cols) {
    char d[96];
    VP_TRY(vp_tensor_check(fn, arg, b, t, dtype));
    if (cols == 1)
        VP_REQUIRE(vp_tensor_numel(t) == rows, VP_ERR_SHAPE, "%s: %s is %s, expected [%lld]", fn, arg,
                   vp_tensor_describe(t, d, sizeof d), (long long)rows);
    else
        VP_REQUIRE(vp_tensor_numel(t) == rows * cols && vp_tensor_cols(t) == cols, VP_ERR_SHAPE,
                   "%s: %s is %s, expected [%lld, %lld]", fn, arg, vp_tensor_describe(t, d, sizeof d),
                   (long long)rows, (long long)cols);
    return VP_OK;
}

vp_status vp_tensor_check_min_rows(const char* fn, const char* arg, const vp_backend* b, const vp_tensor* t,
                                   vp_dtype dtype, int64_t min_rows, int64_t cols) {
    char d[96];
    VP_TRY(vp_tensor_check(fn, arg, b, t, dtype));
    VP_REQUIRE(cols <= 0 || vp_tensor_cols(t) == cols, VP_ERR_SHAPE, "%s: %s is %s, expected %lld columns", fn, arg,
               vp_tensor_describe(t, d, sizeof d), (long long)cols);
    const int64_t rows = cols <= 0 ? vp_tensor_numel(t) : vp_tensor_rows(t);
    VP_REQUIRE(rows >= min_rows, VP_ERR_SHAPE, "%s: %s is %s, fewer than %lld %s", fn, arg,
               vp_tensor_describe(t, d, sizeof d), (long long)min_rows, cols <= 0 ? "elements" : "rows");
    return VP_OK;
}

vp_status vp_tensor_check_same_numel(const char* fn, const char* a_name, const vp_tensor* a, const char* t_name,
                                     const vp_tensor* t) {
    char da[96], dt[96];
    VP_REQUIRE(vp_tensor_numel(a) == vp_tensor_numel(t), VP_ERR_SHAPE, "%s: %s %s and %s %s differ in size", fn,
               a_name, vp_tensor_describe(a, da, sizeof da), t_name, vp_tensor_describe(t, dt, sizeof dt));
    return VP_OK;
}

/* ---- kernel tables ------------------------------------------------------------------------------- */

vp_status vp_kernels_select(const char* fn, const char* what, const vp_backend* b, const void* cpu,
                            const void* cuda, const void** out) {
    *out = NULL;
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "%s: backend is NULL", fn);
    switch (vp_backend_get_kind(b)) {
    case VP_BACKEND_CPU: *out = cpu; break;
    case VP_BACKEND_CUDA:
        VP_REQUIRE(cuda != NULL, VP_ERR_UNSUPPORTED,
                   "%s: this build has no CUDA %s (nvcc was not found at build time)", fn, what);
        *out = cuda;
        break;
    default:
        VP_FAIL(VP_ERR_INVALID_ARG, "%s: backend %s has unknown kind %d", fn, vp_backend_name(b),
                (int)vp_backend_get_kind(b));
    }
    return VP_OK;
}
