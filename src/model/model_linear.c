/* The network's linear layers over the op interface (model_internal.h): y = epi(x W^T + beta y)
 * and its backward, at the model's precision. Every layer of the forward, the backward and
 * the optional modules goes through these two. */
#include "model/model_internal.h"

vp_status vp_model_linear(const vp_model* m, const vp_tensor* x, const vp_tensor* W, const vp_tensor* bias,
                          vp_epilogue epi, float beta, vp_tensor* y) {
    vp_gemm_desc d = vp_gemm_plain(0, 1, vp_tensor_rows(x), vp_tensor_rows(W), vp_tensor_cols(x));
    d.beta = beta;
    d.epilogue = epi;
    d.precision = m->precision;
    return vp_gemm(m->backend, &d, x, W, bias, y);
}

vp_status vp_model_linear_backward(const vp_model* m, const vp_tensor* x, const vp_tensor* W, const vp_tensor* dy,
                                   vp_tensor* dW, vp_tensor* db, vp_tensor* dx, float dx_beta) {
    vp_backend* be = m->backend;
    const int64_t rows = vp_tensor_rows(x), in = vp_tensor_cols(x), out = vp_tensor_rows(W);
    vp_gemm_desc gw = vp_gemm_plain(1, 0, out, in, rows);
    gw.precision = m->precision;
    VP_TRY(vp_gemm(be, &gw, dy, x, NULL, dW));
    if (db) VP_TRY(vp_reduce_cols(be, VP_REDUCE_SUM, dy, db));
    if (dx) {
        vp_gemm_desc gx = vp_gemm_plain(0, 0, rows, in, out);
        gx.beta = dx_beta;
        gx.precision = m->precision;
        VP_TRY(vp_gemm(be, &gx, dy, W, NULL, dx));
    }
    return VP_OK;
}
