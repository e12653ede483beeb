/* The events a training run writes to metrics.jsonl and its summary.json. Every event but
 * "timing" is a function of the config, the seed and the backend only, so two runs of
 * one config give identical lines once the "timing" lines are left out. */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "learn/train_report.h"
#include "vulpes/version.h"

/* Whether v converts to an int64 (finite, inside +-2^63). */
static int int64_fits(double v) { return v >= -9223372036854775808.0 && v < 9223372036854775808.0; }

/* The entries of a key/value list, in order; a count that is not a finite int64 (a NaN
 * statistic) is written as a number, which JSON makes null. */
static vp_status add_kv(vp_metrics_log* m, const vp_kv_list* l) {
    for (int i = 0; i < l->n; ++i) {
        const vp_kv* e = &l->items[i];
        VP_TRY(e->integer && int64_fits(e->value) ? vp_metrics_log_int(m, e->key, (int64_t)e->value)
                                                  : vp_metrics_log_num(m, e->key, e->value));
    }
    return VP_OK;
}

vp_status vp_train_log_run(vp_metrics_log* m, const vp_algo* a, int resumed) {
    const vp_train_data* d = a->data;
    vp_kv_list info;
    VP_TRY(vp_algo_info(a, &info));
    VP_TRY(vp_metrics_log_begin(m, "run"));
    VP_TRY(vp_metrics_log_int(m, "iteration", a->count.iteration));
    VP_TRY(vp_metrics_log_int(m, "resumed", resumed));
    VP_TRY(vp_metrics_log_str(m, "data", d->source));
    VP_TRY(vp_metrics_log_int(m, "bars", d->bars.n));
    VP_TRY(vp_metrics_log_int(m, "features", d->n_features));
    VP_TRY(vp_metrics_log_int(m, "train_begin_bar", d->split.train.begin));
    VP_TRY(vp_metrics_log_int(m, "train_end_bar", d->split.train.end));
    VP_TRY(vp_metrics_log_int(m, "val_begin_bar", d->split.val.begin));
    VP_TRY(vp_metrics_log_int(m, "val_end_bar", d->split.val.end));
    VP_TRY(vp_metrics_log_int(m, "test_begin_bar", d->split.test.begin));
    VP_TRY(vp_metrics_log_int(m, "test_end_bar", d->split.test.end));
    VP_TRY(vp_metrics_log_num(m, "periods_per_year", d->periods_per_year));
    VP_TRY(add_kv(m, &info));
    VP_TRY(vp_metrics_log_str(m, "backend", vp_backend_name(a->backend)));
    return vp_metrics_log_end(m);
}

vp_status vp_train_log_train(vp_metrics_log* m, const vp_algo* a, const vp_kv_list* st) {
    VP_TRY(vp_metrics_log_begin(m, "train"));
    VP_TRY(vp_metrics_log_int(m, "iteration", a->count.iteration));
    VP_TRY(vp_metrics_log_int(m, "env_steps", a->count.env_steps));
    VP_TRY(vp_metrics_log_int(m, "learner_steps", a->count.learner_steps));
    VP_TRY(add_kv(m, st));
    return vp_metrics_log_end(m);
}

vp_status vp_train_log_timing(vp_metrics_log* m, const vp_algo* a, const vp_train_timing* tm) {
    VP_TRY(vp_metrics_log_begin(m, "timing"));
    VP_TRY(vp_metrics_log_int(m, "iteration", a->count.iteration));
    VP_TRY(vp_metrics_log_num(m, "wall_s", tm->wall_s));
    VP_TRY(vp_metrics_log_num(m, "iterations_per_s", tm->iterations_per_s));
    VP_TRY(vp_metrics_log_num(m, "env_steps_per_s", tm->env_steps_per_s));
    VP_TRY(vp_metrics_log_num(m, "learner_steps_per_s", tm->learner_steps_per_s));
    return vp_metrics_log_end(m);
}

