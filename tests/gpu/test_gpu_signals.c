/* GPU test: the training-signal bus on CUDA.
 * - the bus kernel on CUDA equals the CPU's on the same batch (random distributions, Q values,
 *   gradients and transitions; B = 1, 257, 1031 of the env's 13 heads and 51 atoms), over two
 *   steps, the second applying all four rules; the schedule kernel equals the host formula;
 * - AdamW with its rate in memory and the clip with its threshold in memory give the plain
 *   ops' bits on CUDA; epsilon-greedy actions with the epsilon factor in device memory (0, 0.5,
 *   3) equal the CPU's bit for bit;
 * - a captured iteration with every switch on (four rules every 3 learner steps, warm-up
 *   cosine) replayed 300 times makes no copy, allocation or synchronisation, and the bus
 *   counted 301 steps and 100 rule applications;
 * - with every switch on, two GPU runs give identical metrics.jsonl (timing aside) and
 *   checkpoints, and 23 iterations + a stop + a resume equal 40 straight.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include "test_train_util.h"

#include <math.h>

#include "gpu_twin.h"
#include "learn/signal_impl.h"
#include "vulpes/collect.h"

/* Relative tolerance of the bus: sums in double joined in another order, expf and exp of
 * the two libraries, FMA contraction in the float finish. */
#define TOL_BUS 1e-5

/* Log-softmax rows of random logits on the host side, pushed. */
static void random_log_probs(twin* t, int64_t rows, int Z) {
    twin_rand(t, -3.0f, 3.0f);
    float* x = (float*)t->h.data;
    for (int64_t r = 0; r < rows; ++r) {
        float* row = x + r * Z;
        double m = row[0], s = 0.0;
        for (int j = 1; j < Z; ++j) m = row[j] > m ? row[j] : m;
        for (int j = 0; j < Z; ++j) s += exp((double)row[j] - m);
        for (int j = 0; j < Z; ++j) row[j] = (float)((double)row[j] - m - log(s));
    }
    twin_push(t);
}

