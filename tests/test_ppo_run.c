/* PPO runs through the training loop (CPU), on the test config with train.algo ppo: two runs
 * give identical metrics.jsonl and checkpoints; 23 iterations + a stop + a resume equal 40
 * straight (train and eval lines, last and best checkpoints); the counters count n_envs x T
 * env steps and epochs x minibatches updates per iteration; best.safetensors holds the PPO
 * tensors and vulpes.algo; an inference instance made from the checkpoint's config (the seam
 * backtests and walk-forward use) scores the test span as the run did; with a tiny target_kl
 * every iteration stops after its first epoch; a DQN head module is refused; `vulpes backtest`
 * (vp_backtest_job_run) and `vulpes act` (vp_backtest_job_rollout) read the PPO checkpoint
 * through the seam: act's decision for the bar after the data is the backtest's, its scores
 * the policy's logits, each branch's choice their argmax. With 40 envs x 24 steps against a span
 * of about 800 bars collection encodes the span once: three iterations give the same rollouts
 * and parameters, bit for bit, as step-by-step encoding. The network refuses a backward that
 * does not follow its own encoding. */
#include "test_train_util.h"

#include <math.h>

#include "vp_test.h"
#include "learn/train_report.h"
#include "vulpes/algo.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"
#include "vulpes/ppo.h"

static const char* const OVER[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=2",
                                   "ppo.vf_clip=0.5"};

static vp_status run(const char* dir, vp_run_mode mode, int64_t stop_after, int n, const char* const* over,
                     vp_train_result* r) {
    return vpt_train_run(dir, mode, stop_after, NULL, n, over, r);
}

