/* Tests of the synthetic markets: valid bars, determinism, the models' statistics, and
 * the documented edges (an oracle rule earns on OU and TREND, not on GBM). */
#include "vp_test.h"
#include "vulpes/synth.h"

static void test_valid_bars(void) {
    for (int k = 0; k < VP_SYNTH_KIND_COUNT; ++k) {
        vp_synth_cfg c = vp_synth_cfg_default((vp_synth_kind)k);
        c.seed = 7 + (uint64_t)k;
        vp_bars b;
        CHECK_OK(vp_synth_generate(&c, 20001, &b, NULL));
        CHECK_OK(vp_bars_validate(&b));
        int bad = 0;
        for (int64_t t = 0; t < b.n; ++t) {
            bad += b.time_ms[t] != c.start_ms + t * 3600000;
            bad += t > 0 ? b.open[t] != b.close[t - 1] : b.open[0] != 100.0;
            bad += !(b.volume[t] > 0.0) || !(b.high[t] > b.low[t]);
        }
        CHECK(bad == 0, "%s: %d bad bars", vp_synth_kind_name((vp_synth_kind)k), bad);
        vp_bars_free(&b);
    }
}

static void test_determinism(void) {
    vp_synth_cfg c = vp_synth_cfg_default(VP_SYNTH_REGIME);
    vp_bars a, b;
    uint8_t ra[2000], rb[2000];
    CHECK_OK(vp_synth_generate(&c, 2000, &a, ra));
    CHECK_OK(vp_synth_generate(&c, 2000, &b, rb));
    CHECK(memcmp(a.time_ms, b.time_ms, 2000 * 48) == 0 && memcmp(ra, rb, 2000) == 0, "same seed, same bars");
    vp_bars_free(&b);
    /* A shorter run is a prefix of a longer one. */
    CHECK_OK(vp_synth_generate(&c, 500, &b, NULL));
    CHECK(memcmp(a.close, b.close, 500 * 8) == 0 && memcmp(a.volume, b.volume, 500 * 8) == 0, "prefix");
    vp_bars_free(&b);
    /* Another seed, another market. */
    c.seed = 2;
    CHECK_OK(vp_synth_generate(&c, 2000, &b, NULL));
    CHECK(memcmp(a.close, b.close, 2000 * 8) != 0, "seed matters");
    vp_bars_free(&a);
    vp_bars_free(&b);
}

/* Mean and standard deviation of the one-bar log returns over [from, n). */
static void return_moments(const vp_bars* b, double* mean, double* sd) {
    double s = 0, q = 0;
    int64_t m = b->n - 1;
    for (int64_t t = 1; t < b->n; ++t) s += log(b->close[t] / b->close[t - 1]);
    for (int64_t t = 1; t < b->n; ++t) q += pow(log(b->close[t] / b->close[t - 1]) - s / m, 2);
    *mean = s / m;
    *sd = sqrt(q / m);
}

static void test_model_statistics(void) {
    const int64_t n = 200000;
    vp_bars b;
    double m, sd;
    /* GBM: return sd = sigma. */
    vp_synth_cfg g = vp_synth_cfg_default(VP_SYNTH_GBM);
    CHECK_OK(vp_synth_generate(&g, n, &b, NULL));
    return_moments(&b, &m, &sd);
    CHECK_NEAR(sd, 0.002, 0, 0.02);
    CHECK_NEAR(m, 0.0, 3 * 0.002 / sqrt((double)n), 0);
    vp_bars_free(&b);

    /* OU: log price centred on log price0 with sd sigma / sqrt(2 theta - theta^2). */
    vp_synth_cfg o = vp_synth_cfg_default(VP_SYNTH_OU);
    CHECK_OK(vp_synth_generate(&o, n, &b, NULL));
    double s = 0, q = 0, lm = log(100.0);
    for (int64_t t = 0; t < n; ++t) s += log(b.close[t]) - lm;
    for (int64_t t = 0; t < n; ++t) q += pow(log(b.close[t]) - lm - s / n, 2);
    CHECK_NEAR(s / n, 0.0, 0.001, 0);
    CHECK_NEAR(sqrt(q / n), 0.002 / sqrt(2 * 0.05 - 0.05 * 0.05), 0, 0.05);
    vp_bars_free(&b);

    /* TREND: lag-1 autocorrelation of returns = phi, return sd = sigma. */
    vp_synth_cfg tr = vp_synth_cfg_default(VP_SYNTH_TREND);
    CHECK_OK(vp_synth_generate(&tr, n, &b, NULL));
    return_moments(&b, &m, &sd);
    double c1 = 0;
    for (int64_t t = 2; t < n; ++t)
        c1 += (log(b.close[t] / b.close[t - 1]) - m) * (log(b.close[t - 1] / b.close[t - 2]) - m);
    CHECK_NEAR(c1 / (n - 2) / (sd * sd), 0.3, 0.02, 0);
    CHECK_NEAR(sd, 0.002, 0, 0.03);
    vp_bars_free(&b);

    /* REGIME: both regimes visited; turbulent returns about 3x as volatile. */
    vp_synth_cfg r = vp_synth_cfg_default(VP_SYNTH_REGIME);
    uint8_t* reg = (uint8_t*)malloc((size_t)n);
    CHECK_OK(vp_synth_generate(&r, n, &b, reg));
    double q0 = 0, q1 = 0;
    int64_t n0 = 0, n1 = 0, switches = 0;
    for (int64_t t = 1; t < n; ++t) {
        double x = log(b.close[t] / b.close[t - 1]);
        if (reg[t]) q1 += x * x, n1++;
        else q0 += x * x, n0++;
        switches += reg[t] != reg[t - 1];
    }
    CHECK(n0 > n / 4 && n1 > n / 4, "time in regimes %lld / %lld", (long long)n0, (long long)n1);
    CHECK_NEAR((double)switches / n, 0.005, 0.001, 0);
    CHECK_NEAR(sqrt(q1 / n1) / sqrt(q0 / n0), 3.0, 0, 0.05);
    free(reg);
    vp_bars_free(&b);
}

