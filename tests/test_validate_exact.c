/* The validator's estimate against the exact backtest: with one window over a span longer
 * than a training episode, both feed the network the same portfolio vectors (time left and
 * bars held in training episode lengths, capped at 1) and so walk the same path; and the
 * validation's ruined windows are the rollout's, under the run's ruin fraction. */
#include "test_backtest_util.h"
#include "vp_test.h"
#include "vulpes/train.h"

/* One span, one window, episode length `episode`: validator and backtest figures of a
 * network initialised with `seed`. */
static void compare(int64_t begin, int64_t end, int32_t episode, uint64_t seed) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vpt_market mk;
    CHECK(vpt_market_make(&mk, end + 8, 3), "synthetic market");
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &mc, seed));
    vp_instrument in = vpt_instrument();

    // The validator: the span as one window (window_bars = the training episode).
    vp_train_data d;
    memset(&d, 0, sizeof d);
    d.bars = mk.bars;
    d.n_features = mk.F;
    d.features = mk.feat;
    d.atr = mk.atr;
    d.periods_per_year = 252.0 * 24.0;
    vp_span span = {begin, end};
    vp_validator* v = NULL;
    vp_eval_result ev;
    CHECK_OK(vp_validator_init(&v, b, &mk.features, &d, span, &in, episode, vp_rollout_cfg_default().ruin_fraction));
    const vp_policy pol = vp_model_rollout_policy(&m, &m.params);
    CHECK_OK(vp_validator_run(v, &pol, &ev));
    vp_validator_free(v);
    CHECK(ev.windows == 1 && ev.window_bars == end - begin - 1, "validator: %lld x %lld bars", (long long)ev.windows,
          (long long)ev.window_bars);

    // The exact backtest of the same span with the same episode length.
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = in;
    c.episode_bars = episode;
    CHECK_OK(vp_annual_given(d.periods_per_year, &c.annual));
    vp_rollout_data bd = {&mk.bars, mk.atr, &mk.features, span};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, &m, &m.params, &bd, &c, &r));

    // Same path: the same total return and Sharpe (rewards pass through float: 1e-6).
    const vp_perf* x = &r.summary.strategy;
    CHECK(r.summary.trades.n_trades > 0, "seed %llu: the network never traded", (unsigned long long)seed);
    CHECK_NEAR(ev.strategy.total_return, x->total_return, 1e-6, 0.0);
    CHECK_NEAR(ev.strategy.sharpe, x->sharpe, 1e-4, 1e-4);
    vp_rollout_result_free(&r);
    vp_model_free(&m);
    vpt_market_free(&mk);
    vp_backend_free(b);
}

/* Spans of 1.7 to 1.9 episodes (odd lengths), several networks. */
static void test_one_window_same_path(void) {
    compare(100, 401, 160, 11);
    compare(150, 498, 200, 12);
    compare(80, 391, 173, 13);
}

/* Validation windows that ruin: the validator runs the rollout with the run's ruin fraction,
 * so its count of ruined windows is the rollout's own count of windows marked ruined. */
static void test_validation_ruin(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vpt_market mk;
    CHECK(vpt_market_make(&mk, 520, 4), "synthetic market");
    vp_model_cfg mc = vpt_tiny_model(mk.F);
    vp_model m;
    CHECK_OK(vp_model_init(&m, b, &mc, 21));
    vp_train_data d;
    memset(&d, 0, sizeof d);
    d.bars = mk.bars;
    d.n_features = mk.F;
    d.features = mk.feat;
    d.atr = mk.atr;
    d.periods_per_year = 252.0 * 24.0;
    const vp_span span = {100, 501};
    const vp_instrument in = vpt_instrument();
    const vp_policy pol = vp_model_rollout_policy(&m, &m.params);
    const double fracs[2] = {0.0, 0.9995};
    int64_t counts[2] = {0, 0};
    for (int i = 0; i < 2; ++i) {
        vp_validator* v = NULL;
        vp_eval_result ev;
        CHECK_OK(vp_validator_init(&v, b, &mk.features, &d, span, &in, 40, fracs[i]));
        CHECK_OK(vp_validator_run(v, &pol, &ev));
        vp_validator_free(v);
        // the same rollout directly: 10 windows of 40 decisions, each marked when it ruined
        vp_rollout_cfg c = vp_rollout_cfg_default();
        c.instrument = in;
        c.episode_bars = 40;
        c.n_windows = 10;
        c.ruin_fraction = fracs[i];
        CHECK_OK(vp_annual_given(d.periods_per_year, &c.annual));
        vp_rollout_data rd = {&mk.bars, mk.atr, &mk.features, span};
        vp_rollout_result r;
        CHECK_OK(vp_backtest_run(b, &m, &m.params, &rd, &c, &r));
        int64_t marked = 0;
        for (int64_t w = 0; w < r.n_windows; ++w) marked += r.windows[w].ruined;
        CHECK(ev.windows == 10 && ev.ruined == r.n_ruined && marked == r.n_ruined &&
                  ev.strategy.total_return == r.summary.strategy.total_return,
              "fraction %g: validator %lld of %lld ruined, rollout %lld (%lld marked)", fracs[i], (long long)ev.ruined,
              (long long)ev.windows, (long long)r.n_ruined, (long long)marked);
        counts[i] = ev.ruined;
        vp_rollout_result_free(&r);
    }
    CHECK(counts[0] == 0 && counts[1] >= 1, "ruined windows: %lld at fraction 0, %lld at 0.9995", (long long)counts[0],
          (long long)counts[1]);
    vp_model_free(&m);
    vpt_market_free(&mk);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_one_window_same_path);
    RUN_TEST(test_validation_ruin);
    return vpt_finish();
}
