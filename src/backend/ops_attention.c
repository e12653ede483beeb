/* The public attention ops (scaled dot-product attention, forward and backward): check the
 * descriptor and every tensor, then call the backend's table. */
#include <math.h>
#include <stdint.h>

#include "backend_impl.h"
#include "ops_check.h"

/* Fails naming fn unless d describes a valid attention: batch >= 1, heads >= 1,
 * 1 <= lq, lk <= VP_ATTN_MAX_LEN, 1 <= dim <= VP_ATTN_MAX_DIM, causal only with lq == lk,
 * a finite scale > 0, and element counts that fit in int64. */
static vp_status attn_desc_check(const char* fn, const vp_attn_desc* d) {
    VP_REQUIRE(d != NULL, VP_ERR_INVALID_ARG, "%s: descriptor is NULL", fn);
    VP_REQUIRE(d->batch >= 1, VP_ERR_SHAPE, "%s: batch %lld must be >= 1", fn, (long long)d->batch);
    VP_REQUIRE(d->heads >= 1, VP_ERR_SHAPE, "%s: heads %d must be >= 1", fn, d->heads);
    VP_REQUIRE(d->lq >= 1 && d->lq <= VP_ATTN_MAX_LEN, VP_ERR_SHAPE, "%s: lq %d outside 1..%d", fn, d->lq,
               VP_ATTN_MAX_LEN);
    VP_REQUIRE(d->lk >= 1 && d->lk <= VP_ATTN_MAX_LEN, VP_ERR_SHAPE, "%s: lk %d outside 1..%d", fn, d->lk,
               VP_ATTN_MAX_LEN);
    VP_REQUIRE(d->dim >= 1 && d->dim <= VP_ATTN_MAX_DIM, VP_ERR_SHAPE, "%s: dim %d outside 1..%d", fn, d->dim,
               VP_ATTN_MAX_DIM);
    VP_REQUIRE(!d->causal || d->lq == d->lk, VP_ERR_SHAPE, "%s: causal needs lq == lk (lq %d, lk %d)", fn, d->lq,
               d->lk);
    VP_REQUIRE(isfinite(d->scale) && d->scale > 0.0f, VP_ERR_INVALID_ARG, "%s: scale %g must be finite and > 0", fn,
               (double)d->scale);
    /* the largest tensor has batch * max(lq, lk) * heads * dim elements */
    const int64_t per_seq = (int64_t)(d->lq > d->lk ? d->lq : d->lk) * d->heads * d->dim;
    VP_REQUIRE(d->batch <= INT64_MAX / per_seq, VP_ERR_SHAPE, "%s: batch %lld x %lld elements overflows", fn,
               (long long)d->batch, (long long)per_seq);
    return VP_OK;
}

/* Checks the tensors both directions read: q [B*Lq, NH*D], k and v [B*Lk, NH*D] (any leading
 * shape, last extent NH*D), lse [B*NH*Lq] (any shape of that many elements), all f32. */
static vp_status attn_inputs_check(const char* fn, vp_backend* b, const vp_attn_desc* d, const vp_tensor* q,
                                   const vp_tensor* k, const vp_tensor* v, const vp_tensor* lse) {
    const int64_t cols = (int64_t)d->heads * d->dim;
    VP_TRY(vp_tensor_check_rows(fn, "q", b, q, VP_F32, d->batch * d->lq, cols));
    VP_TRY(vp_tensor_check_rows(fn, "k", b, k, VP_F32, d->batch * d->lk, cols));
    VP_TRY(vp_tensor_check_rows(fn, "v", b, v, VP_F32, d->batch * d->lk, cols));
    return vp_tensor_check_numel(fn, "lse", b, lse, VP_F32, d->batch * d->heads * d->lq);
}

vp_status vp_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                       const vp_tensor* v, vp_tensor* out, vp_tensor* lse) {
    CHECK_B();
    VP_TRY(attn_desc_check(__func__, d));
    VP_TRY(attn_inputs_check(__func__, b, d, q, k, v, lse));
    VP_TRY(vp_tensor_check_rows(__func__, "out", b, out, VP_F32, d->batch * d->lq, (int64_t)d->heads * d->dim));
    return b->ops->attention(b, d, q, k, v, out, lse);
}

vp_status vp_attention_backward(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                                const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse,
                                const vp_tensor* dout, vp_tensor* dq, vp_tensor* dk, vp_tensor* dv) {
    CHECK_B();
    VP_TRY(attn_desc_check(__func__, d));
    VP_TRY(attn_inputs_check(__func__, b, d, q, k, v, lse));
    const int64_t cols = (int64_t)d->heads * d->dim, rq = d->batch * d->lq, rk = d->batch * d->lk;
    VP_TRY(vp_tensor_check_rows(__func__, "out", b, out, VP_F32, rq, cols));
    VP_TRY(vp_tensor_check_rows(__func__, "dout", b, dout, VP_F32, rq, cols));
    VP_TRY(vp_tensor_check_rows(__func__, "dq", b, dq, VP_F32, rq, cols));
    VP_TRY(vp_tensor_check_rows(__func__, "dk", b, dk, VP_F32, rk, cols));
    VP_TRY(vp_tensor_check_rows(__func__, "dv", b, dv, VP_F32, rk, cols));
    return b->ops->attention_backward(b, d, q, k, v, out, lse, dout, dq, dk, dv);
}
