/* CUDA deterministic reductions over rows, columns and whole buffers (launchers;
 * arguments checked by ops.c), and the column-reduction machinery the norm backward
 * passes share. Every partition depends on the shape only, so the same inputs give the
 * same bits on every run; no float atomics are used. */
#ifndef VP_CUDA_REDUCE_CUH
#define VP_CUDA_REDUCE_CUH

#include "common.cuh"

/* out[i] = reduce(x[i, :]). */
vp_status vp_cuda_reduce_rows(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* out[j] = reduce(x[:, j]). */
vp_status vp_cuda_reduce_cols(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* out[0] = reduce(x). */
vp_status vp_cuda_reduce_all(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* What a column reduction sums for column j over rows i. */
typedef enum vp_cuda_col_mode {
    VP_CUDA_COL_SUM = 0, /* out0 = sum x */
    VP_CUDA_COL_SUMSQ,   /* out0 = sum x^2 */
    VP_CUDA_COL_MAX,     /* out0 = max x */
    VP_CUDA_COL_LN,      /* out0 = sum dy (x - mean) rstd, out1 = sum dy (LayerNorm dgamma, dbeta) */
    VP_CUDA_COL_RMS,     /* out0 = sum dy x rstd (RMSNorm dgamma) */
    VP_CUDA_COL_MODE_COUNT
} vp_cuda_col_mode;

/* Column reduction of x [m, n] (with dy [m, n], mean [m], rstd [m] for the norm modes;
 * NULL otherwise) into out0 [n] (and out1 [n] for LN): per-block partials over fixed row
 * chunks in the backend's scratch, then a second kernel combining them in fixed order. */
vp_status vp_cuda_col_reduce(vp_backend* b, vp_cuda_col_mode mode, const float* x, const float* dy,
                             const float* mean, const float* rstd, int64_t m, int64_t n, float* out0,
                             float* out1);

/* Whole-buffer sum of squares of x [n] finished as a clip coefficient: norm[0] =
 * sqrt(sum x^2), coef[0] = min(1, T / (norm + 1e-6)), NaN propagating, T = max_norm_at[0]
 * (device memory, read by the finishing kernel) when max_norm_at is not NULL, else max_norm. */
vp_status vp_cuda_norm_and_clip(vp_backend* b, const float* x, int64_t n, float max_norm, const float* max_norm_at,
                                float* norm, float* coef);

#endif /* VP_CUDA_REDUCE_CUH */
