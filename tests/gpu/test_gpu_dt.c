/* GPU test: the Decision Transformer on CUDA against the CPU.
 * - a trainer on both backends from one dataset recorded on the CPU (FP32 products; the Mamba2
 *   encoder trained with it): the first batch drawn bit for bit, the logits of the first update's
 *   forward, the loss and every gradient within 1e-4 relative, the parameters after 3 updates
 *   within 1e-4 relative;
 * - a captured update replayed 50 times makes no copy, allocation or synchronisation
 *   (vp_backend_counters), and the updates did their work (adam.step read afterwards);
 * - the policy with memory over 9 steps of 5 rows with a context of 4: the scores within 1e-4
 *   relative at every step (history pushes, sequences, readout and observe on both);
 * - the exact test-span backtest of the trained policy on both: the same choices at every bar
 *   but those whose CPU margin is below 1e-3.
 * Prints what differs and exits non-zero on a failure. Run on a GPU machine (scripts/gpu.sh),
 * not by ctest. */
#include "test_train_util.h"

#include <math.h>

#include "gpu_twin.h"

#include "learn/dt_impl.h"
#include "vulpes/record.h"

/* The overrides of the test config. */
static const char* const OVER[] = {"train.algo=dt", "dt.context=4", "dt.embed=16", "dt.heads=4", "dt.layers=2",
                                   "dt.batch=9", "run.precision=fp32", "model.encoder=mamba2"};

/* Host copy of n bytes of a backend tensor (free it). */
static void* fetch(vp_backend* b, const vp_tensor* t, size_t n) {
    void* h = malloc(n);
    if (h && vp_download(b, h, t, n) != VP_OK) {
        free(h);
        return NULL;
    }
    return h;
}

/* Norm-wise relative error of n floats. */
static double rel(const float* a, const float* want, int64_t n) {
    double d = 0.0, w = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        d += ((double)a[i] - want[i]) * ((double)a[i] - want[i]);
        w += (double)want[i] * want[i];
    }
    return isnan(d) ? INFINITY : sqrt(d / fmax(w, 1e-30));
}

/* Relative error of a backend tensor of n floats against the CPU's, checked against tol. */
static int compare(const char* what, const vp_tensor* g, const vp_tensor* c, int64_t n, double tol) {
    float* h = (float*)fetch(g_gpu, g, sizeof(float) * (size_t)n);
    const double e = h ? rel(h, (const float*)c->data, n) : INFINITY;
    free(h);
    twin_row("dt", what, e, tol, e <= tol);
    CHECK(e <= tol, "%s: relative error %.3e (tolerance %.0e)", what, e, tol);
    return e <= tol;
}

