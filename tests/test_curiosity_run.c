/* Training runs with curiosity on (CPU), on both collection paths: two runs give the same
 * lines; 23 iterations + a stop + a resume equal 40 straight (train and eval lines, last and
 * best checkpoints, which hold the forward model's state); every train line reports a
 * positive finite mean intrinsic reward and forward-model loss; a resume that turns curiosity
 * off is refused naming the key; with n_step 1 the ring's slots of a collection step hold the
 * env's rewards and the forward model's r_int of that step bit for bit (the warm-up's none);
 * curiosity's keys are ablation switches. */
#include <math.h>

#include "test_train_util.h"
#include "vp_test.h"

/* Every value of `key` in the lines `s` is finite and > 0; returns how many there are. */
static int positive_values(const char* s, const char* key) {
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    int n = 0;
    for (const char* p = strstr(s, pat); p; p = strstr(p + 1, pat)) {
        const double v = strtod(p + strlen(pat), NULL);
        CHECK(isfinite(v) && v > 0.0, "%s = %g", key, v);
        n += 1;
    }
    return n;
}

/* Straight, repeated and resumed runs of the test config with `over` [n] and curiosity on. */
static void straight_and_resumed(const char* tag, int n, const char* const* over) {
    char d1[512], d2[512], d3[512], t1[64], t2[64], t3[64];
    snprintf(t1, sizeof t1, "%s1", tag), snprintf(t2, sizeof t2, "%s2", tag), snprintf(t3, sizeof t3, "%s3", tag);
    vpt_tmp_dir(d1, sizeof d1, t1), vpt_tmp_dir(d2, sizeof d2, t2), vpt_tmp_dir(d3, sizeof d3, t3);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, n, over, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 0, NULL, n, over, &r2));
    CHECK_OK(vpt_train_run(d3, VP_RUN_CREATE, 23, NULL, n, over, &r3));
    CHECK(r3.interrupted == 1 && r3.count.iteration == 23, "%s: stopped at %lld", tag, (long long)r3.count.iteration);
    CHECK_OK(vpt_train_run(d3, VP_RUN_RESUME, 0, NULL, n, over, &r3));
    CHECK(r1.count.iteration == 40 && r3.count.learner_steps == r1.count.learner_steps, "%s: %lld iterations", tag,
          (long long)r1.count.iteration);
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    char* c = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && b && c && vpt_count_lines(a) == 12 && strcmp(a, b) == 0, "%s: two runs of one config differ", tag);
    CHECK(a && c && strcmp(a, c) == 0, "%s: the resumed run differs from the straight one:\n%s\n---\n%s", tag,
          a ? a : "", c ? c : "");
    // 8 train lines (every 5 of 40 iterations), each with both statistics
    char* tr = vpt_metrics_lines(d1, "train");
    CHECK(tr && positive_values(tr, "curiosity_reward") == 8 && positive_values(tr, "curiosity_loss") == 8,
          "%s: train lines without curiosity statistics:\n%s", tag, tr ? tr : "");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "%s: checkpoints differ", tag);
    free(a), free(b), free(c), free(tr);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

static void test_stepwise(void) {
    const char* over[] = {"curiosity.enabled=true", "curiosity.hidden=8", "curiosity.eta=0.05"};
    straight_and_resumed("cur_step", 3, over);
}

static void test_encode_once(void) {
    // 40 envs x 24 steps per collection against a span of about 860 bars: the span is encoded once
    const char* over[] = {"curiosity.enabled=true", "env.n_envs=40",     "train.collect_steps=24",
                          "env.episode_bars=7",     "replay.warmup=120", "train.train_steps=2"};
    straight_and_resumed("cur_once", 6, over);
}

static void test_resume_refuses_switch(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "cur_switch");
    vpt_rm_run(dir);
    vp_train_result r;
    const char* on[] = {"curiosity.enabled=true", "train.iterations=10"};
    CHECK_OK(vpt_train_run(dir, VP_RUN_CREATE, 4, NULL, 2, on, &r));
    const char* off[] = {"train.iterations=10"};
    CHECK_STATUS(vpt_train_run(dir, VP_RUN_RESUME, 0, NULL, 1, off, &r), VP_ERR_INVALID_ARG, "curiosity.enabled");
    vpt_rm_run(dir);
}

