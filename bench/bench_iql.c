/* `vulpes bench iql`: one IQL update (docs/iql.md) at B = 8192 rows.
 *
 * Per configuration one trainer (train.algo iql) on a synthetic GBM market (synth:gbm, 20 000 bars) over a
 * dataset of the random behaviour recorded on its training span (256 steps of 64 envs), validated
 * first: a few iterations, finite statistics, and no copy, allocation or sync across the captured
 * iterations. Then one captured graph of `reps` updates (vp_iql_update: the batch drawn, the
 * forward of s with every head and the target Q heads, of s' with the value, the losses, one
 * backward, the clip, AdamW, Polyak), timed as a warm-up launch and the median of 5 launches
 * between two syncs (host clock): ms per update, rows/s, TFLOP/s of its GEMMs, and beside them the
 * FLOPs and bytes per row and, on CUDA, the fraction of their H200 floor reached.
 * Configurations: CUDA the default model at B = 8192 (--quick B = 1024); CPU the network of
 * examples/eurusd.yaml (H 64) at B = 8192 (--quick B = 256). Prints a table and JSON lines
 * ("bench":"iql"). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "bench_train_floor.h"
#include "vulpes/iql.h"
#include "vulpes/record.h"
#include "vulpes/dataset.h"

#define VALIDATE_ITERS 3  /* iterations between the counter readings */

/* The work of one update per row: GEMM FLOPs and the bytes every implementation must move. */
typedef struct iql_work {
    double flops, bytes, floor_s; /* per row; floor_s = max(flops / TF32 ceiling, bytes / byte rate) */
} iql_work;

/* The counts for trainer t: the encoder's forward and backward at s, its forward at s', the
 * portfolio projections, the four MLPs forward and backward at s, the two target Q MLPs and the
 * value at s' forward; the row's gather, window rows, loss inputs and outputs and its share (1 / B)
 * of the gradient write, AdamW over the trained parameters and the Polyak step. */
static iql_work count(const vp_iql_trainer* t) {
    iql_work w;
    const vp_model_cfg* m = &t->net.enc.cfg;
    const double B = (double)t->ic.batch, W = (double)vp_iql_net_numel(&t->net), NT = (double)t->net.n_target;
    const double H = m->hidden, P = m->n_portfolio, HH = m->head_hidden, A = vp_model_cfg_actions(m);
    const double NB = VP_ENV_BRANCHES, K = m->encoder == VP_ENCODER_NONE ? 1 : m->window, F = m->n_features;
    const double dqn_heads = vp_bench_heads_flops(m);
    const double enc_fwd = vp_model_flops(m, 1, 0, 0) - dqn_heads, enc_fb = vp_model_flops(m, 1, 0, 1) - 3.0 * dqn_heads;
    const double proj = 2.0 * H * P, mlp_a = 2.0 * (HH * H + A * HH), mlp_1 = 2.0 * (HH * H + HH);
    const double heads_fwd = proj + 3.0 * mlp_a + mlp_1, heads_fb = 3.0 * heads_fwd - 2.0 * proj;
    w.flops = enc_fb + heads_fb + 2.0 * mlp_a + enc_fwd + proj + mlp_1;
    const double row = 4.0 * (2.0 + 2.0 * P + NB + 2.0), window = 2.0 * 4.0 * K * F;
    const double loss_io = 4.0 * (5.0 * A + 2.0) + 4.0 * (VP_IQL_STAT_COUNT + 3.0 * A + 1.0);
    w.bytes = 2.0 * row + window + loss_io + (8.0 * 4.0 * W + 3.0 * 4.0 * NT) / B;
    const double tf = w.flops / VP_BENCH_CEIL_TF32, tb = w.bytes / VP_BENCH_CEIL_BYTES;
    w.floor_s = tf > tb ? tf : tb;
    return w;
}

typedef struct iql_ctx {
    vp_iql_trainer* t;
    int reps;
} iql_ctx;

