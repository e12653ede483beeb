/* Internal: the CPU implementations of the model kernels, vp_cpu_<kernel> for every
 * kernel of mops.h (their contracts are there): cpu_mamba.c has conv and scan, cpu_span.c the
 * span encoding's per-bar conv and indexed scan, cpu_heads_fold.c the folded output layers, cpu_heads.c
 * the rest (with iqn_embed, the reference of the CUDA one-pass embedding). */
#ifndef VULPES_MODEL_CPU_MOPS_H
#define VULPES_MODEL_CPU_MOPS_H

#include "model/mops.h"

VP_MOPS_DECLARE(vp_cpu)

#endif /* VULPES_MODEL_CPU_MOPS_H */
