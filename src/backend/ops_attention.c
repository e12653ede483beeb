/* The public attention ops (scaled dot-product attention, forward and backward): check the
 * descriptor, every tensor and that no output overlaps another tensor, then call the
 * backend's table. */
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

/* Fails naming fn unless the elements of tensors a and t (both checked) occupy disjoint bytes. */
static vp_status attn_disjoint(const char* fn, const char* an, const vp_tensor* a, const char* tn, const vp_tensor* t) {
    const uintptr_t a0 = (uintptr_t)a->data, t0 = (uintptr_t)t->data;
    const uintptr_t a1 = a0 + (uintptr_t)vp_tensor_numel(a) * sizeof(float);
    const uintptr_t t1 = t0 + (uintptr_t)vp_tensor_numel(t) * sizeof(float);
    VP_REQUIRE(a1 <= t0 || t1 <= a0, VP_ERR_INVALID_ARG, "%s: %s overlaps %s (outputs may not alias)", fn, tn, an);
    return VP_OK;
}

/* Fails naming fn when one of the n outputs overlaps an input or another output. */
static vp_status attn_no_alias(const char* fn, const vp_tensor* const* in, const char* const* in_names, int n_in,
                               const vp_tensor* const* out, const char* const* out_names, int n_out) {
    for (int o = 0; o < n_out; ++o) {
        for (int i = 0; i < n_in; ++i) VP_TRY(attn_disjoint(fn, in_names[i], in[i], out_names[o], out[o]));
        for (int p = 0; p < o; ++p) VP_TRY(attn_disjoint(fn, out_names[p], out[p], out_names[o], out[o]));
    }
    return VP_OK;
}

vp_status vp_attention(vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,
                       const vp_tensor* v, vp_tensor* out, vp_tensor* lse) {
    CHECK_B();
    VP_TRY(attn_desc_check(__func__, d));
    VP_TRY(attn_inputs_check(__func__, b, d, q, k, v, lse));
    VP_TRY(vp_tensor_check_rows(__func__, "out", b, out, VP_F32, d->batch * d->lq, (int64_t)d->heads * d->dim));
    const vp_tensor* in[] = {q, k, v};
    const vp_tensor* outs[] = {out, lse};
    static const char* const in_names[] = {"q", "k", "v"};
    static const char* const out_names[] = {"out", "lse"};
    VP_TRY(attn_no_alias(__func__, in, in_names, 3, outs, out_names, 2));
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
    const vp_tensor* in[] = {q, k, v, out, lse, dout};
    const vp_tensor* outs[] = {dq, dk, dv};
    static const char* const in_names[] = {"q", "k", "v", "out", "lse", "dout"};
    static const char* const out_names[] = {"dq", "dk", "dv"};
    VP_TRY(attn_no_alias(__func__, in, in_names, 6, outs, out_names, 3));
    return b->ops->attention_backward(b, d, q, k, v, out, lse, dout, dq, dk, dv);
}
