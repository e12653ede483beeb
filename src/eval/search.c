/* The search job: the plan (the space and counts given, or a resumed folder's), every trial's
 * config, network and data checked before the folder is touched, the folder (new, replaced or
 * resumed), the rungs one after the other through the job pool, each finished rung's scores
 * recorded, then the table read back from the trial folders. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_pool.h"
#include "eval/job_read.h"
#include "eval/search_impl.h"
#include "vulpes/model.h"
#include "vulpes/train.h"

void vp_search_result_free(vp_search_result* r) {
    if (!r) return;
    free(r->trials);
    memset(r, 0, sizeof *r);
}

/* ---- the plan ------------------------------------------------------------------------------- */

/* A new search's plan from opts, every count checked. */
static vp_status plan_new(const vp_search_opts* o, vp_search_result* r) {
    VP_REQUIRE(o->space != NULL && o->space->n_params >= 1, VP_ERR_INVALID_ARG, "a search needs a space of 1 or more keys");
    VP_REQUIRE(o->trials >= 1 && o->trials <= VP_SEARCH_MAX_TRIALS, VP_ERR_INVALID_ARG,
               "a search takes 1 to %d trials, got %lld", VP_SEARCH_MAX_TRIALS, (long long)o->trials);
    VP_REQUIRE(o->seed >= 0, VP_ERR_INVALID_ARG, "the search seed must be >= 0, got %lld", (long long)o->seed);
    r->space = *o->space;
    r->n_trials = o->trials, r->eta = o->eta, r->min_iterations = o->min_iterations, r->seed = o->seed;
    return vp_search_budgets(r->base.train.iterations, r->eta, r->min_iterations, r->n_trials, r->budgets,
                             &r->n_rungs);
}

/* A resume's plan from the folder; what opts gives besides must be the same. */
static vp_status plan_resume(const vp_search_opts* o, vp_search_result* r) {
    VP_TRY(vp_search_plan_read(r));
    const char* what[4] = {"--trials", "--eta", "--min-iterations", "--seed"};
    const int64_t given[4] = {o->trials, o->eta, o->min_iterations, o->seed};
    const int64_t plan[4] = {r->n_trials, r->eta, r->min_iterations, r->seed};
    for (int i = 0; i < 4; ++i)
        VP_REQUIRE(given[i] < 0 || given[i] == plan[i], VP_ERR_INVALID_ARG,
                   "cannot resume the search in %s: %s %lld differs from its plan's %lld (search.json)", r->dir,
                   what[i], (long long)given[i], (long long)plan[i]);
    if (!o->space) return VP_OK;
    char *a = NULL, *b = NULL;
    vp_status s = vp_search_space_to_yaml(o->space, &a);
    if (s == VP_OK) s = vp_search_space_to_yaml(&r->space, &b);
    const int same = s == VP_OK && strcmp(a, b) == 0;
    free(a);
    free(b);
    VP_TRY(s);
    VP_REQUIRE(same, VP_ERR_INVALID_ARG, "cannot resume the search in %s: the space given differs from its "
               "space.yaml", r->dir);
    return VP_OK;
}

/* The trials: folders, draws, configs checked, networks made, data loaded (shared where the
 * warm-up is the same): all before any file is made. */
