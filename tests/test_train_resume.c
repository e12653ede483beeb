/* Tests of resuming on the CPU: 40 iterations straight against 23 + a stop (as Ctrl-C does)
 * + a resume to 40 give the same train and eval lines and byte-identical final checkpoints,
 * also when the interrupted run logged past its checkpoint before dying; a resume refuses
 * a changed config key (naming it) and a folder without a checkpoint; the metrics trim. */
#include <math.h>

#include "test_train_util.h"
#include "vp_test.h"

/* Runs the test config (plus overrides) in dir with the given mode and stop point. */
static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, int n, const char* const* over,
                     vp_train_result* r) {
    return vpt_train_run(dir, mode, stop_after, NULL, n, over, r);
}

/* Appends text to dir/metrics.jsonl. */
static void append_metrics(const char* dir, const char* text) {
    char p[1200];
    snprintf(p, sizeof p, "%s/metrics.jsonl", dir);
    FILE* f = fopen(p, "ab");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_resume_is_bit_identical(void) {
    char d1[512], d2[512];
    vpt_tmp_dir(d1, sizeof d1, "straight");
    vpt_tmp_dir(d2, sizeof d2, "resumed");
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, VP_RUN_CREATE, 0, 0, NULL, &r1));
    // Stop after 23 iterations, as on Ctrl-C: a checkpoint, no summary of a finished run.
    CHECK_OK(run(d2, VP_RUN_CREATE, 23, 0, NULL, &r2));
    CHECK(r2.interrupted == 1 && r2.count.iteration == 23, "stopped at %lld (interrupted %d)",
          (long long)r2.count.iteration, r2.interrupted);
    char* sum = vpt_read_file(d2, "summary.json", NULL);
    CHECK(sum && strstr(sum, "\"finished\":\tfalse"), "summary of a stopped run: %s", sum ? sum : "(none)");
    free(sum);
    // A crash after the checkpoint would have left later lines and half a line: a resume drops them.
    append_metrics(d2, "{\"event\":\"train\",\"iteration\":25,\"loss\":1}\n{\"event\":\"train\",\"itera");
    CHECK_OK(run(d2, VP_RUN_RESUME, 0, 0, NULL, &r3));
    CHECK(!r3.interrupted && r3.count.iteration == 40 && r3.count.env_steps == r1.count.env_steps &&
              r3.count.learner_steps == r1.count.learner_steps,
          "resumed run ended at %lld iterations, %lld env steps", (long long)r3.count.iteration,
          (long long)r3.count.env_steps);
    // Same numbers, line for line, and the same files, byte for byte.
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    CHECK(a && b && vpt_count_lines(a) == 12 && strcmp(a, b) == 0, "train/eval lines differ after the resume:\n%s\n---\n%s",
          a ? a : "", b ? b : "");
    free(a), free(b);
    char* ck = vpt_metrics_lines(d2, "checkpoint|run");
    CHECK(ck && strstr(ck, "\"reason\":\"interrupt\"") && strstr(ck, "\"resumed\":1"), "resume events: %s", ck);
    free(ck);
    CHECK(vpt_same_file(d1, d2, "last.safetensors"),
          "last.safetensors differ between the straight and the resumed run");
    CHECK(vpt_same_file(d1, d2, "best.safetensors"),
          "best.safetensors differ between the straight and the resumed run");
    CHECK(r1.test.strategy.sharpe == r3.test.strategy.sharpe && r1.best_iteration == r3.best_iteration,
          "test Sharpe %g vs %g, best at %lld vs %lld", r1.test.strategy.sharpe, r3.test.strategy.sharpe,
          (long long)r1.best_iteration, (long long)r3.best_iteration);
    vpt_rm_run(d1), vpt_rm_run(d2);
}

static void test_resume_refusals(void) {
    char dir[512], empty[512];
    vpt_tmp_dir(dir, sizeof dir, "refuse");
    vpt_tmp_dir(empty, sizeof empty, "nockpt");
    vpt_rm_run(dir), vpt_rm_run(empty);
    vp_train_result r;
    const char* short_run[] = {"train.iterations=10"};
    CHECK_OK(run(dir, VP_RUN_CREATE, 4, 1, short_run, &r));
    // A changed learning key is refused, naming it; iterations may change.
    const char* lr[] = {"train.iterations=10", "learn.lr=0.002"};
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 0, 2, lr, &r), VP_ERR_INVALID_ARG, "learn.lr");
    const char* longer[] = {"train.iterations=12"};
    CHECK_OK(run(dir, VP_RUN_RESUME, 0, 1, longer, &r));
    CHECK(r.count.iteration == 12 && !r.interrupted, "resumed to %lld", (long long)r.count.iteration);
    CHECK_STATUS(run(dir, VP_RUN_RESUME, 0, 1, longer, &r), VP_ERR_INVALID_ARG, "raise train.iterations");
    // No checkpoint to resume from.
    CHECK_STATUS(run(empty, VP_RUN_RESUME, 0, 1, short_run, &r), VP_ERR_IO, "last.safetensors");
    vpt_rm_run(dir), vpt_rm_run(empty);
}

static void test_trim_metrics(void) {
    char path[512];
    vpt_tmp_dir(path, sizeof path, "trim.jsonl");
    FILE* f = fopen(path, "wb");
    if (!f) {
        CHECK(0, "cannot write %s", path);
        return;
    }
    fputs("{\"event\":\"run\",\"iteration\":0}\n{\"event\":\"train\",\"iteration\":5}\n"
          "{\"event\":\"train\",\"iteration\":10}\n{\"event\":\"train\",\"iteration\":15}\n{\"event\":\"tr",
          f);
    fclose(f);
    CHECK_OK(vp_train_trim_metrics(path, 10));
    char* s = vpt_read_file(path, NULL, NULL);
    CHECK(s && strcmp(s, "{\"event\":\"run\",\"iteration\":0}\n{\"event\":\"train\",\"iteration\":5}\n"
                         "{\"event\":\"train\",\"iteration\":10}\n") == 0,
          "trimmed: %s", s ? s : "(none)");
    free(s);
    remove(path);
    CHECK_OK(vp_train_trim_metrics(path, 3)); /* a missing file is fine */
}

int main(void) {
    RUN_TEST(test_resume_is_bit_identical);
    RUN_TEST(test_resume_refusals);
    RUN_TEST(test_trim_metrics);
    return vpt_finish();
}
