/* metrics.jsonl: one JSON object per log event, one line each, flushed per line. */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <string.h>

#include "vulpes/run.h"

vp_status vp_metrics_log_open(vp_metrics_log* m, const char* path, int append) {
    VP_REQUIRE(m && path, VP_ERR_INVALID_ARG, "vp_metrics_log_open: m and path must not be NULL");
    memset(m, 0, sizeof *m);
    VP_REQUIRE(strlen(path) < sizeof m->path, VP_ERR_INVALID_ARG, "metrics path '%.200s...' is too long", path);
    snprintf(m->path, sizeof m->path, "%s", path);
    m->f = fopen(path, append ? "ab" : "wb");
    VP_REQUIRE(m->f != NULL, VP_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(errno));
    return VP_OK;
}

vp_status vp_metrics_log_begin(vp_metrics_log* m, const char* event) {
    VP_REQUIRE(m && m->f && event, VP_ERR_INVALID_ARG,
               "vp_metrics_log_begin: an open writer and an event name are needed");
    VP_REQUIRE(m->event == NULL, VP_ERR_STATE, "%s: an event is already open (vp_metrics_log_end it first)", m->path);
    cJSON* obj = cJSON_CreateObject();
    VP_REQUIRE(obj && cJSON_AddStringToObject(obj, "event", event), VP_ERR_OOM, "%s: out of memory", m->path);
    m->event = obj;
    return VP_OK;
}

/* Checks that an event is open and `key` is new in it. */
static vp_status check_field(const vp_metrics_log* m, const char* key) {
    VP_REQUIRE(m && key, VP_ERR_INVALID_ARG, "metrics field: m and key must not be NULL");
    VP_REQUIRE(m->event != NULL, VP_ERR_STATE, "%s: field '%s' outside an event (vp_metrics_log_begin first)", m->path,
               key);
    VP_REQUIRE(!cJSON_GetObjectItemCaseSensitive((cJSON*)m->event, key), VP_ERR_INVALID_ARG,
               "%s: field '%s' given twice in one event", m->path, key);
    return VP_OK;
}

vp_status vp_metrics_log_int(vp_metrics_log* m, const char* key, int64_t value) {
    VP_TRY(check_field(m, key));
    VP_REQUIRE(value <= ((int64_t)1 << 53) && value >= -((int64_t)1 << 53), VP_ERR_INVALID_ARG,
               "%s: field '%s' = %lld is not exact in JSON", m->path, key, (long long)value);
    VP_REQUIRE(cJSON_AddNumberToObject((cJSON*)m->event, key, (double)value), VP_ERR_OOM, "%s: out of memory", m->path);
    return VP_OK;
}

vp_status vp_metrics_log_num(vp_metrics_log* m, const char* key, double value) {
    VP_TRY(check_field(m, key));
    // JSON has no NaN or infinity
    cJSON* item = isfinite(value) ? cJSON_CreateNumber(value) : cJSON_CreateNull();
    VP_REQUIRE(item && cJSON_AddItemToObject((cJSON*)m->event, key, item), VP_ERR_OOM, "%s: out of memory", m->path);
    return VP_OK;
}

vp_status vp_metrics_log_str(vp_metrics_log* m, const char* key, const char* value) {
    VP_TRY(check_field(m, key));
    VP_REQUIRE(value, VP_ERR_INVALID_ARG, "%s: field '%s' has a NULL string", m->path, key);
    VP_REQUIRE(cJSON_AddStringToObject((cJSON*)m->event, key, value), VP_ERR_OOM, "%s: out of memory", m->path);
    return VP_OK;
}

vp_status vp_metrics_log_end(vp_metrics_log* m) {
    VP_REQUIRE(m && m->event, VP_ERR_STATE, "vp_metrics_log_end: no event is open");
    // print the object on one line, then flush it
    char* text = cJSON_PrintUnformatted((cJSON*)m->event);
    cJSON_Delete((cJSON*)m->event);
    m->event = NULL;
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "%s: out of memory", m->path);
    int bad = fputs(text, m->f) == EOF || fputc('\n', m->f) == EOF || fflush(m->f) != 0;
    int err = errno;
    cJSON_free(text);
    VP_REQUIRE(!bad, VP_ERR_IO, "writing '%s' failed: %s", m->path, strerror(err));
    m->lines++;
    return VP_OK;
}

void vp_metrics_log_close(vp_metrics_log* m) {
    if (!m) return;
    if (m->event) cJSON_Delete((cJSON*)m->event);
    m->event = NULL;
    if (m->f) fclose(m->f);
    m->f = NULL;
}
