/* Internal: the CPU backend's ops, one file per concern, gathered into the table by
 * cpu_backend.c. Arguments arrive checked by ops.c (NULLs, dtypes, shapes, memory). */
#ifndef VULPES_CPU_IMPL_H
#define VULPES_CPU_IMPL_H

#include <stdint.h>
#include <string.h>

#include "backend/backend_impl.h"

/* ---- bf16 <-> f32 (shared by convert and the BF16 GEMM) ---------------------------- */

/* f32 -> bf16 bits, round to nearest even; a NaN stays a (quiet) NaN. */
static inline uint16_t vp_cpu_f32_to_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* bf16 bits -> f32 (exact). */
static inline float vp_cpu_bf16_to_f32(uint16_t h) {
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* ---- the ops: vp_cpu_<op> for every op of the table --------------------------------------
 * lifecycle and memory in cpu_backend.c; cpu_gemm.c; cpu_elementwise.c (fill, copy, convert,
 * unary, binary, axpby, scale_by); cpu_softmax.c; cpu_norm.c; cpu_reduce.c; cpu_gather.c;
 * cpu_optim.c (adamw, step_increment, clip_coef); cpu_attention.c. */
VP_BACKEND_OPS_DECLARE(vp_cpu)

/* Tests only: 1 makes the CPU GEMM's row-exact kernel run its portable build instead of
 * the AVX-512 or AVX2 one (all builds give the same bits; tests/test_ops_gemm_batch.c). */
void vp_cpu_gemm_force_portable(int on);

#endif /* VULPES_CPU_IMPL_H */
