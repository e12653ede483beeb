/* The work of one Decision Transformer update, counted for `vulpes bench dt`: GEMM FLOPs, bytes
 * every implementation must move, and the floor they set on the H200 (the ceilings of
 * bench_train_floor.h). */
#ifndef VP_BENCH_DT_FLOOR_H
#define VP_BENCH_DT_FLOOR_H

#include "vulpes/dt.h"

/* Per update of B sequences (docs/perf.md, "Decision Transformer"). */
typedef struct vp_bench_dt_work {
    double enc_flops;  /* the encoder's forward and backward over the B K windows (no DQN heads) */
    double lin_flops;  /* the transformer's products forward and backward: the portfolio projection
                          (its input needs no gradient: 2x its forward), the state linear, per block
                          QKV, projection and MLP, the head (3x their forward) */
    double attn_flops; /* causal attention forward and backward: 3.5x the forward's q k^T and P v
                          (FlashAttention's count, as `vulpes bench attn`) */
    double flops;      /* the sum */
    double bytes;      /* the batch's rows written by the draw and read, each step's window of feature
                          rows, the loss terms, the gradient write and AdamW over the trained parameters */
    double floor_s;    /* max(flops / TF32 ceiling, bytes / byte rate) */
} vp_bench_dt_work;

/* The counts for encoder m, transformer d, B sequences and n_params trained parameters
 * (vp_dt_net_numel). */
vp_bench_dt_work vp_bench_dt_count(const vp_model_cfg* m, const vp_dt_dims* d, int64_t B, int64_t n_params);

#endif /* VP_BENCH_DT_FLOOR_H */
