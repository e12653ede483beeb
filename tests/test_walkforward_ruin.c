/* A walk-forward whose fold ruins, on the CPU with a tiny network: the run never breaks, the
 * stitched account ends with the ruined fold, and summary.json (status "ruined", the ruin with
 * its bars, times and equities), the console (RUINED first, the fold table's note, the metrics
 * marked) and report.html (title, warning, metrics heading) say so. Planted ruins, resumed:
 * a fold cut at a close at exactly 0, and a fold whose curve goes below zero (ruin close at
 * -2500, closed out at -4000 and held there), its returns checked by hand through the negative
 * equity; and a real walk-forward that ruins below zero (an account of 5 against 4 contracts of
 * 10 a point, no leverage cap, ruin at 0), checked against the folds' own backtest files. */
#define _POSIX_C_SOURCE 200809L
#include "test_walkforward_util.h"

enum { TEST = WFU_TEST, FOLDS = WFU_FOLDS, CUT = 20, R = 30 };

/* Field `col` of data row `row` (0: the first after the header) of CSV file `name` in d, into out[n]. */
static const char* csv_field(const char* d, const char* name, int row, int col, char* out, size_t n) {
    out[0] = '\0';
    char* text = vpt_read_file(d, name, NULL);
    const char* at = text ? strchr(text, '\n') : NULL;
    for (int i = 0; at && i < row; ++i) at = strchr(at + 1, '\n');
    for (int i = 0; at && i < col; ++i) at = strpbrk(at + 1, ",\n");
    if (at) {
        ++at;
        const size_t len = strcspn(at, ",\n");
        snprintf(out, n, "%.*s", (int)(len < n ? len : n - 1), at);
    }
    free(text);
    return out;
}

/* Rewrites fold `number`'s equity.csv to its first `keep` rows, row j's equity (the 4th column)
 * set to eq[j] where that is not NaN. */
static void plant_curve(const char* d, int number, int keep, const double* eq) {
    char name[64], path[400];
    char* text = vpt_read_file(d, wfu_fold_file(number, "equity.csv", name, sizeof name), NULL);
    CHECK(text != NULL, "%s", name);
    if (!text) return;
    snprintf(path, sizeof path, "%s/%s", d, name);
    FILE* f = fopen(path, "w");
    char* line = strtok(text, "\n");
    fprintf(f, "%s\n", line);
    for (int j = 0; j < keep && (line = strtok(NULL, "\n")) != NULL; ++j) {
        if (isnan(eq[j])) {
            fprintf(f, "%s\n", line);
            continue;
        }
        const char* c3 = line;
        for (int i = 0; i < 3; ++i) c3 = strchr(c3, ',') + 1;
        fprintf(f, "%.*s%.17g%s\n", (int)(c3 - line), line, eq[j], strchr(c3, ','));
    }
    fclose(f);
    free(text);
}

/* Marks fold `number`'s done.json ruined at its equity.csv rows `at` (the ruin close) and `out`
 * (the close-out). */
static void plant_done(const char* d, int number, int at, int out) {
    char name[64], path[400], b[32];
    cJSON* done = vpt_json_file(d, wfu_fold_file(number, "done.json", name, sizeof name));
    CHECK(done != NULL, "%s", name);
    if (!done) return;
    cJSON* ru = cJSON_CreateObject();
    const char* eq = wfu_fold_file(number, "equity.csv", path, sizeof path);
    cJSON_AddNumberToObject(ru, "bar", atof(csv_field(d, eq, at, 1, b, sizeof b)));
    cJSON_AddNumberToObject(ru, "close_bar", atof(csv_field(d, eq, out, 1, b, sizeof b)));
    cJSON_ReplaceItemInObjectCaseSensitive(done, "test_ruined", cJSON_CreateTrue());
    cJSON_ReplaceItemInObjectCaseSensitive(done, "test_ruin", ru);
    char* text = cJSON_Print(done);
    snprintf(path, sizeof path, "%s/%s", d, name);
    FILE* f = fopen(path, "w");
    fputs(text, f);
    fclose(f);
    free(text);
    cJSON_Delete(done);
}

/* Fold 2 ruined at a close of exactly 0 after CUT points (its last close): the stitched account
 * ends there, fold 3 stands alone. */
