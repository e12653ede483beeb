/* `vulpes bench env`: environment steps per second with random actions.
 *
 * A random-walk market of 1M bars (100k with --quick), prices on a 0.25 tick grid; a ring
 * of 16 random action sets drawn on the backend before timing (no host copy in the timed
 * loop); every env steps once per batch step. Validation first: on CUDA, 20 steps against the CPU backend bit for
 * bit; on the CPU, output ranges. Timed after a warm-up: direct launches and, on CUDA, the
 * ring of 16 steps captured as one graph. Reports env steps/s, the bytes one env step moves
 * (vp_env_bytes_per_step), the achieved GB/s and its fraction of the backend's measured
 * copy bandwidth (vp_copy of a large buffer). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vulpes/env.h"
#include "vulpes/synth.h"

#define RING 16
#define TICK 0.25

/* A random walk of n hourly bars from 4000 (GBM, sigma 0.003, seed 1) with every price on the
 * TICK grid (open and close rounded, high up, low down: low <= open, close <= high stays),
 * and its ATR(14); on the grid the CPU and CUDA steps compute the same bits. 0 on failure. */
static int market_make(int64_t n, vp_bars* bars, double** atr) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_GBM);
    sc.price0 = 4000.0;
    sc.sigma = 0.003;
    *atr = NULL;
    if (vp_synth_generate(&sc, n, bars, NULL) != VP_OK) return 0;
    for (int64_t i = 0; i < n; ++i) {
        bars->open[i] = fmax(TICK, TICK * nearbyint(bars->open[i] / TICK));
        bars->close[i] = fmax(TICK, TICK * nearbyint(bars->close[i] / TICK));
        bars->high[i] = fmax(TICK, TICK * ceil(bars->high[i] / TICK));
        bars->low[i] = fmax(TICK, TICK * floor(bars->low[i] / TICK));
    }
    *atr = (double*)malloc(sizeof(double) * (size_t)n);
    return *atr && vp_atr(bars, 14, *atr) == VP_OK;
}

/* Host arrays for the state of n envs (one allocation, *mem), for vp_env_state_get. */
static vp_env_state state_alloc(int64_t n, void** mem) {
    vp_env_state h;
    const size_t n4 = (size_t)n * 4, n8 = (size_t)n * 8;
    char* p = (char*)calloc(1, 6 * n8 + 6 * n4);
    *mem = p;
    memset(&h, 0, sizeof h);
    if (!p) return h;
    h.cash = (double*)(void*)p, h.equity = (double*)(void*)(p + n8), h.peak = (double*)(void*)(p + 2 * n8);
    h.entry = (double*)(void*)(p + 3 * n8), h.take_profit = (double*)(void*)(p + 4 * n8);
    h.stop_loss = (double*)(void*)(p + 5 * n8);
    p += 6 * n8;
    h.t = (int32_t*)(void*)p, h.window_end = (int32_t*)(void*)(p + n4), h.position = (int32_t*)(void*)(p + 2 * n4);
    h.bars_held = (int32_t*)(void*)(p + 3 * n4), h.episode = (uint32_t*)(void*)(p + 4 * n4);
    h.last_size = (float*)(void*)(p + 5 * n4);
    return h;
}

/* Everything one measured configuration needs, in the backend's memory. */
typedef struct env_bench {
    vp_backend* b;
    vp_env_market m;
    vp_env e;
    vp_buffer buf;          /* ring of actions, then the outputs */
    vp_tensor acts[RING];   /* [n, 4] i32 each */
    vp_tensor rew, done, obs, pf;
} env_bench;

/* Sets up n envs over the bars; prints the error and returns non-zero on failure. */
static int eb_init(env_bench* x, vp_backend* b, const vp_bars* bars, const double* atr, int64_t n) {
    memset(x, 0, sizeof *x);
    x->b = b;
    vp_env_market_desc d = {bars->n, bars->open, bars->high, bars->low, bars->close, atr, 64, bars->n - 1, NULL,
                            NULL, 0.0, 0.0};
    // E-mini-like: $50 a point, $2.5 a contract, 1 tick of slippage, 10 contracts, $100k, mid
    // bars without spread, financing or leverage limit; 1000-bar episodes, ruin at 50 %, reward
    // scale 100, small penalties
    vp_instrument inst = {TICK, 50.0, 2.5, 1.0, 10, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, 0.0};
    vp_env_config cfg = {1000, 0.5, 100.0, 0.01, 0.001, 1};
    size_t act_bytes = (size_t)n * 16, stride = (act_bytes + 255) / 256 * 256, col = ((size_t)n * 4 + 255) / 256 * 256;
    vp_mem mem = vp_backend_native_mem(b);
    vp_status s = vp_env_market_init(&x->m, b, &d);
    if (s == VP_OK) s = vp_env_init(&x->e, b, &x->m, &inst, &cfg, n);
    if (s == VP_OK) s = vp_buffer_alloc(b, mem, RING * stride + 3 * col + (size_t)n * 32, &x->buf);
    for (int k = 0; s == VP_OK && k < RING; ++k) {
        x->acts[k] = vp_tensor_2d((char*)x->buf.dev + k * stride, VP_I32, mem, n, 4);
        s = vp_env_random_actions(b, 2718, (uint64_t)k, &x->acts[k]);
    }
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench env: set-up of %lld envs failed: %s\n", (long long)n, vp_last_error());
        return 1;
    }
    char* out = (char*)x->buf.dev + RING * stride;
    x->rew = vp_tensor_1d(out, VP_F32, mem, n);
    x->done = vp_tensor_1d(out + col, VP_F32, mem, n);
    x->obs = vp_tensor_1d(out + 2 * col, VP_I32, mem, n);
    x->pf = vp_tensor_2d(out + 3 * col, VP_F32, mem, n, 8);
    return 0;
}

