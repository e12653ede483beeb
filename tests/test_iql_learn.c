/* The IQL learning test (CPU, one core, well under a minute): on the synthetic trend market whose
 * returns are autocorrelated (phi 0.5, the PPO and DQN learning tests' market), a dataset of a
 * weak rule — the moving-average crossover (fast 5, slow 20) with epsilon 0.3 of uniform random
 * actions — is recorded on the training span through the record library (vp_record_run); IQL
 * trains on it offline (vp_train_run, train.algo iql) and its greedy policy's test-span Sharpe
 * must beat the rule's own test-span Sharpe by a clear margin, the rule run greedily (without
 * its epsilon, so at its best) through the same exact backtest. Seeds: market 11, dataset 3,
 * run 1. */
#include "test_record_util.h"

#include <math.h>
#include <stdlib.h>

#include "learn/train_report.h"
#include "vp_test.h"
#include "vulpes/action.h"
#include "vulpes/algo.h"

static const char* LEARN_YAML =
    "data:\n"
    "  path: \"synth:trend:bars=6000,seed=11,phi=0.5\"\n"
    "split:\n"
    "  train: 0.7\n"
    "  val: 0.15\n"
    "  test: 0.15\n"
    "features:\n"
    "  window: 64\n"
    "instrument:\n"
    "  tick_size: 0.01\n"
    "  multiplier: 10\n"
    "  commission: 0.1\n"
    "  slippage_ticks: 1\n"
    "  max_position: 10\n"
    "  initial_equity: 10000\n"
    "env:\n"
    "  n_envs: 16\n"
    "  episode_bars: 128\n"
    "  reward_scale: 500\n"
    "model:\n"
    "  window: 4\n"
    "  hidden: 32\n"
    "  encoder: mamba2\n"
    "  mamba_head_dim: 16\n"
    "  mamba_state: 8\n"
    "  head_hidden: 32\n"
    "learn:\n"
    "  lr: 0.001\n"
    "  gamma: 0.9\n"
    "  clip_norm: 1.0\n"
    "iql:\n"
    "  batch: 256\n"
    "train:\n"
    "  algo: iql\n"
    "  iterations: 60\n"
    "  train_steps: 25\n"
    "  eval_every: 10\n"
    "  checkpoint_every: 0\n"
    "  log_every: 10\n"
    "run:\n"
    "  seed: 1\n"
    "  backend: cpu\n";

/* ---- the rule as a policy: the crossover's direction at each decision bar, size `size` ------ */

typedef struct rule {
    const double* close; /* [T] the data's closes */
    int fast, slow, size;
} rule;

struct vp_policy_work {
    float* enc;    /* [batch, 1] the direction of each bar */
    float* scores; /* [batch, A] one-hot per branch */
};

static vp_status rule_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out) {
    vp_policy_work* w = (vp_policy_work*)calloc(1, sizeof *w);
    VP_REQUIRE(w != NULL, VP_ERR_OOM, "rule policy: workspace");
    w->enc = (float*)calloc((size_t)batch, sizeof(float));
    w->scores = (float*)calloc((size_t)(batch * p->layout.n_heads), sizeof(float));
    *out = w;
    return w->enc && w->scores ? VP_OK : VP_ERR_OOM;
}

static void rule_work_free(vp_policy_work* w) {
    if (!w) return;
    free(w->enc);
    free(w->scores);
    free(w);
}

static vp_status rule_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                             int64_t n, vp_tensor* enc) {
    (void)features;
    const rule* r = (const rule*)p->impl;
    for (int64_t i = 0; i < n; ++i)
        w->enc[i] = (float)vp_ma_cross_dir(r->close, ((const int32_t*)bar_idx->data)[i], r->fast, r->slow);
    *enc = vp_tensor_2d(w->enc, VP_F32, VP_MEM_HOST, n, 1);
    return VP_OK;
}

static vp_status rule_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                            int64_t n, vp_tensor* scores) {
    (void)portfolio;
    const rule* r = (const rule*)p->impl;
    const vp_action_layout* l = &p->layout;
    const int A = l->n_heads;
    memset(w->scores, 0, sizeof(float) * (size_t)(n * A));
    for (int64_t i = 0; i < n; ++i) {
        float* s = w->scores + i * A;
        s[l->offset[0] + (int)((const float*)enc->data)[i]] = 1.0f;
        s[l->offset[1] + r->size] = 1.0f;
        s[l->offset[2]] = 1.0f; /* no take-profit */
        s[l->offset[3]] = 1.0f; /* no stop-loss */
    }
    *scores = vp_tensor_2d(w->scores, VP_F32, VP_MEM_HOST, n, A);
    return VP_OK;
}

static const vp_policy_ops RULE_OPS = {"ma_cross", rule_work_init, rule_work_free, rule_encode, rule_score};

