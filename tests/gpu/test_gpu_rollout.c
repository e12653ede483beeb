/* The rollout on CUDA against the CPU backend, and its window-count agreement on CUDA.
 *
 * Network: the default architecture from a fixed seed with the advantage stream's last
 * layer scaled up 20x, so that no two actions lie within GEMM rounding of a tie; a
 * rounding difference can then not flip a choice, and everything downstream of the choices
 * (positions, fills, cash, equity: the environment's exact double arithmetic) must agree
 * bit for bit. That is the tolerance of every comparison here:
 * - CUDA with FP32 GEMMs, fused and op paths, 1 and 7 windows: points, trades, the decisions
 *   after the windows and fragile counts equal to the CPU backend's, Q margins within 1e-3;
 *   the same with windows ruined and closed out early;
 * - CUDA, both paths: each window of a 7-window run equal to the exact rollout of that
 *   window alone, with FP32 GEMMs and with TF32 encodings (as in training; the rollout's
 *   policy scores in FP32, vp_model_rollout_policy). The windows' GEMMs have other row
 *   counts than a window's alone, so cuBLASLt may pick other kernels: the scores then
 *   differ by FP32 rounding (about 1e-7 relative), far below the choices' gaps. The DQN
 *   policy scoring in TF32 (vp_model_policy, as collection does) can flip a near tie
 *   between a 7-row and a 1-row product; the test prints that count and does not assert it. */
#include "gpu_twin.h"
#include "test_backtest_util.h"
#include "vulpes/backtest.h"

enum { NBARS = 3000, A0 = 400, B0 = 3000 };

/* The default network on backend b with parameters `h` (host copy, made when NULL). */
static void net_make(vp_backend* b, int F, float** h, vp_model* m) {
    vp_model_cfg c = vp_model_cfg_default();
    c.n_features = F;
    CHECK_OK(vp_model_init(m, b, &c, 2024));
    const size_t bytes = (size_t)m->n_weights * sizeof(float);
    if (!*h) {
        *h = (float*)malloc(bytes);
        CHECK_OK(vp_download(b, *h, &m->params, bytes));
        const char* names[2] = {"c51.a2.w", "c51.a2.b"};
        for (int i = 0; i < 2; ++i) {
            const vp_param_info* p = vp_model_find_param(m, names[i]);
            for (int64_t j = 0; p && j < p->numel; ++j) (*h)[p->offset + j] *= 20.0f;
        }
    }
    CHECK_OK(vp_upload(b, &m->params, *h, bytes));
}

/* The market's feature matrix on both backends. */
static void features_twin(const vpt_market* mk, twin* feat) {
    twin_2d(feat, VP_F32, NBARS, mk->F);
    memcpy(feat->h.data, mk->feat, sizeof(float) * (size_t)(NBARS * mk->F));
    twin_push(feat);
}

/* A rollout of [a, b) in n windows on backend be. */
static int g_tf32_scores = 0;          /* 1: score with vp_model_policy (the network's precision) */
static double g_ruin_fraction = 0.5;   /* the rollouts' ruin fraction */

static void run(vp_backend* be, const vp_model* m, const vpt_market* mk, const vp_tensor* feat, int64_t a, int64_t b,
                int64_t n, int fused, vp_rollout_result* r) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument();
    c.episode_bars = 256;
    c.n_windows = n;
    c.fused = fused;
    c.ruin_fraction = g_ruin_fraction;
    vp_rollout_data d = {&mk->bars, mk->atr, feat, {a, b}};
    const vp_policy pol = g_tf32_scores ? vp_model_policy(m, &m->params) : vp_model_rollout_policy(m, &m->params);
    CHECK_OK(vp_rollout_run(be, &pol, &d, &c, r));
}

