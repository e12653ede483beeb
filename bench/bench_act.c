/* `vulpes bench act`: microseconds per live decision (vulpes/live.h) on one CPU core for the
 * default network — a bar fed, its features, trunk and in_proj rows, the account's step, the
 * Mamba2 mixer over the K cached rows, the heads and the greedy choice — median and p99, and the
 * GEMM FLOPs of one decision (against a full-window forward's) and the rate they run at over the
 * median decision.
 *
 * The checkpoint: the default configuration's network from a fixed seed, written to a
 * temporary folder. The market: a mean-reverting synthetic path of hourly bars (seed 7). The
 * live forward runs the CPU's row-exact GEMM kernel, one thread whatever OPENBLAS_NUM_THREADS
 * says (no product of the forward goes to BLAS). Validated first: the first decision's Q values
 * equal the batch forward's (vp_model_encode and vp_model_heads over the same bar's window with
 * the flat account's portfolio) bit for bit. Timed: each decision on a monotonic clock after a
 * warm-up of 500 decisions, 20000 of them (2000 with --quick) unless --iters. Printed besides:
 * the slow decisions (over 1.25 x the median) and the time between them, and the median and p99
 * of each block of 4000 decisions in run order (their spread shows slow spells of the core). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "vulpes/live.h"

/* Decisions before the timed ones. */
#define WARM 500

/* The default network (seed 2024) written with the default config to dir/ck.safetensors; 1 on success. */
static int write_checkpoint(vp_backend* b, const vp_config* cfg, vp_model* m, const char* path) {
    vp_train_parts parts;
    if (vp_train_parts_make(cfg, VP_FEATURES_DEFAULT, &parts) != VP_OK) return 0;
    if (vp_model_init(m, b, &parts.learner.model, 2024) != VP_OK) return 0;
    vp_ckpt_item* items = (vp_ckpt_item*)calloc((size_t)m->n_params, sizeof *items);
    char* yaml = NULL;
    int ok = items != NULL && vp_config_to_yaml(cfg, &yaml) == VP_OK;
    for (int i = 0; ok && i < m->n_params; ++i)
        items[i] = (vp_ckpt_item){m->info[i].name, vp_model_param_view(m, &m->params, &m->info[i])};
    vp_ckpt_meta meta[2] = {{"format", "vulpes"}, {"config", yaml}};
    ok = ok && vp_checkpoint_save(b, path, items, m->n_params, meta, 2) == VP_OK;
    free(items);
    free(yaml);
    return ok;
}

/* The GEMM FLOPs of one live decision: the new bar's trunk and in_proj rows, z and out_proj
 * of the last bar (Mamba2) or the TLOB blocks over the window, the heads. */
static double live_flops(const vp_model_cfg* c) {
    const double F = c->n_features, H = c->hidden, P = c->n_portfolio, HH = c->head_hidden, Z = c->n_atoms;
    const int MB = c->encoder == VP_ENCODER_MAMBA2;
    const double A = vp_model_cfg_actions(c), L = MB ? H + 2.0 * c->mamba_state + H / c->mamba_head_dim : 0;
    const double mixer = MB ? 2.0 * (H * L + 2.0 * H * H) : vp_model_tlob_flops(c, 1.0);
    const double trunk = 2.0 * (F * H + H * H);
    return trunk + mixer + 2.0 * (P * H + 2.0 * H * HH + HH * Z + HH * A * Z);
}

/* The first decision's Q against the batch forward over the same bars (flat account). */
static int validate(vp_backend* b, const vp_model* m, const vp_bars* bars, int64_t t, const vp_decision* d,
                    int norm_window) {
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = norm_window;
    const int F = vp_features_count(&fc);
    const int64_t n = t + 1;
    float* feat = (float*)malloc(sizeof(float) * (size_t)(n * F));
    vp_model_acts* a = NULL;
    vp_bars head;
    int ok = feat && vp_bars_slice(bars, 0, n, &head) == VP_OK && vp_features_compute(&head, &fc, feat, n * F) == VP_OK &&
             vp_model_acts_init(&a, m, 1, 0, 0) == VP_OK;
    int32_t idx = (int32_t)t;
    float pf[VP_ENV_PORTFOLIO] = {0, 0, 0, 0, 0, 0, 1, 0}; /* flat, full equity, time left 1 */
    vp_tensor ft = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, n, F), it = vp_tensor_1d(&idx, VP_I32, VP_MEM_HOST, 1);
    vp_tensor pt = vp_tensor_2d(pf, VP_F32, VP_MEM_HOST, 1, VP_ENV_PORTFOLIO);
    ok = ok && vp_model_encode(m, &m->params, a, &ft, &it, 1) == VP_OK;
    ok = ok && vp_model_heads(m, &m->params, a, NULL, &pt, NULL, 1) == VP_OK;
    const int A = vp_model_cfg_actions(&m->cfg);
    ok = ok && d->n_heads == A && memcmp(vp_model_q(a).data, d->q, sizeof(float) * (size_t)A) == 0;
    if (!ok) fprintf(stderr, "vulpes bench act: the first decision's Q values differ from the batch forward's%s%s\n",
                     vp_last_error()[0] ? ": " : "", vp_last_error());
    vp_model_acts_free(a);
    free(feat);
    (void)b;
    return ok;
}

