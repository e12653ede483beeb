/* The head-module kernel tables and their choice by backend kind. */
#include "model/hmops.h"

const vp_hmops vp_hmops_cpu = VP_KERNEL_TABLE(VP_HMOPS_KERNELS, vp_hmops, vp_hcpu);

vp_status vp_hmops_get(const vp_backend* be, const vp_hmops** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_hmops_get: out is NULL");
    const void* t = NULL;
    vp_status s = vp_kernels_select("vp_hmops_get", "head-module kernels", be, &vp_hmops_cpu,
                                    VP_KERNELS_CUDA(vp_hmops_cuda), &t);
    *out = (const vp_hmops*)t;
    return s;
}
