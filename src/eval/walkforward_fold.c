/* One walk-forward fold: a fresh trainer on the fold's train span (or warm-started from the
 * previous fold's best parameters), validations on its val span keeping the best parameters
 * (best.safetensors), the exact backtest of its test span with them, the fold's files, and
 * done.json last. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <dirent.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "eval/walkforward_impl.h"
#include "learn/train_report.h"
#include "vulpes/backtest.h"
#include "vulpes/ops.h"

/* What a fold works with. */
typedef struct fold_job {
    vp_wf_ctx* c;
    vp_backend* b;        /* this fold's backend (its own when folds run in parallel) */
    int64_t k;
    vp_train_data view;   /* the shared data with this fold's split (owns nothing) */
    vp_trainer t;
    vp_run run;           /* the fold's folder and metrics.jsonl */
    int run_open;
    vp_wf_brief* brief;   /* the fold's figures for the caller */
} fold_job;

void vp_wf_empty_dir(const char* dir) {
    DIR* d = opendir(dir);
    if (!d) return;
    struct dirent* e;
    char p[VP_RUN_PATH_MAX + 300];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        remove(p);
    }
    closedir(d);
}

/* A progress line (when progress is on). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(const fold_job* f, const char* fmt, ...) {
    FILE* out = f->c->opts->progress;
    if (!out) return;
    // one whole line even when folds run in parallel
    flockfile(out);
    fprintf(out, "fold %lld/%lld: ", (long long)(f->k + 1), (long long)f->c->n_folds);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(out, fmt, ap);
    va_end(ap);
    fputc('\n', out);
    fflush(out);
    funlockfile(out);
}

/* A validation of the online parameters; a new best is kept and saved. */
static vp_status evaluate(fold_job* f) {
    vp_trainer* t = &f->t;
    vp_eval_result r;
    VP_TRY(vp_trainer_validate(t, NULL, &r));
    const double sh = r.strategy.sharpe;
    const int best = !isnan(sh) && (isnan(t->best_val_sharpe) || sh > t->best_val_sharpe);
    VP_TRY(vp_train_log_eval(&f->run.metrics, t, &r, best));
    say(f, "iteration %lld, validation Sharpe %.3f%s", (long long)t->count.iteration, sh, best ? " (best)" : "");
    if (!best) return VP_OK;
    t->best_val_sharpe = sh;
    t->best_iteration = t->count.iteration;
    VP_TRY(vp_copy(t->backend, &t->learner.model.params, &t->best_params));
    char path[VP_RUN_PATH_MAX];
    VP_TRY(vp_run_path(&f->run, "best.safetensors", path, sizeof path));
    VP_TRY(vp_trainer_save(t, path, VP_CKPT_BEST));
    return vp_train_log_checkpoint(&f->run.metrics, t, "best.safetensors", "best");
}

/* Training: warm start, warm-up, iterations with logs and validations; *stopped on request. */
static vp_status train(fold_job* f, int* stopped) {
    vp_trainer* t = &f->t;
    const vp_config_train* tc = &f->c->cfg->train;
    if (f->c->wf->warm_start && f->k > 0) {
        // the previous fold's selected parameters, as online, target and best
        char prev[VP_RUN_PATH_MAX];
        VP_TRY(vp_wf_fold_file(f->c, f->k - 1, "best.safetensors", prev, sizeof prev));
        VP_TRY(vp_trainer_load_params(t, prev, &t->learner.model.params));
        VP_TRY(vp_learner_sync_target(&t->learner));
        VP_TRY(vp_copy(t->backend, &t->learner.model.params, &t->best_params));
    }
    VP_TRY(vp_trainer_warmup(t));
    VP_TRY(vp_train_log_run(&f->run.metrics, t, 0));
    const volatile sig_atomic_t* stop = f->c->opts->stop;
    while (t->count.iteration < tc->iterations) {
        VP_TRY(vp_trainer_iterate(t, 1));
        const int64_t it = t->count.iteration;
        const int last = it == tc->iterations;
        if (it % tc->log_every == 0 || last) {
            vp_train_stats st;
            VP_TRY(vp_trainer_stats(t, &st));
            VP_TRY(vp_train_log_train(&f->run.metrics, t, &st));
        }
        if ((tc->eval_every > 0 && it % tc->eval_every == 0) || last) VP_TRY(evaluate(f));
        if (((stop && *stop) || f->c->halt) && !last) {
            *stopped = 1;
            return VP_OK;
        }
    }
    // no validation scored: the final parameters are the fold's selection
    if (t->best_iteration >= 0) return VP_OK;
    char path[VP_RUN_PATH_MAX];
    VP_TRY(vp_copy(t->backend, &t->learner.model.params, &t->best_params));
    VP_TRY(vp_run_path(&f->run, "best.safetensors", path, sizeof path));
    return vp_trainer_save(t, path, VP_CKPT_BEST);
}

