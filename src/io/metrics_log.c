/* metrics.jsonl: one JSON object per log event, one line each, flushed per line; beside it
 * the TensorBoard event file mirroring the lines (io/tfevents.h). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "io/tfevents.h"
#include "vulpes/run.h"

/* Writes the event file `ev` anew (atomically): the version record, then, when appending,
 * one Event per complete line already in `path` (a line that does not parse keeps its index
 * but gives no Event); sets m->line_index to the lines read. */
static vp_status rebuild_events(vp_metrics_log* m, const char* path, const char* ev, int append) {
    vp_atomic_file af;
    VP_TRY(vp_atomic_file_open(&af, ev));
    const double now = vp_tfevents_now();
    vp_status s = vp_tfevents_write_version(af.f, ev, now);
    FILE* in = append && s == VP_OK ? fopen(path, "rb") : NULL;
    if (in) {
        char* line = NULL;
        size_t cap = 0;
        ssize_t got;
        while (s == VP_OK && (got = getline(&line, &cap, in)) > 0) {
            if (line[got - 1] != '\n') break; /* a line cut short: not a line yet */
            cJSON* j = cJSON_Parse(line);
            if (cJSON_IsObject(j)) s = vp_tfevents_write_metrics(af.f, ev, j, m->line_index, now);
            cJSON_Delete(j);
            m->line_index++;
        }
        free(line);
        fclose(in);
    }
    if (s != VP_OK) {
        vp_atomic_file_abort(&af);
        return s;
    }
    return vp_atomic_file_commit(&af);
}

vp_status vp_metrics_log_open(vp_metrics_log* m, const char* path, int append) {
    VP_REQUIRE(m && path, VP_ERR_INVALID_ARG, "vp_metrics_log_open: m and path must not be NULL");
    memset(m, 0, sizeof *m);
    VP_REQUIRE(strlen(path) < sizeof m->path, VP_ERR_INVALID_ARG, "metrics path '%.200s...' is too long", path);
    snprintf(m->path, sizeof m->path, "%s", path);
    // the TensorBoard mirror first, from the lines already there, then both files open to append
    char ev[VP_RUN_PATH_MAX];
    VP_TRY(vp_tfevents_path(path, ev, sizeof ev));
    VP_TRY(rebuild_events(m, path, ev, append));
    m->events = fopen(ev, "ab");
    VP_REQUIRE(m->events != NULL, VP_ERR_IO, "cannot open '%s' for writing: %s", ev, strerror(errno));
    m->f = fopen(path, append ? "ab" : "wb");
    if (!m->f) {
        int err = errno;
        fclose(m->events);
        m->events = NULL;
        VP_FAIL(VP_ERR_IO, "cannot open '%s' for writing: %s", path, strerror(err));
    }
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
    cJSON* obj = (cJSON*)m->event;
    m->event = NULL;
    char* text = cJSON_PrintUnformatted(obj);
    if (!text) cJSON_Delete(obj);
    VP_REQUIRE(text != NULL, VP_ERR_OOM, "%s: out of memory", m->path);
    int bad = fputs(text, m->f) == EOF || fputc('\n', m->f) == EOF || fflush(m->f) != 0;
    int err = errno;
    cJSON_free(text);
    if (bad) cJSON_Delete(obj);
    VP_REQUIRE(!bad, VP_ERR_IO, "writing '%s' failed: %s", m->path, strerror(err));
    m->lines++;
    // the same line as a TensorBoard Event (the event file's name is the metrics file's, in its folder)
    char ev[VP_RUN_PATH_MAX];
    vp_status s = vp_tfevents_path(m->path, ev, sizeof ev);
    if (s == VP_OK && m->events) s = vp_tfevents_write_metrics(m->events, ev, obj, m->line_index, vp_tfevents_now());
    m->line_index++;
    cJSON_Delete(obj);
    return s;
}

void vp_metrics_log_close(vp_metrics_log* m) {
    if (!m) return;
    if (m->event) cJSON_Delete((cJSON*)m->event);
    m->event = NULL;
    if (m->f) fclose(m->f);
    m->f = NULL;
    if (m->events) fclose(m->events);
    m->events = NULL;
}
