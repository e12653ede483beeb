/* One walk-forward fold: the training loop (vp_train_run_data) on the fold's data view and
 * folder, from scratch or warm-started from the previous fold's best parameters, selecting on
 * its val span, its progress forwarded to the walk-forward's line; at the end the loop's exact
 * backtest of its test span with the selected parameters becomes the fold's files
 * (best.safetensors always: the final parameters when no validation scored), and done.json
 * (with whether and how the test window ruined) is written last. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <cjson/cJSON.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "eval/walkforward_impl.h"
#include "vulpes/algo.h"
#include "vulpes/backtest.h"
#include "vulpes/metrics.h"

/* What a fold works with. */
typedef struct fold_job {
    vp_wf_ctx* c;
    int64_t k;              /* plan index (the fold's number is k + 1) */
    vp_train_data view;     /* the shared data with this fold's split (owns nothing) */
    vp_wf_brief* brief;     /* the fold's figures for the caller */
    vp_progress_sink sink;  /* the training loop's progress, into the walk-forward's line */
} fold_job;

/* A progress line (when progress is on). */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void say(const fold_job* f, const char* fmt, ...) {
    if (!f->c->opts->progress) return;
    // one whole line even when folds run in parallel ("fold K/N: ...")
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    vp_wf_progress_note(f->c, f->k, msg);
}

/* The training loop's progress sink: its figures and its notes (warm-up, warnings). */
static void sink_update(void* ctx, const vp_progress_stats* st) {
    const fold_job* f = (const fold_job*)ctx;
    vp_wf_progress_fold_update(f->c, f->k, st);
}

static void sink_note(void* ctx, const char* msg) {
    const fold_job* f = (const fold_job*)ctx;
    vp_wf_progress_note(f->c, f->k, msg);
}

/* A Sharpe ratio for a line: vp_metric_format's ("-" when undefined: the returns do not vary). */
static const char* sharpe_text(double v, char* buf, size_t n) {
    return vp_metric_format(v, VP_METRIC_UNIT_RATIO, buf, n);
}

/* The loop's hook after a validation: a progress line (its ruined windows marked). */
static void on_eval(void* ctx, int64_t iteration, const vp_eval_result* r, int best) {
    char ruined[64] = "", sh[48];
    if (r->ruined > 0)
        snprintf(ruined, sizeof ruined, ", %lld of %lld windows RUINED", (long long)r->ruined, (long long)r->windows);
    say((const fold_job*)ctx, "iteration %lld, validation Sharpe %s%s%s", (long long)iteration,
        sharpe_text(r->strategy.sharpe, sh, sizeof sh), ruined, best ? " (best)" : "");
}

/* The loop's stop poll: a stop request, or another fold's failure. */
static int should_stop(void* ctx) {
    const vp_wf_ctx* c = ((const fold_job*)ctx)->c;
    return (c->opts->stop && *c->opts->stop) || c->halt;
}

/* The loop's finishing step: the selection saved (the final parameters when no validation
 * scored), the test span's backtest written as the fold's files, the fold's figures. */
static vp_status finish(void* ctx, const vp_train_end* end, cJSON* test) {
    (void)test;
    fold_job* f = (fold_job*)ctx;
    vp_algo* a = end->algo;
    char ck[VP_RUN_PATH_MAX], title[64];
    VP_TRY(vp_wf_fold_file(f->c, f->k, "best.safetensors", ck, sizeof ck));
    if (a->best_iteration < 0) {
        VP_TRY(vp_algo_keep_best(a));
        VP_TRY(vp_algo_save(a, ck, VP_CKPT_BEST));
    }
    snprintf(title, sizeof title, "walk-forward fold %lld: test", (long long)(f->k + 1));
    vp_backtest_info info = {title, ck, f->view.source, f->c->config_yaml, &f->view.bars, NULL, a->instrument.tick_size,
                             end->val_trials, end->deflated_sharpe};
    VP_TRY(vp_backtest_write(end->test, &info, end->run_dir));
    const vp_perf* p = &end->test->summary.strategy;
    const vp_rollout_ruin* ru = &end->test->ruin;
    char when[32];
    if (ru->ruined)
        say(f, "test span RUINED at bar %lld (%s), equity %.2f after the close-out: not a normal result", (long long)ru->bar,
            vp_time_format_iso(ru->time_ms, when, sizeof when), ru->equity_after_close);
    char sh[48];
    say(f, "test Sharpe %s, total return %.2f %%%s", sharpe_text(p->sharpe, sh, sizeof sh), 100.0 * p->total_return,
        ru->ruined ? " (ruined)" : "");
    vp_wf_brief* b = f->brief;
    b->val_sharpe = a->best_val_sharpe;
    b->best_iteration = a->best_iteration;
    b->test_sharpe = p->sharpe;
    b->test_return = p->total_return;
    b->test_trades = end->test->n_trades;
    b->test_ruined = ru->ruined != 0;
    b->ruin = *ru;
    return VP_OK;
}

/* done.json's "test_ruin": {bar, time, close_bar, close_time, equity_at_ruin, equity_after_close}
 * of the test window's ruin (the fold's own equity), or null. */
