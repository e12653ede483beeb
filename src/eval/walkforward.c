/* The walk-forward job: the folds, the folder (new, replaced or resumed), the fold loop,
 * and the stitched results of the finished folds. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "eval/job_pool.h"
#include "eval/walkforward_impl.h"

vp_status vp_wf_plan(const vp_config* cfg, int64_t n_bars, int64_t warmup, vp_split* folds, int64_t cap,
                     int64_t* n_folds) {
    VP_REQUIRE(cfg != NULL && n_folds != NULL, VP_ERR_INVALID_ARG, "vp_wf_plan: NULL argument");
    const vp_config_walkforward* wf = &cfg->walkforward;
    VP_REQUIRE(wf->max_folds >= 0, VP_ERR_INVALID_ARG, "walk-forward: max folds %lld (>= 0)",
               (long long)wf->max_folds);
    vp_walkforward_cfg w = {wf->train_bars, wf->val_bars, wf->test_bars, wf->step_bars > 0 ? wf->step_bars : wf->test_bars,
                            wf->embargo_bars >= 0 ? wf->embargo_bars : cfg->split.embargo, warmup, wf->anchored};
    vp_status s = vp_walkforward_make(n_bars, &w, folds, cap, n_folds);
    if (s != VP_OK) return vp_error_context(s, "walk-forward folds of %lld bars", (long long)n_bars);
    if (wf->max_folds > 0 && *n_folds > wf->max_folds) *n_folds = wf->max_folds;
    return VP_OK;
}

/* ---- the folder ----------------------------------------------------------------------------------- */

/* walkforward.json's text: the settings and every fold's spans (compared on a resume): folds
 * numbered from 1, each span [begin_bar, end_bar) as a pair. */
static vp_status plan_text(const vp_wf_ctx* c, char** out) {
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "walkforward.json: out of memory");
    const vp_config_walkforward* w = c->wf;
    cJSON_AddNumberToObject(root, "train_bars", (double)w->train_bars);
    cJSON_AddNumberToObject(root, "val_bars", (double)w->val_bars);
    cJSON_AddNumberToObject(root, "test_bars", (double)w->test_bars);
    cJSON_AddNumberToObject(root, "step_bars", (double)(w->step_bars > 0 ? w->step_bars : w->test_bars));
    cJSON_AddNumberToObject(root, "embargo_bars", (double)(w->embargo_bars >= 0 ? w->embargo_bars : c->cfg->split.embargo));
    cJSON_AddBoolToObject(root, "anchored", w->anchored);
    cJSON_AddBoolToObject(root, "warm_start", w->warm_start);
    cJSON_AddNumberToObject(root, "max_folds", (double)w->max_folds);
    cJSON_AddNumberToObject(root, "warmup_bars", (double)c->data.warmup);
    cJSON_AddNumberToObject(root, "n_bars", (double)c->data.bars.n);
    cJSON_AddStringToObject(root, "data", c->data.source);
    cJSON* arr = cJSON_AddArrayToObject(root, "folds");
    for (int64_t k = 0; k < c->n_folds; ++k) {
        const vp_split* s = &c->folds[k];
        cJSON* f = cJSON_CreateObject();
        cJSON_AddItemToArray(arr, f);
        cJSON_AddNumberToObject(f, "fold", (double)(k + 1));
        const vp_span* sp[3] = {&s->train, &s->val, &s->test};
        static const char* names[3] = {"train", "val", "test"};
        for (int i = 0; i < 3; ++i) {
            const double be[2] = {(double)sp[i]->begin, (double)sp[i]->end};
            cJSON_AddItemToObject(f, names[i], cJSON_CreateDoubleArray(be, 2));
        }
    }
    *out = cJSON_Print(root);
    cJSON_Delete(root);
    VP_REQUIRE(*out != NULL, VP_ERR_OOM, "walkforward.json: out of memory");
    return VP_OK;
}

/* A resume's checks: the folder's plan has the same folds, and its config equals cfg (run.*
 * and walkforward.parallel aside; the fold settings are the plan's). */
