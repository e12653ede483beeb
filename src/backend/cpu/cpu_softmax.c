/* Row softmax and log-softmax on the CPU, forward and backward. Each row subtracts its
 * maximum first (large inputs do not overflow); row sums accumulate in double, in column
 * order. The exponentials are cpu_exp.h's (the same bits on every machine). */
#include <math.h>

#include "cpu_exp.h"
#include "cpu_impl.h"

/* Columns of a row whose exponentials one pass of the log-softmax holds. */
#define SOFTMAX_CHUNK 256

vp_status vp_cpu_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y, int is_log) {
    (void)b;
    const int64_t rows = vp_tensor_rows(x), n = vp_tensor_cols(x);
    for (int64_t r = 0; r < rows; ++r) {
        const float* xr = (const float*)x->data + r * n; /* [n] */
        float* yr = (float*)y->data + r * n;             /* [n], may alias xr */
        /* row maximum (a NaN in the row makes the whole row NaN below) */
        float mx = -INFINITY;
        for (int64_t j = 0; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
        if (is_log) {
            /* x - max - log(sum of shifted exponentials) */
            double sum = 0.0;
            float e[SOFTMAX_CHUNK];
            for (int64_t j0 = 0; j0 < n; j0 += SOFTMAX_CHUNK) {
                const int64_t m = n - j0 < SOFTMAX_CHUNK ? n - j0 : SOFTMAX_CHUNK;
                vp_cpu_exp_rows(xr + j0, mx, e, m);
                for (int64_t j = 0; j < m; ++j) sum += (double)e[j];
            }
            const float lse = (float)log(sum);
            for (int64_t j = 0; j < n; ++j) yr[j] = (xr[j] - mx) - lse;
        } else {
            /* exp(x - max) written once, then divided by its sum (x is not read again) */
            double sum = 0.0;
            vp_cpu_exp_rows(xr, mx, yr, n);
            for (int64_t j = 0; j < n; ++j) sum += (double)yr[j];
            const float inv = (float)(1.0 / sum);
            for (int64_t j = 0; j < n; ++j) yr[j] *= inv;
        }
    }
    return VP_OK;
}

vp_status vp_cpu_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx,
                                  int is_log) {
    (void)b;
    const int64_t rows = vp_tensor_rows(y), n = vp_tensor_cols(y);
    for (int64_t r = 0; r < rows; ++r) {
        const float* yr = (const float*)y->data + r * n;   /* [n] */
        const float* dyr = (const float*)dy->data + r * n; /* [n] */
        float* dxr = (float*)dx->data + r * n;             /* [n], may alias dyr */
        if (is_log) {
            /* dx = dy - exp(y) * sum(dy) */
            double s = 0.0;
            for (int64_t j = 0; j < n; ++j) s += (double)dyr[j];
            const float sf = (float)s;
            for (int64_t j = 0; j < n; ++j) dxr[j] = dyr[j] - vp_cpu_expf(yr[j]) * sf;
        } else {
            /* dx = y * (dy - sum(dy * y)) */
            double s = 0.0;
            for (int64_t j = 0; j < n; ++j) s += (double)dyr[j] * (double)yr[j];
            const float sf = (float)s;
            for (int64_t j = 0; j < n; ++j) dxr[j] = yr[j] * (dyr[j] - sf);
        }
    }
    return VP_OK;
}
