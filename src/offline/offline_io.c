/* Offline datasets as safetensors files (vulpes/offline.h, docs/offline.md): six tensors,
 * the dataset's own metadata (vulpes.offline.*) and the record of its data (vulpes.data.*,
 * written and read as checkpoints do). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "io/meta_read.h"
#include "io/safetensors.h"
#include "vulpes/checkpoint.h"
#include "vulpes/env.h"
#include "vulpes/offline.h"

/* The format written; a file of another is refused. */
#define FORMAT "1"

/* The dataset's metadata keys. */
#define KEY_FORMAT "vulpes.offline.format"
#define KEY_STEPS "vulpes.offline.steps"
#define KEY_ENVS "vulpes.offline.envs"
#define KEY_PORTFOLIO "vulpes.offline.portfolio"
#define KEY_SPAN_BEGIN "vulpes.offline.span_begin"
#define KEY_SPAN_END "vulpes.offline.span_end"
#define KEY_SEED "vulpes.offline.seed"
#define KEY_BEHAVIOUR "vulpes.offline.behaviour"

/* The tensors, in file order. */
enum { T_BAR, T_PORTFOLIO, T_ACTION, T_REWARD, T_DONE, T_LOGP, T_COUNT };
static const char* const names[T_COUNT] = {"bar", "portfolio", "action", "reward", "done", "logp"};

/* Each tensor's dtype, shape and host array in d. */
static void layout(const vp_offline_data* d, vp_dtype dtype[T_COUNT], int ndim[T_COUNT],
                   int64_t shape[T_COUNT][3], void* data[T_COUNT]) {
    const int64_t T = d->steps, E = d->n_envs;
    const int64_t sh[T_COUNT][3] = {{T + 1, E, 0}, {T + 1, E, d->n_portfolio}, {T, E, VP_ENV_BRANCHES},
                                    {T, E, 0},     {T, E, 0},                   {T, E, 0}};
    const int nd[T_COUNT] = {2, 3, 3, 2, 2, 2};
    const vp_dtype dt[T_COUNT] = {VP_I32, VP_F32, VP_I32, VP_F32, VP_F32, VP_F32};
    void* const p[T_COUNT] = {d->bar, d->portfolio, d->action, d->reward, d->done, d->logp};
    for (int k = 0; k < T_COUNT; ++k) {
        dtype[k] = dt[k];
        ndim[k] = nd[k];
        memcpy(shape[k], sh[k], sizeof sh[k]);
        data[k] = p[k];
    }
}

/* Adds the metadata pairs of d to w: the dataset's keys, then the record of its data. */
static vp_status add_meta(vp_st_writer* w, const vp_offline_data* d) {
    char v[64];
    VP_TRY(vp_st_writer_meta(w, KEY_FORMAT, FORMAT));
    snprintf(v, sizeof v, "%" PRId64, d->steps);
    VP_TRY(vp_st_writer_meta(w, KEY_STEPS, v));
    snprintf(v, sizeof v, "%" PRId64, d->n_envs);
    VP_TRY(vp_st_writer_meta(w, KEY_ENVS, v));
    snprintf(v, sizeof v, "%d", d->n_portfolio);
    VP_TRY(vp_st_writer_meta(w, KEY_PORTFOLIO, v));
    snprintf(v, sizeof v, "%" PRId64, d->span.begin);
    VP_TRY(vp_st_writer_meta(w, KEY_SPAN_BEGIN, v));
    snprintf(v, sizeof v, "%" PRId64, d->span.end);
    VP_TRY(vp_st_writer_meta(w, KEY_SPAN_END, v));
    snprintf(v, sizeof v, "%" PRIu64, d->seed);
    VP_TRY(vp_st_writer_meta(w, KEY_SEED, v));
    VP_TRY(vp_st_writer_meta(w, KEY_BEHAVIOUR, d->behaviour));
    vp_ckpt_data_meta rec;
    VP_TRY(vp_checkpoint_data_meta(&d->data, &rec));
    for (int i = 0; i < rec.n; ++i) VP_TRY(vp_st_writer_meta(w, rec.pairs[i].key, rec.pairs[i].value));
    return VP_OK;
}

