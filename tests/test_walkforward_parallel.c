/* Walk-forward folds run in parallel on the CPU (each thread on its own backend): 2 and 3 folds
 * at once over 5 folds give byte-identical fold folders (trades.csv, equity.csv, done.json,
 * best.safetensors, summary.json without its wall-clock timing) and the same stitched curve
 * and files as one after another; the fold events stay in fold order; an interrupted parallel
 * walk-forward (a fold cap, then a stop with two folds in flight) resumes to the same bytes,
 * with the number of parallel folds taken from the config and free to differ on the resume;
 * warm start runs one after another whatever is asked; a failing fold's error comes back. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <sys/stat.h>

#include "test_data_util.h"
#include "vp_test.h"
#include "vulpes/walkforward.h"

enum { TRAIN = 211, VAL = 67, TEST = 53, EMBARGO = 1, FOLDS = 5 };

/* A tiny, fast training setup on a synthetic mean-reverting market. */
static void tiny_config(vp_config* c) {
    vpt_tiny_train_config(c, "synth:ou:bars=900,seed=7,sigma=0.004");
    c->instrument.max_position = 3.0;
    c->env.n_envs = 3, c->env.episode_bars = 29;
    c->replay.capacity = 256, c->replay.warmup = 32;
}

/* summary.json of D/FILE without "timing", with the folder root replaced by "@", compact. */
static char* summary_text(const char* d, const char* file, const char* root) {
    char* text = vpt_read_file(d, file, NULL);
    cJSON* j = text ? cJSON_Parse(text) : NULL;
    free(text);
    if (!j) return NULL;
    cJSON_DeleteItemFromObjectCaseSensitive(j, "timing");
    char* s = cJSON_PrintUnformatted(j);
    cJSON_Delete(j);
    // the checkpoint's path names the folder
    const size_t rl = strlen(root);
    for (char* q; s && (q = strstr(s, root)) != NULL;) {
        q[0] = '@';
        memmove(q + 1, q + rl, strlen(q + rl) + 1);
    }
    return s;
}

/* Whether the summaries of two folders are the same but for timing and the folder root. */
static int same_summary(const char* d1, const char* r1, const char* d2, const char* r2, const char* file) {
    char *a = summary_text(d1, file, r1), *b = summary_text(d2, file, r2);
    int same = a && b && strstr(a, "timing") == NULL && strcmp(a, b) == 0;
    free(a);
    free(b);
    return same;
}

/* Checks that walk-forward folder d equals reference folder ref fold by fold and stitched. */
static void check_same(const char* ref, const char* d, const vp_wf_result* rr, const vp_wf_result* r) {
    CHECK(r->n_done == FOLDS && !r->interrupted && r->n_curve == rr->n_curve && r->n_curve == FOLDS * TEST,
          "%s: %lld folds, %lld points", d, (long long)r->n_done, (long long)r->n_curve);
    if (r->n_curve == rr->n_curve)
        CHECK(memcmp(r->equity, rr->equity, sizeof(double) * (size_t)r->n_curve) == 0 &&
                  memcmp(r->position, rr->position, sizeof(double) * (size_t)r->n_curve) == 0 &&
                  memcmp(r->bar, rr->bar, sizeof(int64_t) * (size_t)r->n_curve) == 0,
              "%s: the stitched curve differs", d);
    for (int64_t k = 0; k < FOLDS && k < r->n_done; ++k)
        CHECK(r->folds[k].index == k + 1 && r->folds[k].end_equity == rr->folds[k].end_equity &&
                  r->folds[k].best_iteration == rr->folds[k].best_iteration,
              "%s: fold %lld row differs", d, (long long)k);
    static const char* files[5] = {"trades.csv", "equity.csv", "done.json", "best.safetensors", "walkforward.json"};
    char f1[400], f2[400];
    for (int k = 0; k < FOLDS; ++k) {
        snprintf(f1, sizeof f1, "%s/folds/fold_%03d", ref, k + 1);
        snprintf(f2, sizeof f2, "%s/folds/fold_%03d", d, k + 1);
        for (int i = 0; i < 4; ++i) CHECK(vpt_same_file(f1, f2, files[i]), "%s: fold %d %s differs", d, k, files[i]);
        CHECK(same_summary(f1, ref, f2, d, "summary.json"), "%s: fold %d summary.json differs", d, k);
    }
    for (int i = 0; i < 2; ++i) CHECK(vpt_same_file(ref, d, files[i]), "%s: stitched %s differs", d, files[i]);
    CHECK(vpt_same_file(ref, d, "walkforward.json"), "%s: walkforward.json differs", d);
    CHECK(same_summary(ref, ref, d, d, "summary.json"), "%s: stitched summary.json differs", d);
    // one fold event per fold, in fold order, numbered from 1
    char* m = vpt_read_file(d, "metrics.jsonl", NULL);
    const char* q = m;
    char key[64];
    for (int k = 1; k <= FOLDS && q; ++k) {
        snprintf(key, sizeof key, "{\"event\":\"fold\",\"fold\":%d,", k);
        q = strstr(q, key);
        CHECK(q != NULL, "%s: fold event %d missing or out of order", d, k);
    }
    CHECK(m && q && strstr(q + strlen(key), "\"event\":\"fold\"") == NULL, "%s: extra fold events", d);
    free(m);
}

