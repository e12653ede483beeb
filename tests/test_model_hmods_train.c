/* The head modules in a training run on the CPU (stochastic depth 0.3, the Q-denoise
 * refinement, the cross-branch messages and the risk-budget head on): 40 iterations straight against 23 + a stop + a resume give byte-identical
 * checkpoints and the same logged lines (the drop masks follow the step counter); the
 * checkpoint holds the refinement's tensors, trained away from their zero start, and reads
 * back through the library's API; `vulpes backtest` and `vulpes act` run it on the CPU, their
 * scores equal, and the backtest's positions are the risk-budget scaled sizes: never above the
 * size's contracts, some below them; act's decision carries the head's scale and the contracts
 * scaled by it. */
#include <cjson/cJSON.h>
#include <math.h>

#include "env/env_rules.h"
#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/api.h"
#include "vulpes/backtest.h"

static const char* const MODS[] = {"model.stoch_depth=0.3", "model.q_denoise=true", "model.cross_branch=true",
                                   "model.risk_budget=0.2"};

static void test_resume_and_backtest(void) {
    char d1[512], d2[512], ck[700], out[700], got[700];
    vpt_tmp_dir(d1, sizeof d1, "hmods-straight");
    vpt_tmp_dir(d2, sizeof d2, "hmods-resumed");
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, 4, MODS, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 23, NULL, 4, MODS, &r2));
    CHECK(r2.interrupted == 1 && r2.count.iteration == 23, "stopped at %lld", (long long)r2.count.iteration);
    CHECK_OK(vpt_train_run(d2, VP_RUN_RESUME, 0, NULL, 4, MODS, &r3));
    CHECK(r3.count.iteration == 40 && r3.count.learner_steps == r1.count.learner_steps && r1.count.learner_steps > 0,
          "resumed to %lld iterations, %lld learner steps (straight: %lld)", (long long)r3.count.iteration,
          (long long)r3.count.learner_steps, (long long)r1.count.learner_steps);
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "train/eval lines differ after the resume:\n%s\n---\n%s", a ? a : "", b ? b : "");
    free(a), free(b);
    CHECK(vpt_same_file(d1, d2, "last.safetensors"), "last.safetensors differ between the straight and resumed run");
    CHECK(r1.test.strategy.sharpe == r3.test.strategy.sharpe || (isnan(r1.test.strategy.sharpe) &&
                                                                 isnan(r3.test.strategy.sharpe)),
          "test Sharpe %g vs %g", r1.test.strategy.sharpe, r3.test.strategy.sharpe);
    // the checkpoint's refinement, through the API (what vulpes.load reads)
    snprintf(ck, sizeof ck, "%s/last.safetensors", d1);
    vp_api_model* m = NULL;
    CHECK_OK(vp_api_model_open(ck, &m));
    double qd = 0, sd = 0, xb = 0;
    CHECK_OK(vp_api_model_cfg(m, "q_denoise", &qd));
    CHECK_OK(vp_api_model_cfg(m, "stoch_depth", &sd));
    CHECK_OK(vp_api_model_cfg(m, "cross_branch", &xb));
    CHECK(qd == 1.0 && sd == (double)0.3f && xb == 1.0, "the checkpoint's network: q_denoise %g, stoch_depth %g, "
          "cross_branch %g", qd, sd, xb);
    int64_t shape[2];
    int ndim = 0;
    CHECK_OK(vp_api_model_param_shape(m, "xbranch.msg.w", shape, &ndim));
    CHECK(ndim == 2 && shape[0] == 4 * 4 * 16 && shape[1] == 16, "xbranch.msg.w [%lld, %lld]", (long long)shape[0],
          (long long)shape[1]);
    float w2[13 * 26];
    CHECK_OK(vp_api_model_param(m, "qdenoise.w2", w2, 13 * 26));
    int nz = 0;
    for (int i = 0; i < 13 * 26; ++i) nz += w2[i] != 0.0f && isfinite(w2[i]);
    CHECK(nz > 13 * 26 / 2, "qdenoise.w2 trained: %d of %d entries left zero", 13 * 26 - nz, 13 * 26);
    vp_api_model_close(m);
    // backtest and act on the CPU
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    snprintf(out, sizeof out, "%s-bt", d1);
    vp_backtest_job job = {ck, NULL, NULL, NULL, out, 1, 1, 1, "test", NULL, 0, NULL};
    vp_rollout_result bt, act;
    memset(&bt, 0, sizeof bt);
    memset(&act, 0, sizeof act);
    CHECK_OK(vp_backtest_job_run(be, &job, &bt, got, sizeof got));
    CHECK(bt.n_points > 10 && bt.n_heads == 13 && bt.next_q, "backtest: %lld points, %d heads", (long long)bt.n_points,
          bt.n_heads);
    // positions after each decision: at most the chosen size's contracts, scaled below them somewhere
    int smaller = 0, larger = 0;
    for (int64_t o = 0; o + 1 < bt.n_points; ++o) {
        const int32_t* ch = bt.action + o * 4;
        if (ch[0] < 0 || ch[0] == 1) continue;
        const int32_t full = vp_env_contracts(ch[1], 3), held = abs(bt.position[o + 1]);
        smaller += held > 0 && held < full;
        larger += held > full;
    }
    fprintf(stderr, "  %d positions below their size's contracts, %d above\n", smaller, larger);
    CHECK(larger == 0 && smaller > 0, "positions above the size's contracts: %d, below: %d", larger, smaller);
    vp_backtest_last_bar last;
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    job.span_info = &si;
    CHECK_OK(vp_backtest_job_rollout(be, &job, &act, &last));
    CHECK(act.n_points == bt.n_points && act.next_q && memcmp(act.next_q, bt.next_q, sizeof(float) * 13) == 0,
          "act's scores differ from the backtest's");
    // act's decision: the head's scale beside the choice, the contracts scaled by it
    CHECK(act.next_scale && bt.next_scale && act.next_scale[0] == bt.next_scale[0] && act.next_scale[0] > 0.0f &&
              act.next_scale[0] < 1.0f,
          "the next decision's size scale %g", act.next_scale ? (double)act.next_scale[0] : -1.0);
    cJSON* js = NULL;
    CHECK_OK(vp_act_json(&act, &last, ck, si.checks.data, &si.checks, &js));
    if (js && act.next_scale) {
        const int32_t* d = act.action + (act.n_points - 1) * 4;
        const cJSON* sc = cJSON_GetObjectItemCaseSensitive(js, "size_scale");
        const cJSON* ct = cJSON_GetObjectItemCaseSensitive(js, "contracts");
        const double want = d[0] == 1 ? 0.0 : (double)vp_env_scaled_contracts(d[1], 3, act.next_scale[0]);
        CHECK(cJSON_IsNumber(sc) && (float)sc->valuedouble == act.next_scale[0] && cJSON_IsNumber(ct) &&
                  ct->valuedouble == want,
              "act JSON: size_scale %g, contracts %g (want %g)", cJSON_IsNumber(sc) ? sc->valuedouble : -1.0,
              cJSON_IsNumber(ct) ? ct->valuedouble : -1.0, want);
    }
    cJSON_Delete(js);
    vp_rollout_result_free(&bt);
    vp_rollout_result_free(&act);
    vp_backend_free(be);
    vpt_rm_run(d1), vpt_rm_run(d2), vpt_rm_run(out);
}

int main(void) {
    RUN_TEST(test_resume_and_backtest);
    return vpt_finish();
}
