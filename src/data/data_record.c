/* The record of a run's data: its source and identity, its bar spacing and price scale,
 * measured from the prepared data and checked field by field. */
#define _XOPEN_SOURCE 700 /* realpath */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "vulpes/data_record.h"
#include "vulpes/metrics.h"

const char* vp_data_kind_name(vp_data_kind k) {
    static const char* names[VP_DATA_KIND_COUNT] = {"file", "synthetic", "given"};
    return (int)k >= 0 && k < VP_DATA_KIND_COUNT ? names[k] : "";
}

/* The absolute form of `path` into out[n]: realpath, else the working directory joined in
 * front (a file gone since it was read). */
static vp_status absolute_path(const char* path, char* out, size_t n) {
    char* real = realpath(path, NULL);
    if (real) {
        const size_t len = strlen(real);
        if (len < n) memcpy(out, real, len + 1);
        free(real);
        VP_REQUIRE(len < n, VP_ERR_INVALID_ARG, "the absolute path of '%.200s' is longer than %zu bytes", path,
                   n - 1);
        return VP_OK;
    }
    if (path[0] == '/') {
        VP_REQUIRE(strlen(path) < n, VP_ERR_INVALID_ARG, "the path '%.200s...' is longer than %zu bytes", path, n - 1);
        memcpy(out, path, strlen(path) + 1);
        return VP_OK;
    }
    char cwd[4096];
    VP_REQUIRE(getcwd(cwd, sizeof cwd) != NULL, VP_ERR_IO,
               "cannot name the working directory to make '%.200s' absolute", path);
    const size_t lc = strlen(cwd), lp = strlen(path);
    VP_REQUIRE(lc + 1 + lp < n, VP_ERR_INVALID_ARG, "the absolute path of '%.200s' is longer than %zu bytes", path,
               n - 1);
    memcpy(out, cwd, lc);
    out[lc] = '/';
    memcpy(out + lc + 1, path, lp + 1);
    return VP_OK;
}

static int cmp_double(const void* pa, const void* pb) {
    const double a = *(const double*)pa, b = *(const double*)pb;
    return (a > b) - (a < b);
}

