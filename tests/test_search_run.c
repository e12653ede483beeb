/* vulpes search end to end on the CPU: 4 trials of a tiny config on a synthetic market, eta 2
 * (rungs of 2, 4 and 8 iterations), 2 at once. Checked against the trials' own files: each
 * trial's values (the draws of its index), its config.yaml (the base with them, train.iterations
 * its last rung's), its iterations; each rung's trials the best of the rung before by the best
 * validation Sharpe its metrics.jsonl shows up to that rung's iterations; the winner; the
 * deflated Sharpe over the trials from the metrics' function; results.csv, results.json,
 * best.yaml (loadable, the winner's config) and report.html. A search stopped after 5 trial
 * runs and resumed, one at a time, gives the same rungs.json and figures as the straight one,
 * without training again what the stopped call finished. Refused resumes and a refused trial
 * leave things as they were. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>

#include "test_job_util.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/search.h"

static const char* SPACE = "learn.lr: {log_uniform: [1e-4, 1e-2]}\nlearn.gamma: {uniform: [0.9, 0.99]}\n";

/* The tiny job setup (vpt_job_tiny_config), trained 8 iterations (rungs of 2, 4 and 8 at eta 2). */
static void tiny_config(vp_config* c) {
    vpt_job_tiny_config(c);
    c->train.iterations = 8;
}

/* The best val_sharpe of the eval events of dir/metrics.jsonl up to iteration `upto`. */
static double best_val_upto(const char* dir, int64_t upto) {
    char* m = vpt_metrics_lines(dir, "eval");
    double best = NAN;
    for (char *line = m, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        cJSON* e = cJSON_Parse(line);
        const double it = vpt_json_num(e, "iteration"), v = vpt_json_num(e, "val_sharpe");
        if (it <= (double)upto && isfinite(v) && (isnan(best) || v > best)) best = v;
        cJSON_Delete(e);
    }
    free(m);
    return best;
}

/* The 1 or 2 best of trials t[n] by score s (a tie to the lower index), in trial order. */
static int top(const int64_t* t, const double* s, int n, int k, int64_t* out) {
    int used[8] = {0};
    for (int j = 0; j < k; ++j) {
        int b = -1;
        for (int i = 0; i < n; ++i)
            if (!used[i] && (b < 0 || s[i] > s[b] || (s[i] == s[b] && t[i] < t[b]))) b = i;
        used[b] = 1;
        out[j] = t[b];
    }
    if (k == 2 && out[0] > out[1]) {
        const int64_t x = out[0];
        out[0] = out[1], out[1] = x;
    }
    return k;
}

static vp_search_opts opts_for(const char* dir, vp_run_mode mode, const vp_search_space* s, int64_t parallel) {
    vp_search_opts o = {dir, mode, s, 4, 2, 0, 3, parallel, NULL, NULL, 0, 1};
    if (mode == VP_RUN_RESUME) o.space = NULL, o.trials = o.eta = o.min_iterations = o.seed = -1;
    return o;
}

