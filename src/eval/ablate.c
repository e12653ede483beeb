/* The ablation job: the plan (switches and seeds, or a resumed folder's), every variant's
 * config and data checked before the folder is touched, the folder (new, replaced or
 * resumed), the runs through the job pool, then the table read back from the run folders. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/ablate_impl.h"
#include "eval/job_pool.h"
#include "eval/job_read.h"
#include "eval/job_write.h"
#include "vulpes/model.h"
#include "vulpes/train.h"

void vp_ablate_result_free(vp_ablate_result* r) {
    if (!r) return;
    free(r->variants);
    free(r->rows);
    free(r->runs);
    memset(r, 0, sizeof *r);
}

/* ---- the plan ------------------------------------------------------------------------------- */

/* ablate_plan.json's document: the switches as given, the seeds and the base seed (caller deletes). */
static vp_status plan_json(const vp_ablate_result* r, cJSON** out) {
    cJSON* root = cJSON_CreateObject();
    cJSON* sw = root ? cJSON_AddArrayToObject(root, "switches") : NULL;
    if (!sw) cJSON_Delete(root);
    VP_REQUIRE(sw != NULL, VP_ERR_OOM, "ablate_plan.json: out of memory");
    for (int v = 1; v < r->n_variants; ++v) cJSON_AddItemToArray(sw, cJSON_CreateString(r->variants[v].name));
    cJSON_AddNumberToObject(root, "seeds", (double)r->seeds);
    cJSON_AddNumberToObject(root, "base_seed", (double)r->base_seed);
    *out = root;
    return VP_OK;
}

/* A resumed folder's plan: its switches (pointers into *json, which the caller deletes), seeds
 * and base seed. */
static vp_status plan_read(const char* dir, cJSON** json, const char** sw, int* n_sw, int64_t* seeds,
                           int64_t* base_seed) {
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/ablate_plan.json", dir);
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO, "cannot resume the ablation in %s: it has no ablate_plan.json", dir);
    char* text = (char*)malloc(1 << 20);
    const size_t n = text ? fread(text, 1, (1 << 20) - 1, f) : 0;
    fclose(f);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "reading %s: out of memory", path);
    text[n] = '\0';
    *json = cJSON_Parse(text);
    free(text);
    const cJSON* arr = cJSON_GetObjectItemCaseSensitive(*json, "switches");
    const cJSON* s = cJSON_GetObjectItemCaseSensitive(*json, "seeds");
    const cJSON* b = cJSON_GetObjectItemCaseSensitive(*json, "base_seed");
    const int count = cJSON_IsArray(arr) ? cJSON_GetArraySize(arr) : -1;
    VP_REQUIRE(count >= 1 && count <= VP_ABLATE_MAX_SWITCHES && cJSON_IsNumber(s) && s->valuedouble >= 1 &&
                   s->valuedouble <= VP_ABLATE_MAX_SEEDS && s->valuedouble == floor(s->valuedouble) &&
                   cJSON_IsNumber(b) && b->valuedouble >= 0 && b->valuedouble <= 9007199254740992.0 &&
                   b->valuedouble == floor(b->valuedouble),
               VP_ERR_PARSE, "cannot resume the ablation in %s: its ablate_plan.json is not one vulpes wrote", dir);
    *n_sw = 0;
    for (const cJSON* e = arr->child; e; e = e->next) {
        VP_REQUIRE(cJSON_IsString(e), VP_ERR_PARSE, "cannot resume the ablation in %s: a switch of its ablate_plan.json "
                   "is not text", dir);
        sw[(*n_sw)++] = e->valuestring;
    }
    *seeds = (int64_t)s->valuedouble;
    *base_seed = (int64_t)b->valuedouble;
    return VP_OK;
}

