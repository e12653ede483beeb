/* Internal: the rollout's run context shared by its phases — set-up and results
 * (rollout.c), the encoding and the op path's loop (rollout_loop.c), the fused CUDA path
 * (rollout_fused.c, rollout_cuda.cu), the decision after each window (rollout_next.c), the
 * trade log (rollout_trades.c), the baselines (rollout_baseline.c) and the curves and
 * metrics (rollout_curve.c); and the table of the steps' kernels (the kit's pattern: the CPU
 * loops in rollout_cpu.c, the CUDA launchers in rollout_cuda.cu). */
#ifndef VP_ROLLOUT_IMPL_H
#define VP_ROLLOUT_IMPL_H

#include "backend/kit.h"
#include "rollout/rollout_step.h"
#include "vulpes/rollout.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One run: constants, the market, the windows' state and log in backend memory, and the
 * host copies the results are assembled from. */
typedef struct vp_ro_run {
    vp_backend* b;                 /* where it runs */
    const vp_policy* pol;          /* the policy (NULL with forced actions) */
    const vp_model* m;             /* the DQN network behind pol, for the fused path (else NULL) */
    const vp_tensor* params;       /* [n_weights] its parameters (with m) */
    const vp_rollout_data* data;  /* bars, ATR, features, span */
    const vp_rollout_cfg* cfg;    /* settings */
    vp_ro_dims dims;               /* constants of the kernels */
    int64_t a;                     /* first bar of the span */
    int64_t n_steps;               /* decisions of the span: b - a - 1 */
    int64_t n_points;              /* P: sum over windows of steps + 1 */
    int32_t max_steps;             /* the longest window's steps */
    vp_env_market market;          /* bars [a, b) in backend memory */
    vp_buffer dev;                 /* state, windows, log, forced actions, counter */
    vp_env_state state;            /* [N] per-window env state (backend) */
    vp_ro_windows win;             /* [N] (backend) */
    vp_ro_records rec;             /* [P] (backend) */
    int32_t* scratch;              /* [N, 4] the action a step reads (backend) */
    int32_t* forced;               /* [n_steps, 4] forced actions (backend) or NULL */
    vp_tensor counter;             /* [1] i32 step counter (backend) */
    void* host;                    /* one host block behind the arrays below */
    vp_env_state h_state;          /* [N] initial state (host), the final state once downloaded */
    vp_ro_windows h_win;           /* [N] window table (host; alive and ruin read back at the end) */
    vp_ro_records h_rec;           /* [P] the downloaded log (host) */
    const vp_env_bar* h_bars;      /* [b - a] the market's bars in host memory (the baselines' and the
                                      portfolio after a window read them) */
    vp_env_bar* h_bars_own;        /* h_bars when it is a downloaded copy (else NULL) */
    vp_policy_work* mem_work;      /* a policy with memory: the op path's workspace, kept with each window's
                                      history for the decision after the windows (else NULL) */
} vp_ro_run;

/* Encodes every decision bar and runs the op path's loop (heads via vp_model_heads, a
 * graph of steps on CUDA) over all windows; used on the CPU and when the fused path cannot
 * run. */
vp_status vp_ro_run_ops(vp_ro_run* r, double* encode_s, double* sequential_s);

/* Whether the fused CUDA path can run this model on this backend (1) or not (0). */
int vp_ro_fused_fits(const vp_ro_run* r);

/* Encodes every decision bar into the heads' first-layer inputs and runs the fused kernel
 * (one thread-block cluster per window). */
vp_status vp_ro_run_fused(vp_ro_run* r, double* encode_s, double* sequential_s);

/* Builds the trades of every window from the downloaded log into out->trades, and counts the
 * orders the leverage limit cut into out->cuts and each window's cut_orders, cut_contracts. */
vp_status vp_ro_trades_build(const vp_ro_run* r, vp_rollout_result* out);

/* Counts an order cut by `cut` contracts (nothing when cut <= 0) at bar `bar` into *c. */
void vp_ro_cuts_add(vp_rollout_cuts* c, int64_t bar, int32_t cut);

/* The policy's choice at each window's last close for the bar after it, from that bar's
 * features and the window's final state (not traded), into out's action and margin at the
 * window's last point; none (-1, NaN) after a ruin or with forced actions. Then counts the
 * choices with a margin and the fragile ones (out->n_decisions, n_fragile). */
vp_status vp_ro_next_decisions(const vp_ro_run* r, vp_rollout_result* out);

/* The ruin of window w from the ruin step ruin_step (-1: none) and its points eq [n] (first
 * point: the window's first bar), into *out. */
void vp_ro_ruin_of(const vp_ro_run* r, int64_t w, int32_t ruin_step, const double* eq /* [n] */, int64_t n,
                   vp_rollout_ruin* out);

/* Each window's baselines stepped on the host through the rollout's own step (vp_ro_step)
 * with forced actions: buy-and-hold (long max_position from the first step, no take-profit
 * or stop, flat at the window's last step, the ruin rule) into bh and flat into fl, both
 * [P] at the windows' planned offsets, their points into n_bh [N] and n_fl [N]; the
 * windows' buy-and-hold ruins and leverage cuts into out->windows, the cuts over every
 * window into out->buy_hold_cuts. */
vp_status vp_ro_baselines(const vp_ro_run* r, vp_rollout_result* out, double* bh /* [P] */, int64_t* n_bh /* [N] */,
                          double* fl /* [P] */, int64_t* n_fl /* [N] */);

