/* The one training loop, for `vulpes train` and every walk-forward fold: run folder, data,
 * the algorithm (train.algo), warm-up (or resume), the loop with its logs, validations and
 * checkpoints, an orderly stop on request, then the exact backtest of the test span, the
 * caller's finishing step and summary.json. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

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
    vp_progress prog;          /* the progress line */
    int progress_on;           /* prog is initialised */
    double t0;                 /* clock at the start of this process's loop */
    double t_log;              /* clock at the last log */
    vp_train_counters at_log;  /* counters at the last log */
    double last_loss;          /* loss of the last log */
    double last_val;           /* Sharpe of the last validation */
    int64_t nan_steps;         /* non-finite learner steps reported so far */
} job;

/* DIR/file into out[n] for a folder that is not open yet. */
static vp_status dir_file(const char* dir, const char* file, char* out, size_t n) {
    int k = snprintf(out, n, "%s/%s", dir, file);
    VP_REQUIRE(k > 0 && (size_t)k < n, VP_ERR_INVALID_ARG, "path '%s/%s' is too long", dir, file);
    return VP_OK;
}

/* DIR/file into out[n]. */
static vp_status run_file(const job* j, const char* file, char* out, size_t n) {
    return vp_run_path(&j->run, file, out, n);
}

/* The run folder: the resume folder, --out / run.out, or runs/YYYYmmdd-HHMMSS-NAME. */
static vp_status pick_dir(const vp_config* cfg, const vp_train_opts* o, char* dir, size_t n) {
    if (o->run_dir && o->run_dir[0]) {
        snprintf(dir, n, "%s", o->run_dir);
        return VP_OK;
    }
    VP_REQUIRE(o->mode != VP_RUN_RESUME, VP_ERR_INVALID_ARG, "a resume needs the run folder to continue");
    if (cfg->run.out[0]) {
        snprintf(dir, n, "%s", cfg->run.out);
        return VP_OK;
    }
    char name[256];
    if (!cfg->run.name[0]) vp_run_name_from_path(o->config_path, name, sizeof name);
    else VP_REQUIRE(snprintf(name, sizeof name, "%s", cfg->run.name) < (int)sizeof name, VP_ERR_INVALID_ARG,
                    "run.name '%.40s...' is too long", cfg->run.name);
    return vp_run_dir_default(dir, n, "runs", name, time(NULL));
}

/* A progress note (when progress is on). */
static void note(job* j, const char* msg) {
    if (j->progress_on) vp_progress_note(&j->prog, msg);
}

/* Writes the "train" and "timing" events and updates the progress line. */
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
    j->t_log = now;
    j->at_log = t->count;
    j->last_loss = vp_kv_get(&st, "loss");
    // Non-finite learner steps are counted, not fatal: say so when the count grows.
    const double nan_count = vp_kv_get(&st, "nan_steps");
    const int64_t nan_steps = isnan(nan_count) ? 0 : (int64_t)nan_count;
    if (nan_steps > j->nan_steps) {
        char msg[160];
        snprintf(msg, sizeof msg, "warning: %lld learner steps so far had a non-finite loss or gradient (iteration %lld)",
                 (long long)nan_steps, (long long)t->count.iteration);
        if (j->progress_on) note(j, msg);
        else vp_log(VP_LOG_WARN, "%s", msg);
        j->nan_steps = nan_steps;
    }
    if (j->progress_on) {
        vp_progress_stats ps = {t->count.iteration, t->count.env_steps, t->count.learner_steps, j->last_loss,
                                vp_kv_get(&st, "epsilon"), j->last_val};
        vp_progress_update(&j->prog, &ps, now);
    }
    return VP_OK;
}

/* Writes last.safetensors and its event (none when the run keeps no checkpoints). */
static vp_status save_last(job* j, const char* reason) {
    if (!j->opts->checkpoints) return VP_OK;
    char path[VP_RUN_PATH_MAX];
    VP_TRY(run_file(j, "last.safetensors", path, sizeof path));
    VP_TRY(vp_algo_save(&j->a, path, VP_CKPT_RESUME));
    return vp_train_log_checkpoint(&j->run.metrics, &j->a, "last.safetensors", reason);
}

