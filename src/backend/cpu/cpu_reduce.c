/* Deterministic reductions on the CPU: over rows, over columns, over a whole buffer.
 * Sums accumulate in double in a fixed order; MAX propagates NaN. */
#include <math.h>

#include "cpu_impl.h"

/* Columns per block of the column reduction. */
#define VP_CPU_COL_BLOCK 64

/* The value a reduction starts from. */
static inline double reduce_init(vp_reduce_op op) { return op == VP_REDUCE_MAX ? -INFINITY : 0.0; }

/* Folds one element into an accumulator. MAX takes a NaN element, and once the
 * accumulator is NaN no comparison replaces it, so NaN propagates. */
static inline double reduce_step(vp_reduce_op op, double acc, float v) {
    switch (op) {
    case VP_REDUCE_SUM: return acc + (double)v;
    case VP_REDUCE_SUMSQ: return acc + (double)v * (double)v;
    default: return (isnan(v) || (double)v > acc) ? (double)v : acc;
    }
}

/* Reduces a contiguous run of n floats. */
static double reduce_run(vp_reduce_op op, const float* x, int64_t n) {
    double acc = reduce_init(op);
    for (int64_t j = 0; j < n; ++j) acc = reduce_step(op, acc, x[j]);
    return acc;
}

vp_status vp_cpu_reduce_rows(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* xp = (const float*)x->data; /* [m, n] */
    float* o = (float*)out->data;            /* [m] */
    for (int64_t i = 0; i < m; ++i) o[i] = (float)reduce_run(op, xp + i * n, n);
    return VP_OK;
}

vp_status vp_cpu_reduce_cols(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    (void)b;
    const int64_t m = vp_tensor_rows(x), n = vp_tensor_cols(x);
    const float* xp = (const float*)x->data; /* [m, n] */
    float* o = (float*)out->data;            /* [n] */
    /* blocks of columns, each accumulated over all rows (row-contiguous reads) */
    for (int64_t j0 = 0; j0 < n; j0 += VP_CPU_COL_BLOCK) {
        const int64_t w = n - j0 < VP_CPU_COL_BLOCK ? n - j0 : VP_CPU_COL_BLOCK;
        double acc[VP_CPU_COL_BLOCK];
        for (int64_t j = 0; j < w; ++j) acc[j] = reduce_init(op);
        for (int64_t i = 0; i < m; ++i) {
            const float* xr = xp + i * n + j0;
            for (int64_t j = 0; j < w; ++j) acc[j] = reduce_step(op, acc[j], xr[j]);
        }
        for (int64_t j = 0; j < w; ++j) o[j0 + j] = (float)acc[j];
    }
    return VP_OK;
}

vp_status vp_cpu_reduce_all(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out) {
    (void)b;
    ((float*)out->data)[0] = (float)reduce_run(op, (const float*)x->data, vp_tensor_numel(x));
    return VP_OK;
}
