/* The `vulpes backtest` job: the config and parameters from a checkpoint, the bars, the
 * span from --from / --to, features and ATR computed the way training computes them over
 * the bars before the span's end only, the algorithm's policy (an inference instance of its
 * train.algo), the backtest, and the output folder. Also the end of a training run: the test
 * span's exact backtest written as files (vp_backtest_train_finish). */
#include <cjson/cJSON.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "vulpes/algo.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"
#include "vulpes/features.h"
#include "vulpes/run.h"

vp_status vp_backtest_bar_of(const vp_bars* bars, const char* text, int64_t* index) {
    VP_REQUIRE(bars != NULL && text != NULL && index != NULL && text[0] != '\0', VP_ERR_INVALID_ARG,
               "vp_backtest_bar_of: NULL or empty argument");
    // a bar index: digits only, below 10^8 (Unix seconds start there)
    size_t n = strlen(text), digits = 0;
    while (digits < n && isdigit((unsigned char)text[digits])) ++digits;
    if (digits == n && n <= 8) {
        *index = strtoll(text, NULL, 10);
        VP_REQUIRE(*index <= bars->n, VP_ERR_INVALID_ARG, "bar %s is beyond the %lld bars of the data", text,
                   (long long)bars->n);
        return VP_OK;
    }
    // a time: the first bar at or after it
    int64_t ms = 0;
    VP_REQUIRE(vp_time_parse(text, n, &ms, NULL), VP_ERR_INVALID_ARG,
               "'%s' is neither a bar index nor a time (2017-06-01, 2017-06-01T12:00, Unix seconds)", text);
    int64_t lo = 0, hi = bars->n;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        if (bars->time_ms[mid] < ms) lo = mid + 1;
        else hi = mid;
    }
    *index = lo;
    return VP_OK;
}

/* Everything a job holds, freed by job_free. */
typedef struct job_state {
    vp_config cfg;
    vp_bars all;          /* every bar of the data */
    vp_train_data td;     /* bars [0, b) with features, ATR */
    vp_algo algo;         /* the policy: an inference instance of the checkpoint's algorithm */
    vp_span span;
} job_state;

static void job_free(job_state* j) {
    vp_algo_free(&j->algo);
    vp_train_data_free(&j->td);
    vp_bars_free(&j->all);
}

/* The config of the training run, from the checkpoint's metadata. */
static vp_status load_config(job_state* j, const char* path) {
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* yaml = vp_checkpoint_meta(ck, "config");
    vp_status s = yaml ? VP_OK
                       : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s has no config in its metadata", path);
    vp_config_defaults(&j->cfg);
    if (s == VP_OK) s = vp_config_load_string(&j->cfg, yaml, "the checkpoint's config");
    vp_checkpoint_close(ck);
    VP_TRY(s);
    return vp_config_check(&j->cfg);
}

/* All bars of the data: a CSV file, or a synthetic market generated as training does. */
static vp_status load_bars(job_state* j, const char* data) {
    if (strncmp(data, "synth:", 6) != 0) {
        vp_load_opts lo = vp_load_opts_default();
        lo.skip_bad_rows = j->cfg.data.skip_bad_rows ? 1 : 0;
        return vp_bars_load_csv(data, &lo, &j->all, NULL);
    }
    vp_config c = j->cfg;
    snprintf(c.data.path, sizeof c.data.path, "%s", data);
    vp_train_data d;
    VP_TRY(vp_train_data_load(&d, &c));
    j->all = d.bars;
    memset(&d.bars, 0, sizeof d.bars);
    vp_train_data_free(&d);
    return VP_OK;
}

