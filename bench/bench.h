/* Benchmarks run by `vulpes bench`. Each validates before it times, times after a
 * warm-up (CUDA events on the GPU), prints a table on stdout and JSON lines (to stdout,
 * or appended to --json FILE), and returns an exit code. */
#ifndef VP_BENCH_H
#define VP_BENCH_H

#include <stdio.h>

#include "vulpes/vulpes.h"

typedef struct vp_bench_opts {
    int iters;             /* timed repetitions (0: the benchmark's default) */
    const char* json_path; /* append JSON lines here (NULL: stdout) */
    int quick;             /* smaller shapes, for smoke runs on the CPU */
    const char* backend;   /* "cpu", "cuda" or "auto" */
    int64_t batch;         /* bench step: learner batch B (0: the default, 8192; --quick's smaller one) */
    const char* ablate;    /* bench step: switches KEY[,KEY=VALUE...] timed beside the default (NULL: none) */
    int64_t envs;          /* bench train: only the collections of this many envs (0: the benchmark's list) */
    int64_t steps;         /* bench train: only the collections of S = steps (0: the benchmark's list) */
    int gpus;              /* bench step: ranks of the scaling run (0: no scaling lines) */
} vp_bench_opts;

/* `vulpes bench gemm`: the learner's GEMM shapes. */
int vp_bench_gemm(vp_backend* b, const vp_bench_opts* o);

/* Seconds on a monotonic host clock. */
double vp_bench_now(void);

/* Timed launches of vp_bench_time_body (after one untimed warm-up launch); their median counts. */
#define VP_BENCH_REPS 5

/* Median milliseconds per unit of `body` (one call does `units` units of work) over
 * VP_BENCH_REPS timed launches after a warm-up, each followed by a sync: as one captured graph
 * when `graph`, else by calling body eagerly. */
vp_status vp_bench_time_body(vp_backend* b, vp_graph_body body, void* ctx, int graph, int units, double* ms);

/* Opens the JSON-lines sink (stdout or the --json file, appended); never NULL. */
FILE* vp_bench_json_open(const vp_bench_opts* o);

/* Closes what vp_bench_json_open returned (stdout is left open). */
void vp_bench_json_close(FILE* f);

/* The offline benches' data (bench_offline.c): a synthetic GBM market of n bars into *d and the
 * random behaviour's dataset of 256 steps of 64 envs on its training span into *ds; prints why
 * naming `vulpes bench WHAT` and returns 0 on failure, 1 on success. */
int vp_bench_offline_data(vp_backend* b, int64_t n, const char* what, vp_train_data* d, vp_offline_data* ds);

/* `vulpes bench env`: environment steps per second with random actions, bytes per step, GB/s. */
int vp_bench_env(vp_backend* b, const vp_bench_opts* o);

/* `vulpes bench step`: ms per learner step at B = 8192 with its phases and TFLOP/s (with
 * o->ablate: the default config's, then each switch on, and a table side by side). */
int vp_bench_step(vp_backend* b, const vp_bench_opts* o);

/* bench step's synthetic batch: random features ([4096, F] into *fbuf, freed by the caller),
 * bars, portfolios, actions, rewards, discounts and weights uploaded into bt (taken from l). */
vp_status vp_bench_step_batch(vp_backend* b, vp_learner* l, vp_batch* bt, vp_buffer* fbuf);

/* `vulpes bench step --gpus N`, on each rank of the run of comm (one rank: comm of size 1): the
 * learner step at the global batch split over the ranks (strong scaling) and at that batch per
 * rank (weak scaling), each with its gradient all-reduce inside the captured step, and the
 * all-reduce timed alone; rank 0 prints the lines and JSON. */
int vp_bench_step_scale(vp_backend* b, const vp_bench_opts* o, vp_comm* comm);

/* `vulpes bench train`: collection env steps/s with policy inference, iterations/s and the
 * time split between collection and learning. */
int vp_bench_train(vp_backend* b, const vp_bench_opts* o);

/* `vulpes bench backtest`: bars/s of the exact sequential backtest and the segment mode, encode vs steps. */
int vp_bench_backtest(vp_backend* b, const vp_bench_opts* o);

/* `vulpes bench act`: microseconds per live decision on one CPU core (default network), median
 * and p99, FLOPs per decision. */
int vp_bench_act(vp_backend* b, const vp_bench_opts* o);

/* `vulpes bench ppo`: PPO's collection env steps/s, ms and rows/s per minibatch update, and
 * whole iterations (collection + epochs of updates) with their split. */
int vp_bench_ppo(vp_backend* b, const vp_bench_opts* o);

/* `vulpes bench iql`: ms per IQL update at B = 8192 (the dataset's rows drawn, both encodings,
 * every head, the losses, one backward, AdamW, Polyak), rows/s, TFLOP/s and its FLOP floor. */
int vp_bench_iql(vp_backend* b, const vp_bench_opts* o);
/* `vulpes bench dt`: ms per Decision Transformer update at B = 8192 sequences (the batch drawn,
 * the encoder over its B K windows, the transformer, the loss, one backward, AdamW), sequences/s,
 * tokens/s, TFLOP/s and its FLOP floor. */
int vp_bench_dt(vp_backend* b, const vp_bench_opts* o);
/* `vulpes bench attn`: ms, TFLOP/s and GB/s of the attention ops' forward and forward + backward
 * on the models' shapes (B divided by 256 on the CPU). */
int vp_bench_attn(vp_backend* b, const vp_bench_opts* o);

#endif /* VP_BENCH_H */