/* `reps` updates. */
static vp_status iql_body(vp_backend* b, void* ctx) {
    (void)b;
    iql_ctx* c = (iql_ctx*)ctx;
    for (int r = 0; r < c->reps; ++r) VP_TRY(vp_iql_update(c->t));
    return VP_OK;
}

/* The configuration of one case; prints why when it is invalid. */
static vp_status bench_cfg(vp_config* c, int64_t batch, int small) {
    vp_config_defaults(c);
    snprintf(c->train.algo, sizeof c->train.algo, "iql");
    snprintf(c->iql.dataset, sizeof c->iql.dataset, "(in memory)");
    c->iql.batch = batch;
    c->train.train_steps = 1;
    c->env.episode_bars = 1024;
    c->features.window = 64;
    if (small) {
        c->model.hidden = 64, c->model.mamba_head_dim = 32, c->model.head_hidden = 64;
        c->model.iqn_taus = 16, c->model.iqn_target_taus = 16, c->model.iqn_cos = 32;
    }
    vp_status s = vp_config_check(c);
    if (s != VP_OK) fprintf(stderr, "vulpes bench iql: the configuration of B = %lld is invalid: %s\n", (long long)batch,
                            vp_last_error());
    return s;
}

/* Builds a trainer and checks a few iterations; prints why and frees it on failure. */
static int trainer_ready(vp_iql_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                         const vp_offline_data* ds) {
    vp_runtime_counters c0, c1;
    double st[VP_IQL_STAT_COUNT], gn = 0.0;
    vp_status s = vp_iql_trainer_init(t, b, cfg, d, ds);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench iql: set-up of B = %lld failed: %s\n", (long long)cfg->iql.batch, vp_last_error());
        return 0;
    }
    s = vp_iql_trainer_iterate(t, 1);
    if (s == VP_OK) s = vp_backend_sync(b);
    vp_backend_counters(b, &c0);
    if (s == VP_OK) s = vp_iql_trainer_iterate(t, VALIDATE_ITERS);
    vp_backend_counters(b, &c1);
    if (s == VP_OK) s = vp_iql_trainer_stats(t, st, &gn);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench iql: the first iterations failed: %s\n", vp_last_error());
        vp_iql_trainer_free(t);
        return 0;
    }
    int finite = isfinite(gn);
    for (int i = 0; i < VP_IQL_STAT_COUNT; ++i) finite = finite && isfinite(st[i]);
    if (c1.copies != c0.copies || c1.allocs != c0.allocs || c1.syncs != c0.syncs || !finite) {
        fprintf(stderr, "vulpes bench iql: validation failed (%d iterations: copies +%lld, allocs +%lld, syncs +%lld; "
                "value loss %g, Q loss %g, policy loss %g, gradient norm %g)\n", VALIDATE_ITERS,
                (long long)(c1.copies - c0.copies), (long long)(c1.allocs - c0.allocs),
                (long long)(c1.syncs - c0.syncs), st[VP_IQL_STAT_V], st[VP_IQL_STAT_Q], st[VP_IQL_STAT_PI], gn);
        vp_iql_trainer_free(t);
        return 0;
    }
    return 1;
}

