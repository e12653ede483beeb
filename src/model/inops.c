/* The input modules' kernel tables and their choice by backend kind. */
#include "model/inops.h"

const vp_inops vp_inops_cpu = VP_INOPS_TABLE(vp_cpu);

vp_status vp_inops_get(const vp_backend* be, const vp_inops** out) {
    VP_REQUIRE(out != NULL, VP_ERR_INVALID_ARG, "vp_inops_get: out is NULL");
    const void* t = NULL;
    vp_status s = vp_kernels_select("vp_inops_get", "input module kernels", be, &vp_inops_cpu,
                                    VP_KERNELS_CUDA(vp_inops_cuda), &t);
    *out = (const vp_inops*)t;
    return s;
}
