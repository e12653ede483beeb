/* Training runs with hindsight relabelling on (CPU), on both collection paths: two runs give the
 * same lines; 23
 * iterations + a stop + a resume equal 40 straight (train and eval lines, last and best
 * checkpoints, which hold the ring with its episode tables); the network takes the goal as a
 * ninth portfolio entry; the pushed rows carry her.goal in that entry; the backtest of the run's
 * checkpoint runs (conditioned on her.eval_goal) and gives the same result twice, the live API
 * refuses it; a resume that
 * turns her off is refused naming the key; her with curiosity or PPO is refused by name; her's
 * keys are ablation switches. */
#include <math.h>

#include "learn/replay_impl.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"
#include "vulpes/live.h"

static const char* const HER_ON[] = {"her.enabled=true", "her.goal=0.5", "her.eval_goal=0.25", "her.ratio=0.5",
                                     "her.lambda=0.1"};
enum { N_ON = 5 };

/* Runs of the test config with her on plus `extra` [n_extra] (tag: folder names); with `backtest`
 * the summary, backtest and live checks of the first run's checkpoint too. */
static void straight_and_resumed(const char* tag, int n_extra, const char* const* extra, int backtest) {
    const char* over[N_ON + 8];
    for (int i = 0; i < N_ON; ++i) over[i] = HER_ON[i];
    for (int i = 0; i < n_extra; ++i) over[N_ON + i] = extra[i];
    const int n = N_ON + n_extra;
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
    CHECK(r1.count.iteration == 40 && r3.count.learner_steps == r1.count.learner_steps, "%lld iterations",
          (long long)r1.count.iteration);
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    char* c = vpt_metrics_lines(d3, "train|eval");
    CHECK(a && b && c && vpt_count_lines(a) == 12 && strcmp(a, b) == 0, "%s: two runs of one config differ", tag);
    CHECK(a && c && strcmp(a, c) == 0, "%s: the resumed run differs from the straight one:\n%s\n---\n%s", tag, a ? a : "",
          c ? c : "");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "%s: checkpoints differ", tag);
    free(a), free(b), free(c);
    if (!backtest) {
        vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
        return;
    }
    // the summary states the goals
    char sp[600];
    snprintf(sp, sizeof sp, "%s/summary.json", d1);
    char* sum = vpt_slurp(sp, NULL);
    CHECK(sum && strstr(sum, "\"eval_goal\":\t0.25") && strstr(sum, "\"collect_goal\":\t0.5"),
          "summary.json without the goals:\n%s", sum ? sum : "(none)");
    free(sum);

    // the backtest of the checkpoint: the goal-conditioned network on the test span, twice the same
    char ck[600];
    snprintf(ck, sizeof ck, "%s/best.safetensors", d1);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_backtest_job job;
    memset(&job, 0, sizeof job);
    job.checkpoint = ck;
    job.n_windows = 1;
    job.fused = 1;
    vp_rollout_result x, y;
    vp_backtest_last_bar last;
    memset(&x, 0, sizeof x), memset(&y, 0, sizeof y);
    vp_status s = vp_backtest_job_rollout(be, &job, &x, &last);
    CHECK(s == VP_OK, "backtest of the HER checkpoint: %s", vp_last_error());
    CHECK_OK(vp_backtest_job_rollout(be, &job, &y, &last));
    CHECK(s != VP_OK || (x.n_curve > 1 && x.n_curve == y.n_curve &&
                         x.curve_equity[x.n_curve - 1] == y.curve_equity[y.n_curve - 1] &&
                         x.path && strcmp(x.path, "cpu") == 0),
          "backtest: %lld points (%lld), final equity %.17g / %.17g, path %s", (long long)x.n_curve,
          (long long)y.n_curve, x.n_curve ? x.curve_equity[x.n_curve - 1] : 0.0,
          y.n_curve ? y.curve_equity[y.n_curve - 1] : 0.0, x.path ? x.path : "?");
    // another goal for this backtest only (her.eval_goal=KEY=VALUE): accepted, and its config holds it
    char goal[] = "her.eval_goal=7.5";
    char* gover[1] = {goal};
    vp_config gc;
    vp_data_record rec;
    int has_rec = 0;
    CHECK_OK(vp_backtest_checkpoint_config(ck, gover, 1, "a backtest", &gc, &rec, &has_rec));
    CHECK(gc.her.eval_goal == 7.5, "the backtest's goal %g", gc.her.eval_goal);
    vp_rollout_result z;
    memset(&z, 0, sizeof z);
    job.n_overrides = 1, job.overrides = gover;
    CHECK_OK(vp_backtest_job_rollout(be, &job, &z, &last));
    CHECK(z.n_curve == x.n_curve, "the backtest towards goal 7.5: %lld points", (long long)z.n_curve);
    vp_rollout_result_free(&z);
    vp_rollout_result_free(&x), vp_rollout_result_free(&y);
    vp_backend_free(be);
    // the live API feeds no goal: refused by name
    vp_live* h = NULL;
    CHECK_STATUS(vp_live_open(&h, ck, NULL), VP_ERR_UNSUPPORTED, "goal-conditioned");
    vp_live_close(h);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

