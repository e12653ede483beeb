/* Internal: the parameter table, the activations and the pieces of the forward and
 * backward (each piece callable alone, for the gradient checks). */
#ifndef VULPES_MODEL_INTERNAL_H
#define VULPES_MODEL_INTERNAL_H

#include "model/inops.h"
#include "model/mops.h"
#include "model/tlops.h"
#include "vulpes/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The parameter table, in buffer order. X(slot, name, rows, cols, init, fan_in, present):
 * cols 0 means a vector of `rows`. Expanded where these names are in scope:
 * F, P, H, N (state), NH (heads), CW (conv width), HH (head hidden), Z, A (actions),
 * NC (IQN cosines), MB (Mamba2 on); the input modules' VS (variable selection on), VH (its
 * hidden width), SN (spectral norm on), KN (KAN on), KG (KAN grid intervals) and KFC (the KAN spline
 * coefficients per output, F (KG + order)); the head modules' QD (Q-denoise on), A2 (2 A), NB
 * (branches), XB (cross-branch messages on), RB (risk-budget head on); AD (adaptive atoms on);
 * the TLOB encoder's TL (on), K (window), TB (blocks), TM (MLP expansion), TMH (TM H), TMK (TM K). */
#define VP_MODEL_PARAMS(X)                                                         \
    X(TRUNK_W1, "trunk.w1", H, F, VP_INIT_UNIFORM, F, !KN)                        \
    X(TRUNK_B1, "trunk.b1", H, 0, VP_INIT_UNIFORM, F, !KN)                        \
    X(TRUNK_LN1_G, "trunk.ln1.g", H, 0, VP_INIT_ONES, 1, 1)                       \
    X(TRUNK_LN1_B, "trunk.ln1.b", H, 0, VP_INIT_ZEROS, 1, 1)                      \
    X(TRUNK_W2, "trunk.w2", H, H, VP_INIT_UNIFORM, H, 1)                          \
    X(TRUNK_B2, "trunk.b2", H, 0, VP_INIT_UNIFORM, H, 1)                          \
    X(TRUNK_LN2_G, "trunk.ln2.g", H, 0, VP_INIT_ONES, 1, 1)                       \
    X(TRUNK_LN2_B, "trunk.ln2.b", H, 0, VP_INIT_ZEROS, 1, 1)                      \
    VP_MODEL_INPUT_PARAMS(X)                                                       \
    X(MAMBA_IN_W, "mamba.in_proj.w", 2 * H + 2 * N + NH, H, VP_INIT_UNIFORM, H, MB) \
    X(MAMBA_CONV_W, "mamba.conv.w", H + 2 * N, CW, VP_INIT_UNIFORM, CW, MB)       \
    X(MAMBA_CONV_B, "mamba.conv.b", H + 2 * N, 0, VP_INIT_UNIFORM, CW, MB)        \
    X(MAMBA_DT_BIAS, "mamba.dt_bias", NH, 0, VP_INIT_DT_BIAS, 1, MB)              \
    X(MAMBA_A_LOG, "mamba.A_log", NH, 0, VP_INIT_A_LOG, 1, MB)                    \
    X(MAMBA_D, "mamba.D", NH, 0, VP_INIT_ONES, 1, MB)                             \
    X(MAMBA_NORM_G, "mamba.norm.g", H, 0, VP_INIT_ONES, 1, MB)                    \
    X(MAMBA_OUT_W, "mamba.out_proj.w", H, H, VP_INIT_UNIFORM, H, MB)              \
    VP_MODEL_TLOB_PARAMS(X)                                                        \
    X(PORT_W, "port.w", H, P, VP_INIT_UNIFORM, P, 1)                              \
    X(PORT_B, "port.b", H, 0, VP_INIT_UNIFORM, P, 1)                              \
    X(C51_V1_W, "c51.v1.w", HH, H, VP_INIT_UNIFORM, H, 1)                         \
    X(C51_V1_B, "c51.v1.b", HH, 0, VP_INIT_UNIFORM, H, 1)                         \
    X(C51_V2_W, "c51.v2.w", Z, HH, VP_INIT_UNIFORM, HH, 1)                        \
    X(C51_V2_B, "c51.v2.b", Z, 0, VP_INIT_UNIFORM, HH, 1)                         \
    X(C51_A1_W, "c51.a1.w", HH, H, VP_INIT_UNIFORM, H, 1)                         \
    X(C51_A1_B, "c51.a1.b", HH, 0, VP_INIT_UNIFORM, H, 1)                         \
    X(C51_A2_W, "c51.a2.w", A * Z, HH, VP_INIT_UNIFORM, HH, 1)                    \
    X(C51_A2_B, "c51.a2.b", A * Z, 0, VP_INIT_UNIFORM, HH, 1)                     \
    X(IQN_PHI_W, "iqn.phi.w", H, NC, VP_INIT_UNIFORM, NC, 1)                      \
    X(IQN_PHI_B, "iqn.phi.b", H, 0, VP_INIT_UNIFORM, NC, 1)                       \
    X(IQN_L1_W, "iqn.l1.w", HH, H, VP_INIT_UNIFORM, H, 1)                         \
    X(IQN_L1_B, "iqn.l1.b", HH, 0, VP_INIT_UNIFORM, H, 1)                         \
    X(IQN_L2_W, "iqn.l2.w", A, HH, VP_INIT_UNIFORM, HH, 1)                        \
    X(IQN_L2_B, "iqn.l2.b", A, 0, VP_INIT_UNIFORM, HH, 1)                         \
    /* head modules (task M2): Q-denoise refinement, its output layer starting at zero */  \
    X(QD_W1, "qdenoise.w1", 2 * A, A, VP_INIT_UNIFORM, A, QD)                      \
    X(QD_B1, "qdenoise.b1", 2 * A, 0, VP_INIT_UNIFORM, A, QD)                      \
    X(QD_W2, "qdenoise.w2", A, A2, VP_INIT_ZEROS, 1, QD)                           \
    X(QD_B2, "qdenoise.b2", A, 0, VP_INIT_ZEROS, 1, QD)                            \
    /* cross-branch messages: per-branch embeddings and one block per directed edge, near identity */ \
    X(XB_EMBED_W, "xbranch.embed.w", NB * HH, HH, VP_INIT_NEAR_EYE, 10000, XB)    \
    X(XB_MSG_W, "xbranch.msg.w", NB * NB * HH, HH, VP_INIT_UNIFORM, 10000, XB)     \
    /* risk-budget head: sigmoid(w . h + b) */                                         \
    X(RISK_W, "risk.w", 1, H, VP_INIT_UNIFORM, H, RB)                              \
    X(RISK_B, "risk.b", 1, 0, VP_INIT_UNIFORM, H, RB)                              \
    /* adaptive atoms: per-branch spacing logits of the C51 support, zero = uniform */  \
    X(C51_ATOMS, "c51.atoms", NB, Z - 1, VP_INIT_ZEROS, 1, AD)

