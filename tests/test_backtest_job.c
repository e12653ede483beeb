/* The `vulpes backtest` job from a checkpoint and a CSV file: span bounds by bar index and
 * by time, the run folder, and the file-level leakage guard — two bar files equal up to
 * bar b and wildly different after it give byte-identical trades.csv and equity.csv and
 * the same summary for a backtest ending at b (the features are computed from bars before
 * b only, the warm-up from before the span). */
#define _POSIX_C_SOURCE 200809L
#include "test_backtest_job_util.h"

static void test_job(void) {
    char csv_b[320], out[4][320], path[2][400];
    job_fixture fx;
    fixture_init(&fx, 31);
    vp_backend* b = fx.b;
    vpt_market mk = fx.mk;
    const char *dir = fx.dir, *csv_a = fx.csv, *ck = fx.ck;
    // two bar files: equal before TO, prices tripled with huge volume from TO on
    snprintf(csv_b, sizeof csv_b, "%s/b.csv", dir);
    for (int64_t i = TO; i < NBARS; ++i) {
        mk.bars.open[i] *= 3.0, mk.bars.high[i] *= 3.0, mk.bars.low[i] *= 3.0, mk.bars.close[i] *= 3.0;
        mk.bars.volume[i] = 1e9;
    }
    CHECK_OK(vp_bars_save_csv(&mk.bars, csv_b, -1));

    // the same span: by index on file a, by index on file b, by time on file b
    char from_t[32], to_t[32];
    vp_time_format_iso(mk.bars.time_ms[FROM], from_t, sizeof from_t);
    vp_time_format_iso(mk.bars.time_ms[TO - 1] + 1, to_t, sizeof to_t);
    const char* data[3] = {csv_a, csv_b, csv_b};
    const char* from[3] = {"400", "400", from_t};
    const char* to[3] = {"760", "760", to_t};
    vp_rollout_result r[3];
    for (int k = 0; k < 3; ++k) {
        snprintf(out[k], sizeof out[k], "%s/out%d", dir, k);
        vp_backtest_job job = {ck, data[k], from[k], to[k], out[k], 0, 1, 1, NULL, NULL, 0, NULL};
        char got[400];
        CHECK_OK(vp_backtest_job_run(b, &job, &r[k], got, sizeof got));
        CHECK(strcmp(got, out[k]) == 0, "output folder %s", got);
        CHECK(r[k].span.begin == FROM && r[k].span.end == TO, "span [%lld, %lld)", (long long)r[k].span.begin,
              (long long)r[k].span.end);
    }
    CHECK(r[0].n_trades > 0, "no trades");
    CHECK(vpt_results_equal(&r[0], &r[1]) && vpt_results_equal(&r[0], &r[2]), "results differ");
    static const char* files[3] = {"trades.csv", "equity.csv", "config.yaml"};
    for (int f = 0; f < 3; ++f)
        for (int k = 1; k < 3; ++k) {
            snprintf(path[0], sizeof path[0], "%s/%s", out[0], files[f]);
            snprintf(path[1], sizeof path[1], "%s/%s", out[k], files[f]);
            CHECK(same_text(path[0], path[1], NULL), "%s of run %d differs", files[f], k);
        }
    // summary.json: the same after the status up to the data file's name; the status says the
    // run on the training file itself is in-sample (this older checkpoint records no data, so
    // the overlap is known only for its own data.path)
    snprintf(path[0], sizeof path[0], "%s/summary.json", out[0]);
    snprintf(path[1], sizeof path[1], "%s/summary.json", out[1]);
    CHECK(same_text_from(path[0], path[1], "\"annualisation\"", "\"backtest\""), "summary.json differs");
    char* s0 = vpt_slurp(path[0], NULL);
    char* s1 = vpt_slurp(path[1], NULL);
    CHECK(s0 && s1 && strstr(s0, "\"status\":\t\"warnings\"") && strstr(s1, "\"status\":\t\"ok\""),
          "statuses: %.60s | %.60s", s0 ? s0 : "", s1 ? s1 : "");
    free(s0);
    free(s1);
    // an existing folder is refused without force, reused with it
    vp_backtest_job again = {ck, csv_a, "400", "760", out[0], 0, 1, 1, NULL, NULL, 0, NULL};
    vp_rollout_result r4;
    char got[400];
    CHECK(vp_backtest_job_run(b, &again, &r4, got, sizeof got) != VP_OK, "non-empty folder reused without force");
    vp_rollout_result_free(&r4);
    again.force = 1;
    again.n_windows = 3;
    CHECK_OK(vp_backtest_job_run(b, &again, &r4, got, sizeof got));
    CHECK(r4.n_windows == 3 && r4.span.end == TO, "segments %lld", (long long)r4.n_windows);
    vp_rollout_result_free(&r4);
    // bounds: a time after the last bar is the end, a bad bound names itself
    int64_t idx = -1;
    CHECK_OK(vp_backtest_bar_of(&mk.bars, "2100-01-01", &idx));
    CHECK(idx == NBARS, "index %lld", (long long)idx);
    CHECK_STATUS(vp_backtest_bar_of(&mk.bars, "yesterday", &idx), VP_ERR_INVALID_ARG, "yesterday");
    CHECK_STATUS(vp_backtest_bar_of(&mk.bars, "901", &idx), VP_ERR_INVALID_ARG, "beyond");
    for (int k = 0; k < 3; ++k) vp_rollout_result_free(&r[k]);
    fixture_free(&fx);
}