/* The span from --from / --to (defaults: after the warm-up, to the end). */
static vp_status resolve_span(job_state* j, const vp_backtest_job* job) {
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = (int)j->cfg.features.window;
    int64_t warm = vp_features_warmup(&fc);
    if (warm < j->cfg.model.window) warm = j->cfg.model.window;
    j->span.begin = warm < j->all.n ? warm : 0;
    j->span.end = j->all.n;
    if (job->from) VP_TRY(vp_backtest_bar_of(&j->all, job->from, &j->span.begin));
    if (job->to) VP_TRY(vp_backtest_bar_of(&j->all, job->to, &j->span.end));
    VP_REQUIRE(j->span.end - j->span.begin >= 2, VP_ERR_INVALID_ARG,
               "the span [%lld, %lld) of the %lld bars holds fewer than 2 bars", (long long)j->span.begin,
               (long long)j->span.end, (long long)j->all.n);
    if (j->span.begin < warm)
        vp_log(VP_LOG_WARN, "backtest: the span starts at bar %lld, before the %lld bars of feature warm-up: its "
               "first features see less history than training's", (long long)j->span.begin, (long long)warm);
    return VP_OK;
}

/* Features and ATR of bars [0, b) only, by training's own code. */
static vp_status prepare_data(job_state* j) {
    const int64_t e = j->span.end;
    vp_bars head;
    VP_TRY(vp_bars_alloc(&head, e));
    memcpy(head.time_ms, j->all.time_ms, sizeof(int64_t) * (size_t)e);
    memcpy(head.open, j->all.open, sizeof(double) * (size_t)e);
    memcpy(head.high, j->all.high, sizeof(double) * (size_t)e);
    memcpy(head.low, j->all.low, sizeof(double) * (size_t)e);
    memcpy(head.close, j->all.close, sizeof(double) * (size_t)e);
    memcpy(head.volume, j->all.volume, sizeof(double) * (size_t)e);
    vp_status s = vp_train_data_from_bars(&j->td, &j->cfg, &head);
    vp_bars_free(&head);
    if (s != VP_OK) return vp_error_context(s, "features of bars [0, %lld)", (long long)e);
    return VP_OK;
}

/* The algorithm's policy with the checkpoint's parameters (features on the backend). */
static vp_status load_policy(job_state* j, vp_backend* b, const char* path) {
    VP_TRY(vp_algo_create(&j->algo, &j->cfg, b, &j->td, VP_ALGO_INFER));
    return vp_algo_load_params(&j->algo, path, VP_PARAMS_ONLINE);
}

/* Claims the output folder (--out, else runs/YYYYmmdd-HHMMSS-backtest) into *run: made,
 * locked and checked before the backtest runs, so a refused folder costs nothing. */
static vp_status claim_out(const vp_backtest_job* job, vp_run* run, char* dir, size_t cap) {
    if (job->out) snprintf(dir, cap, "%s", job->out);
    else VP_TRY(vp_run_dir_default(dir, cap, "runs", "backtest", time(NULL)));
    return vp_run_claim(run, dir, job->force ? VP_RUN_FORCE : VP_RUN_CREATE);
}

/* The claimed folder's config.yaml and a "backtest" event in metrics.jsonl. */
static vp_status open_out(job_state* j, const vp_backtest_job* job, const vp_rollout_result* r, vp_run* run) {
    VP_TRY(vp_run_begin(run, &j->cfg));
    vp_metrics_log* m = &run->metrics;
    vp_status s = vp_metrics_log_begin(m, "backtest");
    if (s == VP_OK) s = vp_metrics_log_str(m, "checkpoint", job->checkpoint);
    if (s == VP_OK) s = vp_metrics_log_int(m, "first_bar", r->span.begin);
    if (s == VP_OK) s = vp_metrics_log_int(m, "end_bar", r->span.end);
    if (s == VP_OK) s = vp_metrics_log_int(m, "n_windows", r->n_windows);
    if (s == VP_OK) s = vp_metrics_log_num(m, "sharpe_ratio", r->summary.strategy.sharpe);
    if (s == VP_OK) s = vp_metrics_log_num(m, "total_return_frac", r->summary.strategy.total_return);
    if (s == VP_OK) s = vp_metrics_log_num(m, "encode_s", r->encode_s);
    if (s == VP_OK) s = vp_metrics_log_num(m, "sequential_s", r->sequential_s);
    if (s == VP_OK) s = vp_metrics_log_end(m);
    return s;
}

