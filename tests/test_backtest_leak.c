/* Leakage guards of the backtest (CPU): a backtest of [a, b) reads no bar at or after b —
 * the bars, ATR and feature rows from b on are poisoned (NaN, absurd values) and trades,
 * equity and metrics stay bit for bit the same, in both modes; and the decision at bar t
 * uses only bars <= t — for many t, every bar and feature row after t is changed and the
 * choices at bars <= t (and the equity up to t) stay the same. */
#include "test_backtest_util.h"
#include "vp_test.h"

enum { NBARS = 520, A0 = 300, B0 = 460 };

/* A copy of the market whose bars, ATR and feature rows from `from` on are replaced:
 * poison 1 writes NaN and absurd numbers (not valid bars), poison 0 valid but different
 * bars (prices x 1.7, ATR x 3) and wild feature values. */
static void tamper(const vpt_market* src, vpt_market* dst, int64_t from, int poison) {
    const int64_t n = src->bars.n, F = src->F;
    memset(dst, 0, sizeof *dst);
    vp_bars_alloc(&dst->bars, n);
    memcpy(dst->bars.time_ms, src->bars.time_ms, sizeof(int64_t) * (size_t)n);
    dst->atr = (double*)malloc(sizeof(double) * (size_t)n);
    dst->feat = (float*)malloc(sizeof(float) * (size_t)(n * F));
    dst->F = src->F;
    for (int64_t i = 0; i < n; ++i) {
        double s = i < from ? 1.0 : 1.7, bad = (i % 2) ? NAN : 1e300;
        dst->bars.open[i] = i < from || !poison ? src->bars.open[i] * s : bad;
        dst->bars.high[i] = i < from || !poison ? src->bars.high[i] * s : -bad;
        dst->bars.low[i] = i < from || !poison ? src->bars.low[i] * s : bad;
        dst->bars.close[i] = i < from || !poison ? src->bars.close[i] * s : NAN;
        dst->bars.volume[i] = i < from ? src->bars.volume[i] : NAN;
        dst->atr[i] = i < from ? src->atr[i] : (poison ? NAN : 3.0 * src->atr[i]);
        for (int64_t j = 0; j < F; ++j)
            dst->feat[i * F + j] = i < from ? src->feat[i * F + j] : (poison ? NAN : (float)(1e3 * ((i * 7 + j) % 5 - 2)));
    }
    dst->features = vp_tensor_2d(dst->feat, VP_F32, VP_MEM_HOST, n, F);
}

/* A backtest of [a, b) of a market in n windows. */
static vp_status run(vp_backend* b, const vp_model* m, const vpt_market* mk, int64_t a, int64_t e, int64_t n_win,
                     vp_rollout_result* out) {
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = vpt_instrument();
    c.episode_bars = 40;
    c.n_windows = n_win;
    c.encode_chunk = 64;
    vp_rollout_data d = {&mk->bars, mk->atr, &mk->features, {a, e}};
    return vp_backtest_run(b, m, &m->params, &d, &c, out);
}

static void test_nothing_read_at_or_after_end(void) {
    vpt_market mk, bad;
    CHECK(vpt_market_make(&mk, NBARS, 21), "market");
    tamper(&mk, &bad, B0, 1);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model m;
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    CHECK_OK(vp_model_init(&m, b, &mc, 13));
    const int64_t modes[2] = {1, 6};
    for (int i = 0; i < 2; ++i) {
        vp_rollout_result r1, r2;
        CHECK_OK(run(b, &m, &mk, A0, B0, modes[i], &r1));
        CHECK_OK(run(b, &m, &bad, A0, B0, modes[i], &r2));
        CHECK(r1.n_trades > 5 && r1.summary.trades.exposure > 0.3, "%lld trades, exposure %g: the test would prove "
              "little", (long long)r1.n_trades, r1.summary.trades.exposure);
        CHECK(vpt_results_equal(&r1, &r2), "%lld windows: poisoned bars from %d on changed the result",
              (long long)modes[i], B0);
        vp_rollout_result_free(&r1);
        vp_rollout_result_free(&r2);
    }
    // the poison is real: one bar more and the run refuses the bars
    vp_rollout_result r3;
    vp_clear_error();
    CHECK(run(b, &m, &bad, A0, B0 + 1, 1, &r3) != VP_OK, "a poisoned bar inside the span was accepted");
    vp_rollout_result_free(&r3);
    vp_model_free(&m);
    vp_backend_free(b);
    vpt_market_free(&bad);
    vpt_market_free(&mk);
}

static void test_decision_uses_past_only(void) {
    vpt_market mk;
    CHECK(vpt_market_make(&mk, NBARS, 22), "market");
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model m;
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    CHECK_OK(vp_model_init(&m, b, &mc, 10));
    vp_rollout_result base;
    CHECK_OK(run(b, &m, &mk, A0, B0, 1, &base));
    // many decision bars t: everything after t changed, nothing at or before t may move
    CHECK(base.summary.trades.exposure > 0.3, "exposure %g: the portfolio path is hardly exercised",
          base.summary.trades.exposure);
    int changed_later = 0, runs = 0;
    for (int64_t t = A0; t < B0 - 1; t += 13, ++runs) {
        vpt_market alt;
        tamper(&mk, &alt, t + 1, 0);
        vp_rollout_result r;
        CHECK_OK(run(b, &m, &alt, A0, B0, 1, &r));
        const int64_t k = t - A0;  // point of bar t
        int same = r.n_points == base.n_points;
        for (int64_t j = 0; same && j <= k; ++j) {
            same &= r.equity[j] == base.equity[j] && r.position[j] == base.position[j];
            for (int q = 0; q < 4; ++q) same &= r.action[j * 4 + q] == base.action[j * 4 + q];
        }
        CHECK(same, "a change after bar %lld moved a decision or the equity at or before it", (long long)t);
        // and later points do see the change (the perturbation reaches the run)
        int later = 0;
        for (int64_t j = k + 1; r.n_points == base.n_points && j < r.n_points; ++j)
            later |= r.equity[j] != base.equity[j] || memcmp(r.action + j * 4, base.action + j * 4, 16) != 0;
        changed_later += later;
        vp_rollout_result_free(&r);
        vpt_market_free(&alt);
    }
    CHECK(changed_later == runs, "the changes after t reached only %d runs", changed_later);
    vp_rollout_result_free(&base);
    vp_model_free(&m);
    vp_backend_free(b);
    vpt_market_free(&mk);
}

int main(void) {
    RUN_TEST(test_nothing_read_at_or_after_end);
    RUN_TEST(test_decision_uses_past_only);
    return vpt_finish();
}
