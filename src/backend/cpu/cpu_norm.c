/* LayerNorm and RMSNorm on the CPU, forward and backward, per row of x [m, n]. Row
 * statistics and the parameter gradients accumulate in double, in a fixed order. */
#include <math.h>

#include "cpu_impl.h"

/* Columns per block when summing parameter gradients over the rows. */
#define VP_CPU_COL_BLOCK 64

/* dgamma[j] = sum_i dy[i,j] * (x[i,j] - shift[i]) * scale[i] and (when dbeta is given)
 * dbeta[j] = sum_i dy[i,j]; shift may be NULL (zero). Blocks of columns keep the reads
 * row-contiguous and the double accumulators on the stack. */
static void param_grads(const float* dy, const float* x, const float* shift, const float* scale, int64_t m,
                        int64_t n, float* dgamma, float* dbeta) {
    for (int64_t j0 = 0; j0 < n; j0 += VP_CPU_COL_BLOCK) {
        const int64_t w = n - j0 < VP_CPU_COL_BLOCK ? n - j0 : VP_CPU_COL_BLOCK;
        double ag[VP_CPU_COL_BLOCK] = {0}, ab[VP_CPU_COL_BLOCK] = {0};
        /* accumulate this block of columns over every row */
        for (int64_t i = 0; i < m; ++i) {
            const float* dyr = dy + i * n + j0;
            const float* xr = x + i * n + j0;
            const double sh = shift ? (double)shift[i] : 0.0, sc = (double)scale[i];
            for (int64_t j = 0; j < w; ++j) {
                ag[j] += (double)dyr[j] * (((double)xr[j] - sh) * sc);
                ab[j] += (double)dyr[j];
            }
        }
        /* overwrite the outputs */
        for (int64_t j = 0; j < w; ++j) {
            dgamma[j0 + j] = (float)ag[j];
            if (dbeta) dbeta[j0 + j] = (float)ab[j];
        }
    }
}

/* ---- LayerNorm --------------------------------------------------------------------------- */

vp_status vp_cpu_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,
                           float eps, int relu, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* g = (const float*)gamma->data; /* [n] */
    const float* be = (const float*)beta->data; /* [n] */
    for (int64_t i = 0; i < m; ++i) {
        const float* xr = (const float*)x->data + i * n; /* [n] */
        float* yr = (float*)y->data + i * n;             /* [n] */
        /* mean, then the biased variance around it (two passes, double) */
        double s = 0.0;
        for (int64_t j = 0; j < n; ++j) s += (double)xr[j];
        const double mu = s / (double)n;
        double ss = 0.0;
        for (int64_t j = 0; j < n; ++j) ss += ((double)xr[j] - mu) * ((double)xr[j] - mu);
        const double rs = 1.0 / sqrt(ss / (double)n + (double)eps);
        /* normalise, scale, shift; save the statistics */
        const float muf = (float)mu, rsf = (float)rs;
        for (int64_t j = 0; j < n; ++j) {
            const float v = (xr[j] - muf) * rsf * g[j] + be[j];
            yr[j] = relu && v < 0.0f ? 0.0f : v; /* the ReLU of vp_unary: NaN and -0 pass */
        }
        ((float*)mean->data)[i] = muf;
        ((float*)rstd->data)[i] = rsf;
    }
    return VP_OK;
}

/* The input gradient of both norms, row by row: xhat = (x - mean) * rstd (mean NULL:
 * zero, RMSNorm), dxhat = dy * gamma, and
 * dx = rstd * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), the mean(dxhat) term only
 * when centred (LayerNorm). dy, x, dx [m, n]; gamma [n]; mean, rstd [m]. */
static void rows_backward(const float* dy, const float* x, const float* g, const float* mu, const float* rs,
                          int64_t m, int64_t n, float* dx) {
    for (int64_t i = 0; i < m; ++i) {
        const float* dyr = dy + i * n;
        const float* xr = x + i * n;
        float* dxr = dx + i * n;
        const float mui = mu ? mu[i] : 0.0f;
        /* row means of dxhat and of dxhat * xhat */
        double s1 = 0.0, s2 = 0.0;
        for (int64_t j = 0; j < n; ++j) {
            const double dh = (double)dyr[j] * (double)g[j];
            s1 += dh;
            s2 += dh * (((double)xr[j] - (double)mui) * (double)rs[i]);
        }
        const float m1 = mu ? (float)(s1 / (double)n) : 0.0f, m2 = (float)(s2 / (double)n);
        /* dx = rstd * (dxhat - m1 - xhat * m2) */
        for (int64_t j = 0; j < n; ++j) {
            const float xh = (xr[j] - mui) * rs[i];
            dxr[j] = rs[i] * (dyr[j] * g[j] - m1 - xh * m2);
        }
    }
}

vp_status vp_cpu_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                                    const vp_tensor* gamma, const vp_tensor* mean, const vp_tensor* rstd,
                                    vp_tensor* dx, vp_tensor* dgamma, vp_tensor* dbeta) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* mu = (const float*)mean->data; /* [m] */
    const float* rs = (const float*)rstd->data; /* [m] */
    const float* dyp = (const float*)dy->data;  /* [m, n] */
    const float* xp = (const float*)x->data;    /* [m, n] */
    rows_backward(dyp, xp, (const float*)gamma->data, mu, rs, m, n, (float*)dx->data);
    param_grads(dyp, xp, mu, rs, m, n, (float*)dgamma->data, (float*)dbeta->data);
    return VP_OK;
}

/* ---- RMSNorm ------------------------------------------------------------------------------ */

vp_status vp_cpu_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                         vp_tensor* rstd) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* g = (const float*)gamma->data; /* [n] */
    for (int64_t i = 0; i < m; ++i) {
        const float* xr = (const float*)x->data + i * n; /* [n] */
        float* yr = (float*)y->data + i * n;             /* [n] */
        /* mean square (double) */
        double ss = 0.0;
        for (int64_t j = 0; j < n; ++j) ss += (double)xr[j] * (double)xr[j];
        const float rsf = (float)(1.0 / sqrt(ss / (double)n + (double)eps));
        /* scale; save rstd */
        for (int64_t j = 0; j < n; ++j) yr[j] = xr[j] * rsf * g[j];
        ((float*)rstd->data)[i] = rsf;
    }
    return VP_OK;
}

vp_status vp_cpu_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                                  const vp_tensor* gamma, const vp_tensor* rstd, vp_tensor* dx,
                                  vp_tensor* dgamma) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* rs = (const float*)rstd->data; /* [m] */
    const float* dyp = (const float*)dy->data;  /* [m, n] */
    const float* xp = (const float*)x->data;    /* [m, n] */
    rows_backward(dyp, xp, (const float*)gamma->data, NULL, rs, m, n, (float*)dx->data);
    param_grads(dyp, xp, NULL, rs, m, n, (float*)dgamma->data, NULL);
    return VP_OK;
}
