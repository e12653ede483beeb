/* The `vulpes backtest` job: the config and parameters from a checkpoint, the bars, the
 * span (the training run's test span by default, --span, --from / --to) and its overlap with
 * the bars the run trained and validated on, features and ATR computed the way training computes them over
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

/* Applies the job's instrument.* overrides to the training run's config (costs and contract
 * for this backtest only); any other key is refused, naming it. */
static vp_status apply_overrides(job_state* j, const vp_backtest_job* job) {
    for (int i = 0; i < job->n_overrides; ++i) {
        const char* a = job->overrides[i];
        VP_REQUIRE(a != NULL && strncmp(a, "instrument.", 11) == 0 && strchr(a, '=') != NULL, VP_ERR_INVALID_ARG,
                   "'%s': a backtest may change only instrument.* keys (costs and contract: commission, "
                   "slippage_ticks, tick_size, multiplier, max_position, initial_equity); the network keeps the "
                   "rest of its training config", a ? a : "(null)");
        VP_TRY(vp_config_override(&j->cfg, a));
    }
    return VP_OK;
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

/* Bars of [a, b) inside span s. */
static int64_t overlap_len(int64_t a, int64_t b, vp_span s) {
    const int64_t lo = a > s.begin ? a : s.begin, hi = b < s.end ? b : s.end;
    return hi > lo ? hi - lo : 0;
}

/* The training run's split of all the bars, as vp_train_data_load makes it; into si. */
static void training_split(const job_state* j, int64_t warm, vp_backtest_span_info* si) {
    vp_split_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.train_frac = j->cfg.split.train;
    sc.val_frac = j->cfg.split.val;
    sc.test_frac = j->cfg.split.test;
    sc.embargo = j->cfg.split.embargo;
    sc.warmup = warm;
    si->split_fits = vp_split_make(j->all.n, &sc, &si->split) == VP_OK;
    if (!si->split_fits) vp_clear_error();
}

/* A bound (--from: is_from 1, --to) into *index; a start after the last bar is refused naming
 * that bar. */
static vp_status span_bound(const job_state* j, int is_from, const char* text, int64_t* index) {
    VP_TRY(vp_backtest_bar_of(&j->all, text, index));
    if (is_from && *index >= j->all.n && j->all.n > 0) {
        char t[32];
        return vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "--from %s is after the last bar, %s (bar %lld)", text,
                            vp_time_format_iso(j->all.time_ms[j->all.n - 1], t, sizeof t),
                            (long long)(j->all.n - 1));
    }
    return VP_OK;
}

/* The span: --span's (default: the training run's test span; all bars after the warm-up when
 * --from or --to is given), its bounds replaced by --from / --to; and its overlap with the
 * training run's train and validation spans when the data is the training run's. */
