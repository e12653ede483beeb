/* The dataset of a run: bars from a CSV file or a synthetic market (the "synth:" spec),
 * the causal feature matrix, ATR, the time split and the bars per year. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "vulpes/dataset.h"
#include "vulpes/features.h"
#include "vulpes/metrics.h"
#include "vulpes/synth.h"

/* ATR period of the environment's take-profit and stop-loss levels (the feature set's atr_14). */
#define VP_DATASET_ATR_PERIOD 14

/* Bars of a synthetic market when the spec names no count. */
#define VP_DATASET_SYNTH_BARS 20000

/* Sets one "key=value" of a synthetic-market spec; `bars` receives the bar count. */
static vp_status synth_set(vp_synth_cfg* s, int64_t* bars, const char* kv, const char* spec) {
    const char* eq = strchr(kv, '=');
    VP_REQUIRE(eq != NULL && eq > kv, VP_ERR_INVALID_ARG, "data.path '%s': '%s' is not key=value", spec, kv);
    char key[32];
    size_t n = (size_t)(eq - kv);
    VP_REQUIRE(n < sizeof key, VP_ERR_INVALID_ARG, "data.path '%s': key in '%s' is too long", spec, kv);
    memcpy(key, kv, n);
    key[n] = '\0';
    char* end = NULL;
    double v = strtod(eq + 1, &end);
    VP_REQUIRE(end != eq + 1 && *end == '\0' && isfinite(v), VP_ERR_INVALID_ARG,
               "data.path '%s': value of '%s' is not a number", spec, key);
    if (strcmp(key, "bars") == 0) {
        VP_REQUIRE(v >= 2 && v <= 1e9 && v == floor(v), VP_ERR_INVALID_ARG, "data.path '%s': bars=%g", spec, v);
        *bars = (int64_t)v;
    } else if (strcmp(key, "seed") == 0) {
        VP_REQUIRE(v >= 0 && v == floor(v), VP_ERR_INVALID_ARG, "data.path '%s': seed=%g", spec, v);
        s->seed = (uint64_t)v;
    } else if (strcmp(key, "sigma") == 0) {
        s->sigma = v;
    } else if (strcmp(key, "drift") == 0) {
        s->drift = v;
    } else if (strcmp(key, "theta") == 0) {
        s->ou_theta = v;
    } else if (strcmp(key, "phi") == 0) {
        s->trend_phi = v;
    } else if (strcmp(key, "price") == 0) {
        s->price0 = v;
    } else if (strcmp(key, "switch") == 0) {
        s->regime_switch = v;
    } else {
        VP_FAIL(VP_ERR_INVALID_ARG, "data.path '%s': unknown key '%s' (bars, seed, sigma, drift, theta, phi, price, "
                "switch)", spec, key);
    }
    return VP_OK;
}

/* Generates the synthetic market of a "synth:KIND[:key=value,...]" spec into *out. */
static vp_status load_synth(const char* spec, vp_bars* out) {
    char buf[VP_CONFIG_STR_MAX];
    snprintf(buf, sizeof buf, "%s", spec + 6);
    char* rest = strchr(buf, ':');
    if (rest) *rest++ = '\0';
    int kind = -1;
    for (int k = 0; k < VP_SYNTH_KIND_COUNT; ++k)
        if (strcasecmp(buf, vp_synth_kind_name((vp_synth_kind)k)) == 0) kind = k;
    VP_REQUIRE(kind >= 0, VP_ERR_INVALID_ARG, "data.path '%s': unknown synthetic market '%s' (gbm, regime, ou, trend)",
               spec, buf);
    vp_synth_cfg s = vp_synth_cfg_default((vp_synth_kind)kind);
    int64_t bars = VP_DATASET_SYNTH_BARS;
    // Comma-separated key=value settings.
    for (char* kv = rest ? strtok(rest, ",") : NULL; kv; kv = strtok(NULL, ",")) VP_TRY(synth_set(&s, &bars, kv, spec));
    return vp_synth_generate(&s, bars, out, NULL);
}