/* The input modules' rows (docs/modules.md, "Input modules"): the variable selection
 * network (vsn.w2 rows: gate values [0, F), gate logits [F, 2F)), the power-iteration
 * vectors of the spectral norm (PyTorch's weight_u, weight_v buffers; no gradient), and the
 * KAN layer (efficient-kan's base_weight, spline_weight [H, F, KC] and spline_scaler). */
#define VP_MODEL_INPUT_PARAMS(X)                                                   \
    X(VSN_W1, "vsn.w1", VH, F, VP_INIT_UNIFORM, F, VS)                            \
    X(VSN_B1, "vsn.b1", VH, 0, VP_INIT_UNIFORM, F, VS)                            \
    X(VSN_W2, "vsn.w2", 2 * F, VH, VP_INIT_UNIFORM, VH, VS)                       \
    X(VSN_B2, "vsn.b2", 2 * F, 0, VP_INIT_UNIFORM, VH, VS)                        \
    X(VSN_LN_G, "vsn.ln.g", F, 0, VP_INIT_ONES, 1, VS)                            \
    X(VSN_LN_B, "vsn.ln.b", F, 0, VP_INIT_ZEROS, 1, VS)                           \
    X(SN_U1, "trunk.w1.sn_u", H, 0, VP_INIT_UNIFORM, 1, SN && !KN)                \
    X(SN_V1, "trunk.w1.sn_v", F, 0, VP_INIT_UNIFORM, 1, SN && !KN)                \
    X(SN_U2, "trunk.w2.sn_u", H, 0, VP_INIT_UNIFORM, 1, SN)                       \
    X(SN_V2, "trunk.w2.sn_v", H, 0, VP_INIT_UNIFORM, 1, SN)                       \
    X(KAN_BASE_W, "kan.base_w", H, F, VP_INIT_UNIFORM, F, KN)                     \
    X(KAN_SPLINE_W, "kan.spline_w", H, KFC, VP_INIT_UNIFORM, 400 * KG * KG, KN)   \
    X(KAN_SCALER, "kan.spline_scaler", H, F, VP_INIT_UNIFORM, F, KN)

/* The TLOB encoder's rows (docs/model.md, "TLOB encoder"): the learned positional embedding
 * over the K steps, then per side (temporal "tlob.t.*": K tokens of width H; feature
 * "tlob.f.*": H tokens of width K) the TB blocks' tensors stacked block after block (block b:
 * rows [b rows, (b + 1) rows) of a matrix, elements [b n, (b + 1) n) of a vector): the q, k, v
 * projections (qkv rows: q, then k, then v), the attention's output projection, the first
 * LayerNorm, the MLP width -> TM width -> width and the second LayerNorm. */
#define VP_MODEL_TLOB_PARAMS(X)                                                    \
    X(TLOB_POS, "tlob.pos", K, H, VP_INIT_UNIFORM, H, TL)                         \
    VP_TLOB_SIDE_PARAMS(X, T, "tlob.t", H, TMH)                                   \
    VP_TLOB_SIDE_PARAMS(X, F, "tlob.f", K, TMK)

/* One side's rows (side S: T or F, named `nm`, token width W, MLP width MW = TM W), in the
 * order of vp_tlob_slot. */
