/* The one training loop, for `vulpes train` and every walk-forward fold: run folder, data,
 * the algorithm (train.algo), warm-up (or resume), the loop with its logs, validations and
 * checkpoints, an orderly stop on request, then the exact backtest of the test span, the
 * caller's finishing step and summary.json. In a data-parallel run (vp_train_opts.comm of
 * more than one rank) every rank trains its share; rank 0 alone claims and writes the run
 * folder, validates and finishes, and the ranks agree after every iteration on whether to go
 * on, so a stop or a failure of one stops all after the same iteration. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "learn/train_checks.h"
#include "learn/train_progress.h"
#include "learn/train_report.h"

vp_train_opts vp_train_opts_default(void) {
    vp_train_opts o;
    memset(&o, 0, sizeof o);
    o.progress_interval_s = 1.0;
    o.mode = VP_RUN_CREATE;
    o.checkpoints = 1;
    o.summary = 1;
    o.fused = 1;
    return o;
}

/* State of one job between its phases. */
typedef struct job {
    const vp_train_opts* opts; /* reporting and stopping */
    vp_algo a;                 /* everything that trains */
    vp_run run;                /* the folder and metrics.jsonl */
    vp_train_progress prog;    /* the progress line (or sink), the last loss and validation */
    double t0;                 /* clock at the start of this process's loop */
    double t_log;              /* clock at the last log */
    vp_train_counters at_log;  /* counters at the last log */
    vp_selection sel;          /* the validation Sharpes this process compared (the trials) */
    vp_perf best_val;          /* the strategy series of the best validation this process saw */
    int best_seen;             /* best_val is set (0 after a resume until a new best) */
    int64_t nan_steps;         /* non-finite learner steps counted at the last log (the run's count) */
    int64_t last_ckpt;         /* iteration of the last last.safetensors (-1: none) */
    int lead;                  /* 1: this process writes the run folder (the single process, or rank 0) */
    int ranks;                 /* ranks of the run (1: the single process) */
    const char* dir;           /* the run folder */
} job;

/* DIR/file into out[n] (a rank other than 0 reads files of the folder rank 0 holds). */
static vp_status run_file(const job* j, const char* file, char* out, size_t n) {
    if (j->lead) return vp_run_path(&j->run, file, out, n);
    VP_REQUIRE(snprintf(out, n, "%s/%s", j->dir, file) < (int)n, VP_ERR_INVALID_ARG, "run folder path too long");
    return VP_OK;
}

/* The ranks agree (the largest of every rank's code: 0 go on, 1 stop, 2 failed) after s of
 * this rank; a failure elsewhere becomes this rank's. The single process: its own code. */
static vp_status agree(job* j, vp_status s, int* stop, const char* when) {
    int code = s != VP_OK ? 2 : (stop && *stop) ? 1 : 0;
    if (j->ranks > 1) {
        // this rank's message stays the one that is reported when it failed itself
        vp_status a = vp_comm_agree_max(j->opts->comm, &code);
        if (s == VP_OK && a != VP_OK) return a;
    }
    if (s != VP_OK) return s;
    VP_REQUIRE(code != 2, VP_ERR_STATE, "another rank of the %d failed %s (its own message says why); rank %d stops",
               j->ranks, when, vp_comm_rank(j->opts->comm));
    if (stop) *stop = code == 1;
    return VP_OK;
}

/* The learner's count of non-finite steps in a statistics list (0 when it has none). */
static int64_t nan_count(const vp_kv_list* st) {
    const double v = vp_kv_get(st, "nan_steps");
    return isfinite(v) && v > 0 && v < 9e18 ? (int64_t)v : 0;
}

/* Writes the "train" and "timing" events and keeps the loss and epsilon for the progress
 * line; fails when every learner step since the last log was non-finite. */