static vp_status add_ruin(const fold_job* f, cJSON* root) {
    const vp_rollout_ruin* ru = &f->brief->ruin;
    if (!f->brief->test_ruined) {
        VP_REQUIRE(cJSON_AddNullToObject(root, "test_ruin") != NULL, VP_ERR_OOM, "done.json: out of memory");
        return VP_OK;
    }
    char t[32];
    const int64_t* time_ms = f->c->data.bars.time_ms;
    cJSON* o = cJSON_AddObjectToObject(root, "test_ruin");
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "done.json: out of memory");
    cJSON_AddNumberToObject(o, "bar", (double)ru->bar);
    cJSON_AddStringToObject(o, "time", vp_time_format_iso(time_ms[ru->bar], t, sizeof t));
    cJSON_AddNumberToObject(o, "close_bar", (double)ru->close_bar);
    cJSON_AddStringToObject(o, "close_time", vp_time_format_iso(time_ms[ru->close_bar], t, sizeof t));
    VP_TRY(vp_metric_json_add(o, "equity_at_ruin", ru->equity_at_ruin));
    return vp_metric_json_add(o, "equity_after_close", ru->equity_after_close);
}

/* done.json: the fold's spans and selection, whether and how its test window ruined, written last. */
static vp_status write_done(const fold_job* f, const vp_train_result* r) {
    const vp_split* s = &f->c->folds[f->k];
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "done.json: out of memory");
    cJSON_AddNumberToObject(root, "fold", (double)(f->k + 1));
    const vp_span* sp[3] = {&s->train, &s->val, &s->test};
    static const char* names[3] = {"train", "val", "test"};
    for (int i = 0; i < 3; ++i) {
        const double be[2] = {(double)sp[i]->begin, (double)sp[i]->end};
        cJSON_AddItemToObject(root, names[i], cJSON_CreateDoubleArray(be, 2));
    }
    vp_status st = vp_metric_json_add(root, "val_sharpe_ratio", r->best_val_sharpe);
    cJSON_AddNumberToObject(root, "best_iteration", (double)r->best_iteration);
    cJSON_AddNumberToObject(root, "iterations", (double)r->count.iteration);
    cJSON_AddBoolToObject(root, "warm_start", f->c->wf->warm_start && f->k > 0);
    cJSON_AddBoolToObject(root, "test_ruined", f->brief->test_ruined);
    if (st == VP_OK) st = add_ruin(f, root);
    char* text = st == VP_OK ? cJSON_Print(root) : NULL;
    cJSON_Delete(root);
    VP_REQUIRE(st == VP_OK && text != NULL, VP_ERR_OOM, "done.json: out of memory");
    char path[VP_RUN_PATH_MAX];
    st = vp_wf_fold_file(f->c, f->k, "done.json", path, sizeof path);
    if (st == VP_OK) st = vp_file_write_atomic(path, text, strlen(text));
    free(text);
    return st;
}

vp_status vp_wf_fold_run(vp_wf_ctx* c, vp_backend* b, int64_t k, int* stopped, vp_wf_brief* brief) {
    fold_job f;
    memset(&f, 0, sizeof f);
    f.c = c;
    f.k = k;
    f.brief = brief;
    *stopped = 0;
    // the fold's view of the data, its folder emptied (a fold left unfinished runs again from its start)
    f.view = c->data;
    f.view.split = c->folds[k];
    char dir[VP_RUN_PATH_MAX], prev[VP_RUN_PATH_MAX];
    VP_TRY(vp_wf_fold_dir(c, k, dir, sizeof dir));
    vp_wf_empty_dir(dir);
    const vp_split* s = &c->folds[k];
    char tr[96], va[96], te[96];
    say(&f, "train %s, validation %s, test %s, on %s", vp_wf_span_text(c, s->train, tr, sizeof tr),
        vp_wf_span_text(c, s->val, va, sizeof va), vp_wf_span_text(c, s->test, te, sizeof te), vp_backend_name(b));
    // the training loop: no resume checkpoints (an unfinished fold starts over), the fold's own files
    vp_train_opts o = vp_train_opts_default();
    o.mode = VP_RUN_FORCE;
    o.run_dir = dir;
    o.checkpoints = 0;
    o.summary = 0;
    o.fused = c->opts->fused;
    o.finish = finish;
    o.on_eval = on_eval;
    o.should_stop = should_stop;
    o.ctx = &f;
    f.sink.update = sink_update, f.sink.note = sink_note, f.sink.ctx = &f;
    if (c->opts->progress) o.progress_sink = &f.sink;
    vp_status st = VP_OK;
    if (c->wf->warm_start && k > 0) {
        // the previous fold's selected parameters
        st = vp_wf_fold_file(c, k - 1, "best.safetensors", prev, sizeof prev);
        o.init_params = prev;
    }
    vp_train_result r;
    vp_wf_progress_fold_begin(c, k);
    if (st == VP_OK) st = vp_train_run_data(&c->fold_cfg, b, &f.view, &o, &r);
    if (st == VP_OK) *stopped = r.interrupted;
    if (st == VP_OK && !*stopped) st = write_done(&f, &r);
    vp_wf_progress_fold_end(c, k, st == VP_OK && !*stopped);
    if (st != VP_OK) return vp_error_context(st, "fold %lld", (long long)(k + 1));
    return VP_OK;
}
