/* Tests of what guards a run folder: the lock (a second open of a folder in use is refused,
 * naming the holder's pid; a stale lock file is taken over; closing removes it), --force
 * moving the earlier run's files aside instead of deleting them, and the metrics trim of a
 * resume refusing a damaged line (a NUL byte, a line that is not JSON) instead of dropping it. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_train_util.h"
#include "test_util.h"
#include "vp_test.h"
#include "vulpes/run.h"
#include "vulpes/train.h"

static char g_root[] = "/tmp/vp_test_run_guard_XXXXXX";

/* Writes n bytes of `data` to dir/name. */
static void put_bytes(const char* dir, const char* name, const char* data, size_t n) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE* f = fopen(p, "wb");
    if (f) {
        fwrite(data, 1, n, f);
        fclose(f);
    }
}

/* Whether dir/name holds exactly `text`. */
static int holds(const char* dir, const char* name, const char* text) {
    char* s = vpt_read_file(dir, name, NULL);
    int same = s && strcmp(s, text) == 0;
    free(s);
    return same;
}

static void test_lock(void) {
    vp_config cfg;
    vp_config_defaults(&cfg);
    char dir[300], needle[400];
    snprintf(dir, sizeof dir, "%s/locked", g_root);
    vp_run a, b;
    CHECK_OK(vp_run_open(&a, dir, VP_RUN_CREATE, &cfg));
    CHECK(vpt_exists(dir, ".lock"), "no lock file while the folder is open");
    // a second open of the folder, in any mode, is refused naming the holder
    snprintf(needle, sizeof needle, "run folder %s is in use by another vulpes process (pid %ld)", dir,
             (long)getpid());
    CHECK_STATUS(vp_run_open(&b, dir, VP_RUN_RESUME, NULL), VP_ERR_STATE, needle);
    CHECK_STATUS(vp_run_open(&b, dir, VP_RUN_FORCE, &cfg), VP_ERR_STATE, needle);
    CHECK_STATUS(vp_run_claim(&b, dir, VP_RUN_RESUME), VP_ERR_STATE, needle);
    CHECK(vpt_exists(dir, "config.yaml") && vpt_exists(dir, "metrics.jsonl"), "a refused open removed the run's files");
    vp_run_close(&b); /* closing a run that never opened is a no-op */
    CHECK(vpt_exists(dir, ".lock"), "closing a refused run released the holder's lock");
    vp_run_close(&a);
    CHECK(!vpt_exists(dir, ".lock"), "closing the run left its lock file");
    // free again: a resume takes it
    CHECK_OK(vp_run_open(&b, dir, VP_RUN_RESUME, NULL));
    vp_run_close(&b);
    // a lock file left by a process that died (no lock held) is taken over; it does not
    // count as content of an otherwise empty folder
    char fresh[300];
    snprintf(fresh, sizeof fresh, "%s/stale", g_root);
    mkdir(fresh, 0777);
    put_bytes(fresh, ".lock", "999999\n", 7);
    CHECK_OK(vp_run_open(&a, fresh, VP_RUN_CREATE, &cfg));
    vp_run_close(&a);
    CHECK(!vpt_exists(fresh, ".lock"), "the stale lock file stayed");
}