static void test_stepwise(void) { straight_and_resumed("her_step", 0, NULL, 1); }

static void test_encode_once(void) {
    // 40 envs x 24 steps per collection against a span of about 860 bars: the span is encoded once
    const char* once[] = {"env.n_envs=40", "train.collect_steps=24", "env.episode_bars=7", "replay.warmup=120",
                          "train.train_steps=2"};
    straight_and_resumed("her_once", 5, once, 0);
}

/* The network's portfolio input is 9 wide; after the warm-up every stored row's last entry (s_t
 * and the n-step next state) is her.goal = 0.5, and the ring keeps the episode columns. */
static void test_pushed_goal(void) {
    vp_config cfg;
    vp_train_data d;
    vp_trainer t;
    vp_backend* b = NULL;
    memset(&d, 0, sizeof d);
    // short episodes, so that the warm-up ends some
    const char* over[N_ON + 1] = {"env.episode_bars=7"};
    for (int i = 0; i < N_ON; ++i) over[1 + i] = HER_ON[i];
    if (!vpt_train_cfg(&cfg, N_ON + 1, over) || vp_backend_cpu_init(&b) != VP_OK) return;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    vp_status s = vp_trainer_init(&t, b, &cfg, &d);
    CHECK(s == VP_OK, "trainer: %s", vp_last_error());
    if (s != VP_OK) {
        vp_train_data_free(&d), vp_backend_free(b);
        return;
    }
    CHECK(t.learner.model.cfg.n_portfolio == 9 && vp_replay_get_cfg(t.replay)->n_portfolio == 9 &&
              vp_replay_get_cfg(t.replay)->her == 1,
          "model P %d, ring P %d", t.learner.model.cfg.n_portfolio, vp_replay_get_cfg(t.replay)->n_portfolio);
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK_OK(vp_collector_collect(&t.collector));
    vp_replay_fields f;
    vp_replay_stats st;
    CHECK_OK(vp_replay_fields_get(t.replay, &f));
    CHECK_OK(vp_replay_stats_read(t.replay, &st));
    const float* port = (const float*)f.portfolio.data;
    const float* next = (const float*)f.next_portfolio.data;
    const float* gw = (const float*)f.goal_weight.data;
    int64_t bad = 0, ends = 0;
    for (int64_t i = 0; i < st.size; ++i) {
        bad += port[i * 9 + 8] != 0.5f || next[i * 9 + 8] != 0.5f;
        ends += gw[i] > 0.0f;
    }
    CHECK(st.size > 0 && bad == 0, "%lld of %lld rows without the goal", (long long)bad, (long long)st.size);
    CHECK(ends > 0, "no stored transition reaches an episode's end");
    // a sample of the trainer's ring: at ratio 0.5 some rows relabelled, each to its episode's
    // filed return, the others keeping 0.5; the reward is the stored return plus the goal term
    enum { B = 256 };
    static int32_t idx[B], bar[B], nbar[B], act[B * 4], rel[B];
    static float op[B * 9], onp[B * 9], rw[B], disc[B], w[B], goal[B];
    vp_replay_batch o;
    memset(&o, 0, sizeof o);
    o.indices = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, B), o.bar_idx = vp_tensor_1d(bar, VP_I32, VP_MEM_HOST, B);
    o.next_bar_idx = vp_tensor_1d(nbar, VP_I32, VP_MEM_HOST, B);
    o.portfolio = vp_tensor_2d(op, VP_F32, VP_MEM_HOST, B, 9), o.next_portfolio = vp_tensor_2d(onp, VP_F32, VP_MEM_HOST, B, 9);
    o.actions = vp_tensor_2d(act, VP_I32, VP_MEM_HOST, B, 4), o.reward = vp_tensor_1d(rw, VP_F32, VP_MEM_HOST, B);
    o.discount = vp_tensor_1d(disc, VP_F32, VP_MEM_HOST, B), o.is_weight = vp_tensor_1d(w, VP_F32, VP_MEM_HOST, B);
    o.reward_goal = vp_tensor_1d(goal, VP_F32, VP_MEM_HOST, B), o.relabelled = vp_tensor_1d(rel, VP_I32, VP_MEM_HOST, B);
    CHECK_OK(vp_replay_sample(t.replay, &o));
    const vp_replay_dev* dv = vp_replay_dev_get(t.replay);
    const float* rew = (const float*)f.reward.data;
    int n_rel = 0, n_keep = 0;
    for (int j = 0; j < B; ++j) {
        const int64_t i = idx[j];
        const int64_t row = (int64_t)(dv->ep_id[i] % dv->her_tab) * dv->n_envs + dv->ep_env[i];
        const float want_g = rel[j] ? dv->tab_ret[row] : 0.5f;
        CHECK(op[j * 9 + 8] == want_g && onp[j * 9 + 8] == want_g && rw[j] == rew[i] + goal[j],
              "row %d (slot %lld, relabelled %d): goal %g, %g (want %g), reward %g = %g + %g", j, (long long)i,
              (int)rel[j], (double)op[j * 9 + 8], (double)onp[j * 9 + 8], (double)want_g, (double)rw[j],
              (double)rew[i], (double)goal[j]);
        CHECK(!rel[j] || goal[j] == 0.0f, "row %d relabelled with goal term %g", j, (double)goal[j]);
        rel[j] ? ++n_rel : ++n_keep;
    }
    CHECK(n_rel > 0 && n_keep > 0, "%d relabelled, %d kept of %d rows", n_rel, n_keep, B);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

