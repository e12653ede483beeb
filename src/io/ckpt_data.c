/* The record of the training data in a file's metadata (vulpes.data.*): written from a
 * vp_data_record, read back with every value checked (type, form, range); the checked readers
 * of whole numbers and decimal numbers in metadata (io/meta_read.h). */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/meta_read.h"
#include "vulpes/checkpoint.h"

/* The record's keys, in the order they are written (a file's two last). */
#define KEY_KIND "vulpes.data.kind"
#define KEY_SOURCE "vulpes.data.source"
#define KEY_BARS "vulpes.data.bars"
#define KEY_INTERVAL "vulpes.data.interval_s"
#define KEY_MEDIAN "vulpes.data.train_median_close"
#define KEY_MIN "vulpes.data.close_min"
#define KEY_MAX "vulpes.data.close_max"
#define KEY_BYTES "vulpes.data.bytes"
#define KEY_HASH "vulpes.data.xxh64"

static const char* const keys[VP_CKPT_DATA_KEYS] = {KEY_KIND, KEY_SOURCE, KEY_BARS,  KEY_INTERVAL, KEY_MEDIAN,
                                                    KEY_MIN,  KEY_MAX,    KEY_BYTES, KEY_HASH};

/* Appends key = the formatted value. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void put(vp_ckpt_data_meta* m, const char* key, const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m->values[m->n], sizeof m->values[0], fmt, ap);
    va_end(ap);
    m->pairs[m->n].key = key;
    m->pairs[m->n].value = m->values[m->n];
    m->n++;
}

vp_status vp_checkpoint_data_meta(const vp_data_record* r, vp_ckpt_data_meta* out) {
    VP_REQUIRE(r != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_data_meta: NULL argument");
    VP_TRY(vp_data_record_check(r, "the record of the training data"));
    memset(out, 0, sizeof *out);
    put(out, KEY_KIND, "%s", vp_data_kind_name(r->kind));
    put(out, KEY_SOURCE, "%s", r->source);
    put(out, KEY_BARS, "%" PRId64, r->n_bars);
    put(out, KEY_INTERVAL, "%.17g", r->interval_s);
    put(out, KEY_MEDIAN, "%.17g", r->train_median_close);
    put(out, KEY_MIN, "%.17g", r->close_min);
    put(out, KEY_MAX, "%.17g", r->close_max);
    if (r->kind == VP_DATA_FILE) {
        put(out, KEY_BYTES, "%" PRId64, r->bytes);
        put(out, KEY_HASH, "xxh64:%016" PRIx64, r->hash);
    }
    return VP_OK;
}

/* ---- reading ---------------------------------------------------------------------------------- */

vp_status vp_meta_need(const vp_meta_src* m, const char* key, const char* what, const char** out) {
    *out = m->get(m->ctx, key);
    VP_REQUIRE(*out != NULL, VP_ERR_PARSE, "%s: metadata '%s' is missing%s", m->label, key, what);
    return VP_OK;
}

/* Decimal digits only (no sign, spaces or fraction) within 64 bits into *out; 0 when not. */
static int parse_digits(const char* v, uint64_t* out) {
    char* end = NULL;
    errno = 0;
    const unsigned long long x = (v[0] >= '0' && v[0] <= '9') ? strtoull(v, &end, 10) : 0;
    *out = (uint64_t)x;
    return end != NULL && end != v && *end == '\0' && errno == 0;
}

vp_status vp_meta_int(const vp_meta_src* m, const char* key, const char* what, int64_t* out) {
    const char* v = NULL;
    VP_TRY(vp_meta_need(m, key, what, &v));
    uint64_t x = 0;
    VP_REQUIRE(parse_digits(v, &x) && x <= (uint64_t)INT64_MAX, VP_ERR_PARSE,
               "%s: metadata '%s' = '%.40s' is not a whole number", m->label, key, v);
    *out = (int64_t)x;
    return VP_OK;
}

vp_status vp_meta_u64(const vp_meta_src* m, const char* key, const char* what, uint64_t* out) {
    const char* v = NULL;
    VP_TRY(vp_meta_need(m, key, what, &v));
    VP_REQUIRE(parse_digits(v, out), VP_ERR_PARSE, "%s: metadata '%s' = '%.40s' is not a whole number below 2^64",
               m->label, key, v);
    return VP_OK;
}

vp_status vp_meta_num(const vp_meta_src* m, const char* key, const char* what, double* out) {
    const char* v = NULL;
    VP_TRY(vp_meta_need(m, key, what, &v));
    const int starts = (v[0] >= '0' && v[0] <= '9') || v[0] == '-' || v[0] == '+' || v[0] == '.';
    char* end = NULL;
    const double x = starts ? strtod(v, &end) : 0.0;
    const int word = strpbrk(v, "nNiI") != NULL;
    VP_REQUIRE(starts && !word && end != v && *end == '\0', VP_ERR_PARSE,
               "%s: metadata '%s' = '%.40s' is not a number", m->label, key, v);
    *out = x;
    return VP_OK;
}

