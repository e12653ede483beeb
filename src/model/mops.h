/* Internal: the model's own kernels (those that are not generic ops), as one table per
 * backend kind: CPU in cpu_*.c, CUDA in cuda_*.cu. Pointers are the backend's memory,
 * row-major, f32 unless marked i32; the model code checks shapes before calling.
 * Every kernel is batch-parallel: its natural grid is (sample, feature) or (sample,
 * head); reductions over the batch for parameter gradients are left to GEMMs and
 * vp_reduce_cols over the per-sample partials these kernels write. */
#ifndef VULPES_MODEL_MOPS_H
#define VULPES_MODEL_MOPS_H

#include <stdint.h>

#include "backend/kit.h"
#include "vulpes/defs.h"

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

/* The largest window, state and conv width the Mamba2 kernels hold per thread or per block
 * (vp_model_cfg_check keeps a model's within them). */
#define VP_MAMBA_MAX_K 64
#define VP_MAMBA_MAX_N 64
#define VP_MAMBA_MAX_CW 64

/* 1 when the Mamba2 kernels take d's extents: window, state and conv width in [1, their
 * maximum], heads x head_dim = hidden (the batch is each caller's to check). */
VP_HD int vp_mamba_dims_fit(const vp_mamba_dims* d) {
    return d != NULL && d->window >= 1 && d->window <= VP_MAMBA_MAX_K && d->state >= 1 && d->state <= VP_MAMBA_MAX_N &&
           d->heads >= 1 && d->head_dim >= 1 && d->hidden == d->heads * d->head_dim && d->conv >= 1 &&
           d->conv <= VP_MAMBA_MAX_CW;
}

/* The dueling layout: branches and their sizes (actions are numbered branch by branch). */
typedef struct vp_branch_map {
    int n;                  /* branches */
    int size[8];            /* choices per branch */
} vp_branch_map;

/* ---- the kernels: one function type each, the contract beside it ----------------------- */

/* idx[b*K + k] = max(bar[b] - K + 1 + k, 0); bar [B] i32, idx [B*K] i32. */
typedef vp_status vp_mops_window_index_fn(vp_backend* be, int64_t B, int K, const int32_t* bar, int32_t* idx);

/* dst[b, :] = src[b, K-1, :]; src [B, K, n], dst [B, n]. */
typedef vp_status vp_mops_take_last_fn(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);

/* dst[b, K-1, :] += src[b, :]; src [B, n], dst [B, K, n]. */
typedef vp_status vp_mops_add_last_fn(vp_backend* be, int64_t B, int K, int64_t n, const float* src, float* dst);

/* Causal depthwise conv (+ bias) and SiLU within each window, over the x, B channels
 * at every step and the C channels at the last step only.
 * xbcdt [B*K, L]; w [H+2N, CW]; bias [H+2N]; xb_pre (may be NULL), xb [B*K, H+N];
 * c_pre (may be NULL), c [B, N]. */
typedef vp_status vp_mops_conv_forward_fn(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt,
                                          const float* w, const float* bias, float* xb_pre, float* xb,
                                          float* c_pre, float* c);

/* Conv + SiLU backward. d_xb [B*K, H+N], d_c [B, N] -> d_xbcdt columns [0, H+2N)
 * (written; dt columns untouched) [B*K, L], per-sample w_part [B, (H+2N)*CW] and
 * b_part [B, H+2N]; xbcdt, w, xb_pre, c_pre as in the forward. */
typedef vp_status vp_mops_conv_backward_fn(vp_backend* be, const vp_mamba_dims* d, const float* xbcdt,
                                           const float* w, const float* xb_pre, const float* c_pre,
                                           const float* d_xb, const float* d_c, float* d_xbcdt,
                                           float* w_part, float* b_part);

/* Selective scan, last step's output: dt = softplus(xbcdt[:, dt] + dt_bias) [B*K, NH];
 * y [B, H] = s_K C + D x_K with s_t = exp(dt_t A) s_{t-1} + dt_t x_t B_t^T per head,
 * A = -exp(A_log). xb [B*K, H+N], c [B, N], xbcdt [B*K, L], dt_bias/A_log/D [NH]. */
