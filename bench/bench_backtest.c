/* `vulpes bench backtest`: bars per second of the backtest with the default network — the
 * exact sequential path and the segment-parallel mode — with the time split between the
 * encoding (every bar's market part, in batches) and the sequential part (heads, choice,
 * environment step per bar).
 *
 * Market: a mean-reverting synthetic path of 1M bars on CUDA (100k with --quick), 20k on the
 * CPU (5k with --quick), its features and ATR. Network: the default architecture from a
 * fixed seed, with the advantage stream's last layer scaled up so that no two actions are
 * near a tie (a float-rounding difference then cannot flip a choice). Validation first: on
 * CUDA every path (fused kernel, op path; sequential and segments) must reproduce the CPU
 * backend's choices, positions and equity bit for bit over a few thousand bars (FP32 GEMMs);
 * on the CPU the run must complete with finite equity. Timed after a warm-up run, with the
 * backend synchronised around each phase; TF32 GEMMs on CUDA as in training. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "vulpes/backtest.h"
#include "vulpes/dataset.h"
#include "vulpes/ops.h"
#include "vulpes/synth.h"

/* Factor on the advantage stream's last layer (see above). */
#define SHARPEN 20.0f

/* The market: a mean-reverting synthetic path of n hourly bars (seed 7, sigma 0.004) with
 * its features over a 64-bar window and ATR, made as a training run makes them; 0 on failure. */
static int market_make(vp_train_data* d, int64_t n) {
    vp_synth_cfg sc = vp_synth_cfg_default(VP_SYNTH_OU);
    sc.seed = 7;
    sc.sigma = 0.004;
    vp_config cfg;
    vp_config_defaults(&cfg);
    cfg.features.window = 64;
    vp_bars bars;
    memset(d, 0, sizeof *d);
    if (vp_synth_generate(&sc, n, &bars, NULL) != VP_OK) return 0;
    return vp_train_data_from_bars(d, &cfg, &bars) == VP_OK;
}

/* The instrument of the market (price near 100): tick 0.01, 10 a point, 0.5 a contract,
 * 1 tick of slippage, 4 contracts, 100k; mid bars, no spread, financing or leverage limit. */
static vp_instrument market_instrument(void) {
    vp_instrument in = {0.01, 10.0, 0.5, 1.0, 4, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, 0.0};
    return in;
}

/* A network on backend b whose parameters equal `ref`'s host copy (or are made and
 * sharpened here when ref is NULL). */
static int model_make(vp_backend* b, int F, const float* ref, vp_model* m, float** host) {
    vp_model_cfg c = vp_model_cfg_default();
    c.n_features = F;
    if (vp_model_init(m, b, &c, 2024) != VP_OK) return 0;
    const size_t bytes = (size_t)m->n_weights * sizeof(float);
    if (!ref) {
        // sharpen c51.a2 (weights and bias) on a host copy, then upload
        float* h = (float*)malloc(bytes);
        if (!h || vp_download(b, h, &m->params, bytes) != VP_OK) return 0;
        const char* names[2] = {"c51.a2.w", "c51.a2.b"};
        for (int i = 0; i < 2; ++i) {
            const vp_param_info* p = vp_model_find_param(m, names[i]);
            for (int64_t j = 0; p && j < p->numel; ++j) h[p->offset + j] *= SHARPEN;
        }
        ref = h;
        *host = h;
    }
    return vp_upload(b, &m->params, ref, bytes) == VP_OK;
}

/* Runs one backtest of [a, a + n) in `windows` windows; 0 on failure (printed). */
static int run(vp_backend* b, const vp_model* m, const vp_train_data* mk, const vp_tensor* feat, int64_t a, int64_t n,
               int64_t windows, int fused, vp_rollout_result* r) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = market_instrument();
    c.episode_bars = 1024;
    c.ruin_fraction = 0.0; /* a window stops early only at zero equity: the timed spans run to their end */
    c.n_windows = windows;
    c.fused = fused;
    vp_rollout_data d = {&mk->bars, mk->atr, feat, {a, a + n}};
    if (vp_backtest_run(b, m, &m->params, &d, &c, r) == VP_OK) return 1;
    fprintf(stderr, "vulpes bench backtest: %lld bars in %lld windows failed: %s\n", (long long)n, (long long)windows,
            vp_last_error());
    return 0;
}

