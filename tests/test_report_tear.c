/* report.html's tear-sheet panels from a hand-made report: the header (checkpoint, data,
 * spans, in-sample bars), the equity's log-scale twin, the monthly and yearly returns of a
 * curve with known months, the worst drawdown with its dates, the statistics against buy and
 * hold, the trade marks on the price, the exposure, the action mix, the learning curves and
 * the validation against the span from a metrics.jsonl, the config folded away. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>

#include "eval/report_internal.h"
#include "vp_test.h"
#include "vulpes/report.h"

#define DAY_MS 86400000LL
#define JAN1_2017_MS 1483228800000LL /* 2017-01-01 00:00 UTC */
#define N 120                       /* daily points: 2017-01-01 .. 2017-04-30 */

static char g_root[] = "/tmp/vp_test_report_tear_XXXXXX";

static int count_of(const char* s, const char* needle) {
    int n = 0;
    for (const char* p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static void test_panels(void) {
    // a curve flat in January, +10 % over February, back to the start by the end of March (a
    // drawdown from Feb 28 not recovered until Apr 10), then flat
    static int64_t t[N];
    static double eq[N], bh[N], price[N], pos[N];
    for (int i = 0; i < N; ++i) {
        t[i] = JAN1_2017_MS + i * DAY_MS;
        const int feb = 31, mar = 59, apr = 90;  // first index of each month
        eq[i] = i < feb ? 100.0 : i < mar ? 100.0 + 10.0 * (i - feb + 1) / 28.0 : i < apr ? 110.0 - 10.0 * (i - mar + 1) / 31.0
                                                                                  : i < 99 ? 100.0 + (i - apr) : 110.0;
        bh[i] = 100.0 + 0.1 * i + (i % 3);
        price[i] = 1.0 + 0.01 * i;
        pos[i] = i % 10 < 5 ? 1.0 : -1.0;
    }
    int32_t actions[4 * 4] = {2, 0, 1, 2, 0, 3, 0, 0, 1, 1, 2, 1, 2, 2, 0, 0};  // long, short, flat, long
    vp_report_trade trades[2] = {{10, 20, 1, 1.1, 1.2}, {30, -1, -1, 1.3, 0.0}};
    const char* spans[2] = {"train bars [0, 100): a to b UTC", "test bars [200, 320): c to d UTC"};
    // the run's metrics: two train lines, two evals, the checkpoint kept at iteration 20
    char metrics[256];
    vpt_path(metrics, sizeof metrics, g_root, "metrics.jsonl");
    FILE* f = fopen(metrics, "wb");
    CHECK(f != NULL, "cannot write %s", metrics);
    if (!f) return;
    fputs("{\"event\":\"train\",\"iteration\":10,\"loss\":2.5,\"loss_c51\":2.0,\"loss_iqn\":0.5}\n"
          "{\"event\":\"eval\",\"iteration\":10,\"val_sharpe\":0.5,\"val_buy_hold_sharpe\":0.25}\n"
          "{\"event\":\"train\",\"iteration\":20,\"loss\":1.5,\"loss_c51\":1.25,\"loss_iqn\":0.25}\n"
          "{\"event\":\"eval\",\"iteration\":20,\"val_sharpe\":1.75,\"val_total_return_frac\":0.125,"
          "\"val_buy_hold_sharpe\":0.25,\"best\":1}\n"
          "{\"event\":\"checkpoint\",\"iteration\":20,\"file\":\"best.safetensors\",\"reason\":\"best\"}\n",
          f);
    fclose(f);
    vp_metrics_summary m;
    memset(&m, 0, sizeof m);
    CHECK_OK(vp_annual_measure(t, N, &m.annual));
    m.strategy.sharpe = -0.75, m.strategy.total_return = 0.1;
    m.has_tear = 1, m.tear.beta = 0.5, m.tear.var_95 = -0.01, m.tear.n_pairs = N - 1;

    vp_report r;
    memset(&r, 0, sizeof r);
    r.title = "tear", r.n = N, r.times_ms = t, r.equity = eq, r.benchmark = bh, r.metrics = &m;
    r.config_text = "seed: 3\n";
    r.price = price, r.position = pos, r.trades = trades, r.n_trades = 2, r.actions = actions, r.n_actions = 4;
    r.checkpoint = "runs/a/best.safetensors", r.data_file = "examples/data/x.csv", r.spans = spans, r.n_spans = 2;
    r.in_sample_known = 1, r.in_sample_bars = 7, r.run_metrics = metrics;
    char path[256];
    vpt_path(path, sizeof path, g_root, "report.html");
    CHECK_OK(vp_report_write(path, &r));
    char* html = vpt_slurp(path, NULL);
    CHECK(html != NULL, "no page");
    if (!html) return;
    // header
    CHECK(strstr(html, "<p class=\"meta\">checkpoint runs/a/best.safetensors</p>") &&
              strstr(html, "<p class=\"meta\">data examples/data/x.csv</p>") &&
              strstr(html, "<p class=\"meta\">train bars [0, 100): a to b UTC</p>") &&
              strstr(html, "in-sample: 7 of the 120 bars were seen in training"),
          "header lines missing");
    // the log-scale twin of the equity chart, shown by a radio button, and no script
    CHECK(strstr(html, "aria-label=\"equity curve, log scale\"") && strstr(html, "id=\"eq-log\"") &&
              !strstr(html, "<script"),
          "no log-scale equity");
    // months: January 0, February +10 %, March back to 100 (-9.0909 %), April +10 %
    CHECK(strstr(html, "data-month=\"2017-01\" data-v=\"0\">0.00 %</td>") != NULL, "January cell");
    CHECK(strstr(html, "data-month=\"2017-02\" data-v=\"0.10000000000000009\">10.00 %</td>") != NULL ||
              strstr(html, "data-month=\"2017-02\" data-v=\"0.1\">10.00 %</td>") != NULL,
          "February cell");
    CHECK(strstr(html, "data-month=\"2017-03\" data-v=\"-0.090909090909090") != NULL, "March cell");
    CHECK(strstr(html, "<tr data-year=\"2017\"><td class=\"l\">2017</td><td data-v=\"0.10000000000000009\">10.00 %"
                       "</td>") != NULL,
          "the year's row");
    // the worst drawdown: from Feb 28 (index 58) to Mar 31 (89), back at 110 on Apr 9 (99)
    CHECK(strstr(html, "<tr data-peak=\"58\" data-trough=\"89\" data-recovery=\"99\"><td>1</td><td data-v=\"-0."
                       "090909090909090") &&
              strstr(html, "<td class=\"l\">2017-02-28 00:00</td><td class=\"l\">2017-03-31 00:00</td><td class=\"l\">"
                           "2017-04-10 00:00</td><td>41</td><td>41.0</td>"),
          "worst drawdown row");
    // the statistics against buy & hold as given
    CHECK(strstr(html, "<tr data-key=\"beta_ratio\"><td class=\"l\">beta</td><td data-v=\"0.5\">0.500</td>"),
          "beta row");
    // the price with a long entry (triangle up, green), a short one (down, red), one exit
    CHECK(count_of(html, "<polygon fill=\"#1a9850\"") == 1 && count_of(html, "<polygon fill=\"#d73027\"") == 1 &&
              count_of(html, "<circle") == 1 && strstr(html, "2 trades."),
          "trade marks: long %d short %d exits %d", count_of(html, "<polygon fill=\"#1a9850\""),
          count_of(html, "<polygon fill=\"#d73027\""), count_of(html, "<circle"));
    CHECK(strstr(html, "<h2>Exposure</h2>") && strstr(html, "aria-label=\"exposure\""), "exposure chart");
    // the action mix: 2 long, 1 short, 1 flat of 4; size 0.25 twice
    CHECK(strstr(html, "data-branch=\"0\" data-choice=\"2\" data-count=\"2\">long: 50.00 %</td>") &&
              strstr(html, "data-branch=\"0\" data-choice=\"0\" data-count=\"1\">short: 25.00 %</td>") &&
              strstr(html, "data-branch=\"1\" data-choice=\"0\" data-count=\"1\">0.25: 25.00 %</td>"),
          "action mix");
    // learning curves over iterations 10 and 20, the validation of iteration 20 against the span
    CHECK(strstr(html, "aria-label=\"training loss\"") && strstr(html, "aria-label=\"validation Sharpe\""),
          "learning curves");
    CHECK(strstr(html, "<th>validation (iteration 20)</th>") &&
              strstr(html, "<tr data-key=\"val_sharpe\"><td class=\"l\">Sharpe</td><td>1.750</td><td>-0.750</td>") &&
              strstr(html, "<td class=\"l\">total return</td><td>12.50 %</td><td>10.00 %</td>"),
          "validation against the span");
    // the config folded away
    CHECK(strstr(html, "<details><summary>Config</summary>\n<pre class=\"config\">seed: 3\n</pre></details>"),
          "config not in <details>");
    free(html);
    // a missing metrics file leaves the agent's curves out, not the page
    r.run_metrics = "/nonexistent/metrics.jsonl";
    CHECK_OK(vp_report_write(path, &r));
    html = vpt_slurp(path, NULL);
    CHECK(html && !strstr(html, "Learning curves") && strstr(html, "Action mix"), "page without the run's metrics");
    free(html);
    // arrays that are announced but missing are refused
    r.trades = NULL;
    CHECK_STATUS(vp_report_write(path, &r), VP_ERR_INVALID_ARG, "2 trades");
}

int main(void) {
    if (!mkdtemp(g_root)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    RUN_TEST(test_panels);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return vpt_finish();
}
