/* `vulpes compare`, writing: the console table, CSV, JSON and the HTML page. */
#define _XOPEN_SOURCE 700
#include <cjson/cJSON.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "eval/eval_impl.h"
#include "eval/compare.h"
#include "eval/report_internal.h"
#include "vulpes/run.h"
#include "vulpes/version.h"

/* The date part of an ISO time ("2017-11-09T01:00:00Z" -> "2017-11-09"), "-" when none. */
static const char* date_of(const char* iso, char* buf, size_t n) {
    snprintf(buf, n, "%.10s", iso && iso[0] ? iso : "-");
    return buf;
}

/* Width of a console column: its label or its widest value. */
static int col_width(const vp_compare_column* c, const vp_compare_row* rows, int n, int k) {
    char buf[64];
    int w = (int)strlen(c->label);
    for (int r = 0; r < n; ++r) {
        int l = (int)strlen(vp_metric_format(rows[r].value[k], c->unit, buf, sizeof buf));
        if (l > w) w = l;
    }
    return w;
}

vp_status vp_compare_print(FILE* out, const vp_compare_row* rows, int n) {
    VP_REQUIRE(out && (rows || n == 0), VP_ERR_INVALID_ARG, "vp_compare_print: out and rows must be given");
    int nc;
    const vp_compare_column* cols = vp_compare_columns(&nc);
    int wname = 3;
    for (int r = 0; r < n; ++r)
        if ((int)strlen(rows[r].name) > wname) wname = (int)strlen(rows[r].name);
    // heading, then one line per folder
    fprintf(out, "%-*s  %-11s  %-10s  %-10s  %-10s", wname, "run", "kind", "status", "from", "to");
    int w[VP_COMPARE_MAX_COLUMNS];
    for (int k = 0; k < nc; ++k) {
        w[k] = col_width(&cols[k], rows, n, k);
        fprintf(out, "  %*s", w[k], cols[k].label);
    }
    fputc('\n', out);
    char a[16], b[16], v[64];
    for (int r = 0; r < n; ++r) {
        const vp_compare_row* x = &rows[r];
        fprintf(out, "%-*s  %-11s  %-10s  %-10s  %-10s", wname, x->name, vp_compare_kind_name(x->kind), x->status,
                date_of(x->first_time, a, sizeof a), date_of(x->last_time, b, sizeof b));
        for (int k = 0; k < nc; ++k) fprintf(out, "  %*s", w[k], vp_metric_format(x->value[k], cols[k].unit, v, sizeof v));
        fputc('\n', out);
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the comparison table failed: %s", strerror(errno));
    return VP_OK;
}

vp_status vp_compare_write_csv(FILE* out, const vp_compare_row* rows, int n) {
    VP_REQUIRE(out && (rows || n == 0), VP_ERR_INVALID_ARG, "vp_compare_write_csv: out and rows must be given");
    int nc;
    const vp_compare_column* cols = vp_compare_columns(&nc);
    fputs("dir,name,kind,status,data,first_time,last_time,n_bars", out);
    for (int k = 0; k < nc; ++k) fprintf(out, ",%s", cols[k].key);
    fputc('\n', out);
    for (int r = 0; r < n; ++r) {
        const vp_compare_row* x = &rows[r];
        const char* s[7] = {x->dir, x->name, vp_compare_kind_name(x->kind), x->status, x->data, x->first_time,
                            x->last_time};
        for (int i = 0; i < 7; ++i) {
            if (i) fputc(',', out);
            vp_csv_write_field(out, s[i]);
        }
        if (isnan(x->n_bars)) fputc(',', out);
        else fprintf(out, ",%.0f", x->n_bars);
        for (int k = 0; k < nc; ++k) {
            if (isnan(x->value[k])) fputc(',', out);
            else if (isinf(x->value[k])) fputs(x->value[k] > 0 ? ",inf" : ",-inf", out);
            else fprintf(out, ",%.17g", x->value[k]);
        }
        fputc('\n', out);
    }
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the comparison CSV failed: %s", strerror(errno));
    return VP_OK;
}

/* The JSON document (caller deletes). */
static vp_status compare_json(const vp_compare_row* rows, int n, cJSON** out) {
    int nc;
    const vp_compare_column* cols = vp_compare_columns(&nc);
    cJSON* root = cJSON_CreateObject();
    cJSON* jc = root ? cJSON_AddArrayToObject(root, "columns") : NULL;
    cJSON* jr = root ? cJSON_AddArrayToObject(root, "runs") : NULL;
    int ok = jc && jr;
    for (int k = 0; ok && k < nc; ++k) {
        cJSON* c = cJSON_CreateObject();
        ok = c && cJSON_AddItemToArray(jc, c) && cJSON_AddStringToObject(c, "key", cols[k].key) &&
             cJSON_AddStringToObject(c, "label", cols[k].label);
    }
    for (int r = 0; ok && r < n; ++r) {
        const vp_compare_row* x = &rows[r];
        cJSON* o = cJSON_CreateObject();
        ok = o && cJSON_AddItemToArray(jr, o) && cJSON_AddStringToObject(o, "dir", x->dir) &&
             cJSON_AddStringToObject(o, "name", x->name) &&
             cJSON_AddStringToObject(o, "kind", vp_compare_kind_name(x->kind)) &&
             cJSON_AddStringToObject(o, "status", x->status) && cJSON_AddStringToObject(o, "data", x->data) &&
             cJSON_AddStringToObject(o, "first_time", x->first_time) &&
             cJSON_AddStringToObject(o, "last_time", x->last_time);
        if (ok && vp_metric_json_add(o, "n_bars", x->n_bars) != VP_OK) ok = 0;
        cJSON* fig = ok ? cJSON_AddObjectToObject(o, "figures") : NULL;
        ok = fig != NULL;
        for (int k = 0; ok && k < nc; ++k) ok = vp_metric_json_add(fig, cols[k].key, x->value[k]) == VP_OK;
    }
    if (!ok) cJSON_Delete(root);
    VP_REQUIRE(ok, VP_ERR_OOM, "the comparison JSON: out of memory");
    *out = root;
    return VP_OK;
}

vp_status vp_compare_write_json(FILE* out, const vp_compare_row* rows, int n) {
    VP_REQUIRE(out && (rows || n == 0), VP_ERR_INVALID_ARG, "vp_compare_write_json: out and rows must be given");
    cJSON* root = NULL;
    VP_TRY(compare_json(rows, n, &root));
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "the comparison JSON: out of memory");
    fputs(text, out);
    fputc('\n', out);
    cJSON_free(text);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the comparison JSON failed: %s", strerror(errno));
    return VP_OK;
}

