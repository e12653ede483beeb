/* vulpes: the dataset of a run — bars from a CSV file or a synthetic market ("synth:KIND[:key=value,...]"),
 * the causal feature matrix, ATR, the time split and the bars per year, all on the host.
 *
 * It sits in the data layer and reads the configuration (data.*, features.window,
 * model.window, split.*); docs/train.md describes the data.path forms. */
#ifndef VULPES_DATASET_H
#define VULPES_DATASET_H

#include <stdint.h>

#include "vulpes/config.h"
#include "vulpes/data.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Everything a run derives from its bars, on the host. */
typedef struct vp_train_data {
    vp_bars bars;            /* all bars (owned) */
    int n_features;          /* F */
    float* features;         /* [T, F] causal feature matrix */
    double* atr;             /* [T] ATR(14) known at each bar's close */
    int64_t warmup;          /* bars reserved before the train span for feature history */
    vp_split split;          /* train / val / test spans */
    double periods_per_year; /* bars per year, measured over all bar times */
    char source[600];        /* the file, or the synthetic market's description */
    int64_t source_bytes;    /* size of the CSV file the bars were read from (-1: not a file) */
    uint64_t source_hash;    /* XXH64, seed 0, of that file's bytes (0: not a file) */
} vp_train_data;

/* Loads the bars named by cfg->data.path (a CSV file, or "synth:KIND[:key=value,...]" for a
 * synthetic market, see docs/train.md), computes features (window features.window) and ATR
 * and makes the time split. Free with vp_train_data_free. */
vp_status vp_train_data_load(vp_train_data* d, const vp_config* cfg);

/* Makes the features, ATR and split of bars `bars` (taken over: freed with d) under cfg. */
vp_status vp_train_data_from_bars(vp_train_data* d, const vp_config* cfg, vp_bars* bars);

/* vp_train_data_from_bars without the time split (d->split stays zero): features, ATR,
 * warm-up and bars per year, for a backtest of bars a training split does not have to fit. */
vp_status vp_train_data_prepare(vp_train_data* d, const vp_config* cfg, vp_bars* bars);

/* The time split of n_bars bars under cfg's split.* keys after `warmup` bars, into *out: the
 * one rule training and a backtest's span both use. */
vp_status vp_train_data_split(const vp_config* cfg, int64_t n_bars, int64_t warmup, vp_split* out);

/* Bars of feature history a run reserves before its first decision under cfg: the features'
 * warm-up, and at least the model's window. */
int64_t vp_train_data_warmup(const vp_config* cfg);

/* Frees what vp_train_data_load made (a zeroed struct is a no-op). */
void vp_train_data_free(vp_train_data* d);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DATASET_H */
