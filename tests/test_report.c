/* report.html: M4 decimation, dates, the page's content and self-containment, atomic
 * writing, bad inputs, and (when chromium is installed) rendering in headless Chromium
 * through tests/report_browser.sh. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <sys/wait.h>

#include "eval/report_internal.h"
#include "vp_test.h"
#include "vulpes/metrics.h"
#include "vulpes/report.h"

#define H_MS 3600000LL
#define T0_MS 1483308000000LL /* 2017-01-01 22:00 UTC */

/* Occurrences of needle in s. */
static int count_of(const char* s, const char* needle) {
    int n = 0;
    for (const char* p = s; (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static int file_exists(const char* path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void test_decimate_m4(void) {
    enum { N = 100003, COLS = 50 };
    static int64_t t[N], idx[4 * COLS];
    static double y[N];
    for (int i = 0; i < N; ++i) {
        t[i] = T0_MS + i * H_MS;
        y[i] = sin(i * 0.001) + 0.001 * (i % 7);
    }
    y[54321] = 40.0;   // a one-bar spike up
    y[77777] = -40.0;  // and one down
    int64_t m = vp_decimate_m4(t, y, N, COLS, idx);
    CHECK(m <= 4 * COLS && m >= 2 * COLS, "kept %lld points", (long long)m);
    CHECK(idx[0] == 0 && idx[m - 1] == N - 1, "ends %lld %lld", (long long)idx[0], (long long)idx[m - 1]);
    int spike_up = 0, spike_down = 0;
    for (int64_t k = 0; k < m; ++k) {
        CHECK(k == 0 || idx[k] > idx[k - 1], "indices not increasing at %lld", (long long)k);
        spike_up |= idx[k] == 54321;
        spike_down |= idx[k] == 77777;
    }
    CHECK(spike_up && spike_down, "spikes lost: up %d down %d", spike_up, spike_down);
    // every column's lowest and highest point is kept (brute force over the columns)
    double span = (double)(t[N - 1] - t[0]);
    for (int c = 0; c < COLS; ++c) {
        int64_t lo = -1, hi = -1;
        for (int i = 0; i < N; ++i) {
            int ci = (int)floor((double)(t[i] - t[0]) / span * COLS);
            if ((ci >= COLS ? COLS - 1 : ci) != c) continue;
            if (lo < 0 || y[i] < y[lo]) lo = i;
            if (hi < 0 || y[i] > y[hi]) hi = i;
        }
        int has_lo = 0, has_hi = 0;
        for (int64_t k = 0; k < m; ++k) {
            has_lo |= idx[k] == lo;
            has_hi |= idx[k] == hi;
        }
        CHECK(lo >= 0 && has_lo && has_hi, "column %d: min %lld / max %lld not kept", c, (long long)lo, (long long)hi);
    }
    // fewer points than columns: every point is kept
    m = vp_decimate_m4(t, y, 3, 860, idx);
    CHECK(m == 3 && idx[0] == 0 && idx[1] == 1 && idx[2] == 2, "3 points -> %lld", (long long)m);
    m = vp_decimate_m4(t, y, 1, 860, idx);
    CHECK(m == 1 && idx[0] == 0, "1 point -> %lld", (long long)m);
}

static void test_format_time(void) {
    char b[32];
    CHECK(strcmp(vp_report_format_time(0, 1, b, sizeof b), "1970-01-01 00:00") == 0, "%s", b);
    CHECK(strcmp(vp_report_format_time(T0_MS, 1, b, sizeof b), "2017-01-01 22:00") == 0, "%s", b);
    CHECK(strcmp(vp_report_format_time(951782400000LL, 0, b, sizeof b), "2000-02-29") == 0, "%s", b);
    CHECK(strcmp(vp_report_format_time(-1, 1, b, sizeof b), "1969-12-31 23:59") == 0, "%s", b);
}

/* A synthetic run: n hourly bars of a drifting strategy and a noisier benchmark, one spike,
 * its metrics, trades, three folds and a config that needs escaping. */
typedef struct synth_run {
    int64_t n;
    int64_t* t;
    double *eq, *bh, *r;
    vp_metrics_summary m;
    vp_report_fold folds[3];
    vp_report rep;
} synth_run;

static void synth_make(synth_run* s, int64_t n) {
    memset(s, 0, sizeof *s);
    s->n = n;
    s->t = malloc((size_t)n * sizeof *s->t);
    s->eq = malloc((size_t)n * sizeof *s->eq);
    s->bh = malloc((size_t)n * sizeof *s->bh);
    s->r = malloc((size_t)n * sizeof *s->r);
    uint64_t st = 7;
    double e = 100000, b = 100000;
    for (int64_t i = 0; i < n; ++i) {
        st = st * 6364136223846793005ull + 1442695040888963407ull;
        double u = (double)(st >> 11) / 9007199254740992.0 - 0.5;
        e *= 1 + 0.004 * u + 0.00005;
        b *= 1 + 0.006 * u;
        s->t[i] = T0_MS + i * H_MS + (i / 120) * 48 * H_MS;  // 120 bars, then a 2-day weekend
        s->eq[i] = e;
        s->bh[i] = b;
    }
    CHECK_OK(vp_annual_measure(s->t, n, &s->m.annual));
    double ppy = s->m.annual.periods_per_year;
    CHECK_OK(vp_returns_from_equity(s->eq, n, s->r));
    CHECK_OK(vp_perf_compute(s->r, n - 1, ppy, &s->m.strategy));
    // three folds over thirds of the strategy returns
    for (int f = 0; f < 3; ++f) {
        int64_t a = f * (n - 1) / 3, z = (f + 1) * (n - 1) / 3;
        s->folds[f].index = f;
        s->folds[f].train_start_ms = s->t[a] - 1000 * H_MS;
        s->folds[f].test_start_ms = s->t[a];
        s->folds[f].test_end_ms = s->t[z];
        s->folds[f].val_score = 0.5 + f;
        CHECK_OK(vp_perf_compute(s->r + a, z - a, ppy, &s->folds[f].test));
        CHECK_OK(vp_perf_compute(s->r + a, z - a, ppy, &s->folds[f].buy_hold));
        s->folds[f].trades.n_trades = 10 + f;
        s->folds[f].trades.hit_rate = 0.25 * (f + 1);
    }
    CHECK_OK(vp_returns_from_equity(s->bh, n, s->r));
    CHECK_OK(vp_perf_compute(s->r, n - 1, ppy, &s->m.buy_hold));
    for (int64_t i = 0; i < n - 1; ++i) s->r[i] = 0.0;
    CHECK_OK(vp_perf_compute(s->r, n - 1, ppy, &s->m.flat));
    const vp_trade tr[4] = {{300.0, 10.0, 5}, {-120.0, 10.0, 9}, {80.0, 10.0, 2}, {40.0, 10.0, 30}};
    CHECK_OK(vp_trade_stats_compute(tr, 4, NULL, 0, 1.0, ppy, &s->m.trades));
    vp_report rep = {"backtest <synthetic> & co", n, s->t, s->eq, s->bh, NULL, &s->m, s->folds, 3,
                     "seed: 7\nnote: \"<b>not bold</b>\" & more\n", 5, 0.42, NULL, 0, NULL, 0, {0, 0, 0}, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, 0, 0, NULL};
    s->rep = rep;
}

static void synth_free(synth_run* s) {
    free(s->t);
    free(s->eq);
    free(s->bh);
    free(s->r);
}

/* A fresh temporary folder into dir[n]. */
static int make_tmp_dir(char* dir, size_t n) {
    const char* base = getenv("TMPDIR");
    snprintf(dir, n, "%s/vp_test_report.XXXXXX", base && base[0] ? base : "/tmp");
    return mkdtemp(dir) != NULL;
}

/* Removes the folder made by make_tmp_dir. */
static void remove_tmp_dir(const char* dir) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0) fprintf(stderr, "  note: could not remove %s\n", dir);
}

/* The text of metric `key`'s first value cell in the page (the strategy column). */
static void first_cell(const char* html, const char* key, char* out, size_t n) {
    char tag[96];
    snprintf(tag, sizeof tag, "data-key=\"%s\"><td class=\"l\">", key);
    out[0] = '\0';
    const char* p = strstr(html, tag);
    if (!p || !(p = strstr(p + strlen(tag), "<td>"))) return;
    p += 4;
    const char* e = strstr(p, "</td>");
    if (e) snprintf(out, n, "%.*s", (int)(e - p), p);
}

static void test_report_content(void) {
    char dir[512], path[600];
    CHECK(make_tmp_dir(dir, sizeof dir), "mkdtemp failed");
    synth_run s;
    synth_make(&s, 100003);
    snprintf(path, sizeof path, "%s/report.html", dir);
    CHECK_OK(vp_report_write(path, &s.rep));
    char* html = vpt_slurp(path, NULL);
    char tmp[620];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK(html != NULL && !file_exists(tmp), "report missing or .tmp left behind");
    if (html) {
        // a whole page, self-contained: nothing that loads from anywhere
        CHECK(strncmp(html, "<!DOCTYPE html>", 15) == 0 && strstr(html, "</html>\n"), "not a whole page");
        CHECK(strstr(html, "Content-Security-Policy") != NULL, "no content policy");
        const char* banned[] = {"<script", "src=", "href=", "url(", "@import", "http://", "https://", "<link"};
        for (size_t i = 0; i < sizeof banned / sizeof banned[0]; ++i)
            CHECK(strstr(html, banned[i]) == NULL, "page contains '%s'", banned[i]);
        // the charts (equity linear and log, drawdown, rolling Sharpe and volatility, the return
        // histogram), the curves in their colours, decimated to at most 4 points a column
        CHECK(count_of(html, "<svg") == 6 && count_of(html, "<polyline") == 7, "svg %d polylines %d",
              count_of(html, "<svg"), count_of(html, "<polyline"));
        CHECK(strstr(html, "stroke=\"" VP_REPORT_COLOR_STRATEGY "\"") && strstr(html, "stroke=\"" VP_REPORT_COLOR_BENCHMARK "\"") &&
                  strstr(html, "fill=\"" VP_REPORT_COLOR_DD_FILL "\""),
              "curve colours missing");
        const char* pl = strstr(html, "<polyline");
        const char* pe = pl ? strstr(pl, "/>") : NULL;
        int pts = 0;
        for (const char* p = pl; p && p < pe; ++p) pts += *p == ',';
        CHECK(pts >= VP_REPORT_PLOT_WIDTH && pts <= 4 * VP_REPORT_PLOT_WIDTH, "strategy line has %d points", pts);
        // the metrics as the shared formatter writes them, the factor, the folds
        char want[64], got[64];
        first_cell(html, "sharpe_ratio", got, sizeof got);
        vp_metric_format(s.m.strategy.sharpe, VP_METRIC_UNIT_RATIO, want, sizeof want);
        CHECK(strcmp(got, want) == 0, "Sharpe cell '%s', expected '%s'", got, want);
        first_cell(html, "max_drawdown_frac", got, sizeof got);
        vp_metric_format(s.m.strategy.max_drawdown, VP_METRIC_UNIT_FRAC, want, sizeof want);
        CHECK(strcmp(got, want) == 0 && got[0] == '-', "drawdown cell '%s', expected '%s'", got, want);
        first_cell(html, "profit_factor_ratio", got, sizeof got);
        CHECK(strcmp(got, "3.500") == 0, "profit factor cell '%s'", got);
        CHECK(strstr(html, "periods/year (measured: 100003 bars") != NULL, "annualisation line missing");
        // the statistical weight: SE, PSR and its verdict, and the selection's deflated Sharpe
        CHECK(strstr(html, "(standard error); P(true Sharpe &gt; 0) ") && strstr(html, "from noise at 95 %</p>"),
              "Sharpe weight line missing");
        const double psr = s.m.strategy.psr_vs_zero;
        const char* verdict = psr >= 0.95   ? ": a gain distinguishable from noise at 95 %</p>"
                              : psr <= 0.05 ? ": a loss distinguishable from noise at 95 %</p>"
                                            : ": not distinguishable from noise at 95 %</p>";
        CHECK(strstr(html, verdict) != NULL, "PSR %g: verdict '%s' missing", psr, verdict);
        CHECK(strstr(html, "<p class=\"meta\">deflated Sharpe over 5 validations (each one trial): 42.00 %, does not "
                           "survive the deflation at 95 %</p>") != NULL && !strstr(html, " folds (each one trial)"),
              "deflated Sharpe line of a training run missing");
        CHECK(count_of(html, "<tr><td>") == 3, "fold rows: %d", count_of(html, "<tr><td>"));
        CHECK(strstr(html, "<td>2.500</td>") && strstr(html, "<td>75.00 %</td>"), "fold 2 values missing");
        // escaped title and config
        CHECK(strstr(html, "backtest &lt;synthetic&gt; &amp; co") != NULL, "title not escaped");
        CHECK(strstr(html, "note: &quot;&lt;b&gt;not bold&lt;/b&gt;&quot; &amp; more") && !strstr(html, "<b>"),
              "config not escaped");
        free(html);
    }
    synth_free(&s);
    remove_tmp_dir(dir);
}

/* The page of rep written to memory (caller frees). */
static char* page_text(const vp_report* rep) {
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    CHECK_OK(vp_report_write_stream(f, rep));
    fclose(f);
    return text;
}

/* The DSR line names its trials: a training run's validations, a walk-forward's folds; it says
 * whether the Sharpe survives the deflation at 95 %, or that it is undefined; < 2 trials: none. */
static void test_report_trials(void) {
    synth_run s;
    synth_make(&s, 1001);
    s.rep.selection_trials = 3, s.rep.deflated_sharpe = 0.97, s.rep.trials_label = "folds";
    char* html = page_text(&s.rep);
    CHECK(html && strstr(html, "<p class=\"meta\">deflated Sharpe over 3 folds (each one trial): 97.00 %, survives "
                               "the deflation at 95 %</p>\n") && !strstr(html, "validations"),
          "walk-forward DSR line:\n%s", html ? html : "");
    // after the Sharpe's weight line (SE, PSR, verdict)
    const char* weight = html ? strstr(html, "(standard error); P(true Sharpe &gt; 0) ") : NULL;
    CHECK(weight && weight < strstr(html, "deflated Sharpe over 3 folds"),
          "the DSR line is not after the Sharpe weight line");
    free(html);
    s.rep.deflated_sharpe = NAN;
    html = page_text(&s.rep);
    CHECK(html && strstr(html, "deflated Sharpe over 3 folds (each one trial): -, undefined (too few returns or no "
                               "spread)</p>"), "undefined DSR line");
    free(html);
    s.rep.trials_label = NULL, s.rep.selection_trials = 2, s.rep.deflated_sharpe = 0.95;
    html = page_text(&s.rep);
    CHECK(html && strstr(html, "deflated Sharpe over 2 validations (each one trial): 95.00 %, survives the deflation "
                               "at 95 %</p>"), "training DSR line at exactly 0.95");
    free(html);
    s.rep.selection_trials = 1;
    html = page_text(&s.rep);
    CHECK(html && !strstr(html, "deflated Sharpe"), "a DSR line with one trial");
    free(html);
    synth_free(&s);
}

static void test_report_minimal_and_errors(void) {
    char dir[512], path[600];
    CHECK(make_tmp_dir(dir, sizeof dir), "mkdtemp failed");
    snprintf(path, sizeof path, "%s/report.html", dir);
    // one point, nothing optional
    const int64_t t1[1] = {T0_MS};
    const double e1[1] = {100.0};
    vp_report r = {NULL, 1, t1, e1, NULL, NULL, NULL, NULL, 0, NULL, 0, NAN, NULL, 0, NULL, 0, {0, 0, 0}, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, 0, 0, NULL};
    CHECK_OK(vp_report_write(path, &r));
    char* html = vpt_slurp(path, NULL);
    CHECK(html && strstr(html, "<h1>vulpes report</h1>") && strstr(html, "(no config given)") &&
              count_of(html, "<svg") == 3 && !strstr(html, "Walk-forward") && !strstr(html, "<h2>Metrics") &&
              !strstr(html, "Monthly returns"),
          "minimal page wrong");
    free(html);
    // bad inputs fail, and the file already there is left as it was, with no .tmp
    const int64_t tb[3] = {T0_MS, T0_MS + H_MS, T0_MS + H_MS};
    const double eb[3] = {100.0, 101.0, NAN};
    vp_report bad = {"x", 3, tb, eb, NULL, NULL, NULL, NULL, 0, NULL, 0, NAN, NULL, 0, NULL, 0, {0, 0, 0}, NULL, NULL, NULL, NULL, 0, NULL, 0, NULL, NULL, NULL, 0, 0, 0, NULL};
    CHECK_STATUS(vp_report_write(path, &bad), VP_ERR_INVALID_ARG, "not strictly increasing at 2");
    const int64_t tg[3] = {T0_MS, T0_MS + H_MS, T0_MS + 2 * H_MS};
    bad.times_ms = tg;
    CHECK_STATUS(vp_report_write(path, &bad), VP_ERR_NUMERIC, "equity[2]");
    bad.equity = e1;
    bad.n = 1;
    bad.n_folds = 2;
    CHECK_STATUS(vp_report_write(path, &bad), VP_ERR_INVALID_ARG, "folds is NULL");
    char tmp[620];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    html = vpt_slurp(path, NULL);
    CHECK(html && strstr(html, "<h1>vulpes report</h1>") && !file_exists(tmp), "old report disturbed");
    free(html);
    snprintf(tmp, sizeof tmp, "%s/no/such/folder/report.html", dir);
    CHECK_STATUS(vp_report_write(tmp, &r), VP_ERR_IO, "cannot create");
    remove_tmp_dir(dir);
}

/* The path of tests/report_browser.sh beside this file (or relative to the source root). */
static void script_path(char* out, size_t n) {
    const char* file = __FILE__;
    const char* slash = strrchr(file, '/');
    if (slash && file[0] == '/') snprintf(out, n, "%.*s/report_browser.sh", (int)(slash - file), file);
    else snprintf(out, n, "tests/report_browser.sh");
}

static void test_report_in_chromium(void) {
    if (system("command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1") != 0) {
        printf("SKIP test_report_in_chromium: chromium is not installed (scripts/setup.sh installs it)\n");
        return;
    }
    char dir[512], path[600], script[1024], cmd[4096];
    CHECK(make_tmp_dir(dir, sizeof dir), "mkdtemp failed");
    synth_run s;
    synth_make(&s, 20001);
    s.eq[12345] *= 1.25;  // a one-bar spike the chart must still show
    snprintf(path, sizeof path, "%s/report.html", dir);
    CHECK_OK(vp_report_write(path, &s.rep));

    // the rendered page shows the curves' colours and the metric values
    char sharpe[32], mdd[32], bh[32];
    vp_metric_format(s.m.strategy.sharpe, VP_METRIC_UNIT_RATIO, sharpe, sizeof sharpe);
    vp_metric_format(s.m.strategy.max_drawdown, VP_METRIC_UNIT_FRAC, mdd, sizeof mdd);
    vp_metric_format(s.m.buy_hold.total_return, VP_METRIC_UNIT_FRAC, bh, sizeof bh);
    script_path(script, sizeof script);
    snprintf(cmd, sizeof cmd,
             "bash '%s' --out '%s/browser' --color '%s:300' --color '%s:300' --color '%s:2000' "
             "--expect '<td>%s</td>' --expect '<td>%s</td>' --expect '<td>%s</td>' --expect 'Walk-forward folds' "
             "--expect 'periods/year (measured' --expect 'seed: 7' --expect 'Monthly returns' --expect 'Worst drawdowns' "
             "--expect 'Rolling Sharpe and volatility' --expect 'equity curve, log scale' '%s'",
             script, dir, VP_REPORT_COLOR_STRATEGY + 1, VP_REPORT_COLOR_BENCHMARK + 1, VP_REPORT_COLOR_DD_FILL + 1,
             sharpe, mdd, bh, path);
    fflush(stdout);
    int rc = system(cmd);
    int code = rc != -1 && WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
    CHECK(code == 0, "report_browser.sh exited %d (output kept in %s/browser)", code, dir);
    synth_free(&s);
    if (code == 0) remove_tmp_dir(dir);
}

int main(void) {
    RUN_TEST(test_decimate_m4);
    RUN_TEST(test_format_time);
    RUN_TEST(test_report_content);
    RUN_TEST(test_report_trials);
    RUN_TEST(test_report_minimal_and_errors);
    RUN_TEST(test_report_in_chromium);
    return vpt_finish();
}
