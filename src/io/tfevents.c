/* TensorBoard event files: CRC32C, TFRecord framing, and a hand encoder of the few
 * tensorflow.Event fields vulpes writes (src/io/tfevents.h lists them). */
#define _POSIX_C_SOURCE 200809L
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "io/tfevents.h"

/* ---- CRC32C ----------------------------------------------------------------------------------- */

/* The reflected Castagnoli polynomial. */
#define CRC32C_POLY 0x82F63B78u

uint32_t vp_crc32c(const void* data, size_t n) {
    // bit by bit: the records are small, and no table means no shared state between threads
    const uint8_t* p = (const uint8_t*)data;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i) {
        c ^= p[i];
        for (int k = 0; k < 8; ++k) c = (c & 1u) ? (c >> 1) ^ CRC32C_POLY : c >> 1;
    }
    return c ^ 0xFFFFFFFFu;
}

uint32_t vp_crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }

/* ---- a growing byte buffer and the protocol buffer wire format ---------------------------------- */

typedef struct pb_buf {
    uint8_t* p; /* [cap] bytes, n used */
    size_t n;
    size_t cap;
    int oom; /* 1: an append failed; the contents are incomplete */
} pb_buf;

/* Appends bytes[k]. */
static void put(pb_buf* b, const void* bytes, size_t k) {
    if (b->oom || k == 0) return;
    if (b->n + k > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->n + k) cap *= 2;
        uint8_t* q = (uint8_t*)realloc(b->p, cap);
        if (!q) {
            b->oom = 1;
            return;
        }
        b->p = q, b->cap = cap;
    }
    memcpy(b->p + b->n, bytes, k);
    b->n += k;
}

/* A base-128 varint, low groups first. */
static void put_varint(pb_buf* b, uint64_t v) {
    uint8_t tmp[10];
    int k = 0;
    do {
        tmp[k] = (uint8_t)(v & 0x7Fu);
        v >>= 7;
        if (v) tmp[k] |= 0x80u;
        ++k;
    } while (v);
    put(b, tmp, (size_t)k);
}

/* Little-endian fixed-width integers. */
static void put_le(pb_buf* b, uint64_t v, int bytes) {
    uint8_t tmp[8];
    for (int i = 0; i < bytes; ++i) tmp[i] = (uint8_t)(v >> (8 * i));
    put(b, tmp, (size_t)bytes);
}

/* A field key: field number and wire type (0 varint, 1 fixed64, 2 length-delimited, 5 fixed32). */
static void put_key(pb_buf* b, int field, int wire) { put_varint(b, ((uint64_t)field << 3) | (uint64_t)wire); }

/* A length-delimited field holding bytes[k]. */
static void put_bytes(pb_buf* b, int field, const void* bytes, size_t k) {
    put_key(b, field, 2);
    put_varint(b, k);
    put(b, bytes, k);
}

/* Event fields 1 (wall_time) and 2 (step). */
static void put_event_head(pb_buf* b, double wall_time, int64_t step) {
    uint64_t bits;
    memcpy(&bits, &wall_time, sizeof bits);
    put_key(b, 1, 1);
    put_le(b, bits, 8);
    put_key(b, 2, 0);
    put_varint(b, (uint64_t)step);
}

/* ---- records ------------------------------------------------------------------------------------ */

/* Frames data[n] as one TFRecord and writes and flushes it. */
static vp_status write_record(FILE* f, const char* where, const pb_buf* data) {
    VP_REQUIRE(!data->oom, VP_ERR_OOM, "%s: out of memory for a TensorBoard event", where);
    uint8_t len8[8];
    for (int i = 0; i < 8; ++i) len8[i] = (uint8_t)((uint64_t)data->n >> (8 * i));
    pb_buf head = {0};
    put(&head, len8, sizeof len8);
    put_le(&head, vp_crc32c_mask(vp_crc32c(len8, sizeof len8)), 4);
    pb_buf tail = {0};
    put_le(&tail, vp_crc32c_mask(vp_crc32c(data->p, data->n)), 4);
    int bad = head.oom || tail.oom;
    if (!bad)
        bad = fwrite(head.p, 1, head.n, f) != head.n || fwrite(data->p, 1, data->n, f) != data->n ||
              fwrite(tail.p, 1, tail.n, f) != tail.n || fflush(f) != 0;
    int err = errno;
    free(head.p);
    free(tail.p);
    VP_REQUIRE(!bad, VP_ERR_IO, "writing '%s' failed: %s", where, strerror(err));
    return VP_OK;
}

