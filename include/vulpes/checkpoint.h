/* vulpes: checkpoints (SPEC section 8) — named tensors of a backend and string metadata in
 * one safetensors file.
 *
 * The file is what Python's `safetensors` package reads unchanged: an 8-byte little-endian
 * header length, a JSON header (each tensor's dtype, shape and data_offsets, tensors
 * contiguous in the order given, "__metadata__" holding string pairs) padded with spaces
 * to a multiple of 8 bytes, then the raw little-endian data. A save writes PATH.tmp,
 * flushes it to disk and renames it over PATH, so a crash leaves the old file or the new
 * one, never half of one. Every file is sealed with "vulpes.checksum" in its metadata (XXH64
 * of every tensor and metadata pair), verified on opening. What a training run puts in it
 * is listed in docs/train.md; among it the record of the training data (vulpes.data.*,
 * vulpes/data_record.h), which opening checks strictly when a file has it. */
#ifndef VULPES_CHECKPOINT_H
#define VULPES_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/data_record.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One tensor of a checkpoint: its name in the file and a shaped view of backend memory
 * (the file records the view's dtype and shape). */
typedef struct vp_ckpt_item {
    const char* name; /* unique, not "__metadata__" */
    vp_tensor tensor; /* memory the backend reads (host, device or mapped) */
} vp_ckpt_item;

/* One metadata pair (both strings are copied into the file). */
typedef struct vp_ckpt_meta {
    const char* key;   /* e.g. "vulpes.iteration" */
    const char* value; /* any text; the resolved config YAML for "config" */
} vp_ckpt_meta;

/* Downloads items[n] from backend `b` and writes them with meta[n_meta] and the checksum
 * of both ("vulpes.checksum", a key callers may not use) to `path` atomically (PATH.tmp,
 * fsync, rename; a failed write names the errno). The tensors are written in the order
 * given. */
vp_status vp_checkpoint_save(vp_backend* b, const char* path, const vp_ckpt_item* items /* [n] */, int n,
                             const vp_ckpt_meta* meta /* [n_meta] */, int n_meta);

/* An open checkpoint file held in host memory. */
typedef struct vp_checkpoint vp_checkpoint;

/* Reads and checks the file at `path` into *out (free with vp_checkpoint_close): a valid
 * safetensors file whose "vulpes.checksum" matches its content; a file without one or with
 * another is refused ("checksum mismatch: the file was changed after it was written"). A file
 * with any vulpes.data.* key must hold the whole record of its training data, every value
 * well formed and passing vp_data_record_check (VP_ERR_PARSE naming the key). */
vp_status vp_checkpoint_open(vp_checkpoint** out, const char* path);

/* Frees an open checkpoint (NULL is a no-op). */
void vp_checkpoint_close(vp_checkpoint* ck);

/* The metadata value of `key`, or NULL when the file has none. */
const char* vp_checkpoint_meta(const vp_checkpoint* ck, const char* key);

/* Whether the file has a tensor called `name`. */
int vp_checkpoint_has(const vp_checkpoint* ck, const char* name);

/* Uploads the tensor `item->name` into item->tensor after checking that its dtype and
 * shape equal the view's exactly and that an F32 / BF16 tensor holds no NaN or Inf (unless
 * allowed by vp_checkpoint_allow_nonfinite: VP_ERR_NUMERIC naming the first bad element);
 * the message names the file, the tensor and what differs. */
vp_status vp_checkpoint_read(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* item);

/* Checks every one of items[n] as vp_checkpoint_read does, then uploads them all: a refused
 * list uploads nothing. */
vp_status vp_checkpoint_read_all(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* items /* [n] */, int n);

/* Lets the tensor `name` hold NaN and Inf (statistics); vp_checkpoint_read refuses every
 * other F32 or BF16 tensor that is not finite everywhere. */
vp_status vp_checkpoint_allow_nonfinite(vp_checkpoint* ck, const char* name);

/* The file's path (as opened). */
const char* vp_checkpoint_path(const vp_checkpoint* ck);

/* ---- the record of the training data (vulpes.data.*) ------------------------------------------ */

/* Metadata pairs of a data record: vulpes.data.kind, .source, .bars, .interval_s,
 * .train_median_close, .close_min, .close_max, and for a file .bytes and .xxh64. */
#define VP_CKPT_DATA_KEYS 9

/* A data record as metadata pairs, with the text of their values. */
typedef struct vp_ckpt_data_meta {
    vp_ckpt_meta pairs[VP_CKPT_DATA_KEYS];             /* [n] keys and values (pointing into values) */
    char values[VP_CKPT_DATA_KEYS][VP_CONFIG_STR_MAX]; /* [n] the values' text */
    int n;                                             /* pairs used (7 or 9) */
} vp_ckpt_data_meta;

/* The metadata pairs of record r (checked with vp_data_record_check first) into *out, for
 * vp_checkpoint_save: numbers with 17 significant digits, the hash as xxh64:<16 hex>. */
vp_status vp_checkpoint_data_meta(const vp_data_record* r, vp_ckpt_data_meta* out);

/* The record of the data the checkpoint was trained on into *out, *present = 1; a file
 * without one (written before checkpoints recorded it) gives *present = 0 and a zeroed *out. */
vp_status vp_checkpoint_data(const vp_checkpoint* ck, vp_data_record* out, int* present);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_CHECKPOINT_H */
