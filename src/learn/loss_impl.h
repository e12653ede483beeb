/* Internal: the loss kernels' implementation tables (the kit's pattern, backend/kit.h).
 * loss.c checks the arguments and calls the table of the backend's kind with raw
 * pointers, so an implementation may assume valid shapes, dtypes and memory kinds. */
#ifndef VP_LEARN_LOSS_IMPL_H
#define VP_LEARN_LOSS_IMPL_H

#include "backend/kit.h"
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
    const float* support;        /* [n_branches, Z] or NULL */
    const float* target_support; /* [n_branches, Z] or NULL (set with support) */
    const float* popart;         /* [VP_POPART_N] or NULL */
} vp_loss_batch_ptrs;

/* ---- the kernels: same meaning as the functions in loss.h, arguments checked ------------- */

/* vp_loss_select. */
typedef vp_status vp_loss_select_fn(vp_backend* b, const vp_loss_dims* d, const float* q /* [B, A] */,
                                    int32_t* a_star /* [B, n_branches] */);

/* vp_loss_c51_project of rows distributions of n atoms. */
typedef vp_status vp_loss_project_fn(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n,
                                     const float* support /* [rows, n] */, const float* probs /* [rows, n] */,
                                     float* out /* [rows, Z] */);

/* vp_loss_c51_project_grid of rows distributions of n atoms onto grid [Z]. */
typedef vp_status vp_loss_project_grid_fn(vp_backend* b, const vp_loss_dims* d, int64_t rows, int n,
                                          const float* grid /* [Z] */, const float* support /* [rows, n] */,
                                          const float* probs /* [rows, n] */, float* out /* [rows, Z] */);

/* vp_loss_c51. */
typedef vp_status vp_loss_c51_fn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                 const float* log_probs /* [B, A, Z] */,
                                 const float* target_log_probs /* [B, A, Z] */, float* proj /* [B, n_branches, Z] */,
                                 float* loss /* [B] */, float* d_log_probs /* [B, A, Z] */);

/* vp_loss_iqn. */
typedef vp_status vp_loss_iqn_fn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                 const float* iqn /* [B, n_taus, A] */,
                                 const float* target_iqn /* [B, n_target_taus, A] */,
                                 const float* taus /* [B, n_taus] */, float* loss /* [B] */,
                                 float* d_iqn /* [B, n_taus, A] */);

/* vp_loss_draw_taus over n elements. */
typedef vp_status vp_loss_taus_fn(vp_backend* b, uint64_t seed, uint64_t stream, const int32_t* step /* [1] or NULL */,
                                  int64_t n, float* taus /* [n] */);

/* vp_loss_stats. */
typedef vp_status vp_loss_stats_fn(vp_backend* b, const vp_loss_dims* d, const float* c51 /* [B] */,
                                   const float* iqn /* [B] or NULL */, const float* is_weight /* [B] */,
                                   const float* q /* [B, A] */, const float* grad_norm /* [1] */,
                                   float* stats /* [VP_STAT_COUNT] */);

/* vp_loss_atoms_grad (CPU: cpu_lmods.c, CUDA: cuda_lmods.cu). */
typedef vp_status vp_loss_atoms_grad_fn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                        const float* log_probs /* [B, A, Z] */, const float* target_q /* [B, A] */,
                                        const float* spacing /* [nb, Z - 1] */, float* resid /* [B, nb] */,
                                        float* d_spacing /* [nb, Z - 1] */);

/* vp_loss_popart; state = t->popart, written; HH the output layers' input width; w, bias, tw,
 * tb may be NULL. */
typedef vp_status vp_loss_popart_fn(vp_backend* b, const vp_loss_dims* d, const vp_loss_batch_ptrs* t,
                                    const float* target_q /* [B, A] */, float beta, float* state /* [VP_POPART_N] */,
                                    int64_t HH,
                                    float* w /* [A, HH] */, float* bias /* [A] */, float* tw /* [A, HH] */,
                                    float* tb /* [A] */);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_LOSS_KERNELS(X, f, i)                                                                   \
    X(f, i, select) X(f, i, project) X(f, i, project_grid) X(f, i, c51) X(f, i, iqn) X(f, i, taus) \
    X(f, i, stats) X(f, i, atoms_grad) X(f, i, popart)

/* One backend's loss kernels. */
typedef struct vp_loss_kernels {
    VP_KERNEL_FIELDS(VP_LOSS_KERNELS, vp_loss)
} vp_loss_kernels;

/* The CPU loops, vp_loss_cpu_<kernel>, and their table (cpu_loss.c). */
VP_KERNEL_DECLARE(VP_LOSS_KERNELS, vp_loss, vp_loss_cpu)
extern const vp_loss_kernels vp_loss_cpu;

/* The CUDA kernels' launchers, vp_loss_cuda_<kernel>, and their table (cuda_loss.cu; CUDA
 * builds only). */
VP_KERNEL_DECLARE(VP_LOSS_KERNELS, vp_loss, vp_loss_cuda)
extern const vp_loss_kernels vp_loss_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_LOSS_IMPL_H */