static void test_bus_parity(void) {
    const vp_action_layout lay = vp_action_layout_env();
    const int64_t sizes[3] = {1, 257, 1031};
    const int A = lay.n_heads, Z = 51;
    for (int c = 0; c < 3; ++c) {
        const int64_t B = sizes[c];
        vp_sig_params p;
        memset(&p, 0, sizeof p);
        p.batch = B, p.n_actions = A, p.n_branches = lay.n_branches, p.n_atoms = Z;
        for (int br = 0; br < lay.n_branches; ++br) p.branch_size[br] = lay.size[br], p.branch_offset[br] = lay.offset[br];
        p.v_min = -10.0f, p.dz = 20.0f / (float)(Z - 1), p.fast_rate = 0.1f, p.slow_rate = 0.01f, p.every = 2.0f;
        p.rules = VP_SIG_RULE_TAU | VP_SIG_RULE_EPS | VP_SIG_RULE_GAMMA | VP_SIG_RULE_KELLY;
        p.tau0 = 0.005f, p.tau_min = 1e-4f, p.tau_max = 0.05f, p.div_ref = 0.1f;
        p.eps_gain = 1.0f, p.eps_min = 0.5f, p.eps_max = 2.0f;
        p.gamma0 = 0.99f, p.gamma_min = 0.9f, p.gamma_max = 0.999f, p.gamma_rate = 0.01f, p.n_step = 3;
        p.kelly_fraction = 0.5f, p.kelly_min = 0.0f;
        twin lp, dlp, q, qn, qt, act, ast, rw, dc, st, ctl, sig, part;
        twin_1d(&part, VP_F32, 2 * VP_SIG_PARTIAL_DOUBLES);
        twin_2d(&lp, VP_F32, B * A, Z), twin_2d(&dlp, VP_F32, B * A, Z);
        twin_2d(&q, VP_F32, B, A), twin_2d(&qn, VP_F32, B, A), twin_2d(&qt, VP_F32, B, A);
        twin_2d(&act, VP_I32, B, lay.n_branches), twin_2d(&ast, VP_I32, B, lay.n_branches);
        twin_1d(&rw, VP_F32, B), twin_1d(&dc, VP_F32, B), twin_1d(&st, VP_F32, VP_STAT_COUNT);
        twin_1d(&ctl, VP_F32, VP_CTL_COUNT), twin_1d(&sig, VP_F32, VP_SIG_COUNT);
        random_log_probs(&lp, B * A, Z);
        twin_rand(&dlp, -1e-3f, 1e-3f), twin_rand(&q, -2.0f, 2.0f), twin_rand(&qn, -2.0f, 2.0f);
        twin_rand(&qt, -2.0f, 2.0f), twin_rand(&act, 0.0f, 3.0f), twin_rand(&ast, 0.0f, 3.0f);
        twin_rand(&rw, -1.0f, 1.0f), twin_rand(&dc, 0.0f, 1.0f), twin_rand(&st, 1.0f, 2.0f);
        twin_rand(&ctl, 0.5f, 1.0f), twin_poison_with(&sig, 0.0f);
        // the last size on a learned support (adaptive atoms): branch br's atoms on a curve of its own
        twin sup;
        twin_2d(&sup, VP_F32, lay.n_branches, Z);
        for (int br = 0; br < lay.n_branches; ++br)
            for (int j = 0; j < Z; ++j) {
                const double u = (double)j / (double)(Z - 1);
                ((float*)sup.h.data)[br * Z + j] = (float)(-10.0 + 20.0 * pow(u, 1.0 + 0.25 * br));
            }
        twin_push(&sup);
        const int learned = c == 2;
        // two steps: the first starts the EMAs, the second (other loss and rewards) runs the rules
        for (int step = 0; step < 2; ++step) {
            if (step == 1) twin_rand(&st, 2.0f, 3.0f), twin_rand(&rw, -1.0f, 1.0f);
            vp_sig_inputs hi = {(const float*)lp.h.data,  (const float*)dlp.h.data, (const float*)q.h.data,
                                (const float*)qn.h.data,  (const float*)qt.h.data,  (const int32_t*)act.h.data,
                                (const int32_t*)ast.h.data, (const float*)rw.h.data, (const float*)dc.h.data,
                                (const float*)st.h.data, learned ? (const float*)sup.h.data : NULL};
            vp_sig_inputs di = {(const float*)lp.d.data,  (const float*)dlp.d.data, (const float*)q.d.data,
                                (const float*)qn.d.data,  (const float*)qt.d.data,  (const int32_t*)act.d.data,
                                (const int32_t*)ast.d.data, (const float*)rw.d.data, (const float*)dc.d.data,
                                (const float*)st.d.data, learned ? (const float*)sup.d.data : NULL};
            CHECK_OK(vp_sig_cpu.bus(g_cpu, &p, &hi, (float*)ctl.h.data, (float*)sig.h.data, NULL));
            CHECK_OK(vp_sig_cuda.bus(g_gpu, &p, &di, (float*)ctl.d.data, (float*)sig.d.data, (double*)part.d.data));
        }
        char cas[64];
        snprintf(cas, sizeof cas, "B %lld, 2 steps, 4 rules%s", (long long)B, learned ? ", learned support" : "");
        twin_check("signal bus", cas, &sig, TOL_BUS);
        twin_check("signal controls", cas, &ctl, TOL_BUS);
        CHECK(((const float*)sig.h.data)[VP_SIG_RULE_RUNS] == 1.0f, "rule runs on the CPU");
        twin_free(&lp), twin_free(&dlp), twin_free(&q), twin_free(&qn), twin_free(&qt), twin_free(&act);
        twin_free(&ast), twin_free(&rw), twin_free(&dc), twin_free(&st), twin_free(&ctl), twin_free(&sig);
        twin_free(&part), twin_free(&sup);
    }
    // the schedule kernel against the host formula, through the warm-up and the cosine
    twin stp, lr;
    twin_1d(&stp, VP_I32, 1), twin_1d(&lr, VP_F32, 1);
    for (int32_t s = 1; s <= 40; s += 3) {
        CHECK_OK(vp_upload(g_gpu, &stp.d, &s, sizeof s));
        CHECK_OK(vp_sig_cuda.sched(g_gpu, VP_LR_WARMUP_COSINE, 1e-3f, 5, 40, (const int32_t*)stp.d.data,
                                   (float*)lr.d.data));
        float got = 0.0f;
        CHECK_OK(vp_download(g_gpu, &got, &lr.d, sizeof got));
        vp_signals_cfg sc = vp_signals_cfg_default();
        sc.lr_schedule = VP_LR_WARMUP_COSINE, sc.warmup_steps = 5, sc.total_steps = 40;
        const float want = vp_signals_lr_at(&sc, 1e-3f, s - 1);
        CHECK(fabsf(got - want) <= 1e-6f * want + 1e-12f, "schedule at step %d: CUDA %.9g, host %.9g", (int)s,
              (double)got, (double)want);
    }
    twin_row("lr schedule", "warm-up cosine, 14 steps", 0.0, 1e-6, 1);
    twin_free(&stp), twin_free(&lr);
}