/* The variants: the base, then one per switch (none given twice). */
static vp_status make_variants(const vp_config* base, const char* const* sw, int n_sw, vp_ablate_result* r) {
    VP_REQUIRE(n_sw >= 1 && n_sw <= VP_ABLATE_MAX_SWITCHES, VP_ERR_INVALID_ARG,
               "an ablation needs 1 to %d switches, got %d", VP_ABLATE_MAX_SWITCHES, n_sw);
    r->n_variants = n_sw + 1;
    r->variants = (vp_ablate_variant*)calloc((size_t)r->n_variants, sizeof(vp_ablate_variant));
    r->rows = (vp_ablate_row*)calloc((size_t)r->n_variants, sizeof(vp_ablate_row));
    VP_REQUIRE(r->variants && r->rows, VP_ERR_OOM, "ablation: %d variants", r->n_variants);
    snprintf(r->variants[0].name, sizeof r->variants[0].name, "base");
    snprintf(r->variants[0].slug, sizeof r->variants[0].slug, "base");
    for (int i = 0; i < n_sw; ++i) {
        vp_ablate_variant* v = &r->variants[i + 1];
        VP_TRY(vp_ablate_parse_switch(base, sw[i], v));
        for (int j = 0; j <= i; ++j)
            VP_REQUIRE(strcmp(r->variants[j].slug, v->slug) != 0, VP_ERR_INVALID_ARG,
                       "switch '%s' is given twice (or names the same folder as '%s')", v->name, r->variants[j].name);
    }
    return VP_OK;
}

/* ---- the checks ------------------------------------------------------------------------------ */

/* Each variant's config (checked), its data (the base's where the warm-up is the same, else
 * loaded) and its network (the parts made and checked): all before any file is made. */
static vp_status check_variants(vp_ablate_ctx* c, const vp_config* base, vp_config* var, vp_train_data* data) {
    const vp_ablate_result* r = c->r;
    VP_TRY(vp_train_data_load(&data[0], base));
    const int64_t warm = vp_train_data_warmup(base);
    for (int v = 0; v < r->n_variants; ++v) {
        const vp_ablate_variant* x = &r->variants[v];
        var[v] = *base;
        if (x->key) VP_TRY(vp_config_set(&var[v], x->key->name, x->value, x->name));
        vp_status s = vp_config_check(&var[v]);
        if (s != VP_OK) return vp_error_context(s, "variant '%s'", x->name);
        c->data[v] = &data[0];
        if (v > 0 && vp_train_data_warmup(&var[v]) != warm) {
            s = vp_train_data_load(&data[v], &var[v]);
            if (s != VP_OK) return vp_error_context(s, "variant '%s': its data", x->name);
            c->data[v] = &data[v];
        }
        vp_train_parts parts;
        s = vp_train_parts_make(&var[v], c->data[v]->n_features, &parts);
        if (s == VP_OK) s = vp_model_cfg_check(&parts.learner.model);
        if (s != VP_OK) return vp_error_context(s, "variant '%s'", x->name);
    }
    return VP_OK;
}

/* ---- the folder and the runs ---------------------------------------------------------------------- */

/* Makes folder p when absent. */
static vp_status make_dir(const char* p) {
    struct stat st;
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) return VP_OK;
    VP_REQUIRE(mkdir(p, 0777) == 0, VP_ERR_IO, "cannot make folder %s", p);
    return VP_OK;
}

/* Claims the folder per opts->mode (locked until the caller closes it), checks a resume's
 * config, writes the plan of a new one and makes runs/VARIANT/ for every variant. */
static vp_status open_dir(vp_ablate_ctx* c, const vp_config* base, vp_run* run) {
    const char* dir = c->opts->dir;
    vp_status s = vp_run_claim(run, dir, c->resume ? VP_RUN_RESUME : c->opts->mode);
    if (s == VP_OK && c->resume) s = vp_job_check_base(dir, base, "ablation");
    if (s == VP_OK) s = vp_run_begin(run, base);
    if (s == VP_OK && !c->resume) {
        cJSON* plan = NULL;
        s = plan_json(c->r, &plan);
        if (s == VP_OK) s = vp_job_json_save(dir, "ablate_plan.json", plan);
        cJSON_Delete(plan);
    }
    char p[VP_RUN_PATH_MAX + VP_ABLATE_NAME_MAX + 16];
    snprintf(p, sizeof p, "%s/runs", dir);
    if (s == VP_OK) s = make_dir(p);
    for (int v = 0; s == VP_OK && v < c->r->n_variants; ++v) {
        snprintf(p, sizeof p, "%s/runs/%s", dir, c->r->variants[v].slug);
        s = make_dir(p);
    }
    return s;
}

