/* Internal: the model's own kernels (those that are not generic ops), as one table per
 * backend kind: CPU in cpu_*.c, CUDA in cuda_*.cu. Pointers are the backend's memory,
 * row-major, f32 unless marked i32; the model code checks shapes before calling.
 * Every kernel is batch-parallel: its natural grid is (sample, feature) or (sample,
 * head); reductions over the batch for parameter gradients are left to GEMMs and
 * vp_reduce_cols over the per-sample partials these kernels write. */
#ifndef VULPES_MODEL_MOPS_H
#define VULPES_MODEL_MOPS_H

#include <stdint.h>

#include "vulpes/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Extents of the Mamba2 mixer. in_proj output kept per step has L = H + 2N + NH columns:
 * x [0, H), B [H, H+N), C [H+N, H+2N), dt [H+2N, L). Conv channels are the first H + 2N. */
typedef struct vp_mamba_dims {
    int64_t batch; /* B samples */
    int window;    /* K steps */
    int hidden;    /* H = heads * head_dim */
    int state;     /* N */
    int heads;     /* NH */
    int head_dim;  /* PD */
    int conv;      /* CW causal conv width */
} vp_mamba_dims;

/* The dueling layout: branches and their sizes (actions are numbered branch by branch). */
typedef struct vp_branch_map {
    int n;                  /* branches */
    int size[8];            /* choices per branch */
} vp_branch_map;

typedef struct vp_mops {
    /* idx[b*K + k] = max(bar[b] - K + 1 + k, 0); bar [B] i32, idx [B*K] i32. */
    vp_status (*window_index)(vp_backend* be, int64_t B, int K, const int32_t* bar, int32_t* idx);

    /* dst[b, :] = src[b, K-1, :]; src [B, K, n], dst [B, n]. */
    vp_status (*take_last)(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);

    /* dst[b, K-1, :] += src[b, :]; src [B, n], dst [B, K, n]. */
    vp_status (*add_last)(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);

    /* Causal depthwise conv (+ bias) and SiLU within each window, over the x, B channels
     * at every step and the C channels at the last step only.
     * xbcdt [B*K, L]; w [H+2N, CW]; bias [H+2N]; xb_pre (may be NULL), xb [B*K, H+N];
     * c_pre (may be NULL), c [B, N]. */
    vp_status (*conv_forward)(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt,
                              const float* w, const float* bias, float* xb_pre, float* xb,
                              float* c_pre, float* c);

    /* Conv + SiLU backward. d_xb [B*K, H+N], d_c [B, N] -> d_xbcdt columns [0, H+2N)
     * (written; dt columns untouched) [B*K, L], per-sample w_part [B, (H+2N)*CW] and
     * b_part [B, H+2N]. */
    vp_status (*conv_backward)(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt,
                               const float* w, const float* xb_pre, const float* c_pre,
                               const float* d_xb, const float* d_c, float* d_xbcdt,
                               float* w_part, float* b_part);

    /* Selective scan, last step's output: dt = softplus(xbcdt[:, dt] + dt_bias) [B*K, NH];
     * y [B, H] = s_K C + D x_K with s_t = exp(dt_t A) s_{t-1} + dt_t x_t B_t^T per head,
     * A = -exp(A_log). xb [B*K, H+N], c [B, N], dt_bias/A_log/D [NH]. */
    vp_status (*scan_forward)(vp_backend* be, const vp_mamba_dims* d, const float* xb,
                              const float* c, const float* xbcdt, const float* dt_bias,
                              const float* A_log, const float* D, float* dt, float* y);

    /* Scan backward from d_y [B, H]: d_xb [B*K, H+N], d_c [B, N], the dt columns of
     * d_xbcdt [B*K, L] (gradient of the raw in_proj dt), and per-sample partials
     * p_alog, p_d, p_dtb [B, NH] of the A_log, D and dt_bias gradients. */
    vp_status (*scan_backward)(vp_backend* be, const vp_mamba_dims* d, const float* xb,
                               const float* c, const float* xbcdt, const float* dt,
                               const float* dt_bias, const float* A_log, const float* D,
                               const float* d_y, float* d_xb, float* d_c, float* d_xbcdt,
                               float* p_alog, float* p_d, float* p_dtb);

    /* logit[b, a, z] = v[b, z] + adv[b, a, z] - mean over a' in branch(a) of adv[b, a', z];
     * v [B, Z], adv [B, A*Z], logit [B, A*Z]. */
    vp_status (*dueling_forward)(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                 const float* v, const float* adv, float* logit);

    /* Its backward: d_logit [B, A*Z] -> d_v [B, Z], d_adv [B, A*Z]. */
    vp_status (*dueling_backward)(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                  const float* d_logit, float* d_v, float* d_adv);

    /* q[r] = sum_z support[z] exp(logp[r, z]), support = linspace(v_min, v_max, Z);
     * logp [rows, Z], q [rows]. */
    vp_status (*c51_q)(vp_backend* be, int64_t rows, int Z, float v_min, float v_max,
                       const float* logp, float* q);

    /* out[r, i] = cos(tau[r] * float(pi * i)), i = 0..NC-1; tau [rows], out [rows, NC]. */
    vp_status (*iqn_cos)(vp_backend* be, int64_t rows, int NC, const float* tau, float* out);

    /* out[b*T + j, :] = h[b, :] * phi[b*T + j, :]; h [B, H], phi/out [B*T, H] (out may
     * alias phi). */
    vp_status (*iqn_mix_forward)(vp_backend* be, int64_t B, int T, int H, const float* h,
                                 const float* phi, float* out);

    /* Its backward: d_h[b, :] += sum_j d_out[b*T+j, :] phi[b*T+j, :] (accumulated);
     * d_phi = d_out * h (written; may alias d_out). */
    vp_status (*iqn_mix_backward)(vp_backend* be, int64_t B, int T, int H, const float* h,
                                  const float* phi, const float* d_out, float* d_h,
                                  float* d_phi);
} vp_mops;

/* The CPU table (cpu_mops.c). */
extern const vp_mops vp_mops_cpu;

/* The table for a backend; VP_ERR_UNSUPPORTED when its kind has none. */
vp_status vp_mops_get(const vp_backend* be, const vp_mops** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_MOPS_H */
