/* GPU test: collection and the training loop on CUDA.
 * - epsilon-greedy actions on CUDA equal the CPU's, bit for bit (odd env counts, NaN rows);
 * - the warm-up (random actions, env steps, replay pushes) leaves the same env state and
 *   replay ring as on the CPU;
 * - a captured iteration replayed 300 times makes no copy, allocation or synchronisation
 *   (vp_backend_counters), and the iterations did their work (counters read afterwards);
 * - two runs of one config give identical metrics.jsonl (timing lines aside) and
 *   byte-identical checkpoints; 23 iterations + a stop + a resume equal 40 straight.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#define _POSIX_C_SOURCE 200809L /* lstat (test_train_util.h) */
#include <math.h>

#include "gpu_twin.h"
#include "test_train_util.h"
#include "vulpes/collect.h"

static void test_act_parity(void) {
    const vp_action_layout lay = vp_action_layout_env();
    const int64_t sizes[3] = {1, 257, 4099};
    for (int k = 0; k < 3; ++k) {
        const int64_t E = sizes[k];
        twin q, a, st;
        twin_2d(&q, VP_F32, E, 13), twin_2d(&a, VP_I32, E, 4), twin_1d(&st, VP_I32, 2);
        twin_rand(&q, -2.0f, 2.0f);
        if (E > 3) { /* a NaN row part and ties */
            float* qh = (float*)q.h.data;
            qh[13 + 3] = NAN, qh[2 * 13 + 0] = qh[2 * 13 + 1] = 3.0f;
            twin_push(&q);
        }
        int64_t step = 40 + k;
        CHECK_OK(vp_upload(g_cpu, &st.h, &step, sizeof step));
        CHECK_OK(vp_upload(g_gpu, &st.d, &step, sizeof step));
        vp_collect_cfg c = {1.0f, 0.05f, 100, 77, 1, VP_COLLECT_AUTO};
        CHECK_OK(vp_collect_act(g_cpu, &c, &lay, &q.h, &st.h, &a.h));
        CHECK_OK(vp_collect_act(g_gpu, &c, &lay, &q.d, &st.d, &a.d));
        CHECK_OK(vp_collect_tick(g_gpu, &st.d));
        int32_t* got = (int32_t*)malloc((size_t)E * 16);
        int64_t after = 0;
        CHECK_OK(vp_download(g_gpu, got, &a.d, (size_t)E * 16));
        CHECK_OK(vp_download(g_gpu, &after, &st.d, sizeof after));
        CHECK(memcmp(got, a.h.data, (size_t)E * 16) == 0, "E = %lld: CUDA actions differ from the CPU's", (long long)E);
        CHECK(after == step + 1, "tick on CUDA: %lld", (long long)after);
        printf("%-24s %-40s %11s %9s  %s\n", "collect_act", "", "bitwise", "0", "ok");
        free(got);
        twin_free(&q), twin_free(&a), twin_free(&st);
    }
}

/* A trainer of the test configuration on backend b (data in *d). */
static int make(vp_trainer* t, vp_train_data* d, vp_backend* b, int n, const char* const* over) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, n, over) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    if (vp_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    return 1;
}