static void test_repeat_and_resume(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "ppo1");
    vpt_tmp_dir(d2, sizeof d2, "ppo2");
    vpt_tmp_dir(d3, sizeof d3, "ppo3");
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
    vp_train_result r1, r2, r3;
    CHECK_OK(run(d1, VP_RUN_CREATE, 0, 5, OVER, &r1));
    CHECK_OK(run(d2, VP_RUN_CREATE, 0, 5, OVER, &r2));
    CHECK_OK(run(d3, VP_RUN_CREATE, 23, 5, OVER, &r3));
    CHECK(r3.interrupted == 1 && r3.count.iteration == 23, "stopped at %lld", (long long)r3.count.iteration);
    CHECK_OK(run(d3, VP_RUN_RESUME, 0, 5, OVER, &r3));
    // 7 envs x 12 steps per iteration, 2 epochs x 3 minibatches of 28 rows, no warm-up
    CHECK(r1.count.iteration == 40 && r1.count.env_steps == 40 * 12 * 7 && r1.count.collect_steps == 40 * 12 &&
              r1.count.learner_steps == 40 * 6 && r1.count.warmup_steps == 0 && r3.count.env_steps == r1.count.env_steps,
          "counters: %lld iterations, %lld env steps, %lld collection steps, %lld updates (resumed: %lld env steps)",
          (long long)r1.count.iteration, (long long)r1.count.env_steps, (long long)r1.count.collect_steps,
          (long long)r1.count.learner_steps, (long long)r3.count.env_steps);
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    CHECK(a && b && strcmp(a, b) == 0, "two runs of one config differ");
    CHECK(a && strstr(a, "\"approx_kl\":") && strstr(a, "\"clipfrac\":") && strstr(a, "\"epochs\":2"),
          "the train lines lack PPO's statistics");
    char* c = vpt_metrics_lines(d1, "train|eval");
    char* e = vpt_metrics_lines(d3, "train|eval");
    CHECK(c && e && vpt_count_lines(c) == 12 && strcmp(c, e) == 0, "the resumed run differs from the straight one");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d3, "last.safetensors") &&
              vpt_same_file(d1, d3, "best.safetensors"),
          "checkpoints differ");
    free(a), free(b), free(c), free(e);

    // best.safetensors: the algorithm, the heads, no DQN head rows
    char path[700];
    snprintf(path, sizeof path, "%s/best.safetensors", d1);
    vp_checkpoint* ck = NULL;
    CHECK_OK(vp_checkpoint_open(&ck, path));
    if (ck) {
        const char* algo = vp_checkpoint_meta(ck, "vulpes.algo");
        CHECK(algo && strcmp(algo, "ppo") == 0, "vulpes.algo '%s'", algo ? algo : "(none)");
        CHECK(vp_checkpoint_has(ck, "ppo.pi2.w") && vp_checkpoint_has(ck, "ppo.v2.b") &&
                  vp_checkpoint_has(ck, "trunk.w1") && vp_checkpoint_has(ck, "port.w") &&
                  !vp_checkpoint_has(ck, "c51.v1.w") && !vp_checkpoint_has(ck, "iqn.l1.w"),
              "best.safetensors tensors");
        vp_checkpoint_close(ck);
    }

    // an inference instance of the checkpoint's config scores the test span as the run did
    vp_config cfg;
    vp_backend* be = NULL;
    vp_train_data d;
    vp_algo inf;
    memset(&inf, 0, sizeof inf);
    CHECK_OK(vp_backend_cpu_init(&be));
    CHECK(vpt_train_cfg(&cfg, 5, OVER), "config");
    CHECK_OK(vp_train_data_load(&d, &cfg));
    CHECK_OK(vp_algo_create(&inf, &cfg, be, &d, VP_ALGO_INFER));
    CHECK_OK(vp_algo_load_params(&inf, path, VP_PARAMS_ONLINE));
    vp_policy pol;
    CHECK_OK(vp_algo_policy(&inf, VP_PARAMS_ONLINE, &pol));
    // the run's exact backtest of the test span (train_run.c), from the inference instance
    vp_rollout_cfg rc = vp_rollout_cfg_default();
    rc.instrument = inf.instrument;
    rc.episode_bars = inf.env.episode_bars;
    rc.ruin_fraction = inf.env.ruin_fraction;
    CHECK_OK(vp_annual_measure(d.bars.time_ms, d.bars.n, &rc.annual));
    vp_rollout_data rd = {&d.bars, d.atr, inf.features, d.split.test};
    vp_rollout_result rr;
    vp_eval_result ex;
    memset(&rr, 0, sizeof rr);
    memset(&ex, 0, sizeof ex);
    CHECK_OK(vp_rollout_run(be, &pol, &rd, &rc, &rr));
    vp_train_test_result(&rr, &ex);
    CHECK(ex.windows == 1 && ex.strategy.total_return == r1.test.strategy.total_return &&
              ex.exposure == r1.test.exposure && ex.strategy.sharpe == r1.test.strategy.sharpe,
          "the checkpoint's test span: return %.10g exposure %.4f, the run's %.10g %.4f", ex.strategy.total_return,
          ex.exposure, r1.test.strategy.total_return, r1.test.exposure);
    vp_rollout_result_free(&rr);

    // vulpes backtest and vulpes act on the checkpoint: the same decision for the bar after the data
    char out[700], none[700], got[700];
    snprintf(out, sizeof out, "%s/bt", d1);
    snprintf(none, sizeof none, "%s/act-none", d1);
    vp_backtest_job job = {path, NULL, NULL, NULL, out, 0, 1, 1, "all", NULL, 0, NULL};
    vp_rollout_result bt, act;
    vp_backtest_last_bar last;
    memset(&bt, 0, sizeof bt);
    memset(&act, 0, sizeof act);
    CHECK_OK(vp_backtest_job_run(be, &job, &bt, got, sizeof got));
    job.out = none;
    CHECK_OK(vp_backtest_job_rollout(be, &job, &act, &last));
    const vp_action_layout l = vp_action_layout_env();
    const int64_t o = act.n_points - 1;
    CHECK(o >= 0 && act.n_points == bt.n_points && act.next_q && bt.next_q && act.n_heads == l.n_heads,
          "act: %lld points, the backtest %lld", (long long)act.n_points, (long long)bt.n_points);
    if (o >= 0 && act.next_q && bt.next_q) {
        const int32_t* ch = act.action + VP_ENV_BRANCHES * o;
        CHECK(ch[0] >= 0 && memcmp(ch, bt.action + VP_ENV_BRANCHES * o, sizeof(int32_t) * VP_ENV_BRANCHES) == 0 &&
                  memcmp(act.next_q, bt.next_q, sizeof(float) * (size_t)l.n_heads) == 0,
              "act's decision differs from the backtest's");
        for (int br = 0; br < l.n_branches; ++br)
            CHECK(vp_action_argmax(act.next_q + l.offset[br], l.size[br]) == ch[br], "branch %d: not the argmax", br);
    }
    vp_rollout_result_free(&bt);
    vp_rollout_result_free(&act);
    vp_algo_free(&inf);
    vp_train_data_free(&d);
    vp_backend_free(be);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(d3);
}