static void eb_free(env_bench* x) {
    vp_env_free(&x->e);
    vp_env_market_free(&x->m);
    vp_buffer_free(x->b, &x->buf);
}

/* Steps once with action set k of the ring. */
static vp_status eb_step(env_bench* x, int k) {
    return vp_env_step(&x->e, &x->acts[k % RING], &x->rew, &x->done, &x->obs, &x->pf);
}

/* Graph body: one pass over the ring. */
static vp_status eb_ring(vp_backend* b, void* ctx) {
    (void)b;
    for (int k = 0; k < RING; ++k) VP_TRY(eb_step((env_bench*)ctx, k));
    return VP_OK;
}

/* Validation: 20 steps; on CUDA the state must equal a CPU run bit for bit, on the CPU the
 * outputs must lie in range. Returns non-zero (after printing why) on failure. */
static int eb_validate(env_bench* x, const vp_bars* bars, const double* atr) {
    int64_t n = x->e.n_envs;
    void *hmem = NULL, *hcmem = NULL;
    vp_env_state h = state_alloc(n, &hmem), hc = state_alloc(n, &hcmem);
    int bad = !hmem || !hcmem;
    env_bench c;
    vp_backend* cb = NULL;
    int on_cuda = vp_backend_get_kind(x->b) == VP_BACKEND_CUDA;
    if (on_cuda && (vp_backend_cpu_init(&cb) != VP_OK || eb_init(&c, cb, bars, atr, n) != 0)) bad = 1;
    for (int k = 0; !bad && k < 20; ++k) {
        bad |= eb_step(x, k) != VP_OK;
        if (on_cuda) bad |= eb_step(&c, k) != VP_OK;
    }
    if (!bad) bad = vp_env_state_get(&x->e, &h) != VP_OK;
    if (!bad && on_cuda) {
        bad |= vp_env_state_get(&c.e, &hc) != VP_OK;
        if (!bad && memcmp(hmem, hcmem, (size_t)n * (6 * 8 + 6 * 4)) != 0) {
            fprintf(stderr, "vulpes bench env: the CUDA state differs from the CPU's after 20 steps\n");
            bad = 1;
        }
    }
    for (int64_t i = 0; !bad && i < n; ++i)
        if (h.t[i] < x->m.begin || h.t[i] >= h.window_end[i] || !isfinite(h.equity[i]) ||
            h.position[i] < -x->e.instrument.max_position || h.position[i] > x->e.instrument.max_position) {
            fprintf(stderr, "vulpes bench env: env %lld has an invalid state after 20 steps\n", (long long)i);
            bad = 1;
        }
    if (bad && vp_last_error()[0]) fprintf(stderr, "vulpes bench env: %s\n", vp_last_error());
    if (on_cuda && cb) {
        eb_free(&c);
        vp_backend_free(cb);
    }
    free(hmem), free(hcmem);
    return bad;
}

/* Copy bandwidth of the backend (GB/s counting bytes read + written) over a buffer of `bytes`. */
static double copy_gbps(vp_backend* b, size_t bytes) {
    vp_buffer buf;
    vp_mem mem = vp_backend_native_mem(b);
    if (vp_buffer_alloc(b, mem, 2 * bytes, &buf) != VP_OK) return 0.0;
    int64_t n = (int64_t)(bytes / 4);
    vp_tensor src = vp_tensor_1d(buf.dev, VP_F32, mem, n), dst = vp_tensor_1d((char*)buf.dev + bytes, VP_F32, mem, n);
    double best = 0.0;
    for (int rep = 0; rep < 6; ++rep) {
        vp_backend_sync(b);
        double t0 = vp_bench_now();
        for (int k = 0; k < 4; ++k) vp_copy(b, &src, &dst);
        vp_backend_sync(b);
        double gbps = 4.0 * 2.0 * (double)bytes / (vp_bench_now() - t0) / 1e9;
        if (rep > 0 && gbps > best) best = gbps;
    }
    vp_buffer_free(b, &buf);
    return best;
}

