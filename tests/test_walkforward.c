/* Walk-forward on the CPU with a tiny network and a few iterations per fold: the fold
 * arithmetic, the stitched curve (each test span continues from the previous one's ending
 * equity), the files, a resume after an interruption (a fold folder left without its done
 * marker) giving byte-identical results, a refused resume with other folds, warm start. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <sys/stat.h>

#include "test_data_util.h"
#include "vp_test.h"
#include "vulpes/features.h"
#include "vulpes/walkforward.h"

enum { TRAIN = 300, VAL = 100, TEST = 80, EMBARGO = 2, FOLDS = 3 };

/* A tiny, fast training setup on a synthetic mean-reverting market. */
static void tiny_config(vp_config* c) {
    vpt_tiny_train_config(c, "synth:ou:bars=1400,seed=5,sigma=0.004");
    c->env.n_envs = 4, c->env.episode_bars = 32;
    c->replay.capacity = 512, c->replay.warmup = 32;
}

/* A number of the plan (walkforward.json), NaN when absent. */
static double plan_num(const cJSON* plan, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(plan, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Checks the fold spans, the stitched curve's continuity and the fold rows. */
static void check_result(const vp_wf_result* r, int64_t warmup) {
    CHECK(r->n_done == FOLDS && !r->interrupted && r->n_folds == FOLDS, "done %lld of %lld", (long long)r->n_done,
          (long long)r->n_folds);
    CHECK(r->n_curve == FOLDS * TEST, "%lld stitched points", (long long)r->n_curve);
    for (int64_t k = 0; k < r->n_done && r->n_curve == FOLDS * TEST; ++k) {
        const vp_wf_fold* f = &r->folds[k];
        // rolling folds: each shifted by the test span; embargo between the spans
        const int64_t t0 = warmup + k * TEST;
        CHECK(f->split.train.begin == t0 && f->split.train.end == t0 + TRAIN, "fold %lld train", (long long)k);
        CHECK(f->split.val.begin == t0 + TRAIN + EMBARGO && vp_span_len(f->split.val) == VAL, "fold %lld val",
              (long long)k);
        CHECK(f->split.test.begin == t0 + TRAIN + VAL + 2 * EMBARGO && vp_span_len(f->split.test) == TEST,
              "fold %lld test", (long long)k);
        // the test spans tile, each fold's curve starts where the previous one ended
        const int64_t o = k * TEST;
        CHECK(r->bar[o] == f->split.test.begin && r->fold[o] == k + 1 && f->index == k + 1, "fold %lld first point",
              (long long)k);
        CHECK(f->stitched == 1 && f->ruined == 0, "fold %lld stitched %d, ruined %d", (long long)k, f->stitched, f->ruined);
        CHECK(r->equity[o] == (k ? r->folds[k - 1].end_equity : 100000.0) && f->start_equity == r->equity[o],
              "fold %lld starts at %.17g", (long long)k, r->equity[o]);
        CHECK(f->end_equity == r->equity[o + TEST - 1], "fold %lld end", (long long)k);
        CHECK_NEAR(f->end_equity / f->start_equity - 1.0, f->test.total_return, 1e-12, 1e-9);
        CHECK(r->position[o + TEST - 1] == 0.0, "fold %lld ends with a position", (long long)k);
    }
    CHECK_NEAR(r->equity[r->n_curve - 1] / 100000.0 - 1.0, r->summary.strategy.total_return, 1e-12, 1e-9);
    int64_t trades = 0;
    for (int64_t k = 0; k < r->n_done; ++k) trades += r->folds[k].trades.n_trades;
    CHECK(trades == r->summary.trades.n_trades && r->summary.trades.n_bars == r->n_curve, "trades %lld vs %lld",
          (long long)trades, (long long)r->summary.trades.n_trades);
}

static void test_walkforward_and_resume(void) {
    char root[256], a[300], b[300];
    CHECK(tdu_mkdtemp(root, sizeof root) != NULL, "temporary folder");
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_config cfg;
    tiny_config(&cfg);
    vpt_fold_cfg(&cfg, TRAIN, VAL, TEST, EMBARGO, FOLDS);

    // straight through
    vp_wf_opts oa = {a, VP_RUN_CREATE, NULL, NULL, 0, 1, 0, 0};
    vp_wf_result ra;
    CHECK_OK(vp_walkforward_run(&cfg, be, &oa, &ra));
    // warm-up: the features' longest look-back plus the normalisation window, before the first fold
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = 32;
    const int64_t warm = vp_features_warmup(&fc);
    check_result(&ra, warm);
    CHECK(ra.summary.trades.n_trades > 0, "no test trades in any fold");
    static const char* top[6] = {"config.yaml", "walkforward.json", "equity.csv", "trades.csv", "summary.json",
                                 "report.html"};
    for (int i = 0; i < 6; ++i) CHECK(vpt_exists(a, top[i]), "%s missing", top[i]);
    static const char* per_fold[6] = {"best.safetensors", "metrics.jsonl", "equity.csv", "trades.csv", "summary.json",
                                      "done.json"};
    char fd[400];
    for (int k = 0; k < FOLDS; ++k)
        for (int i = 0; i < 6; ++i) {
            snprintf(fd, sizeof fd, "%s/folds/fold_%03d", a, k + 1);
            CHECK(vpt_exists(fd, per_fold[i]), "fold %d: %s missing", k, per_fold[i]);
        }

    // interrupted: one fold, then a stop during the second (left without done.json), then resumed
    vp_wf_opts ob = {b, VP_RUN_CREATE, NULL, NULL, 1, 1, 0, 0};
    vp_wf_result rb;
    CHECK_OK(vp_walkforward_run(&cfg, be, &ob, &rb));
    CHECK(rb.interrupted && rb.n_done == 1 && rb.n_curve == TEST, "first call: %lld folds", (long long)rb.n_done);
    vp_wf_result_free(&rb);
    volatile sig_atomic_t stop = 1;
    ob.mode = VP_RUN_RESUME, ob.stop_after_folds = 0, ob.stop = &stop;
    CHECK_OK(vp_walkforward_run(&cfg, be, &ob, &rb));
    CHECK(rb.interrupted && rb.n_done == 1, "second call: %lld folds", (long long)rb.n_done);
    vp_wf_result_free(&rb);
    snprintf(fd, sizeof fd, "%s/folds/fold_002", b);
    CHECK(vpt_exists(fd, "metrics.jsonl") && !vpt_exists(fd, "done.json"), "fold 2 should be started and unfinished");
    ob.stop = NULL;
    CHECK_OK(vp_walkforward_run(&cfg, be, &ob, &rb));
    check_result(&rb, warm);
    for (int i = 2; i < 5; ++i) CHECK(vpt_same_file(a, b, top[i]), "%s differs after the resume", top[i]);
    // one "fold" event per finished fold, in both folders
    for (int i = 0; i < 2; ++i) {
        char mp[400];
        snprintf(mp, sizeof mp, "%s/metrics.jsonl", i ? b : a);
        char* text = vpt_slurp(mp, NULL);
        int n = 0;
        for (const char* q = text; q && (q = strstr(q, "{\"event\":\"fold\",\"fold\":")); ++q) ++n;
        CHECK(n == FOLDS, "%s: %d fold events", mp, n);
        free(text);
    }
    CHECK(vpt_same_file(a, b, "folds/fold_002/equity.csv") && vpt_same_file(a, b, "folds/fold_003/trades.csv"),
          "fold files differ after the resume");
    CHECK(memcmp(ra.equity, rb.equity, sizeof(double) * (size_t)ra.n_curve) == 0, "stitched curves differ");
    vp_wf_result_free(&rb);

    // a resume with other folds is refused; a new run over a non-empty folder too
    vp_config c2 = cfg;
    c2.walkforward.test_bars = TEST + 1;
    CHECK_STATUS(vp_walkforward_run(&c2, be, &ob, &rb), VP_ERR_INVALID_ARG, "plans other folds");
    vp_wf_result_free(&rb);
    oa.mode = VP_RUN_CREATE;
    CHECK(vp_walkforward_run(&cfg, be, &oa, &rb) != VP_OK, "a non-empty folder was reused without force");
    vp_wf_result_free(&rb);
    char plan_path[400];
    snprintf(plan_path, sizeof plan_path, "%s/walkforward.json", b);
    char* plan_text = vpt_slurp(plan_path, NULL);
    cJSON* plan = plan_text ? cJSON_Parse(plan_text) : NULL;
    free(plan_text);
    CHECK(plan_num(plan, "train_bars") == TRAIN && plan_num(plan, "test_bars") == TEST &&
              plan_num(plan, "embargo_bars") == EMBARGO && plan_num(plan, "max_folds") == FOLDS &&
              plan_num(plan, "step_bars") == TEST,
          "walkforward.json read back");
    cJSON_Delete(plan);

    // warm start: fold 2 starts from fold 1's selection
    vp_config c3 = cfg;
    c3.walkforward.warm_start = true, c3.walkforward.max_folds = 2;
    oa.mode = VP_RUN_FORCE;
    CHECK_OK(vp_walkforward_run(&c3, be, &oa, &rb));
    CHECK(rb.n_done == 2, "warm start: %lld folds", (long long)rb.n_done);
    snprintf(fd, sizeof fd, "%s/folds/fold_002/done.json", a);
    char* done = vpt_slurp(fd, NULL);
    CHECK(done && strstr(done, "\"warm_start\":\ttrue") && strstr(done, "\"fold\":\t2,"), "fold 2 not warm-started: %s",
          done ? done : "(none)");
    CHECK(!vpt_exists(a, "folds/fold_003") && !vpt_exists(a, "folds/fold_000"), "the forced run left an old fold folder");
    free(done);
    vp_wf_result_free(&rb);

    vp_wf_result_free(&ra);
    vp_backend_free(be);
    tdu_rmtree(root);
}

int main(void) {
    RUN_TEST(test_walkforward_and_resume);
    return vpt_finish();
}