static void test_warmup_parity_and_zero_copy(void) {
    vp_trainer tc, tg;
    vp_train_data dc, dg;
    const char* over[] = {"env.n_envs=1031", "replay.capacity=60001", "replay.warmup=20000", "learn.batch=1024",
                          "run.precision=fp32"};
    if (!make(&tc, &dc, g_cpu, 5, over)) return;
    if (!make(&tg, &dg, g_gpu, 5, over)) {
        vp_trainer_free(&tc), vp_train_data_free(&dc);
        return;
    }
    // Warm-up on both: same env state and ring, bit for bit.
    CHECK_OK(vp_trainer_warmup(&tc));
    CHECK_OK(vp_trainer_warmup(&tg));
    size_t eb = tc.env.storage.bytes;
    char *he = (char*)malloc(eb), *ge = (char*)malloc(eb);
    vp_tensor ev = vp_tensor_1d(tg.env.storage.dev, VP_I32, tg.env.storage.mem, (int64_t)(eb / 4));
    CHECK_OK(vp_download(g_gpu, ge, &ev, eb));
    memcpy(he, tc.env.storage.dev, eb);
    CHECK(memcmp(he, ge, eb) == 0, "env state after the warm-up differs");
    vp_replay_fields fc, fg;
    CHECK_OK(vp_replay_fields_get(tc.replay, &fc));
    CHECK_OK(vp_replay_fields_get(tg.replay, &fg));
    const vp_tensor* hc[4] = {&fc.bar_idx, &fc.portfolio, &fc.reward, &fc.priority};
    const vp_tensor* hg[4] = {&fg.bar_idx, &fg.portfolio, &fg.reward, &fg.priority};
    for (int i = 0; i < 4; ++i) {
        size_t n = vp_tensor_bytes(hc[i]);
        char* buf = (char*)malloc(n);
        CHECK_OK(vp_download(g_gpu, buf, hg[i], n));
        CHECK(memcmp(buf, hc[i]->data, n) == 0, "replay field %d after the warm-up differs", i);
        free(buf);
    }
    free(he), free(ge);
    printf("%-24s %-40s %11s %9s  %s\n", "warm-up", "1031 envs, 20000 transitions", "bitwise", "0", "ok");

    // One iteration captures the graph; 300 launches then copy, allocate and sync nothing.
    CHECK_OK(vp_trainer_iterate(&tg, 1));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_trainer_iterate(&tg, 300));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs,
          "300 iterations: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    printf("%-24s %-40s %11s %9s  %s\n", "iteration graph", "300 launches: copies/allocs/syncs", "0", "0",
           after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs ? "ok" : "FAIL");
    vp_train_stats st;
    CHECK_OK(vp_trainer_stats(&tg, &st));
    int32_t adam_step = 0;
    int64_t cstep = 0;
    CHECK_OK(vp_download(g_gpu, &adam_step, &tg.learner.step, sizeof adam_step));
    CHECK_OK(vp_collector_get_step(&tg.collector, &cstep));
    CHECK(adam_step == 301 && cstep == 602 && isfinite(st.learner[VP_STAT_LOSS]) && st.learner[VP_STAT_NAN_STEPS] == 0,
          "after 301 iterations: adam step %d, collection step %lld, loss %g, NaN steps %g", adam_step,
          (long long)cstep, (double)st.learner[VP_STAT_LOSS], (double)st.learner[VP_STAT_NAN_STEPS]);
    vp_trainer_free(&tc), vp_trainer_free(&tg);
    vp_train_data_free(&dc), vp_train_data_free(&dg);
}

/* Runs the test config on the GPU into dir (mode, stop point). */
static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, vp_train_result* r) {
    vp_config cfg;
    const char* over[] = {"run.backend=cuda"};
    if (!vpt_train_cfg(&cfg, 1, over)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = mode;
    o.stop_after = stop_after;
    return vp_train_run(&cfg, g_gpu, &o, r);
}

static void test_runs_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "gpu1");
    vpt_tmp_dir(d2, sizeof d2, "gpu2");
    vpt_tmp_dir(d3, sizeof d3, "gpu3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, VP_RUN_CREATE, 0, &r1));
    CHECK_OK(run(d2, VP_RUN_CREATE, 0, &r2));
    CHECK_OK(run(d3, VP_RUN_CREATE, 23, &r3));
    CHECK_OK(run(d3, VP_RUN_RESUME, 0, &r3));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "two GPU runs of one config differ");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed GPU run differs from the straight one");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    printf("%-24s %-40s %11s %9s  %s\n", "train run", "repeat; 23 + resume vs 40", "bitwise", "0",
           a && b && c && e && strcmp(a, b) == 0 && strcmp(c, e) == 0 ? "ok" : "FAIL");
    free(a), free(b), free(c), free(e);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    gpu_setup("test_gpu_train");
    RUN_TEST(test_act_parity);
    RUN_TEST(test_warmup_parity_and_zero_copy);
    RUN_TEST(test_runs_repeat_and_resume);
    gpu_teardown();
    return vpt_finish();
}
