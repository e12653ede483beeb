/* `vulpes bench dt`: one Decision Transformer update (docs/dt.md) at B = 8192 sequences.
 *
 * One trainer (train.algo dt, the default sizes: dt.context 20, dt.layers 3, dt.heads 1, dt.embed
 * 128, the default market encoder) on a synthetic GBM market (synth:gbm, 20 000 bars) over a
 * dataset of the random behaviour recorded on its training span (256 steps of 64 envs), validated
 * first: a few iterations, a finite loss and gradient norm, and no copy, allocation or sync across
 * the captured iterations. Then one captured graph of `reps` updates (vp_dt_update: the batch
 * drawn, the encoder's forward over the B K windows, the transformer's forward, the loss, one
 * backward, the clip, AdamW), timed as a warm-up launch and the median of 5 launches between two
 * syncs (host clock): ms per update, sequences/s, tokens/s, TFLOP/s of its GEMMs, and beside them
 * the FLOPs and bytes per update (bench_dt_floor.h) and, on CUDA, the fraction of their H200 floor
 * reached. Batches: CUDA B = 8192 (--quick 1024); CPU B = 256 (--quick 16).
 * Prints a table and JSON lines ("bench":"dt"). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "bench_dt_floor.h"
#include "vulpes/dataset.h"
#include "vulpes/dt.h"
#include "vulpes/record.h"

#define VALIDATE_ITERS 3  /* iterations between the counter readings */

typedef struct dt_ctx {
    vp_dt_trainer* t;
    int reps;
} dt_ctx;

/* `reps` updates. */
static vp_status dt_body(vp_backend* b, void* ctx) {
    (void)b;
    dt_ctx* c = (dt_ctx*)ctx;
    for (int r = 0; r < c->reps; ++r) VP_TRY(vp_dt_update(c->t));
    return VP_OK;
}

/* The configuration of one case; prints why when it is invalid. */
static vp_status bench_cfg(vp_config* c, int64_t batch) {
    vp_config_defaults(c);
    snprintf(c->train.algo, sizeof c->train.algo, "dt");
    snprintf(c->dt.dataset, sizeof c->dt.dataset, "(in memory)");
    c->dt.batch = batch;
    c->train.train_steps = 1;
    c->env.episode_bars = 1024;
    c->features.window = 64;
    vp_status s = vp_config_check(c);
    if (s != VP_OK) fprintf(stderr, "vulpes bench dt: the configuration of B = %lld is invalid: %s\n", (long long)batch,
                            vp_last_error());
    return s;
}

/* Builds a trainer and checks a few iterations; prints why and frees it on failure. */
static int trainer_ready(vp_dt_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                         const vp_offline_data* ds) {
    vp_runtime_counters c0, c1;
    double loss = NAN, steps = 0.0, gn = NAN;
    vp_status s = vp_dt_trainer_init_data(t, b, cfg, d, ds);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench dt: set-up of B = %lld failed: %s\n", (long long)cfg->dt.batch, vp_last_error());
        return 0;
    }
    s = vp_dt_trainer_iterate(t, 1);
    if (s == VP_OK) s = vp_backend_sync(b);
    vp_backend_counters(b, &c0);
    if (s == VP_OK) s = vp_dt_trainer_iterate(t, VALIDATE_ITERS);
    vp_backend_counters(b, &c1);
    if (s == VP_OK) s = vp_dt_trainer_stats(t, &loss, &steps, &gn);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench dt: the first iterations failed: %s\n", vp_last_error());
        vp_dt_trainer_free(t);
        return 0;
    }
    if (c1.copies != c0.copies || c1.allocs != c0.allocs || c1.syncs != c0.syncs || !isfinite(loss) ||
        !isfinite(gn) || !(steps >= 1.0)) {
        fprintf(stderr, "vulpes bench dt: validation failed (%d iterations: copies +%lld, allocs +%lld, syncs +%lld; "
                "loss %g over %g steps, gradient norm %g)\n", VALIDATE_ITERS, (long long)(c1.copies - c0.copies),
                (long long)(c1.allocs - c0.allocs), (long long)(c1.syncs - c0.syncs), loss, steps, gn);
        vp_dt_trainer_free(t);
        return 0;
    }
    return 1;
}