static int cmp_double(const void* x, const void* y) {
    const double a = *(const double*)x, b = *(const double*)y;
    return a < b ? -1 : a > b;
}

/* Decisions per block of the run-order statistics. */
#define BLOCK 4000

/* The timed decisions' medians and p99s per block of BLOCK, in run order (vp_bench_act). */
static struct {
    int n;                          /* whole blocks */
    double med_lo, med_hi;          /* lowest and highest block median, us */
    double p99_lo, p99_hi, p99_med; /* lowest, highest and median block p99, us */
} g_blocks;

/* Fills g_blocks from us[0 .. iters) in run order. */
static void block_stats(const double* us, int64_t iters) {
    memset(&g_blocks, 0, sizeof g_blocks);
    const int nb = (int)(iters / BLOCK);
    double* b = (double*)malloc(sizeof(double) * BLOCK);
    double* p99 = (double*)malloc(sizeof(double) * (size_t)(nb > 0 ? nb : 1));
    if (!b || !p99 || nb < 2) {
        free(b), free(p99);
        return;
    }
    g_blocks.n = nb;
    g_blocks.med_lo = g_blocks.p99_lo = INFINITY;
    for (int k = 0; k < nb; ++k) {
        memcpy(b, us + (int64_t)k * BLOCK, sizeof(double) * BLOCK);
        qsort(b, BLOCK, sizeof(double), cmp_double);
        const double med = b[BLOCK / 2];
        p99[k] = b[(int)(0.99 * (BLOCK - 1))];
        if (med < g_blocks.med_lo) g_blocks.med_lo = med;
        if (med > g_blocks.med_hi) g_blocks.med_hi = med;
        if (p99[k] < g_blocks.p99_lo) g_blocks.p99_lo = p99[k];
        if (p99[k] > g_blocks.p99_hi) g_blocks.p99_hi = p99[k];
    }
    qsort(p99, (size_t)nb, sizeof(double), cmp_double);
    g_blocks.p99_med = p99[nb / 2];
    free(b), free(p99);
}