static vp_status log_point(job* j) {
    vp_algo* t = &j->a;
    vp_kv_list st;
    VP_TRY(vp_algo_stats(t, &st));
    VP_TRY(vp_train_log_train(&j->run.metrics, t, &st));
    // Rates over the interval since the last log.
    double now = vp_clock_s(), dt = now - j->t_log;
    vp_train_timing tm = {now - j->t0, NAN, NAN, NAN};
    if (dt > 0) {
        tm.iterations_per_s = (double)(t->count.iteration - j->at_log.iteration) / dt;
        tm.env_steps_per_s = (double)(t->count.env_steps - j->at_log.env_steps) / dt;
        tm.learner_steps_per_s = (double)(t->count.learner_steps - j->at_log.learner_steps) / dt;
    }
    VP_TRY(vp_train_log_timing(&j->run.metrics, t, &tm));
    const int64_t since = j->at_log.iteration, steps = t->count.learner_steps - j->at_log.learner_steps;
    j->t_log = now;
    j->at_log = t->count;
    j->prog.last_loss = vp_kv_get(&st, "loss");
    j->prog.last_eps = vp_kv_get(&st, "epsilon");
    // Non-finite learner steps are counted, not fatal: say so when the count grows.
    const int64_t nan_steps = nan_count(&st), bad = nan_steps - j->nan_steps;
    if (nan_steps > j->nan_steps) {
        char msg[160];
        snprintf(msg, sizeof msg, "warning: %lld learner %s so far had a non-finite loss or gradient (iteration %lld)",
                 (long long)nan_steps, vp_plural(nan_steps, "step", "steps"), (long long)t->count.iteration);
        vp_train_progress_note(&j->prog, VP_LOG_WARN, msg);
        j->nan_steps = nan_steps;
    }
    // ...but a log interval whose every learner step was non-finite is a run that learns nothing.
    if (steps > 0 && bad >= steps) {
        char kept[96] = "no last.safetensors was written";
        if (j->last_ckpt >= 0) snprintf(kept, sizeof kept, "last.safetensors of iteration %lld is kept",
                                        (long long)j->last_ckpt);
        VP_FAIL(VP_ERR_NUMERIC,
                "the run failed: %s %lld learner %s of iterations %lld..%lld had a non-finite loss or gradient "
                "(nan_steps %lld): check the data's prices and instrument.multiplier, instrument.initial_equity, "
                "env.reward_scale and learn.lr; %s, no summary.json",
                steps == 1 ? "the" : "all", (long long)steps, vp_plural(steps, "step", "steps"), (long long)since + 1,
                (long long)t->count.iteration, (long long)nan_steps, kept);
    }
    return VP_OK;
}

/* Writes last.safetensors and its event (none when the run keeps no checkpoints). */
static vp_status save_last(job* j, const char* reason) {
    if (!j->opts->checkpoints) return VP_OK;
    char path[VP_RUN_PATH_MAX];
    VP_TRY(run_file(j, "last.safetensors", path, sizeof path));
    VP_TRY(vp_algo_save(&j->a, path, VP_CKPT_RESUME));
    j->last_ckpt = j->a.count.iteration;
    return vp_train_log_checkpoint(&j->run.metrics, &j->a, "last.safetensors", reason);
}

/* Validates the online parameters; a new best is kept and written to best.safetensors. */
static vp_status evaluate(job* j, vp_eval_result* r) {
    vp_algo* t = &j->a;
    VP_TRY(vp_algo_validate(t, VP_PARAMS_ONLINE, r));
    const double sh = r->strategy.sharpe;
    const int best = !isnan(sh) && (isnan(t->best_val_sharpe) || sh > t->best_val_sharpe);
    VP_TRY(vp_train_log_eval(&j->run.metrics, t, r, best));
    if (r->ruined > 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "validation at iteration %lld: %lld of %lld windows RUINED (closed out at the ruin "
                 "level, env.ruin_fraction)", (long long)t->count.iteration, (long long)r->ruined, (long long)r->windows);
        vp_train_progress_note(&j->prog, VP_LOG_WARN, msg);
    }
    j->prog.last_val = sh;
    vp_selection_add(&j->sel, sh);
    if (best) {
        j->best_val = r->strategy;
        j->best_seen = 1;
    }
    if (j->opts->on_eval) j->opts->on_eval(j->opts->ctx, t->count.iteration, r, best);
    if (!best) return VP_OK;
    t->best_val_sharpe = sh;
    t->best_iteration = t->count.iteration;
    VP_TRY(vp_algo_keep_best(t));
    char path[VP_RUN_PATH_MAX];
    VP_TRY(run_file(j, "best.safetensors", path, sizeof path));
    VP_TRY(vp_algo_save(t, path, VP_CKPT_BEST));
    return vp_train_log_checkpoint(&j->run.metrics, t, "best.safetensors", "best");
}

/* The starting state in the claimed run folder: a fresh run's warm-up, or a resume's
 * checkpoint. A resume makes every check (the checkpoints and their config, the iterations
 * left, metrics.jsonl readable line by line) before it changes a file. */
