/* Checkpoints: backend tensors and metadata through the safetensors writer, sealed with a
 * checksum, written to PATH.tmp, synced and renamed; read back after the checksum (and the
 * record of the training data, src/io/ckpt_data.c) is verified, with exact dtype and shape
 * checks and finite values. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "data/hash.h"
#include "io/safetensors.h"
#include "vulpes/checkpoint.h"

/* The metadata key of the checksum; how many tensors a reader may declare as statistics. */
#define CHECKSUM_KEY "vulpes.checksum"
#define MAX_NONFINITE 8

struct vp_checkpoint {
    vp_st_file file;                        /* the whole file in host memory */
    char path[1024];                        /* as opened */
    const char* nonfinite[MAX_NONFINITE];   /* tensors that may hold NaN / Inf (names in file) */
    int n_nonfinite;                        /* used */
};

/* ---- checksum ------------------------------------------------------------------------------ */

/* A metadata pair, for sorting by key. */
typedef struct kv_ref {
    const char* key;
    const char* value;
} kv_ref;

static int kv_by_key(const void* pa, const void* pb) {
    return strcmp(((const kv_ref*)pa)->key, ((const kv_ref*)pb)->key);
}

static int entry_by_name(const void* pa, const void* pb) {
    return strcmp((*(const vp_st_entry* const*)pa)->name, (*(const vp_st_entry* const*)pb)->name);
}

/* Chains a string and its terminating NUL into the hash h. */
static uint64_t hash_text(const char* s, uint64_t h) { return vp_hash64(s, strlen(s) + 1, h); }

/* The checksum of a file's content: XXH64 chained over every tensor in name order (name,
 * dtype, rank and extents, bytes) and then every metadata pair in key order except the
 * checksum's own (key, value). It does not depend on the order of the header's entries, so
 * a tool that rewrites the same content keeps it valid; any changed byte of a tensor, a
 * name, a shape or a metadata value changes it. An integrity check against damage and
 * edits, not a signature. Returns 0 and sets *out, or -1 when out of memory. */
static int content_checksum(const vp_st_file* f, uint64_t* out) {
    const vp_st_entry** order = (const vp_st_entry**)malloc(sizeof *order * (size_t)(f->n_entries + 1));
    kv_ref* kv = (kv_ref*)malloc(sizeof *kv * (size_t)(f->n_meta + 1));
    if (!order || !kv) {
        free(order);
        free(kv);
        return -1;
    }
    for (int i = 0; i < f->n_entries; ++i) order[i] = &f->entries[i];
    qsort(order, (size_t)f->n_entries, sizeof *order, entry_by_name);
    int n_kv = 0;
    for (int i = 0; i < f->n_meta; ++i)
        if (strcmp(f->meta_keys[i], CHECKSUM_KEY) != 0) kv[n_kv++] = (kv_ref){f->meta_keys[i], f->meta_values[i]};
    qsort(kv, (size_t)n_kv, sizeof *kv, kv_by_key);
    // A tag and the counts, then the tensors, then the metadata.
    int64_t counts[2] = {f->n_entries, n_kv};
    uint64_t h = hash_text("vulpes checkpoint checksum 1", 0);
    h = vp_hash64(counts, sizeof counts, h);
    for (int i = 0; i < f->n_entries; ++i) {
        const vp_st_entry* e = order[i];
        int64_t dims[VP_MAX_DIMS + 1] = {e->ndim};
        for (int d = 0; d < e->ndim; ++d) dims[d + 1] = e->shape[d];
        h = hash_text(e->name, h);
        h = hash_text(vp_dtype_name(e->dtype), h);
        h = vp_hash64(dims, sizeof dims[0] * (size_t)(e->ndim + 1), h);
        h = vp_hash64(e->bytes ? (const void*)(f->data + e->offset) : "", e->bytes, h);
    }
    for (int i = 0; i < n_kv; ++i) h = hash_text(kv[i].value, hash_text(kv[i].key, h));
    free(order);
    free(kv);
    *out = h;
    return 0;
}