typedef vp_status vp_mops_scan_forward_fn(vp_backend* be, const vp_mamba_dims* d, const float* xb,
                                          const float* c, const float* xbcdt, const float* dt_bias,
                                          const float* A_log, const float* D, float* dt, float* y);

/* Scan backward from d_y [B, H]: d_xb [B*K, H+N], d_c [B, N], the dt columns of
 * d_xbcdt [B*K, L] (gradient of the raw in_proj dt), and per-sample partials
 * p_alog, p_d, p_dtb [B, NH] of the A_log, D and dt_bias gradients; the other inputs as
 * in the forward, dt [B*K, NH] its output. */
typedef vp_status vp_mops_scan_backward_fn(vp_backend* be, const vp_mamba_dims* d, const float* xb,
                                           const float* c, const float* xbcdt, const float* dt,
                                           const float* dt_bias, const float* A_log, const float* D,
                                           const float* d_y, float* d_xb, float* d_c, float* d_xbcdt,
                                           float* p_alog, float* p_d, float* p_dtb);

/* The span encoding's per-bar conv + SiLU and step sizes (model_span.c): for every row r of a
 * table of consecutive bars, with row(r, j) = max(r - CW + 1 + j, 0) (the table's first row
 * stands for the rows before it, as window_index clamps a window at row 0),
 *   act[r, ch] = silu(bias[ch] + sum_{j < CW} w[ch, j] xbcdt[row(r, j), ch])   ch < H + 2N,
 *   act[r, H + 2N + h] = softplus(xbcdt[r, H + 2N + h] + dt_bias[h])           h < NH:
 * conv_forward's value at a window step t >= CW - 1 (a step that reads no zero padding) and
 * scan_forward's dt, element by element in their arithmetic (the same bits).
 * xbcdt, act [rows, L]; w [H+2N, CW]; bias [H+2N]; dt_bias [NH]; d's batch and window unused. */
typedef vp_status vp_mops_span_conv_fn(vp_backend* be, const vp_mamba_dims* d, int64_t rows, const float* xbcdt,
                                       const float* w, const float* bias, const float* dt_bias, float* act);

/* scan_forward's y of B windows read from the per-bar tables by index, with no gathered copy:
 * window b's step t is table row r_t = max(last[b] - K + 1 + t, 0) (window_index's rows). Its
 * x, B channels at steps t >= CW - 1, its C channels at the last step (when K >= CW) and its dt
 * at every step are act's (span_conv); at steps t < CW - 1, which see the window's zero padding,
 * the x, B (and C) channels are conv_forward's over xbcdt rows r_0 .. r_t. y [B, H] equals
 * conv_forward then scan_forward over the gathered rows of each window, bit for bit on each
 * backend (the same operations in the same order). last [B] i32; xbcdt, act [rows, L];
 * w, bias as conv_forward; A_log, D [NH]. */
typedef vp_status vp_mops_span_scan_fn(vp_backend* be, const vp_mamba_dims* d, const int32_t* last,
                                       const float* xbcdt, const float* act, const float* w, const float* bias,
                                       const float* A_log, const float* D, float* y);

/* span_scan followed by the gated RMSNorm (vp_model_gate_forward): yn [B, H] =
 * RMSNorm(y * silu(z)) * norm_g with eps, z [B, H], norm_g [H]; the other inputs as span_scan.
 * y, sz, g [B, H] and rstd [B] are scratch: the CPU runs span_scan into y and the backend's
 * SiLU (sz), product (g) and RMSNorm (rstd) ops, so yn has those ops' bits; CUDA runs one pass
 * per window (a block: y, SiLU, the product and the RMSNorm's sum of squares in registers and
 * shared memory, then yn), writes yn only and agrees with the CPU within FP32 rounding. */
typedef vp_status vp_mops_span_mix_fn(vp_backend* be, const vp_mamba_dims* d, const int32_t* last,
                                      const float* xbcdt, const float* act, const float* w, const float* bias,
                                      const float* A_log, const float* D, const float* z, const float* norm_g,
                                      float eps, float* y, float* sz, float* g, float* rstd, float* yn);

