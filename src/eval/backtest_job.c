/* The `vulpes backtest` job: the config, the record of the training data and the parameters
 * from a checkpoint, the bars (--data, else the recorded training data), the span
 * (backtest_span.c) and the data checks against the record (backtest_checks.c), features and
 * ATR computed the way training computes them over the bars before the span's end only, the
 * algorithm's policy (an inference instance of its train.algo), the backtest, and the output
 * folder (or only the rollout, for `vulpes act`: vp_backtest_job_rollout). Also the end of a
 * training run: the test span's exact backtest written as files (vp_backtest_train_finish). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "eval/backtest_checks.h"
#include "eval/backtest_impl.h"
#include "eval/backtest_span.h"
#include "vulpes/algo.h"
#include "vulpes/backtest.h"
#include "vulpes/checkpoint.h"
#include "vulpes/features.h"
#include "vulpes/run.h"

/* Everything a job holds, freed by job_free. */
typedef struct job_state {
    vp_config cfg;
    vp_data_record rec;   /* the checkpoint's record of its training data (when has_rec) */
    int has_rec;          /* 1: the checkpoint has one */
    vp_bt_seen seen;      /* what this backtest reads, measured as the record is */
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

int vp_backtest_key_overridable(const char* name) {
    return name && (strncmp(name, "instrument.", 11) == 0 || strcmp(name, "data.price_side") == 0 ||
                    strcmp(name, "metrics.risk_free_rate") == 0 || strcmp(name, "her.eval_goal") == 0);
}

vp_status vp_backtest_checkpoint_config(const char* path, char* const* overrides, int n_overrides, const char* who,
                                        vp_config* cfg, vp_data_record* rec, int* has_rec) {
    vp_checkpoint* ck = NULL;
    VP_TRY(vp_checkpoint_open(&ck, path));
    const char* yaml = vp_checkpoint_meta(ck, "config");
    vp_status s = yaml ? VP_OK
                       : vp_set_error(VP_ERR_PARSE, VP_WHERE, "checkpoint %s has no config in its metadata", path);
    vp_config_defaults(cfg);
    if (s == VP_OK) s = vp_config_load_string(cfg, yaml, "the checkpoint's config");
    if (s == VP_OK) s = vp_checkpoint_data(ck, rec, has_rec);
    vp_checkpoint_close(ck);
    VP_TRY(s);
    for (int i = 0; i < n_overrides; ++i) {
        const char* a = overrides ? overrides[i] : NULL;
        // the key: the text before '='
        const char* eq = a ? strchr(a, '=') : NULL;
        char key[128] = "";
        if (eq && (size_t)(eq - a) < sizeof key) {
            memcpy(key, a, (size_t)(eq - a));
            key[eq - a] = '\0';
        }
        VP_REQUIRE(eq != NULL && vp_backtest_key_overridable(key), VP_ERR_INVALID_ARG,
                   "'%s': %s may change only instrument.* keys, data.price_side, metrics.risk_free_rate and "
                   "her.eval_goal (costs, contract, measurement and a goal-conditioned network's goal; vulpes backtest "
                   "--help lists them); the network keeps the rest of its training config", a ? a : "(null)", who);
        VP_TRY(vp_config_override(cfg, a));
    }
    return vp_config_check(cfg);
}

/* The bars to read into c->data: --data, else the training data the checkpoint recorded (a
 * file that cannot be read is refused, asking for --data), else (an older checkpoint) its
 * config's data.path. */
static vp_status pick_data(const job_state* j, const vp_backtest_job* job, vp_backtest_checks* c) {
    c->from_record = !job->data && j->has_rec && j->rec.kind != VP_DATA_GIVEN;
    const char* p = job->data ? job->data : c->from_record ? j->rec.source : j->cfg.data.path;
    VP_REQUIRE(strlen(p) < sizeof c->data, VP_ERR_INVALID_ARG, "--data '%.200s...' is longer than %zu bytes", p,
               sizeof c->data - 1);
    memcpy(c->data, p, strlen(p) + 1);
    if (c->from_record && j->rec.kind == VP_DATA_FILE && access(p, R_OK) != 0)
        VP_FAIL(VP_ERR_IO, "the checkpoint's training data %s cannot be read (%s): give --data FILE with the bars to "
                "backtest", p, strerror(errno));
    return VP_OK;
}

/* All bars of the data (a CSV file, or a synthetic market generated as training does) and
 * what the record would say of them; the recorded training data must be unchanged. */
static vp_status load_bars(job_state* j, const vp_backtest_checks* c) {
    const char* data = c->data;
    vp_status s = VP_OK;
    if (strncmp(data, "synth:", 6) != 0) {
        vp_load_opts lo = vp_load_opts_default();
        lo.skip_bad_rows = j->cfg.data.skip_bad_rows ? 1 : 0;
        vp_load_report rep;
        VP_TRY(vp_bars_load_csv(data, &lo, &j->all, &rep));
        s = vp_data_record_identify(data, rep.source_bytes, rep.source_hash, &j->seen.data);
    } else {
        vp_config cd = j->cfg;
        snprintf(cd.data.path, sizeof cd.data.path, "%s", data);
        vp_train_data d;
        VP_TRY(vp_train_data_load(&d, &cd));
        j->all = d.bars;
        memset(&d.bars, 0, sizeof d.bars);
        vp_train_data_free(&d);
        s = vp_data_record_identify(data, -1, 0, &j->seen.data);
    }
    if (s == VP_OK) s = vp_data_record_measure(&j->all, &j->seen.data);
    VP_TRY(s);
    const vp_data_record* now = &j->seen.data;
    VP_REQUIRE(!c->from_record || vp_data_record_same(&j->rec, now), VP_ERR_INVALID_ARG,
               "the checkpoint's training data %s has changed since training (now %lld bytes, xxh64:%016llx; then "
               "%lld bytes, xxh64:%016llx): give --data FILE to backtest on these bars as they are now", data,
               (long long)now->bytes, (unsigned long long)now->hash, (long long)j->rec.bytes,
               (unsigned long long)j->rec.hash);
    return VP_OK;
}

/* The checks of the bars against the record: the span's scale and first close measured, then
 * the notes; prices at another scale refuse the job unless it is forced. */
static vp_status check_data(job_state* j, const vp_backtest_job* job, vp_backtest_span_info* si) {
    vp_bt_seen* v = &j->seen;
    v->span = j->span;
    v->first_close = j->all.close[j->span.begin];
    VP_TRY(vp_bars_median_close(&j->all, j->span, &v->span_median_close));
    VP_TRY(vp_bt_check_data(j->has_rec ? &j->rec : NULL, v, &j->cfg, job->force, &si->checks));
    vp_bt_check_span(si, &si->checks);
    return VP_OK;
}

/* Features and ATR of bars [0, b) only, by training's own preparation (no training split: a
 * backtest needs none). */
static vp_status prepare_data(job_state* j) {
    const int64_t e = j->span.end;
    vp_bars head;
    VP_TRY(vp_bars_copy(&j->all, 0, e, &head));
    vp_status s = vp_train_data_prepare(&j->td, &j->cfg, &head);
    vp_bars_free(&head); /* taken over on success (zeroed), still ours on failure */
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
    if (s == VP_OK) s = vp_metrics_log_str(m, "status", r->ruin.ruined ? "ruined" : "ok");
    if (s == VP_OK) s = vp_metrics_log_num(m, "sharpe_ratio", r->summary.strategy.sharpe);
    if (s == VP_OK) s = vp_metrics_log_num(m, "total_return_frac", r->summary.strategy.total_return);
    if (s == VP_OK) s = vp_metrics_log_num(m, "encode_s", r->encode_s);
    if (s == VP_OK) s = vp_metrics_log_num(m, "sequential_s", r->sequential_s);
    if (s == VP_OK) s = vp_metrics_log_end(m);
    return s;
}

/* A job up to its rollout: the checkpoint's config with the overrides, the bars, the span and
 * the data checks (into *si), the features of the bars before the span's end, the policy
 * (*pol) and the rollout's settings (*c). */
static vp_status job_prepare(vp_backend* b, const vp_backtest_job* job, job_state* j, vp_backtest_span_info* si,
                             vp_rollout_cfg* c, vp_policy* pol) {
    vp_backtest_checks* ck = &si->checks;
    vp_status s = vp_backtest_checkpoint_config(job->checkpoint, job->overrides, job->n_overrides, "a backtest",
                                                &j->cfg, &j->rec, &j->has_rec);
    ck->recorded = j->has_rec;
    if (s == VP_OK) s = pick_data(j, job, ck);
    if (s == VP_OK) s = load_bars(j, ck);
    // the span over the bars (the overlap counted when they are the training data), then the checks
    const int same = j->has_rec ? vp_data_record_same(&j->rec, &j->seen.data)
                                : job->data == NULL || strcmp(job->data, j->cfg.data.path) == 0;
    if (s == VP_OK) s = vp_bt_resolve_span(&j->cfg, &j->all, job, ck->data, same, &j->span, si);
    if (s == VP_OK) s = check_data(j, job, si);
    if (s == VP_OK) s = prepare_data(j);
    if (s == VP_OK) s = load_policy(j, b, job->checkpoint);
    // the backtest, annualised over the bars it may read
    *c = vp_rollout_cfg_default();
    if (s == VP_OK) {
        c->instrument = j->algo.instrument;
        c->episode_bars = j->algo.env.episode_bars;
        c->ruin_fraction = j->algo.env.ruin_fraction;
        c->n_windows = job->n_windows > 0 ? job->n_windows : 1;
        c->fused = job->fused;
        s = vp_annual_measure(j->td.bars.time_ms, j->td.bars.n, &c->annual);
        c->annual.risk_free_rate = j->cfg.metrics.risk_free_rate;
    }
    if (s == VP_OK) s = vp_algo_policy(&j->algo, VP_PARAMS_ONLINE, pol);
    return s;
}

/* The job's rollout over its span into *out. */
static vp_status job_rollout(vp_backend* b, const job_state* j, const vp_rollout_cfg* c, const vp_policy* pol,
                             vp_rollout_result* out) {
    vp_rollout_data d = {&j->td.bars, j->td.atr, j->algo.features, j->span};
    return vp_rollout_run(b, pol, &d, c, out);
}

vp_status vp_backtest_job_run(vp_backend* b, const vp_backtest_job* job, vp_rollout_result* out, char* out_dir,
                              size_t cap) {
    VP_REQUIRE(b != NULL && job != NULL && job->checkpoint != NULL && out != NULL && out_dir != NULL && cap > 0,
               VP_ERR_INVALID_ARG, "vp_backtest_job_run: NULL argument");
    memset(out, 0, sizeof *out);
    out_dir[0] = '\0';
    job_state j;
    memset(&j, 0, sizeof j);
    vp_run run;
    memset(&run, 0, sizeof run);
    vp_backtest_span_info si_local, *si = job->span_info ? job->span_info : &si_local;
    memset(si, 0, sizeof *si);
    vp_rollout_cfg c;
    vp_policy pol;
    vp_status s = job_prepare(b, job, &j, si, &c, &pol);
    // the output folder claimed (made, locked, checked) once the inputs are known to be good
    if (s == VP_OK) s = claim_out(job, &run, out_dir, cap);
    if (s == VP_OK) s = job_rollout(b, &j, &c, &pol, out);

    // the folder and its files
    char* yaml = NULL;
    if (s == VP_OK) s = open_out(&j, job, out, &run);
    if (s == VP_OK) s = vp_config_to_yaml(&j.cfg, &yaml);
    if (s == VP_OK) {
        // the report's heading names the data checks' warnings
        const vp_backtest_checks* ck = &si->checks;
        char title[sizeof ck->brief + 32];
        if (ck->brief[0]) snprintf(title, sizeof title, "backtest (WARNING: %s)", ck->brief);
        else snprintf(title, sizeof title, "backtest");
        vp_backtest_info info = {title, job->checkpoint, ck->data, yaml, &j.td.bars, si, j.algo.instrument.tick_size,
                                 0, NAN};
        s = vp_backtest_write(out, &info, out_dir);
    }
    free(yaml);
    vp_run_close(&run);
    job_free(&j);
    return s;
}

vp_status vp_backtest_job_rollout(vp_backend* b, const vp_backtest_job* job, vp_rollout_result* out,
                                  vp_backtest_last_bar* last) {
    VP_REQUIRE(b != NULL && job != NULL && job->checkpoint != NULL && out != NULL && last != NULL,
               VP_ERR_INVALID_ARG, "vp_backtest_job_rollout: NULL argument");
    memset(out, 0, sizeof *out);
    memset(last, 0, sizeof *last);
    job_state j;
    memset(&j, 0, sizeof j);
    vp_backtest_span_info si_local, *si = job->span_info ? job->span_info : &si_local;
    memset(si, 0, sizeof *si);
    vp_rollout_cfg c;
    vp_policy pol;
    vp_status s = job_prepare(b, job, &j, si, &c, &pol);
    if (s == VP_OK) s = job_rollout(b, &j, &c, &pol, out);
    if (s == VP_OK) {
        const int64_t t = j.span.end - 1;
        last->instrument = j.algo.instrument;
        last->bar = t;
        last->time_ms = j.td.bars.time_ms[t];
        last->close = j.td.bars.close[t];
        last->atr = j.td.atr[t];
    }
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
    vp_backtest_info info = {"training run: test span", end->checkpoint, td->source, yaml, &td->bars, NULL,
                             end->algo->instrument.tick_size, end->val_trials, end->deflated_sharpe};
    if (s == VP_OK) s = vp_backtest_write_files(r, &info, end->run_dir);
    if (s == VP_OK) s = vp_backtest_summary_add(r, &info, test);
    if (s == VP_OK && ctx) *(vp_metrics_summary*)ctx = r->summary;
    // orders the leverage limit cut in the test span, before the run's closing lines
    char line[2048];
    if (s == VP_OK && r->cuts.orders > 0)
        vp_log(VP_LOG_WARN, "test span %s", vp_bt_cuts_line(r, "the strategy", &r->cuts, 10, line, sizeof line));
    if (s == VP_OK && r->buy_hold_cuts.orders > 0)
        vp_log(VP_LOG_WARN, "test span %s", vp_bt_cuts_line(r, "buy & hold", &r->buy_hold_cuts, 10, line, sizeof line));
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "the files of the test span [%lld, %lld)", (long long)r->span.begin,
                                            (long long)r->span.end);
    return VP_OK;
}