vp_status vp_backtest_job_run(vp_backend* b, const vp_backtest_job* job, vp_rollout_result* out, char* out_dir,
                              size_t cap) {
    VP_REQUIRE(b != NULL && job != NULL && job->checkpoint != NULL && out != NULL && out_dir != NULL && cap > 0,
               VP_ERR_INVALID_ARG, "vp_backtest_job_run: NULL argument");
    memset(out, 0, sizeof *out);
    out_dir[0] = '\0';
    job_state j;
    memset(&j, 0, sizeof j);
    // checkpoint, bars, span, features of the bars before the span's end, policy
    vp_run run;
    memset(&run, 0, sizeof run);
    vp_status s = load_config(&j, job->checkpoint);
    const char* data = job->data ? job->data : j.cfg.data.path;
    if (s == VP_OK) s = load_bars(&j, data);
    if (s == VP_OK) s = resolve_span(&j, job);
    if (s == VP_OK) s = prepare_data(&j);
    if (s == VP_OK) s = load_policy(&j, b, job->checkpoint);

    // the backtest, annualised over the bars it may read
    vp_rollout_cfg c = vp_rollout_cfg_default();
    vp_policy pol;
    if (s == VP_OK) {
        c.instrument = j.algo.instrument;
        c.episode_bars = j.algo.env.episode_bars;
        c.n_windows = job->n_windows > 0 ? job->n_windows : 1;
        c.fused = job->fused;
        s = vp_annual_measure(j.td.bars.time_ms, j.td.bars.n, &c.annual);
    }
    if (s == VP_OK) s = vp_algo_policy(&j.algo, VP_PARAMS_ONLINE, &pol);
    // the output folder claimed (made, locked, checked) once the inputs are known to be good
    if (s == VP_OK) s = claim_out(job, &run, out_dir, cap);
    if (s == VP_OK) {
        vp_rollout_data d = {&j.td.bars, j.td.atr, j.algo.features, j.span};
        s = vp_rollout_run(b, &pol, &d, &c, out);
    }

    // the folder and its files
    char* yaml = NULL;
    if (s == VP_OK) s = open_out(&j, job, out, &run);
    if (s == VP_OK) s = vp_config_to_yaml(&j.cfg, &yaml);
    if (s == VP_OK) {
        vp_backtest_info info = {"backtest", job->checkpoint, data, yaml, &j.td.bars};
        s = vp_backtest_write(out, &info, out_dir);
    }
    free(yaml);
    vp_run_close(&run);
    job_free(&j);
    return s;
}

/* ---- the end of a training run: the test span's files ---------------------------------------- */

vp_status vp_backtest_train_finish(void* ctx, const vp_train_end* end, cJSON* test) {
    VP_REQUIRE(end != NULL && end->algo != NULL && end->test != NULL && end->run_dir != NULL && test != NULL,
               VP_ERR_INVALID_ARG, "vp_backtest_train_finish: NULL argument");
    const vp_train_data* td = end->algo->data;
    const vp_rollout_result* r = end->test;
    // the files beside the run's own, and the description in the summary's "test" object
    char* yaml = NULL;
    vp_status s = vp_config_to_yaml(&end->algo->cfg, &yaml);
    vp_backtest_info info = {"training run: test span", end->checkpoint, td->source, yaml, &td->bars};
    if (s == VP_OK) s = vp_backtest_write_files(r, &info, end->run_dir);
    if (s == VP_OK) s = vp_backtest_summary_add(r, &info, test);
    if (s == VP_OK && ctx) *(vp_metrics_summary*)ctx = r->summary;
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "the files of the test span [%lld, %lld)", (long long)r->span.begin,
                                            (long long)r->span.end);
    return VP_OK;
}