/* The index of column k's best row (NaN rows aside), -1 when the column ranks nothing or
 * fewer than two rows have a value. */
static int best_row(const vp_compare_column* c, const vp_compare_row* rows, int n, int k) {
    int best = -1, count = 0;
    for (int r = 0; r < n; ++r) {
        double v = rows[r].value[k];
        if (isnan(v) || c->better == 0) continue;
        ++count;
        if (best < 0 || (c->better > 0 ? v > rows[best].value[k] : v < rows[best].value[k])) best = r;
    }
    return count >= 2 ? best : -1;
}

vp_status vp_compare_write_html(FILE* out, const vp_compare_row* rows, int n) {
    VP_REQUIRE(out && (rows || n == 0), VP_ERR_INVALID_ARG, "vp_compare_write_html: out and rows must be given");
    int nc;
    const vp_compare_column* cols = vp_compare_columns(&nc);
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">\n"
          "<title>vulpes compare</title>\n<style>body{font-family:'DejaVu Sans',Arial,sans-serif;margin:24px;"
          "color:#1d1d1d}table{border-collapse:collapse;font-size:13px}th,td{border:1px solid #c8c8c8;"
          "padding:3px 8px}th{background:#eef1f6;white-space:nowrap}td{text-align:right;white-space:nowrap;"
          "font-variant-numeric:tabular-nums}td.l{text-align:left}td.best{background:#dcefdc;font-weight:bold}"
          ".note{color:#555;font-size:12px}</style>\n</head>\n<body>\n<h1>Comparison of ",
          out);
    fprintf(out, "%d folder%s</h1>\n<table class=\"compare\">\n<tr><th>run</th><th>kind</th><th>status</th>"
            "<th>data</th><th>from</th><th>to</th><th>bars</th>", n, n == 1 ? "" : "s");
    int best[VP_COMPARE_MAX_COLUMNS];
    for (int k = 0; k < nc; ++k) {
        best[k] = best_row(&cols[k], rows, n, k);
        fprintf(out, "<th data-key=\"%s\">", cols[k].key);
        vp_html_escape_write(out, cols[k].label);
        fputs("</th>", out);
    }
    fputs("</tr>\n", out);
    char v[64], real[PATH_MAX];
    for (int r = 0; r < n; ++r) {
        const vp_compare_row* x = &rows[r];
        // the name links to the folder's report.html when there is one
        char report[1100];
        snprintf(report, sizeof report, "%s/report.html", x->dir);
        fputs("<tr><td class=\"l\">", out);
        if (access(report, R_OK) == 0 && realpath(report, real)) {
            fputs("<a href=\"file://", out);
            vp_html_escape_write(out, real);
            fputs("\">", out);
            vp_html_escape_write(out, x->name);
            fputs("</a>", out);
        } else {
            vp_html_escape_write(out, x->name);
        }
        fprintf(out, "</td><td class=\"l\">%s</td><td class=\"l\">", vp_compare_kind_name(x->kind));
        vp_html_escape_write(out, x->status);
        fputs("</td><td class=\"l\">", out);
        vp_html_escape_write(out, x->data);
        fputs("</td><td class=\"l\">", out);
        vp_html_escape_write(out, x->first_time[0] ? x->first_time : "-");
        fputs("</td><td class=\"l\">", out);
        vp_html_escape_write(out, x->last_time[0] ? x->last_time : "-");
        fprintf(out, "</td><td>%s</td>", vp_metric_format(x->n_bars, VP_METRIC_UNIT_INT, v, sizeof v));
        for (int k = 0; k < nc; ++k) {
            fprintf(out, "<td%s>", best[k] == r ? " class=\"best\"" : "");
            vp_html_escape_write(out, vp_metric_format(x->value[k], cols[k].unit, v, sizeof v));
            fputs("</td>", out);
        }
        fputs("</tr>\n", out);
    }
    fprintf(out, "</table>\n<p class=\"note\">Figures of each folder's summary.json: a training run's test span "
            "(its exact backtest), a walk-forward's stitched test spans, a backtest's span. The best value of a "
            "ranked column is marked; '-' marks a figure the folder does not have. Written by vulpes %s.</p>\n"
            "</body>\n</html>\n", VP_VERSION_STRING);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing the comparison page failed: %s", strerror(errno));
    return VP_OK;
}

vp_status vp_compare_write_dir(const char* dir, const vp_compare_row* rows, int n) {
    VP_REQUIRE(dir && (rows || n == 0), VP_ERR_INVALID_ARG, "vp_compare_write_dir: dir and rows must be given");
    static const char* names[3] = {"compare.csv", "compare.json", "compare.html"};
    vp_status (*writers[3])(FILE*, const vp_compare_row*, int) = {vp_compare_write_csv, vp_compare_write_json,
                                                                  vp_compare_write_html};
    for (int i = 0; i < 3; ++i) {
        char path[VP_RUN_PATH_MAX];
        int w = snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        VP_REQUIRE(w > 0 && (size_t)w < sizeof path, VP_ERR_INVALID_ARG, "folder '%.200s' has too long a name", dir);
        vp_atomic_file af;
        VP_TRY(vp_atomic_file_open(&af, path));
        vp_status s = writers[i](af.f, rows, n);
        if (s != VP_OK) {
            vp_atomic_file_abort(&af);
            return vp_error_context(s, "writing '%s'", path);
        }
        VP_TRY(vp_atomic_file_commit(&af));
    }
    return VP_OK;
}
