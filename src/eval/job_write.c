/* A multi-run job's table files written (job_write.h). */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "eval/job_write.h"
#include "vulpes/run.h"

void vp_job_csv_num(FILE* out, double v) {
    if (isnan(v)) return;
    if (isinf(v)) fputs(v > 0 ? "inf" : "-inf", out);
    else fprintf(out, "%.17g", v);
}

vp_status vp_job_json_write(FILE* out, cJSON* root, vp_status s, const char* file) {
    if (s != VP_OK) {
        cJSON_Delete(root);
        return s;
    }
    char* text = cJSON_Print(root);
    cJSON_Delete(root);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "%s: out of memory", file);
    fputs(text, out);
    fputc('\n', out);
    free(text);
    VP_REQUIRE(!ferror(out), VP_ERR_IO, "writing %s failed: %s", file, strerror(errno));
    return VP_OK;
}

vp_status vp_job_json_save(const char* dir, const char* file, const cJSON* root) {
    char* text = cJSON_Print(root);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "%s: out of memory", file);
    char path[VP_RUN_PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    const size_t n = strlen(text);
    char* line = (char*)realloc(text, n + 2);
    if (!line) {
        free(text);
        VP_FAIL(VP_ERR_OOM, "%s: out of memory", file);
    }
    line[n] = '\n', line[n + 1] = '\0';
    vp_status s = vp_file_write_atomic(path, line, n + 1);
    free(line);
    return s;
}

vp_status vp_job_write_files(const char* dir, const char* const* names, const vp_job_writer* writers, int n,
                             const void* ctx) {
    for (int i = 0; i < n; ++i) {
        char path[VP_RUN_PATH_MAX + 32];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        vp_atomic_file af;
        VP_TRY(vp_atomic_file_open(&af, path));
        vp_status s = writers[i](af.f, ctx);
        if (s != VP_OK) {
            vp_atomic_file_abort(&af);
            return vp_error_context(s, "writing %s", path);
        }
        VP_TRY(vp_atomic_file_commit(&af));
    }
    return VP_OK;
}