/* The runs, variant by variant and seed by seed: folders and configs. */
static vp_status make_runs(vp_ablate_ctx* c, const vp_config* var) {
    vp_ablate_result* r = c->r;
    r->n_runs = (int64_t)r->n_variants * r->seeds;
    r->runs = (vp_ablate_trial*)calloc((size_t)r->n_runs, sizeof(vp_ablate_trial));
    c->run_cfg = (vp_config*)calloc((size_t)r->n_runs, sizeof(vp_config));
    c->finished_now = (unsigned char*)calloc((size_t)r->n_runs, 1);
    VP_REQUIRE(r->runs && c->run_cfg && c->finished_now, VP_ERR_OOM, "ablation: %lld runs", (long long)r->n_runs);
    for (int v = 0; v < r->n_variants; ++v)
        for (int64_t i = 0; i < r->seeds; ++i) {
            const int64_t k = v * r->seeds + i;
            vp_ablate_trial* x = &r->runs[k];
            x->variant = v;
            x->seed = r->base_seed + i;
            const int w = snprintf(x->dir, sizeof x->dir, "%s/runs/%s/seed_%lld", c->opts->dir, r->variants[v].slug,
                                   (long long)x->seed);
            VP_REQUIRE(w > 0 && (size_t)w < sizeof x->dir, VP_ERR_INVALID_ARG, "ablation folder path '%s' is too long",
                       c->opts->dir);
            c->run_cfg[k] = var[v];
            c->run_cfg[k].run.seed = x->seed;
        }
    return VP_OK;
}

static int job_is_done(void* ctx, int64_t k) {
    const vp_ablate_ctx* c = (const vp_ablate_ctx*)ctx;
    return c->resume && vp_ablate_run_is_finished(c->r->runs[k].dir);
}

static vp_status job_run(void* ctx, vp_backend* b, int64_t k, int* stopped) {
    return vp_ablate_job_run((vp_ablate_ctx*)ctx, b, k, stopped);
}

static void job_note(void* ctx, const char* msg) {
    vp_pool_runs_pool_note(&((vp_ablate_ctx*)ctx)->pool, "ablation", msg);
}

/* The runs through the job pool (each variant's config measured for device memory), then an
 * "ablate_run" event per run this call finished, in run order. */
static vp_status run_all(vp_ablate_ctx* c, vp_backend* b, const vp_config* var, vp_run* run) {
    vp_ablate_result* r = c->r;
    const vp_config** probe_cfg = (const vp_config**)calloc((size_t)r->n_variants, sizeof(vp_config*));
    VP_REQUIRE(probe_cfg != NULL, VP_ERR_OOM, "ablation: %d variants", r->n_variants);
    for (int v = 0; v < r->n_variants; ++v) probe_cfg[v] = &var[v];
    vp_job_pool p = {"ablation", "run", "runs", r->n_runs, c->opts->parallel, c->opts->stop_after_runs, c,
                     job_is_done, job_run, job_note, &c->pool.halt, probe_cfg, c->data, r->n_variants,
                     var[0].run.devices};
    // the progress over the runs this call runs (a continued run counts from its checkpoint's iteration)
    vp_pool_runs* pr = &c->pool;
    pr->iters = (int64_t*)calloc(2 * (size_t)r->n_runs, sizeof(int64_t));
    if (!pr->iters) {
        free(probe_cfg);
        VP_FAIL(VP_ERR_OOM, "ablation: %lld runs", (long long)r->n_runs);
    }
    pr->n_slots = r->n_runs, pr->iter0 = pr->iters + r->n_runs;
    pr->interval_s = 10.0;
    vp_pool_runs_begin(pr, "runs", 0, r->n_runs, vp_job_pool_left(&p) * var[0].train.iterations);
    vp_status s = vp_job_pool_run(&p, b);
    free(probe_cfg);
    free(pr->iters);
    pr->iters = pr->iter0 = NULL;
    for (int64_t k = 0; k < r->n_runs && s == VP_OK; ++k) {
        if (!c->finished_now[k]) continue;
        vp_metrics_log* m = &run->metrics;
        s = vp_metrics_log_begin(m, "ablate_run");
        if (s == VP_OK) s = vp_metrics_log_int(m, "run", k + 1);
        if (s == VP_OK) s = vp_metrics_log_str(m, "variant", r->variants[r->runs[k].variant].name);
        if (s == VP_OK) s = vp_metrics_log_int(m, "seed", r->runs[k].seed);
        if (s == VP_OK) s = vp_metrics_log_str(m, "dir", r->runs[k].dir);
        if (s == VP_OK) s = vp_metrics_log_end(m);
    }
    return s;
}

