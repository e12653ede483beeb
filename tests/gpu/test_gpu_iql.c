/* GPU test: IQL on CUDA against the CPU.
 * - the kernels (iql_impl.h): the batch sampler's rows bit for bit, the per-sample loss terms
 *   and gradients within 1e-5 relative, at odd sizes;
 * - one iteration of a trainer (FP32 products, 3 updates) on both: the same sampled rows bit
 *   for bit, the statistics within 1e-4, the parameters and the target after the updates within
 *   1e-4 relative;
 * - a captured iteration replayed 100 times makes no copy, allocation or synchronisation
 *   (vp_backend_counters), and the iterations did their work (counters read afterwards);
 * - two CUDA runs of one config give identical metrics.jsonl and checkpoints; 23 iterations +
 *   a stop + a resume equal 40 straight.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include "test_record_util.h"

#include <math.h>

#include "gpu_twin.h"

#include "learn/iql_impl.h"

static void test_kernel_parity(void) {
    const vp_iql_kernels *kc = NULL, *kg = NULL;
    CHECK_OK(vp_iql_kernels_of("test", g_cpu, &kc));
    CHECK_OK(vp_iql_kernels_of("test", g_gpu, &kg));
    if (!kc || !kg) return;
    const vp_action_layout lay = vp_action_layout_env();
    const int64_t A = lay.n_heads, P = VP_ENV_PORTFOLIO, T = 9, E = 5;
    const int64_t sizes[3] = {1, 257, 4099};
    for (int s = 0; s < 3; ++s) {
        const int64_t n = sizes[s];
        char cas[64];
        snprintf(cas, sizeof cas, "B = %lld", (long long)n);
        // a dataset of T steps of E envs with random contents, and the batch's rows
        twin dbar, dport, dact, drw, ddn, ctr, bar, port, act, rw, dn, bar1, port1;
        twin_1d(&dbar, VP_I32, (T + 1) * E), twin_2d(&dport, VP_F32, (T + 1) * E, P), twin_2d(&dact, VP_I32, T * E, 4);
        twin_1d(&drw, VP_F32, T * E), twin_1d(&ddn, VP_F32, T * E), twin_1d(&ctr, VP_I32, 2);
        twin_1d(&bar, VP_I32, n), twin_2d(&port, VP_F32, n, P), twin_2d(&act, VP_I32, n, 4), twin_1d(&rw, VP_F32, n);
        twin_1d(&dn, VP_F32, n), twin_1d(&bar1, VP_I32, n), twin_2d(&port1, VP_F32, n, P);
        int32_t* hb = (int32_t*)dbar.h.data;
        for (int64_t r = 0; r < (T + 1) * E; ++r) hb[r] = (int32_t)(100 + r);
        int32_t* ha = (int32_t*)dact.h.data;
        for (int64_t r = 0; r < T * E * 4; ++r) ha[r] = (int32_t)(r % 3);
        float* hd = (float*)ddn.h.data;
        for (int64_t r = 0; r < T * E; ++r) hd[r] = (r % 7 == 2) ? 1.0f : 0.0f;
        twin_push(&dbar), twin_push(&dact), twin_push(&ddn);
        twin_rand(&dport, -1.0f, 1.0f), twin_rand(&drw, -1.0f, 1.0f);
        const int64_t c0 = 31 + s;
        CHECK_OK(vp_upload(g_cpu, &ctr.h, &c0, sizeof c0));
        CHECK_OK(vp_upload(g_gpu, &ctr.d, &c0, sizeof c0));
        vp_iql_data_ptrs dh = {T, E, (const int32_t*)dbar.h.data, (const float*)dport.h.data,
                               (const int32_t*)dact.h.data, (const float*)drw.h.data, (const float*)ddn.h.data};
        vp_iql_data_ptrs dd = {T, E, (const int32_t*)dbar.d.data, (const float*)dport.d.data,
                               (const int32_t*)dact.d.data, (const float*)drw.d.data, (const float*)ddn.d.data};
        vp_iql_rows rh = {(int32_t*)bar.h.data, (float*)port.h.data, (int32_t*)act.h.data, (float*)rw.h.data,
                          (float*)dn.h.data, (int32_t*)bar1.h.data, (float*)port1.h.data};
        vp_iql_rows rd = {(int32_t*)bar.d.data, (float*)port.d.data, (int32_t*)act.d.data, (float*)rw.d.data,
                          (float*)dn.d.data, (int32_t*)bar1.d.data, (float*)port1.d.data};
        CHECK_OK(kc->sample(g_cpu, n, 77, VP_IQL_SAMPLE_STREAM, (const int64_t*)ctr.h.data, dh, rh));
        CHECK_OK(kg->sample(g_gpu, n, 77, VP_IQL_SAMPLE_STREAM, (const int64_t*)ctr.d.data, dd, rd));
        twin_check_bits("iql_sample bar", cas, &bar);
        twin_check_bits("iql_sample bar1", cas, &bar1);
        twin_check_bits("iql_sample portfolio", cas, &port);
        twin_check_bits("iql_sample portfolio1", cas, &port1);
        twin_check_bits("iql_sample actions", cas, &act);
        twin_check_bits("iql_sample reward", cas, &rw);
        twin_check_bits("iql_sample done", cas, &dn);
        CHECK_OK(kc->tick(g_cpu, (int64_t*)ctr.h.data));
        CHECK_OK(kg->tick(g_gpu, (int64_t*)ctr.d.data));
        twin_check_bits("iql_tick", cas, &ctr);
        // the loss terms and gradients at fresh heads' outputs
        twin q1, q2, qt1, qt2, v, v1, z, terms, dq1, dq2, dz, dv;
        twin_2d(&q1, VP_F32, n, A), twin_2d(&q2, VP_F32, n, A), twin_2d(&qt1, VP_F32, n, A), twin_2d(&qt2, VP_F32, n, A);
        twin_1d(&v, VP_F32, n), twin_1d(&v1, VP_F32, n), twin_2d(&z, VP_F32, n, A);
        twin_2d(&terms, VP_F32, n, VP_IQL_T_COUNT), twin_2d(&dq1, VP_F32, n, A), twin_2d(&dq2, VP_F32, n, A);
        twin_2d(&dz, VP_F32, n, A), twin_1d(&dv, VP_F32, n);
        twin* ins[] = {&q1, &q2, &qt1, &qt2, &v, &v1, &z};
        for (size_t i = 0; i < sizeof ins / sizeof ins[0]; ++i) twin_rand(ins[i], -2.0f, 2.0f);
        vp_iql_loss_dims ld = {n, lay, 0.7f, 3.0f, 20.0f, 0.9f};
        CHECK_OK(kc->loss(g_cpu, &ld, (const float*)q1.h.data, (const float*)q2.h.data, (const float*)qt1.h.data,
                          (const float*)qt2.h.data, (const float*)v.h.data, (const float*)v1.h.data,
                          (const float*)z.h.data, rh, (float*)terms.h.data, (float*)dq1.h.data, (float*)dq2.h.data,
                          (float*)dz.h.data, (float*)dv.h.data));
        CHECK_OK(kg->loss(g_gpu, &ld, (const float*)q1.d.data, (const float*)q2.d.data, (const float*)qt1.d.data,
                          (const float*)qt2.d.data, (const float*)v.d.data, (const float*)v1.d.data,
                          (const float*)z.d.data, rd, (float*)terms.d.data, (float*)dq1.d.data, (float*)dq2.d.data,
                          (float*)dz.d.data, (float*)dv.d.data));
        twin_check("iql_loss terms", cas, &terms, 1e-5);
        twin_check("iql_loss d q1", cas, &dq1, 1e-5);
        twin_check("iql_loss d q2", cas, &dq2, 1e-5);
        twin_check("iql_loss d logits", cas, &dz, 1e-5);
        twin_check("iql_loss d v", cas, &dv, 1e-5);
        twin* all[] = {&dbar, &dport, &dact, &drw, &ddn, &ctr, &bar, &port, &act, &rw, &dn, &bar1, &port1,
                       &q1,   &q2,    &qt1,  &qt2, &v,   &v1,  &z,   &terms, &dq1, &dq2, &dz, &dv};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
    }
}

static const char* const OVER[] = {"train.algo=iql", "iql.dataset=unused.safetensors", "iql.batch=64",
                                   "train.train_steps=3", "run.precision=fp32"};

/* An IQL trainer of the test configuration on backend b (data in *d) over a random behaviour's
 * dataset recorded on the CPU (the same rows for both backends). */
