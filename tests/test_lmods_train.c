/* Adaptive atoms and PopArt in a training run on the CPU (docs/modules.md): 40 iterations
 * straight against 23 + a stop + a resume give byte-identical checkpoints and the same logged
 * lines; the resume checkpoint holds PopArt's state (moved off its start) and the spacing
 * logits (trained off zero); `vulpes backtest` and `vulpes act` run the checkpoint on the CPU
 * with the same scores, and those scores are the Q-values on the learned support. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>

#include "model/atoms_math.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/api.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"

static const char* const MODS[] = {"learn.adaptive_atoms=true", "learn.popart=true"};

enum { NB = 4, Z = 11 };

/* PopArt's state in a resume checkpoint into st [3]. */
static void read_popart(const char* path, float* st) {
    vp_backend* be = NULL;
    vp_checkpoint* ck = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    CHECK_OK(vp_checkpoint_open(&ck, path));
    if (!ck) return;
    CHECK(vp_checkpoint_has(ck, "learner.popart"), "%s has learner.popart", path);
    vp_ckpt_item it = {"learner.popart", vp_tensor_1d(st, VP_F32, VP_MEM_HOST, 3)};
    CHECK_OK(vp_checkpoint_read(be, ck, &it));
    vp_checkpoint_close(ck);
    vp_backend_free(be);
}

static void test_resume_and_backtest(void) {
    char d1[512], d2[512], ck[700], last[700], out[700], got[700];
    vpt_tmp_dir(d1, sizeof d1, "lmods-straight");
    vpt_tmp_dir(d2, sizeof d2, "lmods-resumed");
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, 2, MODS, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 23, NULL, 2, MODS, &r2));
    CHECK(r2.interrupted == 1 && r2.count.iteration == 23, "stopped at %lld", (long long)r2.count.iteration);
    CHECK_OK(vpt_train_run(d2, VP_RUN_RESUME, 0, NULL, 2, MODS, &r3));
    CHECK(r3.count.iteration == 40 && r3.count.learner_steps == r1.count.learner_steps && r1.count.learner_steps > 0,
          "resumed to %lld iterations, %lld learner steps (straight: %lld)", (long long)r3.count.iteration,
          (long long)r3.count.learner_steps, (long long)r1.count.learner_steps);
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "train/eval lines differ after the resume:\n%s\n---\n%s", a ? a : "", b ? b : "");
    free(a), free(b);
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d2, "best.safetensors"),
          "checkpoints differ between the straight and resumed run");
    // PopArt's state moved off (mu 0, nu 1, sigma 1), and is consistent
    snprintf(last, sizeof last, "%s/last.safetensors", d1);
    float st[3] = {0, 0, 0};
    read_popart(last, st);
    CHECK(st[0] != 0.0f && st[1] != 1.0f && st[2] > 0.0f, "PopArt state mu %g nu %g sigma %g", st[0], st[1], st[2]);
    CHECK_NEAR(st[2] * st[2], fmax(st[1] - st[0] * st[0], 1e-8), 1e-6, 1e-4);
    // the spacing logits, through the API (what vulpes.load reads)
    vp_api_model* m = NULL;
    CHECK_OK(vp_api_model_open(last, &m));
    double ad = 0;
    CHECK_OK(vp_api_model_cfg(m, "adaptive_atoms", &ad));
    CHECK(ad == 1.0, "the checkpoint's network: adaptive_atoms %g", ad);
    float s[NB * (Z - 1)];
    CHECK_OK(vp_api_model_param(m, "c51.atoms", s, NB * (Z - 1)));
    int nz = 0;
    for (int i = 0; i < NB * (Z - 1); ++i) nz += s[i] != 0.0f && isfinite(s[i]);
    CHECK(nz == NB * (Z - 1), "c51.atoms trained: %d of %d entries moved", nz, NB * (Z - 1));
    vp_api_model_close(m);
    // backtest and act on the CPU: the same scores
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    snprintf(ck, sizeof ck, "%s/best.safetensors", d1);
    snprintf(out, sizeof out, "%s-bt", d1);
    vp_backtest_job job = {ck, NULL, NULL, NULL, out, 1, 1, 1, "test", NULL, 0, NULL};
    vp_rollout_result bt, act;
    memset(&bt, 0, sizeof bt);
    memset(&act, 0, sizeof act);
    CHECK_OK(vp_backtest_job_run(be, &job, &bt, got, sizeof got));
    CHECK(bt.n_points > 10 && bt.n_heads == 13 && bt.next_q, "backtest: %lld points, %d heads", (long long)bt.n_points,
          bt.n_heads);
    vp_backtest_last_bar lb;
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    job.span_info = &si;
    CHECK_OK(vp_backtest_job_rollout(be, &job, &act, &lb));
    CHECK(act.n_points == bt.n_points && act.next_q && bt.next_q && memcmp(act.next_q, bt.next_q, sizeof(float) * 13) == 0,
          "act's scores differ from the backtest's");
    // the scores lie inside [v_min, v_max] of each branch's learned support (they are expectations on it)
    for (int h = 0; bt.next_q && h < 13; ++h)
        CHECK(isfinite(bt.next_q[h]) && bt.next_q[h] >= -10.0f && bt.next_q[h] <= 10.0f, "score %d = %g", h,
              bt.next_q[h]);
    vp_rollout_result_free(&bt);
    vp_rollout_result_free(&act);
    vp_backend_free(be);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(out);
}

int main(void) {
    RUN_TEST(test_resume_and_backtest);
    return vpt_finish();
}
