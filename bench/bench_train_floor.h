/* The work of one env step of collection, counted for `vulpes bench train`: GEMM FLOPs,
 * bytes every implementation must move, and the floor they set on the H200. */
#ifndef VP_BENCH_TRAIN_FLOOR_H
#define VP_BENCH_TRAIN_FLOOR_H

#include "vulpes/collect.h"
#include "vulpes/model.h"

/* The H200's measured TF32 GEMM ceiling (docs/perf.md, "H200 ceilings"), FLOP/s. */
#define VP_BENCH_CEIL_TF32 355e12
/* The rate a memory-bound op of this backend reaches on the H200 (docs/perf.md), bytes/s. */
#define VP_BENCH_CEIL_BYTES 4.2e12

/* Per env step of a collector's collection (docs/collect.md, "Work per env step"). */
typedef struct vp_bench_floor {
    int encode_once;   /* the path the collector takes */
    int64_t span_rows; /* R: rows encoded per collection on the encode-once path (0 otherwise) */
    double enc_rows;   /* encoded windows per env step: R / (E S), or 1 step by step */
    double flops;      /* GEMM FLOPs: enc_rows x the encoder's + the heads' */
    double bytes;      /* bytes counted: the env step, the replay push, the heads' inputs and outputs,
                          the gather, each encoded window's feature rows (shared rows: its share of the
                          span's bars) and its encoding */
    double floor_s;    /* seconds: max(flops / VP_BENCH_CEIL_TF32, bytes / VP_BENCH_CEIL_BYTES) */
    int shared;        /* 1: the span is encoded with shared rows (the collector's span_shared) */
    double enc_flops;  /* GEMM FLOPs per encoded window, the head modules included (shared rows: the span's
                          per-bar rows over its windows, plus each window's z, out_proj or TLOB blocks) */
} vp_bench_floor;

/* GEMM FLOPs of the portfolio projection and the C51 heads for one sample. */
double vp_bench_heads_flops(const vp_model_cfg* m);

/* The counts for collector c (S = c->cfg.steps, at least 1) running network m. */
vp_bench_floor vp_bench_collect_floor(const vp_collector* c, const vp_model_cfg* m);

#endif /* VP_BENCH_TRAIN_FLOOR_H */