static void test_parallel_equals_sequential(void) {
    char root[256], seq[300], par[300];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    tiny_config(&cfg);
    vpt_fold_cfg(&cfg, TRAIN, VAL, TEST, EMBARGO, FOLDS);

    // one after another: the reference
    snprintf(seq, sizeof seq, "%s/seq", root);
    vp_wf_opts os = {seq, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result rs;
    CHECK_OK(vp_walkforward_run(&cfg, be, &os, &rs));
    CHECK(rs.n_done == FOLDS && rs.summary.trades.n_trades > 0, "reference: %lld folds, %lld trades",
          (long long)rs.n_done, (long long)rs.summary.trades.n_trades);

    // 2 and 3 folds at once (the config's key)
    for (int p = 2; p <= 3; ++p) {
        snprintf(par, sizeof par, "%s/par%d", root, p);
        vp_config c2 = cfg;
        c2.walkforward.parallel = p;
        FILE* log = tmpfile();
        vp_wf_opts op = {par, VP_RUN_CREATE, log, NULL, 0, 1, 0, 0};
        vp_wf_result rp;
        CHECK_OK(vp_walkforward_run(&c2, be, &op, &rp));
        check_same(seq, par, &rs, &rp);
        vp_wf_result_free(&rp);
        // the progress: the number at once, whole lines each prefixed by its fold, the warm-up
        // notice of each fold, and whole progress lines ("[elapsed] fold K/5 (D done, R running) |
        // iter ... | ETA ...") from the first at once to the last
        char line[1024], want[64];
        int at_once = 0, tests = 0, warm = 0, prog = 0, last = 0, other = 0;
        snprintf(want, sizeof want, "walk-forward: %d folds at once\n", p);
        rewind(log);
        while (log && fgets(line, sizeof line, log)) {
            if (strcmp(line, want) == 0) at_once++;
            else if (strncmp(line, "fold ", 5) == 0 && strstr(line, "/5: ") && strstr(line, "test Sharpe")) tests++;
            else if (strncmp(line, "fold ", 5) == 0 && strstr(line, "/5: warming up: filling the replay buffer with 32 "
                                                                    "transitions (11 collection steps of 3 envs"))
                warm++;
            else if (line[0] == '[' && strstr(line, "] fold ") && strstr(line, "/5 (") && strstr(line, " | iter ") &&
                     strstr(line, " | ETA ") && line[strlen(line) - 1] == '\n') {
                prog++;
                last = strstr(line, "iter 4/4 (100.0%)") && strstr(line, "| ETA 0s\n");
            } else if (strncmp(line, "fold ", 5) != 0 || !strstr(line, "/5: ")) {
                other++;
            }
        }
        CHECK(at_once == 1 && tests == FOLDS && warm == FOLDS && prog >= 2 && last && other == 0,
              "progress with %d at once: %d, %d test lines, %d warm-up, %d progress lines (last one %s), %d other", p,
              at_once, tests, warm, prog, last ? "right" : "wrong", other);
        if (log) fclose(log);
    }

    // more folds at once than there are: the same
    snprintf(par, sizeof par, "%s/par9", root);
    vp_wf_opts o9 = {par, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_config c9 = cfg;
    c9.walkforward.parallel = 9;
    vp_wf_result r9;
    CHECK_OK(vp_walkforward_run(&c9, be, &o9, &r9));
    check_same(seq, par, &rs, &r9);
    vp_wf_result_free(&r9);

    vp_wf_result_free(&rs);
    vp_backend_free(be);
    tdu_rmtree(root);
}

static void test_parallel_resume(void) {
    char root[256], seq[300], par[300], fd[400];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    tiny_config(&cfg);
    vpt_fold_cfg(&cfg, TRAIN, VAL, TEST, EMBARGO, FOLDS);
    snprintf(seq, sizeof seq, "%s/seq", root);
    snprintf(par, sizeof par, "%s/par", root);
    vp_wf_opts os = {seq, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result rs, rp;
    CHECK_OK(vp_walkforward_run(&cfg, be, &os, &rs));

    // two at once, capped at three folds: 1, 2, 3 finish
    vp_wf_opts op = {par, VP_RUN_CREATE, NULL, NULL, 3, 1, 0, 0};
    vp_config c1 = cfg;
    c1.walkforward.parallel = 2;
    CHECK_OK(vp_walkforward_run(&c1, be, &op, &rp));
    CHECK(rp.interrupted && rp.n_done == 3 && rp.n_curve == 3 * TEST, "first call: %lld folds", (long long)rp.n_done);
    vp_wf_result_free(&rp);

    // resumed with a stop: folds 4 and 5 both start and stop unfinished
    volatile sig_atomic_t stop = 1;
    vp_config c2 = cfg;
    c2.walkforward.parallel = 3;  // the folder's config says 2: a resume may differ in it
    op.mode = VP_RUN_RESUME, op.stop_after_folds = 0, op.stop = &stop;
    CHECK_OK(vp_walkforward_run(&c2, be, &op, &rp));
    CHECK(rp.interrupted && rp.n_done == 3, "second call: %lld folds", (long long)rp.n_done);
    vp_wf_result_free(&rp);
    for (int k = 4; k <= FOLDS; ++k) {
        snprintf(fd, sizeof fd, "%s/folds/fold_%03d/done.json", par, k);
        struct stat st;
        CHECK(stat(fd, &st) != 0, "fold %d finished despite the stop", k);
        snprintf(fd, sizeof fd, "%s/folds/fold_%03d/metrics.jsonl", par, k);
        CHECK(stat(fd, &st) == 0, "fold %d was not started", k);
    }

    // resumed to the end, two at once: the same bytes as straight through one at a time
    op.stop = NULL;
    CHECK_OK(vp_walkforward_run(&c2, be, &op, &rp));
    check_same(seq, par, &rs, &rp);
    vp_wf_result_free(&rp);
    vp_wf_result_free(&rs);

    // warm start: one after another whatever is asked, and the same as asked one at a time
    vp_config cw = cfg, cw4;
    cw.walkforward.warm_start = true, cw.walkforward.max_folds = 2;
    cw4 = cw;
    cw4.walkforward.parallel = 4;
    vp_wf_opts oa = {seq, VP_RUN_FORCE, NULL, NULL, 0, 1, 0, 0}, ob = {par, VP_RUN_FORCE, NULL, NULL, 0, 1, 0, 0};
    CHECK_OK(vp_walkforward_run(&cw, be, &oa, &rs));
    CHECK_OK(vp_walkforward_run(&cw4, be, &ob, &rp));
    CHECK(rs.n_done == 2 && rp.n_done == 2, "warm start: %lld and %lld folds", (long long)rs.n_done,
          (long long)rp.n_done);
    CHECK(vpt_same_file(seq, par, "folds/fold_002/trades.csv") &&
              vpt_same_file(seq, par, "folds/fold_002/done.json") && vpt_same_file(seq, par, "equity.csv"),
          "warm start differs when more folds at once were asked");
    vp_wf_result_free(&rs);
    vp_wf_result_free(&rp);

    // a fold that fails (a config the trainer refuses): the error comes back from the threads
    vp_config bad = cw4;
    bad.walkforward.warm_start = false, bad.walkforward.max_folds = FOLDS;
    bad.instrument.max_position = 2.5;
    ob.mode = VP_RUN_FORCE;
    vp_status s = vp_walkforward_run(&bad, be, &ob, &rp);
    CHECK(s != VP_OK && strstr(vp_last_error(), "fold ") && strstr(vp_last_error(), "max_position"),
          "a failing fold in parallel: %s", vp_last_error());
    vp_wf_result_free(&rp);

    vp_backend_free(be);
    tdu_rmtree(root);
}

int main(void) {
    RUN_TEST(test_parallel_equals_sequential);
    RUN_TEST(test_parallel_resume);
    return vpt_finish();
}