static vp_status start(job* j, const vp_config* cfg) {
    vp_algo* t = &j->a;
    char path[VP_RUN_PATH_MAX];
    if (j->opts->mode != VP_RUN_RESUME) {
        if (j->lead) VP_TRY(vp_run_begin(&j->run, cfg));
        if (j->opts->init_params) VP_TRY(vp_algo_warm_start(t, j->opts->init_params));
        VP_TRY(vp_algo_warmup(t));
        return j->lead ? vp_train_log_run(&j->run.metrics, t, 0) : VP_OK;
    }
    // Resume: state from last.safetensors (config checked), metrics cut back to it.
    VP_TRY(run_file(j, "last.safetensors", path, sizeof path));
    VP_TRY(vp_algo_load(t, path));
    j->last_ckpt = t->count.iteration;
    VP_REQUIRE(t->count.iteration < cfg->train.iterations, VP_ERR_INVALID_ARG,
               "%s holds %lld %s and train.iterations is %lld: raise train.iterations to continue", path,
               (long long)t->count.iteration, vp_plural(t->count.iteration, "iteration", "iterations"),
               (long long)cfg->train.iterations);
    // the other ranks only read the shared state; rank 0 validates, keeps the best and writes
    if (!j->lead) return VP_OK;
    if (t->best_iteration >= 0) {
        VP_TRY(run_file(j, "best.safetensors", path, sizeof path));
        VP_TRY(vp_algo_load_params(t, path, VP_PARAMS_BEST));
    }
    // The first change: the trim refuses a damaged file before it writes.
    VP_TRY(run_file(j, "metrics.jsonl", path, sizeof path));
    VP_TRY(vp_train_trim_metrics(path, t->count.iteration));
    // The test-span files of an earlier finish describe a selection the continued run may
    // replace: gone until this run finishes (an interrupted run has none).
    static const char* stale[] = {"trades.csv", "equity.csv", "report.html"};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; ++i) {
        VP_TRY(run_file(j, stale[i], path, sizeof path));
        remove(path);
    }
    VP_TRY(run_file(j, "config.yaml", path, sizeof path));
    VP_TRY(vp_config_write_yaml(cfg, path));
    VP_TRY(vp_run_begin(&j->run, NULL));
    return vp_train_log_run(&j->run.metrics, t, 1);
}

/* The learner's count of non-finite steps now, the baseline of the first log. */
static vp_status nan_baseline(job* j) {
    vp_kv_list st;
    VP_TRY(vp_algo_stats(&j->a, &st));
    j->nan_steps = nan_count(&st);
    return VP_OK;
}

/* The loop: iterations with their logs, validations and checkpoints, until done or stopped. */
static vp_status loop(job* j, vp_train_result* out) {
    vp_algo* t = &j->a;
    const vp_config_train* tc = &t->cfg.train;
    const vp_train_opts* o = j->opts;
    if (t->count.iteration < tc->iterations) vp_train_progress_first(&j->prog, t->backend);
    while (t->count.iteration < tc->iterations) {
        VP_TRY(vp_algo_iterate(t, 1));
        const int64_t it = t->count.iteration;
        const int last = it == tc->iterations;
        int stop = (o->stop && *o->stop) || (o->stop_after > 0 && it >= o->stop_after) ||
                   (o->should_stop && o->should_stop(o->ctx));
        // The scheduled events of this iteration (none extra on a stop, so a resume matches);
        // the folder's are rank 0's.
        vp_status s = VP_OK;
        if (j->lead) {
            if ((tc->eval_every > 0 && it % tc->eval_every == 0) || last) s = evaluate(j, &out->final_val);
            if (s == VP_OK && (it % tc->log_every == 0 || last)) s = log_point(j);
            if (s == VP_OK && !last && tc->checkpoint_every > 0 && it % tc->checkpoint_every == 0)
                s = save_last(j, "periodic");
        }
        // every rank stops after the same iteration: a stop or a failure of one is every rank's
        char when[64];
        snprintf(when, sizeof when, "at iteration %lld", (long long)it);
        VP_TRY(agree(j, s, &stop, when));
        vp_train_progress_iteration(&j->prog, &t->count);
        if (stop && !last) {
            VP_TRY(save_last(j, "interrupt"));
            out->interrupted = 1;
            return VP_OK;
        }
    }
    return save_last(j, "final");
}