static void test_force_moves_aside(void) {
    vp_config cfg;
    vp_config_defaults(&cfg);
    char dir[300], aside[320];
    snprintf(dir, sizeof dir, "%s/forced", g_root);
    mkdir(dir, 0777);
    // an earlier run's files, a config.yaml of the user's and files vulpes never writes
    put_bytes(dir, "config.yaml", "# my own notes\ndata:\n  path: mine.csv\n", 38);
    put_bytes(dir, "last.safetensors", "old-last", 8);
    put_bytes(dir, "best.safetensors.tmp", "old-tmp", 7);
    put_bytes(dir, "metrics.jsonl", "{\"event\":\"run\"}\n", 16);
    put_bytes(dir, "model.safetensors", "users-model", 11);
    put_bytes(dir, "notes.txt", "keep me", 7);
    vp_run r;
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_FORCE, &cfg));
    vp_run_close(&r);
    // nothing is deleted: the run's files are in DIR/replaced-1, the others where they were
    snprintf(aside, sizeof aside, "%s/replaced-1", dir);
    CHECK(holds(aside, "config.yaml", "# my own notes\ndata:\n  path: mine.csv\n"), "the old config.yaml was not kept");
    CHECK(holds(aside, "last.safetensors", "old-last") && holds(aside, "best.safetensors.tmp", "old-tmp") &&
              holds(aside, "metrics.jsonl", "{\"event\":\"run\"}\n"),
          "the old run's files were not moved aside");
    CHECK(holds(dir, "model.safetensors", "users-model") && holds(dir, "notes.txt", "keep me"),
          "--force touched files vulpes did not write");
    CHECK(!vpt_exists(dir, "last.safetensors") && holds(dir, "metrics.jsonl", ""), "the new run sees old files");
    vp_config back;
    vp_config_defaults(&back);
    char path[400];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    CHECK_OK(vp_config_load_file(&back, path));
    CHECK(vp_config_diff(&cfg, &back) == NULL, "the new config.yaml is not the run's");
    // a second force keeps the first one's aside folder
    CHECK_OK(vp_run_open(&r, dir, VP_RUN_FORCE, &cfg));
    vp_run_close(&r);
    snprintf(aside, sizeof aside, "%s/replaced-2", dir);
    CHECK(vpt_exists(aside, "config.yaml") && vpt_exists(dir, "replaced-1"), "the second force lost the first's files");
}

static void test_trim_refuses_damage(void) {
    char dir[300], path[400];
    snprintf(dir, sizeof dir, "%s/trim", g_root);
    mkdir(dir, 0777);
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    // a NUL byte inside line 3: refused naming the file and line, the file unchanged
    static const char nul[] = "{\"event\":\"run\",\"iteration\":0}\n{\"event\":\"train\",\"iteration\":5}\n"
                              "{\"event\":\"train\",\0\"iteration\":10}\n{\"event\":\"train\",\"iteration\":15}\n";
    put_bytes(dir, "metrics.jsonl", nul, sizeof nul - 1);
    char needle[500];
    snprintf(needle, sizeof needle, "%s line 3", path);
    CHECK_STATUS(vp_train_trim_metrics(path, 20), VP_ERR_PARSE, needle);
    size_t len = 0;
    char* back = vpt_read_file(dir, "metrics.jsonl", &len);
    CHECK(back && len == sizeof nul - 1 && memcmp(back, nul, len) == 0, "a refused trim changed the file");
    free(back);
    // a complete line that is not JSON: refused, not dropped
    static const char junk[] = "{\"event\":\"run\",\"iteration\":0}\nnot json\n{\"event\":\"train\",\"iteration\":5}\n";
    put_bytes(dir, "metrics.jsonl", junk, sizeof junk - 1);
    snprintf(needle, sizeof needle, "%s line 2", path);
    CHECK_STATUS(vp_train_trim_metrics(path, 20), VP_ERR_PARSE, needle);
    CHECK(holds(dir, "metrics.jsonl", junk), "a refused trim changed the file");
    // the last line cut short by a crash (NUL bytes of an unwritten tail included) is dropped
    static const char tail[] = "{\"event\":\"run\",\"iteration\":0}\n{\"event\":\"train\",\"iteration\":5}\n{\"ev\0\0\0";
    put_bytes(dir, "metrics.jsonl", tail, sizeof tail - 1);
    CHECK_OK(vp_train_trim_metrics(path, 20));
    CHECK(holds(dir, "metrics.jsonl", "{\"event\":\"run\",\"iteration\":0}\n{\"event\":\"train\",\"iteration\":5}\n"),
          "the cut-short tail was not dropped");
}

int main(void) {
    if (!mkdtemp(g_root)) {
        perror("mkdtemp");
        return 1;
    }
    RUN_TEST(test_lock);
    RUN_TEST(test_force_moves_aside);
    RUN_TEST(test_trim_refuses_damage);
    vpt_rm_run(g_root);
    return vpt_finish();
}