/* Issues `steps` batch steps: directly, or as replays of the captured ring when g is not NULL. */
static vp_status eb_run(env_bench* x, vp_graph* g, int steps) {
    vp_status s = VP_OK;
    for (int k = 0; s == VP_OK && k < steps; k += g ? RING : 1) s = g ? vp_graph_launch(x->b, g) : eb_step(x, k);
    return s;
}

/* Times `steps` batch steps after a warm-up of two ring passes; returns seconds (< 0 on error). */
static double eb_time(env_bench* x, int steps, int use_graph) {
    vp_graph* g = NULL;
    if (use_graph && vp_graph_capture(x->b, eb_ring, x, &g) != VP_OK) return -1.0;
    vp_status s = eb_run(x, g, 2 * RING);
    if (s == VP_OK) s = vp_backend_sync(x->b);
    double t0 = vp_bench_now();
    if (s == VP_OK) s = eb_run(x, g, steps);
    if (s == VP_OK) s = vp_backend_sync(x->b);
    double dt = vp_bench_now() - t0;
    vp_graph_free(g);
    return s == VP_OK ? dt : -1.0;
}

int vp_bench_env(vp_backend* b, const vp_bench_opts* o) {
    int on_cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    int64_t T = o->quick ? 100000 : 1000000;
    int steps = o->iters > 0 ? o->iters : (on_cuda ? (o->quick ? 512 : 8192) : (o->quick ? 128 : 1024));
    steps = (steps + RING - 1) / RING * RING;
    const int64_t sizes_cuda[2] = {4096, 65536}, sizes_cpu[1] = {4096};
    const int64_t* sizes = on_cuda ? sizes_cuda : sizes_cpu;
    int n_sizes = on_cuda ? 2 : 1;
    size_t bytes_step = vp_env_bytes_per_step();
    double copy = copy_gbps(b, on_cuda ? ((size_t)1 << 30) : ((size_t)1 << 27));

    vp_bars bars;
    double* atr = NULL;
    if (!market_make(T, &bars, &atr)) {
        fprintf(stderr, "vulpes bench env: market of %lld bars: %s\n", (long long)T, vp_last_error());
        free(atr);
        return 1;
    }
    FILE* js = vp_bench_json_open(o);
    printf("env step on %s: %lld bars, %d batch steps, %zu bytes per env step, copy bandwidth %.1f GB/s\n",
           vp_backend_name(b), (long long)T, steps, bytes_step, copy);
    printf("%-8s %8s %-7s %14s %12s %10s %9s\n", "backend", "n_envs", "mode", "env steps/s", "us/batch", "GB/s",
           "% copy");
    int rc = 0;
    for (int si = 0; si < n_sizes && rc == 0; ++si) {
        env_bench x;
        if (eb_init(&x, b, &bars, atr, sizes[si]) != 0 || eb_validate(&x, &bars, atr) != 0) {
            rc = 1;
            break;
        }
        for (int mode = 0; mode < (on_cuda ? 2 : 1); ++mode) {
            double dt = eb_time(&x, steps, mode);
            if (dt <= 0) {
                fprintf(stderr, "vulpes bench env: timing failed: %s\n", vp_last_error());
                rc = 1;
                break;
            }
            double eps = (double)steps * (double)sizes[si] / dt, gbps = eps * (double)bytes_step / 1e9;
            const char* mname = mode ? "graph" : "launch";
            printf("%-8s %8lld %-7s %14.4g %12.2f %10.2f %9.1f\n", on_cuda ? "cuda" : "cpu", (long long)sizes[si],
                   mname, eps, dt / steps * 1e6, gbps, copy > 0 ? 100.0 * gbps / copy : 0.0);
            fprintf(js,
                    "{\"bench\":\"env\",\"backend\":\"%s\",\"device\":\"%s\",\"n_envs\":%lld,\"mode\":\"%s\","
                    "\"batch_steps\":%d,\"n_bars\":%lld,\"env_steps_per_s\":%.6g,\"us_per_batch_step\":%.4f,"
                    "\"bytes_per_env_step\":%zu,\"achieved_GB_per_s\":%.4f,\"copy_GB_per_s\":%.4f,"
                    "\"copy_fraction\":%.4f}\n",
                    on_cuda ? "cuda" : "cpu", vp_backend_name(b), (long long)sizes[si], mname, steps, (long long)T,
                    eps, dt / steps * 1e6, bytes_step, gbps, copy, copy > 0 ? gbps / copy : 0.0);
        }
        eb_free(&x);
    }
    vp_bench_json_close(js);
    vp_bars_free(&bars);
    free(atr);
    return rc;
}
