/* Checkpoints: backend tensors and metadata through the safetensors writer, written to
 * PATH.tmp, synced and renamed; read back with exact dtype and shape checks. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/safetensors.h"
#include "vulpes/checkpoint.h"

struct vp_checkpoint {
    vp_st_file file; /* the whole file in host memory */
    char path[1024]; /* as opened */
};

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
        else
            s = vp_st_writer_meta(&w, meta[i].key, meta[i].value);
    }
    for (int i = 0; s == VP_OK && i < n; ++i) s = add_item(b, &w, &items[i]);

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
    if (s != VP_OK) {
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

vp_status vp_checkpoint_read(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* it) {
    VP_REQUIRE(b != NULL && ck != NULL && it != NULL && it->name != NULL, VP_ERR_INVALID_ARG,
               "vp_checkpoint_read: NULL argument");
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
    vp_tensor dst = *t;
    vp_status s = vp_upload(b, &dst, vp_st_data(&ck->file, e), e->bytes);
    if (s != VP_OK) return vp_error_context(s, "checkpoint %s: tensor '%s'", ck->path, it->name);
    return VP_OK;
}

vp_status vp_checkpoint_read_all(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* items, int n) {
    VP_REQUIRE(n == 0 || items != NULL, VP_ERR_INVALID_ARG, "vp_checkpoint_read_all: items is NULL");
    for (int i = 0; i < n; ++i) VP_TRY(vp_checkpoint_read(b, ck, &items[i]));
    return VP_OK;
}
