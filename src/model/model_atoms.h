/* Internal: the adaptive C51 support of the model (docs/modules.md, "Adaptive atom
 * spacing"): per branch, Z - 1 spacing logits (parameter "c51.atoms" [n_branches, Z - 1],
 * zero at init: the uniform support) make the support [n_branches, Z] that the Q-values
 * sum_k z_k p_k of the branch's heads read (atoms_math.h). Kernels in the kit's pattern: CPU
 * in model_atoms.c, CUDA in cuda_atoms.cu. */
#ifndef VULPES_MODEL_ATOMS_H
#define VULPES_MODEL_ATOMS_H

#include <stdint.h>

#include "backend/kit.h"
#include "model/mops.h"
#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* support [nb, Z] = vp_atoms_support of each branch's spacing logits s [nb, Z - 1]. */
typedef vp_status vp_amops_support_fn(vp_backend* be, int nb, int Z, float v_min, float v_max, const float* s,
                                      float* support);

/* q [B, A] = sum_k support[br(a), k] exp(logp[b, a, k]) with br(a) the branch of head a;
 * logp [B, A, Z], support [nb, Z]. */
typedef vp_status vp_amops_q_fn(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, const float* support,
                                const float* logp, float* q);

/* Every kernel by name, in table order. */
#define VP_AMOPS_KERNELS(X, f, i) X(f, i, support) X(f, i, q)

/* One backend's adaptive-support kernels. */
typedef struct vp_amops {
    VP_KERNEL_FIELDS(VP_AMOPS_KERNELS, vp_amops)
} vp_amops;

/* The CPU kernels vp_acpu_<kernel> and their table (model_atoms.c). */
VP_KERNEL_DECLARE(VP_AMOPS_KERNELS, vp_amops, vp_acpu)
extern const vp_amops vp_amops_cpu;

/* The CUDA launchers vp_acuda_<kernel> and their table (cuda_atoms.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_AMOPS_KERNELS, vp_amops, vp_acuda)
extern const vp_amops vp_amops_cuda;

/* Checks cfg->adaptive_atoms (0 or 1; not with q_denoise, whose target reads the uniform
 * support). */
vp_status vp_model_atoms_check(const vp_model_cfg* c);

/* With adaptive atoms: the support of `params` ([n_weights]) into the activations (read by
 * the Q reduction and vp_model_support). A no-op without. */
vp_status vp_model_atoms_support(const vp_model* m, const vp_tensor* params, vp_model_acts* a);

/* With adaptive atoms: a->q [batch, A] from the log-probabilities [batch * A, Z] on the
 * activations' support (vp_model_atoms_support ran first). */
vp_status vp_model_atoms_q(const vp_model* m, vp_model_acts* a, int64_t batch);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_ATOMS_H */
