/* The forward model's input and row mask on the CUDA backend: kernels, then launchers. The
 * element functions are the CPU loops' (curiosity_impl.h), so both write the same bits. */
#include <stdint.h>

#include "backend/kit.h"
#include "learn/curiosity_impl.h"

/* Grid-stride over the n x D elements of x. */
__global__ void curiosity_input_kernel(vp_curiosity_dims d, const float* enc, const float* port, const int32_t* act,
                                       float* x, int64_t D) {
    const int64_t total = d.n * D;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x)
        x[k] = vp_curiosity_input_elem(&d, enc, port, act, k / D, k % D);
}

extern "C" vp_status vp_curiosity_cuda_input(vp_backend* b, const vp_curiosity_dims* d, const float* enc,
                                             const float* port, const int32_t* act, float* x) {
    VP_REQUIRE(b != NULL && d != NULL && enc != NULL && port != NULL && act != NULL && x != NULL, VP_ERR_INVALID_ARG,
               "vp_curiosity_cuda_input: NULL argument");
    VP_REQUIRE(d->n >= 1, VP_ERR_INVALID_ARG, "vp_curiosity_cuda_input: %lld rows", (long long)d->n);
    const int64_t D = (int64_t)d->enc_dim + d->n_port + d->layout.n_heads;
    curiosity_input_kernel<<<vp_cuda_grid(d->n * D, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(b)>>>(
        *d, enc, port, act, x, D);
    VP_CUDA_CHECK_LAUNCH("curiosity_input_kernel");
    return VP_OK;
}

/* Grid-stride over the n x P elements of x, in place. */
__global__ void curiosity_mask_kernel(int64_t n, int P, const float* done, float* x) {
    const int64_t total = n * P;
    for (int64_t k = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; k < total; k += (int64_t)gridDim.x * blockDim.x)
        x[k] = vp_curiosity_mask_elem(done, x, k / P, k % P, P);
}

extern "C" vp_status vp_curiosity_cuda_mask(vp_backend* b, int64_t n, int P, const float* done, float* x) {
    VP_REQUIRE(b != NULL && done != NULL && x != NULL, VP_ERR_INVALID_ARG, "vp_curiosity_cuda_mask: NULL argument");
    VP_REQUIRE(n >= 1 && P >= 1, VP_ERR_INVALID_ARG, "vp_curiosity_cuda_mask: %lld rows of %d", (long long)n, P);
    curiosity_mask_kernel<<<vp_cuda_grid(n * P, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(b)>>>(n, P, done,
                                                                                                            x);
    VP_CUDA_CHECK_LAUNCH("curiosity_mask_kernel");
    return VP_OK;
}

extern "C" const vp_curiosity_kernels vp_curiosity_cuda =
    VP_KERNEL_TABLE(VP_CURIOSITY_KERNELS, vp_curiosity, vp_curiosity_cuda);