/* Whether window w of seg equals the one-window result one (points and trades). */
static int window_equal(const vp_rollout_result* seg, int64_t w, const vp_rollout_result* one) {
    const vp_rollout_window* x = &seg->windows[w];
    if (one->n_points != x->n_points) return 0;
    for (int64_t k = 0; k < x->n_points; ++k) {
        const int64_t o = x->offset + k;
        if (one->equity[k] != seg->equity[o] || one->cash[k] != seg->cash[o] || one->position[k] != seg->position[o] ||
            memcmp(one->action + 4 * k, seg->action + 4 * o, 16) != 0)
            return 0;
    }
    int64_t n = 0;
    for (int64_t i = 0; i < seg->n_trades; ++i) {
        if (seg->trades[i].window != w) continue;
        vp_rollout_trade u = seg->trades[i];
        u.window = 0;
        if (n >= one->n_trades || memcmp(&u, &one->trades[n], sizeof u) != 0) return 0;
        ++n;
    }
    return n == one->n_trades;
}

static void test_cuda_equals_cpu(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 21), "market");
    twin feat;
    features_twin(&mk, &feat);
    const vp_tensor fh = feat.h, fd = feat.d;
    float* h = NULL;
    vp_model cm, gm;
    net_make(g_cpu, mk.F, &h, &cm);
    net_make(g_gpu, mk.F, &h, &gm);
    gm.precision = VP_PREC_FP32;
    for (int64_t n = 1; n <= 7; n += 6) {
        vp_rollout_result want;
        run(g_cpu, &cm, &mk, &fh, A0, B0, n, 0, &want);
        CHECK(want.n_trades > 10, "%lld windows: only %lld trades on the CPU", (long long)n, (long long)want.n_trades);
        for (int fused = 1; fused >= 0; --fused) {
            vp_rollout_result got;
            run(g_gpu, &gm, &mk, &fd, A0, B0, n, fused, &got);
            CHECK(vpt_results_equal(&want, &got), "%lld windows, %s path: the CUDA rollout differs from the CPU's",
                  (long long)n, got.path ? got.path : "?");
            const double dm = vpt_margin_diff(&want, &got);
            CHECK(dm <= 1e-3, "%lld windows, %s path: margins differ by up to %g", (long long)n, got.path, dm);
            printf("  %lld window(s), %s path: %lld points, %lld trades equal to the CPU's; margins within %.3g\n",
                   (long long)n, got.path ? got.path : "?", (long long)got.n_points, (long long)got.n_trades, dm);
            vp_rollout_result_free(&got);
        }
        vp_rollout_result_free(&want);
    }
    vp_model_free(&cm);
    vp_model_free(&gm);
    free(h);
    twin_free(&feat);
    vpt_market_free(&mk);
}

/* Windows of a 7-window rollout on CUDA that differ from their rollout alone (path fused
 * or ops, GEMMs at `prec`); *trades receives the 7-window run's trades. */
static int64_t windows_differing(const vp_model* gm, const vpt_market* mk, const vp_tensor* fd, int fused,
                                 int64_t* trades, const char** path) {
    vp_rollout_result seg;
    run(g_gpu, gm, mk, fd, A0, B0, 7, fused, &seg);
    int64_t bad = 0;
    for (int64_t w = 0; w < seg.n_windows; ++w) {
        vp_rollout_result one;
        run(g_gpu, gm, mk, fd, seg.windows[w].begin, seg.windows[w].last + 1, 1, fused, &one);
        bad += !window_equal(&seg, w, &one);
        vp_rollout_result_free(&one);
    }
    *trades = seg.n_trades;
    *path = seg.path ? seg.path : "?";
    vp_rollout_result_free(&seg);
    return bad;
}