static void test_trainer(void) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, (int)(sizeof OVER / sizeof OVER[0]), OVER)) return;
    vp_train_data d;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    // one dataset, recorded on the CPU
    vp_train_parts parts;
    CHECK_OK(vp_train_parts_make(&cfg, d.n_features, &parts));
    vp_record_cfg rc;
    memset(&rc, 0, sizeof rc);
    rc.steps = 300, rc.n_envs = 4, rc.seed = 3, rc.span = d.split.train, rc.instrument = parts.instrument;
    rc.env = parts.env;
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("ma_cross:fast=3,slow=9,epsilon=0.3", &beh));
    vp_offline_data od;
    memset(&od, 0, sizeof od);
    CHECK_OK(vp_record_run(g_cpu, &d, NULL, &beh, &rc, &od));
    vp_dt_trainer tc, tg;
    CHECK_OK(vp_dt_trainer_init_data(&tc, g_cpu, &cfg, &d, &od));
    CHECK_OK(vp_dt_trainer_init_data(&tg, g_gpu, &cfg, &d, &od));
    vp_offline_free(&od);
    if (!tc.val || !tg.val) return;
    const int64_t W = tc.net.n_weights, BK = tc.dc.batch * tc.dc.dims.K, BL = tc.dc.batch * tc.dc.dims.L;
    // the first update, op by op on both
    CHECK_OK(vp_dt_update(&tc));
    CHECK_OK(vp_dt_update(&tg));
    CHECK_OK(vp_backend_sync(g_gpu));
    int32_t* gb = (int32_t*)fetch(g_gpu, &tg.batch.bar, sizeof(int32_t) * (size_t)BK);
    int32_t* ga = (int32_t*)fetch(g_gpu, &tg.batch.act, sizeof(int32_t) * (size_t)BK * 4);
    const int same = gb && ga && memcmp(gb, tc.batch.bar.data, sizeof(int32_t) * (size_t)BK) == 0 &&
                     memcmp(ga, tc.batch.act.data, sizeof(int32_t) * (size_t)BK * 4) == 0;
    twin_row("dt", "the batch drawn (bars, actions)", same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "the CUDA batch's bars or actions differ from the CPU's");
    free(gb), free(ga);
    const vp_tensor lc = vp_dt_logits(tc.acts), lgg = vp_dt_logits(tg.acts);
    compare("logits of the first forward", &lgg, &lc, BL * tc.net.dims.A, 1e-4);
    compare("loss and valid steps", &tg.stats, &tc.stats, VP_DT_STAT_COUNT, 1e-4);
    compare("gradients of the first update", &tg.net.grads, &tc.net.grads, W, 1e-4);
    for (int k = 0; k < 2; ++k) {
        CHECK_OK(vp_dt_update(&tc));
        CHECK_OK(vp_dt_update(&tg));
    }
    compare("parameters after 3 updates", &tg.net.params, &tc.net.params, W, 1e-4);
    // the captured update: 50 launches copy, allocate and sync nothing
    CHECK_OK(vp_dt_trainer_iterate(&tg, 1));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_dt_trainer_iterate(&tg, 50));
    vp_backend_counters(g_gpu, &after);
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    CHECK(zero, "50 updates: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    twin_row("dt update graph", "50 launches: copies/allocs/syncs", 0.0, 0.0, zero);
    int32_t step = 0;
    CHECK_OK(vp_download(g_gpu, &step, &tg.adam_step, sizeof step));
    double loss = NAN, steps = 0.0, gn = NAN;
    CHECK_OK(vp_dt_trainer_stats(&tg, &loss, &steps, &gn));
    CHECK(step == 3 + 1 + 50 && isfinite(loss) && isfinite(gn) && steps >= 1.0,
          "after the launches: adam step %d (want 54), loss %g, grad norm %g, %g steps", step, loss, gn, steps);
    // the exact test-span backtest of the trained policy on both
    CHECK_OK(vp_copy(g_gpu, &tg.net.params, &tg.best_params));
    float* gp = (float*)fetch(g_gpu, &tg.net.params, sizeof(float) * (size_t)W);
    if (gp) memcpy(tc.net.params.data, gp, sizeof(float) * (size_t)W);
    free(gp);
    vp_rollout_cfg ro = vp_rollout_cfg_default();
    ro.instrument = parts.instrument;
    ro.episode_bars = cfg.env.episode_bars;
    ro.ruin_fraction = cfg.env.ruin_fraction;
    CHECK_OK(vp_annual_measure(d.bars.time_ms, d.bars.n, &ro.annual));
    vp_rollout_result rcpu, rgpu;
    memset(&rcpu, 0, sizeof rcpu), memset(&rgpu, 0, sizeof rgpu);
    const vp_policy pc = vp_dt_policy(&tc.net, &tc.net.params, tc.target);
    const vp_policy pg = vp_dt_policy(&tg.net, &tg.net.params, tg.target);
    vp_rollout_data dc = {&d.bars, d.atr, &tc.features, d.split.test}, dg = {&d.bars, d.atr, &tg.features, d.split.test};
    CHECK_OK(vp_rollout_run(g_cpu, &pc, &dc, &ro, &rcpu));
    CHECK_OK(vp_rollout_run(g_gpu, &pg, &dg, &ro, &rgpu));
    int64_t diff = 0, close = 0;
    for (int64_t o = 0; o < rcpu.n_points && o < rgpu.n_points; ++o) {
        const int eq = memcmp(rcpu.action + o * 4, rgpu.action + o * 4, sizeof(int32_t) * 4) == 0;
        if (!eq && !(rcpu.margin[o] < 1e-3)) ++diff;
        close += !eq;
    }
    const int ok = rcpu.n_points == rgpu.n_points && diff == 0;
    twin_row("dt backtest", "choices (margins >= 1e-3)", (double)diff, 0.0, ok);
    CHECK(ok, "test-span backtest: %lld of %lld choices differ with a CPU margin >= 1e-3 (%lld in all)", (long long)diff,
          (long long)rcpu.n_points, (long long)close);
    vp_rollout_result_free(&rcpu), vp_rollout_result_free(&rgpu);
    vp_dt_trainer_free(&tc), vp_dt_trainer_free(&tg);
    vp_train_data_free(&d);
}