/* The exact backtest (one window) of the test span with parameters `which` into *r. */
static vp_status test_span(job* j, vp_algo_params which, vp_rollout_result* r) {
    const vp_algo* a = &j->a;
    const vp_train_data* d = a->data;
    vp_rollout_cfg c = vp_rollout_cfg_default();
    c.instrument = a->instrument;
    c.episode_bars = a->env.episode_bars;
    c.ruin_fraction = a->env.ruin_fraction;
    c.fused = j->opts->fused;
    memset(r, 0, sizeof *r);
    VP_TRY(vp_annual_measure(d->bars.time_ms, d->bars.n, &c.annual));
    c.annual.risk_free_rate = a->cfg.metrics.risk_free_rate;
    vp_policy pol;
    VP_TRY(vp_algo_policy(a, which, &pol));
    vp_rollout_data rd = {&d->bars, d->atr, a->features, d->split.test};
    vp_status s = vp_rollout_run(a->backend, &pol, &rd, &c, r);
    if (s != VP_OK) return vp_error_context(s, "exact backtest of the test span [%lld, %lld)",
                                            (long long)d->split.test.begin, (long long)d->split.test.end);
    return VP_OK;
}

/* summary.json's "test": the backtest's metrics and which parameters ran, into root. */
static vp_status test_json(const vp_rollout_result* r, const char* params, cJSON* root, cJSON** out) {
    cJSON* obj = NULL;
    VP_TRY(vp_metrics_to_json(&r->summary, &obj));
    if (!cJSON_AddStringToObject(obj, "parameters", params) || !cJSON_AddItemToObject(root, "test", obj)) {
        cJSON_Delete(obj);
        VP_FAIL(VP_ERR_OOM, "summary.json: out of memory");
    }
    *out = obj;
    return VP_OK;
}

/* The deflated Sharpe of the best-by-validation selection into summary.json's best_validation
 * and *out: the trials are the validations this process compared (NaN before two, or when the
 * best was found before a resume). */
static vp_status add_selection(job* j, cJSON* root, vp_train_result* out) {
    double sr0 = NAN;
    out->val_trials = j->sel.n_trials;
    out->best_val_deflated_sharpe = j->best_seen ? vp_deflated_sharpe(&j->sel, &j->best_val, &sr0) : NAN;
    cJSON* best = cJSON_GetObjectItemCaseSensitive(root, "best_validation");
    VP_REQUIRE(best != NULL, VP_ERR_STATE, "summary.json: no best_validation object to add the deflated Sharpe to");
    VP_TRY(vp_metric_json_add(best, "trials", (double)j->sel.n_trials));
    VP_TRY(vp_metric_json_add(best, "trials_sharpe_variance", vp_selection_variance(&j->sel)));
    VP_TRY(vp_metric_json_add(best, "expected_max_sharpe", sr0));
    return vp_metric_json_add(best, "deflated_sharpe", out->best_val_deflated_sharpe);
}

/* After the last iteration: the exact backtest of the test span with the best parameters (the
 * final ones when no validation scored), the caller's finishing step (the test span's files
 * under `vulpes train`), then summary.json, written also when one of them fails. */
static vp_status finish(job* j, vp_train_result* out) {
    vp_algo* a = &j->a;
    const vp_algo_params which = vp_algo_selected(a);
    cJSON* root = NULL;
    VP_TRY(vp_train_summary_json(a, out, 1, &root));
    vp_status sel = add_selection(j, root, out);
    if (sel != VP_OK) {
        cJSON_Delete(root);
        return sel;
    }
    vp_rollout_result r;
    vp_status s = test_span(j, which, &r);
    cJSON* test = NULL;
    if (s == VP_OK) {
        vp_train_test_result(&r, &out->test);
        s = test_json(&r, which == VP_PARAMS_BEST ? "best" : "final", root, &test);
    }
    // The finishing step adds its keys to the test object.
    if (s == VP_OK && j->opts->finish) {
        vp_train_end end = {a, &r, j->run.dir, which == VP_PARAMS_BEST ? "best.safetensors" : "last.safetensors",
                            out->val_trials, out->best_val_deflated_sharpe};
        s = j->opts->finish(j->opts->ctx, &end, test);
    }
    vp_rollout_result_free(&r);
    char path[VP_RUN_PATH_MAX];
    vp_status w = VP_OK;
    if (j->opts->summary) {
        w = run_file(j, "summary.json", path, sizeof path);
        if (w == VP_OK) w = vp_train_summary_write(path, root);
    }
    cJSON_Delete(root);
    if (s != VP_OK) return vp_error_context(s, "the end of the run (summary.json written without it)");
    return w;
}

