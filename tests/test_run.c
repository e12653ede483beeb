/* Tests of the run folder: atomic files, folder creation and the refusal to overwrite,
 * config.yaml, metrics.jsonl lines read back with cJSON. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "vp_test.h"
#include "vulpes/run.h"

static char g_root[] = "/tmp/vp_test_run_XXXXXX";

/* A whole file (its first 64 KiB) in a static buffer ("" when absent). */
static const char* slurp(const char* path) {
    static char buf[1 << 16];
    char* text = vpt_slurp(path, NULL);
    snprintf(buf, sizeof buf, "%s", text ? text : "");
    free(text);
    return buf;
}

/* Writes `text` to `path` plainly. */
static void put_file(const char* path, const char* text) {
    FILE* f = fopen(path, "w");
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

/* Counts the entries of a folder ending in ".tmp". */
static int count_tmp(const char* dir) {
    DIR* d = opendir(dir);
    int n = 0;
    struct dirent* e;
    while (d && (e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        n += len > 4 && strcmp(e->d_name + len - 4, ".tmp") == 0;
    }
    if (d) closedir(d);
    return n;
}

static void test_atomic_write(void) {
    char path[256], tmp[300];
    snprintf(path, sizeof path, "%s/summary.json", g_root);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    CHECK_OK(vp_file_write_atomic(path, "{\"a\": 1}\n", 9));
    CHECK(strcmp(slurp(path), "{\"a\": 1}\n") == 0, "content '%s'", slurp(path));
    CHECK(!vpt_exists(tmp, NULL) && count_tmp(g_root) == 0, "a temporary file was left");
    // replacing the file: the new content, still no temporary file
    CHECK_OK(vp_file_write_atomic(path, "{\"a\": 2, \"b\": 3}\n", 17));
    CHECK(strcmp(slurp(path), "{\"a\": 2, \"b\": 3}\n") == 0, "content '%s'", slurp(path));
    CHECK(count_tmp(g_root) == 0, "a temporary file was left after a replace");
    // a half-written file is never visible under the final name
    vp_atomic_file a;
    CHECK_OK(vp_atomic_file_open(&a, path));
    fputs("{\"half", a.f);
    fflush(a.f);
    CHECK(vpt_exists(tmp, NULL) && strcmp(slurp(path), "{\"a\": 2, \"b\": 3}\n") == 0,
          "old content stays until commit");
    vp_atomic_file_abort(&a);
    CHECK(!vpt_exists(tmp, NULL) && strcmp(slurp(path), "{\"a\": 2, \"b\": 3}\n") == 0, "abort keeps the old file");
    // streamed writes through the FILE*, then commit
    CHECK_OK(vp_atomic_file_open(&a, path));
    for (int i = 0; i < 1000; ++i) fprintf(a.f, "%d\n", i);
    CHECK_OK(vp_atomic_file_commit(&a));
    CHECK(strncmp(slurp(path), "0\n1\n2\n", 6) == 0 && strlen(slurp(path)) == 3890, "streamed %zu bytes",
          strlen(slurp(path)));
    vp_atomic_file_abort(&a);  // after a commit: a no-op
    CHECK(vpt_exists(path, NULL) && count_tmp(g_root) == 0, "abort after commit removed something");
    CHECK_STATUS(vp_atomic_file_commit(&a), VP_ERR_STATE, "not open");
    // an unwritable place fails naming the path
    CHECK_STATUS(vp_file_write_atomic("/nonexistent/dir/x.json", "x", 1), VP_ERR_IO, "/nonexistent/dir/x.json");
    remove(path);
}

static void test_run_folder(void) {
    vp_config cfg, back;
    vp_config_defaults(&cfg);
    cfg.learn.lr = 3e-4;
    snprintf(cfg.data.path, sizeof cfg.data.path, "/data/eurusd_1h_2017.csv"); /* runs record it absolute */
    char dir[256], path[512];
    snprintf(dir, sizeof dir, "%s/runs/a/b", g_root);
    // a new folder (parents made), config.yaml resolved, metrics.jsonl empty
    vp_run r;
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_CREATE, &cfg));
    CHECK_OK(vp_run_path(&r, "config.yaml", path, sizeof path));
    vp_config_defaults(&back);
    CHECK_OK(vp_config_load_file(&back, path));
    CHECK(vp_config_diff(&cfg, &back) == NULL, "config.yaml does not load back to the run's config");
    CHECK_OK(vp_metrics_log_begin(&r.metrics, "train"));
    CHECK_OK(vp_metrics_log_int(&r.metrics, "iteration", 1));
    CHECK_OK(vp_metrics_log_end(&r.metrics));
    vp_run_close(&r);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    CHECK(strcmp(slurp(path), "{\"event\":\"train\",\"iteration\":1}\n") == 0, "metrics '%s'", slurp(path));
    // an existing, non-empty folder is refused without force, and left alone
    char needle[400];
    snprintf(needle, sizeof needle, "run folder '%s' exists and is not empty; pass --force", dir);
    CHECK_STATUS(vp_run_open(&r, dir, VP_RUN_CREATE, &cfg), VP_ERR_STATE, needle);
    CHECK(strlen(slurp(path)) > 0, "a refused open touched metrics.jsonl");
    // force: the old run's files go, other files stay, a fresh config is written
    char stale[512], notes[512];
    snprintf(stale, sizeof stale, "%s/best.safetensors", dir);
    snprintf(notes, sizeof notes, "%s/notes.txt", dir);
    put_file(stale, "old");
    put_file(notes, "keep me");
    cfg.learn.batch = 64;
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_FORCE, &cfg));
    vp_run_close(&r);
    CHECK(!vpt_exists(stale, NULL) && strcmp(slurp(notes), "keep me") == 0, "force removed the wrong files");
    CHECK(strcmp(slurp(path), "") == 0, "force left old metrics");
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    CHECK_OK(vp_config_load_file(&back, path));
    CHECK(back.learn.batch == 64, "forced run wrote the new config");
    CHECK(count_tmp(dir) == 0, "temporary files left in the run folder");
    // resume appends to the metrics and needs config.yaml
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_RESUME, NULL));
    CHECK_OK(vp_metrics_log_begin(&r.metrics, "train"));
    CHECK_OK(vp_metrics_log_end(&r.metrics));
    vp_run_close(&r);
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_RESUME, NULL));
    CHECK_OK(vp_metrics_log_begin(&r.metrics, "eval"));
    CHECK_OK(vp_metrics_log_end(&r.metrics));
    vp_run_close(&r);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    CHECK(strcmp(slurp(path), "{\"event\":\"train\"}\n{\"event\":\"eval\"}\n") == 0, "resumed metrics '%s'", slurp(path));
    snprintf(path, sizeof path, "%s/runs/none", g_root);
    CHECK_STATUS(vp_run_open(&r, path, VP_RUN_RESUME, NULL), VP_ERR_IO, "has no config.yaml");
    // an existing empty folder is fine; a file in the way is not
    snprintf(path, sizeof path, "%s/runs/empty", g_root);
    mkdir(path, 0777);
    CHECK_OK(vp_run_open(&r, path, VP_RUN_CREATE, &cfg));
    vp_run_close(&r);
    put_file(stale, "x");
    CHECK_STATUS(vp_run_open(&r, stale, VP_RUN_CREATE, &cfg), VP_ERR_IO, "best.safetensors' exists and is not a folder");
    CHECK_STATUS(vp_run_open(&r, dir, VP_RUN_CREATE, NULL), VP_ERR_INVALID_ARG, "needs its config");
}