static void check_zero_ruin(const char* d, const vp_wf_result* r, int64_t n_trades_12) {
    CHECK(r->n_done == FOLDS && r->n_stitched == 2 && r->ruined_fold == 2, "%lld done, %lld stitched, ruined %lld",
          (long long)r->n_done, (long long)r->n_stitched, (long long)r->ruined_fold);
    CHECK(r->folds[1].ruined && r->folds[1].stitched && !r->folds[0].ruined && !r->folds[2].ruined &&
              !r->folds[2].stitched,
          "fold flags");
    CHECK(r->n_curve == TEST + CUT && r->equity[r->n_curve - 1] == 0.0 && r->fold[r->n_curve - 1] == 2,
          "curve %lld points", (long long)r->n_curve);
    if (r->n_curve != TEST + CUT || r->n_done != FOLDS) return;
    const vp_wf_ruin* ru = &r->folds[1].ruin;
    CHECK(ru->bar == r->bar[r->n_curve - 1] && ru->close_bar == ru->bar && ru->fold_equity_at_ruin == 0.0 &&
              ru->equity_at_ruin == 0.0 && ru->equity_after_close == 0.0 && !ru->below_zero,
          "ruin at bar %lld, closed at %lld, %g", (long long)ru->bar, (long long)ru->close_bar, ru->equity_at_ruin);
    CHECK(r->summary.trades.n_trades == n_trades_12 && r->weight.n_trials == FOLDS, "trades %lld, trials %lld",
          (long long)r->summary.trades.n_trades, (long long)r->weight.n_trials);
    CHECK_NEAR(r->summary.strategy.total_return, -1.0, 1e-12, 0);
    cJSON* s = vpt_json_file(d, "summary.json");
    const cJSON* wf = wfu_at(s, "walkforward");
    const cJSON* rows = wfu_at(wf, "folds");
    CHECK(vpt_json_num(wf, "ruined_fold") == 2 && vpt_json_num(wf, "n_folds_ruined") == 1 &&
              vpt_json_num(wf, "n_folds_stitched") == 2 && strcmp(wfu_str(s, "status"), "ruined") == 0 &&
              vpt_json_num(wfu_at(wf, "ruin"), "fold") == 2,
          "summary.json: the ruin");
    CHECK(cJSON_IsTrue(wfu_at(cJSON_GetArrayItem(rows, 1), "ruined")) &&
              cJSON_IsFalse(wfu_at(cJSON_GetArrayItem(rows, 2), "stitched")) &&
              cJSON_IsNull(wfu_at(cJSON_GetArrayItem(rows, 2), "end_equity_ccy")),
          "summary.json: the fold rows");
    cJSON_Delete(s);
    char* t = wfu_table(r);
    char tb[32], want[160];
    snprintf(want, sizeof want, "  RUINED at bar %lld (%s)\n", (long long)ru->bar,
             vp_time_format_iso(ru->time_ms, tb, sizeof tb));
    CHECK(t && strstr(t, want) && strstr(t, "  not stitched\n") &&
              strstr(t, "stitched out-of-sample curve: 2 of 3 folds\n") &&
              strstr(t,
                     "; that was the test span's last close. The stitched account ends with fold 2; fold 3 stands "
                     "alone, not stitched\n"),
          "table:\n%s", t ? t : "");
    free(t);
    char* eq = vpt_read_file(d, "equity.csv", NULL);
    int lines = 0;
    for (const char* q = eq; q && *q; ++q) lines += *q == '\n';
    CHECK(lines == 1 + TEST + CUT, "equity.csv has %d lines", lines);
    free(eq);
}

/* The hand curve of fold 1: 100000 + 10 j up to row R, the ruin close at -2500, the close-out
 * at -4000 from row R + 1 on (held to the span's end), into eq[TEST]. */
static void hand_curve(double* eq) {
    for (int j = 0; j < TEST; ++j) eq[j] = j < R ? 100000.0 + 10.0 * j : j == R ? -2500.0 : -4000.0;
}

/* Fold 1's metrics from its returns by hand: +10 a bar on 100000 + 10 (j - 1), then -2500 from
 * 100290 (a loss past the whole account), then -4000 from -2500 (1.6 - 1 = +60 %, as a return
 * from a negative equity reads), then flat. */
