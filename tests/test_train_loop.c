/* Tests of the training loop on the CPU: no copy, allocation or sync across iterations
 * (the backend's counters), the counters the iterations advance, the files of a run folder,
 * determinism (two runs of one config give the same metrics.jsonl, timing lines aside, and
 * byte-identical checkpoints and test-span files; another seed does not), the epsilon schedule
 * in the logs, the exact backtest of the test span at the end (trades.csv, equity.csv,
 * report.html, summary.json's "test"; none after an interrupt) and the refusal of a
 * used run folder. */
#include <math.h>

#include <cjson/cJSON.h>

#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"
#include "vulpes/dqn.h"

/* A trainer on the test configuration (data in *d); returns 0 on failure. */
static int trainer_make(vp_trainer* t, vp_train_data* d, vp_backend* b, const vp_config* cfg) {
    if (vp_train_data_load(d, cfg) != VP_OK) {
        CHECK(0, "data: %s", vp_last_error());
        return 0;
    }
    if (vp_trainer_init(t, b, cfg, d) != VP_OK) {
        CHECK(0, "trainer: %s", vp_last_error());
        vp_train_data_free(d);
        return 0;
    }
    return 1;
}

static void test_iterations_copy_nothing(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_config cfg;
    vp_trainer t;
    vp_train_data d;
    if (!b || !vpt_train_cfg(&cfg, 0, NULL) || !trainer_make(&t, &d, b, &cfg)) return;
    CHECK_OK(vp_trainer_warmup(&t));
    CHECK(t.count.warmup_steps == (200 + 6) / 7, "warm-up steps %lld", (long long)t.count.warmup_steps);
    // First iteration captures the graph; then 25 launches must touch no counter.
    CHECK_OK(vp_trainer_iterate(&t, 1));
    vp_runtime_counters before, after;
    vp_backend_counters(b, &before);
    CHECK_OK(vp_trainer_iterate(&t, 25));
    vp_backend_counters(b, &after);
    CHECK(after.copies == before.copies, "copies %lld -> %lld", (long long)before.copies, (long long)after.copies);
    CHECK(after.allocs == before.allocs, "allocs %lld -> %lld", (long long)before.allocs, (long long)after.allocs);
    CHECK(after.syncs == before.syncs, "syncs %lld -> %lld", (long long)before.syncs, (long long)after.syncs);
    // The iterations did their work: counters on both sides agree.
    CHECK(t.count.iteration == 26 && t.count.learner_steps == 26 && t.count.collect_steps == 52,
          "counters %lld %lld %lld", (long long)t.count.iteration, (long long)t.count.learner_steps,
          (long long)t.count.collect_steps);
    CHECK(t.count.env_steps == (29 + 52) * 7, "env steps %lld", (long long)t.count.env_steps);
    int32_t adam_step = 0;
    int64_t cstep = 0;
    CHECK_OK(vp_download(b, &adam_step, &t.learner.step, sizeof adam_step));
    CHECK_OK(vp_collector_get_step(&t.collector, &cstep));
    CHECK(adam_step == 26 && cstep == 52, "adam step %d, collection step %lld", adam_step, (long long)cstep);
    vp_replay_stats rs;
    CHECK_OK(vp_replay_stats_read(t.replay, &rs));
    CHECK(rs.pushes == 29 + 52 && rs.sample_step == 26, "replay pushes %lld, samples %lld", (long long)rs.pushes,
          (long long)rs.sample_step);
    vp_train_stats st;
    CHECK_OK(vp_trainer_stats(&t, &st));
    CHECK(isfinite(st.learner[VP_STAT_LOSS]) && st.learner[VP_STAT_LOSS] > 0 && st.learner[VP_STAT_NAN_STEPS] == 0,
          "loss %g, NaN steps %g", (double)st.learner[VP_STAT_LOSS], (double)st.learner[VP_STAT_NAN_STEPS]);
    CHECK(st.epsilon == vp_collect_epsilon(&t.parts.collect, 52), "epsilon %g", (double)st.epsilon);
    vp_trainer_free(&t);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* Runs the test configuration (plus overrides) into dir; returns 0 on failure. */
static int run_into(const char* dir, int n, const char* const* over, vp_train_result* r) {
    vp_backend* b = NULL;
    vp_config cfg;
    if (vp_backend_cpu_init(&b) != VP_OK || !vpt_train_cfg(&cfg, n, over)) return 0;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.finish = vp_backtest_train_finish; /* as `vulpes train` runs it */
    vp_status s = vp_train_run(&cfg, b, &o, r);
    vp_backend_free(b);
    CHECK(s == VP_OK, "run into %s: %s", dir, vp_last_error());
    return s == VP_OK;
}

/* Removes a run folder, the test-span files of the exact backtest included. */
static void rm_run(const char* dir) {
    static const char* files[] = {"trades.csv", "equity.csv", "report.html"};
    char p[1200];
    for (int i = 0; i < 3; ++i) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    vpt_rm_run(dir);
}

static void test_same_seed_same_numbers(void) {
    char d1[512], d2[512], d3[512];
    vpt_tmp_dir(d1, sizeof d1, "det1");
    vpt_tmp_dir(d2, sizeof d2, "det2");
    vpt_tmp_dir(d3, sizeof d3, "det3");
    rm_run(d1), rm_run(d2), rm_run(d3);
    vp_train_result r1, r2, r3;
    const char* seed8[] = {"run.seed=8"};
    if (!run_into(d1, 0, NULL, &r1) || !run_into(d2, 0, NULL, &r2) || !run_into(d3, 1, seed8, &r3)) return;
    // Every event but "timing" is the same, line for line.
    char* a = vpt_metrics_lines(d1, "run|train|eval|checkpoint");
    char* b = vpt_metrics_lines(d2, "run|train|eval|checkpoint");
    char* c = vpt_metrics_lines(d3, "train");
    CHECK(a && b && strcmp(a, b) == 0, "metrics.jsonl of two identical runs differ");
    char* at = vpt_metrics_lines(d1, "train");
    CHECK(vpt_count_lines(at) == 8, "%d train lines (40 iterations, log every 5)", vpt_count_lines(at));
    char* ae = vpt_metrics_lines(d1, "eval");
    CHECK(vpt_count_lines(ae) == 4, "%d eval lines (eval every 10)", vpt_count_lines(ae));
    char* ac = vpt_metrics_lines(d1, "checkpoint");
    CHECK(strstr(ac, "\"reason\":\"periodic\"") && strstr(ac, "\"reason\":\"final\"") &&
              vpt_count_lines(ac) >= 4,
          "checkpoint events: %s", ac);
    CHECK(at && c && strcmp(at, c) != 0, "another seed gave the same train lines");
    // The checkpoints are byte for byte the same.
    size_t n1 = 0, n2 = 0;
    char* f1 = vpt_read_file(d1, "last.safetensors", &n1);
    char* f2 = vpt_read_file(d2, "last.safetensors", &n2);
    CHECK(f1 && f2 && n1 == n2 && n1 > 0 && memcmp(f1, f2, n1) == 0, "last.safetensors differ (%zu, %zu bytes)", n1, n2);
    char* g1 = vpt_read_file(d1, "best.safetensors", &n1);
    char* g2 = vpt_read_file(d2, "best.safetensors", &n2);
    CHECK(g1 && g2 && n1 == n2 && memcmp(g1, g2, n1) == 0, "best.safetensors differ");
    // The exact backtest of the test span writes the same files too.
    static const char* bt_files[] = {"trades.csv", "equity.csv"};
    for (int i = 0; i < 2; ++i) {
        char* x1 = vpt_read_file(d1, bt_files[i], &n1);
        char* x2 = vpt_read_file(d2, bt_files[i], &n2);
        CHECK(x1 && x2 && n1 == n2 && n1 > 0 && memcmp(x1, x2, n1) == 0, "%s differ", bt_files[i]);
        free(x1), free(x2);
    }
    CHECK(r1.test.strategy.sharpe == r2.test.strategy.sharpe || (isnan(r1.test.strategy.sharpe) &&
          isnan(r2.test.strategy.sharpe)), "test Sharpe %g vs %g", r1.test.strategy.sharpe, r2.test.strategy.sharpe);
    free(a), free(b), free(c), free(at), free(ae), free(ac), free(f1), free(f2), free(g1), free(g2);
    rm_run(d1), rm_run(d2), rm_run(d3);
}

/* A number of a summary object (null: NaN, "inf" / "-inf" as such; missing: NaN). */
static double json_num(const cJSON* o, const char* key) {
    const cJSON* x = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsNumber(x)) return x->valuedouble;
    if (cJSON_IsString(x)) return strcmp(x->valuestring, "-inf") == 0 ? -INFINITY : INFINITY;
    return NAN;
}

