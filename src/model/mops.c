/* The model kernel tables and their choice by backend kind. */
#include "model/cpu_mops.h"

const vp_mops vp_mops_cpu = VP_MOPS_TABLE(vp_cpu);

vp_status vp_mops_get(const vp_backend* be, const vp_mops** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_mops_get: out is NULL");
    const void* t = NULL;
    vp_status s =
        vp_kernels_select("vp_mops_get", "model kernels", be, &vp_mops_cpu, VP_KERNELS_CUDA(vp_mops_cuda), &t);
    *out = (const vp_mops*)t;
    return s;
}