vp_status vp_tfevents_write_version(FILE* f, const char* where, double wall_time) {
    VP_REQUIRE(f && where, VP_ERR_INVALID_ARG, "vp_tfevents_write_version: f and where must not be NULL");
    pb_buf ev = {0};
    put_event_head(&ev, wall_time, 0);
    put_bytes(&ev, 3, VP_TFEVENTS_VERSION, strlen(VP_TFEVENTS_VERSION));
    vp_status s = write_record(f, where, &ev);
    free(ev.p);
    return s;
}

vp_status vp_tfevents_write_scalars(FILE* f, const char* where, double wall_time, int64_t step,
                                    const vp_tb_scalar* v, int n) {
    VP_REQUIRE(f && where && (v || n == 0) && n >= 0, VP_ERR_INVALID_ARG,
               "vp_tfevents_write_scalars: f, where and the %d scalars must be given", n);
    // Summary: one Value {tag, simple_value} per scalar
    pb_buf sum = {0}, val = {0};
    for (int i = 0; i < n; ++i) {
        uint32_t bits;
        memcpy(&bits, &v[i].value, sizeof bits);
        val.n = 0;
        put_bytes(&val, 1, v[i].tag, strlen(v[i].tag));
        put_key(&val, 2, 5);
        put_le(&val, bits, 4);
        if (val.oom) sum.oom = 1;
        put_bytes(&sum, 1, val.p, val.n);
    }
    // Event: wall_time, step, summary
    pb_buf ev = {0};
    put_event_head(&ev, wall_time, step);
    if (sum.oom) ev.oom = 1;
    put_bytes(&ev, 5, sum.p, sum.n);
    vp_status s = write_record(f, where, &ev);
    free(val.p);
    free(sum.p);
    free(ev.p);
    return s;
}

/* ---- the mirror of a metrics line -------------------------------------------------------------- */

vp_status vp_tfevents_write_metrics(FILE* f, const char* where, const cJSON* line, int64_t index,
                                    double wall_time) {
    VP_REQUIRE(f && where && cJSON_IsObject(line), VP_ERR_INVALID_ARG,
               "vp_tfevents_write_metrics: f, where and a JSON object are needed");
    const cJSON* ev = cJSON_GetObjectItemCaseSensitive(line, "event");
    const char* name = cJSON_IsString(ev) ? ev->valuestring : "metrics";
    // the step: the iteration, else the fold, else the line's index
    const char* step_key = cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "iteration")) ? "iteration"
                           : cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(line, "fold"))  ? "fold"
                                                                                              : NULL;
    int64_t step = step_key ? (int64_t)cJSON_GetObjectItemCaseSensitive(line, step_key)->valuedouble : index;
    // one scalar per other number, tagged EVENT/KEY
    int n = 0;
    for (const cJSON* c = line->child; c; c = c->next) n += cJSON_IsNumber(c);
    vp_tb_scalar* v = (vp_tb_scalar*)calloc((size_t)n + 1, sizeof *v);
    char* tags = NULL;
    size_t tags_len = 0;
    for (const cJSON* c = line->child; c; c = c->next) tags_len += strlen(name) + strlen(c->string) + 2;
    tags = (char*)malloc(tags_len + 1);
    if (!v || !tags) {
        free(v);
        free(tags);
        VP_FAIL(VP_ERR_OOM, "%s: out of memory for a TensorBoard event", where);
    }
    int k = 0;
    size_t at = 0;
    for (const cJSON* c = line->child; c; c = c->next) {
        if (!cJSON_IsNumber(c) || (step_key && strcmp(c->string, step_key) == 0)) continue;
        int w = snprintf(tags + at, tags_len + 1 - at, "%s/%s", name, c->string);
        v[k].tag = tags + at;
        v[k].value = (float)c->valuedouble;
        at += (size_t)w + 1;
        ++k;
    }
    vp_status s = vp_tfevents_write_scalars(f, where, wall_time, step, v, k);
    free(v);
    free(tags);
    return s;
}

/* ---- names and time ---------------------------------------------------------------------------- */

vp_status vp_tfevents_path(const char* metrics_path, char* out, size_t n) {
    VP_REQUIRE(metrics_path && out && n > 0, VP_ERR_INVALID_ARG, "vp_tfevents_path: arguments must not be NULL");
    const char* slash = strrchr(metrics_path, '/');
    const char* base = slash ? slash + 1 : metrics_path;
    size_t dir_len = (size_t)(base - metrics_path);
    size_t stem_len = strlen(base);
    if (stem_len > 6 && strcmp(base + stem_len - 6, ".jsonl") == 0) stem_len -= 6;
    int w = snprintf(out, n, "%.*sevents.out.tfevents.%.*s", (int)dir_len, metrics_path, (int)stem_len, base);
    VP_REQUIRE(w >= 0 && (size_t)w < n, VP_ERR_INVALID_ARG, "the event file beside '%.200s' has too long a path",
               metrics_path);
    return VP_OK;
}

double vp_tfevents_now(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0) return (double)time(NULL);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
