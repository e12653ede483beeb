/* What a walk-forward reports about its folds, on the CPU with a tiny network: folds numbered
 * from 1 in the folders, walkforward.json, done.json, metrics.jsonl, the stitched files,
 * summary.json and the text table, spans as bar indices [begin, end) with the times of their
 * first and last bars; the stitched Sharpe's SE, PSR and its deflated Sharpe over the folds
 * (each fold's selection a trial) recomputed from the fold rows, in summary.json and in
 * report.html (the DSR line over the folds, a fold's own training report over its
 * validations); the risk-free rate carried into every figure and stated; status "ok".
 * (A ruined fold: tests/test_walkforward_ruin.c.) */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include "test_walkforward_util.h"

enum { FOLDS = WFU_FOLDS };

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
    CHECK(vpt_json_num(sig, "trials") == (double)r->n_done, "summary.json trials %g", vpt_json_num(sig, "trials"));
    CHECK_NEAR(vpt_json_num(sig, "deflated_sharpe"), dsr, 0, 1e-14);
    CHECK_NEAR(vpt_json_num(sig, "expected_max_sharpe"), sr0, 0, 1e-14);
    CHECK_NEAR(vpt_json_num(sig, "trials_sharpe_variance"), w->trials_sharpe_variance, 0, 1e-14);
    // (cJSON writes 15 significant digits when they read back within its own tolerance)
    CHECK_NEAR(vpt_json_num(sig, "sharpe_ratio"), p->sharpe, 0, 1e-14);
    CHECK_NEAR(vpt_json_num(sig, "sharpe_se_ratio"), p->sharpe_se, 0, 1e-14);
    CHECK_NEAR(vpt_json_num(sig, "psr_vs_zero_frac"), p->psr_vs_zero, 0, 1e-14);
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
        CHECK(vpt_json_num(f, "fold") == k + 1 && r->folds[k].index == k + 1, "fold row %d is numbered %g", k,
              vpt_json_num(f, "fold"));
        CHECK(vpt_json_num(ts, "begin_bar") == (double)r->folds[k].split.test.begin &&
                  vpt_json_num(ts, "end_bar") == (double)r->folds[k].split.test.end,
              "fold %d test span [%g, %g)", k + 1, vpt_json_num(ts, "begin_bar"), vpt_json_num(ts, "end_bar"));
        snprintf(name, sizeof name, "folds/fold_%03d/done.json", k + 1);
        cJSON* done = vpt_json_file(d, name);
        CHECK(done && vpt_json_num(done, "fold") == k + 1, "%s numbered %g", name, done ? vpt_json_num(done, "fold") : NAN);
        cJSON_Delete(done);
    }
    CHECK(!vpt_exists(d, "folds/fold_000"), "a fold numbered 0");
    cJSON* plan = vpt_json_file(d, "walkforward.json");
    const cJSON* pf = cJSON_GetObjectItemCaseSensitive(plan, "folds");
    CHECK(vpt_json_num(cJSON_GetArrayItem(pf, 0), "fold") == 1 &&
              vpt_json_num(cJSON_GetArrayItem(pf, FOLDS - 1), "fold") == FOLDS,
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
    char* t = wfu_table(r);
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

/* report.html: the stitched Sharpe with its SE, PSR against 0 and buy-and-hold and the verdict,
 * then its deflated Sharpe over the folds (not "validations"); nothing ruined. */
static void check_report(const char* d, const vp_wf_result* r) {
    char* html = vpt_read_file(d, "report.html", NULL);
    CHECK(html != NULL, "no report.html");
    if (!html) return;
    const vp_perf* p = &r->summary.strategy;
    const vp_wf_weight* w = &r->weight;
    char sh[32], se[32], pz[32], pb[32], dsr[32], want[512];
    CHECK(!isnan(p->psr_vs_zero) && !isnan(w->deflated_sharpe), "PSR %g, DSR %g", p->psr_vs_zero, w->deflated_sharpe);
    snprintf(want, sizeof want, "<p class=\"meta\">Sharpe %s &plusmn; %s (standard error); P(true Sharpe &gt; 0) %s, "
             "&gt; buy &amp; hold's %s: %s</p>\n", vp_metric_format(p->sharpe, VP_METRIC_UNIT_RATIO, sh, sizeof sh),
             vp_metric_format(p->sharpe_se, VP_METRIC_UNIT_RATIO, se, sizeof se),
             vp_metric_format(p->psr_vs_zero, VP_METRIC_UNIT_FRAC, pz, sizeof pz),
             vp_metric_format(vp_perf_psr_vs(p, &r->summary.buy_hold), VP_METRIC_UNIT_FRAC, pb, sizeof pb),
             vp_psr_verdict(p->psr_vs_zero));
    const char* weight = strstr(html, want);
    CHECK(weight != NULL, "report.html: no line '%s'", want);
    snprintf(want, sizeof want,
             "<p class=\"meta\">deflated Sharpe over %d folds (each one trial): %s, %s the deflation at 95 %%</p>\n",
             FOLDS, vp_metric_format(w->deflated_sharpe, VP_METRIC_UNIT_FRAC, dsr, sizeof dsr),
             w->deflated_sharpe >= 0.95 ? "survives" : "does not survive");
    const char* deflated = strstr(html, want);
    CHECK(deflated != NULL && deflated > weight, "report.html: no line '%s' after the Sharpe's", want);
    CHECK(!strstr(html, "validations") && !strstr(html, "among") && !strstr(html, "RUINED") &&
              !strstr(html, "class=\"warn\""),
          "report.html: a training run's wording or a ruin");
    free(html);
}

/* A fold's own report.html (its training's test span) deflates over its validations: as many
 * as its metrics.jsonl scored (2 or more), else no DSR line. */
static void check_fold_report(const char* d, int number) {
    char name[64], want[96];
    char* log = vpt_read_file(d, wfu_fold_file(number, "metrics.jsonl", name, sizeof name), NULL);
    char* html = vpt_read_file(d, wfu_fold_file(number, "report.html", name, sizeof name), NULL);
    CHECK(log && html, "fold %d: no metrics.jsonl or report.html", number);
    int scored = 0;
    for (const char* q = log; q && (q = strstr(q, "{\"event\":\"eval\",")) != NULL; ++q) {
        const char* v = strstr(q, "\"val_sharpe\":");
        scored += v && v[13] != 'n'; // a number, not null
    }
    snprintf(want, sizeof want, "deflated Sharpe over %d validations (each one trial): ", scored);
    CHECK(html && (scored >= 2 ? strstr(html, want) != NULL : !strstr(html, "deflated Sharpe")) &&
              !strstr(html, " folds"),
          "fold %d: %d validations scored, the DSR line '%s'", number, scored, want);
    free(log);
    free(html);
}

static void test_report(void) {
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
    CHECK(r.n_done == FOLDS && r.n_stitched == FOLDS && r.ruined_fold == 0, "%lld done, %lld stitched, ruined %lld",
          (long long)r.n_done, (long long)r.n_stitched, (long long)r.ruined_fold);
    // the rate in every figure: each fold's series, the stitched one, the annualisation
    CHECK(r.summary.annual.risk_free_rate == 0.03 && r.summary.strategy.risk_free_rate == 0.03 &&
              r.folds[0].test.risk_free_rate == 0.03 && r.folds[2].buy_hold.risk_free_rate == 0.03,
          "risk-free rate not carried");
    cJSON* s = vpt_json_file(d, "summary.json");
    const cJSON* wf = cJSON_GetObjectItemCaseSensitive(s, "walkforward");
    CHECK(vpt_json_num(wfu_at(s, "annualisation"), "risk_free_rate_frac") == 0.03, "annualisation rate");
    check_weight(&r, cJSON_GetObjectItemCaseSensitive(wf, "significance"));
    check_numbering(d, &r, s);
    CHECK(cJSON_IsNull(wfu_at(wf, "ruined_fold")) && vpt_json_num(wf, "n_folds_ruined") == 0 &&
              cJSON_IsNull(wfu_at(wf, "ruin")) && strcmp(wfu_str(s, "status"), "ok") == 0 &&
              strcmp(wfu_str(wfu_at(s, "strategy"), "status"), "ok") == 0,
          "no fold ruined: status '%s'", wfu_str(s, "status"));
    // the stitched curve's tear-sheet statistics against buy-and-hold, at the run's rate
    const cJSON* tear = wfu_at(s, "tear");
    CHECK(r.summary.has_tear && vpt_json_num(tear, "n_returns") == (double)(r.n_curve - 1) &&
              vpt_json_num(tear, "risk_free_rate_frac") == 0.03 && fabs(vpt_json_num(tear, "beta_ratio") - r.summary.tear.beta) <= 1e-14 * fabs(r.summary.tear.beta) &&
              isfinite(r.summary.tear.var_95),
          "walk-forward tear: %d, %g returns of %lld points, rate %g, beta %.17g vs %.17g", r.summary.has_tear,
          vpt_json_num(tear, "n_returns"), (long long)r.n_curve, vpt_json_num(tear, "risk_free_rate_frac"), vpt_json_num(tear, "beta_ratio"),
          r.summary.tear.beta);
    cJSON_Delete(s);
    check_report(d, &r);
    check_fold_report(d, 1);
    check_fold_report(d, FOLDS);
    vp_wf_result_free(&r);

    vp_backend_free(be);
    tdu_rmtree(root);
}

int main(void) {
    RUN_TEST(test_report);
    return vpt_finish();
}