static vp_status resolve_span(job_state* j, const vp_backtest_job* job, const char* data, vp_backtest_span_info* si) {
    const int64_t warm = vp_train_data_warmup(&j->cfg);
    memset(si, 0, sizeof *si);
    training_split(j, warm, si);
    const char* kind = job->span ? job->span : (job->from || job->to) ? "all" : "test";

    // the base span
    if (strcmp(kind, "all") == 0) {
        j->span.begin = warm < j->all.n ? warm : 0;
        j->span.end = j->all.n;
        snprintf(si->source, sizeof si->source, "all bars after the feature warm-up");
    } else {
        const int which = strcmp(kind, "train") == 0 ? 0 : strcmp(kind, "val") == 0 ? 1 : strcmp(kind, "test") == 0 ? 2 : -1;
        VP_REQUIRE(which >= 0, VP_ERR_INVALID_ARG, "--span '%s': use train, val, test or all", kind);
        VP_REQUIRE(si->split_fits, VP_ERR_INVALID_ARG,
                   "%s the training run's %s span, but its split (split.train %g, split.val %g, split.test %g, "
                   "split.embargo %lld, %lld bars of feature warm-up) does not fit the %lld bars of %s; give "
                   "--from/--to or --span all",
                   job->span ? "--span asks for" : "the default span is", kind, j->cfg.split.train, j->cfg.split.val,
                   j->cfg.split.test, (long long)j->cfg.split.embargo, (long long)warm, (long long)j->all.n, data);
        const vp_span* sp[3] = {&si->split.train, &si->split.val, &si->split.test};
        j->span = *sp[which];
        snprintf(si->source, sizeof si->source, "the training run's %s span", which == 0 ? "train" : which == 1 ? "val" : "test");
    }
    // --from / --to replace its bounds
    if (job->from) VP_TRY(span_bound(j, 1, job->from, &j->span.begin));
    if (job->to) VP_TRY(span_bound(j, 0, job->to, &j->span.end));
    if (job->from && job->to && !job->span) snprintf(si->source, sizeof si->source, "bars given by --from/--to");
    else if (job->from || job->to)
        snprintf(si->source + strlen(si->source), sizeof si->source - strlen(si->source), ", bounds from %s",
                 job->from && job->to ? "--from/--to" : job->from ? "--from" : "--to");
    VP_REQUIRE(j->span.end - j->span.begin >= 2, VP_ERR_INVALID_ARG,
               "the span [%lld, %lld) of the %lld bars holds fewer than 2 bars", (long long)j->span.begin,
               (long long)j->span.end, (long long)j->all.n);
    if (j->span.begin < warm)
        vp_log(VP_LOG_WARN, "backtest: the span starts at bar %lld, before the %lld bars of feature warm-up: its "
               "first features see less history than training's", (long long)j->span.begin, (long long)warm);

    // the bars the training run saw: only known when the data is its data and its split fits
    si->n_bars = vp_span_len(j->span);
    const int same = job->data == NULL || strcmp(job->data, j->cfg.data.path) == 0;
    si->overlap_known = same && si->split_fits;
    if (si->overlap_known) {
        si->train_bars = overlap_len(j->span.begin, j->span.end, si->split.train);
        si->val_bars = overlap_len(j->span.begin, j->span.end, si->split.val);
    } else {
        snprintf(si->unknown_why, sizeof si->unknown_why, "%s",
                 !same ? "the data is not the training run's data.path"
                       : "the training run's split does not fit this data");
    }
    return VP_OK;
}

/* Features and ATR of bars [0, b) only, by training's own preparation (no training split: a
 * backtest needs none). */
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
    vp_backtest_span_info si_local, *si = job->span_info ? job->span_info : &si_local;
    memset(si, 0, sizeof *si);
    vp_status s = load_config(&j, job->checkpoint);
    if (s == VP_OK) s = apply_overrides(&j, job);
    if (s == VP_OK) s = vp_config_check(&j.cfg);
    const char* data = job->data ? job->data : j.cfg.data.path;
    if (s == VP_OK) s = load_bars(&j, data);
    if (s == VP_OK) s = resolve_span(&j, job, data, si);
    if (s == VP_OK) s = prepare_data(&j);
    if (s == VP_OK) s = load_policy(&j, b, job->checkpoint);

    // the backtest, annualised over the bars it may read
    vp_rollout_cfg c = vp_rollout_cfg_default();
    vp_policy pol;
    if (s == VP_OK) {
        c.instrument = j.algo.instrument;
        c.episode_bars = j.algo.env.episode_bars;
        c.ruin_fraction = j.algo.env.ruin_fraction;
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
        vp_backtest_info info = {"backtest", job->checkpoint, data, yaml, &j.td.bars, si, j.algo.instrument.tick_size,
                                 0, NAN};
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
    vp_backtest_info info = {"training run: test span", end->checkpoint, td->source, yaml, &td->bars, NULL,
                             end->algo->instrument.tick_size, end->val_trials, end->deflated_sharpe};
    if (s == VP_OK) s = vp_backtest_write_files(r, &info, end->run_dir);
    if (s == VP_OK) s = vp_backtest_summary_add(r, &info, test);
    if (s == VP_OK && ctx) *(vp_metrics_summary*)ctx = r->summary;
    free(yaml);
    if (s != VP_OK) return vp_error_context(s, "the files of the test span [%lld, %lld)", (long long)r->span.begin,
                                            (long long)r->span.end);
    return VP_OK;
}
