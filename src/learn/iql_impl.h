/* Internal: IQL's kernels (the kit's pattern, backend/kit.h). iql_kern.c picks the table of the
 * backend's kind; the callers (iql_iterate.c) pass the trainer's own buffers, whose shapes are
 * fixed at set-up. The CPU loops (iql_cpu.c) and the CUDA kernels (iql_cuda.cu) share the
 * per-sample math of iql_math.h. */
#ifndef VP_LEARN_IQL_IMPL_H
#define VP_LEARN_IQL_IMPL_H

#include "backend/kit.h"
#include "learn/iql_math.h"
#include "vulpes/env.h"
#include "vulpes/iql.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

#ifdef __cplusplus
static_assert((int)VP_IQL_T_COUNT == (int)VP_IQL_STAT_COUNT, "the loss terms are the statistics");
#else
_Static_assert((int)VP_IQL_T_COUNT == (int)VP_IQL_STAT_COUNT, "the loss terms are the statistics");
#endif

/* Philox stream of the batches' row draws (under the learner's seed; apart from the encoder's
 * and the heads' initialisation streams and PPO's permutations). */
#define VP_IQL_SAMPLE_STREAM (0x4951ull << 52)

/* The dataset on the backend (vulpes/offline.h's arrays). */
typedef struct vp_iql_data_ptrs {
    int64_t steps, n_envs;   /* T, E */
    const int32_t* bar;      /* [T + 1, E] */
    const float* portfolio;  /* [T + 1, E, P] */
    const int32_t* action;   /* [T, E, 4] */
    const float* reward;     /* [T, E] */
    const float* done;       /* [T, E] */
} vp_iql_data_ptrs;

/* A batch's rows: the transition of each sampled dataset row. */
typedef struct vp_iql_rows {
    int32_t* bar;      /* [B] decision bar of s */
    float* portfolio;  /* [B, P] portfolio of s */
    int32_t* action;   /* [B, 4] */
    float* reward;     /* [B] */
    float* done;       /* [B] */
    int32_t* bar1;     /* [B] decision bar of s' (the same env's next row) */
    float* portfolio1; /* [B, P] portfolio of s' */
} vp_iql_rows;

/* ---- the kernels ---- */

/* Row k < B of the batch: dataset row vp_iql_row_at(T E, B, seed, stream, *ctr, k), its
 * transition into out (ctr [1] int64: the updates begun, read only). */
typedef vp_status vp_iql_sample_fn(vp_backend* b, int64_t B, uint64_t seed, uint64_t stream, const int64_t* ctr,
                                   vp_iql_data_ptrs d, vp_iql_rows out);

/* ctr[0] += 1 (saturating). */
typedef vp_status vp_iql_tick_fn(vp_backend* b, int64_t* ctr);

/* Every sample's terms [B, VP_IQL_T_COUNT] and gradients d q1, d q2, d logits [B, A], d v [B]
 * (vp_iql_sample_loss) from the heads' outputs q1, q2, qt1, qt2, logits [B, A], v, v1 [B] and the
 * batch's rows. */
typedef vp_status vp_iql_loss_fn(vp_backend* b, const vp_iql_loss_dims* d, const float* q1, const float* q2,
                                 const float* qt1, const float* qt2, const float* v, const float* v1,
                                 const float* logits, vp_iql_rows rows, float* terms, float* d_q1, float* d_q2,
                                 float* d_logits, float* d_v);

/* Every kernel by name, in table order. */
#define VP_IQL_KERNELS(X, f, i) X(f, i, sample) X(f, i, tick) X(f, i, loss)

/* One backend's IQL kernels. */
typedef struct vp_iql_kernels {
    VP_KERNEL_FIELDS(VP_IQL_KERNELS, vp_iql)
} vp_iql_kernels;

/* The table of b's kind into *out (iql_kern.c); fails naming fn where there is none. */
vp_status vp_iql_kernels_of(const char* fn, vp_backend* b, const vp_iql_kernels** out);

/* The CPU loops (iql_cpu.c). */
VP_KERNEL_DECLARE(VP_IQL_KERNELS, vp_iql, vp_iql_cpu)
extern const vp_iql_kernels vp_iql_cpu;

/* The CUDA launchers (iql_cuda.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_IQL_KERNELS, vp_iql, vp_iql_cuda)
extern const vp_iql_kernels vp_iql_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_IQL_IMPL_H */
