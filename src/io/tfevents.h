/* Internal to the library: TensorBoard event files, the mirror of a metrics.jsonl.
 *
 * An event file is a TFRecord file: each record is a little-endian uint64 length, the masked
 * CRC32C of those 8 bytes, the data, the masked CRC32C of the data. The data is a protocol
 * buffer tensorflow.Event: wall_time (field 1, double), step (2, int64), and either
 * file_version (3, "brain.Event:2", the first record) or a Summary (5) of Values, each a tag
 * (1, string) and a simple_value (2, float). Only these fields are written.
 *
 * The mirror of a metrics line: one Event per line, whose step is the line's "iteration"
 * (else its "fold", else the line's index in the file, from 0), holding one Value per other
 * number of the line, tagged EVENT/KEY ("train/loss", "eval/val_sharpe"); strings and nulls
 * (NaN) are left out. */
#ifndef VP_IO_TFEVENTS_H
#define VP_IO_TFEVENTS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/status.h"

struct cJSON;

/* The version string of the first record. */
#define VP_TFEVENTS_VERSION "brain.Event:2"

/* The CRC32C (Castagnoli, reflected, init and final xor ~0) of data[n]; "123456789" gives
 * 0xE3069283. */
uint32_t vp_crc32c(const void* data, size_t n);

/* TFRecord's masked form of a CRC: ((crc >> 15) | (crc << 17)) + 0xa282ead8. */
uint32_t vp_crc32c_mask(uint32_t crc);

/* One scalar of an Event's Summary. */
typedef struct vp_tb_scalar {
    const char* tag; /* the chart's name, "train/loss" */
    float value;     /* simple_value (a float, as TensorBoard keeps it) */
} vp_tb_scalar;

/* Writes one record holding the Event {wall_time, step, file_version = VP_TFEVENTS_VERSION}
 * to f; `where` names the file in messages. */
vp_status vp_tfevents_write_version(FILE* f, const char* where, double wall_time);

/* Writes one record holding the Event {wall_time, step, Summary of v[n]} to f. */
vp_status vp_tfevents_write_scalars(FILE* f, const char* where, double wall_time, int64_t step,
                                    const vp_tb_scalar* v /* [n] */, int n);

/* Writes the Event mirroring one metrics line (a cJSON object with its "event" name) to f;
 * `index` is the line's index in its file (the step when it has no iteration or fold). */
vp_status vp_tfevents_write_metrics(FILE* f, const char* where, const struct cJSON* line, int64_t index,
                                    double wall_time);

/* The event file beside the metrics file `metrics_path` into out[n]: same folder, named
 * events.out.tfevents.STEM for a metrics file STEM.jsonl ("metrics.jsonl" ->
 * "events.out.tfevents.metrics"). */
vp_status vp_tfevents_path(const char* metrics_path, char* out, size_t n);

/* The current time in seconds since 1970 (the Events' wall_time). */
double vp_tfevents_now(void);

#endif /* VP_IO_TFEVENTS_H */