static void test_refusals(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "her_switch");
    vpt_rm_run(dir);
    vp_train_result r;
    const char* on[] = {"her.enabled=true", "train.iterations=10"};
    CHECK_OK(vpt_train_run(dir, VP_RUN_CREATE, 4, NULL, 2, on, &r));
    const char* off[] = {"train.iterations=10"};
    CHECK_STATUS(vpt_train_run(dir, VP_RUN_RESUME, 0, NULL, 1, off, &r), VP_ERR_INVALID_ARG, "her.enabled");
    vpt_rm_run(dir);
    const char* cur[] = {"her.enabled=true", "curiosity.enabled=true"};
    CHECK_STATUS(vpt_train_run(dir, VP_RUN_CREATE, 0, NULL, 2, cur, &r), VP_ERR_UNSUPPORTED, "curiosity.enabled");
    vpt_rm_run(dir);
    // episode tables too large for 31-bit rows: refused naming both keys, before anything is allocated
    const char* big[] = {"her.enabled=true", "her.episodes=65536", "env.n_envs=65536", "replay.warmup=262144",
                         "replay.capacity=300000"};
    vp_config bc;
    vp_train_parts parts;
    if (vpt_train_cfg(&bc, 5, big))
        CHECK_STATUS(vp_train_parts_make(&bc, 8, &parts), VP_ERR_INVALID_ARG, "her.episodes x env.n_envs");
    const char* ppo[] = {"her.enabled=true", "train.algo=ppo"};
    CHECK_STATUS(vpt_train_run(dir, VP_RUN_CREATE, 0, NULL, 2, ppo, &r), VP_ERR_UNSUPPORTED, "her.enabled");
    vpt_rm_run(dir);
}

static void test_ablation_switch(void) {
    vp_config base;
    if (!vpt_train_cfg(&base, 0, NULL)) return;
    vp_ablate_variant v;
    CHECK_OK(vp_ablate_parse_switch(&base, "her.enabled", &v));
    CHECK(strcmp(v.value, "true") == 0 && v.key && strcmp(v.key->name, "her.enabled") == 0, "variant %s = %s",
          v.key ? v.key->name : "(none)", v.value);
    CHECK_OK(vp_ablate_parse_switch(&base, "her.ratio=0.5", &v));
    CHECK_STATUS(vp_ablate_parse_switch(&base, "her.goal", &v), VP_ERR_INVALID_ARG, "not a bool key");
}

int main(void) {
    RUN_TEST(test_stepwise);
    RUN_TEST(test_encode_once);
    RUN_TEST(test_pushed_goal);
    RUN_TEST(test_refusals);
    RUN_TEST(test_ablation_switch);
    return vpt_finish();
}