/* done.json: the fold's spans and selection, written last. */
static vp_status write_done(const fold_job* f) {
    const vp_split* s = &f->c->folds[f->k];
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "done.json: out of memory");
    cJSON_AddNumberToObject(root, "fold", (double)f->k);
    const vp_span* sp[3] = {&s->train, &s->val, &s->test};
    static const char* names[3] = {"train", "val", "test"};
    for (int i = 0; i < 3; ++i) {
        const double be[2] = {(double)sp[i]->begin, (double)sp[i]->end};
        cJSON_AddItemToObject(root, names[i], cJSON_CreateDoubleArray(be, 2));
    }
    vp_status st = vp_metric_json_add(root, "val_sharpe_ratio", f->t.best_val_sharpe);
    cJSON_AddNumberToObject(root, "best_iteration", (double)f->t.best_iteration);
    cJSON_AddNumberToObject(root, "iterations", (double)f->t.count.iteration);
    cJSON_AddBoolToObject(root, "warm_start", f->c->wf->warm_start && f->k > 0);
    char* text = st == VP_OK ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    VP_REQUIRE(st == VP_OK && text != NULL, VP_ERR_OOM, "done.json: out of memory");
    char path[VP_RUN_PATH_MAX];
    st = vp_run_path(&f->run, "done.json", path, sizeof path);
    if (st == VP_OK) st = vp_file_write_atomic(path, text, strlen(text));
    free(text);
    return st;
}

/* The exact backtest of the test span with the selected parameters, and the fold's files. */
static vp_status test(fold_job* f) {
    vp_trainer* t = &f->t;
    const vp_tensor* params = &t->best_params;
    vp_rollout_cfg bc = vp_rollout_cfg_default();
    bc.instrument = t->parts.instrument;
    bc.episode_bars = t->parts.env.episode_bars;
    bc.fused = f->c->opts->fused;
    bc.annual = f->c->annual;
    vp_rollout_data d = {&f->view.bars, f->view.atr, &t->features, f->view.split.test};
    vp_rollout_result r;
    vp_status s = vp_backtest_run(t->backend, &t->learner.model, params, &d, &bc, &r);
    char title[64], ck[VP_RUN_PATH_MAX];
    snprintf(title, sizeof title, "walk-forward fold %lld: test", (long long)f->k);
    if (s == VP_OK) s = vp_run_path(&f->run, "best.safetensors", ck, sizeof ck);
    vp_backtest_info info = {title, ck, f->view.source, f->c->config_yaml, &f->view.bars};
    if (s == VP_OK) s = vp_backtest_write(&r, &info, f->run.dir);
    if (s == VP_OK) {
        say(f, "test Sharpe %.3f, total return %.2f %%", r.summary.strategy.sharpe,
            100.0 * r.summary.strategy.total_return);
        vp_wf_brief* b = f->brief;
        b->val_sharpe = t->best_val_sharpe;
        b->best_iteration = t->best_iteration;
        b->test_sharpe = r.summary.strategy.sharpe;
        b->test_return = r.summary.strategy.total_return;
        b->test_trades = r.n_trades;
    }
    vp_rollout_result_free(&r);
    return s;
}

vp_status vp_wf_fold_run(vp_wf_ctx* c, vp_backend* b, int64_t k, int* stopped, vp_wf_brief* brief) {
    fold_job f;
    memset(&f, 0, sizeof f);
    f.c = c;
    f.b = b;
    f.k = k;
    f.brief = brief;
    *stopped = 0;
    // the fold's view of the data, its folder emptied and opened
    f.view = c->data;
    f.view.split = c->folds[k];
    char dir[VP_RUN_PATH_MAX];
    VP_TRY(vp_wf_fold_dir(c, k, dir, sizeof dir));
    vp_wf_empty_dir(dir);  // a fold left unfinished runs again from its start
    const vp_split* s = &c->folds[k];
    say(&f, "train bars %lld..%lld, validation %lld..%lld, test %lld..%lld", (long long)s->train.begin,
        (long long)s->train.end - 1, (long long)s->val.begin, (long long)s->val.end - 1, (long long)s->test.begin,
        (long long)s->test.end - 1);
    vp_status st = vp_run_open(&f.run, dir, VP_RUN_FORCE, &c->fold_cfg);
    f.run_open = st == VP_OK;
    if (st == VP_OK) st = vp_trainer_init(&f.t, b, &c->fold_cfg, &f.view);
    if (st == VP_OK) st = train(&f, stopped);
    if (st == VP_OK && !*stopped) st = test(&f);
    if (st == VP_OK && !*stopped) st = write_done(&f);
    vp_trainer_free(&f.t);
    if (f.run_open) vp_run_close(&f.run);
    if (st != VP_OK) return vp_error_context(st, "fold %lld", (long long)k);
    return VP_OK;
}