/* Times one case's update; prints its row. Returns 0 on failure. */
static int bench_case(vp_backend* b, const vp_train_data* d, const vp_offline_data* ds, int64_t batch, int small,
                      const vp_bench_opts* o, FILE* js) {
    vp_config cfg;
    vp_iql_trainer t;
    if (bench_cfg(&cfg, batch, small) != VP_OK || !trainer_ready(&t, b, &cfg, d, ds)) return 0;
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int reps = o->iters > 0 ? o->iters : cuda ? 10 : 1;
    iql_ctx c = {&t, reps};
    double ms = 0.0;
    vp_status s = vp_bench_time_body(b, iql_body, &c, 1, reps, &ms);
    double st[VP_IQL_STAT_COUNT], gn = 0.0;
    if (s == VP_OK) s = vp_iql_trainer_stats(&t, st, &gn);
    if (s != VP_OK || !(isfinite(st[VP_IQL_STAT_Q]) && isfinite(st[VP_IQL_STAT_V]) && isfinite(gn))) {
        fprintf(stderr, "vulpes bench iql: timing of B = %lld failed: %s\n", (long long)batch,
                s != VP_OK ? vp_last_error() : "statistics not finite after timing");
        vp_iql_trainer_free(&t);
        return 0;
    }
    const iql_work w = count(&t);
    const double rows = (double)batch / (ms * 1e-3), tflops = w.flops * rows * 1e-12, frac = w.floor_s * rows;
    char fb[16];
    snprintf(fb, sizeof fb, "%.3f", frac);
    const vp_model_cfg* m = &t.net.enc.cfg;
    printf("%-5s %-7s %6lld %4d %10.3f %12.4g %8.3g %9.4f %8.0f %6s\n", cuda ? "cuda" : "cpu", "update",
           (long long)batch, m->hidden, ms, rows, tflops, w.flops * 1e-6, w.bytes, cuda ? fb : "-");
    fprintf(js, "{\"bench\":\"iql\",\"what\":\"update\",\"backend\":\"%s\",\"device\":\"%s\",\"batch\":%lld,"
            "\"n_features\":%d,\"n_portfolio\":%d,\"window\":%d,\"hidden\":%d,\"encoder\":%d,\"mamba_state\":%d,"
            "\"mamba_head_dim\":%d,\"mamba_conv\":%d,\"head_hidden\":%d,\"parameters\":%lld,\"dataset_rows\":%lld,"
            "\"ms_per_update\":%.6g,\"rows_per_s\":%.6g,\"tflops\":%.6g,\"flop_per_row\":%.6g,\"bytes_per_row\":%.6g,"
            "\"floor_s_per_row\":%.6g,\"floor_frac\":%.6g}\n", cuda ? "cuda" : "cpu", vp_backend_name(b),
            (long long)batch, m->n_features, m->n_portfolio, m->window, m->hidden, (int)m->encoder,
            m->mamba_state, m->mamba_head_dim, m->mamba_conv, m->head_hidden, (long long)vp_iql_net_numel(&t.net),
            (long long)(t.steps * t.n_envs), ms, rows, tflops, w.flops, w.bytes, w.floor_s, cuda ? frac : 0.0);
    fflush(js);
    fflush(stdout);
    vp_iql_trainer_free(&t);
    return 1;
}

int vp_bench_iql(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    vp_train_data d;
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    if (!vp_bench_offline_data(b, 20000, "iql", &d, &ds)) {
        vp_offline_free(&ds);
        return 1;
    }
    printf("iql on %s: synthetic GBM market of %lld bars, the random behaviour's dataset of %lld rows on the training "
           "span [%lld, %lld); one update per row of B\n", vp_backend_name(b), (long long)d.bars.n,
           (long long)(ds.steps * ds.n_envs), (long long)d.split.train.begin, (long long)d.split.train.end);
    printf("MFLOP/r, B/r: GEMM FLOPs and bytes per row; floor: the fraction of their H200 floor reached (CUDA)\n");
    printf("%-5s %-7s %6s %4s %10s %12s %8s %9s %8s %6s\n", "be", "what", "B", "H", "ms", "rows/s", "TFLOP/s", "MFLOP/r",
           "B/r", "floor");
    const int64_t batch = o->quick ? (cuda ? 1024 : 256) : 8192;
    FILE* js = vp_bench_json_open(o);
    const int ok = bench_case(b, &d, &ds, batch, !cuda, o, js);
    vp_bench_json_close(js);
    vp_offline_free(&ds);
    vp_train_data_free(&d);
    return ok ? 0 : 1;
}