static void test_run_names(void) {
    char name[64], dir[512], root[300];
    CHECK(strcmp(vp_run_name_from_path("examples/eurusd.yaml", name, sizeof name), "eurusd") == 0, "%s", name);
    CHECK(strcmp(vp_run_name_from_path("a.b.yml", name, sizeof name), "a.b") == 0, "%s", name);
    CHECK(strcmp(vp_run_name_from_path("/x/y/plain", name, sizeof name), "plain") == 0, "%s", name);
    CHECK(strcmp(vp_run_name_from_path(".hidden", name, sizeof name), ".hidden") == 0, "%s", name);
    CHECK(strcmp(vp_run_name_from_path("dir/", name, sizeof name), "run") == 0, "%s", name);
    CHECK(strcmp(vp_run_name_from_path(NULL, name, sizeof name), "run") == 0, "%s", name);
    // runs/YYYYmmdd-HHMMSS-NAME in local time (UTC here), then -2 when taken
    setenv("TZ", "UTC", 1);
    tzset();
    snprintf(root, sizeof root, "%s/runs", g_root);
    CHECK_OK(vp_run_dir_default(dir, sizeof dir, root, "eurusd", (time_t)1700000000));
    char want[512];
    snprintf(want, sizeof want, "%s/20231114-221320-eurusd", root);
    CHECK(strcmp(dir, want) == 0, "default folder %s, expected %s", dir, want);
    mkdir(root, 0777);
    mkdir(dir, 0777);
    CHECK_OK(vp_run_dir_default(dir, sizeof dir, root, "eurusd", (time_t)1700000000));
    CHECK(strcmp(dir, strcat(want, "-2")) == 0, "taken folder gives %s, expected %s", dir, want);
    CHECK_STATUS(vp_run_dir_default(dir, 16, root, "eurusd", 0), VP_ERR_INVALID_ARG, "too long");
}

