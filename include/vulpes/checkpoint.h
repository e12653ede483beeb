/* vulpes: checkpoints (SPEC section 8) — named tensors of a backend and string metadata in
 * one safetensors file.
 *
 * The file is what Python's `safetensors` package reads unchanged: an 8-byte little-endian
 * header length, a JSON header (each tensor's dtype, shape and data_offsets, tensors
 * contiguous in the order given, "__metadata__" holding string pairs) padded with spaces
 * to a multiple of 8 bytes, then the raw little-endian data. A save writes PATH.tmp,
 * flushes it to disk and renames it over PATH, so a crash leaves the old file or the new
 * one, never half of one. What a training run puts in it is listed in docs/train.md. */
#ifndef VULPES_CHECKPOINT_H
#define VULPES_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/backend.h"
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

/* Downloads items[n] from backend `b` and writes them with meta[n_meta] to `path`
 * atomically (PATH.tmp, fsync, rename). The tensors are written in the order given. */
vp_status vp_checkpoint_save(vp_backend* b, const char* path, const vp_ckpt_item* items /* [n] */, int n,
                             const vp_ckpt_meta* meta /* [n_meta] */, int n_meta);

/* An open checkpoint file held in host memory. */
typedef struct vp_checkpoint vp_checkpoint;

/* Reads and checks the file at `path` into *out (free with vp_checkpoint_close). */
vp_status vp_checkpoint_open(vp_checkpoint** out, const char* path);

/* Frees an open checkpoint (NULL is a no-op). */
void vp_checkpoint_close(vp_checkpoint* ck);

/* The metadata value of `key`, or NULL when the file has none. */
const char* vp_checkpoint_meta(const vp_checkpoint* ck, const char* key);

/* Whether the file has a tensor called `name`. */
int vp_checkpoint_has(const vp_checkpoint* ck, const char* name);

/* Uploads the tensor `item->name` into item->tensor after checking that its dtype and
 * shape equal the view's exactly; the message names the file, the tensor and what differs. */
vp_status vp_checkpoint_read(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* item);

/* Reads items[n] in turn (vp_checkpoint_read). */
vp_status vp_checkpoint_read_all(vp_backend* b, const vp_checkpoint* ck, const vp_ckpt_item* items /* [n] */, int n);

/* The file's path (as opened). */
const char* vp_checkpoint_path(const vp_checkpoint* ck);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_CHECKPOINT_H */