static vp_status check_resume(const vp_wf_ctx* c, const char* plan) {
    char path[VP_RUN_PATH_MAX + 32], *text = NULL;
    VP_TRY(vp_wf_top_file(c, "walkforward.json", path, sizeof path));
    vp_status s = vp_wf_read_file(path, &text);
    if (s != VP_OK) return vp_error_context(s, "cannot resume the walk-forward in %s: no walkforward.json", c->opts->dir);
    const size_t n = strlen(plan);
    const int same = strlen(text) == n + 1 && strncmp(text, plan, n) == 0;
    free(text);
    VP_REQUIRE(same, VP_ERR_INVALID_ARG, "cannot resume the walk-forward in %s: its walkforward.json plans other folds "
               "(other lengths, step, embargo or data); --force starts over", c->opts->dir);
    VP_TRY(vp_wf_top_file(c, "config.yaml", path, sizeof path));
    vp_config old;
    vp_config_defaults(&old);
    VP_TRY(vp_config_load_file(&old, path));
    old.run = c->cfg->run;
    old.walkforward = c->cfg->walkforward; // the plan holds the folds; how many at once does not change them
    const vp_config_key* k = vp_config_diff(&old, c->cfg);
    VP_REQUIRE(k == NULL, VP_ERR_INVALID_ARG, "cannot resume the walk-forward in %s: %s differs from its config.yaml",
               c->opts->dir, k ? k->name : "");
    return VP_OK;
}

/* Claims the folder per opts->mode into *run (locked until the caller closes it), checks a
 * resume's plan and config before anything changes, then writes the plan of a new one (a
 * forced start moves the earlier walk-forward's files, folds/ included, aside). */
static vp_status open_dir(vp_wf_ctx* c, vp_run* run) {
    char* plan = NULL;
    VP_TRY(plan_text(c, &plan));
    vp_status s = vp_run_claim(run, c->opts->dir, c->opts->mode);
    if (s == VP_OK && c->opts->mode == VP_RUN_RESUME) s = check_resume(c, plan);
    if (s == VP_OK) s = vp_run_begin(run, c->cfg);
    if (s == VP_OK && c->opts->mode != VP_RUN_RESUME) {
        char path[VP_RUN_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/walkforward.json", c->opts->dir);
        size_t n = strlen(plan);
        plan[n] = '\n';
        s = vp_file_write_atomic(path, plan, n + 1);
    }
    free(plan);
    char folds[VP_RUN_PATH_MAX + 8];
    snprintf(folds, sizeof folds, "%s/folds", c->opts->dir);
    if (s == VP_OK && mkdir(folds, 0777) != 0 && access(folds, F_OK) != 0)
        s = vp_set_error(VP_ERR_IO, VP_WHERE, "cannot make folder %s", folds);
    return s;
}

/* ---- the run ---------------------------------------------------------------------------------------- */

void vp_wf_result_free(vp_wf_result* r) {
    if (!r) return;
    free(r->folds);
    free(r->bar);
    free(r->fold);
    free(r->equity);
    free(r->benchmark);
    free(r->position);
    memset(r, 0, sizeof *r);
}

/* Appends a "fold" event for finished plan fold k (fold number k + 1) to DIR/metrics.jsonl. */
static vp_status log_fold(const vp_wf_ctx* c, int64_t k, const vp_wf_brief* b) {
    char path[VP_RUN_PATH_MAX + 16];
    VP_TRY(vp_wf_top_file(c, "metrics.jsonl", path, sizeof path));
    vp_metrics_log m;
    VP_TRY(vp_metrics_log_open(&m, path, 1));
    const vp_split* s = &c->folds[k];
    vp_status st = vp_metrics_log_begin(&m, "fold");
    if (st == VP_OK) st = vp_metrics_log_int(&m, "fold", k + 1);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "train_begin_bar", s->train.begin);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "train_end_bar", s->train.end);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "val_begin_bar", s->val.begin);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "val_end_bar", s->val.end);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "test_begin_bar", s->test.begin);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "test_end_bar", s->test.end);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "best_iteration", b->best_iteration);
    if (st == VP_OK) st = vp_metrics_log_num(&m, "val_sharpe", b->val_sharpe);
    if (st == VP_OK) st = vp_metrics_log_num(&m, "test_sharpe", b->test_sharpe);
    if (st == VP_OK) st = vp_metrics_log_num(&m, "test_total_return_frac", b->test_return);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "test_trades", b->test_trades);
    if (st == VP_OK) st = vp_metrics_log_int(&m, "test_ruined", b->test_ruined);
    if (st == VP_OK) st = vp_metrics_log_end(&m);
    vp_metrics_log_close(&m);
    return st;
}