vp_status vp_train_log_eval(vp_metrics_log* m, const vp_algo* a, const vp_eval_result* r, int best) {
    VP_TRY(vp_metrics_log_begin(m, "eval"));
    VP_TRY(vp_metrics_log_int(m, "iteration", a->count.iteration));
    VP_TRY(vp_metrics_log_num(m, "val_sharpe", r->strategy.sharpe));
    VP_TRY(vp_metrics_log_num(m, "val_total_return_frac", r->strategy.total_return));
    VP_TRY(vp_metrics_log_num(m, "val_annual_return_frac", r->strategy.annual_return));
    VP_TRY(vp_metrics_log_num(m, "val_max_drawdown_frac", r->strategy.max_drawdown));
    VP_TRY(vp_metrics_log_num(m, "val_exposure_frac", r->exposure));
    VP_TRY(vp_metrics_log_num(m, "val_turnover", r->turnover));
    VP_TRY(vp_metrics_log_int(m, "val_ruined_windows", r->ruined));
    VP_TRY(vp_metrics_log_num(m, "val_buy_hold_sharpe", r->buy_hold.sharpe));
    VP_TRY(vp_metrics_log_int(m, "val_windows", r->windows));
    VP_TRY(vp_metrics_log_int(m, "val_window_bars", r->window_bars));
    VP_TRY(vp_metrics_log_int(m, "best", best));
    return vp_metrics_log_end(m);
}

vp_status vp_train_log_checkpoint(vp_metrics_log* m, const vp_algo* a, const char* file, const char* reason) {
    VP_TRY(vp_metrics_log_begin(m, "checkpoint"));
    VP_TRY(vp_metrics_log_int(m, "iteration", a->count.iteration));
    VP_TRY(vp_metrics_log_str(m, "file", file));
    VP_TRY(vp_metrics_log_str(m, "reason", reason));
    return vp_metrics_log_end(m);
}

/* ---- summary.json -------------------------------------------------------------------------------- */

/* Adds an evaluation as an object `name` of root. */
static vp_status add_eval(cJSON* root, const char* name, const vp_eval_result* r) {
    cJSON* o = cJSON_AddObjectToObject(root, name);
    VP_REQUIRE(o != NULL, VP_ERR_OOM, "summary.json: out of memory");
    VP_TRY(vp_metric_json_add(o, "windows", (double)r->windows));
    VP_TRY(vp_metric_json_add(o, "window_bars", (double)r->window_bars));
    VP_TRY(vp_metric_json_add(o, "ruined_windows", (double)r->ruined));
    VP_TRY(vp_metric_json_add(o, "exposure_frac", r->exposure));
    VP_TRY(vp_metric_json_add(o, "turnover", r->turnover));
    static const char* names[3] = {"strategy", "buy_and_hold", "flat"};
    const vp_perf* series[3] = {&r->strategy, &r->buy_hold, &r->flat};
    for (int i = 0; i < 3; ++i) {
        cJSON* s = cJSON_AddObjectToObject(o, names[i]);
        VP_REQUIRE(s != NULL, VP_ERR_OOM, "summary.json: out of memory");
        VP_TRY(vp_perf_to_json(series[i], s));
    }
    return VP_OK;
}

/* Fills the summary object. */
static vp_status summary_fill(cJSON* root, const vp_algo* a, const vp_train_result* res, int finished) {
    VP_REQUIRE(cJSON_AddBoolToObject(root, "finished", finished) != NULL, VP_ERR_OOM, "summary.json: out of memory");
    cJSON_AddStringToObject(root, "vulpes_version", VP_VERSION_STRING);
    cJSON_AddStringToObject(root, "backend", vp_backend_name(a->backend));
    cJSON_AddStringToObject(root, "data", a->data->source);
    VP_TRY(vp_metric_json_add(root, "iterations", (double)a->count.iteration));
    VP_TRY(vp_metric_json_add(root, "env_steps", (double)a->count.env_steps));
    VP_TRY(vp_metric_json_add(root, "learner_steps", (double)a->count.learner_steps));
    VP_TRY(vp_metric_json_add(root, "periods_per_year", a->data->periods_per_year));
    if (a->cfg.her.enabled) {
        // a goal-conditioned network: the goal its validations and test span were conditioned on
        cJSON* her = cJSON_AddObjectToObject(root, "her");
        VP_REQUIRE(her != NULL, VP_ERR_OOM, "summary.json: out of memory");
        VP_TRY(vp_metric_json_add(her, "eval_goal", a->cfg.her.eval_goal));
        VP_TRY(vp_metric_json_add(her, "collect_goal", a->cfg.her.goal));
    }
    cJSON* best = cJSON_AddObjectToObject(root, "best_validation");
    VP_REQUIRE(best != NULL, VP_ERR_OOM, "summary.json: out of memory");
    VP_TRY(vp_metric_json_add(best, "iteration", (double)a->best_iteration));
    VP_TRY(vp_metric_json_add(best, "sharpe", a->best_val_sharpe));
    cJSON_AddStringToObject(best, "checkpoint", a->best_iteration >= 0 ? "best.safetensors" : "");
    if (!finished) return VP_OK;
    return add_eval(root, "final_validation", &res->final_val);
}