vp_status vp_ablate_run(const vp_config* cfg, vp_backend* b, const vp_ablate_opts* opts, vp_ablate_result* out) {
    VP_REQUIRE(cfg != NULL && b != NULL && opts != NULL && opts->dir != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "vp_ablate_run: NULL argument");
    memset(out, 0, sizeof *out);
    VP_REQUIRE(strlen(opts->dir) < VP_RUN_PATH_MAX - 2 * VP_ABLATE_NAME_MAX, VP_ERR_INVALID_ARG,
               "ablation folder path '%.200s' is too long", opts->dir);
    snprintf(out->dir, sizeof out->dir, "%s", opts->dir);
    VP_TRY(vp_config_check(cfg));
    VP_TRY(vp_job_pool_check_devices(cfg->run.devices, b));
    // the base records data.path absolute (config.yaml, every run), so a resume works from any folder
    vp_config base = *cfg;
    VP_TRY(vp_config_absolute_data_path(&base));
    vp_ablate_ctx c;
    memset(&c, 0, sizeof c);
    c.opts = opts, c.r = out, c.resume = opts->mode == VP_RUN_RESUME;
    c.pool.progress = opts->progress, c.pool.stop = opts->stop, c.pool.fused = opts->fused;
    VP_REQUIRE(pthread_mutex_init(&c.pool.mu, NULL) == 0, VP_ERR_STATE, "ablation: pthread_mutex_init failed");

    // the plan: the switches and seeds given, or the resumed folder's
    cJSON* plan = NULL;
    const char* sw_buf[VP_ABLATE_MAX_SWITCHES];
    const char* const* sw = opts->switches;
    int n_sw = opts->n_switches;
    vp_status s = VP_OK;
    out->seeds = opts->seeds, out->base_seed = base.run.seed;
    if (c.resume) {
        s = plan_read(opts->dir, &plan, sw_buf, &n_sw, &out->seeds, &out->base_seed);
        sw = sw_buf;
    } else if (opts->seeds < 1) {
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "an ablation needs at least 1 seed per variant, got %lld",
                         (long long)opts->seeds);
    } else if (opts->seeds > VP_ABLATE_MAX_SEEDS) {
        s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "an ablation takes at most %d seeds per variant, got %lld",
                         VP_ABLATE_MAX_SEEDS, (long long)opts->seeds);
    }
    if (s == VP_OK) s = make_variants(&base, sw, n_sw, out);
    cJSON_Delete(plan);

    // every variant checked, then the folder, the runs and the table
    vp_config* var = s == VP_OK ? (vp_config*)calloc((size_t)out->n_variants, sizeof(vp_config)) : NULL;
    vp_train_data* data = s == VP_OK ? (vp_train_data*)calloc((size_t)out->n_variants, sizeof(vp_train_data)) : NULL;
    c.data = s == VP_OK ? (const vp_train_data**)calloc((size_t)out->n_variants, sizeof(vp_train_data*)) : NULL;
    if (s == VP_OK && !(var && data && c.data))
        s = vp_set_error(VP_ERR_OOM, VP_WHERE, "ablation: %d variants", out->n_variants);
    if (s == VP_OK) s = check_variants(&c, &base, var, data);
    if (s == VP_OK) s = make_runs(&c, var);
    vp_run run;
    memset(&run, 0, sizeof run);
    if (s == VP_OK) s = open_dir(&c, &base, &run);
    if (s == VP_OK) s = run_all(&c, b, var, &run);
    if (s == VP_OK) s = vp_ablate_collect(out);
    if (s == VP_OK) s = vp_ablate_write(out);
    vp_run_close(&run);
    for (int v = 0; data && v < out->n_variants; ++v) vp_train_data_free(&data[v]);
    free(data);
    free(c.data);
    free(var);
    free(c.run_cfg);
    free(c.finished_now);
    pthread_mutex_destroy(&c.pool.mu);
    if (s != VP_OK) {
        vp_ablate_result_free(out); // a refused or failed ablation returns nothing to free
        return vp_error_context(s, "ablation in %s", opts->dir);
    }
    return VP_OK;
}
