/* CUDA gather of rows by index (launcher; arguments checked by ops.c). */
#ifndef VP_CUDA_GATHER_CUH
#define VP_CUDA_GATHER_CUH

#include "common.cuh"

/* out[i, :] = src[idx[i], :], NaN rows for indices outside [0, rows(src)). */
vp_status vp_cuda_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out);

#endif /* VP_CUDA_GATHER_CUH */
