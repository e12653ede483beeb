/* Tests of counters at the ends of their types (CPU): the AdamW step counter, the collection
 * step, the replay ring's counters and the training loop's counters hold at their maximum or
 * are refused instead of overflowing; a count statistic that is no int64 (NaN, 1e300) is logged
 * as a number (NaN as null), and a metrics line with a huge iteration is trimmed without a bad
 * cast. */
#include <math.h>
#include <stdint.h>

#include "learn/replay_math.h"
#include "learn/train_report.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/collect.h"
#include "vulpes/ops.h"

static void test_step_increment_holds_at_max(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    int32_t c = INT32_MAX - 1;
    vp_tensor t = vp_tensor_1d(&c, VP_I32, VP_MEM_HOST, 1);
    CHECK_OK(vp_step_increment(b, &t));
    CHECK(c == INT32_MAX, "step %d after INT32_MAX - 1", (int)c);
    CHECK_OK(vp_step_increment(b, &t));
    CHECK(c == INT32_MAX, "step %d after INT32_MAX (held there)", (int)c);
    // AdamW at that step: bias corrections of 1, finite updates.
    float p[3] = {1, 2, 3}, g[3] = {0.5f, -1, 2}, m[3] = {0}, v[3] = {0};
    vp_tensor tp = vp_tensor_1d(p, VP_F32, VP_MEM_HOST, 3), tg = vp_tensor_1d(g, VP_F32, VP_MEM_HOST, 3);
    vp_tensor tm = vp_tensor_1d(m, VP_F32, VP_MEM_HOST, 3), tv = vp_tensor_1d(v, VP_F32, VP_MEM_HOST, 3);
    vp_adamw_cfg ac = {1e-3f, 0.9f, 0.999f, 1e-8f, 0.0f};
    CHECK_OK(vp_adamw(b, &ac, &tp, &tg, &tm, &tv, &t, NULL));
    CHECK(isfinite(p[0]) && isfinite(p[1]) && isfinite(p[2]) && p[0] != 1.0f, "AdamW at step INT32_MAX: %g %g %g",
          (double)p[0], (double)p[1], (double)p[2]);
    vp_backend_free(b);
}

static void test_collect_at_huge_step(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    vp_collect_cfg c;
    memset(&c, 0, sizeof c);
    c.epsilon_start = 1.0f;
    c.epsilon_end = 0.05f;
    c.epsilon_steps = 100;
    const vp_action_layout lay = vp_action_layout_env();
    enum { E = 3 };
    float q[E * 13];
    for (int i = 0; i < E * 13; ++i) q[i] = (float)(i % 5);
    int32_t a[E * 4];
    int64_t steps[] = {INT64_MAX, INT64_MAX - 1, INT64_MIN, -5};
    for (size_t k = 0; k < sizeof steps / sizeof steps[0]; ++k) {
        int64_t st = steps[k];
        vp_tensor ts = vp_tensor_1d(&st, VP_I32, VP_MEM_HOST, 2);
        vp_tensor tq = vp_tensor_2d(q, VP_F32, VP_MEM_HOST, E, lay.n_heads);
        vp_tensor ta = vp_tensor_2d(a, VP_I32, VP_MEM_HOST, E, 4);
        CHECK_OK(vp_collect_act(b, &c, &lay, &tq, &ts, &ta));
        int ok = 1;
        for (int i = 0; i < E; ++i)
            for (int br = 0; br < 4; ++br) ok &= a[i * 4 + br] >= 0 && a[i * 4 + br] < lay.size[br];
        CHECK(ok, "actions out of range at step %lld", (long long)steps[k]);
        float eps = vp_collect_epsilon(&c, steps[k]);
        CHECK(eps >= 0.0f && eps <= 1.0f, "epsilon %g at step %lld", (double)eps, (long long)steps[k]);
    }
    vp_backend_free(b);
}

