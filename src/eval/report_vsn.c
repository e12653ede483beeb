/* The feature-importance panel: the variable selection's mean weight of each feature
 * ("vsn.<feature>" of a "train" event of metrics.jsonl), largest first, as a table with a bar
 * per feature. Runs without variable selection have no such keys and no panel. */
#include <math.h>
#include <string.h>

#include "eval/report_internal.h"
#include "eval/report_vsn.h"

/* Most features a panel lists. */
#define VSN_MAX 256

/* One feature's weight. */
typedef struct vsn_row {
    const char* name; /* after "vsn." */
    double w;
} vsn_row;

void vp_report_vsn_write(FILE* out, const cJSON* line, int64_t iteration) {
    vsn_row rows[VSN_MAX];
    int n = 0;
    double top = 0;
    for (const cJSON* it = line ? line->child : NULL; it && n < VSN_MAX; it = it->next) {
        if (!it->string || strncmp(it->string, "vsn.", 4) != 0 || !cJSON_IsNumber(it)) continue;
        rows[n].name = it->string + 4;
        rows[n].w = it->valuedouble;
        top = fmax(top, rows[n].w);
        n++;
    }
    if (n == 0) return;
    // largest weight first (insertion sort: a few dozen rows)
    for (int i = 1; i < n; ++i)
        for (int j = i; j > 0 && rows[j].w > rows[j - 1].w; --j) {
            const vsn_row t = rows[j];
            rows[j] = rows[j - 1];
            rows[j - 1] = t;
        }
    fprintf(out, "<h2>Feature importance</h2>\n<p class=\"meta\">the variable selection's mean weight of each "
            "feature over the learner's batch at iteration %lld (uniform: %.4f)</p>\n<table class=\"vsn\">\n"
            "<tr><th>feature</th><th>weight</th><th></th></tr>\n", (long long)iteration, 1.0 / n);
    for (int i = 0; i < n; ++i) {
        const double pct = top > 0 ? 100.0 * rows[i].w / top : 0.0;
        fprintf(out, "<tr data-feature=\"");
        vp_html_escape_write(out, rows[i].name);
        fputs("\"><td class=\"l\">", out);
        vp_html_escape_write(out, rows[i].name);
        fprintf(out, "</td><td>%.4f</td><td class=\"l\"><span style=\"display:inline-block;height:0.8em;width:%.1fpx;"
                "background:" VP_REPORT_COLOR_STRATEGY "\"></span></td></tr>\n", rows[i].w, 2.0 * pct);
    }
    fputs("</table>\n<p class=\"note\">Weights of the softmax gate before the trunk (model.vsn): they sum to 1 over "
          "the features; a weight well above uniform is a feature the network leans on, not proof that it "
          "predicts.</p>\n", out);
}
