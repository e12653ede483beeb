/* Internal: the loss kernels' implementation table. loss.c checks the arguments and calls
 * the table of the backend's kind with raw pointers, so an implementation may assume
 * valid shapes, dtypes and memory kinds. */
#ifndef VP_LEARN_LOSS_IMPL_H
#define VP_LEARN_LOSS_IMPL_H

#include "learn/loss.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Raw pointers of a vp_loss_batch. */
typedef struct vp_loss_batch_ptrs {
    const int32_t* actions;      /* [B, n_branches] */
    const int32_t* next_actions; /* [B, n_branches] */
    const float* reward;         /* [B] */
    const float* discount;       /* [B] */
    const float* is_weight;      /* [B] */
} vp_loss_batch_ptrs;

/* One backend's loss kernels; same meaning as the functions in loss.h. */
typedef struct vp_loss_kernels {
    vp_status (*select)(vp_backend* b, const vp_loss_dims* d, const float* q /* [B, A] */,
                        int32_t* a_star /* [B, n_branches] */);
    vp_status (*project)(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n,
                         const float* support /* [rows, n] */, const float* probs /* [rows, n] */,
                         float* out /* [rows, Z] */);
    vp_status (*c51)(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                     const float* log_probs /* [B, A, Z] */, const float* target_log_probs /* [B, A, Z] */,
                     float* proj /* [B, n_branches, Z] */, float* loss /* [B] */,
                     float* d_log_probs /* [B, A, Z] */);
    vp_status (*iqn)(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                     const float* iqn /* [B, n_taus, A] */, const float* target_iqn /* [B, n_target_taus, A] */,
                     const float* taus /* [B, n_taus] */, float* loss /* [B] */,
                     float* d_iqn /* [B, n_taus, A] */);
    vp_status (*taus)(vp_backend* b, uint64_t seed, uint64_t stream, const int32_t* step /* [1] or NULL */,
                      int64_t n, float* taus /* [n] */);
    vp_status (*stats)(vp_backend* b, const vp_loss_dims* d, const float* c51 /* [B] */,
                       const float* iqn /* [B] or NULL */, const float* is_weight /* [B] */,
                       const float* q /* [B, A] */, const float* grad_norm /* [1] */,
                       float* stats /* [VP_STAT_COUNT] */);
} vp_loss_kernels;

/* The CPU loops (cpu_loss.c). */
const vp_loss_kernels* vp_loss_cpu_kernels(void);

#ifdef VP_HAVE_CUDA
/* The CUDA kernels (cuda_loss.cu). */
const vp_loss_kernels* vp_loss_cuda_kernels(void);
#endif

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_LOSS_IMPL_H */
