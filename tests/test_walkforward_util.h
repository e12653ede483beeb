/* What the walk-forward tests share: a tiny fold layout on a synthetic market, and reading a
 * walk-forward's files and text back (JSON values: test_job_util.h's readers and a string, the
 * console text, a fold folder's files). */
#ifndef VP_TEST_WALKFORWARD_UTIL_H
#define VP_TEST_WALKFORWARD_UTIL_H

#include <cjson/cJSON.h>

#include "test_data_util.h"
#include "test_job_util.h"
#include "vp_test.h"
#include "vulpes/walkforward.h"

enum { WFU_TRAIN = 300, WFU_VAL = 100, WFU_TEST = 80, WFU_EMBARGO = 2, WFU_FOLDS = 3 };

/* A tiny, fast training setup on a synthetic mean-reverting market, 3 folds of 300 | 100 | 80
 * bars, at 3 % a year risk-free. */
static inline void wfu_tiny_config(vp_config* c) {
    vpt_tiny_train_config(c, "synth:ou:bars=1400,seed=5,sigma=0.004");
    c->env.n_envs = 4, c->env.episode_bars = 32;
    c->replay.capacity = 512, c->replay.warmup = 32;
    c->metrics.risk_free_rate = 0.03;
    vpt_fold_cfg(c, WFU_TRAIN, WFU_VAL, WFU_TEST, WFU_EMBARGO, WFU_FOLDS);
}

/* The string at obj.key ("" when absent or not a string). */
static inline const char* wfu_str(const cJSON* obj, const char* key) {
    const cJSON* v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

/* obj.key (NULL when absent). */
static inline const cJSON* wfu_at(const cJSON* obj, const char* key) {
    return cJSON_GetObjectItemCaseSensitive(obj, key);
}

/* The console text of r (vp_wf_print; caller frees). */
static inline char* wfu_table(const vp_wf_result* r) {
    char* text = NULL;
    size_t len = 0;
    FILE* f = open_memstream(&text, &len);
    CHECK_OK(vp_wf_print(r, f));
    fclose(f);
    return text;
}

/* folds/fold_NNN/FILE of fold `number` (from 1) into out[n]. */
static inline const char* wfu_fold_file(int number, const char* file, char* out, size_t n) {
    snprintf(out, n, "folds/fold_%03d/%s", number, file);
    return out;
}

#endif /* VP_TEST_WALKFORWARD_UTIL_H */