/* The number of leading points on which two runs agree (choices, position, equity bits). */
static int64_t agree(const vp_rollout_result* x, const vp_rollout_result* y) {
    int64_t k = 0, n = x->n_points < y->n_points ? x->n_points : y->n_points;
    while (k < n && x->equity[k] == y->equity[k] && x->position[k] == y->position[k] &&
           memcmp(x->action + 4 * k, y->action + 4 * k, 16) == 0)
        ++k;
    return k;
}

/* Validation: CUDA paths against the CPU backend, or a CPU run's sanity; 0 on failure. */
static int validate(vp_backend* b, const vp_model* m, const vp_train_data* mk, const vp_tensor* feat, const float* ref,
                    int64_t n) {
    const int64_t a = mk->bars.n - n;
    if (vp_backend_get_kind(b) == VP_BACKEND_CPU) {
        vp_rollout_result r;
        int ok = run(b, m, mk, feat, a, n, 1, 1, &r) && isfinite(r.equity[r.n_points - 1]) && r.n_trades > 0;
        if (!ok) fprintf(stderr, "vulpes bench backtest: the CPU validation run is not sane\n");
        vp_rollout_result_free(&r);
        return ok;
    }
    vp_backend* cpu = NULL;
    vp_model cm;
    memset(&cm, 0, sizeof cm);
    int ok = vp_backend_cpu_init(&cpu) == VP_OK && model_make(cpu, mk->n_features, ref, &cm, NULL);
    vp_model* gm = (vp_model*)m;
    const vp_tensor host = vp_tensor_2d(mk->features, VP_F32, VP_MEM_HOST, mk->bars.n, mk->n_features);
    const vp_precision keep = gm->precision;
    gm->precision = VP_PREC_FP32;
    for (int windows = 1; ok && windows <= 8; windows *= 8) {
        vp_rollout_result want, got;
        ok = run(cpu, &cm, mk, &host, a, n, windows, 0, &want);
        for (int fused = 1; ok && fused >= 0; --fused) {
            ok = run(b, gm, mk, feat, a, n, windows, fused, &got);
            int64_t k = ok ? agree(&want, &got) : 0;
            if (ok && (k != want.n_points || got.n_points != want.n_points)) {
                fprintf(stderr, "vulpes bench backtest: %s path, %d window(s): differs from the CPU at point %lld of "
                        "%lld\n", got.path, windows, (long long)k, (long long)want.n_points);
                ok = 0;
            }
            if (ok) printf("validated: %s path, %d window(s), %lld bars, %lld trades equal to the CPU's\n", got.path,
                           windows, (long long)n, (long long)got.n_trades);
            vp_rollout_result_free(&got);
        }
        vp_rollout_result_free(&want);
    }
    gm->precision = keep;
    vp_model_free(&cm);
    vp_backend_free(cpu);
    return ok;
}