/* Builds the baselines, the stitched curves and the metrics of out (points and trades done). */
vp_status vp_ro_curve_build(const vp_ro_run* r, vp_rollout_result* out);

/* Folds the heads' portfolio terms of m's parameters `params` into host out
 * [M_v (HH x 8), M_a (HH x 8), c_v (HH), c_a (HH)]: M = W1 Wp, c = W1 bp + b1, in double. */
vp_status vp_ro_fold_heads(const vp_model* m, const vp_tensor* params, float* out /* [2 HH 8 + 2 HH] */);

/* The fused kernel's heads math on the host, for one sample: encoding e [H] and portfolio p
 * [8] (host) to q [A] (host): hidden units from the folded terms, the second layers, the
 * dueling logits and Q = sum z e^(l - max) / sum e^(l - max). */
vp_status vp_ro_fused_reference(const vp_model* m, const vp_tensor* params, const float* e /* [H] */,
                                const float* p /* [8] */, float* q /* [A] */);

/* The head weights the fused kernel keeps on chip, in device memory. HH head width, Z atoms. */
typedef struct vp_ro_fused_weights {
    int hh;              /* HH */
    int z;               /* Z */
    float v_min, v_max;  /* C51 support */
    const float* mv;     /* [HH, 8] W_v1 Wp */
    const float* ma;     /* [HH, 8] W_a1 Wp */
    const float* cv;     /* [HH] W_v1 bp + b_v1 */
    const float* ca;     /* [HH] W_a1 bp + b_a1 */
    const float* w_v2;   /* [Z, HH] */
    const float* b_v2;   /* [Z] */
    const float* w_a2;   /* [A Z, HH] */
    const float* b_a2;   /* [A Z] */
    const float* u_v;    /* [n_rows, HH] W_v1 e of every decision row */
    const float* u_a;    /* [n_rows, HH] W_a1 e of every decision row */
} vp_ro_fused_weights;

/* ---- the kernels (the kit's pattern, backend/kit.h) ---------------------------------------------
 * Pointers in the memory of backend b; the callers (rollout_loop.c, rollout_fused.c) pass the
 * run's arrays, so an implementation may assume their shapes. */

/* Prepare step: for every active window, its encoding row into eb [N, H] and its portfolio
 * into pf [N, 8] (inactive windows keep their stale rows). */
typedef vp_status vp_ro_prepare_fn(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                                   const vp_ro_windows* w, const float* enc /* [n_rows, H] */,
                                   const int32_t* counter /* [1] */, float* eb /* [N, H] */, float* pf /* [N, 8] */);

/* Act step: every active window's choices from q [N, A] (or the forced table
 * [n_steps, 4] when d->forced), its environment step and its log. */
typedef vp_status vp_ro_act_fn(vp_backend* b, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                               const vp_ro_windows* w, const vp_ro_records* rec, int32_t* scratch /* [N, 4] */,
                               const float* q /* [N, A] or NULL */, const int32_t* forced /* or NULL */,
                               const int32_t* counter /* [1] */);

/* Steps of the op path per graph launch when the longest window has max_steps (>= 1) steps:
 * 1 on the CPU (a launch runs its steps directly, none past the longest window), up to
 * VP_RO_GRAPH_STEPS on CUDA (a captured graph of several steps). */
typedef int vp_ro_graph_steps_fn(vp_backend* b, int32_t max_steps);

/* 1 when the fused kernel can run on b for heads of width hh and z atoms, else 0. The
 * fused path is CUDA-only: the CPU's answer is always 0. */
typedef int vp_ro_fused_supported_fn(vp_backend* b, const vp_ro_dims* d, int hh, int z);

/* The fused kernel: every step of every window in one launch (CUDA: one cluster of 4 blocks,
 * a block per branch, per window). The CPU's fails with VP_ERR_UNSUPPORTED; callers ask
 * fused_supported (vp_ro_fused_fits) first. */
typedef vp_status vp_ro_fused_fn(vp_backend* b, const vp_ro_dims* d, const vp_ro_fused_weights* fw,
                                 const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                                 const vp_ro_records* rec);

/* Steps per captured graph on CUDA. */
#define VP_RO_GRAPH_STEPS 64

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_RO_KERNELS(X, f, i) \
    X(f, i, prepare) X(f, i, act) X(f, i, graph_steps) X(f, i, fused_supported) X(f, i, fused)

/* One backend's rollout kernels. */
typedef struct vp_ro_kernels {
    VP_KERNEL_FIELDS(VP_RO_KERNELS, vp_ro)
} vp_ro_kernels;

/* The CPU loops, vp_ro_cpu_<kernel>, and their table (rollout_cpu.c). */
VP_KERNEL_DECLARE(VP_RO_KERNELS, vp_ro, vp_ro_cpu)
extern const vp_ro_kernels vp_ro_cpu;

/* The CUDA kernels' launchers, vp_ro_cuda_<kernel>, and their table (rollout_cuda.cu; CUDA
 * builds only). */
VP_KERNEL_DECLARE(VP_RO_KERNELS, vp_ro, vp_ro_cuda)
extern const vp_ro_kernels vp_ro_cuda;

/* *out = the rollout kernels of b's kind (vp_kernels_select; rollout_loop.c). */
vp_status vp_ro_kernels_of(vp_backend* b, const vp_ro_kernels** out);

#ifdef __cplusplus
}
#endif
#endif /* VP_ROLLOUT_IMPL_H */