/* A network on backend b of the trainer's shape (seed 5). */
static void policy_net(vp_backend* b, vp_dt_net* n) {
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = 5, m.window = 4, m.hidden = 12, m.encoder = VP_ENCODER_NONE;
    m.head_hidden = 8, m.n_atoms = 11, m.iqn_cos = 8;
    m.mamba_head_dim = 12;
    vp_dt_dims d;
    memset(&d, 0, sizeof d);
    d.K = 4, d.L = 12, d.D = 16, d.NH = 4, d.layers = 2, d.TM = 6;
    CHECK_OK(vp_dt_net_init(n, b, &m, &d, 5));
    n->enc.precision = VP_PREC_FP32;
}

static void test_policy(void) {
    enum { N = 5, H = 12, P = 8, STEPS = 9 };
    vp_dt_net nc, ng;
    policy_net(g_cpu, &nc);
    policy_net(g_gpu, &ng);
    const vp_policy pc = vp_dt_policy(&nc, &nc.params, 2.5f), pg = vp_dt_policy(&ng, &ng.params, 2.5f);
    vp_policy_work *wc = NULL, *wg = NULL;
    CHECK_OK(vp_policy_work_init(&pc, N, &wc));
    CHECK_OK(vp_policy_work_init(&pg, N, &wg));
    if (!wc || !wg) return;
    twin e, p, a, r;
    twin_2d(&e, VP_F32, N, H), twin_2d(&p, VP_F32, N, P), twin_2d(&a, VP_I32, N, 4), twin_1d(&r, VP_F32, N);
    double worst = 0.0;
    for (int k = 0; k < STEPS; ++k) {
        twin_rand(&e, -1.0f, 1.0f), twin_rand(&p, -1.0f, 1.0f), twin_rand(&r, -0.5f, 0.5f);
        for (int i = 0; i < N * 4; ++i) ((int32_t*)a.h.data)[i] = (k + i) % 3;
        twin_push(&a);
        vp_tensor sc, sg;
        CHECK_OK(vp_policy_score(&pc, wc, &e.h, &p.h, N, &sc));
        CHECK_OK(vp_policy_score(&pg, wg, &e.d, &p.d, N, &sg));
        float* h = (float*)fetch(g_gpu, &sg, sizeof(float) * N * (size_t)nc.dims.A);
        const double err = h ? rel(h, (const float*)sc.data, N * (int64_t)nc.dims.A) : INFINITY;
        free(h);
        worst = fmax(worst, err);
        CHECK(err <= 1e-4, "policy step %d: scores relative error %.3e", k, err);
        CHECK_OK(vp_policy_observe(&pc, wc, &a.h, &r.h, N));
        CHECK_OK(vp_policy_observe(&pg, wg, &a.d, &r.d, N));
    }
    twin_row("dt policy", "scores over 9 steps of 5 rows", worst, 1e-4, worst <= 1e-4);
    twin_free(&e), twin_free(&p), twin_free(&a), twin_free(&r);
    vp_policy_work_free(&pc, wc), vp_policy_work_free(&pg, wg);
    vp_dt_net_free(&nc), vp_dt_net_free(&ng);
}

int main(void) {
    gpu_setup("test_gpu_dt");
    RUN_TEST(test_trainer);
    RUN_TEST(test_policy);
    gpu_teardown();
    return vpt_finish();
}