/* Runs a job over the checkpoint with the given data, span and bounds into dir/out; the span
 * info into *si. */
static vp_status run_span(vp_backend* b, const char* ck, const char* data, const char* span, const char* from,
                          const char* to, const char* out, vp_rollout_result* r, vp_backtest_span_info* si) {
    vp_backtest_job job = {ck, data, from, to, out, 1, 1, 1, span, si, 0, NULL};
    char got[400];
    vp_status s = vp_backtest_job_run(b, &job, r, got, sizeof got);
    return s;
}

/* The span: the training run's test span by default, --span all with its overlap with the
 * train and validation spans counted (in summary.json and the report's heading), --from /
 * --to as given, --from after the last bar naming it, other data with the overlap unknown, a
 * file too short for the training split backtested with bounds; prices at the tick's decimals. */
static void test_span(void) {
    char other[320], shortf[320], out[320], path[400];
    job_fixture fx;
    fixture_init(&fx, 31);
    vp_backend* b = fx.b;
    vpt_market mk = fx.mk;
    vp_config cfg = fx.cfg;
    const char *dir = fx.dir, *csv = fx.csv, *ck = fx.ck;
    snprintf(other, sizeof other, "%s/other.csv", dir);
    CHECK_OK(vp_bars_save_csv(&mk.bars, other, -1));
    vp_train_data td;
    CHECK_OK(vp_train_data_load(&td, &cfg));
    const vp_split sp = td.split;
    vp_train_data_free(&td);
    vp_rollout_result r;
    vp_backtest_span_info si;

    // default: the training run's test span, none of it seen in training
    snprintf(out, sizeof out, "%s/default", dir);
    CHECK_OK(run_span(b, ck, NULL, NULL, NULL, NULL, out, &r, &si));
    CHECK(r.span.begin == sp.test.begin && r.span.end == sp.test.end, "span [%lld, %lld), test [%lld, %lld)",
          (long long)r.span.begin, (long long)r.span.end, (long long)sp.test.begin, (long long)sp.test.end);
    CHECK(strstr(si.source, "test span") != NULL, "source '%s'", si.source);
    CHECK(si.overlap_known && si.train_bars == 0 && si.val_bars == 0, "overlap %d %lld %lld", si.overlap_known,
          (long long)si.train_bars, (long long)si.val_bars);
    // prices at the tick's decimals (0.01: two)
    snprintf(path, sizeof path, "%s/trades.csv", out);
    char* text = vpt_slurp(path, NULL);
    char* row = text ? strchr(text, '\n') : NULL;
    CHECK(row != NULL && r.n_trades > 0, "trades.csv has no trade");
    if (row) {
        char* f = row + 1;
        for (int i = 0; i < 5; ++i) f = strchr(f, ',') + 1; // entry_price
        const char* dot = strchr(f, '.');
        CHECK(dot != NULL && strcspn(dot + 1, ",") == 2, "entry price '%.20s' at tick 0.01", f);
    }
    free(text);
    vp_rollout_result_free(&r);

    // --span all: the train and validation spans inside, counted and written
    snprintf(out, sizeof out, "%s/all", dir);
    CHECK_OK(run_span(b, ck, csv, "all", NULL, NULL, out, &r, &si));
    CHECK(si.overlap_known && si.train_bars == vp_span_len(sp.train) && si.val_bars == vp_span_len(sp.val),
          "overlap %lld train, %lld val", (long long)si.train_bars, (long long)si.val_bars);
    CHECK(si.n_bars == vp_span_len(r.span), "n_bars %lld", (long long)si.n_bars);
    snprintf(path, sizeof path, "%s/summary.json", out);
    text = vpt_slurp(path, NULL);
    CHECK(text && strstr(text, "\"overlap\"") && strstr(text, "\"train_bars\""), "summary.json without overlap");
    free(text);
    snprintf(path, sizeof path, "%s/report.html", out);
    text = vpt_slurp(path, NULL);
    char needle[128];
    snprintf(needle, sizeof needle, "%lld of the %lld bars were seen in training",
             (long long)(si.train_bars + si.val_bars), (long long)si.n_bars);
    CHECK(text && strstr(text, needle), "report.html without '%s'", needle);
    free(text);
    vp_rollout_result_free(&r);

    // --from / --to as given; --span val
    snprintf(out, sizeof out, "%s/bounds", dir);
    CHECK_OK(run_span(b, ck, NULL, NULL, "400", "760", out, &r, &si));
    CHECK(r.span.begin == 400 && r.span.end == 760 && strstr(si.source, "--from/--to"), "span [%lld, %lld) '%s'",
          (long long)r.span.begin, (long long)r.span.end, si.source);
    CHECK(si.train_bars == (sp.train.end > 400 ? sp.train.end - 400 : 0), "train overlap %lld",
          (long long)si.train_bars);
    vp_rollout_result_free(&r);
    CHECK_OK(run_span(b, ck, NULL, "val", NULL, NULL, out, &r, &si));
    CHECK(r.span.begin == sp.val.begin && r.span.end == sp.val.end && si.val_bars == vp_span_len(sp.val),
          "val span [%lld, %lld)", (long long)r.span.begin, (long long)r.span.end);
    vp_rollout_result_free(&r);
    char last[32], want[96];
    snprintf(want, sizeof want, "after the last bar, %s", vp_time_format_iso(mk.bars.time_ms[NBARS - 1], last, 32));
    CHECK_STATUS(run_span(b, ck, NULL, NULL, "2100-01-01", NULL, out, &r, &si), VP_ERR_INVALID_ARG, want);
    vp_rollout_result_free(&r);
    CHECK_STATUS(run_span(b, ck, NULL, "later", NULL, NULL, out, &r, &si), VP_ERR_INVALID_ARG, "--span 'later'");
    vp_rollout_result_free(&r);

    // other data: the overlap unknown
    CHECK_OK(run_span(b, ck, other, NULL, NULL, NULL, out, &r, &si));
    CHECK(!si.overlap_known && strstr(si.unknown_why, "data.path"), "overlap known on other data");
    vp_rollout_result_free(&r);

    // a file too short for the training split: bounds work, the default says what it needs
    const int64_t n_short = sp.train.begin + 4;
    vp_bars head = mk.bars;
    head.n = n_short;
    snprintf(shortf, sizeof shortf, "%s/short.csv", dir);
    CHECK_OK(vp_bars_save_csv(&head, shortf, -1));
    char to_s[24];
    snprintf(to_s, sizeof to_s, "%lld", (long long)n_short);
    CHECK_OK(run_span(b, ck, shortf, NULL, "2", to_s, out, &r, &si));
    CHECK(r.span.end == n_short && !si.split_fits, "short span end %lld", (long long)r.span.end);
    vp_rollout_result_free(&r);
    CHECK_STATUS(run_span(b, ck, shortf, NULL, NULL, NULL, out, &r, &si), VP_ERR_INVALID_ARG,
                 "does not fit the");
    CHECK(strstr(vp_last_error(), "vp_split_make") == NULL, "split error shown: %s", vp_last_error());
    vp_rollout_result_free(&r);

    fixture_free(&fx);
}

