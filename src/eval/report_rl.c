/* report.html's panels of the agent: the mix of its choices per action branch, and from the
 * training run's metrics.jsonl (when the checkpoint's run folder is known) the loss and
 * validation curves over the iterations, the training-signal bus's curves (when logged) and
 * the checkpoint's validation against this page's span. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/report_internal.h"
#include "eval/report_vsn.h"
#include "metrics/metrics_internal.h"
#include "vulpes/env.h"
#include "vulpes/report.h"

/* The choices of each branch, as trades.csv and vulpes act name them. */
static const char* const BRANCH[VP_ENV_BRANCHES] = {"direction", "size", "take-profit", "stop-loss"};
static const char* const CHOICE[VP_ENV_BRANCHES][4] = {{"short", "flat", "long", NULL},
                                                         {"0.25", "0.5", "0.75", "1.0"},
                                                         {"none", "1 ATR", "2 ATR", NULL},
                                                         {"none", "1 ATR", "2 ATR", NULL}};

/* The share of each choice of each branch over the decisions. */
static void write_action_mix(FILE* out, const int32_t* actions, int64_t n) {
    int64_t count[VP_ENV_BRANCHES][4] = {{0}}, total = 0;
    for (int64_t i = 0; i < n; ++i) {
        const int32_t* a = actions + VP_ENV_BRANCHES * i;
        if (a[0] < 0) continue;
        ++total;
        for (int b = 0; b < VP_ENV_BRANCHES; ++b)
            if (a[b] >= 0 && a[b] < 4) count[b][a[b]]++;
    }
    fprintf(out, "<h2>Action mix</h2>\n<table class=\"actions\">\n<tr><th>branch</th><th colspan=\"4\">share of the "
            "%lld decisions</th></tr>\n", (long long)total);
    char buf[32];
    for (int b = 0; b < VP_ENV_BRANCHES; ++b) {
        fprintf(out, "<tr><td class=\"l\">%s</td>", BRANCH[b]);
        for (int c = 0; c < 4; ++c) {
            if (!CHOICE[b][c]) {
                fputs("<td></td>", out);
                continue;
            }
            double f = total ? (double)count[b][c] / (double)total : NAN;
            fprintf(out, "<td data-branch=\"%d\" data-choice=\"%d\" data-count=\"%lld\">%s: %s</td>", b, c,
                    (long long)count[b][c], CHOICE[b][c], vp_metric_format(f, VP_METRIC_UNIT_FRAC, buf, sizeof buf));
        }
        fputs("</tr>\n", out);
    }
    fputs("</table>\n<p class=\"note\">Size, take-profit and stop-loss are chosen at every decision, also when the "
          "direction is flat (they then do nothing).</p>\n", out);
}

/* The lines of a metrics.jsonl, parsed (NULL entries for lines that do not parse). */
typedef struct jsonl {
    cJSON** line; /* [n] */
    int64_t n;
} jsonl;

static void jsonl_free(jsonl* j) {
    for (int64_t i = 0; i < j->n; ++i) cJSON_Delete(j->line[i]);
    free(j->line);
    memset(j, 0, sizeof *j);
}

/* Reads path; 0 when it cannot be read (the panels are then left out). */
static int jsonl_read(const char* path, jsonl* j) {
    memset(j, 0, sizeof *j);
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    char* buf = NULL;
    size_t cap = 0;
    int64_t room = 0;
    ssize_t got;
    while ((got = getline(&buf, &cap, f)) > 0) {
        if (j->n == room) {
            room = room ? 2 * room : 256;
            cJSON** p = (cJSON**)realloc(j->line, sizeof *p * (size_t)room);
            if (!p) break;
            j->line = p;
        }
        j->line[j->n++] = cJSON_Parse(buf);
    }
    free(buf);
    fclose(f);
    return 1;
}

