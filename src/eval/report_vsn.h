/* Internal to src/eval: report.html's feature-importance panel (report_vsn.c). */
#ifndef VP_EVAL_REPORT_VSN_H
#define VP_EVAL_REPORT_VSN_H

#include <cjson/cJSON.h>
#include <stdint.h>
#include <stdio.h>

/* Writes the panel of the "vsn.<feature>" numbers of a "train" line of metrics.jsonl (logged
 * at `iteration`); writes nothing when the line (may be NULL) has none. */
void vp_report_vsn_write(FILE* out, const cJSON* line, int64_t iteration);

#endif /* VP_EVAL_REPORT_VSN_H */
