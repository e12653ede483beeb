/* CUDA kernels of the adaptive C51 support (model_atoms.h), then their launchers and the
 * vp_amops_cuda table. The math is atoms_math.h, shared with the CPU loops. */
#include "backend/kit.h"

extern "C" {
#include "model/atoms_math.h"
#include "model/model_atoms.h"
}

/* One thread per branch: its support from its spacing logits. */
__global__ void atoms_support_kernel(int nb, int Z, float v_min, float v_max, const float* __restrict__ s,
                                     float* __restrict__ support) {
    const int br = blockIdx.x * blockDim.x + threadIdx.x;
    if (br < nb) vp_atoms_support(s + br * (Z - 1), Z, v_min, v_max, support + br * Z);
}

/* One thread per (sample, head): the expected value on its branch's support, summed in atom
 * order as the CPU loop. */
__global__ void atoms_q_kernel(int64_t B, int Z, vp_branch_map br, int A, const float* __restrict__ support,
                               const float* __restrict__ logp, float* __restrict__ q) {
    for (int64_t e = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; e < B * A; e += (int64_t)gridDim.x * blockDim.x) {
        const int a = (int)(e % A);
        int k = 0, a0 = 0;
        while (k < br.n - 1 && a >= a0 + br.size[k]) a0 += br.size[k++];
        q[e] = vp_atoms_q(support + k * Z, logp + e * Z, Z);
    }
}

extern "C" vp_status vp_acuda_support(vp_backend* be, int nb, int Z, float v_min, float v_max, const float* s,
                                      float* support) {
    VP_REQUIRE(s && support && nb >= 1 && Z >= 2, VP_ERR_INVALID_ARG, "cuda adaptive-atoms support: bad arguments");
    atoms_support_kernel<<<1, 32, 0, vp_cuda_stream_of(be)>>>(nb, Z, v_min, v_max, s, support);
    VP_CUDA_CHECK_LAUNCH("atoms_support_kernel");
    return VP_OK;
}

extern "C" vp_status vp_acuda_q(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, const float* support,
                                const float* logp, float* q) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && support && logp && q && B >= 1 && Z >= 2, VP_ERR_INVALID_ARG,
               "cuda adaptive-atoms q: bad arguments");
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    atoms_q_kernel<<<vp_cuda_grid(B * A, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        B, Z, *br, A, support, logp, q);
    VP_CUDA_CHECK_LAUNCH("atoms_q_kernel");
    return VP_OK;
}

extern "C" const vp_amops vp_amops_cuda = VP_KERNEL_TABLE(VP_AMOPS_KERNELS, vp_amops, vp_acuda);
