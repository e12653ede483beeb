/* The work of PPO's collection per env step and of its update per row, counted for
 * `vulpes bench ppo`: GEMM FLOPs, bytes every implementation must move, and the floor they
 * set on the H200 (the ceilings of bench_train_floor.h). */
#ifndef VP_BENCH_PPO_FLOOR_H
#define VP_BENCH_PPO_FLOOR_H

#include "vulpes/ppo.h"

/* Per env step of collection and per row of a minibatch update (docs/perf.md, "PPO"). */
typedef struct vp_bench_ppo_work {
    double enc_rows;      /* windows encoded per env step: R / (E T) encoding once, (T + 1) / T step by step */
    double heads_fwd;     /* GEMM FLOPs of one forward of the portfolio projection and both heads */
    double enc_fwd;       /* GEMM FLOPs of one window's encoder forward */
    double col_flops;     /* per env step: enc_rows x enc_fwd + (T + 1) / T x heads_fwd */
    double col_bytes;     /* per env step: the env step, the heads' inputs and outputs, the sampler's rows,
                             the gather, each encoded window's feature rows and encoding, GAE's rows */
    double col_floor_s;   /* per env step: max(col_flops / TF32 ceiling, col_bytes / byte rate) */
    double upd_flops;     /* per row: the encoder's and the heads' forward and backward */
    double upd_bytes;     /* per row: its permutation entry, gather, window's feature rows, loss inputs
                             and outputs, and its share (1 / M) of the gradient write and AdamW
                             over the trained parameters (vp_ppo_net_numel) */
    double upd_floor_s;   /* per row: max(upd_flops / TF32 ceiling, upd_bytes / byte rate) */
} vp_bench_ppo_work;

/* The counts for trainer t (its network, n_envs, T, minibatch and collection path). */
vp_bench_ppo_work vp_bench_ppo_count(const vp_ppo_trainer* t);

#endif /* VP_BENCH_PPO_FLOOR_H */
