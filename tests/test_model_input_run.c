/* The input modules in a training run on the CPU: with variable selection, the spectral norm
 * and the KAN on (and, separately, the first two without the KAN, so trunk.w1's spectral norm
 * runs too), 40 iterations straight against 23 + a stop + a resume give the same train and eval
 * lines and byte-identical checkpoints; the "train" lines carry the mean selection weight of
 * every feature (summing to 1); the checkpoint holds the modules' tensors; `vulpes backtest`'s
 * job reads it back and runs on the CPU, its report.html shows the feature importance, and
 * `vulpes act`'s rollout and decision run on it. */
#include <cjson/cJSON.h>
#include <math.h>

#include "test_train_util.h"
#include "vp_test.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"

/* The sum of the "vsn.*" values of the last train line of metrics text m (NaN when none). */
static double last_vsn_sum(const char* m, int* n_keys) {
    const char* line = NULL;
    for (const char* p = strstr(m, "\"event\":\"train\""); p; p = strstr(p + 1, "\"event\":\"train\"")) line = p;
    *n_keys = 0;
    if (!line) return NAN;
    const char* end = strchr(line, '\n');
    double s = 0;
    for (const char* p = strstr(line, "\"vsn."); p && (!end || p < end); p = strstr(p + 1, "\"vsn.")) {
        const char* colon = strchr(p, ':');
        if (!colon) break;
        s += strtod(colon + 1, NULL);
        (*n_keys)++;
    }
    return s;
}

static void run_modules(const char* tag, int n_over, const char* const* over, const char* const* tensors, int n_t) {
    char d1[512], d2[512], ck[600], out[600], got[600];
    vpt_tmp_dir(d1, sizeof d1, tag);
    char tag2[64];
    snprintf(tag2, sizeof tag2, "%s_resumed", tag);
    vpt_tmp_dir(d2, sizeof d2, tag2);
    vpt_rm_run(d1), vpt_rm_run(d2);
    vp_train_result r1, r2, r3;
    CHECK_OK(vpt_train_run(d1, VP_RUN_CREATE, 0, NULL, n_over, over, &r1));
    CHECK_OK(vpt_train_run(d2, VP_RUN_CREATE, 23, NULL, n_over, over, &r2));
    CHECK(r2.interrupted == 1 && r2.count.iteration == 23, "%s: stopped at %lld", tag, (long long)r2.count.iteration);
    CHECK_OK(vpt_train_run(d2, VP_RUN_RESUME, 0, NULL, n_over, over, &r3));
    CHECK(r3.count.iteration == 40 && r3.count.learner_steps == r1.count.learner_steps, "%s: resumed to %lld", tag,
          (long long)r3.count.iteration);
    char* a = vpt_metrics_lines(d1, "train|eval");
    char* b = vpt_metrics_lines(d2, "train|eval");
    CHECK(a && b && strcmp(a, b) == 0, "%s: train/eval lines differ after the resume:\n%s\n---\n%s", tag, a ? a : "",
          b ? b : "");
    CHECK(vpt_same_file(d1, d2, "last.safetensors") && vpt_same_file(d1, d2, "best.safetensors"),
          "%s: checkpoints differ between the straight and the resumed run", tag);
    // the selection weights of the last train line: one per feature, summing to 1
    if (a && strstr(over[0], "vsn")) {
        int n = 0;
        const double s = last_vsn_sum(a, &n);
        CHECK(n == VP_FEATURES_DEFAULT && fabs(s - 1.0) < 1e-4 && strstr(a, "\"vsn.ret_1\":"),
              "%s: %d vsn keys summing to %.6f in the last train line", tag, n, s);
    }
    free(a), free(b);
    // the modules' tensors are in the checkpoint
    snprintf(ck, sizeof ck, "%s/best.safetensors", d1);
    vp_checkpoint* c = NULL;
    CHECK_OK(vp_checkpoint_open(&c, ck));
    for (int i = 0; c && i < n_t; ++i) CHECK(vp_checkpoint_has(c, tensors[i]), "%s: checkpoint lacks %s", tag, tensors[i]);
    vp_checkpoint_close(c);
    // the backtest job reads it back on the CPU
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    snprintf(out, sizeof out, "%s/backtest", d1);
    vp_backtest_job job = {ck, NULL, NULL, NULL, out, 1, 1, 0, "test", NULL, 0, NULL};
    vp_rollout_result res;
    memset(&res, 0, sizeof res);
    CHECK_OK(vp_backtest_job_run(be, &job, &res, got, sizeof got));
    CHECK(res.n_points > 1 && res.n_decisions > 0, "%s: the backtest has %lld points, %lld decisions", tag,
          (long long)res.n_points, (long long)res.n_decisions);
    vp_rollout_result_free(&res);
    // `vulpes act`'s path: the rollout over every bar, then the decision for the bar after the last
    vp_backtest_span_info si;
    memset(&si, 0, sizeof si);
    vp_backtest_job act = {ck, NULL, NULL, NULL, NULL, 1, 1, 1, "all", &si, 0, NULL};
    vp_backtest_last_bar last;
    memset(&res, 0, sizeof res);
    CHECK_OK(vp_backtest_job_rollout(be, &act, &res, &last));
    cJSON* obj = NULL;
    CHECK_OK(vp_act_json(&res, &last, ck, si.checks.data, &si.checks, &obj));
    const cJSON* dir = obj ? cJSON_GetObjectItemCaseSensitive(obj, "direction") : NULL;
    CHECK(cJSON_IsString(dir), "%s: the act decision has no direction", tag);
    cJSON_Delete(obj);
    vp_rollout_result_free(&res);
    vp_backend_free(be);
    // report.html shows the selection weights as feature importance (the run's metrics.jsonl)
    char* html = vpt_read_file(got, "report.html", NULL);
    CHECK(html && strstr(html, "<h2>Feature importance</h2>") && strstr(html, "data-feature=\"ret_1\"") &&
              strstr(html, "data-feature=\"dow_cos\""),
          "%s: report.html has no feature-importance panel", tag);
    free(html);
    vpt_rm_run(d1), vpt_rm_run(d2);
}

static void test_all_modules(void) {
    const char* over[3] = {"model.vsn=true", "model.spectral_norm=true", "model.kan=true"};
    const char* tensors[4] = {"vsn.w2", "trunk.w2.sn_u", "kan.spline_w", "kan.spline_scaler"};
    run_modules("modules_all", 3, over, tensors, 4);
}

static void test_vsn_and_spectral_norm(void) {
    const char* over[3] = {"model.vsn=true", "model.spectral_norm=true", "model.vsn_hidden=5"};
    const char* tensors[3] = {"vsn.w1", "trunk.w1.sn_u", "trunk.w1.sn_v"};
    run_modules("modules_vsn_sn", 3, over, tensors, 3);
}

int main(void) {
    RUN_TEST(test_all_modules);
    RUN_TEST(test_vsn_and_spectral_norm);
    return vpt_finish();
}