#define VP_TLOB_SIDE_PARAMS(X, S, nm, W, MW)                                           \
    X(TL##S##_QKV_W, nm ".qkv.w", TB * 3 * (W), W, VP_INIT_UNIFORM, W, TL)        \
    X(TL##S##_QKV_B, nm ".qkv.b", TB * 3 * (W), 0, VP_INIT_UNIFORM, W, TL)        \
    X(TL##S##_O_W, nm ".o.w", TB * (W), W, VP_INIT_UNIFORM, W, TL)                \
    X(TL##S##_O_B, nm ".o.b", TB * (W), 0, VP_INIT_UNIFORM, W, TL)                \
    X(TL##S##_LN1_G, nm ".ln1.g", TB * (W), 0, VP_INIT_ONES, 1, TL)               \
    X(TL##S##_LN1_B, nm ".ln1.b", TB * (W), 0, VP_INIT_ZEROS, 1, TL)              \
    X(TL##S##_FC1_W, nm ".fc1.w", TB * TM * (W), W, VP_INIT_UNIFORM, W, TL)       \
    X(TL##S##_FC1_B, nm ".fc1.b", TB * TM * (W), 0, VP_INIT_UNIFORM, W, TL)       \
    X(TL##S##_FC2_W, nm ".fc2.w", TB * (W), MW, VP_INIT_UNIFORM, MW, TL)          \
    X(TL##S##_FC2_B, nm ".fc2.b", TB * (W), 0, VP_INIT_UNIFORM, MW, TL)           \
    X(TL##S##_LN2_G, nm ".ln2.g", TB * (W), 0, VP_INIT_ONES, 1, TL)               \
    X(TL##S##_LN2_B, nm ".ln2.b", TB * (W), 0, VP_INIT_ZEROS, 1, TL)

/* A side's tensor as an offset from its first slot (VP_PS_TLT_QKV_W or VP_PS_TLF_QKV_W). */
typedef enum vp_tlob_slot {
    VP_TLS_QKV_W = 0, VP_TLS_QKV_B, VP_TLS_O_W, VP_TLS_O_B, VP_TLS_LN1_G, VP_TLS_LN1_B,
    VP_TLS_FC1_W, VP_TLS_FC1_B, VP_TLS_FC2_W, VP_TLS_FC2_B, VP_TLS_LN2_G, VP_TLS_LN2_B, VP_TLS_COUNT
} vp_tlob_slot;

/* What one side of the TLOB blocks keeps: over n rows (tokens of all sequences) of width W
 * per stored block, blocks one after another (row s * n_max + r of block s). */
typedef struct vp_tlob_side {
    vp_tensor x;                          /* [S n, W] the sublayer's input */
    vp_tensor q, k, v, o;                 /* [S n, W] projections, attention output */
    vp_tensor lse;                        /* [S B NH, L] the attention's log-sum-exp rows */
    vp_tensor a;                          /* [S n, W] x + o Wo^T + bo (before the first LayerNorm) */
    vp_tensor y;                          /* [S n, W] its LayerNorm */
    vp_tensor u, g;                       /* [S n, TM W] fc1 output before / after GELU */
    vp_tensor z;                          /* [S n, W] y + fc2(g) (before the second LayerNorm) */
    vp_tensor out;                        /* [S n, W] its LayerNorm: the sublayer's output */
    vp_tensor mean1, rstd1, mean2, rstd2; /* [S n] LayerNorm statistics */
} vp_tlob_side;

/* Parameter slots. */
typedef enum vp_pslot {
#define VP_PSLOT_ENUM(slot, ...) VP_PS_##slot,
    VP_MODEL_PARAMS(VP_PSLOT_ENUM)
#undef VP_PSLOT_ENUM
    VP_PS_COUNT
} vp_pslot;

/* Elements between consecutive tensors of the flat buffer are padded to this (256 B). */
#define VP_PARAM_ALIGN 64

/* A view of slot `s` inside a flat buffer (params or grads): [rows, cols] or [n]. */
vp_tensor vp_model_slot(const vp_model* m, const vp_tensor* flat, vp_pslot s);

/* Rows [r0, r0 + n) of a 2-D parameter view. */
vp_tensor vp_model_slot_rows(const vp_model* m, const vp_tensor* flat, vp_pslot s, int64_t r0,
                             int64_t n);

/* Forward state bits of the activations. */
enum { VP_ACTS_ENCODED = 1, VP_ACTS_HEADS = 2, VP_ACTS_OWN_ENC = 4, VP_ACTS_IQN = 8 };

/* Everything a forward keeps for the backward, the outputs and the backward's scratch.
 * Extents use the largest batch B; R = B * Kt trunk rows (Kt = K with a mixer, Mamba2 or TLOB; 1 without);
 * L = H + 2N + NH in_proj columns kept for all steps; Q = B * n_taus IQN rows. */
struct vp_model_acts {
    const vp_model* model;     /* owner of the configuration */
    const vp_mops* mops;       /* model kernels of the backend */
    vp_arena arena;            /* the one allocation */
    int64_t max_batch;         /* B */
    int max_taus;              /* n_taus capacity (0: no IQN) */
    int for_backward;          /* backward buffers present */
    int pad_heads;             /* 1: the forward writes v_pad and adv_pad (CUDA, vp_model_heads_padded) */
    int q_only;                /* 1: no reader wants logp (vp_model_acts_q_only); CUDA forwards skip it */
    int params_held;           /* 1: the parameters have not changed since pad_of's copy (vp_model_acts_hold_params) */
    vp_backend* lane;          /* where the IQN weight gradients of a backward run (vp_model_acts_set_lane); NULL */
    const void* pad_of;        /* the parameters head_w_pad was last copied from (NULL: none, or not to be trusted) */
    int fold_heads;            /* 1: Q by the folded output layers where they serve (vp_model_acts_fold_heads) */
    const void* fold_of;       /* the parameters head_fold was last folded from (NULL: none, or not to be trusted) */
    int64_t batch;             /* samples of the last forward */
    int n_taus;                /* IQN samples of the last forward (0: none) */
    int state;                 /* VP_ACTS_* bits */

    /* trunk */
    vp_tensor idx;             /* [R] i32 window rows */
    vp_tensor x0;              /* [R, F] gathered features */
    vp_tensor a1, a2;          /* [R, H] pre-LayerNorm (shared when forward only) */
    vp_tensor h1, h2;          /* [R, H] relu(LN(.)) */
    vp_tensor mean1, rstd1;    /* [R] */
    vp_tensor mean2, rstd2;    /* [R] */

    /* Mamba2 */
    vp_tensor h2_last;         /* [B, H] h2 at the last step */
    vp_tensor xbcdt;           /* [R, L] in_proj rows H.. : x, B, C, dt */
    vp_tensor z;               /* [B, H] in_proj rows 0..H at the last step */
    vp_tensor xb_pre, xb;      /* [R, H + N] conv output of x, B before / after SiLU */
    vp_tensor c_pre, c;        /* [B, N] conv output of C at the last step, before / after */
    vp_tensor dt;              /* [R, NH] softplus(dt + dt_bias) */
    vp_tensor y;               /* [B, H] scan output at the last step */
    vp_tensor sz;              /* [B, H] silu(z) */
    vp_tensor g;               /* [B, H] y * silu(z) */
    vp_tensor yn;              /* [B, H] RMSNorm(g) */
    vp_tensor rms_rstd;        /* [B] */
    vp_tensor e;               /* [B, H] encoding (aliases h2 without Mamba2) */

    /* heads */
    vp_tensor port;            /* [B, P] copy of the portfolio input */
    vp_tensor h;               /* [B, H] e + port projection */
    vp_tensor va1;             /* [2B, HH] v1's rows, then ah's */
    vp_tensor v1, ah;          /* [B, HH] value / advantage hidden (after relu), views of va1 */
    vp_tensor v;               /* [B, Z] value stream */
    vp_tensor adv;             /* [B, A * Z] advantage stream */
    vp_tensor logp;            /* [B * A, Z] logits, then log-probabilities in place */
    vp_tensor q;               /* [B, A] expected values */
    vp_tensor v_pad;           /* [B, Zp] the value stream at a row width of a multiple of 4 (padded heads) */
    vp_tensor adv_pad;         /* [B, AZp] the advantage stream likewise (padded heads; else empty) */
    vp_tensor head_w_pad;      /* the output layers at those widths: v2 W [Zp, HH], b [Zp], a2 W [AZp, HH],
                                * b [AZp], each padded with zero rows (padded heads; else empty) */
    vp_tensor head_fold;       /* the output layers folded for Q alone (heads_fold_math.h; CUDA forward-only
                                * activations of heads c51_fold_q serves; else empty) */
    vp_tensor cosf;            /* [Q, NC] cos(pi i tau) */
    vp_tensor phi;             /* [Q, H] relu(phi projection) */
    vp_tensor mix;             /* [Q, H] h * phi */
    vp_tensor iq1;             /* [Q, HH] IQN hidden (after relu) */
    vp_tensor zq;              /* [Q, A] quantile values */

    /* backward scratch (for_backward only) */
    vp_tensor d_logit;         /* [B * A, Z] */
    vp_tensor d_v;             /* [B, Z] */
    vp_tensor d_adv;           /* [B, A * Z] */
    vp_tensor d_v1, d_ah;      /* [B, HH] */
    vp_tensor d_h;             /* [B, H] gradient of h (= of e) */
    vp_tensor d_iq1;           /* [Q, HH] */
    vp_tensor d_mix;           /* [Q, H] */
    vp_tensor d_phi;           /* [Q, H] (same memory as d_mix) */
    vp_tensor d_yn, d_g, d_y, d_z, d_last; /* [B, H] */
    vp_tensor d_xb;            /* [R, H + N] */
    vp_tensor d_c;             /* [B, N] */
    vp_tensor d_xbcdt;         /* [R, L] */
    vp_tensor p_alog, p_d, p_dtb;        /* [B, NH] per-sample head parameter gradients */
    vp_tensor p_convw;         /* [B, (H + 2N) * CW] per-sample conv weight gradients */
    vp_tensor p_convb;         /* [B, H + 2N] */
    vp_tensor p_l1b;           /* [B, HH] per-sample partials of the IQN hidden bias gradient */
    vp_tensor p_l2w;           /* [ceil(B / VP_IQN_W2_GROUP), A * HH] group partials of the IQN output weight gradient */
    vp_tensor p_phib;          /* [B, H] per-sample partials of the IQN phi bias gradient */
    vp_tensor d_t1, d_t2;      /* [R, H] trunk gradients (ping-pong) */

    /* input modules (model_input.c; empty when off). KC = kan_grid + kan_order */
    const vp_inops* inops;     /* their kernels */
    vp_tensor xs;              /* [R, F] the first layer's input: x0 after the selection gate */
    vp_tensor vsn_eta;         /* [R, VH] elu(x0 W1^T + b1) */
    vp_tensor vsn_gs;          /* [R, 2F] eta W2^T + b2: gate values, gate logits */
    vp_tensor vsn_pre;         /* [R, F] x0 + values * sigmoid(logits) */
    vp_tensor vsn_logit;       /* [R, F] LayerNorm(pre): the selection logits */
    vp_tensor vsn_mean, vsn_rstd; /* [R] its LayerNorm statistics */
    vp_tensor vsn_w;           /* [R, F] softmax selection weights */
    vp_tensor vsn_wsum;        /* [F] column sums of vsn_w over the last forward's rows */
    vp_tensor d_xs, d_vsn_pre; /* [R, F] backward scratch */
    vp_tensor d_vsn_gs;        /* [R, 2F] */
    vp_tensor d_vsn_eta;       /* [R, VH] */
    vp_tensor sn_w1, sn_w2;    /* [H, F], [H, H] trunk.w1 / sigma, trunk.w2 / sigma */
    vp_tensor sn_u1, sn_v1;    /* [H], [F] the power step's vectors of trunk.w1 */
    vp_tensor sn_u2, sn_v2;    /* [H], [H] those of trunk.w2 */
    vp_tensor sn_sigma;        /* [2] sigma of trunk.w1, trunk.w2 */
    vp_tensor kan_silu;        /* [R, F] silu(xs) */
    vp_tensor kan_basis;       /* [R, F * KC] B-spline bases of xs */
    vp_tensor kan_w;           /* [H, F * KC] spline_w * spline_scaler */
    vp_tensor d_kan_w;         /* [H, F * KC] backward scratch */
    vp_tensor d_kan_silu;      /* [R, F] */
    vp_tensor d_kan_basis;     /* [R, F * KC] */
    /* head modules (task M2: model_stochdepth.c, model_qdenoise.c; empty when off) */
    const vp_tensor* sd_u;     /* [B] uniforms of the stochastic-depth draw; NULL: inference (identity) */
    vp_tensor sd_o;            /* [B, H] out_proj(yn) before the per-sample scale */
    vp_tensor sd_scale;        /* [B] 1{u >= p} / (1 - p) */
    vp_tensor sd_d;            /* [B, H] scale * d e (backward) */
    vp_tensor q_c51;           /* [B, A] C51 expected values before the refinement */
    vp_tensor qd_h;            /* [B, 2A] the refinement's hidden layer (after relu) */
    vp_tensor qd_dh;           /* [B, 2A] its gradient (backward) */
    const vp_tensor* qd_dq;    /* [B, A] d (refinement loss) / d refined Q; NULL: zero refinement gradients */
    vp_tensor xb_s;            /* [nb * B, HH] branch states relu(E_k ah), branch-major */
    vp_tensor xb_sp;           /* [nb * B, HH] states after the messages */
    vp_tensor xb_t;            /* [B * A * Z] per-branch advantage blocks [B, n_k Z], one after another */
    vp_tensor xb_ds, xb_dsp;   /* [nb * B, HH] gradients of the states (backward) */
    vp_tensor xb_dt;           /* [B * A * Z] gradient of the blocks (backward) */
    vp_tensor rb_logit;        /* [B, 1] the risk-budget head's logit */
    vp_tensor rb;              /* [B, 1] its scale sigmoid(logit) in (0, 1) */
    const vp_tensor* rb_dl;    /* [B] d (its loss) / d logit; NULL: zero gradients */
    vp_tensor support;         /* [nb, Z] the adaptive C51 support of the last heads forward (model_atoms.h) */
    /* the TLOB encoder (model_tlob.c; empty unless model.encoder = tlob). S stored blocks:
     * tlob_blocks with for_backward, else 1 (every block reuses its rows) */
    const vp_tlops* tlops;     /* its kernels */
    int tl_stored;             /* S */
    vp_tlob_side tl[2];        /* [0] temporal: B K rows of width H; [1] feature: B H rows of width K */
    vp_tensor tl_out;          /* [B K, H] the last block's output (time-major) */
    vp_tensor tl_dt;           /* [B K H] backward scratch: the feature side's gradient (transposed) */
    vp_tensor tl_da, tl_dy, tl_do, tl_dq, tl_dk, tl_dv; /* [B K H] backward scratch */
    vp_tensor tl_du;           /* [B K H TM] backward scratch of the MLP */
};

/* [rows, cols] view of the first rows of a 2-D activation. */
vp_tensor vp_acts_rows(const vp_tensor* t, int64_t rows);

/* The branch layout of a configuration (mops.h's vp_branch_map). */
vp_branch_map vp_model_branch_map(const vp_model_cfg* c);

/* [n] view of the first n elements of an activation. */
vp_tensor vp_acts_vec(const vp_tensor* t, int64_t n);

/* Views of the trunk's saved activations over R = batch x trunk steps rows. */
typedef struct vp_trunk_views {
    vp_tensor x0;                         /* [R, F] gathered feature rows */
    vp_tensor a1, h1, a2, h2;             /* [R, H] pre-norm and post-relu of both blocks */
    vp_tensor mean1, rstd1, mean2, rstd2; /* [R] LayerNorm statistics */
} vp_trunk_views;

/* The trunk views of activations `a` over R rows (model_acts.c). */
vp_trunk_views vp_model_trunk_views(const vp_model_acts* a, int64_t R);

/* Rows of the trunk per sample: K with a mixer (Mamba2 or TLOB), 1 without (encoder none). */
int vp_model_trunk_steps(const vp_model_cfg* c);

/* ---- pieces (model_forward.c, model_backward.c) ------------------------------------- */

/* Trunk over the window rows: features [T, F], bar_idx [batch] i32 -> a->h2 [R, H]. */
vp_status vp_model_trunk_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                 const vp_tensor* features, const vp_tensor* bar_idx, int64_t batch);

/* The trunk's layers over R rows already gathered into a->x0 [R, F] (each row alone: a row's
 * output reads only its own features): h2 [R, H] (a->h2's rows or another buffer). */
vp_status vp_model_trunk_rows(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R,
                              vp_tensor* h2);

/* Trunk backward from d_h2 [R, H] (overwritten as scratch) -> trunk gradients. */
vp_status vp_model_trunk_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                  vp_tensor* d_h2, int64_t batch);

/* Mamba2 mixer: a->h2 -> a->e (in_proj, conv, scan, gate, out_proj, residual). */
vp_status vp_model_mamba_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                 int64_t batch);

/* The Mamba2 extents of configuration c for `batch` samples (mops.h). */
vp_mamba_dims vp_model_mamba_dims(const vp_model_cfg* c, int64_t batch);

/* in_proj's x, B, C, dt rows of mamba.in_proj.w ([H + 2N + NH, H]; rows 0 .. H are z's). */
vp_tensor vp_model_mamba_w_rest(const vp_model* m, const vp_tensor* params);

/* The Mamba2 mixer after in_proj's x, B, C, dt rows: from a->xbcdt [batch K, L] and each window's
 * last trunk row a->h2_last [batch, H]: z, conv, scan, gate, out_proj and the residual -> a->e. */
vp_status vp_model_mamba_mix_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                     int64_t batch);

/* Mamba2 backward from a->d_h: Mamba2 gradients and d h2 [R, H] into a->d_t1. */
vp_status vp_model_mamba_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                  int64_t batch);

/* The encoder's backward for a head outside the network (PPO's, IQL's, the Decision
 * Transformer's) from d e [batch, H] (another buffer than a's): d e copied into a->d_h, then
 * vp_model_encoder_backward; writes the encoder's gradients. */
vp_status vp_model_encoder_backward_from(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* d_e,
                                         int64_t batch);

/* Gated RMSNorm: a->y, a->z -> a->sz, a->g, a->yn, a->rms_rstd. */
vp_status vp_model_gate_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                int64_t batch);

/* Gated RMSNorm backward: a->d_yn -> a->d_y, a->d_z and the mamba.norm.g gradient. */
vp_status vp_model_gate_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                 int64_t batch);

/* Dueling combine, log_softmax over atoms and Q: a->v, a->adv (or a->v_pad, a->adv_pad with the
 * padded heads) -> a->logp, a->q. */
vp_status vp_model_combine_forward(const vp_model* m, vp_model_acts* a, int64_t batch);

/* Whether a configuration's activations hold the padded C51 output rows (v_pad, adv_pad):
 * when Z or A Z is not a multiple of 4 floats (an output row of 51 or 663 floats makes
 * cuBLASLt take its unaligned kernels), unless cross-branch messages or a learned support
 * write or read the dense streams. Every backend lays them out, so the CPU's and the GPU's
 * activations keep one layout; only CUDA forwards use them (acts->pad_heads). The padded
 * columns multiply zero weight rows; nothing reads them. */
int vp_model_heads_padded(const vp_model_cfg* c);

/* The padded heads' output layers: the weights copied into a->head_w_pad (zero rows after),
 * then v_pad = v1 W2^T + b2 and adv_pad = ah A2^T + a2b at the padded widths. */
vp_status vp_model_heads_out_padded(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Its backward: d log_probs [batch * A, Z] -> a->d_v, a->d_adv. */
vp_status vp_model_combine_backward(const vp_model* m, vp_model_acts* a,
                                    const vp_tensor* d_log_probs, int64_t batch);

/* y [rows, out] = epi(x [rows, in] W^T + bias + beta y) at the model's precision; W [out, in],
 * bias [out] or NULL (model_linear.c: every linear layer of the network). */
vp_status vp_model_linear(const vp_model* m, const vp_tensor* x, const vp_tensor* W, const vp_tensor* bias,
                          vp_epilogue epi, float beta, vp_tensor* y);

/* Its backward: dW = dy^T x; db = column sums of dy (db may be NULL); dx = dy W + dx_beta dx
 * (dx may be NULL). */
vp_status vp_model_linear_backward(const vp_model* m, const vp_tensor* x, const vp_tensor* W, const vp_tensor* dy,
                                   vp_tensor* dW, vp_tensor* db, vp_tensor* dx, float dx_beta);

/* IQN embedding and head: a->h, taus [batch, n_taus] -> a->zq [batch * n_taus, A]. */
vp_status vp_model_iqn_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                               const vp_tensor* taus, int64_t batch, int n_taus);

/* IQN backward from d iqn [batch * n_taus, A]: IQN gradients, adds d h into a->d_h. Its
 * weight gradients of the hidden layer and the embedding are left on a->lane when one is set
 * (vp_model_acts_set_lane); the caller (vp_model_backward) joins it. */
vp_status vp_model_iqn_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                                const vp_tensor* d_iqn, int64_t batch);

/* The planner of model_acts.c: take(ctx, t, name, rows, cols) lays out one tensor (rows 0
 * leaves it empty). */
typedef void vp_model_take_fn(void* ctx, vp_tensor* t, const char* name, int64_t rows, int64_t cols);

/* ---- the TLOB encoder (model_tlob.c) --------------------------------------------------- */

/* Checks the TLOB fields of a configuration (vp_model_cfg_check, model.encoder = tlob). */
vp_status vp_model_tlob_check(const vp_model_cfg* c);

/* Lays out the TLOB activations with model_acts.c's planner (nothing unless it is on). */
void vp_model_tlob_layout(vp_model_acts* a, vp_model_take_fn* take, void* ctx);

/* TLOB blocks over the trunk rows: a->h2 [B K, H] + tlob.pos -> the blocks -> a->e [B, H], the
 * last step's row of the last block's output. */
vp_status vp_model_tlob_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* Its backward from d e in a->d_h [B, H]: the TLOB gradients and d h2 [B K, H] into a->d_t1. */
vp_status vp_model_tlob_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* The encoder's forward after the trunk (Mamba2, TLOB, or e = h2 without one). */
vp_status vp_model_encoder_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* The encoder's backward from d e in a->d_h [B, H] down to the trunk's input gradient d h2
 * in a->d_t1, then the trunk's backward. */
vp_status vp_model_encoder_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t batch);

/* ---- the input modules (model_input.c): variable selection, spectral norm, KAN ------- */

/* Checks the input modules' fields of a configuration (vp_model_cfg_check). */
vp_status vp_model_input_check(const vp_model_cfg* c);

/* GEMM FLOPs the input modules add to vp_model_flops over R trunk rows. */
double vp_model_input_flops(const vp_model_cfg* c, double R, int backward);

/* Lays out the modules' activations with model_acts.c's planner (vp_model_take_fn). */
void vp_model_input_layout(vp_model_acts* a, vp_model_take_fn* take, void* ctx);

/* The trunk's first layer over R rows from a->x0: the selection gate (x0 -> xs), the spectral
 * norms' power step, then a1 [R, H] = linear or KAN of xs. */
vp_status vp_model_first_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a, int64_t R);

/* trunk.w2 as the trunk multiplies by it: the spectral-normalised copy, or the parameter. */
vp_tensor vp_model_trunk_w2(const vp_model* m, const vp_tensor* params, const vp_model_acts* a);

/* After trunk.w2's gradient was written with the weight of vp_model_trunk_w2: the gradient
 * through its spectral norm (a no-op without). */
vp_status vp_model_trunk_w2_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a);

/* The first layer's backward from d a1 [R, H] (da): its gradients, then the selection gate's. */
vp_status vp_model_first_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a, const vp_tensor* da,
                                  int64_t R);