/* Everything a finished search's folder must say. */
static void check_finished(const vp_search_result* r, const vp_config* base, const vp_search_space* space) {
    CHECK(r->n_rungs == 3 && r->budgets[0] == 2 && r->budgets[1] == 4 && r->budgets[2] == 8, "rungs");
    CHECK(r->rung_size[0] == 4 && r->rung_size[1] == 2 && r->rung_size[2] == 1, "rung sizes");
    CHECK(r->rungs_done == 3 && !r->interrupted, "rungs done %d", r->rungs_done);
    // every trial: its draws, its config, its iterations
    vp_config abs = *base;
    CHECK_OK(vp_config_absolute_data_path(&abs));
    for (int64_t i = 0; i < 4; ++i) {
        const vp_search_trial* t = &r->trials[i];
        vp_search_draw d;
        vp_search_sample(space, 3, i, &d);
        CHECK(strcmp(d.values[0], t->draw.values[0]) == 0 && strcmp(d.values[1], t->draw.values[1]) == 0,
              "trial %lld's values", (long long)i);
        CHECK(t->rung >= 0 && t->iterations == r->budgets[t->rung] && t->finished, "trial %lld: rung %d, %lld iterations",
              (long long)i, t->rung, (long long)t->iterations);
        vp_config want = abs, got;
        CHECK_OK(vp_search_apply(space, &d, i, &want));
        want.train.iterations = t->rung >= 0 ? r->budgets[t->rung] : 0;
        vp_config_defaults(&got);
        char p[1200];
        snprintf(p, sizeof p, "%s/config.yaml", t->dir);
        CHECK_OK(vp_config_load_file(&got, p));
        const vp_config_key* k = vp_config_diff(&got, &want);
        CHECK(k == NULL, "trial %lld's config.yaml differs at %s", (long long)i, k ? k->name : "");
        cJSON* s = vpt_json_file(t->dir, "summary.json");
        const cJSON* st = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(s, "test"), "strategy");
        CHECK(vpt_json_num(s, "iterations") == (double)t->iterations, "trial %lld's summary iterations", (long long)i);
        CHECK(t->test_sharpe == vpt_json_num(st, "sharpe_ratio") || (isnan(t->test_sharpe) && isnan(vpt_json_num(st, "sharpe_ratio"))),
              "trial %lld's test Sharpe %g", (long long)i, t->test_sharpe);
        cJSON_Delete(s);
    }
    // the rungs by hand: rung g's scores are the best validation up to its iterations
    const int64_t all[4] = {0, 1, 2, 3};
    double s0[4], s1[2];
    for (int i = 0; i < 4; ++i) s0[i] = best_val_upto(r->trials[i].dir, 2);
    int64_t r1[2], r2[1];
    top(all, s0, 4, 2, r1);
    for (int i = 0; i < 2; ++i) s1[i] = best_val_upto(r->trials[r1[i]].dir, 4);
    top(r1, s1, 2, 1, r2);
    for (int64_t i = 0; i < 4; ++i) {
        const int want = i == r2[0] ? 2 : (i == r1[0] || i == r1[1]) ? 1 : 0;
        CHECK(r->trials[i].rung == want, "trial %lld reached rung %d, expected %d", (long long)i, r->trials[i].rung, want);
        CHECK(r->trials[i].score[0] == s0[i], "trial %lld's rung 0 score %g, expected %g", (long long)i,
              r->trials[i].score[0], s0[i]);
    }
    CHECK(r->best == r2[0], "the winner is trial %lld, expected %lld", (long long)r->best, (long long)r2[0]);
    // the deflation: every trial, the winner's test returns
    vp_selection sel = {0};
    for (int i = 0; i < 4; ++i) vp_selection_add(&sel, r->trials[i].test_sharpe);
    const vp_search_trial* w = &r->trials[r->best >= 0 ? r->best : 0];
    vp_perf p;
    memset(&p, 0, sizeof p);
    p.sharpe = w->test_sharpe, p.periods_per_year = w->periods_per_year, p.skewness = w->skewness;
    p.kurtosis = w->kurtosis, p.n_valid = w->n_returns;
    double sr0 = NAN;
    const double dsr = vp_deflated_sharpe_trials(&p, 4, vp_selection_variance(&sel), &sr0);
    CHECK(r->dsr_trials == 4, "%lld deflation trials", (long long)r->dsr_trials);
    CHECK((dsr == r->deflated_sharpe || (isnan(dsr) && isnan(r->deflated_sharpe))) && sr0 == r->expected_max_sharpe,
          "deflated Sharpe %g (SR0 %g), expected %g (%g)", r->deflated_sharpe, r->expected_max_sharpe, dsr, sr0);
    // the files
    const char* files[] = {"config.yaml", "space.yaml", "search.json", "rungs.json", "results.csv", "results.json",
                           "best.yaml", "report.html", "metrics.jsonl"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; ++i)
        CHECK(vpt_exists(r->dir, files[i]), "%s/%s is missing", r->dir, files[i]);
    char* csv = vpt_read_file(r->dir, "results.csv", NULL);
    CHECK(csv && vpt_count_lines(csv) == 5 &&
              strncmp(csv, "trial,rung,iterations,finished,learn.lr,learn.gamma,val_sharpe,test_sharpe,best,dir\n",
                      84) == 0, "results.csv: %s", csv ? csv : "");
    char row[256];
    snprintf(row, sizeof row, "\n%lld,2,8,1,%s,%s,", (long long)r->best, w->draw.values[0], w->draw.values[1]);
    CHECK(csv && strstr(csv, row), "results.csv has no row %s", row);
    free(csv);
    cJSON* j = vpt_json_file(r->dir, "results.json");
    const cJSON* rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
    const cJSON* best = cJSON_GetObjectItemCaseSensitive(j, "best");
    CHECK(cJSON_GetArraySize(rows) == 4 && vpt_json_num(best, "trial") == (double)r->best, "results.json rows and best");
    for (int i = 0; i < 4 && i < cJSON_GetArraySize(rows); ++i) {
        const cJSON* o = cJSON_GetArrayItem(rows, i);
        const cJSON* pr = cJSON_GetObjectItemCaseSensitive(o, "params");
        CHECK(vpt_json_num(pr, "learn.lr") == strtod(r->trials[i].draw.values[0], NULL), "results.json row %d's learn.lr", i);
        CHECK(vpt_json_num(o, "rung") == r->trials[i].rung && vpt_json_num(o, "iterations") == (double)r->trials[i].iterations,
              "results.json row %d", i);
    }
    cJSON_Delete(j);
    vp_config bestcfg, want = abs;
    vp_config_defaults(&bestcfg);
    char p2[1200];
    snprintf(p2, sizeof p2, "%s/best.yaml", r->dir);
    CHECK_OK(vp_config_load_file(&bestcfg, p2));
    CHECK_OK(vp_search_apply(space, &w->draw, r->best, &want));
    const vp_config_key* k = vp_config_diff(&bestcfg, &want);
    CHECK(k == NULL && bestcfg.train.iterations == 8, "best.yaml differs at %s", k ? k->name : "");
    char* html = vpt_read_file(r->dir, "report.html", NULL);
    char link[64];
    snprintf(link, sizeof link, "href=\"trial-%03lld/report.html\"", (long long)r->best);
    CHECK(html && strstr(html, "over 4 trials") && strstr(html, link) && strstr(html, "out of sample this once") &&
              strstr(html, "aria-label=\"learn.lr against validation Sharpe\"") && strstr(html, "<circle"),
          "report.html lacks the deflation's trials, the winner's link, the note or the scatters");
    free(html);
    char* ev = vpt_metrics_lines(r->dir, "search_rung");
    CHECK(vpt_count_lines(ev) == 3, "metrics.jsonl: %d search_rung events", vpt_count_lines(ev));
    free(ev);
}

