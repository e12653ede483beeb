/* Internal: a minimal safetensors reader and writer (the format of Hugging Face's
 * `safetensors` package): an 8-byte little-endian header length, a JSON header naming
 * every tensor's dtype, shape and byte range, an optional "__metadata__" object of
 * string pairs, then the raw little-endian data. Files written here load unchanged in
 * Python's `safetensors`; files written there load here (F32, I32 and BF16 tensors). */
#ifndef VP_IO_SAFETENSORS_H
#define VP_IO_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor entry of a file. */
typedef struct vp_st_entry {
    char* name;                 /* tensor name */
    vp_dtype dtype;             /* element type */
    int ndim;                   /* 0 (a scalar) .. VP_MAX_DIMS */
    int64_t shape[VP_MAX_DIMS]; /* extents */
    int64_t numel;              /* elements (1 for a scalar) */
    size_t offset;              /* byte offset into the data section */
    size_t bytes;               /* byte length */
} vp_st_entry;

/* A whole file held in host memory: entries in header order, metadata pairs and data. */
typedef struct vp_st_file {
    int n_entries;         /* tensors */
    vp_st_entry* entries;  /* [n_entries] */
    int n_meta;            /* metadata pairs */
    char** meta_keys;      /* [n_meta] */
    char** meta_values;    /* [n_meta] */
    unsigned char* data;   /* data section (aligned to 64 bytes) */
    size_t data_bytes;     /* its length */
} vp_st_file;

/* Reads and checks a file: the header length inside the file, one JSON object followed only
 * by space padding, no NUL, known dtypes, shapes and offsets of non-negative integers whose
 * element and byte counts do not overflow, no name twice, and byte ranges that match the
 * shapes and tile the data section exactly (no overlap, no gap, no trailing bytes); the
 * message names the file and the bad entry. */
vp_status vp_st_load(vp_st_file* f, const char* path);

/* Frees what vp_st_load made (a zeroed struct is a no-op). */
void vp_st_free(vp_st_file* f);

/* The entry called `name`, or NULL. */
const vp_st_entry* vp_st_find(const vp_st_file* f, const char* name);

/* The data of an entry (host memory, read-only). */
const void* vp_st_data(const vp_st_file* f, const vp_st_entry* e);

/* The metadata value of `key`, or NULL. */
const char* vp_st_meta(const vp_st_file* f, const char* key);

/* Finds `name`, checks it is `dtype` with `numel` elements and copies it into dst (host);
 * the message names the file entry and what differs. */
vp_status vp_st_read(const vp_st_file* f, const char* name, vp_dtype dtype, int64_t numel, void* dst);

/* A file being built: entries and copies of their data, written by vp_st_save. */
typedef struct vp_st_writer {
    vp_st_file f;      /* entries, metadata and data so far */
    size_t capacity;   /* bytes reserved for data */
    int cap_entries;   /* entries reserved */
    int cap_meta;      /* metadata pairs reserved */
} vp_st_writer;

/* Starts an empty writer. */
void vp_st_writer_init(vp_st_writer* w);

/* Adds (or replaces) a metadata pair. */
vp_status vp_st_writer_meta(vp_st_writer* w, const char* key, const char* value);

/* Adds a tensor, copying `data` (host, numel * dtype size bytes); ndim 0 is a scalar.
 * Names must be unique and not "__metadata__". */
vp_status vp_st_writer_add(vp_st_writer* w, const char* name, vp_dtype dtype, int ndim, const int64_t* shape,
                           const void* data);

/* Writes the file (header padded with spaces to a multiple of 8 bytes). */
vp_status vp_st_writer_save(const vp_st_writer* w, const char* path);

/* Frees a writer. */
void vp_st_writer_free(vp_st_writer* w);

#ifdef __cplusplus
}
#endif
#endif /* VP_IO_SAFETENSORS_H */