/* Validates the online parameters; a new best is kept and written to best.safetensors. */
static vp_status evaluate(job* j, vp_eval_result* r) {
    vp_algo* t = &j->a;
    VP_TRY(vp_algo_validate(t, VP_PARAMS_ONLINE, r));
    const double sh = r->strategy.sharpe;
    const int best = !isnan(sh) && (isnan(t->best_val_sharpe) || sh > t->best_val_sharpe);
    VP_TRY(vp_train_log_eval(&j->run.metrics, t, r, best));
    j->last_val = sh;
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

/* The run folder and the starting state: a fresh run's warm-up, or a resume's checkpoint. */
static vp_status start(job* j, const vp_config* cfg, const char* dir) {
    vp_algo* t = &j->a;
    char path[VP_RUN_PATH_MAX];
    if (j->opts->mode != VP_RUN_RESUME) {
        VP_TRY(vp_run_open(&j->run, dir, j->opts->mode, cfg));
        if (j->opts->init_params) VP_TRY(vp_algo_warm_start(t, j->opts->init_params));
        VP_TRY(vp_algo_warmup(t));
        return vp_train_log_run(&j->run.metrics, t, 0);
    }
    // Resume: state from last.safetensors (config checked), metrics cut back to it.
    VP_TRY(dir_file(dir, "last.safetensors", path, sizeof path));
    VP_TRY(vp_algo_load(t, path));
    VP_REQUIRE(t->count.iteration < cfg->train.iterations, VP_ERR_INVALID_ARG,
               "%s holds %lld iterations and train.iterations is %lld: raise train.iterations to continue", path,
               (long long)t->count.iteration, (long long)cfg->train.iterations);
    if (t->best_iteration >= 0) {
        VP_TRY(dir_file(dir, "best.safetensors", path, sizeof path));
        VP_TRY(vp_algo_load_params(t, path, VP_PARAMS_BEST));
    }
    VP_TRY(dir_file(dir, "metrics.jsonl", path, sizeof path));
    VP_TRY(vp_train_trim_metrics(path, t->count.iteration));
    VP_TRY(vp_run_open(&j->run, dir, VP_RUN_RESUME, NULL));
    // The test-span files of an earlier finish describe a selection the continued run may
    // replace: gone until this run finishes (an interrupted run has none).
    static const char* stale[] = {"trades.csv", "equity.csv", "report.html"};
    for (size_t i = 0; i < sizeof stale / sizeof stale[0]; ++i) {
        VP_TRY(run_file(j, stale[i], path, sizeof path));
        remove(path);
    }
    VP_TRY(run_file(j, "config.yaml", path, sizeof path));
    VP_TRY(vp_config_write_yaml(cfg, path));
    return vp_train_log_run(&j->run.metrics, t, 1);
}

/* The loop: iterations with their logs, validations and checkpoints, until done or stopped. */
static vp_status loop(job* j, vp_train_result* out) {
    vp_algo* t = &j->a;
    const vp_config_train* tc = &t->cfg.train;
    const vp_train_opts* o = j->opts;
    while (t->count.iteration < tc->iterations) {
        VP_TRY(vp_algo_iterate(t, 1));
        const int64_t it = t->count.iteration;
        const int last = it == tc->iterations;
        const int stop = (o->stop && *o->stop) || (o->stop_after > 0 && it >= o->stop_after) ||
                         (o->should_stop && o->should_stop(o->ctx));
        // The scheduled events of this iteration (none extra on a stop, so a resume matches).
        if ((tc->eval_every > 0 && it % tc->eval_every == 0) || last) VP_TRY(evaluate(j, &out->final_val));
        if (it % tc->log_every == 0 || last) VP_TRY(log_point(j));
        if (!last && tc->checkpoint_every > 0 && it % tc->checkpoint_every == 0) VP_TRY(save_last(j, "periodic"));
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
    c.fused = j->opts->fused;
    memset(r, 0, sizeof *r);
    VP_TRY(vp_annual_measure(d->bars.time_ms, d->bars.n, &c.annual));
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

/* After the last iteration: the exact backtest of the test span with the best parameters (the
 * final ones when no validation scored), the caller's finishing step (the test span's files
 * under `vulpes train`), then summary.json, written also when one of them fails. */
static vp_status finish(job* j, vp_train_result* out) {
    vp_algo* a = &j->a;
    const vp_algo_params which = vp_algo_selected(a);
    cJSON* root = NULL;
    VP_TRY(vp_train_summary_json(a, out, 1, &root));
    vp_rollout_result r;
    vp_status s = test_span(j, which, &r);
    cJSON* test = NULL;
    if (s == VP_OK) {
        vp_train_test_result(&r, &out->test);
        s = test_json(&r, which == VP_PARAMS_BEST ? "best" : "final", root, &test);
    }
    // The finishing step adds its keys to the test object.
    if (s == VP_OK && j->opts->finish) {
        vp_train_end end = {a, &r, j->run.dir, which == VP_PARAMS_BEST ? "best.safetensors" : "last.safetensors"};
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
    vp_train_opts def = vp_train_opts_default();
    job j;
    memset(&j, 0, sizeof j);
    j.opts = opts ? opts : &def;
    j.last_loss = j.last_val = NAN;
    VP_TRY(vp_config_check(cfg));
    VP_TRY(pick_dir(cfg, j.opts, out->run_dir, sizeof out->run_dir));

    // Every part of the run, then its start.
    vp_status s = vp_algo_create(&j.a, cfg, b, d, VP_ALGO_TRAIN);
    if (s == VP_OK) s = start(&j, cfg, out->run_dir);
    if (s == VP_OK) {
        // Progress counts from here, so a resumed run's rates are its own.
        j.t0 = j.t_log = vp_clock_s();
        j.at_log = j.a.count;
        if (j.opts->progress) {
            vp_progress_stats st = {j.a.count.iteration, j.a.count.env_steps, j.a.count.learner_steps, NAN, NAN, NAN};
            vp_progress_init(&j.prog, j.opts->progress, j.opts->progress_tty, cfg->train.iterations,
                             j.opts->progress_interval_s, j.t0, &st);
            j.progress_on = 1;
        }
        s = loop(&j, out);
    }
    if (s == VP_OK && !out->interrupted) s = finish(&j, out);
    if (s == VP_OK && out->interrupted && j.opts->summary) {
        char path[VP_RUN_PATH_MAX];
        cJSON* root = NULL;
        s = run_file(&j, "summary.json", path, sizeof path);
        if (s == VP_OK) s = vp_train_summary_json(&j.a, out, 0, &root);
        if (s == VP_OK) s = vp_train_summary_write(path, root);
        cJSON_Delete(root);
    }
    if (out->interrupted && j.opts->checkpoints) note(&j, "stopped: last.safetensors holds the run; --resume continues it");
    if (j.progress_on) vp_progress_finish(&j.prog);
    out->count = j.a.count;
    out->best_val_sharpe = j.a.best_val_sharpe;
    out->best_iteration = j.a.best_iteration;
    vp_run_close(&j.run);
    vp_algo_free(&j.a);
    if (s != VP_OK) return vp_error_context(s, "training run %s", out->run_dir);
    return VP_OK;
}