/* ---- the forward one bar at a time (model_incremental.c), CPU ---------------------------- */

/* Weight matrices the one-sample forward multiplies by. */
#define VP_MODEL_INC_WEIGHTS 11

/* The weights of one-sample GEMMs laid out [in, out] once (host memory), read with the
 * parameters they were made from (which must stay unchanged). */
typedef struct vp_model_inc {
    const vp_model* m;        /* the network */
    const vp_tensor* params;  /* [n_weights] its parameters (norms, biases, Mamba2 vectors read in place) */
    vp_buffer buf;            /* storage of the matrices below */
    vp_tensor w1, w2;         /* trunk [F, H], [H, H] */
    vp_tensor w_rest, w_z;    /* in_proj's x, B, C, dt columns [H, L] and z columns [H, H] (Mamba2 only) */
    vp_tensor w_out;          /* out_proj [H, H] (Mamba2 only) */
    vp_tensor w_port;         /* [P, H] */
    vp_tensor w_v1, w_v2, w_a1, w_a2; /* [H, HH], [HH, Z], [H, HH], [HH, A Z] */
    vp_tensor w_convt;        /* the conv's weights by tap [CW, H + 2N] (Mamba2 only) */
    int64_t L;                /* in_proj columns kept per bar: H + 2N + NH (0 without Mamba2) */
    float* acc;               /* [widest output] the one-row products' accumulators */
    int finite;               /* 1: every matrix above is finite, so zero inputs' terms may be skipped */
} vp_model_inc;