static vp_status make_trials(vp_search_ctx* c, vp_train_data* data) {
    vp_search_result* r = c->r;
    for (int g = 0; g < r->n_rungs; ++g)
        r->rung_size[g] = g == 0 ? r->n_trials : vp_search_promote_count(r->rung_size[g - 1], r->eta);
    for (int64_t i = 0; i < r->n_trials; ++i) {
        vp_search_trial* t = &r->trials[i];
        const int w = snprintf(t->dir, sizeof t->dir, "%s/trial-%03lld", r->dir, (long long)i);
        VP_REQUIRE(w > 0 && (size_t)w < sizeof t->dir, VP_ERR_INVALID_ARG, "search folder path '%.200s' is too long",
                   r->dir);
        t->rung = -1;
        for (int g = 0; g < VP_SEARCH_MAX_RUNGS; ++g) t->score[g] = NAN;
        vp_search_sample(&r->space, (uint64_t)r->seed, i, &t->draw);
        c->cfg[i] = r->base;
        VP_TRY(vp_search_apply(&r->space, &t->draw, i, &c->cfg[i]));
        // the data of the first trial with the same warm-up
        const int64_t warm = vp_train_data_warmup(&c->cfg[i]);
        c->data[i] = NULL;
        for (int64_t j = 0; j < i && !c->data[i]; ++j)
            if (vp_train_data_warmup(&c->cfg[j]) == warm) c->data[i] = c->data[j];
        if (!c->data[i]) {
            vp_status s = vp_train_data_load(&data[i], &c->cfg[i]);
            if (s != VP_OK) return vp_error_context(s, "trial %lld: its data", (long long)i);
            c->data[i] = &data[i];
        }
        vp_train_parts parts;
        vp_status s = vp_train_parts_make(&c->cfg[i], c->data[i]->n_features, &parts);
        if (s == VP_OK) s = vp_model_cfg_check(&parts.learner.model);
        if (s != VP_OK) return vp_error_context(s, "trial %lld", (long long)i);
    }
    return VP_OK;
}

/* ---- the folder ---------------------------------------------------------------------------- */

/* Claims the folder per the mode (locked until the caller closes it); a new search writes its
 * plan and an empty rungs.json, a resume reads its finished rungs. */
static vp_status open_dir(vp_search_ctx* c, vp_run* run) {
    vp_search_result* r = c->r;
    vp_status s = vp_run_claim(run, r->dir, c->resume ? VP_RUN_RESUME : c->opts->mode);
    if (s == VP_OK && c->resume) s = vp_job_check_base(r->dir, &r->base, "search");
    if (s == VP_OK) s = vp_run_begin(run, &r->base);
    if (s == VP_OK && !c->resume) s = vp_search_plan_write(r);
    if (s == VP_OK) s = c->resume ? vp_search_rungs_read(r) : vp_search_rungs_write(r);
    return s;
}

/* ---- the rungs --------------------------------------------------------------------------------- */

static int job_is_done(void* ctx, int64_t k) {
    const vp_search_ctx* c = (const vp_search_ctx*)ctx;
    const vp_search_trial* t = &c->r->trials[c->members[k]];
    return (c->resume || c->rung > 0) && vp_search_run_done(t->dir, c->r->budgets[c->rung]);
}

static vp_status job_run(void* ctx, vp_backend* b, int64_t k, int* stopped) {
    vp_search_ctx* c = (vp_search_ctx*)ctx;
    return vp_search_job_run(c, b, c->members[k], stopped);
}

static void job_note(void* ctx, const char* msg) {
    vp_pool_runs_pool_note(&((vp_search_ctx*)ctx)->pool, "search", msg);
}

/* Rung g's trials m[n] through the job pool (each trial's config measured for device memory);
 * *complete set when every one reached the rung's iterations. */
