/* GPU test: the encode-once collection on CUDA.
 * - the gather (rows, NaN rows outside the table, window ends) and the hand-over (bars,
 *   portfolios, the tick) on CUDA equal the CPU's bit for bit;
 * - the span encoding on CUDA against the CPU's, norm-wise within 1e-5 (FP32 GEMMs; the
 *   two backends sum in different orders);
 * - 16 encode-once steps of 4099 envs in lock-step with 16 single steps (vp_collector_step)
 *   on CUDA from the same state: the encode-once rows come from a 860-row encoding, the
 *   single steps' from 4099-row ones, so a Q-value may differ in its last bits and flip a
 *   near tie. Tolerance: at most 1 % of the envs ever choose differently, and every env
 *   that never did ends in the same state, bit for bit (the env step is exact);
 * - vp_collector_collect captured as a graph: 20 launches copy, allocate and synchronise
 *   nothing, and the step counter moves by 20 x S;
 * - two training runs with train.collect_steps=64 (the encode-once path) give identical
 *   metrics.jsonl (timing lines aside).
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L /* lstat (test_train_util.h) */
#include <math.h>

#include "gpu_twin.h"
#include "learn/collect_impl.h"
#include "test_train_util.h"
#include "vulpes/collect.h"

enum { NE = 4099, NS = 16 };

