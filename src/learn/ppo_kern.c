/* The table of PPO's kernels for a backend's kind (ppo_cpu.c, ppo_cuda.cu). Their callers
 * (ppo_iterate.c) pass the trainer's own buffers, whose shapes are fixed at set-up. */
#include "learn/ppo_impl.h"

vp_status vp_ppo_kernels_of(const char* fn, vp_backend* b, const vp_ppo_kernels** out) {
    const void* t = NULL;
    vp_status s = vp_kernels_select(fn, "PPO kernels", b, &vp_ppo_cpu, VP_KERNELS_CUDA(vp_ppo_cuda), &t);
    *out = (const vp_ppo_kernels*)t;
    return s;
}