/* A target_kl no update stays under stops every iteration after its first epoch. */
static void test_target_kl(void) {
    static const char* const KL[] = {"train.algo=ppo", "ppo.rollout_steps=12", "ppo.minibatches=3", "ppo.epochs=4",
                                     "ppo.target_kl=1e-12", "train.iterations=6", "train.log_every=3"};
    char d[512];
    vpt_tmp_dir(d, sizeof d, "ppokl");
    vpt_rm_run(d);
    vp_train_result r;
    CHECK_OK(run(d, VP_RUN_CREATE, 0, 7, KL, &r));
    CHECK(r.count.learner_steps == 6 * 3, "updates %lld, expected 6 iterations x 1 epoch x 3 minibatches",
          (long long)r.count.learner_steps);
    char* a = vpt_metrics_lines(d, "train");
    CHECK(a && strstr(a, "\"epochs\":1") && !strstr(a, "\"epochs\":4"), "train lines: %s", a ? a : "(none)");
    free(a);
    vpt_rm_run(d);
}

/* PPO has its own heads: the DQN head modules are refused, naming them; so are a minibatch count
 * that does not divide the rollout and the DQN learner's switches. */
static void test_refusals(void) {
    static const char* const QD[] = {"train.algo=ppo", "model.q_denoise=true"};
    static const char* const MB[] = {"train.algo=ppo", "ppo.rollout_steps=10", "ppo.minibatches=4"};
    char d[512];
    vpt_tmp_dir(d, sizeof d, "pporef");
    vpt_rm_run(d);
    vp_train_result r;
    CHECK_STATUS(run(d, VP_RUN_CREATE, 0, 2, QD, &r), VP_ERR_UNSUPPORTED, "model.q_denoise");
    vpt_rm_run(d);
    CHECK_STATUS(run(d, VP_RUN_CREATE, 0, 3, MB, &r), VP_ERR_INVALID_ARG, "ppo.minibatches = 4 does not divide");
    vpt_rm_run(d);
    // the DQN learner's switches, each refused by name before the folder is made
    static const char* const SW[] = {"learn.adaptive_atoms=true", "learn.popart=true", "learn.lr_schedule=cosine",
                                     "curiosity.enabled=true", "signals.enable=true", "signals.adapt_epsilon=true",
                                     "signals.adapt_gamma=true", "signals.kelly=true"};
    for (size_t i = 0; i < sizeof SW / sizeof SW[0]; ++i) {
        const char* const over[] = {"train.algo=ppo", SW[i]};
        char want[96];
        snprintf(want, sizeof want, "%.*s is a switch of the DQN learner", (int)(strchr(SW[i], '=') - SW[i]), SW[i]);
        CHECK_STATUS(run(d, VP_RUN_CREATE, 0, 2, over, &r), VP_ERR_UNSUPPORTED, want);
        CHECK(!vpt_exists(d, "config.yaml"), "%s: the refused run made its folder", SW[i]);
        vpt_rm_run(d);
    }
}

/* Three iterations of a trainer of the encode-once config into *t (step by step when
 * force_stepwise; 0 on failure). */
