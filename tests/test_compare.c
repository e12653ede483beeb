/* vulpes compare's rows from hand-written summary.json files of the three kinds (a training
 * run, a walk-forward, a backtest), an unfinished run, folders that are not runs, and the
 * CSV, JSON and page written from them. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "eval/compare.h"
#include "vp_test.h"

static char g_root[] = "/tmp/vp_test_compare_XXXXXX";

/* Makes folder ROOT/name holding summary.json = text (NULL: no summary.json). */
static void make_run(const char* name, const char* text) {
    char dir[256], path[300];
    vpt_path(dir, sizeof dir, g_root, name);
    mkdir(dir, 0777);
    if (!text) return;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE* f = fopen(path, "wb");
    CHECK(f != NULL, "cannot write %s", path);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static const char* TRAIN =
    "{\"finished\":true,\"data\":\"a.csv\",\"best_validation\":{\"sharpe\":1.5,\"deflated_sharpe\":0.25},"
    "\"test\":{\"status\":\"ok\",\"strategy\":{\"total_return_frac\":0.125,\"sharpe_ratio\":2.0,"
    "\"max_drawdown_frac\":-0.0625,\"sortino_ratio\":null},\"buy_and_hold\":{\"total_return_frac\":0.5},"
    "\"tear\":{\"beta_ratio\":0.75},\"trades\":{\"n_trades\":12,\"hit_rate_frac\":0.5},"
    "\"backtest\":{\"data\":\"a.csv\",\"span\":{\"first_time\":\"2017-01-02T00:00:00Z\","
    "\"last_time\":\"2017-03-04T00:00:00Z\",\"n_bars\":870}}}}";
static const char* WALKFORWARD =
    "{\"status\":\"ok\",\"strategy\":{\"total_return_frac\":0.25,\"sharpe_ratio\":1.0,\"max_drawdown_frac\":-0.125},"
    "\"trades\":{\"n_trades\":30,\"n_bars\":400},\"walkforward\":{\"data\":\"b.csv\",\"significance\":"
    "{\"deflated_sharpe\":0.5},\"folds\":[{\"test_span\":{\"first_time\":\"2018-01-01T00:00:00Z\"}},"
    "{\"test_span\":{\"last_time\":\"2018-06-30T00:00:00Z\"}}]}}";
static const char* BACKTEST =
    "{\"status\":\"ruined\",\"strategy\":{\"total_return_frac\":-0.5,\"sharpe_ratio\":-1.0},"
    "\"backtest\":{\"data\":\"c.csv\",\"span\":{\"first_time\":\"2019-01-01T00:00:00Z\",\"n_bars\":50}}}";

/* The index of the column keyed `key`. */
static int col(const char* key) {
    int n;
    const vp_compare_column* c = vp_compare_columns(&n);
    for (int i = 0; i < n; ++i)
        if (strcmp(c[i].key, key) == 0) return i;
    CHECK(0, "no column %s", key);
    return 0;
}

static void load(const char* name, vp_compare_row* row) {
    char dir[256];
    CHECK_OK(vp_compare_load(vpt_path(dir, sizeof dir, g_root, name), row));
}

static void test_rows(void) {
    vp_compare_row r[4];
    make_run("train", TRAIN);
    make_run("wf", WALKFORWARD);
    make_run("bt", BACKTEST);
    make_run("unfinished", "{\"finished\":false,\"data\":\"a.csv\",\"best_validation\":{\"sharpe\":0.5}}");
    load("train", &r[0]);
    load("wf", &r[1]);
    load("bt", &r[2]);
    load("unfinished", &r[3]);
    // a training run: the test span's figures, the validation from the top
    CHECK(r[0].kind == VP_COMPARE_TRAIN && strcmp(r[0].name, "train") == 0 && strcmp(r[0].status, "ok") == 0,
          "kind %d name %s status %s", r[0].kind, r[0].name, r[0].status);
    CHECK(strcmp(r[0].data, "a.csv") == 0 && strcmp(r[0].first_time, "2017-01-02T00:00:00Z") == 0 &&
              strcmp(r[0].last_time, "2017-03-04T00:00:00Z") == 0 && r[0].n_bars == 870,
          "data %s span %s..%s bars %g", r[0].data, r[0].first_time, r[0].last_time, r[0].n_bars);
    CHECK(r[0].value[col("total_return_frac")] == 0.125 && r[0].value[col("sharpe_ratio")] == 2.0 &&
              r[0].value[col("max_drawdown_frac")] == -0.0625 && r[0].value[col("n_trades")] == 12 &&
              r[0].value[col("hit_rate_frac")] == 0.5 && r[0].value[col("buy_hold_total_return_frac")] == 0.5 &&
              r[0].value[col("beta_ratio")] == 0.75 && r[0].value[col("val_sharpe_ratio")] == 1.5 &&
              r[0].value[col("deflated_sharpe_frac")] == 0.25,
          "train figures differ");
    CHECK(isnan(r[0].value[col("sortino_ratio")]) && isnan(r[0].value[col("alpha_annual_frac")]),
          "a null or a missing figure is not NaN");
    // a walk-forward: figures at the top, its span over the folds, the DSR of its significance
    CHECK(r[1].kind == VP_COMPARE_WALKFORWARD && strcmp(r[1].data, "b.csv") == 0 &&
              strcmp(r[1].first_time, "2018-01-01T00:00:00Z") == 0 &&
              strcmp(r[1].last_time, "2018-06-30T00:00:00Z") == 0 && r[1].n_bars == 400,
          "walk-forward kind %d data %s span %s..%s", r[1].kind, r[1].data, r[1].first_time, r[1].last_time);
    CHECK(r[1].value[col("total_return_frac")] == 0.25 && r[1].value[col("deflated_sharpe_frac")] == 0.5 &&
              isnan(r[1].value[col("val_sharpe_ratio")]),
          "walk-forward figures differ");
    // a ruined backtest says so
    CHECK(r[2].kind == VP_COMPARE_BACKTEST && strcmp(r[2].status, "ruined") == 0 && strcmp(r[2].data, "c.csv") == 0 &&
              r[2].n_bars == 50 && r[2].value[col("sharpe_ratio")] == -1.0,
          "backtest kind %d status %s", r[2].kind, r[2].status);
    // an unfinished run: no test figures, its validation
    CHECK(r[3].kind == VP_COMPARE_TRAIN && strcmp(r[3].status, "unfinished") == 0 &&
              isnan(r[3].value[col("sharpe_ratio")]) && r[3].value[col("val_sharpe_ratio")] == 0.5,
          "unfinished status %s", r[3].status);

    // the CSV: header, then the train row's fields and numbers in full precision
    char path[256];
    CHECK_OK(vp_compare_write_dir(g_root, r, 3));
    char* csv = vpt_slurp(vpt_path(path, sizeof path, g_root, "compare.csv"), NULL);
    CHECK(csv && strncmp(csv, "dir,name,kind,status,data,first_time,last_time,n_bars,total_return_frac,", 72) == 0,
          "CSV header: %.80s", csv ? csv : "(none)");
    CHECK(csv && strstr(csv, "/train,train,train,ok,a.csv,2017-01-02T00:00:00Z,2017-03-04T00:00:00Z,870,0.125,,,2,,"
                             "-0.0625,") != NULL,
          "CSV train row: %s", csv ? csv : "(none)");
    free(csv);
    // the JSON parses back with the figures
    char* js = vpt_slurp(vpt_path(path, sizeof path, g_root, "compare.json"), NULL);
    cJSON* j = js ? cJSON_Parse(js) : NULL;
    const cJSON* runs = cJSON_GetObjectItemCaseSensitive(j, "runs");
    const cJSON* wf = cJSON_GetArrayItem(runs, 1);
    const cJSON* fig = cJSON_GetObjectItemCaseSensitive(wf, "figures");
    CHECK(cJSON_GetArraySize(runs) == 3 &&
              cJSON_GetObjectItemCaseSensitive(fig, "total_return_frac")->valuedouble == 0.25 &&
              cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fig, "val_sharpe_ratio")) &&
              strcmp(cJSON_GetObjectItemCaseSensitive(wf, "kind")->valuestring, "walkforward") == 0,
          "compare.json: %s", js ? js : "(none)");
    cJSON_Delete(j);
    free(js);
    // the page: no script, three rows, the best Sharpe (train's 2.000) marked
    char* html = vpt_slurp(vpt_path(path, sizeof path, g_root, "compare.html"), NULL);
    CHECK(html && !strstr(html, "<script") && strstr(html, "Comparison of 3 folders"), "page heading");
    CHECK(html && strstr(html, "<td class=\"best\">2.000</td>") != NULL, "the best Sharpe is not marked");
    CHECK(html && strstr(html, "<td class=\"best\">-6.25 %</td>") != NULL, "the best drawdown is not marked");
    free(html);
}