static void test_search(void) {
    vp_config base;
    tiny_config(&base);
    vp_search_space space;
    CHECK_OK(vp_search_space_parse(SPACE, "space", &base, &space));
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    char da[512], db[512], dc[512];
    vpt_tmp_dir(da, sizeof da, "search-a");
    vpt_tmp_dir(db, sizeof db, "search-b");
    vpt_tmp_dir(dc, sizeof dc, "search-c");
    vpt_rm_run(da), vpt_rm_run(db), vpt_rm_run(dc);

    // straight, 2 at once
    vp_search_result* ra = calloc(1, sizeof *ra);
    vp_search_opts o = opts_for(da, VP_RUN_CREATE, &space, 2);
    CHECK_OK(vp_search_run(&base, b, &o, ra));
    if (ra->trials) check_finished(ra, &base, &space);

    // stopped after 5 trial runs (rung 0 and one of rung 1), one at a time, then resumed
    vp_search_result* rb = calloc(1, sizeof *rb);
    o = opts_for(db, VP_RUN_CREATE, &space, 1);
    o.stop_after_runs = 5;
    CHECK_OK(vp_search_run(&base, b, &o, rb));
    CHECK(rb->interrupted && rb->rungs_done == 1 && rb->best == -1, "the stopped search: %d rungs done, best %lld",
          rb->rungs_done, (long long)rb->best);
    CHECK(!vpt_exists(db, "best.yaml"), "a stopped search wrote best.yaml");
    int64_t first = -1; // the rung-1 trial the stopped call finished
    for (int64_t i = 0; rb->trials && i < 4; ++i)
        if (rb->trials[i].rung == 1) first = i;
    CHECK(first >= 0, "no trial of rung 1 finished before the stop");
    char tdir[1200];
    snprintf(tdir, sizeof tdir, "%s/trial-%03lld", db, (long long)(first >= 0 ? first : 0));
    char* before = vpt_read_file(tdir, "metrics.jsonl", NULL);
    vp_search_result_free(rb);
    o = opts_for(db, VP_RUN_RESUME, NULL, 1);
    CHECK_OK(vp_search_run(&base, b, &o, rb));
    if (rb->trials) check_finished(rb, &base, &space);
    // the resume only appends to it (when the trial goes on to rung 2): one "run" event per rung it trained in
    char* after = vpt_read_file(tdir, "metrics.jsonl", NULL);
    char* runs = vpt_metrics_lines(tdir, "run");
    const int rung = rb->trials && first >= 0 ? rb->trials[first].rung : -1;
    CHECK(before && after && strncmp(before, after, strlen(before)) == 0 && vpt_count_lines(runs) == rung + 1,
          "the resume trained trial %lld of rung 1 again (%d run events, rung %d)", (long long)first,
          vpt_count_lines(runs), rung);
    free(before);
    free(after);
    free(runs);
    CHECK(vpt_same_file(da, db, "rungs.json"), "rungs.json of the resumed search differs from the straight one");
    for (int64_t i = 0; ra->trials && rb->trials && i < 4; ++i)
        CHECK(ra->trials[i].val_sharpe == rb->trials[i].val_sharpe &&
                  (ra->trials[i].test_sharpe == rb->trials[i].test_sharpe ||
                   (isnan(ra->trials[i].test_sharpe) && isnan(rb->trials[i].test_sharpe))),
              "trial %lld: straight %g / %g, resumed %g / %g", (long long)i, ra->trials[i].val_sharpe,
              ra->trials[i].test_sharpe, rb->trials[i].val_sharpe, rb->trials[i].test_sharpe);
    CHECK(ra->best == rb->best && (ra->deflated_sharpe == rb->deflated_sharpe ||
                                   (isnan(ra->deflated_sharpe) && isnan(rb->deflated_sharpe))), "the winner differs");

    // refusals, each leaving the folder as it was
    char* rungs = vpt_read_file(da, "rungs.json", NULL);
    vp_search_result rr;
    o = opts_for(da, VP_RUN_RESUME, NULL, 1);
    o.trials = 5;
    CHECK_STATUS(vp_search_run(&base, b, &o, &rr), VP_ERR_INVALID_ARG, "--trials 5 differs from its plan's 4");
    o.trials = -1, o.seed = 4;
    CHECK_STATUS(vp_search_run(&base, b, &o, &rr), VP_ERR_INVALID_ARG, "--seed 4 differs from its plan's 3");
    o.seed = -1;
    vp_search_space other;
    CHECK_OK(vp_search_space_parse("learn.lr: {log_uniform: [1e-4, 1e-3]}\n", "other", &base, &other));
    o.space = &other;
    CHECK_STATUS(vp_search_run(&base, b, &o, &rr), VP_ERR_INVALID_ARG, "the space given differs from its space.yaml");
    o.space = NULL;
    vp_config changed = base;
    changed.learn.batch = 8;
    CHECK_STATUS(vp_search_run(&changed, b, &o, &rr), VP_ERR_INVALID_ARG, "learn.batch differs from its config.yaml");
    o = opts_for(da, VP_RUN_CREATE, &space, 1);
    CHECK(vp_search_run(&base, b, &o, &rr) != VP_OK, "a new search into a non-empty folder was not refused");
    char* rungs2 = vpt_read_file(da, "rungs.json", NULL);
    CHECK(rungs && rungs2 && strcmp(rungs, rungs2) == 0, "a refusal changed rungs.json");
    free(rungs);
    free(rungs2);
    // a trial the config refuses, and a bad eta: nothing made
    vp_search_space bad;
    CHECK_OK(vp_search_space_parse("model.mamba_head_dim: {choice: [8, 3]}\n", "bad", &base, &bad));
    o = opts_for(dc, VP_RUN_CREATE, &bad, 1);
    CHECK_STATUS(vp_search_run(&base, b, &o, &rr), VP_ERR_INVALID_ARG, "(model.mamba_head_dim=3)");
    CHECK(!vpt_exists(dc, NULL), "a refused search left %s", dc);
    o = opts_for(dc, VP_RUN_CREATE, &space, 1);
    o.eta = 1;
    CHECK_STATUS(vp_search_run(&base, b, &o, &rr), VP_ERR_INVALID_ARG, "eta must be >= 2, got 1");
    CHECK(!vpt_exists(dc, NULL), "a refused search left %s", dc);

    vp_search_result_free(ra);
    vp_search_result_free(rb);
    free(ra);
    free(rb);
    vp_backend_free(b);
    vpt_rm_run(da), vpt_rm_run(db), vpt_rm_run(dc);
}

int main(void) {
    RUN_TEST(test_search);
    return vpt_finish();
}
