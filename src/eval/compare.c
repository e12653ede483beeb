/* `vulpes compare`, reading: the columns and one folder's row from its summary.json. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "eval/compare.h"

/* The figures, in table order. */
static const vp_compare_column COLUMNS[] = {
    {"total_return_frac", "return", VP_METRIC_UNIT_FRAC, "@strategy.total_return_frac", 1},
    {"annual_return_frac", "annual", VP_METRIC_UNIT_FRAC, "@strategy.annual_return_frac", 1},
    {"annual_volatility_frac", "vol", VP_METRIC_UNIT_FRAC, "@strategy.annual_volatility_frac", 0},
    {"sharpe_ratio", "Sharpe", VP_METRIC_UNIT_RATIO, "@strategy.sharpe_ratio", 1},
    {"sortino_ratio", "Sortino", VP_METRIC_UNIT_RATIO, "@strategy.sortino_ratio", 1},
    {"max_drawdown_frac", "max DD", VP_METRIC_UNIT_FRAC, "@strategy.max_drawdown_frac", 1},
    {"calmar_ratio", "Calmar", VP_METRIC_UNIT_RATIO, "@strategy.calmar_ratio", 1},
    {"psr_vs_zero_frac", "PSR>0", VP_METRIC_UNIT_FRAC, "@strategy.psr_vs_zero_frac", 1},
    {"n_trades", "trades", VP_METRIC_UNIT_INT, "@trades.n_trades", 0},
    {"hit_rate_frac", "hit", VP_METRIC_UNIT_FRAC, "@trades.hit_rate_frac", 1},
    {"exposure_frac", "exposure", VP_METRIC_UNIT_FRAC, "@trades.exposure_frac", 0},
    {"buy_hold_total_return_frac", "B&H return", VP_METRIC_UNIT_FRAC, "@buy_and_hold.total_return_frac", 0},
    {"buy_hold_sharpe_ratio", "B&H Sharpe", VP_METRIC_UNIT_RATIO, "@buy_and_hold.sharpe_ratio", 0},
    {"alpha_annual_frac", "alpha", VP_METRIC_UNIT_FRAC, "@tear.alpha_annual_frac", 1},
    {"beta_ratio", "beta", VP_METRIC_UNIT_RATIO, "@tear.beta_ratio", 0},
    {"information_ratio", "IR", VP_METRIC_UNIT_RATIO, "@tear.information_ratio", 1},
    {"val_sharpe_ratio", "val Sharpe", VP_METRIC_UNIT_RATIO, "/best_validation.sharpe", 1},
    {"deflated_sharpe_frac", "DSR", VP_METRIC_UNIT_FRAC,
     "/best_validation.deflated_sharpe|/walkforward.significance.deflated_sharpe", 1},
};
#define N_COLUMNS ((int)(sizeof COLUMNS / sizeof COLUMNS[0]))

const vp_compare_column* vp_compare_columns(int* n) {
    *n = N_COLUMNS;
    return COLUMNS;
}

const char* vp_compare_kind_name(vp_compare_kind k) {
    static const char* names[VP_COMPARE_KIND_COUNT] = {"train", "walkforward", "backtest"};
    return k >= 0 && k < VP_COMPARE_KIND_COUNT ? names[k] : "?";
}

/* The item at dotted path p[0..len) under obj, or NULL. */
static const cJSON* json_at(const cJSON* obj, const char* p, size_t len) {
    char key[128];
    while (obj && len > 0) {
        const char* dot = memchr(p, '.', len);
        size_t k = dot ? (size_t)(dot - p) : len;
        if (k >= sizeof key) return NULL;
        memcpy(key, p, k);
        key[k] = '\0';
        obj = cJSON_GetObjectItemCaseSensitive(obj, key);
        p += dot ? k + 1 : k;
        len -= dot ? k + 1 : k;
    }
    return obj;
}

/* The first number a column's path alternatives find (a null is no number), NaN for none. */
static double column_value(const char* path, const cJSON* root, const cJSON* block) {
    while (*path) {
        const char* bar = strchr(path, '|');
        size_t len = bar ? (size_t)(bar - path) : strlen(path);
        const cJSON* base = path[0] == '@' ? block : root;
        const cJSON* v = len > 1 ? json_at(base, path + 1, len - 1) : NULL;
        if (cJSON_IsNumber(v)) return v->valuedouble;
        path += bar ? len + 1 : len;
    }
    return NAN;
}

/* Copies the string at `path` under obj into out[n] ("" when absent). */
static void copy_str(const cJSON* obj, const char* path, char* out, size_t n) {
    const cJSON* v = obj ? json_at(obj, path, strlen(path)) : NULL;
    snprintf(out, n, "%s", cJSON_IsString(v) ? v->valuestring : "");
}

