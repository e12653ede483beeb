/* CUDA kernel of the Q-denoise refinement's loss (hmops.h), then its launcher and the
 * vp_hmops_cuda table. */
#include <math.h>

#include "backend/kit.h"
#include "model/hmops.h"

/* One thread per sample: every branch's target expectation against the taken head, in the
 * CPU loop's order. */
__global__ void qd_loss_kernel(const float* __restrict__ proj, const int32_t* __restrict__ actions,
                               const float* __restrict__ w, const float* __restrict__ q, float* loss, float* d_q,
                               int64_t B, int Z, float v_min, float dz, vp_branch_map br, int A, float inv) {
    for (int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; b < B; b += (int64_t)gridDim.x * blockDim.x) {
        float sum = 0.0f;
        for (int a = 0; a < A; ++a) d_q[b * A + a] = 0.0f;
        int a0 = 0;
        for (int k = 0; k < br.n; ++k) {
            const int act = actions[b * br.n + k];
            if (act < 0 || act >= br.size[k]) {
                sum = NAN;
                a0 += br.size[k];
                continue;
            }
            const float* pr = proj + (b * br.n + k) * Z;
            float y = 0.0f;
            for (int z = 0; z < Z; ++z) y += (v_min + (float)z * dz) * pr[z];
            const float r = q[b * A + a0 + act] - y;
            sum += 0.5f * r * r;
            d_q[b * A + a0 + act] = w[b] * inv * r;
            a0 += br.size[k];
        }
        loss[b] = sum / (float)br.n;
    }
}

extern "C" vp_status vp_hcuda_qd_loss(vp_backend* be, int64_t B, int Z, float v_min, float v_max,
                                      const vp_branch_map* br, const float* proj, const int32_t* actions,
                                      const float* w, const float* q, float* loss, float* d_q) {
    VP_REQUIRE(br && br->n >= 1 && br->n <= 8 && proj && actions && w && q && loss && d_q && B >= 1 && Z >= 2,
               VP_ERR_INVALID_ARG, "cuda qd_loss: bad arguments");
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    const float dz = (v_max - v_min) / (float)(Z - 1), inv = 1.0f / ((float)B * (float)br->n);
    qd_loss_kernel<<<vp_cuda_grid(B, VP_CUDA_THREADS), VP_CUDA_THREADS, 0, vp_cuda_stream_of(be)>>>(
        proj, actions, w, q, loss, d_q, B, Z, v_min, dz, *br, A, inv);
    VP_CUDA_CHECK_LAUNCH("qd_loss_kernel");
    return VP_OK;
}

/* ---- the table ------------------------------------------------------------------------------------ */

extern "C" const vp_hmops vp_hmops_cuda = VP_KERNEL_TABLE(VP_HMOPS_KERNELS, vp_hmops, vp_hcuda);
