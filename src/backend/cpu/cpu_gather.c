/* Gather of rows by index on the CPU; an index outside the source gives a NaN row. */
#include <math.h>

#include "cpu_impl.h"

vp_status vp_cpu_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out) {
    (void)b;
    const int64_t r = vp_tensor_rows(src), n = vp_tensor_cols(src);
    const int64_t m = vp_tensor_numel(idx);
    const float* s = (const float*)src->data;     /* [r, n] */
    const int32_t* ix = (const int32_t*)idx->data; /* [m] */
    float* o = (float*)out->data;                  /* [m, n] */
    for (int64_t i = 0; i < m; ++i) {
        float* orow = o + i * n;
        /* an index outside [0, r) is never dereferenced: the row becomes NaN */
        if (ix[i] < 0 || (int64_t)ix[i] >= r) {
            for (int64_t j = 0; j < n; ++j) orow[j] = NAN;
        } else {
            memcpy(orow, s + (int64_t)ix[i] * n, (size_t)n * sizeof(float));
        }
    }
    return VP_OK;
}
