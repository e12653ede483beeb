/* The default model at B = 8192 on the CPU: all memory is taken when the activations are
 * made; a forward then allocates, copies and synchronises nothing, and its outputs are
 * distributions and finite values. Also the encode-only path of a backtest. Forward-only
 * activations keep the test's memory near 1.5 GB; test_model_grad checks that a forward
 * and backward with backward activations allocate nothing either. */
#include <time.h>

#include "model/model_internal.h"
#include "vp_test.h"

static void test_default_forward_no_alloc(void) {
    const int64_t B = 8192, T = 20011;
    const int NT = 64;
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model_cfg c = vp_model_cfg_default();
    vp_model m;
    CHECK_OK(vp_model_init(&m, be, &c, 3));
    vp_model_acts* a = NULL;
    CHECK_OK(vp_model_acts_init(&a, &m, B, NT, 0));
    if (!a) return;
    fprintf(stderr, "  activations B=%lld taus=%d, forward only: %.1f MB\n", (long long)B, NT,
            (double)vp_model_acts_bytes(a) / 1e6);
    // inputs in host memory of the CPU backend
    float* feat = (float*)malloc(sizeof(float) * (size_t)(T * c.n_features));
    int32_t* bar = (int32_t*)malloc(sizeof(int32_t) * (size_t)B);
    float* port = (float*)malloc(sizeof(float) * (size_t)(B * c.n_portfolio));
    float* taus = (float*)malloc(sizeof(float) * (size_t)(B * NT));
    for (int64_t i = 0; i < T * c.n_features; ++i) feat[i] = 2.0f * vp_rng_uniform(9, 1, (uint64_t)i) - 1.0f;
    for (int64_t i = 0; i < B; ++i) bar[i] = (int32_t)(vp_rng_uniform(9, 2, (uint64_t)i) * (float)T) % (int32_t)T;
    for (int64_t i = 0; i < B * c.n_portfolio; ++i) port[i] = vp_rng_uniform(9, 3, (uint64_t)i) - 0.5f;
    for (int64_t i = 0; i < B * NT; ++i) taus[i] = 0.001f + 0.998f * vp_rng_uniform(9, 4, (uint64_t)i);
    vp_tensor ft = vp_tensor_2d(feat, VP_F32, VP_MEM_HOST, T, c.n_features);
    vp_tensor bt = vp_tensor_1d(bar, VP_I32, VP_MEM_HOST, B);
    vp_tensor pt = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, B, c.n_portfolio);
    vp_tensor tt = vp_tensor_2d(taus, VP_F32, VP_MEM_HOST, B, NT);
    // the forward: no allocation, copy or sync
    vp_runtime_counters before, after;
    vp_backend_counters(be, &before);
    double t0 = vp_clock_s();
    CHECK_OK(vp_model_forward(&m, &m.params, a, &ft, &bt, &pt, &tt, B));
    double t1 = vp_clock_s();
    vp_backend_counters(be, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "forward: %lld allocs, %lld copies, %lld syncs", (long long)(after.allocs - before.allocs),
          (long long)(after.copies - before.copies), (long long)(after.syncs - before.syncs));
    fprintf(stderr, "  CPU forward B=%lld: %.2f s (%.1f GFLOP/s)\n", (long long)B, t1 - t0,
            vp_model_flops(&c, B, NT, 0) / (t1 - t0) / 1e9);
    // outputs: distributions, Q in the support, finite quantiles
    vp_tensor lp = vp_model_log_probs(a), q = vp_model_q(a), zq = vp_model_iqn(a);
    const int A = vp_model_cfg_actions(&c), Z = c.n_atoms;
    int bad = 0;
    for (int64_t r = 0; r < B * A; r += 997) {
        double s = 0;
        for (int z = 0; z < Z; ++z) s += exp(((float*)lp.data)[r * Z + z]);
        bad += fabs(s - 1.0) > 1e-4;
    }
    CHECK(bad == 0, "%d rows of log_probs do not sum to 1", bad);
    int outside = 0, nonfinite = 0;
    for (int64_t i = 0; i < B * A; ++i) {
        float v = ((float*)q.data)[i];
        outside += !(v >= c.v_min && v <= c.v_max);
    }
    for (int64_t i = 0; i < B * NT * A; ++i) nonfinite += !isfinite(((float*)zq.data)[i]);
    CHECK(outside == 0 && nonfinite == 0, "%d Q outside the support, %d quantiles not finite", outside, nonfinite);
    // a backtest encodes in large batches without the portfolio: no allocation either
    vp_backend_counters(be, &before);
    CHECK_OK(vp_model_encode(&m, &m.params, a, &ft, &bt, B));
    vp_backend_counters(be, &after);
    CHECK(after.allocs == before.allocs, "encode allocated");
    vp_tensor e = vp_model_encoding(a);
    CHECK(e.shape[0] == B && e.shape[1] == c.hidden, "encoding shape");
    vp_model_acts_free(a);
    vp_model_free(&m);
    vp_backend_free(be);
    free(feat);
    free(bar);
    free(port);
    free(taus);
}

int main(void) {
    RUN_TEST(test_default_forward_no_alloc);
    return vpt_finish();
}
