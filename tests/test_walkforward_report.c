/* What a walk-forward reports about its folds, on the CPU with a tiny network: folds numbered
 * from 1 in the folders, walkforward.json, done.json, metrics.jsonl, the stitched files,
 * summary.json and the text table, spans as bar indices [begin, end) with the times of their
 * first and last bars; the stitched Sharpe's SE, PSR and its deflated Sharpe over the folds
 * (each fold's selection a trial) recomputed from the fold rows; the risk-free rate carried
 * into every figure and stated; and a fold whose test window was ruined: marked in the table
 * and summary.json, the stitched account ending with it. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>

#include "test_data_util.h"
#include "vp_test.h"
#include "vulpes/walkforward.h"

enum { TRAIN = 300, VAL = 100, TEST = 80, EMBARGO = 2, FOLDS = 3, CUT = 20 };

/* A tiny, fast training setup on a synthetic mean-reverting market, at 3 % a year risk-free. */
static void tiny_config(vp_config* c) {
    vpt_tiny_train_config(c, "synth:ou:bars=1400,seed=5,sigma=0.004");
    c->env.n_envs = 4, c->env.episode_bars = 32;
    c->replay.capacity = 512, c->replay.warmup = 32;
    c->metrics.risk_free_rate = 0.03;
    vpt_fold_cfg(c, TRAIN, VAL, TEST, EMBARGO, FOLDS);
}

/* summary.json of folder d, parsed (NULL when missing). */
static cJSON* read_json(const char* d, const char* file) {
    char* text = vpt_read_file(d, file, NULL);
    cJSON* j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* The number at obj.key (NaN when absent or null). */
static double num(const cJSON* obj, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* The fold column (the third) of an equity.csv row. */
static int fold_of_row(const char* row) {
    const char* c1 = strchr(row, ',');
    const char* c2 = c1 ? strchr(c1 + 1, ',') : NULL;
    return c2 ? atoi(c2 + 1) : -1;
}

/* The last row of a text ending in a newline. */
static const char* last_row(const char* text) {
    const char* end = text + strlen(text) - 1;
    while (end > text && end[-1] != '\n') --end;
    return end;
}

/* The text table of r. */
static char* table_text(const vp_wf_result* r) {
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    CHECK_OK(vp_wf_print(r, f));
    fclose(f);
    return text;
}

/* The weight of the stitched Sharpe: recomputed from the fold rows and the stitched series. */
static void check_weight(const vp_wf_result* r, const cJSON* sig) {
    vp_selection sel = {0};
    for (int64_t k = 0; k < r->n_done; ++k) vp_selection_add(&sel, r->folds[k].test.sharpe);
    const vp_wf_weight* w = &r->weight;
    CHECK(w->n_trials == r->n_done && w->n_defined == sel.n_trials, "trials %lld of %lld, %lld defined",
          (long long)w->n_trials, (long long)r->n_done, (long long)w->n_defined);
    CHECK(w->n_defined >= 2, "fewer than two folds with a test Sharpe: %lld", (long long)w->n_defined);
    CHECK(w->trials_sharpe_variance == vp_selection_variance(&sel), "variance %g", w->trials_sharpe_variance);
    double sr0 = NAN;
    const double dsr = vp_deflated_sharpe_trials(&r->summary.strategy, r->n_done, vp_selection_variance(&sel), &sr0);
    CHECK(!isnan(dsr) && w->deflated_sharpe == dsr && w->expected_max_sharpe == sr0, "DSR %g (expected %g), SR0 %g",
          w->deflated_sharpe, dsr, w->expected_max_sharpe);
    // the same figures in summary.json
    const vp_perf* p = &r->summary.strategy;
    CHECK(num(sig, "trials") == (double)r->n_done, "summary.json trials %g", num(sig, "trials"));
    CHECK_NEAR(num(sig, "deflated_sharpe"), dsr, 0, 1e-14);
    CHECK_NEAR(num(sig, "expected_max_sharpe"), sr0, 0, 1e-14);
    CHECK_NEAR(num(sig, "trials_sharpe_variance"), w->trials_sharpe_variance, 0, 1e-14);
    // (cJSON writes 15 significant digits when they read back within its own tolerance)
    CHECK_NEAR(num(sig, "sharpe_ratio"), p->sharpe, 0, 1e-14);
    CHECK_NEAR(num(sig, "sharpe_se_ratio"), p->sharpe_se, 0, 1e-14);
    CHECK_NEAR(num(sig, "psr_vs_zero_frac"), p->psr_vs_zero, 0, 1e-14);
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(sig, "verdict");
    CHECK(cJSON_IsString(v) && strcmp(v->valuestring, vp_psr_verdict(p->psr_vs_zero)) == 0, "verdict");
    CHECK(cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(sig, "survives_deflation")) &&
              cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(sig, "survives_deflation")) == (dsr >= 0.95),
          "survives_deflation");
}