static void test_ring_counters_hold_at_max(void) {
    vp_replay_ctrl c;
    memset(&c, 0, sizeof c);
    c.head = 7;
    c.size = 10;
    c.emitted = INT64_MAX - 2;
    c.pushes = INT64_MAX;
    vp_replay_ctrl_advance(&c, 5, 10);
    CHECK(c.emitted == INT64_MAX && c.pushes == INT64_MAX && c.size == 10 && c.head == 2 && c.base == 7,
          "after a push at the maximum: emitted %lld, pushes %lld, size %lld, head %lld", (long long)c.emitted,
          (long long)c.pushes, (long long)c.size, (long long)c.head);
    CHECK(vp_replay_count_add(INT64_MAX, 1) == INT64_MAX && vp_replay_count_add(3, 4) == 7, "count_add");
}

static void test_train_counters_refuse_overflow(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    const char* over[] = {"replay.capacity=400"};
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 1, over)) return;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    if (vp_trainer_init(&t, b, &cfg, &d) == VP_OK) {
        CHECK_OK(vp_trainer_warmup(&t));
        const vp_train_counters keep = t.count;
        t.count.learner_steps = INT64_MAX;
        CHECK_STATUS(vp_trainer_iterate(&t, 1), VP_ERR_STATE, "learner_steps");
        t.count = keep;
        t.count.env_steps = INT64_MAX - 3;
        CHECK_STATUS(vp_trainer_iterate(&t, 1), VP_ERR_STATE, "env_steps");
        t.count = keep;
        CHECK_STATUS(vp_trainer_iterate(&t, INT64_MAX), VP_ERR_STATE, "iteration");
        CHECK(t.count.iteration == keep.iteration, "a refused iterate counted %lld", (long long)t.count.iteration);
        CHECK_OK(vp_trainer_iterate(&t, 1));
        CHECK(t.count.iteration == 1, "iteration %lld", (long long)t.count.iteration);
        vp_trainer_free(&t);
    }
    vp_train_data_free(&d);
    vp_backend_free(b);
}

static void test_stats_not_integers_log_null(void) {
    char path[512];
    vpt_tmp_dir(path, sizeof path, "nanstats.jsonl");
    vp_metrics_log m;
    memset(&m, 0, sizeof m);
    CHECK_OK(vp_metrics_log_open(&m, path, 0));
    vp_algo a;
    memset(&a, 0, sizeof a);
    a.count.iteration = 5;
    vp_kv_list st;
    memset(&st, 0, sizeof st);
    vp_kv_add(&st, "nan_steps", NAN, 1);
    vp_kv_add(&st, "huge", 1e300, 1);
    vp_kv_add(&st, "replay_size", 42, 1);
    CHECK_OK(vp_train_log_train(&m, &a, &st));
    vp_metrics_log_close(&m);
    char* s = vpt_read_file(path, NULL, NULL);
    CHECK(s && strstr(s, "\"nan_steps\":null") && strstr(s, "\"huge\":1e+300") && strstr(s, "\"replay_size\":42"),
          "logged: %s", s ? s : "(none)");
    free(s);
    // Iterations far outside int64 compare as numbers.
    FILE* f = fopen(path, "wb");
    if (f) {
        fputs("{\"event\":\"train\",\"iteration\":5}\n{\"event\":\"train\",\"iteration\":1e300}\n"
              "{\"event\":\"train\",\"iteration\":-1e300}\n{\"event\":\"train\",\"iteration\":9.3e18}\n",
              f);
        fclose(f);
    }
    CHECK_OK(vp_train_trim_metrics(path, 10));
    s = vpt_read_file(path, NULL, NULL);
    CHECK(s && strcmp(s, "{\"event\":\"train\",\"iteration\":5}\n{\"event\":\"train\",\"iteration\":-1e300}\n") == 0,
          "trimmed: %s", s ? s : "(none)");
    free(s);
    remove(path);
}

int main(void) {
    RUN_TEST(test_step_increment_holds_at_max);
    RUN_TEST(test_collect_at_huge_step);
    RUN_TEST(test_ring_counters_hold_at_max);
    RUN_TEST(test_train_counters_refuse_overflow);
    RUN_TEST(test_stats_not_integers_log_null);
    return vpt_finish();
}