/* The exact backtest of test span `test` in dir: trades.csv, equity.csv and report.html are
 * well-formed and agree with summary.json's "test", the run's one test-span result. */
static void check_test_files(const char* dir, vp_span test, double initial_equity) {
    char* sum = vpt_read_file(dir, "summary.json", NULL);
    cJSON* root = sum ? cJSON_Parse(sum) : NULL;
    free(sum);
    const cJSON* tb = cJSON_GetObjectItemCaseSensitive(root, "test");
    const cJSON* bt = cJSON_GetObjectItemCaseSensitive(tb, "backtest");
    const cJSON* span = cJSON_GetObjectItemCaseSensitive(bt, "span");
    const cJSON* strat = cJSON_GetObjectItemCaseSensitive(tb, "strategy");
    const cJSON* trades = cJSON_GetObjectItemCaseSensitive(tb, "trades");
    const cJSON* mode = cJSON_GetObjectItemCaseSensitive(bt, "mode");
    const cJSON* params = cJSON_GetObjectItemCaseSensitive(tb, "parameters");
    CHECK(cJSON_IsObject(tb) && cJSON_IsObject(strat) && cJSON_IsString(params) &&
              cJSON_IsObject(trades) && cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(tb, "buy_and_hold")),
          "summary.json lacks test.{strategy, buy_and_hold, trades, parameters}");
    CHECK(cJSON_IsString(mode) && strcmp(mode->valuestring, "sequential") == 0 &&
              json_num(span, "first_bar") == (double)test.begin && json_num(span, "last_bar") == (double)(test.end - 1),
          "test: mode %s, bars %g..%g, test span [%lld, %lld)", cJSON_IsString(mode) ? mode->valuestring : "?",
          json_num(span, "first_bar"), json_num(span, "last_bar"), (long long)test.begin, (long long)test.end);
    const double n_trades = json_num(trades, "n_trades"), sharpe = json_num(strat, "sharpe_ratio");
    const double total = json_num(strat, "total_return_frac");
    CHECK(n_trades >= 0 && isfinite(total), "test: %g trades, total return %g", n_trades, total);

    // trades.csv: the header, then one row of 14 fields per trade inside the span
    char* tr = vpt_read_file(dir, "trades.csv", NULL);
    static const char* trades_head = "window,side,size,entry_time,entry_bar,entry_price,exit_time,exit_bar,exit_price,"
                                     "pnl,costs,financing,bars_held,exit_reason\n";
    CHECK(tr && strncmp(tr, trades_head, strlen(trades_head)) == 0, "trades.csv header: %.120s", tr ? tr : "(none)");
    int rows = 0, bad = 0;
    for (char* line = tr ? strchr(tr, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        int commas = 0;
        for (const char* c = line + 1; *c && *c != '\n'; ++c) commas += *c == ',';
        long long w = -1, e0 = -1, e1 = -1;
        const int got = sscanf(line + 1, "%lld,%*[^,],%*[^,],%*[^,],%lld,%*[^,],%*[^,],%lld", &w, &e0, &e1);
        bad += commas != 13 || got != 3 || w != 0 || e0 < test.begin || e1 < e0 || e1 >= test.end;
        ++rows;
    }
    CHECK(rows == n_trades && bad == 0, "trades.csv: %d rows (%d malformed), summary says %g trades", rows, bad, n_trades);
    free(tr);

    // equity.csv: the header, then one row per bar of the test span, from the initial equity, flat at the end
    char* eq = vpt_read_file(dir, "equity.csv", NULL);
    static const char* equity_head =
        "bar_open_time,bar,window,equity,position,drawdown,buy_hold_equity,direction,size,take_profit,stop_loss,"
        "q_margin\n";
    CHECK(eq && strncmp(eq, equity_head, strlen(equity_head)) == 0, "equity.csv header: %.120s", eq ? eq : "(none)");
    int64_t n_eq = 0, next_bar = test.begin;
    double first = NAN, last = NAN;
    int last_pos = -1, order_ok = 1;
    for (char* line = eq ? strchr(eq, '\n') : NULL; line && line[1]; line = strchr(line + 1, '\n')) {
        long long bar = -1, w = -1;
        double e = NAN;
        int pos = 0;
        if (sscanf(line + 1, "%*[^,],%lld,%lld,%lf,%d", &bar, &w, &e, &pos) != 4 || bar != next_bar) order_ok = 0;
        if (n_eq == 0) first = e;
        last = e, last_pos = pos;
        ++next_bar, ++n_eq;
    }
    CHECK(n_eq == test.end - test.begin && order_ok, "equity.csv: %lld rows (bars in order: %d), test span %lld bars",
          (long long)n_eq, order_ok, (long long)(test.end - test.begin));
    CHECK(first == initial_equity && last_pos == 0, "equity.csv: first equity %g, last position %d", first, last_pos);
    CHECK_NEAR(last, initial_equity * (1.0 + total), 1e-6, 1e-12);
    free(eq);

    // report.html: the metrics table holds the summary's Sharpe and trade count, the curves, the config
    char* html = vpt_read_file(dir, "report.html", NULL);
    char fs[64], fn[64], want_sharpe[200], want_trades[200];
    snprintf(want_sharpe, sizeof want_sharpe, "<tr data-key=\"sharpe_ratio\"><td class=\"l\">Sharpe ratio</td><td>%s</td>",
             vp_metric_format(sharpe, VP_METRIC_UNIT_RATIO, fs, sizeof fs));
    snprintf(want_trades, sizeof want_trades, "<tr data-key=\"n_trades\"><td class=\"l\">trades</td><td>%s</td>",
             vp_metric_format(n_trades, VP_METRIC_UNIT_INT, fn, sizeof fn));
    CHECK(html && strstr(html, want_sharpe) && strstr(html, want_trades), "report.html lacks %s or %s", want_sharpe,
          want_trades);
    CHECK(html && strstr(html, "training run: test span") && strstr(html, VP_REPORT_COLOR_STRATEGY) &&
              strstr(html, VP_REPORT_COLOR_BENCHMARK) && strstr(html, VP_REPORT_COLOR_DRAWDOWN) &&
              strstr(html, "synth:trend:bars=1500,seed=3") && strstr(html, "</html>"),
          "report.html lacks its title, curves or config");
    free(html);
    cJSON_Delete(root);
}