static void check_hand_returns(const vp_wf_result* r) {
    double ret[TEST - 1];
    for (int j = 1; j < TEST; ++j)
        ret[j - 1] = j < R        ? 10.0 / (100000.0 + 10.0 * (j - 1))
                     : j == R     ? -2500.0 / 100290.0 - 1.0
                     : j == R + 1 ? 0.6
                                  : 0.0;
    vp_perf want;
    CHECK_OK(vp_perf_compute_annual(ret, TEST - 1, &r->summary.annual, &want));
    const vp_perf* got = &r->folds[0].test;
    CHECK(got->n_valid == TEST - 1 && r->summary.strategy.n_valid == TEST - 1, "valid returns %lld, stitched %lld",
          (long long)got->n_valid, (long long)r->summary.strategy.n_valid);
    CHECK_NEAR(got->sharpe, want.sharpe, 0, 1e-12);
    CHECK_NEAR(got->total_return, -1.04, 1e-12, 0);
    CHECK_NEAR(got->max_drawdown, want.max_drawdown, 0, 1e-12);
    CHECK(got->max_drawdown < -1.0, "max drawdown %g", got->max_drawdown);
    CHECK_NEAR(r->summary.strategy.sharpe, want.sharpe, 0, 1e-12);
    CHECK_NEAR(r->summary.strategy.total_return, -1.04, 1e-12, 0);
}

/* Fold 1 ruined below zero (the hand curve): the stitched account is fold 1 alone; every
 * output says when and at what equity. */
static void check_negative_ruin(const char* d, const vp_wf_result* r) {
    char b0[32], b1[32], t0[32], t1[32], want[1024];
    const char* eq = "folds/fold_001/equity.csv";
    const int64_t bar = atoll(csv_field(d, eq, R, 1, b0, sizeof b0)),
                  close = atoll(csv_field(d, eq, R + 1, 1, b1, sizeof b1));
    csv_field(d, eq, R, 0, t0, sizeof t0);
    csv_field(d, eq, R + 1, 0, t1, sizeof t1);
    CHECK(r->n_done == FOLDS && r->n_stitched == 1 && r->ruined_fold == 1 && r->n_curve == TEST && close == bar + 1,
          "%lld done, %lld stitched, ruined %lld, %lld points", (long long)r->n_done, (long long)r->n_stitched,
          (long long)r->ruined_fold, (long long)r->n_curve);
    if (r->n_curve != TEST || r->n_done != FOLDS) return;
    CHECK(r->folds[1].ruined && !r->folds[1].stitched && !r->folds[2].stitched, "folds 2 and 3");
    // the ruin: bars and times from done.json and the data, equities from the curve
    const vp_wf_ruin* ru = &r->folds[0].ruin;
    char tb[32];
    CHECK(ru->bar == bar && ru->close_bar == close && strcmp(vp_time_format_iso(ru->time_ms, tb, sizeof tb), t0) == 0 &&
              strcmp(vp_time_format_iso(ru->close_time_ms, tb, sizeof tb), t1) == 0,
          "ruin at %lld (%s), closed at %lld", (long long)ru->bar, t0, (long long)ru->close_bar);
    CHECK(ru->fold_start_equity == 100000.0 && ru->fold_equity_at_ruin == -2500.0 &&
              ru->fold_equity_after_close == -4000.0 && ru->below_zero,
          "the fold's own figures %.17g %.17g", ru->fold_equity_at_ruin, ru->fold_equity_after_close);
    CHECK_NEAR(ru->equity_at_ruin, -2500.0, 0, 1e-15);
    CHECK_NEAR(ru->equity_after_close, -4000.0, 0, 1e-15);
    CHECK(r->equity[R] == ru->equity_at_ruin && r->equity[TEST - 1] == ru->equity_after_close &&
              r->folds[0].end_equity == ru->equity_after_close,
          "the stitched curve at the ruin");
    check_hand_returns(r);
    // summary.json: status ruined first, the strategy's status, the ruin, the fold rows
    char* text = vpt_read_file(d, "summary.json", NULL);
    const char* first = "{\n\t\"status\":\t\"ruined\",\n";
    CHECK(text && strncmp(text, first, strlen(first)) == 0, "summary.json does not start with the status");
    free(text);
    cJSON* s = vpt_json_file(d, "summary.json");
    const cJSON* wf = wfu_at(s, "walkforward");
    const cJSON* o = wfu_at(wf, "ruin");
    CHECK(strcmp(wfu_str(wfu_at(s, "strategy"), "status"), "ruined") == 0 && vpt_json_num(wf, "ruined_fold") == 1 &&
              vpt_json_num(wf, "n_folds_ruined") == 2 && vpt_json_num(wf, "n_folds_stitched") == 1,
          "summary.json: status and counts");
    CHECK(vpt_json_num(o, "fold") == 1 && vpt_json_num(o, "bar") == (double)bar && vpt_json_num(o, "close_bar") == (double)close &&
              strcmp(wfu_str(o, "time"), t0) == 0 && strcmp(wfu_str(o, "close_time"), t1) == 0 &&
              vpt_json_num(o, "fold_equity_at_ruin_ccy") == -2500.0 &&
              vpt_json_num(o, "fold_equity_after_close_ccy") == -4000.0 &&
              vpt_json_num(o, "equity_after_close_ccy") == ru->equity_after_close && cJSON_IsTrue(wfu_at(o, "below_zero")),
          "summary.json: the ruin");
    const cJSON* rows = wfu_at(wf, "folds");
    const cJSON* r2 = cJSON_GetArrayItem(rows, 1);
    CHECK(vpt_json_num(wfu_at(cJSON_GetArrayItem(rows, 0), "ruin"), "bar") == (double)bar &&
              strcmp(wfu_str(wfu_at(cJSON_GetArrayItem(rows, 0), "strategy"), "status"), "ruined") == 0 &&
              vpt_json_num(wfu_at(r2, "ruin"), "fold") == 2 &&
              cJSON_IsNull(wfu_at(wfu_at(r2, "ruin"), "equity_at_ruin_ccy")) &&
              strcmp(wfu_str(wfu_at(r2, "strategy"), "status"), "ruined") == 0 &&
              cJSON_IsNull(wfu_at(cJSON_GetArrayItem(rows, 2), "ruin")),
          "summary.json: the fold rows' ruins");
    cJSON_Delete(s);
    // the console: RUINED first, the table's notes, the figures marked
    char* t = wfu_table(r);
    snprintf(
        want, sizeof want,
        "RUINED: fold 1's test window at the close of bar %lld (the bar opened %s): the stitched "
        "account's equity -2500.00 (the fold's own window: -2500.00 from 100000.00); closed out at the open of bar "
        "%lld (%s), equity -4000.00 after it (the fold's own: -4000.00); below zero. The stitched account ends with "
        "fold 1; folds 2 .. 3 stand alone, not stitched\nfold  ",
        (long long)bar, t0, (long long)close, t1);
    CHECK(t && strncmp(t, want, strlen(want)) == 0, "console:\n%s\nexpected to start with:\n%s", t ? t : "", want);
    snprintf(want, sizeof want, " -4000.00  RUINED at bar %lld (%s)\n", (long long)bar, t0);
    CHECK(
        t && strstr(t, want) && strstr(t, "; not stitched\n3     ") && strstr(t, "  not stitched\n\nstitched out") &&
            strstr(t, "\nthe figures below are those of a RUINED walk-forward, not a normal result:\nstitched Sharpe "),
        "console notes:\n%s", t ? t : "");
    snprintf(want, sizeof want, "\nRUINED in fold 1 at bar %lld (%s): the figures above are not a normal result\n",
             (long long)bar, t0);
    CHECK(t && strstr(t, want) && strstr(t, "series status                               ruined            ok"),
          "console metrics:\n%s", t ? t : "");
    free(t);
    // report.html: the title, the warning line, the metrics heading, the DSR over the folds
    char* html = vpt_read_file(d, "report.html", NULL);
    snprintf(want, sizeof want,
             "<h1>walk-forward: 3 of 3 folds (RUINED in fold 1, at bar %lld)</h1>\n<p class=\"warn\">"
             "RUINED: fold 1&#39;s test window at the close of bar %lld",
             (long long)bar, (long long)bar);
    CHECK(html && strstr(html, want) && strstr(html, "<h2>Metrics of a RUINED run: not a normal result</h2>") &&
              strstr(html, "<td>ruined</td>") && strstr(html, "deflated Sharpe over 3 folds (each one trial): "),
          "report.html: the ruin");
    free(html);
}