/* t-statistic of the per-bar PnL (in log-return units) of a position rule decided at the
 * close of t and held to the close of t+1 (= the open of t+1 here, then to its close). */
static double rule_tstat(const vp_bars* b, int rule, double* mean_out) {
    double s = 0, q = 0, lm = log(b->open[0]);
    int64_t m = 0;
    for (int64_t t = 1; t + 1 < b->n; ++t) {
        double x = log(b->close[t]);
        double pos = rule == 0 ? (x < lm ? 1.0 : -1.0) : (b->close[t] > b->close[t - 1] ? 1.0 : -1.0);
        double pnl = pos * log(b->close[t + 1] / b->close[t]);
        s += pnl;
        q += pnl * pnl;
        ++m;
    }
    double mean = s / m, sd = sqrt(q / m - mean * mean);
    if (mean_out) *mean_out = mean;
    return mean / (sd / sqrt((double)m));
}

static void test_known_edges(void) {
    const int64_t n = 20000;
    vp_bars ou, tr, gbm;
    vp_synth_cfg c = vp_synth_cfg_default(VP_SYNTH_OU);
    CHECK_OK(vp_synth_generate(&c, n, &ou, NULL));
    c = vp_synth_cfg_default(VP_SYNTH_TREND);
    CHECK_OK(vp_synth_generate(&c, n, &tr, NULL));
    c = vp_synth_cfg_default(VP_SYNTH_GBM);
    CHECK_OK(vp_synth_generate(&c, n, &gbm, NULL));

    /* OU, "long below the mean, short above": expected theta E|x - mean| per bar. */
    double mean;
    double t_ou = rule_tstat(&ou, 0, &mean);
    double sd_x = 0.002 / sqrt(2 * 0.05 - 0.05 * 0.05), expect = 0.05 * sd_x * sqrt(2 / 3.14159265358979);
    CHECK(t_ou > 8.0, "OU reversion rule t = %.2f", t_ou);
    CHECK_NEAR(mean, expect, 0, 0.25);
    /* TREND, "follow the last bar": expected phi E|r| per bar. */
    double t_tr = rule_tstat(&tr, 1, &mean);
    CHECK(t_tr > 8.0, "TREND momentum rule t = %.2f", t_tr);
    CHECK_NEAR(mean, 0.3 * 0.002 * sqrt(2 / 3.14159265358979), 0, 0.25);
    /* GBM: neither rule has an edge. */
    double t_g0 = rule_tstat(&gbm, 0, NULL), t_g1 = rule_tstat(&gbm, 1, NULL);
    CHECK(fabs(t_g0) < 3.0 && fabs(t_g1) < 3.0, "GBM t = %.2f, %.2f", t_g0, t_g1);
    vp_bars_free(&ou);
    vp_bars_free(&tr);
    vp_bars_free(&gbm);
}

static void test_bad_configs(void) {
    vp_bars b;
    vp_synth_cfg c = vp_synth_cfg_default(VP_SYNTH_OU);
    CHECK_STATUS(vp_synth_generate(&c, 0, &b, NULL), VP_ERR_INVALID_ARG, "n = 0");
    c.ou_theta = 0.0;
    CHECK_STATUS(vp_synth_generate(&c, 10, &b, NULL), VP_ERR_INVALID_ARG, "ou_theta");
    c = vp_synth_cfg_default(VP_SYNTH_TREND);
    c.trend_phi = 1.0;
    CHECK_STATUS(vp_synth_generate(&c, 10, &b, NULL), VP_ERR_INVALID_ARG, "trend_phi");
    c = vp_synth_cfg_default(VP_SYNTH_GBM);
    c.sigma = -1;
    CHECK_STATUS(vp_synth_generate(&c, 10, &b, NULL), VP_ERR_INVALID_ARG, "sigma");
    c = vp_synth_cfg_default(VP_SYNTH_GBM);
    c.drift = 1.0;
    CHECK_STATUS(vp_synth_generate(&c, 2000, &b, NULL), VP_ERR_NUMERIC, "finite positive range");
    CHECK(b.n == 0 && b.close == NULL, "nothing left allocated");
    CHECK(
        strcmp(vp_synth_kind_name(VP_SYNTH_OU), "ou") == 0 && strcmp(vp_synth_kind_name(VP_SYNTH_KIND_COUNT), "?") == 0,
        "names");
}

int main(void) {
    RUN_TEST(test_valid_bars);
    RUN_TEST(test_determinism);
    RUN_TEST(test_model_statistics);
    RUN_TEST(test_known_edges);
    RUN_TEST(test_bad_configs);
    return vpt_finish();
}
