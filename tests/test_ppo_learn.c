/* The PPO learning test (CPU, about 10 s on 2 cores): on the synthetic trend market whose
 * returns are autocorrelated (phi 0.5, the DQN learning test's market), 50 PPO iterations of
 * 16 envs x 64 steps with the default architecture at small dimensions (Mamba2 over 4 bars,
 * H = 32) must give a greedy policy (the mode of each branch's categorical) whose test-span
 * Sharpe beats buy-and-hold and flat by a clear margin after costs, holding a position a fair
 * share of the time. The untrained network (near-uniform logits: its greedy choices are as
 * arbitrary as a random policy's) is scored on the same span, so the margin is the training's
 * doing. Seeds: market 11, run 1. */
#include "test_train_util.h"

#include <math.h>

#include "learn/train_report.h"
#include "vp_test.h"
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
    "  clip_norm: 0.5\n"
    "ppo:\n"
    "  rollout_steps: 64\n"
    "  epochs: 4\n"
    "  minibatches: 4\n"
    "train:\n"
    "  algo: ppo\n"
    "  iterations: 50\n"
    "  eval_every: 10\n"
    "  checkpoint_every: 0\n"
    "  log_every: 10\n"
    "run:\n"
    "  seed: 1\n"
    "  backend: cpu\n";

/* The exact backtest of the test span (as the run scores it) of the network with the
 * parameters of checkpoint ckpt (NULL: untrained) into *out. */
static int exact_test(vp_backend* b, const vp_config* cfg, const char* ckpt, vp_eval_result* out) {
    vp_train_data d;
    vp_algo a;
    memset(&a, 0, sizeof a);
    if (vp_train_data_load(&d, cfg) != VP_OK) return 0;
    vp_status s = vp_algo_create(&a, cfg, b, &d, VP_ALGO_INFER);
    if (s == VP_OK && ckpt) s = vp_algo_load_params(&a, ckpt, VP_PARAMS_ONLINE);
    vp_policy pol;
    if (s == VP_OK) s = vp_algo_policy(&a, VP_PARAMS_ONLINE, &pol);
    vp_rollout_cfg rc = vp_rollout_cfg_default();
    rc.instrument = a.instrument;
    rc.episode_bars = a.env.episode_bars;
    rc.ruin_fraction = a.env.ruin_fraction;
    if (s == VP_OK) s = vp_annual_measure(d.bars.time_ms, d.bars.n, &rc.annual);
    vp_rollout_data rd = {&d.bars, d.atr, a.features, d.split.test};
    vp_rollout_result rr;
    memset(&rr, 0, sizeof rr);
    if (s == VP_OK) s = vp_rollout_run(b, &pol, &rd, &rc, &rr);
    if (s == VP_OK) vp_train_test_result(&rr, out);
    vp_rollout_result_free(&rr);
    vp_algo_free(&a);
    vp_train_data_free(&d);
    return s == VP_OK;
}

static void test_learns_the_trend(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_config_defaults(&cfg);
    CHECK_OK(vp_backend_cpu_init(&b));
    CHECK_OK(vp_config_load_string(&cfg, LEARN_YAML, "learning test"));
    if (!b) return;
    char dir[512], ckpt[600];
    vpt_tmp_dir(dir, sizeof dir, "ppolearn");
    vpt_rm_run(dir);
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    vp_train_result r;
    double t0 = vp_clock_s();
    CHECK_OK(vp_train_run(&cfg, b, &o, &r));
    const double secs = vp_clock_s() - t0;
    const vp_perf *ag = &r.test.strategy, *bh = &r.test.buy_hold, *fl = &r.test.flat;
    fprintf(stderr, "  trained in %.1f s; best validation Sharpe %.2f at iteration %lld\n", secs, r.best_val_sharpe,
            (long long)r.best_iteration);
    fprintf(stderr, "  test span: agent Sharpe %.2f (return %.2f %%, exposure %.2f), buy & hold %.2f (%.2f %%), flat "
            "return %.2f %%\n", ag->sharpe, 100 * ag->total_return, r.test.exposure, bh->sharpe, 100 * bh->total_return,
            100 * fl->total_return);
    CHECK(ag->sharpe > 5.0 && ag->sharpe > bh->sharpe + 5.0, "agent Sharpe %.2f vs buy & hold %.2f", ag->sharpe,
          bh->sharpe);
    CHECK(ag->total_return > 0.05 && ag->total_return > bh->total_return + 0.05 && fl->total_return == 0.0,
          "agent return %.4f vs buy & hold %.4f, flat %.4f", ag->total_return, bh->total_return, fl->total_return);
    CHECK(r.test.exposure > 0.2 && r.test.ruined == 0, "exposure %.2f, ruined windows %lld", r.test.exposure,
          (long long)r.test.ruined);
    // best.safetensors through the algorithm seam gives the run's result; the untrained network well below
    vp_eval_result ex, un;
    snprintf(ckpt, sizeof ckpt, "%s/best.safetensors", dir);
    CHECK(r.best_iteration > 0 && exact_test(b, &cfg, ckpt, &ex), "best checkpoint: %s", vp_last_error());
    CHECK(exact_test(b, &cfg, NULL, &un), "untrained: %s", vp_last_error());
    fprintf(stderr, "  best.safetensors: Sharpe %.2f; untrained network %.2f (return %.2f %%)\n", ex.strategy.sharpe,
            un.strategy.sharpe, 100 * un.strategy.total_return);
    CHECK(ex.strategy.sharpe == ag->sharpe, "best.safetensors Sharpe %.6f vs the run's %.6f", ex.strategy.sharpe,
          ag->sharpe);
    CHECK(isnan(un.strategy.sharpe) || un.strategy.sharpe < ag->sharpe - 5.0, "untrained Sharpe %.2f vs trained %.2f",
          un.strategy.sharpe, ag->sharpe);
    vpt_rm_run(dir);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_learns_the_trend);
    return vpt_finish();
}
