/* What the ablation and search tests share, their tiny training setup on a synthetic
 * mean-reverting market, and with the walk-forward tests a job folder's JSON files read back. */
#ifndef VP_TEST_JOB_UTIL_H
#define VP_TEST_JOB_UTIL_H

#include <cjson/cJSON.h>
#include <math.h>

#include "test_util.h"

/* vpt_tiny_train_config on 900 bars of an OU market (seed 7), 3 envs of 29-bar episodes, a
 * replay of 256 (warm-up 32), at most 3 units held, run.seed 11. */
static inline void vpt_job_tiny_config(vp_config* c) {
    vpt_tiny_train_config(c, "synth:ou:bars=900,seed=7,sigma=0.004");
    c->instrument.max_position = 3.0;
    c->env.n_envs = 3, c->env.episode_bars = 29;
    c->replay.capacity = 256, c->replay.warmup = 32;
    c->run.seed = 11;
}

/* File `file` of folder d as JSON (NULL when missing or not JSON; caller deletes). */
static inline cJSON* vpt_json_file(const char* d, const char* file) {
    char* text = vpt_read_file(d, file, NULL);
    cJSON* j = text ? cJSON_Parse(text) : NULL;
    free(text);
    return j;
}

/* The number at o.key (NaN when absent or null). */
static inline double vpt_json_num(const cJSON* o, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) ? v->valuedouble : NAN;
}

#endif /* VP_TEST_JOB_UTIL_H */