/* Folds numbered from 1 and spans [begin, end) in every file. */
static void check_numbering(const char* d, const vp_wf_result* r, const cJSON* summary) {
    const cJSON* folds = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(summary, "walkforward"), "folds");
    CHECK(cJSON_GetArraySize(folds) == FOLDS, "%d fold rows", cJSON_GetArraySize(folds));
    char name[64];
    for (int k = 0; k < FOLDS && k < cJSON_GetArraySize(folds); ++k) {
        const cJSON* f = cJSON_GetArrayItem(folds, k);
        const cJSON* ts = cJSON_GetObjectItemCaseSensitive(f, "test_span");
        CHECK(num(f, "fold") == k + 1 && r->folds[k].index == k + 1, "fold row %d is numbered %g", k, num(f, "fold"));
        CHECK(num(ts, "begin_bar") == (double)r->folds[k].split.test.begin &&
                  num(ts, "end_bar") == (double)r->folds[k].split.test.end,
              "fold %d test span [%g, %g)", k + 1, num(ts, "begin_bar"), num(ts, "end_bar"));
        snprintf(name, sizeof name, "folds/fold_%03d/done.json", k + 1);
        cJSON* done = read_json(d, name);
        CHECK(done && num(done, "fold") == k + 1, "%s numbered %g", name, done ? num(done, "fold") : NAN);
        cJSON_Delete(done);
    }
    CHECK(!vpt_exists(d, "folds/fold_000"), "a fold numbered 0");
    cJSON* plan = read_json(d, "walkforward.json");
    const cJSON* pf = cJSON_GetObjectItemCaseSensitive(plan, "folds");
    CHECK(num(cJSON_GetArrayItem(pf, 0), "fold") == 1 && num(cJSON_GetArrayItem(pf, FOLDS - 1), "fold") == FOLDS,
          "walkforward.json numbering");
    cJSON_Delete(plan);
    char* m = vpt_read_file(d, "metrics.jsonl", NULL);
    CHECK(m && strstr(m, "{\"event\":\"fold\",\"fold\":1,") && strstr(m, "{\"event\":\"fold\",\"fold\":3,") &&
              !strstr(m, "\"fold\":0,"),
          "metrics.jsonl numbering");
    free(m);
    // the stitched files: the fold column from 1
    char* eq = vpt_read_file(d, "equity.csv", NULL);
    char* tr = vpt_read_file(d, "trades.csv", NULL);
    CHECK(eq && strncmp(eq, "bar_open_time,bar,fold,", 23) == 0, "equity.csv header");
    CHECK(eq && fold_of_row(strchr(eq, '\n') + 1) == 1 && fold_of_row(last_row(eq)) == FOLDS, "equity.csv: folds %d .. %d",
          eq ? fold_of_row(strchr(eq, '\n') + 1) : -1, eq ? fold_of_row(last_row(eq)) : -1);
    free(eq);
    CHECK(tr && strncmp(tr, "fold,", 5) == 0 && (strchr(tr, '\n')[1] == '\0' || strchr(tr, '\n')[1] == '1'),
          "trades.csv's first fold is 1");
    free(tr);
    for (int64_t j = 0; j < r->n_curve; ++j)
        if (r->fold[j] < 1 || r->fold[j] > FOLDS) {
            CHECK(0, "point %lld is of fold %d", (long long)j, (int)r->fold[j]);
            break;
        }
    // the text table: numbered from 1, the span with its bar indices
    char* t = table_text(r);
    char row[160];
    snprintf(row, sizeof row, "\n1     ");
    CHECK(t && strstr(t, row) && strstr(t, "\n3     ") && !strstr(t, "\n0     "), "table numbering:\n%s", t ? t : "");
    snprintf(row, sizeof row, " [%lld, %lld)", (long long)r->folds[0].split.test.begin, (long long)r->folds[0].split.test.end);
    CHECK(t && strstr(t, row) && strstr(t, "Z .. 20"), "table span '%s':\n%s", row, t ? t : "");
    CHECK(t && strstr(t, "stitched out-of-sample curve: 3 of 3 folds\n") && strstr(t, "deflated Sharpe over 3 folds"),
          "table summary lines:\n%s", t ? t : "");
    CHECK(t && strstr(t, "risk-free rate 3 % a year"), "the rate is not stated:\n%s", t ? t : "");
    free(t);
}

/* Rewrites fold `number`'s test files as a ruin after `keep` points: equity.csv cut there with
 * equity 0 at its last row, done.json marked. */
static void plant_ruin(const char* d, int number, int keep) {
    char name[64], path[400];
    snprintf(name, sizeof name, "folds/fold_%03d/equity.csv", number);
    char* text = vpt_read_file(d, name, NULL);
    CHECK(text != NULL, "%s", name);
    if (!text) return;
    // the header and `keep` rows; the equity column (the 4th) of the last one set to 0
    char* at = text;
    for (int i = 0; i <= keep && at; ++i) at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL;
    CHECK(at != NULL, "%s has fewer than %d rows", name, keep);
    if (!at) return;
    *at = '\0';
    char* last = at - 1;
    while (last > text && last[-1] != '\n') --last;
    char out[1 << 16];
    const char* c3 = last;
    for (int i = 0; i < 3; ++i) c3 = strchr(c3, ',') + 1;
    const char* c4 = strchr(c3, ',');
    snprintf(out, sizeof out, "%.*s0%s", (int)(c3 - text), text, c4);
    snprintf(path, sizeof path, "%s/%s", d, name);
    FILE* f = fopen(path, "w");
    fputs(out, f);
    fclose(f);
    free(text);
    snprintf(name, sizeof name, "folds/fold_%03d/done.json", number);
    text = vpt_read_file(d, name, NULL);
    char* flag = text ? strstr(text, "\"test_ruined\":\tfalse") : NULL;
    CHECK(flag != NULL, "%s has no test_ruined", name);
    if (!flag) return;
    snprintf(path, sizeof path, "%s/%s", d, name);
    f = fopen(path, "w");
    fprintf(f, "%.*s\"test_ruined\":\ttrue%s", (int)(flag - text), text, flag + strlen("\"test_ruined\":\tfalse"));
    fclose(f);
    free(text);
}

