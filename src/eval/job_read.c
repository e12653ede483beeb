/* A multi-run job's folders read back (job_read.h): whole files, run summaries and their
 * figures, the resumed folder's config against the base. */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_read.h"
#include "vulpes/run.h"

char* vp_job_read_text(const char* dir, const char* file) {
    char path[VP_RUN_PATH_MAX + 64];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    const long n = ftell(f);
    rewind(f);
    char* buf = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
    const size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
    fclose(f);
    if (buf && got != (size_t)n) {
        free(buf);
        return NULL;
    }
    if (buf) buf[got] = '\0';
    return buf;
}

cJSON* vp_job_summary(const char* dir) {
    char* text = vp_job_read_text(dir, "summary.json");
    cJSON* j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

double vp_job_figure(const cJSON* obj, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
    if (cJSON_IsNumber(v)) return v->valuedouble;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "inf") == 0) return INFINITY;
    if (cJSON_IsString(v) && strcmp(v->valuestring, "-inf") == 0) return -INFINITY;
    return NAN;
}

vp_status vp_job_check_base(const char* dir, const vp_config* base, const char* what) {
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/config.yaml", dir);
    vp_config old;
    vp_config_defaults(&old);
    VP_TRY(vp_config_load_file(&old, path));
    old.run = base->run;
    const vp_config_key* k = vp_config_diff(&old, base);
    VP_REQUIRE(k == NULL, VP_ERR_INVALID_ARG, "cannot resume the %s in %s: %s differs from its config.yaml", what,
               dir, k ? k->name : "");
    return VP_OK;
}