static vp_status run_rung(vp_search_ctx* c, vp_backend* b, int g, const int64_t* m, int64_t n, int* complete) {
    vp_search_result* r = c->r;
    *complete = 0;
    int64_t cap = 0;
    if (c->opts->stop_after_runs > 0) {
        cap = c->opts->stop_after_runs - c->pool.started;
        if (cap <= 0) return VP_OK;
    }
    const vp_config** probe_cfg = (const vp_config**)calloc((size_t)n, sizeof(vp_config*));
    const vp_train_data** probe_data = (const vp_train_data**)calloc((size_t)n, sizeof(vp_train_data*));
    if (!probe_cfg || !probe_data) {
        free(probe_cfg);
        free(probe_data);
        VP_FAIL(VP_ERR_OOM, "search: %lld trials", (long long)n);
    }
    for (int64_t i = 0; i < n; ++i) probe_cfg[i] = &c->cfg[m[i]], probe_data[i] = c->data[m[i]];
    c->rung = g, c->members = m;
    char line[256];
    snprintf(line, sizeof line, "search: rung %d of %d: %lld %s, %lld iterations each", g, r->n_rungs,
             (long long)n, n == 1 ? "trial" : "trials", (long long)r->budgets[g]);
    vp_pool_runs_note(&c->pool, line);
    vp_job_pool p = {"search", "trial", "trials", n, c->opts->parallel, cap, c, job_is_done, job_run, job_note,
                     &c->pool.halt, probe_cfg, probe_data, (int)n, r->base.run.devices};
    // the rung's progress: the trial runs left, each at most the iterations this rung adds
    int64_t skipped = 0;
    for (int64_t k = 0; k < n; ++k) skipped += job_is_done(c, k);
    char what[64];
    snprintf(what, sizeof what, "rung %d: trials", g);
    vp_pool_runs_begin(&c->pool, what, skipped, n,
                       vp_job_pool_left(&p) * (r->budgets[g] - (g > 0 ? r->budgets[g - 1] : 0)));
    vp_status s = vp_job_pool_run(&p, b);
    free(probe_cfg);
    free(probe_data);
    VP_TRY(s);
    int all = 1;
    for (int64_t i = 0; i < n; ++i) {
        vp_search_trial* t = &r->trials[m[i]];
        if (vp_search_run_done(t->dir, r->budgets[g])) t->rung = g;
        else all = 0;
    }
    *complete = all;
    return VP_OK;
}

/* The rungs not yet finished, in order; after each its scores are recorded (rungs.json, a
 * "search_rung" event) and the next rung's trials follow from them. */
static vp_status run_rungs(vp_search_ctx* c, vp_backend* b, vp_run* run) {
    vp_search_result* r = c->r;
    vp_pool_runs* pr = &c->pool;
    int64_t* m = (int64_t*)malloc(2 * (size_t)r->n_trials * sizeof *m);
    pr->iters = (int64_t*)calloc(2 * (size_t)r->n_trials, sizeof(int64_t));
    if (!m || !pr->iters) {
        free(m);
        free(pr->iters);
        pr->iters = NULL;
        VP_FAIL(VP_ERR_OOM, "search: %lld trials", (long long)r->n_trials);
    }
    pr->n_slots = r->n_trials, pr->iter0 = pr->iters + r->n_trials;
    pr->interval_s = 10.0;
    vp_status s = VP_OK;
    for (int g = r->rungs_done; s == VP_OK && g < r->n_rungs; ++g) {
        const int64_t n = vp_search_rung_members(r, g, m);
        if (n < 0) {
            s = vp_set_error(VP_ERR_OOM, VP_WHERE, "search: %lld trials", (long long)r->n_trials);
            break;
        }
        int complete = 0;
        s = run_rung(c, b, g, m, n, &complete);
        if (s != VP_OK || !complete) break;
        for (int64_t i = 0; i < n; ++i) r->trials[m[i]].score[g] = vp_search_run_score(r->trials[m[i]].dir);
        r->rungs_done = g + 1;
        s = vp_search_rungs_write(r);
        // the event: the rung, its iterations, how many went on
        const int64_t k = g + 1 < r->n_rungs ? vp_search_rung_members(r, g + 1, m + r->n_trials) : 0;
        vp_metrics_log* ml = &run->metrics;
        if (s == VP_OK) s = vp_metrics_log_begin(ml, "search_rung");
        if (s == VP_OK) s = vp_metrics_log_int(ml, "rung", g);
        if (s == VP_OK) s = vp_metrics_log_int(ml, "iterations", r->budgets[g]);
        if (s == VP_OK) s = vp_metrics_log_int(ml, "trials", n);
        if (s == VP_OK) s = vp_metrics_log_int(ml, "promoted", k);
        if (s == VP_OK) s = vp_metrics_log_end(ml);
        char line[160];
        if (g + 1 < r->n_rungs)
            snprintf(line, sizeof line, "search: rung %d done: the best %lld of %lld go on to %lld iterations", g,
                     (long long)k, (long long)n, (long long)r->budgets[g + 1]);
        else
            snprintf(line, sizeof line, "search: rung %d done: every rung finished", g);
        vp_pool_runs_note(&c->pool, line);
    }
    free(m);
    free(pr->iters);
    pr->iters = pr->iter0 = NULL;
    return s;
}