static int make(vp_iql_trainer* t, vp_train_data* d, vp_backend* b) {
    vp_config cfg;
    vp_behaviour beh;
    vp_record_cfg rc;
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    if (!vpt_record_data(d, &cfg, 5, OVER)) return 0;
    int ok = vp_behaviour_parse("random", &beh) == VP_OK && vpt_record_cfg(d, &cfg, 50, 6, 9, 30, &rc) &&
             vp_record_run(g_cpu, d, NULL, &beh, &rc, &ds) == VP_OK && vp_iql_trainer_init(t, b, &cfg, d, &ds) == VP_OK;
    CHECK(ok, "trainer: %s", vp_last_error());
    vp_offline_free(&ds);
    if (!ok) vp_train_data_free(d);
    return ok;
}

/* Downloads n bytes of a GPU tensor into a new host array (caller frees). */
static void* fetch(const vp_tensor* t, size_t n) {
    void* p = malloc(n);
    if (p) CHECK_OK(vp_download(g_gpu, p, t, n));
    return p;
}

/* Norm-wise relative error of a GPU tensor against a CPU one of n floats. */
static double rel(const vp_tensor* g, const vp_tensor* c, int64_t n) {
    float* gp = (float*)fetch(g, (size_t)n * 4);
    const float* cp = (const float*)c->data;
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; gp && i < n; ++i) {
        num += ((double)gp[i] - cp[i]) * ((double)gp[i] - cp[i]);
        den += (double)cp[i] * cp[i];
    }
    free(gp);
    return gp ? sqrt(num / fmax(den, 1e-30)) : INFINITY;
}