/* Instruction sets of the one-sample forward's loops, each giving the same bits. */
enum { VP_MODEL_INC_ISA_PORTABLE = 0, VP_MODEL_INC_ISA_AVX2 = 1, VP_MODEL_INC_ISA_BEST = 2 /* AVX-512 */ };

/* Caps the instruction set the one-sample forward uses at `isa` (tests: every build's bits). */
void vp_model_inc_limit_isa(int isa);

/* The instruction set it uses now: the widest the processor has, up to the cap. */
int vp_model_inc_isa(void);

/* y [n] = epi(x [k] Wt [k, n] + beta y) for one row (host memory; bias [n], read unless epi is
 * VP_EPI_NONE; acc [n] scratch): the bits of vp_gemm's row-exact CPU kernel for that row
 * (model_row_gemm.c). skip_zeros: the terms with x[p] == 0 are left out (their weight rows
 * not read), the same bits when every weight of Wt is finite (the caller's to know). */
void vp_model_row_gemm(int64_t k, int64_t n, const float* x, const float* Wt, const float* bias, vp_epilogue epi,
                       float beta, float* y, float* acc, int skip_zeros);

/* Lays out m's weights from params for the one-sample forward into *w (CPU backends only). */
vp_status vp_model_inc_init(vp_model_inc* w, const vp_model* m, const vp_tensor* params);