/* logit[b, a, z] = v[b, z] + adv[b, a, z] - mean over a' in branch(a) of adv[b, a', z];
 * v [B, Z], adv [B, A*Z], logit [B, A*Z]. */
typedef vp_status vp_mops_dueling_forward_fn(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                             const float* v, const float* adv, float* logit);

/* Its backward: d_logit [B, A*Z] -> d_v [B, Z], d_adv [B, A*Z]. */
typedef vp_status vp_mops_dueling_backward_fn(vp_backend* be, int64_t B, int Z, const vp_branch_map* br,
                                              const float* d_logit, float* d_v, float* d_adv);

/* q[r] = sum_z support[z] exp(logp[r, z]), support = linspace(v_min, v_max, Z);
 * logp [rows, Z], q [rows]. */
typedef vp_status vp_mops_c51_q_fn(vp_backend* be, int64_t rows, int Z, float v_min, float v_max,
                                   const float* logp, float* q);

/* The C51 head's combine in one call: logp = log_softmax over atoms of dueling_forward(v,
 * adv), then q = c51_q(logp): v [B, ldv] and adv [B, ldadv] with their first Z and A*Z
 * columns read (ldv >= Z, ldadv >= A*Z: padded rows), logp [B, A*Z] (not aliasing adv;
 * CUDA: NULL skips writing it, the same q), q [B*A]. The CPU runs the three kernels above and
 * the backend's log-softmax (the same bits as calling them; dense rows only); CUDA runs one
 * pass (a warp per (sample, branch), Z <= 64; the three kernels at other Z, dense rows only)
 * with the three kernels' arithmetic in their order, so its bits equal theirs too. */
typedef vp_status vp_mops_c51_head_fn(vp_backend* be, int64_t B, int Z, const vp_branch_map* br, float v_min,
                                      float v_max, const float* v, int64_t ldv, const float* adv, int64_t ldadv,
                                      float* logp, float* q);

/* n rounded up to a multiple of 4: the padded C51 row widths (Zp, AZp below). */
VP_HD int64_t vp_pad4(int64_t n) { return (n + 3) / 4 * 4; }

/* The C51 output layers into padded ones: out = [v2w (Z rows of HH) | zeros to Zp rows][v2b |
 * zeros to Zp][a2w (AZ rows) | zeros to AZp rows][a2b | zeros to AZp], Zp and AZp the
 * multiples of 4 at or above Z and AZ. Writes only the copied parts: the zeros are the
 * caller's (written once). */
typedef vp_status vp_mops_c51_pad_fn(vp_backend* be, int Z, int AZ, int HH, const float* v2w, const float* v2b,
                                     const float* a2w, const float* a2b, float* out);

/* The C51 output layers folded for Q alone (heads_fold_math.h has the layout): out
 * [vp_c51f_floats(Z, HH, A)] gets tile 0 = v2w, v2b and tile 1 + a = a2w[a] - mean, a2b[a] -
 * mean, the means over a's branch (the sum in action order, then one division: dueling_forward's
 * mean), the weights rounded to TF32 (vp_tf32), the padding atoms zero. v2w [Z, HH], v2b [Z],
 * a2w [A Z, HH], a2b [A Z]; HH a multiple of 8. The CPU and CUDA write the same bits. */
typedef vp_status vp_mops_c51_fold_fn(vp_backend* be, int HH, int Z, const vp_branch_map* br, const float* v2w,
                                      const float* v2b, const float* a2w, const float* a2b, float* out);

/* Q from the folded layers, without the advantage rows: for sample b and action a the logits
 * l[z] = (v1[b] . W0[z] + b0[z]) + (ah[b] . W_{1+a}[z] + b_{1+a}[z]) (products of TF32 operands:
 * v1 and ah rounded by vp_tf32, the weights as folded; FP32 sums), then q[b, a] = sum_z s_z e_z /
 * sum_z e_z, e_z = exp(l[z] - max l), s = linspace(v_min, v_max, Z): the dueling combine's
 * expected value. v1, ah rows of ld floats (HH read); fold from c51_fold; q [B, A]. The CPU's
 * is the reference (plain loops, any HH and Z); CUDA's one pass on tensor cores serves the
 * shapes vp_c51_fold_q_fits accepts. Both sum in their own order: Q agrees within FP32
 * rounding, and with the layer-by-layer heads within TF32 rounding. */