static void test_iteration_parity_and_zero_copy(void) {
    vp_iql_trainer tc, tg;
    vp_train_data dc, dg;
    if (!make(&tc, &dc, g_cpu)) return;
    if (!make(&tg, &dg, g_gpu)) {
        vp_iql_trainer_free(&tc), vp_train_data_free(&dc);
        return;
    }
    // one iteration on both: the same batch rows, nearly the same parameters and target
    CHECK_OK(vp_iql_trainer_iterate(&tc, 1));
    CHECK_OK(vp_iql_trainer_iterate(&tg, 1));
    CHECK_OK(vp_backend_sync(g_gpu));
    const size_t nb = (size_t)tc.ic.batch * 4;
    int32_t* gb = (int32_t*)fetch(&tg.m_bar, nb);
    int32_t* ga = (int32_t*)fetch(&tg.m_act, nb * 4);
    const int same = gb && ga && memcmp(gb, tc.m_bar.data, nb) == 0 && memcmp(ga, tc.m_act.data, nb * 4) == 0;
    twin_row("iql iteration", "the last batch's bars and actions", same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "the CUDA batch's bars or actions differ from the CPU's");
    free(gb), free(ga);
    const double ep = rel(&tg.net.params, &tc.net.params, tc.net.n_weights);
    const double et = rel(&tg.target, &tc.target, tc.net.n_target);
    twin_row("iql iteration", "parameters after 3 updates", ep, 1e-4, ep <= 1e-4);
    twin_row("iql iteration", "target after 3 updates", et, 1e-4, et <= 1e-4);
    CHECK(ep <= 1e-4 && et <= 1e-4, "after one iteration: parameters relative error %.3e, target %.3e", ep, et);
    double sc[VP_IQL_STAT_COUNT], sg[VP_IQL_STAT_COUNT], gnc = 0.0, gng = 0.0;
    CHECK_OK(vp_iql_trainer_stats(&tc, sc, &gnc));
    CHECK_OK(vp_iql_trainer_stats(&tg, sg, &gng));
    for (int i = 0; i < VP_IQL_STAT_COUNT; ++i)
        CHECK(fabs(sc[i] - sg[i]) <= 1e-4 * fmax(1.0, fabs(sc[i])), "statistic %d: CPU %.7g, CUDA %.7g", i, sc[i], sg[i]);
    CHECK(fabs(gnc - gng) <= 1e-4 * fmax(1.0, gnc), "grad norm: CPU %.7g, CUDA %.7g", gnc, gng);

    // the captured iteration: 100 launches copy, allocate and sync nothing
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_iql_trainer_iterate(&tg, 100));
    vp_backend_counters(g_gpu, &after);
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    CHECK(zero, "100 iterations: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    twin_row("iql iteration graph", "100 launches: copies/allocs/syncs", 0.0, 0.0, zero);
    int64_t ctr = 0;
    int32_t step = 0;
    CHECK_OK(vp_download(g_gpu, &ctr, &tg.ctr, sizeof ctr));
    CHECK_OK(vp_download(g_gpu, &step, &tg.adam_step, sizeof step));
    CHECK_OK(vp_iql_trainer_stats(&tg, sg, &gng));
    CHECK(ctr == 101 * 3 && step == 101 * 3 && isfinite(gng) && isfinite(sg[VP_IQL_STAT_Q]),
          "after 101 iterations: %lld updates drawn, adam step %d, grad norm %g", (long long)ctr, step, gng);
    vp_iql_trainer_free(&tc), vp_iql_trainer_free(&tg);
    vp_train_data_free(&dc), vp_train_data_free(&dg);
}