vp_status vp_search_run(const vp_config* cfg, vp_backend* b, const vp_search_opts* opts, vp_search_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && opts != NULL && opts->dir != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_search_run: NULL argument");
    memset(out, 0, sizeof *out);
    VP_REQUIRE(strlen(opts->dir) < VP_RUN_PATH_MAX - 64, VP_ERR_INVALID_ARG, "search folder path '%.200s' is too long",
               opts->dir);
    VP_REQUIRE(opts->parallel >= 1, VP_ERR_INVALID_ARG, "a search runs at least 1 trial at once, got %lld",
               (long long)opts->parallel);
    snprintf(out->dir, sizeof out->dir, "%s", opts->dir);
    VP_TRY(vp_config_check(cfg));
    VP_TRY(vp_job_pool_check_devices(cfg->run.devices, b));
    // the base records data.path absolute (config.yaml, every trial), so a resume works from any folder
    out->base = *cfg;
    VP_TRY(vp_config_absolute_data_path(&out->base));
    vp_search_ctx c;
    memset(&c, 0, sizeof c);
    c.opts = opts, c.r = out, c.resume = opts->mode == VP_RUN_RESUME;
    c.pool.progress = opts->progress, c.pool.stop = opts->stop, c.pool.fused = opts->fused;
    VP_REQUIRE(pthread_mutex_init(&c.pool.mu, NULL) == 0, VP_ERR_STATE, "search: pthread_mutex_init failed");

    // the plan, every trial checked, then the folder, the rungs and the table
    vp_status s = c.resume ? plan_resume(opts, out) : plan_new(opts, out);
    const size_t n = s == VP_OK ? (size_t)out->n_trials : 0;
    vp_train_data* data = n ? (vp_train_data*)calloc(n, sizeof(vp_train_data)) : NULL;
    c.cfg = n ? (vp_config*)calloc(n, sizeof(vp_config)) : NULL;
    c.data = n ? (const vp_train_data**)calloc(n, sizeof(vp_train_data*)) : NULL;
    out->trials = n ? (vp_search_trial*)calloc(n, sizeof(vp_search_trial)) : NULL;
    if (s == VP_OK && !(data && c.cfg && c.data && out->trials))
        s = vp_set_error(VP_ERR_OOM, VP_WHERE, "search: %lld trials", (long long)out->n_trials);
    if (s == VP_OK) s = make_trials(&c, data);
    vp_run run;
    memset(&run, 0, sizeof run);
    if (s == VP_OK) s = open_dir(&c, &run);
    if (s == VP_OK) s = run_rungs(&c, b, &run);
    if (s == VP_OK) s = vp_search_collect(out);
    if (s == VP_OK) s = vp_search_write(out);
    vp_run_close(&run);
    for (size_t i = 0; data && i < n; ++i) vp_train_data_free(&data[i]);
    free(data);
    free(c.data);
    free(c.cfg);
    pthread_mutex_destroy(&c.pool.mu);
    if (s != VP_OK) {
        vp_search_result_free(out); // a refused or failed search returns nothing to free
        return vp_error_context(s, "search in %s", opts->dir);
    }
    return VP_OK;
}