/* AdamW with lr in memory and the clip with its threshold in memory: the plain ops' bits. */
static void test_ops_in_memory(void) {
    const int64_t n = 100003;
    twin p1, p2, g, m1, m2, v1, v2, st, lr, mx, n1, c1, n2, c2;
    twin_1d(&p1, VP_F32, n), twin_1d(&p2, VP_F32, n), twin_1d(&g, VP_F32, n), twin_1d(&m1, VP_F32, n);
    twin_1d(&m2, VP_F32, n), twin_1d(&v1, VP_F32, n), twin_1d(&v2, VP_F32, n), twin_1d(&st, VP_I32, 1);
    twin_1d(&lr, VP_F32, 1), twin_1d(&mx, VP_F32, 1), twin_1d(&n1, VP_F32, 1), twin_1d(&c1, VP_F32, 1);
    twin_1d(&n2, VP_F32, 1), twin_1d(&c2, VP_F32, 1);
    twin_rand(&p1, -1.0f, 1.0f), twin_rand(&g, -1.0f, 1.0f);
    CHECK_OK(vp_copy(g_gpu, &p1.d, &p2.d));
    twin_poison_with(&m1, 0.0f), twin_poison_with(&m2, 0.0f), twin_poison_with(&v1, 0.0f), twin_poison_with(&v2, 0.0f);
    twin_poison_with(&lr, 3e-3f), twin_poison_with(&mx, 1.5f);
    const int32_t one = 1;
    CHECK_OK(vp_upload(g_gpu, &st.d, &one, sizeof one));
    CHECK_OK(vp_clip_coef(g_gpu, &g.d, 1.5f, &n1.d, &c1.d));
    CHECK_OK(vp_clip_coef_at(g_gpu, &g.d, &mx.d, &n2.d, &c2.d));
    const vp_adamw_cfg cfg = {3e-3f, 0.9f, 0.999f, 1.5e-4f, 0.01f};
    CHECK_OK(vp_adamw(g_gpu, &cfg, &p1.d, &g.d, &m1.d, &v1.d, &st.d, &c1.d));
    CHECK_OK(vp_adamw_lr(g_gpu, &cfg, &lr.d, &p2.d, &g.d, &m2.d, &v2.d, &st.d, &c2.d));
    float* a = (float*)twin_fetch(&p1);
    float* b = (float*)twin_fetch(&p2);
    float* ca = (float*)twin_fetch(&c1);
    float* cb = (float*)twin_fetch(&c2);
    const int ok = a && b && ca && cb && memcmp(a, b, (size_t)n * 4) == 0 && ca[0] == cb[0];
    twin_row("adamw_lr, clip_coef_at", "100003, vs the plain ops", ok ? 0.0 : 1.0, 0.0, ok);
    CHECK(ok, "AdamW or the clip with their scalars in memory differ from the plain ops on CUDA");
    free(a), free(b), free(ca), free(cb);
    twin_free(&p1), twin_free(&p2), twin_free(&g), twin_free(&m1), twin_free(&m2), twin_free(&v1), twin_free(&v2);
    twin_free(&st), twin_free(&lr), twin_free(&mx), twin_free(&n1), twin_free(&c1), twin_free(&n2), twin_free(&c2);
}

/* Epsilon-greedy actions with the factor in device memory: CUDA's equal the CPU's bit for bit. */
static void test_act_scaled_parity(void) {
    const vp_action_layout lay = vp_action_layout_env();
    const int64_t E = 4099;
    const float scales[3] = {0.0f, 0.5f, 3.0f};
    for (int k = 0; k < 3; ++k) {
        twin q, a, st, sc;
        twin_2d(&q, VP_F32, E, lay.n_heads), twin_2d(&a, VP_I32, E, 4), twin_1d(&st, VP_I32, 2), twin_1d(&sc, VP_F32, 1);
        twin_rand(&q, -2.0f, 2.0f), twin_poison_with(&sc, scales[k]);
        const int64_t step = 17;
        CHECK_OK(vp_upload(g_cpu, &st.h, &step, sizeof step));
        CHECK_OK(vp_upload(g_gpu, &st.d, &step, sizeof step));
        vp_collect_cfg c = {0.6f, 0.05f, 100, 77, 1, VP_COLLECT_AUTO};
        CHECK_OK(vp_collect_act_scaled(g_cpu, &c, &lay, &q.h, &st.h, &sc.h, &a.h));
        CHECK_OK(vp_collect_act_scaled(g_gpu, &c, &lay, &q.d, &st.d, &sc.d, &a.d));
        char cas[64];
        snprintf(cas, sizeof cas, "4099 envs, epsilon factor %g", (double)scales[k]);
        twin_check_bits("collect_act_scaled", cas, &a);
        twin_free(&q), twin_free(&a), twin_free(&st), twin_free(&sc);
    }
}

