/* The data of the offline benches (bench iql, bench dt): a synthetic market and a recorded dataset. */
#include <stdio.h>
#include <string.h>

#include "bench.h"
#include "vulpes/record.h"

int vp_bench_offline_data(vp_backend* b, int64_t n, const char* what, vp_train_data* d, vp_offline_data* ds) {
    // a synth: source, which the dataset's data record names
    vp_config cfg;
    vp_config_defaults(&cfg);
    cfg.features.window = 64;
    snprintf(cfg.data.path, sizeof cfg.data.path, "synth:gbm:bars=%lld,seed=1", (long long)n);
    vp_train_parts parts;
    vp_behaviour beh;
    vp_record_cfg rc;
    memset(&rc, 0, sizeof rc);
    vp_status s = vp_train_data_load(d, &cfg);
    if (s == VP_OK) s = vp_train_parts_make(&cfg, d->n_features, &parts);
    if (s == VP_OK) s = vp_behaviour_parse("random", &beh);
    if (s == VP_OK) {
        rc.steps = 256, rc.n_envs = 64, rc.seed = 1, rc.span = d->split.train;
        rc.instrument = parts.instrument, rc.env = parts.env;
        s = vp_record_run(b, d, NULL, &beh, &rc, ds);
    }
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench %s: market or dataset set-up (%lld bars) failed: %s\n", what, (long long)n,
                vp_last_error());
        return 0;
    }
    return 1;
}