vp_status vp_train_data_load(vp_train_data* d, const vp_config* cfg) {
    VP_REQUIRE(d != NULL && cfg != NULL, VP_ERR_INVALID_ARG, "vp_train_data_load: data or cfg is NULL");
    memset(d, 0, sizeof *d);
    const char* path = cfg->data.path;
    VP_REQUIRE(path[0] != '\0', VP_ERR_INVALID_ARG, "data.path is empty: name a CSV file of bars (or synth:ou, ...)");
    vp_bars bars;
    memset(&bars, 0, sizeof bars);
    vp_load_report rep;
    memset(&rep, 0, sizeof rep);
    rep.source_bytes = -1;
    if (strncmp(path, "synth:", 6) == 0) {
        VP_TRY(load_synth(path, &bars));
    } else {
        vp_load_opts lo = vp_load_opts_default();
        lo.skip_bad_rows = cfg->data.skip_bad_rows ? 1 : 0;
        VP_TRY(vp_bars_load_csv(path, &lo, &bars, &rep));
    }
    vp_status s = vp_train_data_from_bars(d, cfg, &bars);
    if (s == VP_OK) {
        snprintf(d->source, sizeof d->source, "%s", path);
        d->source_bytes = rep.source_bytes;
        d->source_hash = rep.source_hash;
    }
    return s;
}

int64_t vp_train_data_warmup(const vp_config* cfg) {
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = (int)cfg->features.window;
    const int64_t warm = vp_features_warmup(&fc);
    return warm < cfg->model.window ? cfg->model.window : warm;
}

vp_status vp_train_data_prepare(vp_train_data* d, const vp_config* cfg, vp_bars* bars) {
    VP_REQUIRE(d != NULL && cfg != NULL && bars != NULL && bars->n >= 2, VP_ERR_INVALID_ARG,
               "vp_train_data_prepare: data, cfg or bars is NULL, or fewer than 2 bars");
    memset(d, 0, sizeof *d);
    d->bars = *bars;
    memset(bars, 0, sizeof *bars);
    snprintf(d->source, sizeof d->source, "(bars given)");
    d->source_bytes = -1;
    const int64_t T = d->bars.n;

    // Causal features with the configured normalisation window, and the ATR.
    vp_feature_cfg fc = vp_feature_cfg_default();
    fc.norm_window = (int)cfg->features.window;
    d->n_features = vp_features_count(&fc);
    d->features = (float*)malloc(sizeof(float) * (size_t)T * (size_t)d->n_features);
    d->atr = (double*)malloc(sizeof(double) * (size_t)T);
    vp_status s = (d->features && d->atr) ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "features of %lld bars", (long long)T);
    if (s == VP_OK) s = vp_features_compute(&d->bars, &fc, d->features, T * d->n_features);
    if (s == VP_OK) s = vp_atr(&d->bars, VP_DATASET_ATR_PERIOD, d->atr);
    // warm-up bars (feature history, and the model's window) come before the first decision
    d->warmup = vp_train_data_warmup(cfg);

    // Bars per year from the bar times of the whole file.
    vp_annual an;
    if (s == VP_OK) s = vp_annual_measure(d->bars.time_ms, T, &an);
    if (s == VP_OK) d->periods_per_year = an.periods_per_year;
    if (s != VP_OK) {
        vp_train_data_free(d);
        return vp_error_context(s, "features of %lld bars", (long long)T);
    }
    return VP_OK;
}

vp_status vp_train_data_split(const vp_config* cfg, int64_t n_bars, int64_t warmup, vp_split* out) {
    vp_split_cfg sc;
    memset(&sc, 0, sizeof sc);
    sc.train_frac = cfg->split.train;
    sc.val_frac = cfg->split.val;
    sc.test_frac = cfg->split.test;
    sc.embargo = cfg->split.embargo;
    sc.warmup = warmup;
    return vp_split_make(n_bars, &sc, out);
}

vp_status vp_train_data_from_bars(vp_train_data* d, const vp_config* cfg, vp_bars* bars) {
    VP_TRY(vp_train_data_prepare(d, cfg, bars));
    // Time split after the warm-up.
    vp_status s = vp_train_data_split(cfg, d->bars.n, d->warmup, &d->split);
    if (s != VP_OK) {
        const int64_t T = d->bars.n;
        vp_train_data_free(d);
        return vp_error_context(s, "preparing %lld bars for training", (long long)T);
    }
    return VP_OK;
}

void vp_train_data_free(vp_train_data* d) {
    if (!d) return;
    vp_bars_free(&d->bars);
    free(d->features);
    free(d->atr);
    memset(d, 0, sizeof *d);
}
