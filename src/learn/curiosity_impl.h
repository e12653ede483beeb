/* Internal: the forward model's input kernel, written once (VP_HD) for the CPU loop
 * (curiosity_cpu.c) and the CUDA kernel (cuda_curiosity.cu), and its implementation tables
 * (the kit's pattern, backend/kit.h). curiosity.c checks the arguments first. */
#ifndef VP_LEARN_CURIOSITY_IMPL_H
#define VP_LEARN_CURIOSITY_IMPL_H

#include <stdint.h>

#include "backend/kit.h"
#include "vulpes/action.h"
#include "vulpes/defs.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes of one input build: n rows of D = H + P + A columns. */
typedef struct vp_curiosity_dims {
    int64_t n;                /* rows */
    int enc_dim;              /* H */
    int n_port;               /* P */
    vp_action_layout layout;  /* the one-hot part: A = layout.n_heads columns, branch br at offset[br] */
} vp_curiosity_dims;

/* Element (i, j) of the input x [n, D]: enc[i, j] for j < H, port[i, j - H] for j < H + P,
 * else 1 where column j - H - P is head act[i, br] of its branch br, 0 elsewhere.
 * enc [n, H], port [n, P], act [n, n_branches] i32. */
VP_HD float vp_curiosity_input_elem(const vp_curiosity_dims* d, const float* enc, const float* port,
                                    const int32_t* act, int64_t i, int64_t j) {
    const int H = d->enc_dim, P = d->n_port;
    if (j < H) return enc[i * H + j];
    if (j < H + P) return port[i * P + (j - H)];
    const int a = (int)(j - H - P);
    for (int br = 0; br < d->layout.n_branches; ++br) {
        const int off = d->layout.offset[br];
        if (a >= off && a < off + d->layout.size[br])
            return act[i * d->layout.n_branches + br] == a - off ? 1.0f : 0.0f;
    }
    return 0.0f;
}

/* Element k of row i of x [n, P] with the rows of steps that ended their episode zeroed:
 * x[i, k] where done[i] == 0, else 0 (done [n] f32). Such a step's next portfolio vector is
 * the next episode's start, not a consequence of the action. */
VP_HD float vp_curiosity_mask_elem(const float* done, const float* x, int64_t i, int64_t k, int P) {
    return done[i] == 0.0f ? x[i * P + k] : 0.0f;
}

/* x [n, D] = every vp_curiosity_input_elem. */
typedef vp_status vp_curiosity_input_fn(vp_backend* b, const vp_curiosity_dims* d, const float* enc,
                                        const float* port, const int32_t* act, float* x);

/* x [n, P] = every vp_curiosity_mask_elem, in place. */
typedef vp_status vp_curiosity_mask_fn(vp_backend* b, int64_t n, int P, const float* done, float* x);

/* Every kernel by name (the kit's list form). */
#define VP_CURIOSITY_KERNELS(X, f, i) X(f, i, input) X(f, i, mask)

/* One backend's kernels. */
typedef struct vp_curiosity_kernels {
    VP_KERNEL_FIELDS(VP_CURIOSITY_KERNELS, vp_curiosity)
} vp_curiosity_kernels;

/* The CPU loop (curiosity_cpu.c). */
VP_KERNEL_DECLARE(VP_CURIOSITY_KERNELS, vp_curiosity, vp_curiosity_cpu)
extern const vp_curiosity_kernels vp_curiosity_cpu;

/* The CUDA launcher on the backend's stream (cuda_curiosity.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_CURIOSITY_KERNELS, vp_curiosity, vp_curiosity_cuda)
extern const vp_curiosity_kernels vp_curiosity_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_CURIOSITY_IMPL_H */