static void test_report(void) {
    char root[256], d[300];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    snprintf(d, sizeof d, "%s/wf", root);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    tiny_config(&cfg);
    vp_wf_opts o = {d, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result r;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    CHECK(r.n_done == FOLDS && r.n_stitched == FOLDS && r.ruined_fold == 0, "%lld done, %lld stitched, ruined %lld",
          (long long)r.n_done, (long long)r.n_stitched, (long long)r.ruined_fold);
    // the rate in every figure: each fold's series, the stitched one, the annualisation
    CHECK(r.summary.annual.risk_free_rate == 0.03 && r.summary.strategy.risk_free_rate == 0.03 &&
              r.folds[0].test.risk_free_rate == 0.03 && r.folds[2].buy_hold.risk_free_rate == 0.03,
          "risk-free rate not carried");
    cJSON* s = read_json(d, "summary.json");
    const cJSON* wf = cJSON_GetObjectItemCaseSensitive(s, "walkforward");
    CHECK(num(cJSON_GetObjectItemCaseSensitive(s, "annualisation"), "risk_free_rate_frac") == 0.03, "annualisation rate");
    check_weight(&r, cJSON_GetObjectItemCaseSensitive(wf, "significance"));
    check_numbering(d, &r, s);
    CHECK(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(wf, "ruined_fold")) && num(wf, "n_folds_ruined") == 0,
          "no fold ruined");
    cJSON_Delete(s);
    const int64_t n_trades_12 = r.folds[0].trades.n_trades + r.folds[1].trades.n_trades;
    vp_wf_result_free(&r);

    // fold 2 ruined after CUT points: the stitched account ends there, fold 3 stands alone
    plant_ruin(d, 2, CUT);
    o.mode = VP_RUN_RESUME;
    CHECK_OK(vp_walkforward_run(&cfg, be, &o, &r));
    CHECK(r.n_done == FOLDS && r.n_stitched == 2 && r.ruined_fold == 2, "%lld done, %lld stitched, ruined %lld",
          (long long)r.n_done, (long long)r.n_stitched, (long long)r.ruined_fold);
    CHECK(r.folds[1].ruined && r.folds[1].stitched && !r.folds[0].ruined && !r.folds[2].ruined && !r.folds[2].stitched,
          "fold flags");
    CHECK(r.n_curve == TEST + CUT && r.equity[r.n_curve - 1] == 0.0 && r.fold[r.n_curve - 1] == 2, "curve %lld points",
          (long long)r.n_curve);
    CHECK(r.summary.trades.n_trades == n_trades_12 && r.weight.n_trials == FOLDS, "trades %lld, trials %lld",
          (long long)r.summary.trades.n_trades, (long long)r.weight.n_trials);
    CHECK_NEAR(r.summary.strategy.total_return, -1.0, 1e-12, 0);
    s = read_json(d, "summary.json");
    wf = cJSON_GetObjectItemCaseSensitive(s, "walkforward");
    const cJSON* rows = cJSON_GetObjectItemCaseSensitive(wf, "folds");
    CHECK(num(wf, "ruined_fold") == 2 && num(wf, "n_folds_ruined") == 1 && num(wf, "n_folds_stitched") == 2,
          "summary.json: the ruin");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 1), "ruined")) &&
              cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 2), "stitched")) &&
              cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(rows, 2), "end_equity_ccy")),
          "summary.json: the fold rows");
    cJSON_Delete(s);
    char* t = table_text(&r);
    CHECK(t && strstr(t, "  ruined\n") && strstr(t, "  not stitched\n") &&
              strstr(t, "stitched out-of-sample curve: 2 of 3 folds\n") &&
              strstr(t, "fold 2's test window was ruined (its equity reached 0): the stitched account ends there; the "
                        "later folds stand alone\n"),
          "table:\n%s", t ? t : "");
    free(t);
    char* eq = vpt_read_file(d, "equity.csv", NULL);
    int lines = 0;
    for (const char* q = eq; q && *q; ++q) lines += *q == '\n';
    CHECK(lines == 1 + TEST + CUT, "equity.csv has %d lines", lines);
    free(eq);
    vp_wf_result_free(&r);

    vp_backend_free(be);
    tdu_rmtree(root);
}

int main(void) {
    RUN_TEST(test_report);
    return vpt_finish();
}
