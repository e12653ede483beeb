/* Internal, private to src/backend/: the backend function table. Each backend fills one
 * vp_backend_ops; the public entry points (backend.c, ops.c) check arguments and then
 * call through it, so an implementation may assume NULLs, dtypes, shapes and memory
 * kinds are valid. Layers above the backend include backend/kit.h instead. */
#ifndef VULPES_BACKEND_IMPL_H
#define VULPES_BACKEND_IMPL_H

#include "vulpes/backend.h"
#include "vulpes/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Every function of a backend's table, in table order: X(arg, ret, name, params). The
 * struct below, each backend's declarations (VP_BACKEND_OPS_DECLARE) and each backend's
 * table (VP_BACKEND_OPS_TABLE) are generated from this one list, so an implementation is
 * found by its name, never by its place. The ops have the meaning of the public functions
 * in ops.h, with their arguments already checked (adamw's `lr` and clip_coef's `max_norm_t`,
 * [1] f32 or NULL, replace cfg->lr and max_norm when given: vp_adamw_lr, vp_clip_coef_at). */
#define VP_BACKEND_OPS(X, arg)                                                                      \
    /* lifecycle and memory */                                                                      \
    X(arg, void, destroy, (vp_backend* b))                                                          \
    X(arg, vp_status, sync, (vp_backend* b))                                                        \
    X(arg, void*, stream, (vp_backend* b))                                                          \
    X(arg, vp_status, buffer_alloc, (vp_backend* b, vp_mem m, size_t bytes, vp_buffer* out))        \
    X(arg, void, buffer_free, (vp_backend* b, vp_buffer* buf))                                      \
    X(arg, vp_status, upload, (vp_backend* b, void* dst, const void* src_host, size_t bytes))       \
    X(arg, vp_status, download, (vp_backend* b, void* dst_host, const void* src, size_t bytes))     \
    X(arg, vp_status, graph_capture, (vp_backend* b, vp_graph* g))                                  \
    X(arg, vp_status, graph_launch, (vp_backend* b, vp_graph* g))                                   \
    X(arg, void, graph_destroy, (vp_graph* g))                                                      \
    X(arg, vp_status, lane, (vp_backend* b, vp_backend** out))                                      \
    X(arg, vp_status, after, (vp_backend* to, vp_backend* from))                                    \
    /* fill / copy / convert */                                                                     \
    X(arg, vp_status, fill, (vp_backend* b, vp_tensor* x, float value))                             \
    X(arg, vp_status, fill_i32, (vp_backend* b, vp_tensor* x, int32_t value))                       \
    X(arg, vp_status, copy, (vp_backend* b, const vp_tensor* src, vp_tensor* dst))                  \
    X(arg, vp_status, convert, (vp_backend* b, const vp_tensor* src, vp_tensor* dst))               \
    /* GEMM */                                                                                      \
    X(arg, vp_status, gemm,                                                                         \
      (vp_backend* b, const vp_gemm_desc* d, const vp_tensor* A, const vp_tensor* B,                \
       const vp_tensor* bias, vp_tensor* C))                                                        \
    /* element-wise */                                                                              \
    X(arg, vp_status, unary, (vp_backend* b, vp_unary_op op, const vp_tensor* x, vp_tensor* y))     \
    X(arg, vp_status, unary_backward,                                                               \
      (vp_backend* b, vp_unary_op op, const vp_tensor* x, const vp_tensor* dy, vp_tensor* dx))      \
    X(arg, vp_status, binary,                                                                       \
      (vp_backend* b, vp_binary_op op, const vp_tensor* a, const vp_tensor* bb, vp_tensor* c))      \
    X(arg, vp_status, axpby, (vp_backend* b, float alpha, const vp_tensor* x, float beta, vp_tensor* y)) \
    X(arg, vp_status, scale_by, (vp_backend* b, vp_tensor* x, const vp_tensor* s))                  \
    /* softmax */                                                                                   \
    X(arg, vp_status, softmax, (vp_backend* b, const vp_tensor* x, vp_tensor* y, int is_log))       \
    X(arg, vp_status, softmax_backward,                                                             \
      (vp_backend* b, const vp_tensor* y, const vp_tensor* dy, vp_tensor* dx, int is_log))          \
    /* normalisation */                                                                             \
    X(arg, vp_status, layernorm,                                                                    \
      (vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, const vp_tensor* beta,            \
       float eps, int relu, vp_tensor* y, vp_tensor* mean, vp_tensor* rstd))                        \
    X(arg, vp_status, layernorm_backward,                                                           \
      (vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,              \
       const vp_tensor* mean, const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma,              \
       vp_tensor* dbeta))                                                                           \
    X(arg, vp_status, rmsnorm,                                                                      \
      (vp_backend* b, const vp_tensor* x, const vp_tensor* gamma, float eps, vp_tensor* y,          \
       vp_tensor* rstd))                                                                            \
    X(arg, vp_status, rmsnorm_backward,                                                             \
      (vp_backend* b, const vp_tensor* dy, const vp_tensor* x, const vp_tensor* gamma,              \
       const vp_tensor* rstd, vp_tensor* dx, vp_tensor* dgamma))                                    \
    /* reductions and gather */                                                                     \
    X(arg, vp_status, reduce_rows, (vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out)) \
    X(arg, vp_status, reduce_cols, (vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out)) \
    X(arg, vp_status, reduce_all, (vp_backend* b, vp_reduce_op op, const vp_tensor* x, vp_tensor* out)) \
    X(arg, vp_status, gather_rows,                                                                  \
      (vp_backend* b, const vp_tensor* src, const vp_tensor* idx, vp_tensor* out))                  \
    /* optimiser */                                                                                 \
    X(arg, vp_status, adamw,                                                                        \
      (vp_backend* b, const vp_adamw_cfg* cfg, const vp_tensor* lr, vp_tensor* param,               \
       const vp_tensor* grad, vp_tensor* m, vp_tensor* v, const vp_tensor* step,                    \
       const vp_tensor* grad_scale))                                                                \
    X(arg, vp_status, step_increment, (vp_backend* b, vp_tensor* counter))                          \
    X(arg, vp_status, clip_coef,                                                                    \
      (vp_backend* b, const vp_tensor* x, float max_norm, const vp_tensor* max_norm_t,              \
       vp_tensor* norm, vp_tensor* coef))                                                          \
    /* attention */                                                                                 \
    X(arg, vp_status, attention,                                                                    \
      (vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,                \
       const vp_tensor* v, vp_tensor* out, vp_tensor* lse))                                         \
    X(arg, vp_status, attention_backward,                                                           \
      (vp_backend* b, const vp_attn_desc* d, const vp_tensor* q, const vp_tensor* k,                \
       const vp_tensor* v, const vp_tensor* out, const vp_tensor* lse, const vp_tensor* dout,       \
       vp_tensor* dq, vp_tensor* dk, vp_tensor* dv))