static int three_iterations(vp_ppo_trainer* t, vp_train_data* d, vp_backend* b, int force_stepwise) {
    static const char* const EO[] = {"train.algo=ppo", "env.n_envs=40", "ppo.rollout_steps=24", "env.episode_bars=7",
                                     "ppo.minibatches=8", "ppo.epochs=2"};
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, 6, EO) || vp_train_data_load(d, &cfg) != VP_OK) return 0;
    if (vp_ppo_trainer_init(t, b, &cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        return 0;
    }
    CHECK(t->encode_once == 1 && t->span_rows < 40 * 25, "encode once %d over %lld rows", t->encode_once,
          (long long)t->span_rows);
    if (force_stepwise) t->encode_once = 0;
    CHECK_OK(vp_ppo_trainer_iterate(t, 3));
    return 1;
}

static void test_encode_once(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_ppo_trainer a, s;
    vp_train_data da, ds;
    memset(&a, 0, sizeof a), memset(&s, 0, sizeof s);
    memset(&da, 0, sizeof da), memset(&ds, 0, sizeof ds);
    if (three_iterations(&a, &da, b, 0) && three_iterations(&s, &ds, b, 1)) {
        const vp_tensor* x[] = {&a.net.params, &a.r_act, &a.r_reward, &a.r_logp, &a.r_value, &a.adam_v};
        const vp_tensor* y[] = {&s.net.params, &s.r_act, &s.r_reward, &s.r_logp, &s.r_value, &s.adam_v};
        for (int i = 0; i < 6; ++i)
            CHECK(memcmp(x[i]->data, y[i]->data, vp_tensor_bytes(x[i])) == 0, "tensor %d: encode-once differs", i);
    }
    vp_ppo_trainer_free(&a), vp_ppo_trainer_free(&s);
    vp_train_data_free(&da), vp_train_data_free(&ds);
    vp_backend_free(b);
}

/* The network refuses a backward after heads on an outside encoding (the encoder's activations
 * are not that encoding's), and a forward of more samples than its activations hold. */
static void test_net_refusals(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = 5, m.window = 3, m.hidden = 16, m.mamba_state = 4, m.mamba_head_dim = 8, m.head_hidden = 8;
    vp_ppo_net n;
    vp_ppo_acts* a = NULL;
    CHECK_OK(vp_ppo_net_init(&n, b, &m, 3));
    CHECK_OK(vp_ppo_acts_init(&a, &n, 4, 1, 0));
    float feats[10 * 5] = {0}, port[4 * 8] = {0}, enc[4 * 16] = {0}, dl[4 * 13] = {0}, dv[4] = {0};
    int32_t bars[4] = {2, 5, 7, 9};
    vp_tensor F = vp_tensor_2d(feats, VP_F32, VP_MEM_HOST, 10, 5), B = vp_tensor_1d(bars, VP_I32, VP_MEM_HOST, 4);
    vp_tensor P = vp_tensor_2d(port, VP_F32, VP_MEM_HOST, 4, 8), E = vp_tensor_2d(enc, VP_F32, VP_MEM_HOST, 4, 16);
    vp_tensor DL = vp_tensor_2d(dl, VP_F32, VP_MEM_HOST, 4, 13), DV = vp_tensor_1d(dv, VP_F32, VP_MEM_HOST, 4);
    CHECK_OK(vp_ppo_net_encode(&n, &n.params, a, &F, &B, 4));
    CHECK_OK(vp_ppo_net_heads(&n, &n.params, a, &E, &P, 4));
    CHECK_STATUS(vp_ppo_net_backward(&n, &n.params, a, &DL, &DV), VP_ERR_STATE, "on their own encoding");
    CHECK_OK(vp_ppo_net_heads(&n, &n.params, a, NULL, &P, 4));
    CHECK_OK(vp_ppo_net_backward(&n, &n.params, a, &DL, &DV));
    CHECK_STATUS(vp_ppo_net_encode(&n, &n.params, a, &F, &B, 5), VP_ERR_INVALID_ARG, "5 samples for activations of 4");
    vp_ppo_acts_free(a);
    vp_ppo_net_free(&n);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_net_refusals);
    RUN_TEST(test_encode_once);
    RUN_TEST(test_repeat_and_resume);
    RUN_TEST(test_target_kl);
    RUN_TEST(test_refusals);
    return vpt_finish();
}
