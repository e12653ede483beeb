/* Internal: the Decision Transformer's activations, shared by the forward (dt_fwd.c) and the
 * backward (dt_bwd.c). Extents use the largest batch: B sequences, BK = B K steps, BL = B L
 * tokens. A forward-only set keeps one block's buffers and two residual streams, reused by every
 * block. */
#ifndef VP_LEARN_DT_ACTS_H
#define VP_LEARN_DT_ACTS_H

#include "learn/dt_impl.h"
#include "model/model_internal.h"
#include "vulpes/dt.h"

/* One block's saved tensors. */
typedef struct vp_dt_block_acts {
    vp_tensor ln1, q, k, v, att, mid, ln2; /* [BL, D] */
    vp_tensor m1, r1, m2, r2;              /* [BL] LayerNorm statistics */
    vp_tensor lse;                         /* [B, NH, L] */
    vp_tensor fc, ge;                      /* [BL, 4D] before and after the GELU */
} vp_dt_block_acts;

struct vp_dt_acts {
    const vp_dt_net* net;         /* the network */
    vp_model lin;                 /* the encoder's model as the linears compute (FP32 for rollouts) */
    vp_model_acts* enc;           /* encoder activations for enc_rows bars (NULL: none) */
    int64_t enc_rows;             /* their rows */
    int64_t max_b;                /* B */
    int64_t b;                    /* sequences of the last forward */
    int for_backward;             /* every block's tensors and the backward scratch present */
    int own_enc;                  /* the last forward read the activations' own encoding */
    int n_blocks;                 /* sets of block tensors: layers, or 1 */
    const vp_dt_batch* x;         /* the last forward's batch (caller's memory) */
    vp_arena arena;               /* the tensors below */
    vp_tensor e_in;               /* [BK, H] the last forward's encoding (a view) */
    vp_tensor h;                  /* [BK, H] e + W_p p + b_p */
    vp_tensor stok;               /* [BK, D] the state linear's output */
    vp_tensor x0;                 /* [BL, D] the tokens */
    vp_tensor mi, ri;             /* [BL] the input LayerNorm's statistics */
    vp_tensor xs[VP_DT_MAX_LAYERS + 1]; /* [BL, D] residual stream into each block (forward-only: two) */
    vp_dt_block_acts blk[VP_DT_MAX_LAYERS];
    vp_tensor lnf, mf, rf;        /* [BL, D], [BL], [BL] the final LayerNorm */
    vp_tensor logits;             /* [BL, A] */
    /* backward */
    vp_tensor d_logits;           /* [BL, A] from the loss */
    vp_tensor dx, dt1, dt2;       /* [BL, D] residual gradient and scratch */
    vp_tensor dq, dk, dv, datt;   /* [BL, D] */
    vp_tensor dfc;                /* [BL, 4D] */
    vp_tensor dstok;              /* [BK, D] */
    vp_tensor dh;                 /* [BK, H] */
};

/* The residual stream into block l of a (l = layers: the output). */
vp_tensor* vp_dt_stream(vp_dt_acts* a, int l);

/* The saved tensors of block l of a. */
vp_dt_block_acts* vp_dt_block(vp_dt_acts* a, int l);

/* [rows, cols] view of the first rows of a 2-D activation. */
vp_tensor vp_dt_rows(const vp_tensor* t, int64_t rows);

/* Rows [r0, r0 + n) of a 2-D parameter view w. */
vp_tensor vp_dt_wrows(const vp_tensor* w, int64_t r0, int64_t n);

/* Elements [r0, r0 + n) of a vector view v. */
vp_tensor vp_dt_vec(const vp_tensor* v, int64_t r0, int64_t n);

/* The causal attention's shape over B sequences of shape d. */
vp_attn_desc vp_dt_attn_desc(const vp_dt_dims* d, int64_t B);

/* The embedding kernels' arguments for the last forward of a with params. */
void vp_dt_embed_args_of(const vp_dt_acts* a, const vp_tensor* params, vp_dt_embed_args* out);

#endif /* VP_LEARN_DT_ACTS_H */
