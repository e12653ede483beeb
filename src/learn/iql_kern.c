/* The table of IQL's kernels for a backend's kind (iql_cpu.c, iql_cuda.cu). */
#include "learn/iql_impl.h"

vp_status vp_iql_kernels_of(const char* fn, vp_backend* b, const vp_iql_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "IQL kernels", b, &vp_iql_cpu, VP_KERNELS_CUDA(vp_iql_cuda), &t);
    *out = (const vp_iql_kernels*)t;
    return s;
}