/* Runs the IQL test config on the GPU into dir (mode, stop point) over the dataset at ds_path. */
static vp_status run(const char* dir, const char* ds_path, vp_run_mode mode, int64_t stop_after, vp_train_result* r) {
    vp_config cfg;
    const char* over[] = {"train.algo=iql", "iql.batch=64", "run.backend=cuda"};
    if (!vpt_train_cfg(&cfg, 3, over)) return VP_ERR_STATE;
    snprintf(cfg.iql.dataset, sizeof cfg.iql.dataset, "%s", ds_path);
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = mode;
    o.stop_after = stop_after;
    return vp_train_run(&cfg, g_gpu, &o, r);
}

static void test_runs_repeat_and_resume(void) {
    char d1[400], d2[400], d3[400], ds_path[480];
    vpt_tmp_dir(d1, sizeof d1, "gpuiql1");
    vpt_tmp_dir(d2, sizeof d2, "gpuiql2");
    vpt_tmp_dir(d3, sizeof d3, "gpuiql3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    snprintf(ds_path, sizeof ds_path, "%s.dataset.safetensors", d1);
    // the dataset: the random behaviour on the training span
    vp_config cfg;
    vp_train_data d;
    vp_behaviour beh;
    vp_record_cfg rc;
    vp_offline_data ds;
    memset(&ds, 0, sizeof ds);
    if (!vpt_record_data(&d, &cfg, 3, OVER)) return;
    CHECK_OK(vp_behaviour_parse("random", &beh));
    CHECK(vpt_record_cfg(&d, &cfg, 50, 6, 9, 30, &rc), "record config");
    CHECK_OK(vp_record_run(g_cpu, &d, NULL, &beh, &rc, &ds));
    CHECK_OK(vp_offline_save(&ds, ds_path));
    vp_offline_free(&ds);
    vp_train_data_free(&d);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, ds_path, VP_RUN_CREATE, 0, &r1));
    CHECK_OK(run(d2, ds_path, VP_RUN_CREATE, 0, &r2));
    CHECK_OK(run(d3, ds_path, VP_RUN_CREATE, 23, &r3));
    CHECK_OK(run(d3, ds_path, VP_RUN_RESUME, 0, &r3));
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "two GPU IQL runs of one config differ");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed GPU IQL run differs");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    twin_row("iql train run", "repeat; 23 + resume vs 40", 0.0, 0.0,
             a && b && c && e && strcmp(a, b) == 0 && strcmp(c, e) == 0);
    free(a), free(b), free(c), free(e);
    remove(ds_path);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    gpu_setup("test_gpu_iql");
    RUN_TEST(test_kernel_parity);
    RUN_TEST(test_iteration_parity_and_zero_copy);
    RUN_TEST(test_runs_repeat_and_resume);
    gpu_teardown();
    return vpt_finish();
}