/* Times one configuration after a warm-up and prints its row and JSON line; 0 on failure. */
static int timed(vp_backend* b, const vp_model* m, const vp_train_data* mk, const vp_tensor* feat, int64_t n,
                 int64_t windows, int fused, FILE* js) {
    vp_rollout_result r;
    if (!run(b, m, mk, feat, mk->bars.n - 2048, 2048, windows < 64 ? windows : 64, fused, &r)) return 0;
    vp_rollout_result_free(&r);
    if (!run(b, m, mk, feat, mk->bars.n - n, n, windows, fused, &r)) return 0;
    const double steps = (double)(n - 1), seq = steps / r.sequential_s, total = steps / (r.encode_s + r.sequential_s);
    const double us_step = 1e6 * r.sequential_s / ceil(steps / (double)windows);
    const char* mode = windows == 1 ? "sequential" : "segments";
    printf("%-11s %-6s %9lld %8lld %10.3f %12.3f %14.4g %14.4g %10.3f\n", mode, r.path, (long long)n,
           (long long)windows, r.encode_s, r.sequential_s, seq, total, us_step);
    fprintf(js,
            "{\"bench\":\"backtest\",\"backend\":\"%s\",\"device\":\"%s\",\"mode\":\"%s\",\"path\":\"%s\","
            "\"n_bars\":%lld,\"windows\":%lld,\"encode_s\":%.6f,\"sequential_s\":%.6f,\"sequential_bars_per_s\":%.6g,"
            "\"bars_per_s\":%.6g,\"us_per_step\":%.4f,\"hidden\":%d,\"trades\":%lld}\n",
            vp_backend_get_kind(b) == VP_BACKEND_CUDA ? "cuda" : "cpu", vp_backend_name(b), mode, r.path,
            (long long)n, (long long)windows, r.encode_s, r.sequential_s, seq, total, us_step, m->cfg.hidden,
            (long long)r.n_trades);
    vp_rollout_result_free(&r);
    return 1;
}

int vp_bench_backtest(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int64_t T = cuda ? (o->quick ? 100000 : 1000000) : (o->quick ? 5000 : 20000);
    const int64_t ops_bars = cuda ? (o->quick ? 5000 : 50000) : T, val_bars = o->quick ? 1000 : 3000;
    const int64_t seg_windows = cuda ? 1024 : 64;
    vp_train_data mk;
    vp_model m;
    memset(&m, 0, sizeof m);
    float* ref = NULL;
    vp_buffer fbuf;
    memset(&fbuf, 0, sizeof fbuf);
    if (!market_make(&mk, T + 512)) {
        fprintf(stderr, "vulpes bench backtest: market of %lld bars: %s\n", (long long)T, vp_last_error());
        return 1;
    }
    // the features where the backend reads them; the network
    vp_tensor feat = vp_tensor_2d(mk.features, VP_F32, VP_MEM_HOST, mk.bars.n, mk.n_features);
    int ok = 1;
    if (cuda) {
        const size_t bytes = sizeof(float) * (size_t)(mk.bars.n * mk.n_features);
        ok = vp_buffer_alloc(b, VP_MEM_DEVICE, bytes, &fbuf) == VP_OK;
        feat = vp_tensor_2d(fbuf.dev, VP_F32, VP_MEM_DEVICE, mk.bars.n, mk.n_features);
        ok = ok && vp_upload(b, &feat, mk.features, bytes) == VP_OK;
    }
    ok = ok && model_make(b, mk.n_features, NULL, &m, &ref);
    if (ok) m.precision = VP_PREC_TF32;
    printf("backtest on %s: default network (H %d, K %d, Z %d), %lld bars\n", vp_backend_name(b), m.cfg.hidden,
           m.cfg.window, m.cfg.n_atoms, (long long)T);
    ok = ok && validate(b, &m, &mk, &feat, ref, val_bars);

    // the exact path and the segments, on every path the backend has
    FILE* js = vp_bench_json_open(o);
    if (ok)
        printf("%-11s %-6s %9s %8s %10s %12s %14s %14s %10s\n", "mode", "path", "bars", "windows", "encode s",
               "sequential s", "seq bars/s", "total bars/s", "us/step");
    if (ok && cuda) ok = timed(b, &m, &mk, &feat, T, 1, 1, js) && timed(b, &m, &mk, &feat, T, seg_windows, 1, js);
    if (ok) ok = timed(b, &m, &mk, &feat, ops_bars, 1, 0, js) && timed(b, &m, &mk, &feat, T, seg_windows, 0, js);
    vp_bench_json_close(js);
    if (!ok && vp_last_error()[0]) fprintf(stderr, "vulpes bench backtest: %s\n", vp_last_error());
    vp_model_free(&m);
    if (fbuf.dev) vp_buffer_free(b, &fbuf);
    free(ref);
    vp_train_data_free(&mk);
    return ok ? 0 : 1;
}
