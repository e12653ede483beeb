/* The forward model's input and row mask on the CPU backend: loops over the shared element
 * functions. */
#include "learn/curiosity_impl.h"

vp_status vp_curiosity_cpu_input(vp_backend* b, const vp_curiosity_dims* d, const float* enc, const float* port,
                                 const int32_t* act, float* x) {
    (void)b;
    const int64_t D = (int64_t)d->enc_dim + d->n_port + d->layout.n_heads;
    for (int64_t i = 0; i < d->n; ++i)
        for (int64_t j = 0; j < D; ++j) x[i * D + j] = vp_curiosity_input_elem(d, enc, port, act, i, j);
    return VP_OK;
}

vp_status vp_curiosity_cpu_mask(vp_backend* b, int64_t n, int P, const float* done, float* x) {
    (void)b;
    for (int64_t i = 0; i < n; ++i)
        for (int k = 0; k < P; ++k) x[i * P + k] = vp_curiosity_mask_elem(done, x, i, k, P);
    return VP_OK;
}

const vp_curiosity_kernels vp_curiosity_cpu = VP_KERNEL_TABLE(VP_CURIOSITY_KERNELS, vp_curiosity, vp_curiosity_cpu);