vp_status vp_offline_save(const vp_offline_data* d, const char* path) {
    VP_REQUIRE(d != NULL && path != NULL && path[0] != '\0', VP_ERR_INVALID_ARG, "vp_offline_save: NULL argument");
    char where[1100], tmp[1100];
    snprintf(where, sizeof where, "vp_offline_save(%s)", path);
    VP_REQUIRE(strlen(path) + 5 < sizeof tmp, VP_ERR_INVALID_ARG, "vp_offline_save: path '%.200s...' is too long",
               path);
    VP_TRY(vp_offline_check(d, where));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    // the file in memory: metadata, then the six tensors
    vp_dtype dtype[T_COUNT];
    int ndim[T_COUNT];
    int64_t shape[T_COUNT][3];
    void* data[T_COUNT];
    layout(d, dtype, ndim, shape, data);
    vp_st_writer w;
    vp_st_writer_init(&w);
    vp_status s = add_meta(&w, d);
    for (int k = 0; s == VP_OK && k < T_COUNT; ++k)
        s = vp_st_writer_add(&w, names[k], dtype[k], ndim[k], shape[k], data[k]);

    // PATH.tmp renamed over PATH: a failure leaves the old file, never half of a new one
    if (s == VP_OK) s = vp_st_writer_save(&w, tmp);
    vp_st_writer_free(&w);
    if (s == VP_OK && rename(tmp, path) != 0)
        s = vp_set_error(VP_ERR_IO, VP_WHERE, "vp_offline_save: renaming '%s' to '%s' failed: %s", tmp, path,
                         strerror(errno));
    if (s != VP_OK) {
        remove(tmp);
        return vp_error_context(s, "writing dataset %s", path);
    }
    return VP_OK;
}

/* vp_st_meta as a vp_meta_src lookup. */
static const char* st_get(const void* ctx, const char* key) { return vp_st_meta((const vp_st_file*)ctx, key); }

/* A count from the metadata inside [lo, hi]. */
static vp_status meta_range(const vp_meta_src* m, const char* key, int64_t lo, int64_t hi, int64_t* out) {
    VP_TRY(vp_meta_int(m, key, "", out));
    VP_REQUIRE(*out >= lo && *out <= hi, VP_ERR_PARSE, "%s: metadata '%s' = %lld is outside %lld..%lld", m->label,
               key, (long long)*out, (long long)lo, (long long)hi);
    return VP_OK;
}

/* The dataset's own metadata into the header h (sizes, span, seed, behaviour, the record of
 * its data; no arrays). */
static vp_status read_meta(const vp_st_file* f, const char* label, vp_offline_data* h) {
    const vp_meta_src m = {st_get, f, label};
    const char* v = NULL;
    VP_TRY(vp_meta_need(&m, KEY_FORMAT, " (not a vulpes offline dataset?)", &v));
    VP_REQUIRE(strcmp(v, FORMAT) == 0, VP_ERR_PARSE, "%s: metadata '" KEY_FORMAT "' = '%.40s', this build reads "
               FORMAT, label, v);
    int64_t P = 0;
    VP_TRY(meta_range(&m, KEY_STEPS, 1, INT32_MAX, &h->steps));
    VP_TRY(meta_range(&m, KEY_ENVS, 1, INT32_MAX, &h->n_envs));
    VP_TRY(meta_range(&m, KEY_PORTFOLIO, 1, 4096, &P));
    h->n_portfolio = (int)P;
    VP_TRY(meta_range(&m, KEY_SPAN_BEGIN, 0, INT32_MAX, &h->span.begin));
    VP_TRY(meta_range(&m, KEY_SPAN_END, 1, INT32_MAX, &h->span.end));
    VP_TRY(vp_meta_u64(&m, KEY_SEED, "", &h->seed));
    VP_TRY(vp_meta_need(&m, KEY_BEHAVIOUR, "", &v));
    VP_REQUIRE(v[0] != '\0' && strlen(v) < sizeof h->behaviour, VP_ERR_PARSE,
               "%s: metadata '" KEY_BEHAVIOUR "' is empty or longer than %d bytes", label,
               VP_OFFLINE_BEHAVIOUR_MAX - 1);
    snprintf(h->behaviour, sizeof h->behaviour, "%s", v);
    int present = 0;
    VP_TRY(vp_meta_data_record(&m, &h->data, &present));
    VP_REQUIRE(present, VP_ERR_PARSE, "%s: metadata 'vulpes.data.kind' is missing: the dataset has no record of "
               "its data", label);
    return VP_OK;
}

