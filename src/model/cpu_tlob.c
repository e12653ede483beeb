/* CPU kernels of the TLOB encoder (tlops.h) and the kernel tables' choice by backend kind. */
#include "model/tlops.h"

vp_status vp_tlcpu_transpose(vp_backend* be, int64_t B, int64_t r, int64_t c, const float* src, float* dst) {
    (void)be;
    for (int64_t b = 0; b < B; ++b) {
        const float* s = src + b * r * c; /* [r, c] */
        float* d = dst + b * r * c;       /* [c, r] */
        for (int64_t i = 0; i < r; ++i)
            for (int64_t j = 0; j < c; ++j) d[j * r + i] = s[i * c + j];
    }
    return VP_OK;
}

const vp_tlops vp_tlops_cpu = VP_KERNEL_TABLE(VP_TLOPS_KERNELS, vp_tlops, vp_tlcpu);

vp_status vp_tlops_get(const vp_backend* be, const vp_tlops** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_tlops_get: out is NULL");
    const void* t = NULL;
    vp_status s = vp_kernels_select("vp_tlops_get", "TLOB kernels", be, &vp_tlops_cpu, VP_KERNELS_CUDA(vp_tlops_cuda),
                                    &t);
    *out = (const vp_tlops*)t;
    return s;
}
