/* Internal: reading the string metadata of a safetensors file (a checkpoint, an offline
 * dataset) as checked values — whole numbers, decimal numbers, the record of the data — with
 * messages that name the file and the key. */
#ifndef VP_IO_META_READ_H
#define VP_IO_META_READ_H

#include <stdint.h>

#include "vulpes/data_record.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where metadata comes from: get(ctx, key) returns a key's value or NULL; `label` starts every
 * message ("checkpoint PATH", "dataset PATH"). */
typedef struct vp_meta_src {
    const char* (*get)(const void* ctx, const char* key); /* the value of key, or NULL */
    const void* ctx;                                      /* handed to get */
    const char* label;                                    /* what the file is, in words */
} vp_meta_src;

/* The value of `key` into *out; missing is VP_ERR_PARSE "LABEL: metadata 'KEY' is missing WHAT"
 * (`what` may be "", else it starts with a space). */
vp_status vp_meta_need(const vp_meta_src* m, const char* key, const char* what, const char** out);

/* A whole number: decimal digits only (a sign, spaces, a fraction or an overflow refused). */
vp_status vp_meta_int(const vp_meta_src* m, const char* key, const char* what, int64_t* out);

/* An unsigned 64-bit whole number: decimal digits only, at most 2^64 - 1. */
vp_status vp_meta_u64(const vp_meta_src* m, const char* key, const char* what, uint64_t* out);

/* A decimal number (no spaces, no nan or inf words). */
vp_status vp_meta_num(const vp_meta_src* m, const char* key, const char* what, double* out);

/* The record of the data (vulpes.data.*, written by vp_checkpoint_data_meta) into *out with
 * *present = 1, every value checked and then vp_data_record_check; none of the keys gives
 * *present = 0 and a zeroed *out. */
vp_status vp_meta_data_record(const vp_meta_src* m, vp_data_record* out, int* present);

#ifdef __cplusplus
}
#endif
#endif /* VP_IO_META_READ_H */
