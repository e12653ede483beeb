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

/* ---- cpu_gemm.c ----------------------------------------------------------------------- */
vp_status vp_cpu_gemm(vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,
                      const vp_tensor* bias, vp_tensor* C);

/* ---- cpu_elementwise.c ---------------------------------------------------------------- */
vp_status vp_cpu_fill(vp_backend* b, vp_tensor* x, float value);
vp_status vp_cpu_fill_i32(vp_backend* b, vp_tensor* x, int32_t value);
vp_status vp_cpu_copy(vp_backend* b, const vp_tensor* src, vp_tensor* dst);
vp_status vp_cpu_convert(vp_backend* b, const vp_tensor* src, vp_tensor* dst);
vp_status vp_cpu_unary(vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y);
vp_status vp_cpu_unary_backward(vp_backend* b, vp_unary_op op, const vp_tensor* x, const vp_tensor* dy,
                                vp_tensor* dx);
vp_status vp_cpu_binary(vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c);
vp_status vp_cpu_axpby(vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y);
vp_status vp_cpu_scale_by(vp_backend* b, vp_tensor* x, const vp_tensor* s);

/* ---- cpu_softmax.c --------------------------------------------------------------------- */
vp_status vp_cpu_softmax(vp_backend* b, const vp_tensor* x, vp_tensor* y, int is_log);
vp_status vp_cpu_softmax_backward(vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx,
                                  int is_log);

/* ---- cpu_norm.c ------------------------------------------------------------------------- */
vp_status vp_cpu_layernorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,
                           float eps, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd);
vp_status vp_cpu_layernorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                                    const vp_tensor* gamma, const vp_tensor* mean, const vp_tensor* rstd,
                                    vp_tensor* dx, vp_tensor* dgamma, vp_tensor* dbeta);
vp_status vp_cpu_rmsnorm(vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,
                         vp_tensor* rstd);
vp_status vp_cpu_rmsnorm_backward(vp_backend* b, const vp_tensor* dy, const vp_tensor* x,
                                  const vp_tensor* gamma, const vp_tensor* rstd, vp_tensor* dx,
                                  vp_tensor* dgamma);

/* ---- cpu_reduce.c ------------------------------------------------------------------------ */
vp_status vp_cpu_reduce_rows(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);
vp_status vp_cpu_reduce_cols(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);
vp_status vp_cpu_reduce_all(vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out);

/* ---- cpu_gather.c ------------------------------------------------------------------------- */
vp_status vp_cpu_gather_rows(vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out);

/* ---- cpu_optim.c --------------------------------------------------------------------------- */
vp_status vp_cpu_adamw(vp_backend* b, const vp_adamw_cfg* cfg, vp_tensor* param, const vp_tensor* grad,
                       vp_tensor* m, vp_tensor* v, const vp_tensor* step, const vp_tensor* grad_scale);
vp_status vp_cpu_step_increment(vp_backend* b, vp_tensor* counter);
vp_status vp_cpu_clip_coef(vp_backend* b, const vp_tensor* x, float max_norm, vp_tensor* norm,
                           vp_tensor* coef);

#endif /* VULPES_CPU_IMPL_H */
