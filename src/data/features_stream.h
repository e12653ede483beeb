/* Internal: the feature matrix one bar at a time. A stream takes bars in order and returns
 * each new bar's feature row, the row vp_features_compute writes for that bar over the same
 * bars from the same first one, bit for bit: the same formulas and the same running sums
 * (vp_roll_moments: sums about a shift, recomputed exactly every 1024 bars from the first
 * bar) stepped once per bar, so a bar costs O(F) work (O(F x norm_window) on every 1024th bar)
 * and memory stays bounded (the last max(128, norm_window) values per series). */
#ifndef VP_DATA_FEATURES_STREAM_H
#define VP_DATA_FEATURES_STREAM_H

#include <stdint.h>

#include "vulpes/features.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A feature stream (opaque). */
typedef struct vp_feat_stream vp_feat_stream;

/* One bar as the stream reads it (the vp_bars fields of one index; the spread is not read). */
typedef struct vp_feat_bar {
    int64_t time_ms; /* bar open time, Unix ms */
    double open, high, low, close, volume;
} vp_feat_bar;

/* Makes a stream for cfg (checked as vp_features_compute checks it) into *out. */
vp_status vp_feat_stream_init(vp_feat_stream** out, const vp_feature_cfg* cfg);

/* Frees a stream (NULL is a no-op). */
void vp_feat_stream_free(vp_feat_stream* s);

/* F: the columns of a row. */
int vp_feat_stream_width(const vp_feat_stream* s);

/* Bars taken so far (the index the next bar gets). */
int64_t vp_feat_stream_count(const vp_feat_stream* s);

/* Takes the next bar (valid: finite, positive prices; the caller checks) and writes its
 * feature row into row [F]. */
void vp_feat_stream_push(vp_feat_stream* s, const vp_feat_bar* bar, float* row /* [F] */);

#ifdef __cplusplus
}
#endif
#endif /* VP_DATA_FEATURES_STREAM_H */