/* The number `key` of a line, NaN when absent or null. */
static double num(const cJSON* line, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(line, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

/* Whether a line is event `ev`. */
static int is_event(const cJSON* line, const char* ev) {
    const cJSON* e = cJSON_GetObjectItemCaseSensitive(line, "event");
    return cJSON_IsString(e) && strcmp(e->valuestring, ev) == 0;
}

/* A chart over the iterations of `ev` lines of k keys (one curve each). */
static vp_status iteration_chart(FILE* out, const jsonl* j, const char* ev, const char* const* keys,
                                 const char* const* colors, int k, const char* name, vp_metric_unit unit) {
    int64_t n = 0;
    for (int64_t i = 0; i < j->n; ++i) n += is_event(j->line[i], ev) && !isnan(num(j->line[i], "iteration"));
    if (n < 2) return VP_OK;
    int64_t* t = (int64_t*)malloc(sizeof *t * (size_t)n);
    double* y = (double*)malloc(sizeof *y * (size_t)n * (size_t)k);
    if (!t || !y) {
        free(t);
        free(y);
        VP_FAIL(VP_ERR_OOM, "report: no memory for %lld logged iterations", (long long)n);
    }
    // one point per line, its iteration strictly after the previous one (a resume may repeat one)
    int64_t m = 0;
    for (int64_t i = 0; i < j->n; ++i) {
        const cJSON* l = j->line[i];
        if (!is_event(l, ev) || isnan(num(l, "iteration"))) continue;
        int64_t it = (int64_t)num(l, "iteration");
        if (m > 0 && it <= t[m - 1]) m--;
        t[m] = it;
        for (int q = 0; q < k; ++q) y[(size_t)q * (size_t)n + (size_t)m] = num(l, keys[q]);
        ++m;
    }
    vp_svg_series s[4];
    for (int q = 0; q < k; ++q) s[q] = (vp_svg_series){y + (size_t)q * (size_t)n, colors[q], NULL, keys[q]};
    vp_svg_chart c = {t, m, s, k, 220, unit, 0, name, 0, 1, NULL, 0};
    vp_status st = m >= 2 ? vp_svg_chart_write(out, &c) : VP_OK;
    free(t);
    free(y);
    return st;
}

/* The training-signal bus's curves (vulpes/signals.h), when the train lines hold them: one
 * chart per group of at most four keys that share a scale. */
static vp_status write_signals(FILE* out, const jsonl* j) {
    static const struct {
        const char* name;
        const char* keys[4];
        int k;
    } CHARTS[] = {
        {"loss EMAs", {"sig.loss_fast", "sig.loss_slow"}, 2},
        {"loss and TD-error trends", {"sig.loss_trend", "sig.td_trend"}, 2},
        {"TD error", {"sig.td_abs", "sig.td_fast", "sig.td_slow"}, 3},
        {"online Q and its divergence from the target", {"sig.q_mean", "sig.q_var", "sig.q_div"}, 3},
        {"C51 entropy (nats) and atoms in use", {"sig.entropy", "sig.atom_util"}, 2},
        {"gradient norm per branch", {"sig.grad_br0", "sig.grad_br1", "sig.grad_br2", "sig.grad_br3"}, 4},
        {"target drift", {"sig.target_drift"}, 1},
        {"estimated edge and its variance", {"sig.edge", "sig.edge_var"}, 2},
        {"learning rate", {"sig.lr"}, 1},
        {"Polyak tau", {"sig.tau"}, 1},
        {"epsilon scale, gamma and Kelly cap", {"sig.eps_scale", "sig.gamma", "sig.kelly_cap"}, 3},
    };
    static const char* colors[4] = {VP_REPORT_COLOR_STRATEGY, VP_REPORT_COLOR_BENCHMARK, VP_REPORT_COLOR_DRAWDOWN,
                                    "#2e8b57"};
    int bus = 0, lr = 0;
    for (int64_t i = 0; i < j->n; ++i)
        if (j->line[i] && is_event(j->line[i], "train")) {
            bus |= !isnan(num(j->line[i], "sig.steps"));
            lr |= !isnan(num(j->line[i], "sig.lr"));
        }
    if (!bus && !lr) return VP_OK;
    fputs("<h2>Training signals</h2>\n<p class=\"meta\">the signal bus of the learner (docs/modules.md), at each "
          "logged iteration</p>\n", out);
    for (size_t c = 0; c < sizeof CHARTS / sizeof CHARTS[0]; ++c) {
        // without the bus only the learning-rate schedule is logged
        if (!bus && strcmp(CHARTS[c].keys[0], "sig.lr") != 0) continue;
        VP_TRY(iteration_chart(out, j, "train", CHARTS[c].keys, colors, CHARTS[c].k, CHARTS[c].name,
                               VP_METRIC_UNIT_RATIO));
    }
    return VP_OK;
}

/* The checkpoint's validation (the eval line of the last checkpoint line naming its file) against
 * this page's figures. */
static void write_val_vs_test(FILE* out, const jsonl* j, const vp_report* r) {
    const char* base = r->checkpoint ? strrchr(r->checkpoint, '/') : NULL;
    base = base ? base + 1 : r->checkpoint;
    double it = NAN;
    for (int64_t i = 0; base && i < j->n; ++i) {
        const cJSON* f = cJSON_GetObjectItemCaseSensitive(j->line[i], "file");
        if (is_event(j->line[i], "checkpoint") && cJSON_IsString(f) && strcmp(f->valuestring, base) == 0)
            it = num(j->line[i], "iteration");
    }
    const cJSON* val = NULL;
    for (int64_t i = 0; !isnan(it) && i < j->n; ++i)
        if (is_event(j->line[i], "eval") && num(j->line[i], "iteration") == it) val = j->line[i];
    if (!val || !r->metrics) return;
    const vp_perf* p = &r->metrics->strategy;
    static const char* keys[5] = {"val_sharpe", "val_total_return_frac", "val_annual_return_frac",
                                  "val_max_drawdown_frac", "val_exposure_frac"};
    static const char* labels[5] = {"Sharpe", "total return", "annual return", "max drawdown", "exposure"};
    const double test[5] = {p->sharpe, p->total_return, p->annual_return, p->max_drawdown, r->metrics->trades.exposure};
    fprintf(out, "<h2>Validation against this span</h2>\n<table class=\"valtest\">\n<tr><th>figure</th>"
            "<th>validation (iteration %lld)</th><th>this span</th></tr>\n", (long long)it);
    char a[32], b[32];
    for (int q = 0; q < 5; ++q) {
        vp_metric_unit u = q == 0 ? VP_METRIC_UNIT_RATIO : VP_METRIC_UNIT_FRAC;
        fprintf(out, "<tr data-key=\"%s\"><td class=\"l\">%s</td><td>%s</td><td>%s</td></tr>\n", keys[q], labels[q],
                vp_metric_format(num(val, keys[q]), u, a, sizeof a), vp_metric_format(test[q], u, b, sizeof b));
    }
    fputs("</table>\n<p class=\"note\">The validation is the one the checkpoint was kept for; a span far worse than "
          "it is the usual sign of a selection that fit the validation bars.</p>\n", out);
}

vp_status vp_report_rl_write(FILE* out, const vp_report* r) {
    if (r->actions && r->n_actions > 0) write_action_mix(out, r->actions, r->n_actions);
    jsonl j;
    if (!r->run_metrics || !jsonl_read(r->run_metrics, &j)) return VP_OK;
    static const char* loss_keys[3] = {"loss", "loss_c51", "loss_iqn"};
    static const char* val_keys[2] = {"val_sharpe", "val_buy_hold_sharpe"};
    static const char* colors[3] = {VP_REPORT_COLOR_STRATEGY, VP_REPORT_COLOR_BENCHMARK, VP_REPORT_COLOR_DRAWDOWN};
    fputs("<h2>Learning curves</h2>\n<p class=\"meta\">from ", out);
    vp_html_escape_write(out, r->run_metrics);
    fputs(", over the training iterations</p>\n", out);
    vp_status s = iteration_chart(out, &j, "train", loss_keys, colors, 3, "training loss", VP_METRIC_UNIT_RATIO);
    if (s == VP_OK)
        s = iteration_chart(out, &j, "eval", val_keys, colors, 2, "validation Sharpe", VP_METRIC_UNIT_RATIO);
    if (s == VP_OK) s = write_signals(out, &j);
    if (s == VP_OK) write_val_vs_test(out, &j, r);
    // the variable selection's feature importance, from the last train line (none without model.vsn)
    const cJSON* last = NULL;
    for (int64_t i = 0; i < j.n; ++i)
        if (j.line[i] && is_event(j.line[i], "train")) last = j.line[i];
    if (s == VP_OK && last) vp_report_vsn_write(out, last, (int64_t)num(last, "iteration"));
    jsonl_free(&j);
    return s;
}
