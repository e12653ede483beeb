/* vulpes: the record of a run's data — which bars a network was trained on (the source and
 * the file's identity) and what they looked like (how far apart the bars are, the scale of
 * the prices). Every checkpoint a run writes carries it in its metadata (vulpes.data.*,
 * vulpes/checkpoint.h); `vulpes backtest` measures its own data the same way and compares
 * (docs/backtest.md, "Data checks"). */
#ifndef VULPES_DATA_RECORD_H
#define VULPES_DATA_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/config.h"
#include "vulpes/data.h"
#include "vulpes/dataset.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Where the bars came from. */
typedef enum vp_data_kind {
    VP_DATA_FILE = 0,  /* a CSV file: `source` is its absolute path, bytes and hash hold */
    VP_DATA_SYNTHETIC, /* a synthetic market: `source` is its "synth:..." spec */
    VP_DATA_GIVEN,     /* bars handed over in memory (vp_train_data_from_bars): `source` says so */
    VP_DATA_KIND_COUNT
} vp_data_kind;

/* What a network was trained on. */
typedef struct vp_data_record {
    vp_data_kind kind;              /* file, synthetic market or given bars */
    char source[VP_CONFIG_STR_MAX]; /* absolute path (file), spec (synthetic) or "(bars given)" */
    int64_t bytes;                  /* the file's size (file; 0 otherwise) */
    uint64_t hash;                  /* XXH64, seed 0, of the file's bytes (file; 0 otherwise) */
    int64_t n_bars;                 /* bars of the data (>= 2) */
    double interval_s;              /* median spacing of consecutive bar times, seconds (> 0) */
    double train_median_close;      /* median close of the training span (> 0) */
    double close_min;               /* smallest close of the data (> 0) */
    double close_max;               /* largest close of the data (>= close_min) */
} vp_data_record;

/* The name of a kind as the metadata writes it ("file", "synthetic", "given"); "" out of range. */
const char* vp_data_kind_name(vp_data_kind k);

/* Measures the record of prepared data d (its source, source_bytes and source_hash) with
 * training span `train` (at least one bar inside d) into *out: vp_data_record_identify, then
 * vp_data_record_measure, then the training span's median close; checked at the end. */
vp_status vp_data_record_make(const vp_train_data* d, vp_span train, vp_data_record* out);

/* Sets the identity of a record (kind, source, bytes, hash; the rest zeroed): `source` a file
 * of `bytes` bytes (>= 0) with content hash `hash`, made absolute (realpath; the working
 * directory joined in front when the file is gone), or (bytes < 0) a "synth:..." spec or a
 * description of bars given in memory. */
vp_status vp_data_record_identify(const char* source, int64_t bytes, uint64_t hash, vp_data_record* out);

/* Sets what a record says of bars b (at least 2): n_bars, interval_s (vp_annual_measure's
 * median spacing), close_min and close_max. */
vp_status vp_data_record_measure(const vp_bars* b, vp_data_record* out);

/* Checks every field of r as a checkpoint's reader does: a known kind, a non-empty source (an
 * absolute path for a file, "synth:..." for a synthetic market), a file's size > 0, at least
 * 2 bars, interval and closes finite and > 0, close_min <= train_median_close <= close_max.
 * The message starts with `where` and names the field. */
vp_status vp_data_record_check(const vp_data_record* r, const char* where);

/* Whether a and b are the same bars: a file of the same size and hash (wherever it lies), or
 * the same synthetic spec. Given bars are never known to be the same. */
int vp_data_record_same(const vp_data_record* a, const vp_data_record* b);

/* The record's source in words into buf[n]: a file with its size and hash ("/d/x.csv (416442
 * bytes, xxh64:e7051806f53882ed)"), else the source itself; returns buf. */
const char* vp_data_record_describe(const vp_data_record* r, char* buf, size_t n);

/* The median close of bars [s.begin, s.end) of b (the mean of the two middle ones for an even
 * count) into *out; the span must hold at least one bar of b. */
vp_status vp_bars_median_close(const vp_bars* b, vp_span s, double* out);

/* A bar spacing in words into buf[n]: "1 hour", "15 minutes", "1 day", "2.5 hours", "1 week";
 * returns buf. */
const char* vp_interval_words(double seconds, char* buf, size_t n);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DATA_RECORD_H */
