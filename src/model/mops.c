/* The model kernel tables and their choice by backend kind. */
#include "model/cpu_mops.h"
#ifdef VP_HAVE_CUDA
#include "model/cuda_mops.h"
#endif

const vp_mops vp_mops_cpu = VP_MOPS_TABLE(vp_cpu);

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