static void test_not_runs(void) {
    vp_compare_row r;
    char dir[256];
    CHECK_STATUS(vp_compare_load(vpt_path(dir, sizeof dir, g_root, "absent"), &r), VP_ERR_IO, "no such folder");
    make_run("empty", NULL);
    CHECK_STATUS(vp_compare_load(vpt_path(dir, sizeof dir, g_root, "empty"), &r), VP_ERR_IO,
                 "is not a run: it holds no summary.json");
    make_run("garbage", "not json");
    CHECK_STATUS(vp_compare_load(vpt_path(dir, sizeof dir, g_root, "garbage"), &r), VP_ERR_PARSE,
                 "is not a JSON object");
    make_run("other", "{\"x\":1}");
    CHECK_STATUS(vp_compare_load(vpt_path(dir, sizeof dir, g_root, "other"), &r), VP_ERR_PARSE,
                 "not the summary of a run, walk-forward or backtest");
    make_run("file_parent", "{\"finished\":true}");
    CHECK_STATUS(vp_compare_load(vpt_path(dir, sizeof dir, g_root, "file_parent/summary.json"), &r),
                 VP_ERR_INVALID_ARG, "is a file, not a folder");
}

int main(void) {
    if (!mkdtemp(g_root)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    RUN_TEST(test_rows);
    RUN_TEST(test_not_runs);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return vpt_finish();
}