/* Frees what vp_model_inc_init made (a zeroed value is a no-op). */
void vp_model_inc_free(vp_model_inc* w);

/* The last K bars as the one-sample forward keeps them (vp_model_inc_ring_init). */
typedef struct vp_model_inc_ring {
    int64_t n;       /* bars pushed; bar i sits at row i mod K */
    int K;           /* rows */
    float* xbcdt;    /* [K, L] each bar's in_proj x, B, C, dt columns (Mamba2) */
    float* xb;       /* [K, H + N] each bar's conv + SiLU of its x and B channels over itself and its CW - 1
                        predecessors (what a window reads at its positions >= CW - 1; Mamba2, K >= CW) */
    float* h2;       /* [H] the last bar's trunk output */
    float* rows;     /* [K, H] each bar's trunk output (TLOB, which encodes the whole window) */
    void* block;     /* storage of the rows */
} vp_model_inc_ring;

/* An empty ring for w's network into *r (free with vp_model_inc_ring_free). */
vp_status vp_model_inc_ring_init(vp_model_inc_ring* r, const vp_model_inc* w);

/* Frees a ring (a zeroed one is a no-op). */
void vp_model_inc_ring_free(vp_model_inc_ring* r);

/* One bar into the ring from its feature row x [F] (host): its trunk output, in_proj row and
 * conv row, the rows vp_model_encode computes for that bar (a's first trunk row as scratch).
 * The first bar fills every row: a window reaching before it reads it, as vp_model_encode
 * clamps at row 0. */
