/* Internal: the CUDA implementations of the model kernels, vp_cuda_<kernel> for every
 * kernel of mops.h (their contracts are there): cuda_mamba.cu has conv and scan, cuda_span.cu
 * the span encoding's per-bar conv and indexed scan,
 * cuda_iqn.cu the one-pass IQN embedding, cuda_heads_fold.cu the folded output layers,
 * cuda_heads.cu the rest and the vp_mops_cuda
 * table (declared in mops.h). Each launcher
 * checks its preconditions, runs on the backend's stream and checks the launch. */
#ifndef VULPES_MODEL_CUDA_MOPS_H
#define VULPES_MODEL_CUDA_MOPS_H

#include "model/mops.h"

#ifdef __cplusplus
extern "C" {
#endif

VP_MOPS_DECLARE(vp_cuda)

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_CUDA_MOPS_H */