typedef vp_status vp_mops_c51_fold_q_fn(vp_backend* be, int64_t B, int HH, int Z, const vp_branch_map* br,
                                        float v_min, float v_max, const float* v1, const float* ah, int64_t ld,
                                        const float* fold, float* q);

/* The actions of a branch map of 1 .. 8 branches of at least one action each; 0 for any other map. */
static inline int vp_branch_map_actions(const vp_branch_map* br) {
    if (!br || br->n < 1 || br->n > 8) return 0;
    int A = 0;
    for (int i = 0; i < br->n; ++i) {
        if (br->size[i] < 1) return 0;
        A += br->size[i];
    }
    return A;
}

/* Whether the CUDA c51_fold_q serves these heads: HH 128, 49 <= Z <= 56 (seven tiles of 8
 * atoms), 1 to 8 branches of at most 6 actions (the value tile and a branch's in 200 KiB of
 * shared memory). */
static inline int vp_c51_fold_q_fits(int HH, int Z, const vp_branch_map* br) {
    if (HH != 128 || Z < 49 || Z > 56 || br->n < 1 || br->n > 8) return 0;
    for (int i = 0; i < br->n; ++i)
        if (br->size[i] < 1 || br->size[i] > 6) return 0;
    return 1;
}

/* The portfolio projection added to the encoding: h[b, :] = e[b, :] + (bias + W p[b, :]),
 * e, h [B, H] (h may alias e), p [B, P], W [H, P], bias [H]. The CPU copies e into h and
 * runs the FP32 GEMM with beta 1 (the model's linear layer: the same bits); CUDA runs one
 * element-wise FP32 pass (k = 0 .. P-1 in order, fused multiply-adds; P <= 16), at any precision:
 * K = P = 8 is too short a product for tensor cores to pay. */
typedef vp_status vp_mops_port_add_fn(vp_backend* be, int64_t B, int H, int P, const float* e, const float* p,
                                      const float* W, const float* bias, float* h);

/* out[r, i] = cos(tau[r] * float(pi * i)), i = 0..NC-1; tau [rows], out [rows, NC]. */
typedef vp_status vp_mops_iqn_cos_fn(vp_backend* be, int64_t rows, int NC, const float* tau, float* out);

/* out[b*T + j, :] = h[b, :] * phi[b*T + j, :]; h [B, H], phi/out [B*T, H] (out may
 * alias phi). */
typedef vp_status vp_mops_iqn_mix_forward_fn(vp_backend* be, int64_t B, int T, int H, const float* h,
                                             const float* phi, float* out);

/* Its backward, through phi's ReLU too (phi = relu(.), so phi > 0 is the ReLU's mask):
 * d_h[b, :] += sum_j d_out[b*T+j, :] phi[b*T+j, :] (accumulated);
 * d_phi = d_out * h * (phi > 0) (written; may alias d_out), the gradient of phi's
 * pre-activation; p_b[b, :] = sum_j d_phi[b*T+j, :] (written), the per-sample partials of
 * phi's bias gradient. h [B, H]; phi, d_out, d_phi [B*T, H]; p_b [B, H]. */
typedef vp_status vp_mops_iqn_mix_backward_fn(vp_backend* be, int64_t B, int T, int H, const float* h,
                                              const float* phi, const float* d_out, float* d_h,
                                              float* d_phi, float* p_b);

/* Samples per partial row of the IQN output layer's weight gradient (iqn_l2_backward). */
#define VP_IQN_W2_GROUP 4