static void test_cuda_windows_agree(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 22), "market");
    twin feat;
    features_twin(&mk, &feat);
    const vp_tensor fd = feat.d;
    float* h = NULL;
    vp_model gm;
    net_make(g_gpu, mk.F, &h, &gm);
    for (int fused = 1; fused >= 0; --fused) {
        int64_t trades = 0;
        const char* path = NULL;
        gm.precision = VP_PREC_FP32;
        const int64_t bad = windows_differing(&gm, &mk, &fd, fused, &trades, &path);
        CHECK(bad == 0, "FP32, %s path: %lld of 7 windows differ from their rollout alone", path, (long long)bad);
        CHECK(trades > 10, "FP32, %s path: only %lld trades", path, (long long)trades);
        gm.precision = VP_PREC_TF32;
        const int64_t bad_tf32 = windows_differing(&gm, &mk, &fd, fused, &trades, &path);
        CHECK(bad_tf32 == 0, "TF32 encodings, %s path: %lld of 7 windows differ from their rollout alone", path,
              (long long)bad_tf32);
        g_tf32_scores = 1;
        const int64_t bad_scores = windows_differing(&gm, &mk, &fd, fused, &trades, &path);
        g_tf32_scores = 0;
        printf("  %s path: windows differing from their rollout alone: FP32 %lld, TF32 encodings %lld (both "
               "asserted 0); TF32 scores %lld (not asserted)\n", path, (long long)bad, (long long)bad_tf32,
               (long long)bad_scores);
    }
    vp_model_free(&gm);
    free(h);
    twin_free(&feat);
    vpt_market_free(&mk);
}

/* Ruined windows on both backends: with the ruin level just under the initial equity the
 * exact run and windows of a 7-window run are closed out early; CUDA (fused and op path, FP32
 * GEMMs) gives the CPU's points, ruins (bars, equity at the ruin close and after the
 * close-out), trades, decisions after the windows, fragile counts and which points have a
 * margin, bit for bit; the margins' values within 1e-3 (the scores differ by FP32 rounding:
 * about 1e-7 relative on the op path, up to 1e-6 of the support's width on the fused path). */
static void test_cuda_ruin_and_margins(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 23), "market");
    twin feat;
    features_twin(&mk, &feat);
    const vp_tensor fh = feat.h, fd = feat.d;
    float* h = NULL;
    vp_model cm, gm;
    net_make(g_cpu, mk.F, &h, &cm);
    net_make(g_gpu, mk.F, &h, &gm);
    gm.precision = VP_PREC_FP32;
    g_ruin_fraction = 0.9995;
    for (int64_t n = 1; n <= 7; n += 6) {
        vp_rollout_result want;
        run(g_cpu, &cm, &mk, &fh, A0, B0, n, 0, &want);
        CHECK(want.n_ruined >= 1 && want.n_decisions > 0, "%lld windows: %lld ruined on the CPU", (long long)n,
              (long long)want.n_ruined);
        for (int fused = 1; fused >= 0; --fused) {
            vp_rollout_result got;
            run(g_gpu, &gm, &mk, &fd, A0, B0, n, fused, &got);
            const double dm = vpt_margin_diff(&want, &got);
            CHECK(vpt_results_equal(&want, &got) && want.ruin.bar == got.ruin.bar &&
                      want.ruin.equity_after_close == got.ruin.equity_after_close,
                  "%lld windows, %s path: the ruined CUDA rollout differs from the CPU's", (long long)n,
                  got.path ? got.path : "?");
            CHECK(dm <= 1e-3, "%lld windows, %s path: margins differ by up to %g", (long long)n, got.path, dm);
            printf("  ruin: %lld window(s), %s path: %lld ruined (first at bar %lld), %lld of %lld decisions fragile, "
                   "margins within %.3g of the CPU's\n", (long long)n, got.path ? got.path : "?",
                   (long long)got.n_ruined, (long long)got.ruin.bar, (long long)got.n_fragile,
                   (long long)got.n_decisions, dm);
            vp_rollout_result_free(&got);
        }
        vp_rollout_result_free(&want);
    }
    g_ruin_fraction = 0.5;
    vp_model_free(&cm);
    vp_model_free(&gm);
    free(h);
    twin_free(&feat);
    vpt_market_free(&mk);
}

int main(void) {
    gpu_setup("test_gpu_rollout");
    RUN_TEST(test_cuda_equals_cpu);
    RUN_TEST(test_cuda_ruin_and_margins);
    RUN_TEST(test_cuda_windows_agree);
    gpu_teardown();
    return vpt_finish();
}