vp_status vp_train_summary_json(const vp_algo* a, const vp_train_result* res, int finished, cJSON** out) {
    cJSON* root = cJSON_CreateObject();
    VP_REQUIRE(root != NULL, VP_ERR_OOM, "summary.json: out of memory");
    vp_status s = summary_fill(root, a, res, finished);
    if (s != VP_OK) {
        cJSON_Delete(root);
        return s;
    }
    *out = root;
    return VP_OK;
}

vp_status vp_train_summary_write(const char* path, const cJSON* root) {
    char* text = cJSON_Print(root);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "summary.json: out of memory");
    size_t n = strlen(text);
    char* buf = (char*)malloc(n + 2);
    if (buf) {
        memcpy(buf, text, n);
        buf[n] = '\n';
    }
    free(text);
    VP_REQUIRE(buf != NULL, VP_ERR_OOM, "summary.json: out of memory");
    vp_status s = vp_file_write_atomic(path, buf, n + 1);
    free(buf);
    return s;
}

void vp_train_test_result(const vp_rollout_result* r, vp_eval_result* out) {
    memset(out, 0, sizeof *out);
    out->windows = r->n_windows;
    out->window_bars = vp_span_len(r->span) - 1;
    for (int64_t w = 0; w < r->n_windows; ++w) out->ruined += r->windows[w].ruined != 0;
    out->strategy = r->summary.strategy;
    out->buy_hold = r->summary.buy_hold;
    out->flat = r->summary.flat;
    out->exposure = r->summary.trades.exposure;
    out->turnover = r->summary.trades.turnover;
}

/* ---- resume: metrics.jsonl up to the checkpoint ------------------------------------------------- */

vp_status vp_train_trim_metrics(const char* path, int64_t iteration) {
    VP_REQUIRE(path != NULL, VP_ERR_INVALID_ARG, "vp_train_trim_metrics: path is NULL");
    FILE* f = fopen(path, "rb");
    if (!f) return VP_OK;
    // Read the whole file.
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    char* text = (char*)malloc((size_t)(len > 0 ? len : 0) + 1);
    size_t got = text ? fread(text, 1, (size_t)(len > 0 ? len : 0), f) : 0;
    fclose(f);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "trimming %s: out of memory", path);
    text[got] = '\0';
    char* out = (char*)malloc(got + 1);
    if (!out) free(text);
    VP_REQUIRE(out != NULL, VP_ERR_OOM, "trimming %s: out of memory", path);
    // Keep complete lines whose iteration is at most the checkpoint's; the last line, cut short
    // by a crash (no newline), is dropped; a damaged complete line is refused, not dropped.
    size_t n_out = 0;
    int64_t line_no = 0;
    for (size_t at = 0; at < got;) {
        char* line = text + at;
        char* nl = (char*)memchr(line, '\n', got - at);
        if (!nl) break; /* a line cut short by a crash */
        const size_t k = (size_t)(nl - line);
        ++line_no;
        at += k + 1;
        const char* nul = (const char*)memchr(line, '\0', k);
        *nl = '\0';
        cJSON* j = nul ? NULL : cJSON_Parse(line);
        const cJSON* it = j ? cJSON_GetObjectItemCaseSensitive(j, "iteration") : NULL;
        if (!cJSON_IsNumber(it)) {
            const long long col = nul ? (long long)(nul - line) + 1 : 0;
            cJSON_Delete(j);
            free(text);
            free(out);
            if (nul)
                VP_FAIL(VP_ERR_PARSE, "%s line %lld holds a NUL byte (column %lld): the file is damaged; repair or "
                        "remove that line to resume", path, (long long)line_no, col);
            VP_FAIL(VP_ERR_PARSE, "%s line %lld is not a JSON event with an iteration: the file is damaged; repair "
                    "or remove that line to resume", path, (long long)line_no);
        }
        if (it->valuedouble <= (double)iteration) {
            memcpy(out + n_out, line, k);
            out[n_out + k] = '\n';
            n_out += k + 1;
        }
        cJSON_Delete(j);
    }
    vp_status s = vp_file_write_atomic(path, out, n_out);
    free(text);
    free(out);
    return s;
}
