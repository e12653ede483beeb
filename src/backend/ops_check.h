/* Internal: the argument checks of the public ops (ops.c, ops_optim.c): the backend, a
 * tensor like another, and the macros that name the enclosing op in their messages. */
#ifndef VP_BACKEND_OPS_CHECK_H
#define VP_BACKEND_OPS_CHECK_H

#include "backend_impl.h"
#include "kit.h"

/* Fails naming the op when the backend is NULL. */
static inline vp_status check_b(const char* op, const vp_backend* b) {
    VP_REQUIRE(b != NULL, VP_ERR_INVALID_ARG, "%s: backend is NULL", op);
    return VP_OK;
}

/* Checks tensor t like vp_tensor_check with a's dtype, and that it holds as many elements
 * as a (which the caller has checked). */
static inline vp_status check_like(const char* op, const vp_backend* b, const char* an, const vp_tensor* a,
                                   const char* tn, const vp_tensor* t) {
    VP_TRY(vp_tensor_check(op, tn, b, t, a->dtype));
    return vp_tensor_check_same_numel(op, an, a, tn, t);
}

/* Argument checks inside a public op: `b` is its backend, the op is named after the
 * enclosing function. */
#define CHECK_B() VP_TRY(check_b(__func__, b))
#define CHECK_T(t, dt) VP_TRY(vp_tensor_check(__func__, #t, b, t, dt))
#define CHECK_T_NUMEL(t, dt, n) VP_TRY(vp_tensor_check_numel(__func__, #t, b, t, dt, n))
#define CHECK_LIKE(a, t) VP_TRY(check_like(__func__, b, #a, a, #t, t))
#define CHECK_ENUM(v, count, what) \
    VP_REQUIRE((v) >= 0 && (v) < (count), VP_ERR_INVALID_ARG, "%s: bad " what " %d", __func__, (int)(v))

#endif /* VP_BACKEND_OPS_CHECK_H */