static void test_planted(void) {
    char root[256], d[300];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    snprintf(d, sizeof d, "%s/wf", root);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    wfu_tiny_config(&cfg);
    vp_wf_opts o = {d, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result r;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    CHECK(r.ruined_fold == 0 && r.n_stitched == FOLDS, "ruined %lld", (long long)r.ruined_fold);
    const int64_t n_trades_12 = r.folds[0].trades.n_trades + r.folds[1].trades.n_trades;
    vp_wf_result_free(&r);

    // fold 2 cut after CUT points, its last close at exactly 0
    double eq[TEST];
    for (int j = 0; j < TEST; ++j) eq[j] = j == CUT - 1 ? 0.0 : NAN;
    plant_curve(d, 2, CUT, eq);
    plant_done(d, 2, CUT - 1, CUT - 1);
    o.mode = VP_RUN_RESUME;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    check_zero_ruin(d, &r, n_trades_12);
    vp_wf_result_free(&r);

    // fold 1 below zero: ruin close -2500, closed out at -4000 and held there
    hand_curve(eq);
    plant_curve(d, 1, TEST, eq);
    plant_done(d, 1, R, R + 1);
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    check_negative_ruin(d, &r);
    vp_wf_result_free(&r);

    vp_backend_free(be);
    tdu_rmtree(root);
}

/* A real walk-forward that ruins: an account of 5 against 4 contracts of 10 a point (a bar moves
 * them by about 16), no leverage cap, ruin at 0: the first fold that trades ruins below zero.
 * The run completes, the stitched account ends with that fold, and the walk-forward's figures
 * agree with the fold's own backtest files (its ruin, its Sharpe from the same returns); the same
 * bytes again on a second run. */
static void test_real(void) {
    char root[256], d[300], d2[300], name[64];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    snprintf(d, sizeof d, "%s/wf", root);
    snprintf(d2, sizeof d2, "%s/wf2", root);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    wfu_tiny_config(&cfg);
    cfg.instrument.initial_equity = 5.0, cfg.instrument.max_leverage = 0.0, cfg.env.ruin_fraction = 0.0;
    vp_wf_opts o = {d, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result r;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    // the first ruined fold by its own files
    int first = 0;
    for (int k = FOLDS; k >= 1; --k) {
        cJSON* done = vpt_json_file(d, wfu_fold_file(k, "done.json", name, sizeof name));
        if (cJSON_IsTrue(wfu_at(done, "test_ruined"))) first = k;
        cJSON_Delete(done);
    }
    CHECK(first >= 1 && r.ruined_fold == first && r.n_stitched == first && r.n_done == FOLDS,
          "ruined fold %lld (its files: %d), %lld stitched", (long long)r.ruined_fold, first, (long long)r.n_stitched);
    if (first < 1 || r.ruined_fold != first || r.n_curve < 1) goto done;
    const vp_wf_fold* f = &r.folds[first - 1];
    cJSON* own = vpt_json_file(d, wfu_fold_file(first, "summary.json", name, sizeof name));
    const cJSON* ru = wfu_at(own, "ruin");
    CHECK(strcmp(wfu_str(own, "status"), "ruined") == 0 && f->ruin.bar == (int64_t)vpt_json_num(ru, "bar") &&
              f->ruin.close_bar == (int64_t)vpt_json_num(ru, "close_bar") && cJSON_IsTrue(wfu_at(ru, "below_zero")) &&
              f->ruin.below_zero,
          "fold %d: ruin at bar %lld, its summary.json %g", first, (long long)f->ruin.bar, vpt_json_num(ru, "bar"));
    CHECK(f->ruin.fold_equity_at_ruin <= 0.0 && f->ruin.fold_start_equity == 5.0, "equity %g at the ruin",
          f->ruin.fold_equity_at_ruin);
    CHECK_NEAR(f->ruin.fold_equity_at_ruin, vpt_json_num(ru, "equity_at_ruin"), 0, 1e-14);
    CHECK_NEAR(f->ruin.fold_equity_after_close, vpt_json_num(ru, "equity_after_close"), 0, 1e-14);
    CHECK_NEAR(f->test.sharpe, vpt_json_num(wfu_at(own, "strategy"), "sharpe_ratio"), 0, 1e-14);
    cJSON_Delete(own);
    // the stitched account holds the closed-out equity to the fold's end, below or at zero
    CHECK(r.equity[r.n_curve - 1] == f->ruin.equity_after_close && f->ruin.equity_at_ruin <= 0.0 &&
              r.fold[r.n_curve - 1] == first && r.summary.strategy.status == VP_PERF_OK,
          "stitched end %g", r.equity[r.n_curve - 1]);
    cJSON* s = vpt_json_file(d, "summary.json");
    CHECK(strcmp(wfu_str(s, "status"), "ruined") == 0 &&
              vpt_json_num(wfu_at(wfu_at(s, "walkforward"), "ruin"), "bar") == (double)f->ruin.bar,
          "summary.json: status '%s'", wfu_str(s, "status"));
    cJSON_Delete(s);
    // deterministic: the same files again
    o.dir = d2;
    vp_wf_result r2;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r2));
    CHECK(vpt_same_file(d, d2, "summary.json") && vpt_same_file(d, d2, "equity.csv"), "a second run differs");
    vp_wf_result_free(&r2);
done:
    vp_wf_result_free(&r);
    vp_backend_free(be);
    tdu_rmtree(root);
}

int main(void) {
    RUN_TEST(test_planted);
    RUN_TEST(test_real);
    return vpt_finish();
}