/* Times one case's update; prints its row. Returns 0 on failure. */
static int bench_case(vp_backend* b, const vp_train_data* d, const vp_offline_data* ds, int64_t batch,
                      const vp_bench_opts* o, FILE* js) {
    vp_config cfg;
    vp_dt_trainer t;
    if (bench_cfg(&cfg, batch) != VP_OK || !trainer_ready(&t, b, &cfg, d, ds)) return 0;
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int reps = o->iters > 0 ? o->iters : cuda ? 10 : 1;
    dt_ctx c = {&t, reps};
    double ms = 0.0, loss = NAN, steps = 0.0, gn = NAN;
    vp_status s = vp_bench_time_body(b, dt_body, &c, 1, reps, &ms);
    if (s == VP_OK) s = vp_dt_trainer_stats(&t, &loss, &steps, &gn);
    if (s != VP_OK || !(isfinite(loss) && isfinite(gn))) {
        fprintf(stderr, "vulpes bench dt: timing of B = %lld failed: %s\n", (long long)batch,
                s != VP_OK ? vp_last_error() : "loss or gradient norm not finite after timing");
        vp_dt_trainer_free(&t);
        return 0;
    }
    const vp_dt_dims* dd = &t.net.dims;
    const vp_model_cfg* m = &t.net.enc.cfg;
    const int64_t n_params = vp_dt_net_numel(&t.net);
    const vp_bench_dt_work w = vp_bench_dt_count(m, dd, batch, n_params);
    const double seqs = (double)batch / (ms * 1e-3), toks = seqs * dd->L, tflops = w.flops / (ms * 1e-3) * 1e-12;
    const double frac = w.floor_s / (ms * 1e-3);
    char fb[16];
    snprintf(fb, sizeof fb, "%.3f", frac);
    printf("%-5s %-7s %5lld %3d %4d %10.3f %10.4g %10.4g %8.3g %9.2f %8.2f %6s\n", cuda ? "cuda" : "cpu", "update",
           (long long)batch, dd->K, dd->D, ms, seqs, toks, tflops, w.flops * 1e-9, w.bytes * 1e-6, cuda ? fb : "-");
    fprintf(js, "{\"bench\":\"dt\",\"what\":\"update\",\"backend\":\"%s\",\"device\":\"%s\",\"batch\":%lld,"
            "\"context\":%d,\"layers\":%d,\"heads\":%d,\"embed\":%d,\"timesteps\":%d,\"n_features\":%d,"
            "\"n_portfolio\":%d,\"window\":%d,\"hidden\":%d,\"encoder\":%d,\"mamba_state\":%d,\"mamba_head_dim\":%d,"
            "\"mamba_conv\":%d,\"parameters\":%lld,\"dataset_rows\":%lld,\"ms_per_update\":%.6g,\"seqs_per_s\":%.6g,"
            "\"tokens_per_s\":%.6g,\"tflops\":%.6g,\"flop_per_update\":%.6g,\"enc_flop\":%.6g,\"lin_flop\":%.6g,"
            "\"attn_flop\":%.6g,\"bytes_per_update\":%.6g,\"floor_s_per_update\":%.6g,\"floor_frac\":%.6g,"
            "\"loss\":%.6g}\n", cuda ? "cuda" : "cpu", vp_backend_name(b), (long long)batch, dd->K, dd->layers, dd->NH,
            dd->D, dd->TM, m->n_features, m->n_portfolio, m->window, m->hidden, (int)m->encoder, m->mamba_state,
            m->mamba_head_dim, m->mamba_conv, (long long)n_params, (long long)t.rows.n_rows, ms, seqs, toks, tflops,
            w.flops, w.enc_flops, w.lin_flops, w.attn_flops, w.bytes, w.floor_s, cuda ? frac : 0.0, loss);
    fflush(js);
    fflush(stdout);
    vp_dt_trainer_free(&t);
    return 1;
}

int vp_bench_dt(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    vp_train_data d;
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    if (!vp_bench_offline_data(b, 20000, "dt", &d, &ds)) {
        vp_offline_free(&ds);
        return 1;
    }
    printf("dt on %s: synthetic GBM market of %lld bars, the random behaviour's dataset of %lld steps on the training "
           "span [%lld, %lld); one update of B sequences of K steps (3K tokens)\n", vp_backend_name(b),
           (long long)d.bars.n, (long long)(ds.steps * ds.n_envs), (long long)d.split.train.begin,
           (long long)d.split.train.end);
    printf("GFLOP/u, MB/u: GEMM FLOPs and bytes per update; floor: the fraction of their H200 floor reached (CUDA)\n");
    printf("%-5s %-7s %5s %3s %4s %10s %10s %10s %8s %9s %8s %6s\n", "be", "what", "B", "K", "D", "ms", "seqs/s",
           "tokens/s", "TFLOP/s", "GFLOP/u", "MB/u", "floor");
    const int64_t batch = cuda ? (o->quick ? 1024 : 8192) : (o->quick ? 16 : 256);
    FILE* js = vp_bench_json_open(o);
    const int ok = bench_case(b, &d, &ds, batch, o, js);
    vp_bench_json_close(js);
    vp_offline_free(&ds);
    vp_train_data_free(&d);
    return ok ? 0 : 1;
}