/* A shape as text, "[3, 2]" (at most 4 dims shown), into buf[n]; returns buf. */
static const char* shape_text(int ndim, const int64_t* shape, char* buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int j = 0; j < ndim && j < 4 && k < n; ++j)
        k += (size_t)snprintf(buf + k, n - k, j ? ", %lld" : "%lld", (long long)shape[j]);
    if (k < n) snprintf(buf + k, n - k, ndim > 4 ? ", ...]" : "]");
    return buf;
}

/* Checks that tensor k of the file is there with the dtype and exact shape header h gives. */
static vp_status check_tensor(const vp_st_file* f, const char* label, const vp_offline_data* h, int k) {
    vp_dtype dtype[T_COUNT];
    int ndim[T_COUNT];
    int64_t shape[T_COUNT][3];
    void* data[T_COUNT];
    layout(h, dtype, ndim, shape, data);
    const vp_st_entry* e = vp_st_find(f, names[k]);
    VP_REQUIRE(e != NULL, VP_ERR_PARSE, "%s: tensor '%s' is missing", label, names[k]);
    VP_REQUIRE(e->dtype == dtype[k], VP_ERR_PARSE, "%s: tensor '%s' is %s, expected %s", label, names[k],
               vp_dtype_name(e->dtype), vp_dtype_name(dtype[k]));
    int same = e->ndim == ndim[k];
    for (int j = 0; same && j < ndim[k]; ++j) same = e->shape[j] == shape[k][j];
    char want[96], got[96];
    VP_REQUIRE(same, VP_ERR_SHAPE, "%s: tensor '%s' has shape %s, expected %s from the metadata", label, names[k],
               shape_text(e->ndim, e->shape, got, sizeof got), shape_text(ndim[k], shape[k], want, sizeof want));
    return VP_OK;
}

/* Reads the parsed file f into d: the metadata and every tensor's dtype and shape checked
 * before anything is allocated (so the arrays are never larger than the file), then the
 * copies and the check of every field. */
static vp_status read_file(const vp_st_file* f, const char* label, vp_offline_data* d) {
    vp_offline_data h;
    memset(&h, 0, sizeof h);
    VP_TRY(read_meta(f, label, &h));
    for (int k = 0; k < T_COUNT; ++k) VP_TRY(check_tensor(f, label, &h, k));
    VP_REQUIRE(f->n_entries == T_COUNT, VP_ERR_PARSE, "%s: %d tensors, a dataset has %d (bar, portfolio, action, "
               "reward, done, logp)", label, f->n_entries, T_COUNT);
    VP_TRY(vp_offline_alloc(d, h.steps, h.n_envs, h.n_portfolio));
    d->span = h.span;
    d->seed = h.seed;
    d->data = h.data;
    memcpy(d->behaviour, h.behaviour, sizeof d->behaviour);
    vp_dtype dtype[T_COUNT];
    int ndim[T_COUNT];
    int64_t shape[T_COUNT][3];
    void* data[T_COUNT];
    layout(d, dtype, ndim, shape, data);
    for (int k = 0; k < T_COUNT; ++k) {
        const vp_st_entry* e = vp_st_find(f, names[k]);
        memcpy(data[k], vp_st_data(f, e), e->bytes);
    }
    return vp_offline_check(d, label);
}

vp_status vp_offline_load(const char* path, vp_offline_data* d) {
    VP_REQUIRE(path != NULL && d != NULL, VP_ERR_INVALID_ARG, "vp_offline_load: NULL argument");
    memset(d, 0, sizeof *d);
    char label[1100];
    snprintf(label, sizeof label, "dataset %s", path);
    vp_st_file f;
    memset(&f, 0, sizeof f);
    vp_status s = vp_st_load(&f, path);
    if (s == VP_OK) s = read_file(&f, label, d);
    vp_st_free(&f);
    if (s != VP_OK) vp_offline_free(d);
    return s;
}