vp_status vp_bars_median_close(const vp_bars* b, vp_span s, double* out) {
    VP_REQUIRE(b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_bars_median_close: NULL argument");
    VP_REQUIRE(s.begin >= 0 && s.end <= b->n && s.end > s.begin, VP_ERR_INVALID_ARG,
               "median close: the span [%lld, %lld) holds no bar of the %lld bars", (long long)s.begin,
               (long long)s.end, (long long)b->n);
    // a sorted copy of the span's closes
    const int64_t n = s.end - s.begin;
    double* v = (double*)malloc(sizeof *v * (size_t)n);
    VP_REQUIRE(v != NULL, VP_ERR_OOM, "median close: out of memory for %lld closes", (long long)n);
    memcpy(v, b->close + s.begin, sizeof *v * (size_t)n);
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    *out = n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
    free(v);
    return VP_OK;
}

vp_status vp_data_record_identify(const char* source, int64_t bytes, uint64_t hash, vp_data_record* out) {
    VP_REQUIRE(source != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_data_record_identify: NULL argument");
    memset(out, 0, sizeof *out);
    // a file by its absolute path and identity, a synthetic market by its spec
    if (bytes >= 0) {
        out->kind = VP_DATA_FILE;
        VP_TRY(absolute_path(source, out->source, sizeof out->source));
        out->bytes = bytes;
        out->hash = hash;
        return VP_OK;
    }
    out->kind = strncmp(source, "synth:", 6) == 0 ? VP_DATA_SYNTHETIC : VP_DATA_GIVEN;
    const char* src = source[0] ? source : "(bars given)";
    VP_REQUIRE(strlen(src) < sizeof out->source, VP_ERR_INVALID_ARG, "the data's source '%.200s...' is longer than %zu "
               "bytes", src, sizeof out->source - 1);
    memcpy(out->source, src, strlen(src) + 1);
    return VP_OK;
}

vp_status vp_data_record_measure(const vp_bars* b, vp_data_record* out) {
    VP_REQUIRE(b != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_data_record_measure: NULL argument");
    VP_REQUIRE(b->n >= 2, VP_ERR_INVALID_ARG, "the record of the data: %lld bars, at least 2 needed", (long long)b->n);
    // the spacing of the bars and the range of the closes
    out->n_bars = b->n;
    vp_annual an;
    VP_TRY(vp_annual_measure(b->time_ms, b->n, &an));
    out->interval_s = an.median_interval_s;
    out->close_min = out->close_max = b->close[0];
    for (int64_t i = 1; i < b->n; ++i) {
        const double c = b->close[i];
        out->close_min = c < out->close_min ? c : out->close_min;
        out->close_max = c > out->close_max ? c : out->close_max;
    }
    return VP_OK;
}

vp_status vp_data_record_make(const vp_train_data* d, vp_span train, vp_data_record* out) {
    VP_REQUIRE(d != NULL && out != NULL, VP_ERR_INVALID_ARG, "vp_data_record_make: NULL argument");
    VP_TRY(vp_data_record_identify(d->source, d->source_bytes, d->source_hash, out));
    VP_TRY(vp_data_record_measure(&d->bars, out));
    vp_status s = vp_bars_median_close(&d->bars, train, &out->train_median_close);
    if (s != VP_OK) return vp_error_context(s, "the record of the training span");
    return vp_data_record_check(out, "the record of the training data");
}

/* Whether x is finite and > 0. */
static int positive(double x) { return isfinite(x) && x > 0.0; }

vp_status vp_data_record_check(const vp_data_record* r, const char* where) {
    VP_REQUIRE(r != NULL && where != NULL, VP_ERR_INVALID_ARG, "vp_data_record_check: NULL argument");
    VP_REQUIRE((int)r->kind >= 0 && r->kind < VP_DATA_KIND_COUNT, VP_ERR_PARSE, "%s: unknown data kind %d", where,
               (int)r->kind);
    VP_REQUIRE(memchr(r->source, '\0', sizeof r->source) != NULL && r->source[0] != '\0', VP_ERR_PARSE,
               "%s: the data's source is empty", where);
    if (r->kind == VP_DATA_FILE) {
        VP_REQUIRE(r->source[0] == '/', VP_ERR_PARSE, "%s: the data file '%.200s' is not an absolute path", where,
                   r->source);
        VP_REQUIRE(r->bytes > 0, VP_ERR_PARSE, "%s: the data file's size is %lld bytes, not > 0", where,
                   (long long)r->bytes);
    } else {
        VP_REQUIRE(r->bytes == 0 && r->hash == 0, VP_ERR_PARSE, "%s: a %s source has no file size or hash", where,
                   vp_data_kind_name(r->kind));
        VP_REQUIRE(r->kind != VP_DATA_SYNTHETIC || strncmp(r->source, "synth:", 6) == 0, VP_ERR_PARSE,
                   "%s: the synthetic market '%.200s' is not a synth: spec", where, r->source);
    }
    VP_REQUIRE(r->n_bars >= 2, VP_ERR_PARSE, "%s: %lld bars, at least 2", where, (long long)r->n_bars);
    VP_REQUIRE(positive(r->interval_s), VP_ERR_PARSE, "%s: bar interval %g s is not finite and > 0", where,
               r->interval_s);
    VP_REQUIRE(positive(r->train_median_close) && positive(r->close_min) && positive(r->close_max), VP_ERR_PARSE,
               "%s: closes (training median %g, smallest %g, largest %g) must be finite and > 0", where,
               r->train_median_close, r->close_min, r->close_max);
    VP_REQUIRE(r->close_min <= r->train_median_close && r->train_median_close <= r->close_max, VP_ERR_PARSE,
               "%s: the training median close %g lies outside the closes' range [%g, %g]", where,
               r->train_median_close, r->close_min, r->close_max);
    return VP_OK;
}

int vp_data_record_same(const vp_data_record* a, const vp_data_record* b) {
    if (!a || !b || a->kind != b->kind) return 0;
    if (a->kind == VP_DATA_FILE) return a->bytes == b->bytes && a->hash == b->hash;
    return a->kind == VP_DATA_SYNTHETIC && strcmp(a->source, b->source) == 0;
}

const char* vp_data_record_describe(const vp_data_record* r, char* buf, size_t n) {
    if (r->kind == VP_DATA_FILE)
        snprintf(buf, n, "%.*s (%lld bytes, xxh64:%016llx)", (int)(n > 64 ? n - 64 : 0), r->source,
                 (long long)r->bytes, (unsigned long long)r->hash);
    else snprintf(buf, n, "%s", r->source);
    return buf;
}

const char* vp_interval_words(double seconds, char* buf, size_t n) {
    static const struct {
        double s;
        const char* unit;
    } units[] = {{7 * 86400.0, "week"}, {86400.0, "day"}, {3600.0, "hour"}, {60.0, "minute"}, {1.0, "second"},
                 {0.001, "millisecond"}};
    // the largest unit of which the spacing is at least one
    size_t u = 0;
    while (u + 1 < sizeof units / sizeof units[0] && seconds < units[u].s) ++u;
    const double v = seconds / units[u].s;
    char num[32];
    snprintf(num, sizeof num, "%.3g", v);
    snprintf(buf, n, "%s %s%s", num, units[u].unit, strcmp(num, "1") == 0 ? "" : "s");
    return buf;
}