/* The fold loop: finished folds are skipped, the unfinished ones run (up to opts->parallel at
 * once); the folds finished by this call are logged in fold order, and the finished prefix
 * (folds 0 .. n_done-1) is what the stitched result covers. */
static vp_status run_folds(vp_wf_ctx* c, vp_wf_result* out) {
    unsigned char* finished = (unsigned char*)calloc((size_t)c->n_folds + 1, 1);
    vp_wf_brief* briefs = (vp_wf_brief*)calloc((size_t)c->n_folds + 1, sizeof(vp_wf_brief));
    vp_status s = finished && briefs ? VP_OK
                                     : vp_set_error(VP_ERR_OOM, VP_WHERE, "walk-forward: %lld folds", (long long)c->n_folds);
    if (s == VP_OK) s = vp_wf_pool_run(c, finished, briefs);
    // the fold events, also of the folds that finished before a failure
    vp_status ls = VP_OK;
    for (int64_t k = 0; k < c->n_folds && finished && briefs && ls == VP_OK; ++k)
        if (finished[k]) {
            ls = log_fold(c, k, &briefs[k]);
            c->done_this_call++;
        }
    free(finished);
    free(briefs);
    VP_TRY(s);
    VP_TRY(ls);
    int64_t k = 0;
    while (k < c->n_folds && vp_wf_fold_is_done(c, k)) ++k;
    out->interrupted = k < c->n_folds;
    out->n_done = k;
    return VP_OK;
}

vp_status vp_walkforward_run(const vp_config* cfg, vp_backend* b, const vp_wf_opts* opts, vp_wf_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && opts != NULL && opts->dir != NULL && out != NULL,
               VP_ERR_INVALID_ARG, "vp_walkforward_run: NULL argument");
    memset(out, 0, sizeof *out);
    snprintf(out->dir, sizeof out->dir, "%s", opts->dir);
    VP_TRY(vp_config_check(cfg));
    VP_TRY(vp_job_pool_check_devices(cfg->run.devices, b));
    // the walk-forward records data.path absolute (config.yaml, folds), so a resume works from any folder
    vp_config run_cfg = *cfg;
    VP_TRY(vp_config_absolute_data_path(&run_cfg));
    cfg = &run_cfg;
    vp_wf_ctx c;
    memset(&c, 0, sizeof c);
    c.cfg = cfg, c.b = b, c.wf = &cfg->walkforward, c.opts = opts;
    c.fold_cfg = *cfg;
    c.fold_cfg.walkforward.parallel = 1;

    // data, the folds, the folder; then every unfinished fold and the stitched result
    vp_status s = vp_train_data_load(&c.data, cfg);
    if (s == VP_OK) s = vp_annual_measure(c.data.bars.time_ms, c.data.bars.n, &c.annual);
    c.annual.risk_free_rate = cfg->metrics.risk_free_rate;
    if (s == VP_OK) s = vp_wf_plan(cfg, c.data.bars.n, c.data.warmup, NULL, 0, &c.n_folds);
    if (s == VP_OK) {
        c.folds = (vp_split*)calloc((size_t)c.n_folds, sizeof(vp_split));
        int64_t n = 0;
        s = c.folds ? vp_wf_plan(cfg, c.data.bars.n, c.data.warmup, c.folds, c.n_folds, &n)
                    : vp_set_error(VP_ERR_OOM, VP_WHERE, "walk-forward: %lld folds", (long long)c.n_folds);
    }
    if (s == VP_OK) s = vp_config_to_yaml(cfg, &c.config_yaml);
    vp_run run;
    memset(&run, 0, sizeof run);
    if (s == VP_OK) s = open_dir(&c, &run);
    out->n_folds = c.n_folds;
    if (s == VP_OK) s = run_folds(&c, out);
    const int64_t n_done = out->n_done;
    const int interrupted = out->interrupted;
    if (s == VP_OK && n_done > 0) s = vp_wf_stitch(&c, n_done, out);
    out->n_done = n_done, out->interrupted = interrupted, out->n_folds = c.n_folds;
    if (s == VP_OK && n_done > 0) s = vp_wf_write(&c, out);
    vp_run_close(&run);
    free(c.folds);
    free(c.config_yaml);
    vp_train_data_free(&c.data);
    if (s != VP_OK) return vp_error_context(s, "walk-forward in %s", opts->dir);
    return VP_OK;
}