/* A trainer of the test config with n_step 1 (each push writes one transition per env, in env
 * order) and curiosity on, plus `over` [n]; after the warm-up and one collection, the last push's
 * slots hold the env's rewards and the forward model's r_int of that step, bit for bit. */
static void pushed_rewards(const char* tag, int n, const char* const* over) {
    const char* base[8] = {"curiosity.enabled=true", "learn.n_step=1", "curiosity.eta=0.5"};
    for (int i = 0; i < n; ++i) base[3 + i] = over[i];
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    vp_backend* b = NULL;
    memset(&d, 0, sizeof d);
    if (!vpt_train_cfg(&cfg, 3 + n, base) || vp_backend_cpu_init(&b) != VP_OK) return;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    vp_status s = vp_trainer_init(&t, b, &cfg, &d);
    CHECK(s == VP_OK, "%s: trainer: %s", tag, vp_last_error());
    if (s != VP_OK) {
        vp_train_data_free(&d), vp_backend_free(b);
        return;
    }
    const int64_t E = cfg.env.n_envs, C = cfg.replay.capacity;
    vp_replay_fields f;
    vp_replay_stats st;
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK_OK(vp_replay_fields_get(t.replay, &f));
    CHECK_OK(vp_replay_stats_read(t.replay, &st));
    const float* rin = (const float*)f.reward_int.data;
    const float* rex = (const float*)f.reward.data;
    int64_t nonzero = 0;
    for (int64_t i = 0; i < st.size; ++i) nonzero += rin[i] != 0.0f;
    CHECK(st.size == t.count.warmup_steps * E && nonzero == 0, "%s: %lld warm-up slots, %lld with an intrinsic reward",
          tag, (long long)st.size, (long long)nonzero);
    CHECK_OK(vp_collector_collect(&t.collector));
    CHECK_OK(vp_replay_stats_read(t.replay, &st));
    const float* r_int = (const float*)t.curiosity->reward.data;
    const float* r_env = (const float*)t.collector.reward.data;
    const float* done = (const float*)t.collector.done.data;
    int64_t positive = 0;
    for (int64_t e = 0; e < E; ++e) {
        const int64_t i = ((st.head - E + e) % C + C) % C;
        CHECK(rin[i] == r_int[e] && rex[i] == r_env[e], "%s: env %lld's slot %lld holds %g, %g; the step gave %g, %g",
              tag, (long long)e, (long long)i, (double)rex[i], (double)rin[i], (double)r_env[e], (double)r_int[e]);
        CHECK(done[e] == 0.0f || r_int[e] == 0.0f, "%s: env %lld ended its episode with r_int %g", tag, (long long)e,
              (double)r_int[e]);
        positive += r_int[e] > 0.0f;
    }
    CHECK(positive > 0, "%s: no env has an intrinsic reward", tag);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

static void test_pushed_rewards(void) {
    pushed_rewards("stepwise", 0, NULL);
    const char* once[] = {"env.n_envs=40", "train.collect_steps=24", "env.episode_bars=7", "replay.warmup=120"};
    pushed_rewards("encode once", 4, once);
}

static void test_ablation_switch(void) {
    vp_config base;
    if (!vpt_train_cfg(&base, 0, NULL)) return;
    vp_ablate_variant v;
    CHECK_OK(vp_ablate_parse_switch(&base, "curiosity.enabled", &v));
    CHECK(strcmp(v.value, "true") == 0 && v.key && strcmp(v.key->name, "curiosity.enabled") == 0, "variant %s = %s",
          v.key ? v.key->name : "(none)", v.value);
    CHECK_OK(vp_ablate_parse_switch(&base, "curiosity.eta=0.1", &v));
    CHECK_STATUS(vp_ablate_parse_switch(&base, "curiosity.hidden", &v), VP_ERR_INVALID_ARG, "not a bool key");
}

int main(void) {
    RUN_TEST(test_stepwise);
    RUN_TEST(test_encode_once);
    RUN_TEST(test_resume_refuses_switch);
    RUN_TEST(test_pushed_rewards);
    RUN_TEST(test_ablation_switch);
    return vpt_finish();
}
