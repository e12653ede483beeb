/* Training runs on the encode-once collection path (CPU): the test config with 40 envs and
 * train.collect_steps = 24 (960 windows per collection against a span of about 860 bars):
 * two runs give identical metrics.jsonl (timing lines aside) and checkpoints; 23
 * iterations + a stop + a resume equal 40 straight (train and eval lines, last and best
 * checkpoints); the counters count 24 x 40 env steps per iteration. */
#include "test_train_util.h"
#include "vp_test.h"

static const char* const OVER[] = {"env.n_envs=40", "train.collect_steps=24", "env.episode_bars=7",
                                   "replay.warmup=120"};

static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, vp_train_result* r) {
    return vpt_train_run(dir, mode, stop_after, NULL, 4, OVER, r);
}

static void test_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "once1");
    vpt_tmp_dir(d2, sizeof d2, "once2");
    vpt_tmp_dir(d3, sizeof d3, "once3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, VP_RUN_CREATE, 0, &r1));
    CHECK_OK(run(d2, VP_RUN_CREATE, 0, &r2));
    CHECK_OK(run(d3, VP_RUN_CREATE, 23, &r3));
    CHECK(r3.interrupted == 1 && r3.count.iteration == 23, "stopped at %lld", (long long)r3.count.iteration);
    CHECK_OK(run(d3, VP_RUN_RESUME, 0, &r3));
    // 3 warm-up steps of 40 envs, then 40 iterations of 24 steps.
    CHECK(r1.count.iteration == 40 && r1.count.env_steps == 120 + 40 * 24 * 40 && r1.count.collect_steps == 960 &&
              r3.count.env_steps == r1.count.env_steps,
          "counters: %lld iterations, %lld env steps, %lld collection steps (resumed: %lld env steps)",
          (long long)r1.count.iteration, (long long)r1.count.env_steps, (long long)r1.count.collect_steps,
          (long long)r3.count.env_steps);
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    CHECK(a && b && strcmp(a, b) == 0, "two runs of one config differ");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed run differs from the straight one");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    free(a), free(b), free(c), free(e);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

int main(void) {
    RUN_TEST(test_repeat_and_resume);
    return vpt_finish();
}