#define VP_BACKEND_OP_FIELD_(unused, ret, name, params) ret(*name) params;
#define VP_BACKEND_OP_DECLARE_(prefix, ret, name, params) ret prefix##_##name params;
#define VP_BACKEND_OP_ENTRY_(prefix, ret, name, params) prefix##_##name,

/* Declares prefix_<op> for every op of the list ("VP_BACKEND_OPS_DECLARE(vp_cpu)"). */
#define VP_BACKEND_OPS_DECLARE(prefix) VP_BACKEND_OPS(VP_BACKEND_OP_DECLARE_, prefix)

/* The initialiser of a table whose ops are prefix_<op>: each entry is named from the
 * list, in the list's order (valid in C and C++). */
#define VP_BACKEND_OPS_TABLE(prefix) {VP_BACKEND_OPS(VP_BACKEND_OP_ENTRY_, prefix)}

/* One backend's function table. */
typedef struct vp_backend_ops {
    VP_BACKEND_OPS(VP_BACKEND_OP_FIELD_, _)
} vp_backend_ops;

struct vp_backend {
    vp_backend_kind kind;          /* which implementation */
    const vp_backend_ops* ops;     /* its function table */
    char name[128];                /* "cpu", "cuda:0 NVIDIA H200" */
    vp_runtime_counters counters;  /* copies / allocations / syncs since init */
    void* impl;                    /* implementation state */
};

struct vp_graph {
    vp_backend* owner;  /* backend it was captured on */
    vp_graph_body body; /* the ops it issues */
    void* ctx;          /* body's context */
    void* exec;         /* CUDA: cudaGraphExec_t; CPU: NULL */
    void* graph;        /* CUDA: cudaGraph_t; CPU: NULL */
};

/* Backend constructors (cpu_backend.c, cuda_backend.cu). */
vp_status vp_cpu_backend_create(vp_backend** out);
vp_status vp_cuda_backend_create(vp_backend** out, int device);

/* The cudaStream_t (as void*) a CUDA backend issues its work on; NULL for any other
 * backend (cuda_backend.cu). Layers use vp_backend_stream (kit.h) instead. */
void* vp_cuda_backend_stream(vp_backend* b);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_BACKEND_IMPL_H */