/* 1 when dir/name exists. */
static int has_file(const char* dir, const char* name) {
    char* f = vpt_read_file(dir, name, NULL);
    free(f);
    return f != NULL;
}

/* 1 when dir holds none of the test-span files and summary.json says the run is unfinished. */
static int no_test_files(const char* dir) {
    char* sum = vpt_read_file(dir, "summary.json", NULL);
    const int unfinished = sum && strstr(sum, "\"finished\":\tfalse") && !strstr(sum, "\"test\"");
    free(sum);
    return unfinished && !has_file(dir, "trades.csv") && !has_file(dir, "equity.csv") && !has_file(dir, "report.html");
}

static void test_run_folder(void) {
    char dir[512];
    vpt_tmp_dir(dir, sizeof dir, "files");
    rm_run(dir);
    vp_train_result r;
    const char* over[] = {"train.iterations=12", "train.checkpoint_every=0"};
    if (!run_into(dir, 2, over, &r)) return;
    CHECK(!r.interrupted && r.count.iteration == 12 && strcmp(r.run_dir, dir) == 0, "result: %lld iterations in %s",
          (long long)r.count.iteration, r.run_dir);
    // The files of a run, no temporary left behind.
    static const char* files[] = {"config.yaml", "metrics.jsonl", "last.safetensors", "summary.json"};
    for (int i = 0; i < 4; ++i) {
        char* f = vpt_read_file(dir, files[i], NULL);
        CHECK(f != NULL && f[0] != '\0', "%s missing or empty", files[i]);
        free(f);
    }
    char* tmp = vpt_read_file(dir, "last.safetensors.tmp", NULL);
    CHECK(tmp == NULL, "a temporary checkpoint was left behind");
    free(tmp);
    char* sum = vpt_read_file(dir, "summary.json", NULL);
    CHECK(sum && strstr(sum, "\"finished\":\ttrue") && strstr(sum, "\"test\"") && strstr(sum, "\"buy_and_hold\"") &&
              strstr(sum, "\"final_validation\""),
          "summary.json: %s", sum ? sum : "(none)");
    free(sum);
    // The exact backtest of the test span, written at the end of the run.
    vp_config cfg0;
    vp_train_data td;
    memset(&td, 0, sizeof td);
    if (vpt_train_cfg(&cfg0, 2, over) && vp_train_data_load(&td, &cfg0) == VP_OK)
        check_test_files(dir, td.split.test, 10000.0);
    else CHECK(0, "data of the test config: %s", vp_last_error());
    vp_train_data_free(&td);
    // The test span was scored along the exact path: one window over the whole span.
    CHECK(r.test.windows >= 1 && r.test.window_bars >= 61 && r.test.strategy.n_returns == r.test.windows * r.test.window_bars,
          "test: %lld windows of %lld bars, %lld returns", (long long)r.test.windows, (long long)r.test.window_bars,
          (long long)r.test.strategy.n_returns);
    // Epsilon in the logs: 2 collection steps per iteration, 1 -> 0.05 over 50.
    char* tr = vpt_metrics_lines(dir, "train");
    const char* at5 = tr ? strstr(tr, "\"iteration\":5,") : NULL;
    const char* e = at5 ? strstr(at5, "\"epsilon\":") : NULL;
    vp_collect_cfg cc = {1.0f, 0.05f, 50, 0, 1, VP_COLLECT_AUTO};
    CHECK(e && fabs(strtod(e + 10, NULL) - (double)vp_collect_epsilon(&cc, 10)) < 1e-7 &&
              fabs((double)vp_collect_epsilon(&cc, 10) - 0.81) < 1e-6,
          "epsilon at iteration 5: %s", e ? e : "(none)");
    free(tr);
    // A used folder is refused without --force, reused with it.
    vp_backend* b = NULL;
    vp_config cfg;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (b && vpt_train_cfg(&cfg, 2, over)) {
        vp_train_opts o = vp_train_opts_default();
        o.run_dir = dir;
        CHECK_STATUS(vp_train_run(&cfg, b, &o, &r), VP_ERR_STATE, "--force");
        o.mode = VP_RUN_FORCE;
        CHECK_OK(vp_train_run(&cfg, b, &o, &r));
        CHECK(!has_file(dir, "trades.csv") && !has_file(dir, "report.html"), "--force left the old test-span files");
        // An interrupted run writes no test-span files; the resume that finishes it does.
        o.finish = vp_backtest_train_finish;
        o.stop_after = 5;
        CHECK_OK(vp_train_run(&cfg, b, &o, &r));
        CHECK(r.interrupted && no_test_files(dir), "interrupted at %lld: test-span files written",
              (long long)r.count.iteration);
        o.mode = VP_RUN_RESUME;
        o.stop_after = 0;
        CHECK_OK(vp_train_run(&cfg, b, &o, &r));
        CHECK(!r.interrupted && r.count.iteration == 12, "resume ended at %lld", (long long)r.count.iteration);
        vp_train_data td2;
        memset(&td2, 0, sizeof td2);
        if (vp_train_data_load(&td2, &cfg) == VP_OK) check_test_files(dir, td2.split.test, 10000.0);
        vp_train_data_free(&td2);
        // Continuing the finished run removes its test-span files until it finishes again.
        CHECK_OK(vp_config_override(&cfg, "train.iterations=16"));
        o.stop_after = 14;
        CHECK_OK(vp_train_run(&cfg, b, &o, &r));
        CHECK(r.interrupted && no_test_files(dir), "continued run, interrupted at %lld: stale test-span files",
              (long long)r.count.iteration);
    }
    vp_backend_free(b);
    rm_run(dir);
}

int main(void) {
    RUN_TEST(test_iterations_copy_nothing);
    RUN_TEST(test_same_seed_same_numbers);
    RUN_TEST(test_run_folder);
    return vpt_finish();
}
