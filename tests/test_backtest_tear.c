/* The backtest's tear-sheet statistics: on the hand-checked 9-bar path of test_backtest.c,
 * the summary's tear is vp_tear_compute of the strategy curve's per-bar returns against
 * buy-and-hold's (both curves worked out by hand there), under the backtest's factor. */
#include "test_backtest_hand.h"

/* Choices at bars 0..7 (test_backtest.c derives every fill and equity value of them). */
static const int32_t ACTS[NB - 1][4] = {
    {2, 3, 0, 0}, {2, 1, 0, 0}, {0, 3, 0, 1}, {0, 3, 0, 1}, {2, 0, 1, 2}, {0, 1, 2, 0}, {2, 0, 0, 0}, {2, 3, 0, 0},
};

static void test_hand_path_tear(void) {
    fixture f;
    fixture_init(&f);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_rollout_cfg c = hand_cfg(&ACTS[0][0]);
    vp_rollout_data d = {&f.bars, f.atr, NULL, {0, NB}};
    vp_rollout_result r;
    CHECK_OK(vp_backtest_run(b, NULL, NULL, &d, &c, &r));
    // the strategy's and buy-and-hold's equity at each close (test_backtest.c)
    static const double eq[NB] = {100000, 100045, 100080, 100197.5, 100247.5, 100100, 100182.5, 100192.5, 100190};
    static const double bh[NB] = {100000, 100045, 100145, 99945, 99895, 99695, 99745, 99795, 99790};
    double re[NB - 1], rb[NB - 1];
    for (int i = 1; i < NB; ++i) re[i - 1] = eq[i] / eq[i - 1] - 1.0, rb[i - 1] = bh[i] / bh[i - 1] - 1.0;
    vp_tear want;
    CHECK_OK(vp_tear_compute(re, rb, NB - 1, &r.summary.annual, &want));
    const vp_tear* t = &r.summary.tear;
    CHECK(r.summary.has_tear == 1, "no tear statistics in the backtest's summary");
    CHECK(t->n_returns == NB - 1 && t->n_valid == NB - 1 && t->n_pairs == NB - 1, "counts %lld %lld %lld",
          (long long)t->n_returns, (long long)t->n_valid, (long long)t->n_pairs);
    CHECK(t->periods_per_year == 252.0, "factor %g", t->periods_per_year);
    const double got[9] = {t->skewness, t->excess_kurtosis, t->var_95, t->cvar_95, t->beta,
                           t->alpha, t->correlation, t->tracking_error, t->information_ratio};
    const double exp[9] = {want.skewness, want.excess_kurtosis, want.var_95, want.cvar_95, want.beta,
                           want.alpha, want.correlation, want.tracking_error, want.information_ratio};
    for (int k = 0; k < 9; ++k) {
        CHECK(isfinite(exp[k]), "figure %d undefined on the hand path", k);
        CHECK(got[k] == exp[k], "figure %d = %.17g, expected %.17g", k, got[k], exp[k]);
    }
    // the tail of the eight returns: the lowest is close 4 to 5 (-147.5 / 100247.5), the next
    // close 7 to 8 (-2.5 / 100192.5); VaR at position 7 x 0.05 = 0.35 between them, CVaR the
    // mean of the int(0.35) + 1 = 1 lowest
    const double lo1 = -147.5 / 100247.5, lo2 = -2.5 / 100192.5;
    CHECK_NEAR(t->cvar_95, lo1, 0, 1e-12);
    CHECK_NEAR(t->var_95, lo1 + 0.35 * (lo2 - lo1), 0, 1e-12);
    vp_rollout_result_free(&r);
    vp_bars_free(&f.bars);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_hand_path_tear);
    return vpt_finish();
}