vp_status vp_train_run(const vp_config* cfg, vp_backend* b, const vp_train_opts* opts, vp_train_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_train_run: cfg, backend or out is NULL");
    VP_TRY(vp_config_check(cfg));
    vp_train_data d;
    VP_TRY(vp_train_data_load(&d, cfg));
    vp_status s = vp_train_run_data(cfg, b, &d, opts, out);
    vp_train_data_free(&d);
    return s;
}

vp_status vp_train_run_data(const vp_config* cfg, vp_backend* b, const vp_train_data* d, const vp_train_opts* opts,
                            vp_train_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && d != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_train_run_data: cfg, backend, data or out is NULL");
    memset(out, 0, sizeof *out);
    out->best_val_sharpe = NAN;
    out->best_iteration = -1;
    out->best_val_deflated_sharpe = NAN;
    vp_train_opts def = vp_train_opts_default();
    job j;
    memset(&j, 0, sizeof j);
    j.opts = opts ? opts : &def;
    j.last_ckpt = -1;
    // a data-parallel rank other than 0 reports and writes nothing
    const int rank = vp_comm_rank(j.opts->comm);
    j.ranks = vp_comm_size(j.opts->comm);
    j.lead = rank == 0;
    vp_train_opts quiet = *j.opts;
    if (!j.lead) {
        quiet.progress = NULL;
        quiet.on_eval = NULL;
        quiet.finish = NULL;
        quiet.checkpoints = 0;
        quiet.summary = 0;
        j.opts = &quiet;
    }
    j.dir = out->run_dir;
    // the run records data.path absolute (config.yaml, checkpoints), so they work from any folder
    vp_config run_cfg = *cfg;
    VP_TRY(vp_config_absolute_data_path(&run_cfg));
    cfg = &run_cfg;
    VP_TRY(vp_config_check(cfg));
    VP_TRY(vp_train_check_scales(cfg, d));
    VP_TRY(vp_train_pick_dir(cfg, j.opts, out->run_dir, sizeof out->run_dir));

    // Every part of the run, the folder claimed (locked and checked), then its start.
    vp_status s = vp_algo_create_rank(&j.a, cfg, b, d, VP_ALGO_TRAIN, rank, j.ranks);
    // every rank made its part before the first collective (the broadcast of rank 0's parameters)
    if (j.ranks > 1) s = agree(&j, s, NULL, "to set up");
    if (s == VP_OK && j.opts->comm) s = vp_algo_set_comm(&j.a, j.opts->comm);
    if (s == VP_OK && j.opts->mode == VP_RUN_RESUME) s = vp_train_check_resumable(out->run_dir);
    if (s == VP_OK && j.lead) s = vp_run_claim(&j.run, out->run_dir, j.opts->mode);
    // The first progress line and the warm-up notice, before the warm-up runs.
    const int resume = j.opts->mode == VP_RUN_RESUME;
    char note[256];
    vp_algo_start_note(&j.a, resume, note, sizeof note);
    if (s == VP_OK) vp_train_progress_begin(&j.prog, j.opts, cfg, b, &j.a.count, note);
    if (s == VP_OK) s = start(&j, cfg);
    if (s == VP_OK) s = nan_baseline(&j);
    // every rank set up and started (warm-up or resume), or none goes on
    if (j.ranks > 1) s = agree(&j, s, NULL, "to start");
    if (s == VP_OK) {
        // Rates count from here, so a resumed run's are its own.
        j.t0 = j.t_log = vp_clock_s();
        j.at_log = j.a.count;
        s = loop(&j, out);
    }
    if (s == VP_OK && !out->interrupted && j.lead) s = finish(&j, out);
    if (s == VP_OK && out->interrupted && j.opts->summary) {
        char path[VP_RUN_PATH_MAX];
        cJSON* root = NULL;
        s = run_file(&j, "summary.json", path, sizeof path);
        if (s == VP_OK) s = vp_train_summary_json(&j.a, out, 0, &root);
        if (s == VP_OK) s = add_selection(&j, root, out);
        if (s == VP_OK) s = vp_train_summary_write(path, root);
        cJSON_Delete(root);
    }
    if (out->interrupted && j.opts->checkpoints)
        vp_train_progress_note(&j.prog, -1, "stopped: last.safetensors holds the run; --resume continues it");
    vp_train_progress_end(&j.prog);
    out->count = j.a.count;
    out->best_val_sharpe = j.a.best_val_sharpe;
    out->best_iteration = j.a.best_iteration;
    vp_run_close(&j.run);
    vp_algo_free(&j.a);
    if (s != VP_OK) return vp_error_context(s, "training run %s", out->run_dir);
    return VP_OK;
}
