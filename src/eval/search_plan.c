/* The search's plan and its finished rungs on disk: search.json (seed, trials, eta, the
 * rungs' iterations, the space), space.yaml (the space, read back on a resume) and rungs.json
 * (each finished rung's trials, scores and promotions), written atomically and read back with
 * every field checked. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_read.h"
#include "eval/job_write.h"
#include "eval/search_impl.h"
#include "vulpes/version.h"

/* A number for an array: null for NaN. */
static cJSON* number(double v) { return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull(); }

vp_status vp_search_plan_write(const vp_search_result* r) {
    char* yaml = NULL;
    VP_TRY(vp_search_space_to_yaml(&r->space, &yaml));
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/space.yaml", r->dir);
    vp_status s = vp_file_write_atomic(path, yaml, strlen(yaml));
    cJSON* root = cJSON_CreateObject();
    if (root) {
        cJSON_AddStringToObject(root, "vulpes_version", VP_VERSION_STRING);
        cJSON_AddNumberToObject(root, "seed", (double)r->seed);
        cJSON_AddNumberToObject(root, "trials", (double)r->n_trials);
        cJSON_AddNumberToObject(root, "eta", (double)r->eta);
        cJSON_AddNumberToObject(root, "min_iterations", (double)r->min_iterations);
    }
    cJSON* b = root ? cJSON_AddArrayToObject(root, "rung_iterations") : NULL;
    if (s == VP_OK && !b) s = vp_set_error(VP_ERR_OOM, VP_WHERE, "search.json: out of memory");
    if (s == VP_OK) {
        for (int i = 0; i < r->n_rungs; ++i) cJSON_AddItemToArray(b, cJSON_CreateNumber((double)r->budgets[i]));
        cJSON_AddStringToObject(root, "space", yaml);
        s = vp_job_json_save(r->dir, "search.json", root);
    }
    cJSON_Delete(root);
    free(yaml);
    return s;
}

/* A whole number in [lo, hi] of object o, or -1 when it is not one. */
static int64_t whole(const cJSON* o, const char* key, double lo, double hi) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (!cJSON_IsNumber(v) || v->valuedouble < lo || v->valuedouble > hi || v->valuedouble != floor(v->valuedouble))
        return -1;
    return (int64_t)v->valuedouble;
}

vp_status vp_search_plan_read(vp_search_result* r) {
    char* text = vp_job_read_text(r->dir, "search.json");
    VP_REQUIRE(text != NULL, VP_ERR_IO, "cannot resume the search in %s: it has no search.json", r->dir);
    cJSON* j = cJSON_Parse(text);
    free(text);
    r->seed = whole(j, "seed", 0, 9007199254740992.0);
    r->n_trials = whole(j, "trials", 1, VP_SEARCH_MAX_TRIALS);
    r->eta = whole(j, "eta", 2, 1e9);
    r->min_iterations = whole(j, "min_iterations", 0, 9007199254740992.0);
    const cJSON* b = cJSON_GetObjectItemCaseSensitive(j, "rung_iterations");
    const int n_b = cJSON_IsArray(b) ? cJSON_GetArraySize(b) : -1;
    int64_t stored[VP_SEARCH_MAX_RUNGS];
    int ok = j && r->seed >= 0 && r->n_trials >= 1 && r->eta >= 2 && r->min_iterations >= 0 && n_b >= 1 &&
             n_b <= VP_SEARCH_MAX_RUNGS;
    for (int i = 0; ok && i < n_b; ++i) {
        const cJSON* e = cJSON_GetArrayItem(b, i);
        ok = cJSON_IsNumber(e) && e->valuedouble >= 1 && e->valuedouble == floor(e->valuedouble);
        if (ok) stored[i] = (int64_t)e->valuedouble;
    }
    cJSON_Delete(j);
    VP_REQUIRE(ok, VP_ERR_PARSE, "cannot resume the search in %s: its search.json is not one vulpes wrote", r->dir);
    // the space as the folder keeps it, checked again against the base
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/space.yaml", r->dir);
    VP_TRY(vp_search_space_load(path, &r->base, &r->space));
    // the rungs the base gives must be the plan's
    VP_TRY(vp_search_budgets(r->base.train.iterations, r->eta, r->min_iterations, r->n_trials, r->budgets,
                             &r->n_rungs));
    int same = r->n_rungs == n_b;
    for (int i = 0; same && i < n_b; ++i) same = r->budgets[i] == stored[i];
    VP_REQUIRE(same, VP_ERR_INVALID_ARG, "cannot resume the search in %s: its search.json's rung iterations are not "
               "those of its plan and config.yaml", r->dir);
    return VP_OK;
}