/* The exact backtest of the test span (as the run scores it) of policy pol into *out. */
static int exact_test(vp_backend* b, const vp_train_data* d, const vp_algo* a, const vp_policy* pol, vp_eval_result* out) {
    vp_rollout_cfg rc = vp_rollout_cfg_default();
    rc.instrument = a->instrument;
    rc.episode_bars = a->env.episode_bars;
    rc.ruin_fraction = a->env.ruin_fraction;
    vp_status s = vp_annual_measure(d->bars.time_ms, d->bars.n, &rc.annual);
    vp_rollout_data rd = {&d->bars, d->atr, a->features, d->split.test};
    vp_rollout_result rr;
    memset(&rr, 0, sizeof rr);
    if (s == VP_OK) s = vp_rollout_run(b, pol, &rd, &rc, &rr);
    if (s == VP_OK) vp_train_test_result(&rr, out);
    vp_rollout_result_free(&rr);
    CHECK(s == VP_OK, "exact test: %s", vp_last_error());
    return s == VP_OK;
}

static void test_beats_its_behaviour(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_config_defaults(&cfg);
    CHECK_OK(vp_backend_cpu_init(&b));
    CHECK_OK(vp_config_load_string(&cfg, LEARN_YAML, "learning test"));
    if (!b) return;
    char dir[400], ds_path[480];
    vpt_tmp_dir(dir, sizeof dir, "iqllearn");
    vpt_rm_run(dir);
    mkdir(dir, 0755);
    snprintf(ds_path, sizeof ds_path, "%s.dataset.safetensors", dir);
    snprintf(cfg.iql.dataset, sizeof cfg.iql.dataset, "%s", ds_path);
    // the rule's dataset: 256 steps of 32 envs on the training span
    vp_train_data d;
    CHECK_OK(vp_train_data_load(&d, &cfg));
    vp_behaviour beh;
    CHECK_OK(vp_behaviour_parse("ma_cross:fast=5,slow=20,size=3", &beh));
    CHECK_OK(vp_behaviour_set_epsilon(&beh, 0.3));
    vp_record_cfg rc;
    vp_offline_data ds;
    CHECK(vpt_record_cfg(&d, &cfg, 256, 32, 3, 0, &rc), "record config");
    double t0 = vp_clock_s();
    CHECK_OK(vp_record_run(b, &d, NULL, &beh, &rc, &ds));
    CHECK_OK(vp_offline_save(&ds, ds_path));
    const vp_record_totals tot = vp_record_totals_of(&ds);
    fprintf(stderr, "  dataset %s: %lld rows, %lld episodes, mean reward %.4f (%.1f s)\n", beh.name,
            (long long)tot.rows, (long long)tot.episodes, tot.mean_reward, vp_clock_s() - t0);
    vp_offline_free(&ds);
    // IQL on it
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    vp_train_result r;
    t0 = vp_clock_s();
    CHECK_OK(vp_train_run(&cfg, b, &o, &r));
    const double secs = vp_clock_s() - t0;
    const vp_perf *ag = &r.test.strategy, *bh = &r.test.buy_hold;
    fprintf(stderr, "  trained in %.1f s; best validation Sharpe %.2f at iteration %lld\n", secs, r.best_val_sharpe,
            (long long)r.best_iteration);
    fprintf(stderr, "  test span: IQL Sharpe %.2f (return %.2f %%, exposure %.2f), buy & hold %.2f (%.2f %%)\n",
            ag->sharpe, 100 * ag->total_return, r.test.exposure, bh->sharpe, 100 * bh->total_return);
    // the rule greedily through the same backtest
    vp_algo a;
    memset(&a, 0, sizeof a);
    CHECK_OK(vp_algo_create(&a, &cfg, b, &d, VP_ALGO_INFER));
    rule ru = {d.bars.close, 5, 20, 3};
    vp_policy pol;
    memset(&pol, 0, sizeof pol);
    pol.ops = &RULE_OPS, pol.backend = b, pol.impl = &ru, pol.n_features = d.n_features;
    pol.window = (int)cfg.model.window, pol.n_portfolio = VP_ENV_PORTFOLIO, pol.enc_dim = 1;
    pol.layout = vp_action_layout_env(), pol.fp32_scores = 1;
    vp_eval_result rule_r;
    if (a.impl && exact_test(b, &d, &a, &pol, &rule_r)) {
        fprintf(stderr, "  the rule (ma_cross 5/20, no epsilon): test Sharpe %.2f (return %.2f %%, exposure %.2f)\n",
                rule_r.strategy.sharpe, 100 * rule_r.strategy.total_return, rule_r.exposure);
        CHECK(isfinite(ag->sharpe) && ag->sharpe > rule_r.strategy.sharpe + 3.0,
              "IQL's test Sharpe %.2f does not beat its behaviour's %.2f by 3", ag->sharpe, rule_r.strategy.sharpe);
        CHECK(ag->total_return > rule_r.strategy.total_return && r.test.ruined == 0,
              "IQL's return %.4f vs the rule's %.4f, ruined windows %lld", ag->total_return,
              rule_r.strategy.total_return, (long long)r.test.ruined);
    }
    vp_algo_free(&a);
    vp_train_data_free(&d);
    remove(ds_path);
    vpt_rm_run(dir);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_beats_its_behaviour);
    return vpt_finish();
}