/* Checks the stored checksum of an opened file against its content. */
static vp_status verify_checksum(const vp_st_file* f, const char* path) {
    const char* v = vp_st_meta(f, CHECKSUM_KEY);
    VP_REQUIRE(v != NULL, VP_ERR_PARSE, "checkpoint %s has no " CHECKSUM_KEY " in its metadata: it was not written by "
               "vp_checkpoint_save (or by a version before checksums), so it cannot be trusted", path);
    unsigned long long stored = 0;
    int ok = strncmp(v, "xxh64:", 6) == 0 && strlen(v) == 22;
    for (int i = 6; ok && i < 22; ++i) {
        char c = v[i];
        int d = (c >= '0' && c <= '9') ? c - '0' : (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
        ok = d >= 0;
        stored = (stored << 4) | (unsigned)(ok ? d : 0);
    }
    VP_REQUIRE(ok, VP_ERR_PARSE, "checkpoint %s: " CHECKSUM_KEY " '%.40s' is not xxh64:<16 lowercase hex digits>",
               path, v);
    uint64_t h = 0;
    VP_REQUIRE(content_checksum(f, &h) == 0, VP_ERR_OOM, "checkpoint %s: out of memory for the checksum", path);
    VP_REQUIRE(h == stored, VP_ERR_PARSE, "checkpoint %s: checksum mismatch: the file was changed after it was "
               "written (stored %s, the content gives xxh64:%016llx)", path, v, (unsigned long long)h);
    return VP_OK;
}

/* fsyncs a file or folder by path (folders may refuse; the caller decides what matters). */
static int sync_path(const char* path) {
    int fd = open(path, O_RDONLY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

/* The folder part of `path` ("." when none) into dir[n]. */
static void parent_dir(const char* path, char* dir, size_t n) {
    const char* slash = strrchr(path, '/');
    if (!slash) snprintf(dir, n, ".");
    else if (slash == path) snprintf(dir, n, "/");
    else snprintf(dir, n, "%.*s", (int)(slash - path), path);
}

/* Adds one backend tensor to the writer (downloaded through a host staging copy). */
static vp_status add_item(vp_backend* b, vp_st_writer* w, const vp_ckpt_item* it) {
    const vp_tensor* t = &it->tensor;
    VP_REQUIRE(it->name != NULL && it->name[0] != '\0', VP_ERR_INVALID_ARG, "vp_checkpoint_save: an item has no name");
    VP_REQUIRE(t->data != NULL && t->ndim >= 1 && t->ndim <= VP_MAX_DIMS, VP_ERR_INVALID_ARG,
               "vp_checkpoint_save: tensor '%s' has no data or a bad ndim %d", it->name, t->ndim);
    size_t bytes = vp_tensor_bytes(t);
    void* host = malloc(bytes ? bytes : 1);
    VP_REQUIRE(host != NULL, VP_ERR_OOM, "vp_checkpoint_save: out of host memory for '%s' (%zu bytes)", it->name, bytes);
    vp_status s = vp_download(b, host, t, bytes);
    if (s == VP_OK) s = vp_st_writer_add(w, it->name, t->dtype, t->ndim, t->shape, host);
    free(host);
    if (s != VP_OK) return vp_error_context(s, "checkpoint tensor '%s'", it->name);
    return VP_OK;
}

vp_status vp_checkpoint_save(vp_backend* b, const char* path, const vp_ckpt_item* items, int n,
                             const vp_ckpt_meta* meta, int n_meta) {
    VP_REQUIRE(b != NULL && path != NULL && path[0] != '\0', VP_ERR_INVALID_ARG,
               "vp_checkpoint_save: backend or path is NULL");
    VP_REQUIRE(n >= 0 && (n == 0 || items != NULL) && n_meta >= 0 && (n_meta == 0 || meta != NULL),
               VP_ERR_INVALID_ARG, "vp_checkpoint_save(%s): bad item or metadata list", path);
    char tmp[1100];
    VP_REQUIRE(strlen(path) + 5 < sizeof tmp, VP_ERR_INVALID_ARG, "vp_checkpoint_save: path '%.200s...' is too long",
               path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);

    // Build the file in host memory: metadata first, then every tensor in order.
    vp_st_writer w;
    vp_st_writer_init(&w);
    vp_status s = VP_OK;
    for (int i = 0; s == VP_OK && i < n_meta; ++i) {
        if (!meta[i].key || !meta[i].value)
            s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "vp_checkpoint_save(%s): metadata pair %d is NULL", path, i);
        else if (strcmp(meta[i].key, CHECKSUM_KEY) == 0)
            s = vp_set_error(VP_ERR_INVALID_ARG, VP_WHERE, "vp_checkpoint_save(%s): metadata key '" CHECKSUM_KEY
                             "' is the writer's own", path);
        else
            s = vp_st_writer_meta(&w, meta[i].key, meta[i].value);
    }
    for (int i = 0; s == VP_OK && i < n; ++i) s = add_item(b, &w, &items[i]);

    // Seal the content: the checksum of every tensor and metadata value.
    uint64_t h = 0;
    if (s == VP_OK && content_checksum(&w.f, &h) != 0)
        s = vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_checkpoint_save(%s): out of memory for the checksum", path);
    if (s == VP_OK) {
        char sum[32];
        snprintf(sum, sizeof sum, "xxh64:%016llx", (unsigned long long)h);
        s = vp_st_writer_meta(&w, CHECKSUM_KEY, sum);
    }

    // Write PATH.tmp, push it to disk, rename it over PATH, sync the folder.
    if (s == VP_OK) s = vp_st_writer_save(&w, tmp);
    vp_st_writer_free(&w);
    if (s == VP_OK && sync_path(tmp) != 0)
        s = vp_set_error(VP_ERR_IO, VP_WHERE, "vp_checkpoint_save: syncing '%s' failed: %s", tmp, strerror(errno));
    if (s == VP_OK && rename(tmp, path) != 0)
        s = vp_set_error(VP_ERR_IO, VP_WHERE, "vp_checkpoint_save: renaming '%s' to '%s' failed: %s", tmp, path,
                         strerror(errno));
    if (s != VP_OK) {
        remove(tmp);
        return vp_error_context(s, "writing checkpoint %s", path);
    }
    char dir[1100];
    parent_dir(path, dir, sizeof dir);
    (void)sync_path(dir); /* some file systems refuse a folder fsync; the rename stands */
    return VP_OK;
}

vp_status vp_checkpoint_open(vp_checkpoint** out, const char* path) {
    VP_REQUIRE(out != NULL && path != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_open: out or path is NULL");
    *out = NULL;
    vp_checkpoint* ck = (vp_checkpoint*)calloc(1, sizeof *ck);
    VP_REQUIRE(ck != NULL, VP_ERR_OOM, "vp_checkpoint_open: out of host memory");
    snprintf(ck->path, sizeof ck->path, "%s", path);
    vp_status s = vp_st_load(&ck->file, path);
    if (s == VP_OK) s = verify_checksum(&ck->file, path);
    // the record of the training data, when the file has one, whole and well formed
    vp_data_record rec;
    int present = 0;
    if (s == VP_OK) s = vp_checkpoint_data(ck, &rec, &present);
    if (s != VP_OK) {
        vp_st_free(&ck->file);
        free(ck);
        return vp_error_context(s, "opening checkpoint %s", path);
    }
    *out = ck;
    return VP_OK;
}

void vp_checkpoint_close(vp_checkpoint* ck) {
    if (!ck) return;
    vp_st_free(&ck->file);
    free(ck);
}

const char* vp_checkpoint_meta(const vp_checkpoint* ck, const char* key) {
    return (ck && key) ? vp_st_meta(&ck->file, key) : NULL;
}

int vp_checkpoint_has(const vp_checkpoint* ck, const char* name) {
    return (ck && name) ? vp_st_find(&ck->file, name) != NULL : 0;
}

const char* vp_checkpoint_path(const vp_checkpoint* ck) { return ck ? ck->path : ""; }

/* "[3, 4]" of a shape into buf[n]. */
static const char* shape_text(int ndim, const int64_t* shape, char* buf, size_t n) {
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; ++d) k += (size_t)snprintf(buf + k, n - k, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
    return buf;
}

vp_status vp_checkpoint_allow_nonfinite(vp_checkpoint* ck, const char* name) {
    VP_REQUIRE(ck != NULL && name != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_allow_nonfinite: NULL argument");
    const vp_st_entry* e = vp_st_find(&ck->file, name);
    VP_REQUIRE(e != NULL, VP_ERR_PARSE, "checkpoint %s has no tensor '%s'", ck->path, name);
    for (int i = 0; i < ck->n_nonfinite; ++i)
        if (ck->nonfinite[i] == e->name) return VP_OK;
    VP_REQUIRE(ck->n_nonfinite < MAX_NONFINITE, VP_ERR_INVALID_ARG,
               "vp_checkpoint_allow_nonfinite(%s): more than %d tensors", name, MAX_NONFINITE);
    ck->nonfinite[ck->n_nonfinite++] = e->name;
    return VP_OK;
}

/* The index of the first element of an F32 or BF16 entry that is NaN or Inf (-1: none; other
 * dtypes are raw words); its value's name into *what. */
static int64_t first_nonfinite(const vp_st_file* f, const vp_st_entry* e, const char** what) {
    const unsigned char* p = (const unsigned char*)vp_st_data(f, e);
    for (int64_t i = 0; i < e->numel; ++i) {
        uint32_t u = 0;
        if (e->dtype == VP_F32) {
            memcpy(&u, p + 4 * i, 4);
        } else if (e->dtype == VP_BF16) {
            uint16_t h;
            memcpy(&h, p + 2 * i, 2);
            u = (uint32_t)h << 16;
        } else {
            return -1;
        }
        if ((u & 0x7f800000u) != 0x7f800000u) continue;
        *what = (u & 0x007fffffu) ? "nan" : (u >> 31) ? "-inf" : "inf";
        return i;
    }
    return -1;
}

/* "[1, 2]" of a flat index into buf[n], row-major over a shape. */
static const char* index_text(int64_t flat, int ndim, const int64_t* shape, char* buf, size_t n) {
    int64_t idx[VP_MAX_DIMS] = {0};
    for (int d = ndim - 1; d >= 0; --d) {
        idx[d] = shape[d] ? flat % shape[d] : 0;
        flat = shape[d] ? flat / shape[d] : 0;
    }
    return shape_text(ndim, idx, buf, n);
}

/* Finds item's tensor and checks it against the view (dtype, shape) and, unless declared as
 * statistics, its values (finite); *out is its entry. */
static vp_status check_item(const vp_checkpoint* ck, const vp_ckpt_item* it, const vp_st_entry** out) {
    VP_REQUIRE(it != NULL && it->name != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_read: NULL argument");
    const vp_tensor* t = &it->tensor;
    const vp_st_entry* e = vp_st_find(&ck->file, it->name);
    VP_REQUIRE(e != NULL, VP_ERR_PARSE, "checkpoint %s has no tensor '%s'", ck->path, it->name);
    char want[96], got[96];
    VP_REQUIRE(e->dtype == t->dtype, VP_ERR_PARSE, "checkpoint %s: tensor '%s' is %s, expected %s", ck->path, it->name,
               vp_dtype_name(e->dtype), vp_dtype_name(t->dtype));
    int same = e->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; ++d) same = e->shape[d] == t->shape[d];
    VP_REQUIRE(same, VP_ERR_SHAPE, "checkpoint %s: tensor '%s' has shape %s, this run needs %s", ck->path, it->name,
               shape_text(e->ndim, e->shape, got, sizeof got), shape_text(t->ndim, t->shape, want, sizeof want));
    int stats = 0;
    for (int i = 0; i < ck->n_nonfinite; ++i) stats |= ck->nonfinite[i] == e->name;
    const char* what = "";
    int64_t bad = stats ? -1 : first_nonfinite(&ck->file, e, &what);
    VP_REQUIRE(bad < 0, VP_ERR_NUMERIC, "checkpoint %s: tensor '%s' element %lld (%s) is %s: its values must be finite",
               ck->path, it->name, (long long)bad, index_text(bad, e->ndim, e->shape, got, sizeof got), what);
    *out = e;
    return VP_OK;
}

/* Uploads a checked entry into the item's view. */
static vp_status upload_item(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* it, const vp_st_entry* e) {
    vp_tensor dst = it->tensor;
    vp_status s = vp_upload(b, &dst, vp_st_data(&ck->file, e), e->bytes);
    if (s != VP_OK) return vp_error_context(s, "checkpoint %s: tensor '%s'", ck->path, it->name);
    return VP_OK;
}

vp_status vp_checkpoint_read(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* it) {
    VP_REQUIRE(b != NULL && ck != NULL && it != NULL && it->name != NULL, VP_ERR_INVALID_ARG,
               "vp_checkpoint_read: NULL argument");
    const vp_st_entry* e = NULL;
    VP_TRY(check_item(ck, it, &e));
    return upload_item(b, ck, it, e);
}

vp_status vp_checkpoint_read_all(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* items, int n) {
    VP_REQUIRE(b != NULL && ck != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_read_all: NULL argument");
    VP_REQUIRE(n == 0 || items != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_read_all: items is NULL");
    // Every item is checked before the first is uploaded, so a refused list changes nothing.
    const vp_st_entry* e = NULL;
    for (int i = 0; i < n; ++i) VP_TRY(check_item(ck, &items[i], &e));
    for (int i = 0; i < n; ++i) VP_TRY(upload_item(b, ck, &items[i], vp_st_find(&ck->file, items[i].name)));
    return VP_OK;
}