int vp_bench_act(vp_backend* b, const vp_bench_opts* o) {
    int64_t iters = o->iters > 0 ? o->iters : o->quick ? 2000 : 20000;
    vp_config cfg;
    vp_config_defaults(&cfg);
    // the checkpoint in a temporary folder, on the CPU whatever --backend says
    char dir[] = "/tmp/vulpes-bench-act-XXXXXX", path[64];
    if (!mkdtemp(dir)) {
        fprintf(stderr, "vulpes bench act: cannot make a temporary folder\n");
        return 1;
    }
    snprintf(path, sizeof path, "%s/ck.safetensors", dir);
    vp_backend* cpu = NULL;
    vp_model m;
    memset(&m, 0, sizeof m);
    int ok = vp_backend_cpu_init(&cpu) == VP_OK && write_checkpoint(cpu, &cfg, &m, path);
    vp_live* h = NULL;
    ok = ok && vp_live_open(&h, path, NULL) == VP_OK;
    const int64_t a = ok ? vp_live_warmup(h) : 0, n = a + WARM + iters;
    vp_bars bars;
    memset(&bars, 0, sizeof bars);
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_OU);
    sc.seed = 7;
    sc.sigma = 0.004;
    ok = ok && vp_synth_generate(&sc, n, &bars, NULL) == VP_OK;
    double* us = (double*)malloc(sizeof(double) * (size_t)iters);
    double* at = (double*)malloc(sizeof(double) * (size_t)iters); /* each timed decision's start, s */
    ok = ok && us != NULL && at != NULL;
    if (!ok) fprintf(stderr, "vulpes bench act: set-up failed: %s\n", vp_last_error());
    if (ok) printf("act on the CPU (live API, one thread: row-exact GEMM): default network (F %d, H %d, K %d, Z %d, %d "
                   "actions), %lld bars of warm-up, %d decisions of warm-up, %lld timed\n", m.cfg.n_features,
                   m.cfg.hidden, m.cfg.window, m.cfg.n_atoms, vp_model_cfg_actions(&m.cfg), (long long)a, WARM,
                   (long long)iters);
    if (ok && b && vp_backend_native_mem(b) != VP_MEM_HOST)
        printf("note: --backend %s is not used: the live API runs on the CPU\n", vp_backend_name(b));
    vp_decision d;
    double t_start = 0.0;
    for (int64_t t = 0; ok && t < n; ++t) {
        vp_live_bar x = {bars.time_ms[t], bars.open[t], bars.high[t], bars.low[t], bars.close[t], bars.volume[t], 0,
                         0.0};
        int decided = 0;
        if (t == a + WARM) t_start = vp_bench_now();
        const double t0 = vp_bench_now();
        const vp_status st = vp_live_push(h, &x, &d, &decided);
        const double t1 = vp_bench_now();
        if (st == VP_OK && t >= a && !decided) {
            // the paper account was closed out at the ruin level: the decisions timed so far are the sample
            const int64_t timed = t > a + WARM ? t - a - WARM : 0;
            printf("note: the paper account was closed out at the ruin level at bar %lld; %lld of %lld decisions "
                   "timed\n", (long long)t, (long long)timed, (long long)iters);
            ok = timed >= 1000;
            if (!ok) fprintf(stderr, "vulpes bench act: fewer than 1000 decisions before the ruin at bar %lld\n",
                             (long long)t);
            iters = timed;
            break;
        }
        ok = st == VP_OK && decided == (t >= a);
        if (!ok) fprintf(stderr, "vulpes bench act: bar %lld: %s\n", (long long)t, vp_last_error());
        if (ok && t == a) ok = validate(cpu, &m, &bars, t, &d, (int)cfg.features.window);
        if (ok && t == a) printf("validated: the first decision's Q values equal the batch forward's bit for bit\n");
        if (t >= a + WARM) us[t - a - WARM] = 1e6 * (t1 - t0), at[t - a - WARM] = t0;
    }
    if (ok) {
        const double wall = vp_bench_now() - t_start;
        // the slow decisions (over 1.25 x the median) and the time between them: what interrupts the core
        double* sorted = (double*)malloc(sizeof(double) * (size_t)iters);
        memcpy(sorted, us, sizeof(double) * (size_t)iters);
        qsort(sorted, (size_t)iters, sizeof(double), cmp_double);
        const double slow_at = 1.25 * sorted[iters / 2];
        int64_t n_slow = 0;
        double last = -1.0;
        for (int64_t i = 0; i < iters; ++i) {
            if (us[i] <= slow_at) continue;
            if (last >= 0.0) at[n_slow++] = 1e3 * (at[i] - last); /* gaps, ms (at[] is read ahead of i) */
            last = at[i];
        }
        qsort(at, (size_t)n_slow, sizeof(double), cmp_double);
        const double gap_ms = n_slow > 0 ? at[n_slow / 2] : 0.0;
        block_stats(us, iters);
        memcpy(us, sorted, sizeof(double) * (size_t)iters);
        free(sorted);
        double mean = 0.0;
        for (int64_t i = 0; i < iters; ++i) mean += us[i] / (double)iters;
        const double med = us[iters / 2], p90 = us[(int64_t)(0.90 * (double)(iters - 1))];
        const double p99 = us[(int64_t)(0.99 * (double)(iters - 1))], mx = us[iters - 1];
        const double fl = live_flops(&m.cfg), full = vp_model_flops(&m.cfg, 1, 0, 0);
        printf("%-10s %10s %10s %10s %10s %10s %14s %16s %10s\n", "decisions", "median us", "p90 us", "p99 us",
               "mean us", "max us", "FLOP/decision", "full-window FLOP", "GFLOP/s");
        printf("%-10lld %10.2f %10.2f %10.2f %10.2f %10.1f %14.0f %16.0f %10.2f\n", (long long)iters, med, p90, p99, mean,
               mx, fl, full, fl / (med * 1e3));
        printf("goal: p99 under 50 us: %s; %.0f decisions/s over the timed bars\n", p99 < 50.0 ? "met" : "missed",
               (double)iters / wall);
        printf("slow decisions (over 1.25 x the median): %lld (%.2f %%), median time between them %.2f ms\n",
               (long long)(n_slow + (last >= 0.0)), 100.0 * (double)(n_slow + (last >= 0.0)) / (double)iters, gap_ms);
        if (g_blocks.n >= 2)
            printf("in %d blocks of %d decisions, in run order: median %.2f .. %.2f us, p99 %.2f .. %.2f us "
                   "(median block %.2f); two runs over the same bars tell the machine's slow spells from the bars' "
                   "(docs/perf.md)\n",
                   g_blocks.n, BLOCK, g_blocks.med_lo, g_blocks.med_hi, g_blocks.p99_lo, g_blocks.p99_hi,
                   g_blocks.p99_med);
        FILE* js = vp_bench_json_open(o);
        fprintf(js, "{\"bench\":\"act\",\"backend\":\"cpu\",\"hidden\":%d,\"window\":%d,\"decisions\":%lld,"
                    "\"median_us\":%.3f,\"p90_us\":%.3f,\"p99_us\":%.3f,\"mean_us\":%.3f,\"max_us\":%.3f,\"flops\":%.0f,"
                    "\"full_window_flops\":%.0f,\"block_p99_lo_us\":%.3f,\"block_p99_median_us\":%.3f,\"block_p99_hi_us\":%.3f}\n",
                m.cfg.hidden, m.cfg.window, (long long)iters, med, p90, p99, mean, mx, fl, full,
                g_blocks.n >= 2 ? g_blocks.p99_lo : p99, g_blocks.n >= 2 ? g_blocks.p99_med : p99,
                g_blocks.n >= 2 ? g_blocks.p99_hi : p99);
        vp_bench_json_close(js);
    }
    free(us);
    free(at);
    vp_bars_free(&bars);
    vp_live_close(h);
    vp_model_free(&m);
    vp_backend_free(cpu);
    unlink(path);
    rmdir(dir);
    return ok ? 0 : 1;
}