/* A trainer of the test configuration with 4099 envs, 16 collection steps, FP32 GEMMs. */
static int make(vp_trainer* t, vp_train_data* d, vp_backend* b) {
    vp_config cfg;
    const char* over[] = {"env.n_envs=4099", "train.collect_steps=16", "replay.capacity=70001",
                          "replay.warmup=12297", "run.precision=fp32"};
    if (!vpt_train_cfg(&cfg, 5, over) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    if (vp_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    return 1;
}

/* Replaces t's collector by one of `mode` (the envs restart as at init). */
static void remake_collector(vp_trainer* t, vp_collect_mode mode) {
    vp_collect_cfg cc = t->parts.collect;
    cc.mode = mode;
    const vp_policy pol = vp_model_policy(&t->learner.model, &t->learner.model.params);
    vp_collector_free(&t->collector);
    CHECK_OK(vp_collector_init(&t->collector, t->backend, &pol, &t->features, &t->env, t->replay, &cc));
}

/* Downloads n bytes of a device tensor into a fresh host buffer. */
static void* fetch(vp_backend* b, const vp_tensor* t, size_t n) {
    void* h = malloc(n);
    CHECK_OK(vp_download(b, h, t, n));
    return h;
}

/* Downloads `bytes` of an env state field into host memory. */
static void down(void* field, const vp_env* e, void* host, size_t bytes) {
    vp_tensor v = vp_tensor_1d(field, VP_I32, e->storage.mem, (int64_t)(bytes / 4));
    CHECK_OK(vp_download(g_gpu, host, &v, bytes));
}

static void test_kernels_bitwise(void) {
    enum { R = 300, W = 37, N = 1031 };
    twin tab, bar, out, ws, wd, nb, np, ob, op, st;
    twin_2d(&tab, VP_F32, R, W), twin_1d(&bar, VP_I32, N), twin_2d(&out, VP_F32, N, W);
    twin_1d(&ws, VP_I32, N), twin_1d(&wd, VP_I32, N), twin_1d(&nb, VP_I32, N), twin_2d(&np, VP_F32, N, 8);
    twin_1d(&ob, VP_I32, N), twin_2d(&op, VP_F32, N, 8), twin_1d(&st, VP_I32, 2);
    twin_rand(&tab, -3.0f, 3.0f), twin_rand(&np, -1.0f, 1.0f);
    int32_t* bh = (int32_t*)bar.h.data;
    int32_t* wh = (int32_t*)ws.h.data;
    int32_t* nh = (int32_t*)nb.h.data;
    for (int i = 0; i < N; ++i) bh[i] = 100 + (i * 7919) % (R + 6) - 3, wh[i] = 5000 + i, nh[i] = 3 * i;
    twin_push(&bar), twin_push(&ws), twin_push(&nb);
    int64_t step = 90;
    CHECK_OK(vp_upload(g_cpu, &st.h, &step, sizeof step));
    CHECK_OK(vp_upload(g_gpu, &st.d, &step, sizeof step));
    CHECK_OK(vp_collect_gather(g_cpu, &tab.h, 103, &bar.h, &out.h, &ws.h, &wd.h));
    CHECK_OK(vp_collect_gather(g_gpu, &tab.d, 103, &bar.d, &out.d, &ws.d, &wd.d));
    twin_check_bits("collect_gather", "1031 x 37 of 300 rows, NaN outside", &out);
    twin_check_bits("collect_gather", "window ends", &wd);
    CHECK_OK(vp_collect_handover(g_cpu, &nb.h, &np.h, &ob.h, &op.h, &st.h));
    CHECK_OK(vp_collect_handover(g_gpu, &nb.d, &np.d, &ob.d, &op.d, &st.d));
    twin_check_bits("collect_handover", "bars", &ob);
    twin_check_bits("collect_handover", "portfolios", &op);
    twin_check_bits("collect_handover", "step counter", &st);
    // the hand-over and the next gather in one kernel (bars 3 i from the hand-over's next bars)
    twin_poison(&out);
    for (int i = 0; i < N; ++i) nh[i] = 100 + (i * 104729) % (R + 6) - 3, wh[i] = 7000 - i;
    twin_push(&nb), twin_push(&ws);
    CHECK_OK(vp_collect_handover_gather(g_cpu, &nb.h, &np.h, &ob.h, &op.h, &st.h, &tab.h, 103, &out.h, &ws.h, &wd.h));
    CHECK_OK(vp_collect_handover_gather(g_gpu, &nb.d, &np.d, &ob.d, &op.d, &st.d, &tab.d, 103, &out.d, &ws.d, &wd.d));
    twin_check_bits("collect_handover_gather", "rows, NaN outside", &out);
    twin_check_bits("collect_handover_gather", "window ends", &wd);
    twin_check_bits("collect_handover_gather", "bars", &ob);
    twin_check_bits("collect_handover_gather", "portfolios", &op);
    twin_check_bits("collect_handover_gather", "step counter", &st);
    twin_free(&tab), twin_free(&bar), twin_free(&out), twin_free(&ws), twin_free(&wd);
    twin_free(&nb), twin_free(&np), twin_free(&ob), twin_free(&op), twin_free(&st);
}

static void test_span_encoding_vs_cpu(void) {
    vp_trainer tc, tg;
    vp_train_data dc, dg;
    if (!make(&tc, &dc, g_cpu)) return;
    if (!make(&tg, &dg, g_gpu)) {
        vp_trainer_free(&tc), vp_train_data_free(&dc);
        return;
    }
    CHECK(tc.collector.encode_once && tg.collector.encode_once, "both collectors must encode once");
    CHECK_OK(vp_collector_encode_span(&tc.collector));
    CHECK_OK(vp_collector_encode_span(&tg.collector));
    const size_t n = vp_tensor_bytes(&tc.collector.span_enc);
    float* g = (float*)fetch(g_gpu, &tg.collector.span_enc, n);
    const float* c = (const float*)tc.collector.span_enc.data;
    double num = 0, den = 0;
    for (size_t i = 0; i < n / 4; ++i) {
        num += ((double)g[i] - c[i]) * ((double)g[i] - c[i]);
        den += (double)c[i] * c[i];
    }
    const double err = sqrt(num / (den > 0 ? den : 1)), tol = 1e-5;
    twin_row("span encoding", "CUDA vs CPU, FP32", err, tol, err <= tol);
    CHECK(err <= tol, "span encoding: relative error %g (tolerance %g)", err, tol);
    free(g);
    vp_trainer_free(&tc), vp_trainer_free(&tg);
    vp_train_data_free(&dc), vp_train_data_free(&dg);
}

/* The graph body: one collection of S steps. */
static vp_status collect_body(vp_backend* b, void* ctx) {
    (void)b;
    return vp_collector_collect((vp_collector*)ctx);
}

static void test_lockstep_and_graph(void) {
    vp_trainer ta, to;
    vp_train_data da, dd;
    if (!make(&ta, &da, g_gpu)) return;
    if (!make(&to, &dd, g_gpu)) {
        vp_trainer_free(&ta), vp_train_data_free(&da);
        return;
    }
    remake_collector(&ta, VP_COLLECT_STEPWISE);
    CHECK(ta.collector.encode_once == 0 && to.collector.encode_once == 1, "paths %d %d", ta.collector.encode_once,
          to.collector.encode_once);
    CHECK_OK(vp_trainer_warmup(&ta));
    CHECK_OK(vp_trainer_warmup(&to));
    // Lock-step: one single step and one head step, actions compared after each.
    char* diverged = (char*)calloc(NE, 1);
    CHECK_OK(vp_collector_encode_span(&to.collector));
    for (int k = 0; k < NS; ++k) {
        CHECK_OK(vp_collector_step(&ta.collector));
        CHECK_OK(vp_collector_head_step(&to.collector));
        int32_t* aa = (int32_t*)fetch(g_gpu, &ta.collector.actions, (size_t)NE * 16);
        int32_t* ao = (int32_t*)fetch(g_gpu, &to.collector.actions, (size_t)NE * 16);
        for (int i = 0; i < NE; ++i) diverged[i] |= memcmp(aa + 4 * i, ao + 4 * i, 16) != 0;
        free(aa), free(ao);
    }
    int n_div = 0;
    for (int i = 0; i < NE; ++i) n_div += diverged[i];
    // Envs that always chose alike end in the same state: compare each field's entry.
    int32_t* ta_t = (int32_t*)malloc((size_t)NE * 4);
    int32_t* to_t = (int32_t*)malloc((size_t)NE * 4);
    double* ta_eq = (double*)malloc((size_t)NE * 8);
    double* to_eq = (double*)malloc((size_t)NE * 8);
    down(ta.env.state.t, &ta.env, ta_t, NE * 4);
    down(to.env.state.t, &to.env, to_t, NE * 4);
    down(ta.env.state.equity, &ta.env, ta_eq, NE * 8);
    down(to.env.state.equity, &to.env, to_eq, NE * 8);
    int bad = 0;
    for (int i = 0; i < NE; ++i)
        if (!diverged[i]) bad += ta_t[i] != to_t[i] || memcmp(ta_eq + i, to_eq + i, 8) != 0;
    const double frac = (double)n_div / NE;
    twin_row("encode-once steps", "4099 envs x 16 vs single steps", frac, 0.01, frac <= 0.01 && bad == 0);
    CHECK(frac <= 0.01, "%d of %d envs chose differently at some step (tolerance 1 %%)", n_div, NE);
    CHECK(bad == 0, "%d envs that always chose alike end in different states", bad);
    free(diverged), free(ta_t), free(to_t), free(ta_eq), free(to_eq);

    // The collection as a graph: nothing copied, allocated or synchronised across launches.
    vp_graph* g = NULL;
    int64_t s0 = 0, s1 = 0;
    CHECK_OK(vp_collector_get_step(&to.collector, &s0));
    vp_status s = vp_graph_capture(g_gpu, collect_body, &to.collector, &g);
    CHECK_OK(s);
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int r = 0; r < 20 && s == VP_OK; ++r) s = vp_graph_launch(g_gpu, g);
    vp_backend_counters(g_gpu, &after);
    CHECK_OK(s);
    CHECK_OK(vp_collector_get_step(&to.collector, &s1));
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    twin_row("collect graph", "20 launches: copies/allocs/syncs", 0, 0, zero && s1 == s0 + 20 * NS);
    CHECK(zero, "20 collections: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    CHECK(s1 == s0 + 20 * NS, "step counter %lld -> %lld over 20 collections of %d", (long long)s0, (long long)s1,
          NS);
    vp_graph_free(g);
    vp_trainer_free(&ta), vp_trainer_free(&to);
    vp_train_data_free(&da), vp_train_data_free(&dd);
}

/* Runs the test config on the GPU with 64 envs and 64 collection steps into dir. */
static vp_status run64(const char* dir, vp_train_result* r) {
    vp_config cfg;
    const char* over[] = {"run.backend=cuda", "env.n_envs=64", "train.collect_steps=64", "replay.capacity=60001"};
    if (!vpt_train_cfg(&cfg, 4, over)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = VP_RUN_CREATE;
    return vp_train_run(&cfg, g_gpu, &o, r);
}

static void test_runs_repeat(void) {
    char d1[512], d2[512];
    vpt_tmp_dir(d1, sizeof d1, "gpuc1");
    vpt_tmp_dir(d2, sizeof d2, "gpuc2");
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_train_result r1, r2;
    CHECK_OK(run64(d1, &r1));
    CHECK_OK(run64(d2, &r2));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    const int same = a && b && strcmp(a, b) == 0;
    CHECK(same, "two GPU runs with train.collect_steps=64 differ");
    twin_row("train run", "collect_steps=64, repeat", 0, 0, same);
    free(a), free(b);
    vpt_rm_run(d1), vpt_rm_run(d2);
}

int main(void) {
    gpu_setup("test_gpu_collect");
    RUN_TEST(test_kernels_bitwise);
    RUN_TEST(test_span_encoding_vs_cpu);
    RUN_TEST(test_lockstep_and_graph);
    RUN_TEST(test_runs_repeat);
    gpu_teardown();
    return vpt_finish();
}
