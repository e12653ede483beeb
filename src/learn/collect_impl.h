/* Internal: the collection kernels' implementation tables (the kit's pattern, backend/kit.h).
 * collect_act.c checks the arguments and calls the table of the backend's kind with raw
 * pointers, so an implementation may assume valid shapes, dtypes and memory kinds. */
#ifndef VP_LEARN_COLLECT_IMPL_H
#define VP_LEARN_COLLECT_IMPL_H

#include "backend/kit.h"
#include "learn/collect_math.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- the kernels: same meaning as the functions in vulpes/collect.h, arguments checked ---- */

/* vp_collect_act: every env's epsilon-greedy choices (vp_collect_act_index) at collection
 * step step[0]. */
typedef vp_status vp_collect_act_fn(vp_backend* b, const vp_collect_dims* d, const float* q /* [E, A] */,
                                    const int64_t* step /* [1] */, int32_t* actions /* [E, 4] */);

/* vp_collect_tick: step[0] += 1. */
typedef vp_status vp_collect_tick_fn(vp_backend* b, int64_t* step /* [1] */);

/* vp_collect_gather: every element of out [n, width] from the table row of its env's bar
 * (vp_collect_gather_elem), and wend_dst[i] = wend_src[i] when both are non-NULL. With hand
 * (vp_collect_handover_gather; bar NULL) the hand-over first, in the same kernel, and the bars
 * read are hand->next_bar. */
typedef vp_status vp_collect_gather_fn(vp_backend* b, const vp_collect_gather_dims* d, const float* table,
                                       const int32_t* bar /* [n] */, float* out /* [n, width] */,
                                       const int32_t* wend_src /* [n] or NULL */, int32_t* wend_dst /* [n] or NULL */,
                                       const vp_collect_hand* hand /* or NULL */);

/* vp_collect_handover: bar = next_bar, port = next_port ([n, VP_ENV_PORTFOLIO]), then
 * step[0] += 1 (as tick). */
typedef vp_status vp_collect_handover_fn(vp_backend* b, int64_t n, const int32_t* next_bar, const float* next_port,
                                         int32_t* bar, float* port, int64_t* step /* [1] */);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_COLLECT_KERNELS(X, f, i) X(f, i, act) X(f, i, tick) X(f, i, gather) X(f, i, handover)

/* One backend's collection kernels. */
typedef struct vp_collect_kernels {
    VP_KERNEL_FIELDS(VP_COLLECT_KERNELS, vp_collect)
} vp_collect_kernels;

/* ---- checked entry points (collect_act.c) ---- */

/* out [n, W] f32: out[i, :] = table[bar[i] - begin, :] of table [R, W] f32, a NaN row where
 * bar[i] - begin is outside [0, R); bar [n] i32. The encode-once step's encoding rows; in the
 * same kernel wend_dst = wend_src ([n] i32 each, both NULL: none), the window ends of s_t. */
vp_status vp_collect_gather(vp_backend* b, const vp_tensor* table, int64_t begin, const vp_tensor* bar,
                            vp_tensor* out, const vp_tensor* wend_src, vp_tensor* wend_dst);

/* The observation hand-over of a step in one kernel: bar = next_bar ([n] i32), port =
 * next_port ([n, P] f32), then the step counter ([2] i32 holding one int64) + 1. */
vp_status vp_collect_handover(vp_backend* b, const vp_tensor* next_bar, const vp_tensor* next_port, vp_tensor* bar,
                              vp_tensor* port, vp_tensor* step);

/* vp_collect_handover and then vp_collect_gather of the new bars in one kernel: the hand-over of
 * one head step and the next step's encoding rows and window ends (the same values as the two
 * calls). */
vp_status vp_collect_handover_gather(vp_backend* b, const vp_tensor* next_bar, const vp_tensor* next_port,
                                     vp_tensor* bar, vp_tensor* port, vp_tensor* step, const vp_tensor* table,
                                     int64_t begin, vp_tensor* out, const vp_tensor* wend_src, vp_tensor* wend_dst);

/* ---- the collector's encode-once path (collect_span.c) ---- */

/* Chooses how c->cfg.steps steps run (c->cfg.mode against R and E x S) and, for the
 * encode-once path, makes the span's buffers and workspace (set-up: allocations and one
 * upload). Needs the rest of the collector made. */
vp_status vp_collector_span_init(vp_collector* c);

/* Frees what vp_collector_span_init made (none made is a no-op). */
void vp_collector_span_free(vp_collector* c);

/* The env step under the actions in c->actions and the replay push, with curiosity's intrinsic
 * reward from enc ([E, enc_dim], the encodings of s_t; NULL: none, the random step) when the
 * collector has curiosity (collect.c). */
vp_status vp_collector_env_push(vp_collector* c, const vp_tensor* enc);

/* The window end of s_t saved, vp_collector_env_push, and the observation hand-over as
 * copies (collect.c; the single policy step and the random step). */
vp_status vp_collector_step_env(vp_collector* c, const vp_tensor* enc);

/* The CPU loops, vp_collect_cpu_<kernel>, and their table (collect_cpu.c). */
VP_KERNEL_DECLARE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cpu)
extern const vp_collect_kernels vp_collect_cpu;

/* The CUDA kernels' launchers, vp_collect_cuda_<kernel>, and their table (collect_cuda.cu;
 * CUDA builds only). */
VP_KERNEL_DECLARE(VP_COLLECT_KERNELS, vp_collect, vp_collect_cuda)
extern const vp_collect_kernels vp_collect_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_COLLECT_IMPL_H */
