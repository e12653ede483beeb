/* The whole training job: run folder, data, trainer, warm-up (or resume), the loop with
 * its logs, validations and checkpoints, an orderly stop on request, then the test span
 * and summary.json. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "learn/train_report.h"
#include "vulpes/ops.h"

vp_train_opts vp_train_opts_default(void) {
    vp_train_opts o;
    memset(&o, 0, sizeof o);
    o.progress_interval_s = 1.0;
    o.mode = VP_RUN_CREATE;
    return o;
}

/* State of one job between its phases. */
typedef struct job {
    const vp_train_opts* opts; /* reporting and stopping */
    vp_trainer t;              /* everything that trains */
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
    vp_trainer* t = &j->t;
    vp_train_stats st;
    VP_TRY(vp_trainer_stats(t, &st));
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
    j->last_loss = st.learner[VP_STAT_LOSS];
    // Non-finite learner steps are counted, not fatal: say so when the count grows.
    const int64_t nan_steps = (int64_t)st.learner[VP_STAT_NAN_STEPS];
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
                                st.epsilon, j->last_val};
        vp_progress_update(&j->prog, &ps, now);
    }
    return VP_OK;
}

/* Writes last.safetensors and its event. */
static vp_status save_last(job* j, const char* reason) {
    char path[VP_RUN_PATH_MAX];
    VP_TRY(run_file(j, "last.safetensors", path, sizeof path));
    VP_TRY(vp_trainer_save(&j->t, path, VP_CKPT_RESUME));
    return vp_train_log_checkpoint(&j->run.metrics, &j->t, "last.safetensors", reason);
}

/* Validates the online parameters; a new best is kept and written to best.safetensors. */
static vp_status evaluate(job* j, vp_eval_result* r) {
    vp_trainer* t = &j->t;
    VP_TRY(vp_trainer_validate(t, NULL, r));
    const double sh = r->strategy.sharpe;
    const int best = !isnan(sh) && (isnan(t->best_val_sharpe) || sh > t->best_val_sharpe);
    VP_TRY(vp_train_log_eval(&j->run.metrics, t, r, best));
    j->last_val = sh;
    if (!best) return VP_OK;
    t->best_val_sharpe = sh;
    t->best_iteration = t->count.iteration;
    VP_TRY(vp_copy(t->backend, &t->learner.model.params, &t->best_params));
    char path[VP_RUN_PATH_MAX];
    VP_TRY(run_file(j, "best.safetensors", path, sizeof path));
    VP_TRY(vp_trainer_save(t, path, VP_CKPT_BEST));
    return vp_train_log_checkpoint(&j->run.metrics, t, "best.safetensors", "best");
}

/* The run folder and the starting state: a fresh run's warm-up, or a resume's checkpoint. */
static vp_status start(job* j, const vp_config* cfg, const char* dir) {
    vp_trainer* t = &j->t;
    char path[VP_RUN_PATH_MAX];
    if (j->opts->mode != VP_RUN_RESUME) {
        VP_TRY(vp_run_open(&j->run, dir, j->opts->mode, cfg));
        VP_TRY(vp_trainer_warmup(t));
        return vp_train_log_run(&j->run.metrics, t, 0);
    }
    // Resume: state from last.safetensors (config checked), metrics cut back to it.
    VP_TRY(dir_file(dir, "last.safetensors", path, sizeof path));
    VP_TRY(vp_trainer_load(t, path));
    VP_REQUIRE(t->count.iteration < cfg->train.iterations, VP_ERR_INVALID_ARG,
               "%s holds %lld iterations and train.iterations is %lld: raise train.iterations to continue", path,
               (long long)t->count.iteration, (long long)cfg->train.iterations);
    if (t->best_iteration >= 0) {
        VP_TRY(dir_file(dir, "best.safetensors", path, sizeof path));
        VP_TRY(vp_trainer_load_params(t, path, &t->best_params));
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
    vp_trainer* t = &j->t;
    const vp_config_train* tc = &t->cfg.train;
    const vp_train_opts* o = j->opts;
    while (t->count.iteration < tc->iterations) {
        VP_TRY(vp_trainer_iterate(t, 1));
        const int64_t it = t->count.iteration;
        const int last = it == tc->iterations;
        const int stop = (o->stop && *o->stop) || (o->stop_after > 0 && it >= o->stop_after);
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

/* After the last iteration: the test span with the best parameters (the final ones when no
 * validation scored), the caller's finishing step (the exact backtest's files under `vulpes
 * train`), then summary.json, written also when that step fails. */
static vp_status finish(job* j, vp_train_result* out) {
    vp_trainer* t = &j->t;
    const vp_tensor* params = t->best_iteration >= 0 ? &t->best_params : &t->learner.model.params;
    vp_validator* test = NULL;
    VP_TRY(vp_validator_init(&test, t->backend, &t->learner.model, &t->features, t->data, t->data->split.test,
                             &t->parts.instrument, t->cfg.env.episode_bars));
    vp_status s = vp_validator_run(test, params, &out->test);
    vp_validator_free(test);
    VP_TRY(s);
    cJSON* root = NULL;
    VP_TRY(vp_train_summary_json(t, out, 1, t->best_iteration >= 0 ? "best" : "final", &root));
    // The finishing step adds its keys to the summary.
    if (j->opts->finish) s = j->opts->finish(j->opts->finish_ctx, t, params, j->run.dir, root);
    char path[VP_RUN_PATH_MAX];
    vp_status w = run_file(j, "summary.json", path, sizeof path);
    if (w == VP_OK) w = vp_train_summary_write(path, root);
    cJSON_Delete(root);
    if (s != VP_OK) return vp_error_context(s, "the end of the run (summary.json written without it)");
    return w;
}

vp_status vp_train_run(const vp_config* cfg, vp_backend* b, const vp_train_opts* opts, vp_train_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_train_run: cfg, backend or out is NULL");
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

    // Data, then every part of the run.
    vp_train_data d;
    VP_TRY(vp_train_data_load(&d, cfg));
    vp_status s = vp_trainer_init(&j.t, b, cfg, &d);
    if (s == VP_OK) s = start(&j, cfg, out->run_dir);
    if (s == VP_OK) {
        // Progress counts from here, so a resumed run's rates are its own.
        j.t0 = j.t_log = vp_clock_s();
        j.at_log = j.t.count;
        if (j.opts->progress) {
            vp_progress_stats st = {j.t.count.iteration, j.t.count.env_steps, j.t.count.learner_steps, NAN, NAN, NAN};
            vp_progress_init(&j.prog, j.opts->progress, j.opts->progress_tty, cfg->train.iterations,
                             j.opts->progress_interval_s, j.t0, &st);
            j.progress_on = 1;
        }
        s = loop(&j, out);
    }
    if (s == VP_OK && !out->interrupted) s = finish(&j, out);
    if (s == VP_OK && out->interrupted) {
        char path[VP_RUN_PATH_MAX];
        s = run_file(&j, "summary.json", path, sizeof path);
        if (s == VP_OK) s = vp_train_write_summary(path, &j.t, out, 0, "");
        note(&j, "stopped: last.safetensors holds the run; --resume continues it");
    }
    if (j.progress_on) vp_progress_finish(&j.prog);
    out->count = j.t.count;
    out->best_val_sharpe = j.t.best_val_sharpe;
    out->best_iteration = j.t.best_iteration;
    vp_run_close(&j.run);
    vp_trainer_free(&j.t);
    vp_train_data_free(&d);
    if (s != VP_OK) return vp_error_context(s, "training run %s", out->run_dir);
    return VP_OK;
}