/* instrument.* overrides change the costs of one backtest (every trade pays the extra commission);
 * any other key is refused before an output folder is made. */
static void test_cost_overrides(void) {
    char out[320];
    job_fixture fx;
    fixture_init(&fx, 33);
    vp_backend* b = fx.b;
    const vp_config cfg = fx.cfg;
    const char *dir = fx.dir, *ck = fx.ck;
    vp_rollout_result base, dear;
    char got[400];
    snprintf(out, sizeof out, "%s/base", dir);
    vp_backtest_job job = {ck, NULL, NULL, NULL, out, 0, 1, 1, "all", NULL, 0, NULL};
    CHECK_OK(vp_backtest_job_run(b, &job, &base, got, sizeof got));
    char c1[64];
    snprintf(c1, sizeof c1, "instrument.commission=%g", cfg.instrument.commission + 7.0);
    char* over[] = {c1};
    snprintf(out, sizeof out, "%s/dear", dir);
    job.out = out, job.n_overrides = 1, job.overrides = over;
    CHECK_OK(vp_backtest_job_run(b, &job, &dear, got, sizeof got));
    // every trade pays the extra 7 a contract on at least two fills of at least one contract (the
    // decisions may differ: the portfolio vector sees the drawdown, which the costs change)
    CHECK(base.n_trades > 0 && dear.n_trades > 0, "%lld and %lld trades", (long long)base.n_trades,
          (long long)dear.n_trades);
    const double per_base = base.summary.trades.costs / (double)base.n_trades;
    const double per_dear = dear.summary.trades.costs / (double)dear.n_trades;
    CHECK(per_dear >= per_base + 14.0 - 1e-9, "costs per trade %g with the override, %g without", per_dear, per_base);
    vp_rollout_result_free(&base);
    vp_rollout_result_free(&dear);
    // a key of the training config is refused, and no folder is made
    char* bad[] = {"learn.lr=0.1"};
    snprintf(out, sizeof out, "%s/refused", dir);
    job.out = out, job.overrides = bad;
    CHECK_STATUS(vp_backtest_job_run(b, &job, &base, got, sizeof got), VP_ERR_INVALID_ARG,
                 "a backtest may change only instrument.* keys");
    vp_rollout_result_free(&base);
    CHECK(!vpt_exists(dir, "refused"), "a refused backtest made its folder");
    fixture_free(&fx);
}

int main(void) {
    RUN_TEST(test_job);
    RUN_TEST(test_span);
    RUN_TEST(test_cost_overrides);
    return vpt_finish();
}