/* The IQN output layer's input gradient through the hidden layer's ReLU, in one pass:
 * d_iq1[r, m] = (iq1[r, m] > 0) * sum_a dzq[r, a] w2[a, m] (a = 0, 1, ... in order), the
 * per-sample partials of the hidden bias gradient p_b[b, m] = sum_j d_iq1[b*T+j, m], and the
 * output weight gradient's partials over groups of VP_IQN_W2_GROUP samples,
 * p_w2[g, a, m] = sum over the group's rows r in order of dzq[r, a] iq1[r, m] (their column
 * sums are dzq^T iq1). iq1, d_iq1 [B*T, M]; dzq [B*T, A]; w2 [A, M]; p_b [B, M];
 * p_w2 [ceil(B / VP_IQN_W2_GROUP), A * M]. */
typedef vp_status vp_mops_iqn_l2_backward_fn(vp_backend* be, int64_t B, int T, int M, int A, const float* iq1,
                                             const float* dzq, const float* w2, float* d_iq1, float* p_b,
                                             float* p_w2);

/* Extents of the IQN embedding: rows r = b*T + j of B samples with T taus each. */
typedef struct vp_iqn_dims {
    int64_t batch; /* B samples */
    int taus;      /* T taus per sample */
    int cos;       /* NC cosine features */
    int hidden;    /* H: phi width (= the encoder's width) */
} vp_iqn_dims;

/* The widths the CUDA one-pass embedding is built for (the default model); the model takes
 * the op path (cosines, GEMM, mix) at other widths. */
#define VP_IQN_EMBED_NC 64
#define VP_IQN_EMBED_H 256

/* The IQN embedding in one pass, for every row r of B*T: cosf[r, i] = cos(tau[r] float(pi i)),
 * phi = relu(cosf pw^T + pb) [., H], mix = h[r / T] * phi. mix [B*T, H] always; cosf
 * [B*T, NC] and phi [B*T, H] where not NULL (what a backward reads). tau [B*T]; h [B, H];
 * pw [H, NC]; pb [H]. On CUDA the product runs on TF32 tensor cores and only the
 * VP_IQN_EMBED_* widths are accepted; the CPU's is the FP32 reference of any width. */
typedef vp_status vp_mops_iqn_embed_fn(vp_backend* be, const vp_iqn_dims* d, const float* tau, const float* h,
                                       const float* pw, const float* pb, float* cosf, float* phi, float* mix);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h): the table,
 * each backend's declarations and each backend's table are generated from this one list. */
#define VP_MOPS_KERNELS(X, f, i)                                                                 \
    X(f, i, window_index) X(f, i, take_last) X(f, i, add_last) X(f, i, conv_forward)             \
    X(f, i, conv_backward) X(f, i, scan_forward) X(f, i, scan_backward) X(f, i, dueling_forward) \
    X(f, i, dueling_backward) X(f, i, c51_q) X(f, i, iqn_cos) X(f, i, iqn_mix_forward)            \
    X(f, i, iqn_mix_backward) X(f, i, iqn_l2_backward) X(f, i, iqn_embed) X(f, i, c51_head)        \
    X(f, i, c51_pad) X(f, i, c51_fold) X(f, i, c51_fold_q) X(f, i, port_add) X(f, i, span_conv)         \
    X(f, i, span_scan) X(f, i, span_mix)

/* Declares prefix_<kernel> for every kernel ("VP_MOPS_DECLARE(vp_cpu)"). */
#define VP_MOPS_DECLARE(prefix) VP_KERNEL_DECLARE(VP_MOPS_KERNELS, vp_mops, prefix)

/* The initialiser of a table whose kernels are prefix_<kernel>. */
#define VP_MOPS_TABLE(prefix) VP_KERNEL_TABLE(VP_MOPS_KERNELS, vp_mops, prefix)

/* One backend's model kernels. */
typedef struct vp_mops {
    VP_KERNEL_FIELDS(VP_MOPS_KERNELS, vp_mops)
} vp_mops;

/* The CPU table (mops.c). */
extern const vp_mops vp_mops_cpu;

/* The CUDA table (cuda_heads.cu; CUDA builds only). */
extern const vp_mops vp_mops_cuda;

/* The table for a backend; VP_ERR_UNSUPPORTED when its kind has none. */
vp_status vp_mops_get(const vp_backend* be, const vp_mops** out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_MOPS_H */