/* What a missing key of the record is missing from. */
#define FROM_RECORD " from the record of the training data"

/* The hash: "xxh64:" and 16 lowercase hex digits. */
static vp_status read_hash(const vp_meta_src* m, uint64_t* out) {
    const char* v = NULL;
    VP_TRY(vp_meta_need(m, KEY_HASH, FROM_RECORD, &v));
    int ok = strncmp(v, "xxh64:", 6) == 0 && strlen(v) == 22;
    uint64_t h = 0;
    for (int i = 6; ok && i < 22; ++i) {
        const char c = v[i];
        const int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        ok = d >= 0;
        h = (h << 4) | (uint64_t)(ok ? d : 0);
    }
    VP_REQUIRE(ok, VP_ERR_PARSE, "%s: metadata '" KEY_HASH "' = '%.40s' is not xxh64:<16 lowercase hex digits>",
               m->label, v);
    *out = h;
    return VP_OK;
}

vp_status vp_meta_data_record(const vp_meta_src* m, vp_data_record* out, int* present) {
    VP_REQUIRE(m != NULL && m->get != NULL && out != NULL && present != NULL, VP_ERR_INVALID_ARG,
               "vp_meta_data_record: NULL argument");
    memset(out, 0, sizeof *out);
    *present = 0;
    // an older file has none of the keys
    int any = 0;
    for (int i = 0; i < VP_CKPT_DATA_KEYS; ++i) any |= m->get(m->ctx, keys[i]) != NULL;
    if (!any) return VP_OK;
    // the kind decides which keys belong
    const char* kind = NULL;
    VP_TRY(vp_meta_need(m, KEY_KIND, FROM_RECORD, &kind));
    int k = -1;
    for (int i = 0; i < VP_DATA_KIND_COUNT; ++i)
        if (strcmp(kind, vp_data_kind_name((vp_data_kind)i)) == 0) k = i;
    VP_REQUIRE(k >= 0, VP_ERR_PARSE, "%s: metadata '" KEY_KIND "' = '%.40s' is not file, synthetic or given",
               m->label, kind);
    out->kind = (vp_data_kind)k;
    const char* source = NULL;
    VP_TRY(vp_meta_need(m, KEY_SOURCE, FROM_RECORD, &source));
    VP_REQUIRE(strlen(source) < sizeof out->source, VP_ERR_PARSE, "%s: metadata '" KEY_SOURCE
               "' is longer than %zu bytes", m->label, sizeof out->source - 1);
    snprintf(out->source, sizeof out->source, "%s", source);
    VP_TRY(vp_meta_int(m, KEY_BARS, FROM_RECORD, &out->n_bars));
    VP_TRY(vp_meta_num(m, KEY_INTERVAL, FROM_RECORD, &out->interval_s));
    VP_TRY(vp_meta_num(m, KEY_MEDIAN, FROM_RECORD, &out->train_median_close));
    VP_TRY(vp_meta_num(m, KEY_MIN, FROM_RECORD, &out->close_min));
    VP_TRY(vp_meta_num(m, KEY_MAX, FROM_RECORD, &out->close_max));
    if (out->kind == VP_DATA_FILE) {
        VP_TRY(vp_meta_int(m, KEY_BYTES, FROM_RECORD, &out->bytes));
        VP_TRY(read_hash(m, &out->hash));
    } else {
        VP_REQUIRE(m->get(m->ctx, KEY_BYTES) == NULL && m->get(m->ctx, KEY_HASH) == NULL, VP_ERR_PARSE,
                   "%s: a %s data source has no '" KEY_BYTES "' or '" KEY_HASH "'", m->label, kind);
    }
    // the values together
    char where[1100];
    snprintf(where, sizeof where, "%s: the record of the training data", m->label);
    VP_TRY(vp_data_record_check(out, where));
    *present = 1;
    return VP_OK;
}

/* vp_checkpoint_meta as a vp_meta_src lookup. */
static const char* ckpt_get(const void* ctx, const char* key) {
    return vp_checkpoint_meta((const vp_checkpoint*)ctx, key);
}

vp_status vp_checkpoint_data(const vp_checkpoint* ck, vp_data_record* out, int* present) {
    VP_REQUIRE(ck != NULL && out != NULL && present != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_data: NULL argument");
    char label[1100];
    snprintf(label, sizeof label, "checkpoint %s", vp_checkpoint_path(ck));
    const vp_meta_src m = {ckpt_get, ck, label};
    return vp_meta_data_record(&m, out, present);
}