vp_status vp_model_inc_push(const vp_model_inc* w, vp_model_acts* a, vp_model_inc_ring* r, const float* x);

/* The encoding of the window of the ring's last bar (its K bars, oldest first) into a, as
 * vp_model_encode of that bar leaves it (then vp_model_encoding, or vp_model_inc_heads): the
 * Mamba2 mixer over the cached rows (conv at the window's first CW - 1 positions, where it
 * reads no bar before the window; the scan; gate; out_proj), the TLOB blocks over the window's
 * K trunk rows, or the last bar's trunk output without a mixer. */
vp_status vp_model_inc_encode(const vp_model_inc* w, vp_model_acts* a, const vp_model_inc_ring* r);

/* The one-sample mixer of vp_model_inc_encode (model_inc_mamba.c): a->xbcdt [K, L] holds the
 * window's in_proj rows and r its conv rows; writes a->xb, a->c, a->dt and a->y as
 * vp_model_mamba_forward's conv and scan do for one sample. */
void vp_model_inc_mix(const vp_model_inc* w, vp_model_acts* a, const vp_model_inc_ring* r);

/* Bar r->n - 1's conv row into r->xb from the ring's in_proj rows (model_inc_mamba.c). */
void vp_model_inc_conv_row(const vp_model_inc* w, vp_model_inc_ring* r);

/* The heads in FP32 (as a rollout scores) from a's encoding and portfolio [1, P]: a's q
 * (vp_model_q), as vp_model_heads computes them. */
vp_status vp_model_inc_heads(const vp_model_inc* w, vp_model_acts* a, const vp_tensor* portfolio);

#ifdef __cplusplus
}
#endif

#include "model/model_hmods.h"

#endif /* VULPES_MODEL_INTERNAL_H */