static void test_metrics_lines(void) {
    char path[256];
    snprintf(path, sizeof path, "%s/metrics.jsonl", g_root);
    vp_metrics_log m;
    CHECK_OK(vp_metrics_log_open(&m, path, 0));
    // three events; the line is on disk as soon as it ends
    for (int i = 0; i < 3; ++i) {
        CHECK_OK(vp_metrics_log_begin(&m, i == 2 ? "eval" : "train"));
        CHECK_OK(vp_metrics_log_int(&m, "iteration", 100 * (i + 1)));
        CHECK_OK(vp_metrics_log_int(&m, "env_steps", (int64_t)4096 * 1000000 * (i + 1)));
        CHECK_OK(vp_metrics_log_num(&m, "loss", 0.1 / (i + 1)));
        CHECK_OK(vp_metrics_log_num(&m, "val_sharpe", i == 1 ? NAN : 1.25));
        CHECK_OK(vp_metrics_log_str(&m, "note", "a \"quoted\"\nline"));
        CHECK_OK(vp_metrics_log_end(&m));
        int lines = 0;
        for (const char* p = slurp(path); *p; ++p) lines += *p == '\n';
        CHECK(lines == i + 1, "after event %d the file has %d lines", i, lines);
    }
    // misuse is refused
    CHECK_STATUS(vp_metrics_log_int(&m, "x", 1), VP_ERR_STATE, "outside an event");
    CHECK_STATUS(vp_metrics_log_end(&m), VP_ERR_STATE, "no event is open");
    CHECK_OK(vp_metrics_log_begin(&m, "train"));
    CHECK_STATUS(vp_metrics_log_begin(&m, "train"), VP_ERR_STATE, "already open");
    CHECK_OK(vp_metrics_log_num(&m, "loss", 1.0));
    CHECK_STATUS(vp_metrics_log_num(&m, "loss", 2.0), VP_ERR_INVALID_ARG, "'loss' given twice");
    CHECK_STATUS(vp_metrics_log_int(&m, "big", ((int64_t)1 << 53) + 1), VP_ERR_INVALID_ARG, "not exact in JSON");
    vp_metrics_log_close(&m);  // drops the unfinished event
    vp_metrics_log_close(&m);
    CHECK(m.lines == 3, "lines %lld", (long long)m.lines);
    // every line parses back with the values written
    char text[4096];
    snprintf(text, sizeof text, "%s", slurp(path));
    int i = 0;
    for (char* line = strtok(text, "\n"); line; line = strtok(NULL, "\n"), ++i) {
        cJSON* o = cJSON_Parse(line);
        CHECK(o != NULL, "line %d does not parse: %s", i, line);
        if (!o) continue;
        CHECK(strcmp(o->child->string, "event") == 0, "event is not the first key");
        CHECK(strcmp(cJSON_GetObjectItem(o, "event")->valuestring, i == 2 ? "eval" : "train") == 0, "event");
        CHECK(cJSON_GetObjectItem(o, "iteration")->valuedouble == 100 * (i + 1), "iteration");
        CHECK(cJSON_GetObjectItem(o, "env_steps")->valuedouble == 4096.0 * 1000000 * (i + 1), "env_steps exact");
        CHECK(cJSON_GetObjectItem(o, "loss")->valuedouble == 0.1 / (i + 1), "loss round trip");
        cJSON* vs = cJSON_GetObjectItem(o, "val_sharpe");
        CHECK(i == 1 ? cJSON_IsNull(vs) : vs->valuedouble == 1.25, "val_sharpe (NaN is null)");
        CHECK(strcmp(cJSON_GetObjectItem(o, "note")->valuestring, "a \"quoted\"\nline") == 0, "string escapes");
        cJSON_Delete(o);
    }
    CHECK(i == 3, "%d lines", i);
    remove(path);
}

int main(void) {
    if (!mkdtemp(g_root)) {
        fprintf(stderr, "mkdtemp failed\n");
        return 1;
    }
    RUN_TEST(test_atomic_write);
    RUN_TEST(test_run_folder);
    RUN_TEST(test_run_names);
    RUN_TEST(test_metrics_lines);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", g_root);
    if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_root);
    return vpt_finish();
}