/* Fills the row's kind, status, data and span from the parsed summary. */
static void fill_row(const cJSON* root, vp_compare_row* row, const cJSON** block) {
    const cJSON* wf = cJSON_GetObjectItemCaseSensitive(root, "walkforward");
    const cJSON* bt = cJSON_GetObjectItemCaseSensitive(root, "backtest");
    const cJSON* st = NULL;
    row->n_bars = NAN;
    if (cJSON_IsObject(wf)) {
        row->kind = VP_COMPARE_WALKFORWARD;
        *block = root;
        copy_str(wf, "data", row->data, sizeof row->data);
        // the span: the first fold's first test bar to the last fold's last
        const cJSON* folds = cJSON_GetObjectItemCaseSensitive(wf, "folds");
        int nf = cJSON_GetArraySize(folds);
        if (nf > 0) {
            copy_str(cJSON_GetArrayItem(folds, 0), "test_span.first_time", row->first_time, sizeof row->first_time);
            copy_str(cJSON_GetArrayItem(folds, nf - 1), "test_span.last_time", row->last_time, sizeof row->last_time);
        }
        const cJSON* nb = json_at(root, "trades.n_bars", 13);
        if (cJSON_IsNumber(nb)) row->n_bars = nb->valuedouble;
    } else {
        const cJSON* test = cJSON_GetObjectItemCaseSensitive(root, "test");
        row->kind = cJSON_IsObject(bt) ? VP_COMPARE_BACKTEST : VP_COMPARE_TRAIN;
        *block = row->kind == VP_COMPARE_BACKTEST ? root : test;
        if (row->kind == VP_COMPARE_TRAIN) copy_str(root, "data", row->data, sizeof row->data);
        const cJSON* b = *block ? cJSON_GetObjectItemCaseSensitive(*block, "backtest") : NULL;
        if (row->kind == VP_COMPARE_BACKTEST) copy_str(b, "data", row->data, sizeof row->data);
        copy_str(b, "span.first_time", row->first_time, sizeof row->first_time);
        copy_str(b, "span.last_time", row->last_time, sizeof row->last_time);
        const cJSON* nb = b ? json_at(b, "span.n_bars", 11) : NULL;
        if (cJSON_IsNumber(nb)) row->n_bars = nb->valuedouble;
    }
    // the status: a run without its test span is unfinished; a ruin is named
    st = *block ? cJSON_GetObjectItemCaseSensitive(*block, "status") : NULL;
    snprintf(row->status, sizeof row->status, "%s",
             !*block                                       ? "unfinished"
             : cJSON_IsString(st) && st->valuestring[0]    ? st->valuestring
                                                           : "ok");
}

vp_status vp_compare_load(const char* dir, vp_compare_row* row) {
    VP_REQUIRE(dir && row, VP_ERR_INVALID_ARG, "vp_compare_load: dir and row must not be NULL");
    memset(row, 0, sizeof *row);
    VP_REQUIRE(strlen(dir) < sizeof row->dir - 16, VP_ERR_INVALID_ARG, "folder '%.200s...' has too long a name",
               dir);
    snprintf(row->dir, sizeof row->dir, "%s", dir);
    // the name: the last path component, trailing slashes aside
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/') --len;
    size_t start = len;
    while (start > 0 && dir[start - 1] != '/') --start;
    snprintf(row->name, sizeof row->name, "%.*s", (int)(len - start), dir + start);

    // the folder and its summary.json
    struct stat sb;
    VP_REQUIRE(stat(dir, &sb) == 0, VP_ERR_IO, "'%s': no such folder", dir);
    VP_REQUIRE(S_ISDIR(sb.st_mode), VP_ERR_INVALID_ARG,
               "'%s' is a file, not a folder: give run folders (vulpes train), walk-forward folders or backtest "
               "folders (vulpes backtest --out)", dir);
    char path[1100];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    FILE* f = fopen(path, "rb");
    VP_REQUIRE(f != NULL, VP_ERR_IO,
               "'%s' is not a run: it holds no summary.json (vulpes train, vulpes walkforward and vulpes backtest "
               "--out write one)", dir);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char* text = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
    size_t got = text ? fread(text, 1, (size_t)n, f) : 0;
    fclose(f);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "reading %s: out of memory", path);
    text[got] = '\0';
    cJSON* root = cJSON_Parse(text);
    free(text);
    VP_REQUIRE(cJSON_IsObject(root), VP_ERR_PARSE, "%s is not a JSON object: not a summary vulpes wrote", path);
    const int known = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(root, "strategy")) ||
                      cJSON_IsBool(cJSON_GetObjectItemCaseSensitive(root, "finished"));
    if (!known) cJSON_Delete(root);
    VP_REQUIRE(known, VP_ERR_PARSE,
               "%s has neither \"strategy\" nor \"finished\": not the summary of a run, walk-forward or backtest", path);

    // kind, span and figures
    const cJSON* block = NULL;
    fill_row(root, row, &block);
    for (int c = 0; c < N_COLUMNS; ++c) row->value[c] = column_value(COLUMNS[c].path, root, block);
    cJSON_Delete(root);
    return VP_OK;
}
