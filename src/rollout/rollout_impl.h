/* Internal: the backtest's run context shared by its phases — set-up and results
 * (backtest.c), the encoding and the op path's loop (backtest_loop.c), the fused CUDA path
 * (backtest_fused.c, backtest_cuda.cu), the trade log (backtest_trades.c) and the curves and
 * metrics (backtest_curve.c). */
#ifndef VP_EVAL_BACKTEST_IMPL_H
#define VP_EVAL_BACKTEST_IMPL_H

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
    vp_env_state h_state;          /* [N] initial state (host) */
    vp_ro_windows h_win;           /* [N] window table (host; alive read back at the end) */
    vp_ro_records h_rec;           /* [P] the downloaded log (host) */
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

/* Builds the trades of every window from the downloaded log into out->trades. */
vp_status vp_ro_trades_build(const vp_ro_run* r, vp_rollout_result* out);

/* Builds the stitched curve, the baselines and the metrics of out (points and trades done). */
vp_status vp_ro_curve_build(const vp_ro_run* r, vp_rollout_result* out);

/* Folds the heads' portfolio terms of m's parameters `params` into host out
 * [M_v (HH x 8), M_a (HH x 8), c_v (HH), c_a (HH)]: M = W1 Wp, c = W1 bp + b1, in double. */
vp_status vp_ro_fold_heads(const vp_model* m, const vp_tensor* params, float* out /* [2 HH 8 + 2 HH] */);

/* The fused kernel's heads math on the host, for one sample: encoding e [H] and portfolio p
 * [8] (host) to q [A] (host): hidden units from the folded terms, the second layers, the
 * dueling logits and Q = sum z e^(l - max) / sum e^(l - max). */
vp_status vp_ro_fused_reference(const vp_model* m, const vp_tensor* params, const float* e /* [H] */,
                                const float* p /* [8] */, float* q /* [A] */);

/* CPU loop of the prepare step: for every active window, its encoding row into eb [N, H] and
 * its portfolio into pf [N, 8] (inactive windows get row 0 and their stale portfolio). */
void vp_ro_cpu_prepare(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                       const float* enc /* [n_rows, H] */, const int32_t* counter, float* eb /* [N, H] */,
                       float* pf /* [N, 8] */);

/* CPU loop of the act step: choices from q [N, A] (or the forced table), step, log. */
void vp_ro_cpu_act(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                   const vp_ro_records* rec, int32_t* scratch, const float* q, const int32_t* forced,
                   const int32_t* counter);

#ifdef VP_HAVE_CUDA
/* CUDA launch of the prepare step on `stream` (pointers in device memory). */
vp_status vp_ro_cuda_prepare(void* stream, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                             const vp_ro_windows* w, const float* enc, const int32_t* counter, float* eb, float* pf);

/* CUDA launch of the act step on `stream`. */
vp_status vp_ro_cuda_act(void* stream, const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                         const vp_ro_windows* w, const vp_ro_records* rec, int32_t* scratch, const float* q,
                         const int32_t* forced, const int32_t* counter);

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

/* Bytes of shared memory one block of the fused kernel needs (its largest branch). */
size_t vp_ro_fused_smem(const vp_ro_dims* d, int hh, int z);

/* 1 when the current device can launch the fused kernel with `smem` bytes per block
 * (thread-block clusters: compute capability 9.0 or newer; enough opt-in shared memory). */
int vp_ro_cuda_fused_supported(size_t smem);

/* Launches the fused kernel on `stream`: one cluster of 4 blocks (a block per branch) per
 * window, each running all the steps of its window and logging them. */
vp_status vp_ro_cuda_fused(void* stream, const vp_ro_dims* d, const vp_ro_fused_weights* fw, const vp_env_bar* bars,
                           const vp_env_state* s, const vp_ro_windows* w, const vp_ro_records* rec);
#endif

#ifdef __cplusplus
}
#endif
#endif /* VP_EVAL_BACKTEST_IMPL_H */
