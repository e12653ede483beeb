/* The table of the Decision Transformer's kernels for a backend's kind (dt_cpu.c, dt_cuda.cu),
 * and the raw pointers of a batch. */
#include "learn/dt_impl.h"

vp_status vp_dt_kernels_of(const char* fn, vp_backend* b, const vp_dt_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "DT kernels", b, &vp_dt_cpu, VP_KERNELS_CUDA(vp_dt_cuda), &t);
    *out = (const vp_dt_kernels*)t;
    return s;
}

vp_dt_batch_ptrs vp_dt_batch_ptrs_of(const vp_dt_batch* x) {
    vp_dt_batch_ptrs p = {(int32_t*)x->bar.data, (float*)x->port.data, (int32_t*)x->act.data,
                          (float*)x->rtg.data,   (int32_t*)x->ts.data,  (float*)x->valid.data};
    return p;
}