static const char* const ALL_ON[] = {"signals.adapt_tau=true", "signals.adapt_epsilon=true",
                                     "signals.adapt_gamma=true", "signals.kelly=true",
                                     "signals.every=3",        "learn.lr_schedule=warmup_cosine",
                                     "learn.warmup_steps=5",   "run.backend=cuda"};

static void test_graph_all_on(void) {
    const char* over[] = {"signals.adapt_tau=true", "signals.adapt_epsilon=true", "signals.adapt_gamma=true",
                          "signals.kelly=true", "signals.every=3", "learn.lr_schedule=warmup_cosine",
                          "learn.warmup_steps=50", "env.n_envs=1031", "replay.capacity=60001",
                          "replay.warmup=20000", "learn.batch=1024", "train.iterations=400"};
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    if (!vpt_train_cfg(&cfg, 12, over) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "config or data: %s", vp_last_error());
        return;
    }
    if (vp_trainer_init(&t, g_gpu, &cfg, &d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(&d);
        return;
    }
    CHECK_OK(vp_trainer_warmup(&t));
    // one iteration captures the graph; 300 launches then copy, allocate and sync nothing
    CHECK_OK(vp_trainer_iterate(&t, 1));
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_trainer_iterate(&t, 300));
    vp_backend_counters(g_gpu, &after);
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    CHECK(zero, "300 iterations with every switch on: copies +%lld, allocs +%lld, syncs +%lld",
          (long long)(after.copies - before.copies), (long long)(after.allocs - before.allocs),
          (long long)(after.syncs - before.syncs));
    printf("%-24s %-40s %11s %9s  %s\n", "iteration graph", "every switch on, 300 launches", "0", "0",
           zero ? "ok" : "FAIL");
    vp_train_stats st;
    CHECK_OK(vp_trainer_stats(&t, &st));
    const float* s = t.learner.signals_host;
    vp_signals_cfg sc = t.learner.cfg.signals;
    CHECK(s[VP_SIG_STEPS] == 301.0f && s[VP_SIG_RULE_RUNS] == 100.0f && isfinite(s[VP_SIG_LOSS_FAST]) &&
              fabsf(s[VP_SIG_LR] - vp_signals_lr_at(&sc, t.learner.cfg.adamw.lr, 300)) <=
                  1e-6f * vp_signals_lr_at(&sc, t.learner.cfg.adamw.lr, 300),
          "after 301 iterations: bus steps %g, rule runs %g, loss EMA %g, lr %g", (double)s[VP_SIG_STEPS],
          (double)s[VP_SIG_RULE_RUNS], (double)s[VP_SIG_LOSS_FAST], (double)s[VP_SIG_LR]);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
}

/* Runs the test config on the GPU with every switch on into dir (mode, stop point). */
static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, vp_train_result* r) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, 8, ALL_ON)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = mode;
    o.stop_after = stop_after;
    return vp_train_run(&cfg, g_gpu, &o, r);
}

static void test_runs_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "gsig1");
    vpt_tmp_dir(d2, sizeof d2, "gsig2");
    vpt_tmp_dir(d3, sizeof d3, "gsig3");
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
    CHECK(a && b && strcmp(a, b) == 0, "two GPU runs with every switch on differ");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed GPU run differs from the straight one");
    CHECK(c && strstr(c, "\"sig.rule_runs\":13"), "the last train line lacks 13 rule applications");
    const int same = vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
                     vpt_same_file(d1, d3, "best.safetensors");
    CHECK(same, "checkpoints differ");
    printf("%-24s %-40s %11s %9s  %s\n", "train run, switches on", "repeat; 23 + resume vs 40", "bitwise", "0",
           a && b && c && e && same && strcmp(a, b) == 0 && strcmp(c, e) == 0 ? "ok" : "FAIL");
    free(a), free(b), free(c), free(e);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    gpu_setup("test_gpu_signals");
    RUN_TEST(test_bus_parity);
    RUN_TEST(test_ops_in_memory);
    RUN_TEST(test_act_scaled_parity);
    RUN_TEST(test_graph_all_on);
    RUN_TEST(test_runs_repeat_and_resume);
    gpu_teardown();
    return vpt_finish();
}
