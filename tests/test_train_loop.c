/* Tests of the training loop on the CPU: no copy, allocation or sync across iterations
 * (the backend's counters), the counters the iterations advance, the files of a run folder,
 * determinism (two runs of one config give the same metrics.jsonl, timing lines aside, and
 * byte-identical checkpoints; another seed does not), the epsilon schedule in the logs and
 * the refusal of a used run folder. */
#include <math.h>

#include "test_train_util.h"
#include "vp_test.h"

/* A trainer on the test configuration (data in *d); returns 0 on failure. */
static int trainer_make(vp_trainer* t, vp_train_data* d, vp_backend* b, const vp_config* cfg) {
    if (vp_train_data_load(d, cfg) != VP_OK) {
        CHECK(0, "data: %s", vp_last_error());
        return 0;
    }
    if (vp_trainer_init(t, b, cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    return 1;
}

static void test_iterations_copy_nothing(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_config cfg;
    vp_trainer t;
    vp_train_data d;
    if (!b || !vpt_train_cfg(&cfg, 0, NULL) || !trainer_make(&t, &d, b, &cfg)) return;
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK(t.count.warmup_steps == (200 + 6) / 7, "warm-up steps %lld", (long long)t.count.warmup_steps);
    // First iteration captures the graph; then 25 launches must touch no counter.
    CHECK_OK(vp_trainer_iterate(&t, 1));
    vp_runtime_counters before, after;
    vp_backend_counters(b, &before);
    CHECK_OK(vp_trainer_iterate(&t, 25));
    vp_backend_counters(b, &after);
    CHECK(after.copies == before.copies, "copies %lld -> %lld", (long long)before.copies, (long long)after.copies);
    CHECK(after.allocs == before.allocs, "allocs %lld -> %lld", (long long)before.allocs, (long long)after.allocs);
    CHECK(after.syncs == before.syncs, "syncs %lld -> %lld", (long long)before.syncs, (long long)after.syncs);
    // The iterations did their work: counters on both sides agree.
    CHECK(t.count.iteration == 26 && t.count.learner_steps == 26 && t.count.collect_steps == 52,
          "counters %lld %lld %lld", (long long)t.count.iteration, (long long)t.count.learner_steps,
          (long long)t.count.collect_steps);
    CHECK(t.count.env_steps == (29 + 52) * 7, "env steps %lld", (long long)t.count.env_steps);
    int32_t adam_step = 0;
    int64_t cstep = 0;
    CHECK_OK(vp_download(b, &adam_step, &t.learner.step, sizeof adam_step));
    CHECK_OK(vp_collector_get_step(&t.collector, &cstep));
    CHECK(adam_step == 26 && cstep == 52, "adam step %d, collection step %lld", adam_step, (long long)cstep);
    vp_replay_stats rs;
    CHECK_OK(vp_replay_stats_read(t.replay, &rs));
    CHECK(rs.pushes == 29 + 52 && rs.sample_step == 26, "replay pushes %lld, samples %lld", (long long)rs.pushes,
          (long long)rs.sample_step);
    vp_train_stats st;
    CHECK_OK(vp_trainer_stats(&t, &st));
    CHECK(isfinite(st.learner[VP_STAT_LOSS]) && st.learner[VP_STAT_LOSS] > 0 && st.learner[VP_STAT_NAN_STEPS] == 0,
          "loss %g, NaN steps %g", (double)st.learner[VP_STAT_LOSS], (double)st.learner[VP_STAT_NAN_STEPS]);
    CHECK(st.epsilon == vp_collect_epsilon(&t.parts.collect, 52), "epsilon %g", (double)st.epsilon);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* Runs the test configuration (plus overrides) into dir; returns 0 on failure. */
static int run_into(const char* dir, int n, const char* const* over, vp_train_result* r) {
    vp_backend* b = NULL;
    vp_config cfg;
    if (vp_backend_cpu_init(&b) != VP_OK || !vpt_train_cfg(&cfg, n, over)) return 0;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    vp_status s = vp_train_run(&cfg, b, &o, r);
    vp_backend_free(b);
    CHECK(s == VP_OK, "run into %s: %s", dir, vp_last_error());
    return s == VP_OK;
}

static void test_same_seed_same_numbers(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "det1");
    vpt_tmp_dir(d2, sizeof d2, "det2");
    vpt_tmp_dir(d3, sizeof d3, "det3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    const char* seed8[] = {"run.seed=8"};
    if (!run_into(d1, 0, NULL, &r1) || !run_into(d2, 0, NULL, &r2) || !run_into(d3, 1, seed8, &r3)) return;
    // Every event but "timing" is the same, line for line.
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d3, "train");
    CHECK(a && b && strcmp(a, b) == 0, "metrics.jsonl of two identical runs differ");
    char* at = vpt_metrics_lines(d1, "train");
    CHECK(vpt_count_lines(at) == 8, "%d train lines (40 iterations, log every 5)", vpt_count_lines(at));
    char* ae = vpt_metrics_lines(d1, "eval");
    CHECK(vpt_count_lines(ae) == 4, "%d eval lines (eval every 10)", vpt_count_lines(ae));
    char* ac = vpt_metrics_lines(d1, "checkpoint");
    CHECK(strstr(ac, "\"reason\":\"periodic\"") && strstr(ac, "\"reason\":\"final\"") &&
              vpt_count_lines(ac) >= 4,
          "checkpoint events: %s", ac);
    CHECK(at && c && strcmp(at, c) != 0, "another seed gave the same train lines");
    // The checkpoints are byte for byte the same.
    size_t n1 = 0, n2 = 0;
    char* f1 = vpt_read_file(d1, "last.safetensors", &n1);
    char* f2 = vpt_read_file(d2, "last.safetensors", &n2);
    CHECK(f1 && f2 && n1 == n2 && n1 > 0 && memcmp(f1, f2, n1) == 0, "last.safetensors differ (%zu, %zu bytes)", n1, n2);
    char* g1 = vpt_read_file(d1, "best.safetensors", &n1);
    char* g2 = vpt_read_file(d2, "best.safetensors", &n2);
    CHECK(g1 && g2 && n1 == n2 && memcmp(g1, g2, n1) == 0, "best.safetensors differ");
    CHECK(r1.test.strategy.sharpe == r2.test.strategy.sharpe || (isnan(r1.test.strategy.sharpe) &&
          isnan(r2.test.strategy.sharpe)), "test Sharpe %g vs %g", r1.test.strategy.sharpe, r2.test.strategy.sharpe);
    free(a), free(b), free(c), free(at), free(ae), free(ac), free(f1), free(f2), free(g1), free(g2);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

static void test_run_folder(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "files");
    vpt_rm_run(dir);
    vp_train_result r;
    const char* over[] = {"train.iterations=12", "train.checkpoint_every=0"};
    if (!run_into(dir, 2, over, &r)) return;
    CHECK(!r.interrupted && r.count.iteration == 12 && strcmp(r.run_dir, dir) == 0, "result: %lld iterations in %s",
          (long long)r.count.iteration, r.run_dir);
    // The files of a run, no temporary left behind.
    static const char* files[] = {"config.yaml", "metrics.jsonl", "last.safetensors", "summary.json"};
    for (int i = 0; i < 4; ++i) {
        char* f = vpt_read_file(dir, files[i], NULL);
        CHECK(f != NULL && f[0] != '\0', "%s missing or empty", files[i]);
        free(f);
    }
    char* tmp = vpt_read_file(dir, "last.safetensors.tmp", NULL);
    CHECK(tmp == NULL, "a temporary checkpoint was left behind");
    free(tmp);
    char* sum = vpt_read_file(dir, "summary.json", NULL);
    CHECK(sum && strstr(sum, "\"finished\":\ttrue") && strstr(sum, "\"test\"") && strstr(sum, "\"buy_and_hold\"") &&
              strstr(sum, "\"final_validation\""),
          "summary.json: %s", sum ? sum : "(none)");
    free(sum);
    // The test span was scored over whole windows of the span.
    CHECK(r.test.windows >= 1 && r.test.window_bars >= 61 && r.test.strategy.n_returns == r.test.windows * r.test.window_bars,
          "test: %lld windows of %lld bars, %lld returns", (long long)r.test.windows, (long long)r.test.window_bars,
          (long long)r.test.strategy.n_returns);
    // Epsilon in the logs: 2 collection steps per iteration, 1 -> 0.05 over 50.
    char* tr = vpt_metrics_lines(dir, "train");
    const char* at5 = tr ? strstr(tr, "\"iteration\":5,") : NULL;
    const char* e = at5 ? strstr(at5, "\"epsilon\":") : NULL;
    vp_collect_cfg cc = {1.0f, 0.05f, 50, 0};
    CHECK(e && fabs(strtod(e + 10, NULL) - (double)vp_collect_epsilon(&cc, 10)) < 1e-7 &&
              fabs((double)vp_collect_epsilon(&cc, 10) - 0.81) < 1e-6,
          "epsilon at iteration 5: %s", e ? e : "(none)");
    free(tr);
    // A used folder is refused without --force, reused with it.
    vp_backend* b = NULL;
    vp_config cfg;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (b && vpt_train_cfg(&cfg, 2, over)) {
        vp_train_opts o = vp_train_opts_default();
        o.run_dir = dir;
        CHECK_STATUS(vp_train_run(&cfg, b, &o, &r), VP_ERR_STATE, "--force");
        o.mode = VP_RUN_FORCE;
        CHECK_OK(vp_train_run(&cfg, b, &o, &r));
    }
    vp_backend_free(b);
    vpt_rm_run(dir);
}

int main(void) {
    RUN_TEST(test_iterations_copy_nothing);
    RUN_TEST(test_same_seed_same_numbers);
    RUN_TEST(test_run_folder);
    return vpt_finish();
}
