/* The model kernel tables and their choice by backend kind. */
#include "model/cpu_mops.h"
#ifdef VP_HAVE_CUDA
#include "model/cuda_mops.h"
#endif

const vp_mops vp_mops_cpu = {
    .window_index = vp_cpu_window_index,
    .take_last = vp_cpu_take_last,
    .add_last = vp_cpu_add_last,
    .conv_forward = vp_cpu_conv_forward,
    .conv_backward = vp_cpu_conv_backward,
    .scan_forward = vp_cpu_scan_forward,
    .scan_backward = vp_cpu_scan_backward,
    .dueling_forward = vp_cpu_dueling_forward,
    .dueling_backward = vp_cpu_dueling_backward,
    .c51_q = vp_cpu_c51_q,
    .iqn_cos = vp_cpu_iqn_cos,
    .iqn_mix_forward = vp_cpu_iqn_mix_forward,
    .iqn_mix_backward = vp_cpu_iqn_mix_backward,
};

vp_status vp_mops_get(const vp_backend* be, const vp_mops** out) {
    VP_REQUIRE(be != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_mops_get: backend or out is NULL");
    *out = NULL;
    switch (vp_backend_get_kind(be)) {
    case VP_BACKEND_CPU: *out = &vp_mops_cpu; return VP_OK;
    case VP_BACKEND_CUDA:
#ifdef VP_HAVE_CUDA
        *out = &vp_mops_cuda;
        return VP_OK;
#else
        VP_FAIL(VP_ERR_UNSUPPORTED, "this build has no CUDA model kernels (nvcc was not found at build time)");
#endif
    default: VP_FAIL(VP_ERR_INVALID_ARG, "vp_mops_get: backend %s has unknown kind %d", vp_backend_name(be),
                     (int)vp_backend_get_kind(be));
    }
}
