/* Internal: the Decision Transformer's kernels (the kit's pattern, backend/kit.h). dt_kern.c
 * picks the table of the backend's kind; the callers (dt_fwd.c, dt_bwd.c, dt_iterate.c,
 * dt_policy.c) pass their own buffers, whose shapes are fixed at set-up; the CPU loops (dt_cpu.c)
 * and the CUDA kernels (dt_cuda.cu) share the per-element math of dt_math.h. */
#ifndef VP_LEARN_DT_IMPL_H
#define VP_LEARN_DT_IMPL_H

#include "backend/kit.h"
#include "learn/dt_math.h"
#include "vulpes/dt.h"
#include "vulpes/env.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Philox stream of the batch draws (stream + sequence; under the learner's seed). */
#define VP_DT_SAMPLE_STREAM (0x4454ull << 48)

/* The embedding's arguments. */
typedef struct vp_dt_embed_args {
    vp_dt_dims d;              /* the shape */
    vp_action_layout lay;      /* the action layout */
    int64_t B;                 /* sequences */
    const float* stok;         /* [B K, D] the state linear's output */
    const float* rtg;          /* [B K] */
    const int32_t* act;        /* [B K, 4] */
    const int32_t* ts;         /* [B K] */
    const float* ret_w;        /* [D] */
    const float* ret_b;        /* [D] */
    const float* act_e;        /* [A, D] */
    const float* time_e;       /* [TM, D] */
} vp_dt_embed_args;

/* x0 [B L, D] = the three tokens of every step (vp_dt_embed_at). */
typedef vp_status vp_dt_embed_fn(vp_backend* b, const vp_dt_embed_args* a, float* x0);

/* From dx0 [B L, D]: d stok [B K, D] and the gradients (overwritten) of ret_w, ret_b [D], act_e
 * [A, D] and time_e [TM, D] (a's pointers to the forward's inputs; the weights unused). */
typedef vp_status vp_dt_embed_backward_fn(vp_backend* b, const vp_dt_embed_args* a, const float* dx0, float* dstok,
                                          float* g_ret_w, float* g_ret_b, float* g_act_e, float* g_time_e);

/* y [n] = gelu(x [n]). */
typedef vp_status vp_dt_gelu_fn(vp_backend* b, int64_t n, const float* x, float* y);

/* dx [n] = dy [n] gelu'(x [n]) (dx may alias dy). */
typedef vp_status vp_dt_gelu_backward_fn(vp_backend* b, int64_t n, const float* x, const float* dy, float* dx);

/* count [1] = the sum of valid [n] (in order). */
typedef vp_status vp_dt_count_fn(vp_backend* b, int64_t n, const float* valid, float* count);

/* Every token row of logits [B L, A]: the loss terms [B K] and d logits [B L, A] (vp_dt_loss_row,
 * 1 / count[0] the scale). */
typedef vp_status vp_dt_loss_fn(vp_backend* b, const vp_dt_dims* d, const vp_action_layout* lay, int64_t B,
                                const float* logits, const int32_t* act, const float* valid, const float* count,
                                float* terms, float* d_logits);

/* Every sequence of the batch x [B] drawn from rows d with draw index index[0] (vp_dt_sample_seq). */
typedef vp_status vp_dt_sample_fn(vp_backend* b, const vp_dt_dims* dd, int64_t B, uint64_t seed, const int32_t* index,
                                  vp_dt_rows_ptrs d, vp_dt_batch_ptrs x);

/* Rows [N] of the history pushed at each row's step steps [N] (vp_dt_hist_push_at) from enc [N, H],
 * port [N, P]. */
typedef vp_status vp_dt_hist_push_fn(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps,
                                     const float* enc, const float* port, vp_dt_hist_ptrs h);

/* Each row's sequence at its step steps [N] into e_seq [N K, H] and x (vp_dt_hist_seq_at). */
typedef vp_status vp_dt_hist_seq_fn(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps,
                                    vp_dt_hist_ptrs h, float* e_seq, vp_dt_batch_ptrs x);

/* scores [N, A] = the logits [N L, A] at each row's last state token, its step steps [N]
 * (vp_dt_readout_at). */
typedef vp_status vp_dt_readout_fn(vp_backend* b, const vp_dt_dims* d, int64_t N, const int32_t* steps,
                                   const float* logits, float* scores);

/* Rows [N] after the environment's step: actions [N, 4] and rewards [N] (NaN: no step), steps [N]
 * advanced where a step was taken (vp_dt_hist_observe_at). */
typedef vp_status vp_dt_hist_observe_fn(vp_backend* b, const vp_dt_dims* d, int64_t N, int32_t* steps,
                                        const int32_t* actions, const float* rewards, vp_dt_hist_ptrs h);

/* Every kernel by name, in table order. */
#define VP_DT_KERNELS(X, f, i)                                                                         \
    X(f, i, embed) X(f, i, embed_backward) X(f, i, gelu) X(f, i, gelu_backward) X(f, i, count)         \
    X(f, i, loss) X(f, i, sample) X(f, i, hist_push) X(f, i, hist_seq) X(f, i, readout)                 \
    X(f, i, hist_observe)

/* One backend's DT kernels. */
typedef struct vp_dt_kernels {
    VP_KERNEL_FIELDS(VP_DT_KERNELS, vp_dt)
} vp_dt_kernels;

/* The table of b's kind into *out (dt_kern.c); fails naming fn where there is none. */
vp_status vp_dt_kernels_of(const char* fn, vp_backend* b, const vp_dt_kernels** out);

/* The CPU loops (dt_cpu.c). */
VP_KERNEL_DECLARE(VP_DT_KERNELS, vp_dt, vp_dt_cpu)
extern const vp_dt_kernels vp_dt_cpu;

/* The CUDA launchers (dt_cuda.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_DT_KERNELS, vp_dt, vp_dt_cuda)
extern const vp_dt_kernels vp_dt_cuda;

/* Raw pointers of a batch. */
vp_dt_batch_ptrs vp_dt_batch_ptrs_of(const vp_dt_batch* x);

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_DT_IMPL_H */