int64_t vp_search_rung_members(const vp_search_result* r, int rung, int64_t* out) {
    if (rung == 0) {
        for (int64_t i = 0; i < r->n_trials; ++i) out[i] = i;
        return r->n_trials;
    }
    int64_t* prev = (int64_t*)malloc((size_t)r->n_trials * sizeof *prev);
    double* sc = (double*)malloc((size_t)r->n_trials * sizeof *sc);
    int64_t n = prev && sc ? vp_search_rung_members(r, rung - 1, prev) : -1;
    for (int64_t i = 0; i < n; ++i) sc[i] = r->trials[prev[i]].score[rung - 1];
    const int64_t k = n >= 0 ? vp_search_promote(prev, sc, n, r->eta, out) : -1;
    free(prev);
    free(sc);
    return k;
}

vp_status vp_search_rungs_write(const vp_search_result* r) {
    int64_t* m = (int64_t*)malloc(2 * (size_t)r->n_trials * sizeof *m);
    cJSON* root = cJSON_CreateObject();
    cJSON* arr = root ? cJSON_AddArrayToObject(root, "rungs") : NULL;
    vp_status s = m && arr ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "rungs.json: out of memory");
    for (int g = 0; s == VP_OK && g < r->rungs_done; ++g) {
        const int64_t n = vp_search_rung_members(r, g, m);
        const int64_t k = n >= 0 ? vp_search_rung_members(r, g + 1, m + r->n_trials) : -1;
        cJSON* o = cJSON_CreateObject();
        cJSON *t = NULL, *sc = NULL, *pr = NULL;
        if (o && cJSON_AddItemToArray(arr, o)) {
            cJSON_AddNumberToObject(o, "rung", g);
            cJSON_AddNumberToObject(o, "iterations", (double)r->budgets[g]);
            t = cJSON_AddArrayToObject(o, "trials");
            sc = cJSON_AddArrayToObject(o, "scores");
            pr = cJSON_AddArrayToObject(o, "promoted");
        }
        if (n < 0 || k < 0 || !t || !sc || !pr) {
            s = vp_set_error(VP_ERR_OOM, VP_WHERE, "rungs.json: out of memory");
            break;
        }
        for (int64_t i = 0; i < n; ++i) {
            cJSON_AddItemToArray(t, cJSON_CreateNumber((double)m[i]));
            cJSON_AddItemToArray(sc, number(r->trials[m[i]].score[g]));
        }
        // the last rung promotes none: its best is the winner
        for (int64_t i = 0; g + 1 < r->n_rungs && i < k; ++i)
            cJSON_AddItemToArray(pr, cJSON_CreateNumber((double)m[r->n_trials + i]));
    }
    if (s == VP_OK) s = vp_job_json_save(r->dir, "rungs.json", root);
    cJSON_Delete(root);
    free(m);
    return s;
}

vp_status vp_search_rungs_read(vp_search_result* r) {
    r->rungs_done = 0;
    char* text = vp_job_read_text(r->dir, "rungs.json");
    if (!text) return VP_OK;
    cJSON* j = cJSON_Parse(text);
    free(text);
    const cJSON* arr = cJSON_GetObjectItemCaseSensitive(j, "rungs");
    int64_t* m = (int64_t*)malloc((size_t)r->n_trials * sizeof *m);
    vp_status s = m ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "rungs.json: out of memory");
    if (s == VP_OK && (!cJSON_IsArray(arr) || cJSON_GetArraySize(arr) > r->n_rungs))
        s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "cannot resume the search in %s: its rungs.json is not one vulpes "
                         "wrote", r->dir);
    for (int g = 0; s == VP_OK && g < cJSON_GetArraySize(arr); ++g) {
        const cJSON* o = cJSON_GetArrayItem(arr, g);
        const cJSON* t = cJSON_GetObjectItemCaseSensitive(o, "trials");
        const cJSON* sc = cJSON_GetObjectItemCaseSensitive(o, "scores");
        const int64_t n = vp_search_rung_members(r, g, m);
        // the rung holds the trials its previous rung promoted, with a number or null each
        int ok = n >= 0 && cJSON_IsArray(t) && cJSON_IsArray(sc) && cJSON_GetArraySize(t) == n &&
                 cJSON_GetArraySize(sc) == n;
        for (int64_t i = 0; ok && i < n; ++i) {
            const cJSON* ti = cJSON_GetArrayItem(t, (int)i);
            const cJSON* si = cJSON_GetArrayItem(sc, (int)i);
            ok = cJSON_IsNumber(ti) && ti->valuedouble == (double)m[i] && (cJSON_IsNumber(si) || cJSON_IsNull(si));
            if (ok) r->trials[m[i]].score[g] = cJSON_IsNumber(si) ? si->valuedouble : NAN;
        }
        if (!ok) {
            s = vp_set_error(VP_ERR_PARSE, VP_WHERE, "cannot resume the search in %s: rung %d of its rungs.json does "
                             "not hold the trials its plan promotes", r->dir, g);
            break;
        }
        for (int64_t i = 0; i < n; ++i) r->trials[m[i]].rung = g;
        r->rungs_done = g + 1;
    }
    cJSON_Delete(j);
    free(m);
    return s;
}
