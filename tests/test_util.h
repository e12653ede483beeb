/* Helpers shared by every test (vp_test.h includes this header): reading and comparing
 * files, the instruments and the tiny network and run the tests train and trade with. */
#ifndef VP_TEST_UTIL_H
#define VP_TEST_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "vulpes/vulpes.h"

/* ---- files -------------------------------------------------------------------------------- */

/* The whole file at path as a NUL-terminated string (caller frees), or NULL when it cannot
 * be read; *size (may be NULL) receives its length in bytes. */
static inline char* vpt_slurp(const char* path, long* size) {
    FILE* f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char* s = n >= 0 ? (char*)malloc((size_t)n + 1) : NULL;
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s) s[n] = '\0';
    fclose(f);
    if (size) *size = s ? n : -1;
    return s;
}

/* dir/name into out[n] (name NULL: dir itself is the path); returns out. */
static inline const char* vpt_path(char* out, size_t n, const char* dir, const char* name) {
    if (name) snprintf(out, n, "%s/%s", dir, name);
    else snprintf(out, n, "%s", dir);
    return out;
}

/* The whole file at dir/name (name NULL: at dir), NUL-terminated, *len (may be NULL) its
 * size; NULL when unreadable. Free it. */
static inline char* vpt_read_file(const char* dir, const char* name, size_t* len) {
    char p[1200];
    long n = 0;
    char* s = vpt_slurp(vpt_path(p, sizeof p, dir, name), &n);
    if (s && len) *len = (size_t)n;
    return s;
}

/* Whether d1/name and d2/name (name NULL: the files d1 and d2) hold the same non-empty bytes. */
static inline int vpt_same_file(const char* d1, const char* d2, const char* name) {
    size_t n1 = 0, n2 = 0;
    char* a = vpt_read_file(d1, name, &n1);
    char* b = vpt_read_file(d2, name, &n2);
    int same = a && b && n1 == n2 && n1 > 0 && memcmp(a, b, n1) == 0;
    free(a);
    free(b);
    return same;
}

/* Whether dir/name (name NULL: dir) exists, as a file or a folder. */
static inline int vpt_exists(const char* dir, const char* name) {
    char p[1200];
    struct stat st;
    return stat(vpt_path(p, sizeof p, dir, name), &st) == 0;
}

/* ---- instruments, network and run ------------------------------------------------------------- */

/* An E-mini-like instrument: tick 0.25, 50 a point, 2.5 a contract, 1 tick of slippage,
 * 1 contract, 100k (random-walk bars on a 0.25 grid keep every price on its tick grid); mid
 * bars, no spread, no financing, no leverage limit. */
static inline vp_instrument vpt_instrument_emini(void) {
    vp_instrument in = {0.25, 50.0, 2.5, 1.0, 1, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, 0.0};
    return in;
}

/* The instrument of the synthetic markets (price near 100): tick 0.01, 10 a point, 0.5 a
 * contract, 1 tick of slippage, 4 contracts, 100k; mid bars, no spread, no financing, no
 * leverage limit. */
static inline vp_instrument vpt_instrument(void) {
    vp_instrument in = {0.01, 10.0, 0.5, 1.0, 4, 100000.0, 0.0, VP_PRICE_MID, 0.0, 0.0, 0.0};
    return in;
}

/* A tiny network: H 16, two Mamba2 heads of 8, a window of 4 bars, 11 atoms. */
static inline vp_model_cfg vpt_tiny_model(int F) {
    vp_model_cfg c = vp_model_cfg_default();
    c.n_features = F;
    c.window = 4;
    c.hidden = 16;
    c.mamba_head_dim = 8;
    c.mamba_state = 4;
    c.head_hidden = 16;
    c.n_atoms = 11;
    c.iqn_cos = 8;
    return c;
}

/* A run configuration on bars `data` (a CSV file or a synth: spec) with vpt_instrument()
 * and vpt_tiny_model() on the CPU backend; every other key at its default. */
static inline void vpt_tiny_config(vp_config* c, const char* data) {
    vp_config_defaults(c);
    snprintf(c->data.path, sizeof c->data.path, "%s", data);
    const vp_instrument in = vpt_instrument();
    c->instrument.tick_size = in.tick_size, c->instrument.multiplier = in.multiplier;
    c->instrument.commission = in.commission, c->instrument.slippage_ticks = in.slippage_ticks;
    c->instrument.max_position = in.max_position, c->instrument.initial_equity = in.initial_equity;
    const vp_model_cfg m = vpt_tiny_model(0);
    c->model.window = m.window, c->model.hidden = m.hidden, c->model.mamba_head_dim = m.mamba_head_dim;
    c->model.mamba_state = m.mamba_state, c->model.head_hidden = m.head_hidden, c->model.n_atoms = m.n_atoms;
    c->model.iqn_cos = m.iqn_cos;
    c->run.backend = VP_RUN_BACKEND_CPU;
}

/* vpt_tiny_config trained for a moment: 4 iterations, validations and logs every 2, no
 * intermediate checkpoints, batch 16, 4 IQN samples per network, a window of 32 bars. */
static inline void vpt_tiny_train_config(vp_config* c, const char* data) {
    vpt_tiny_config(c, data);
    c->features.window = 32;
    c->model.iqn_taus = 4, c->model.iqn_target_taus = 4;
    c->learn.batch = 16;
    c->train.iterations = 4, c->train.eval_every = 2, c->train.log_every = 2, c->train.checkpoint_every = 0;
}

/* A walk-forward layout: spans of train, val and test bars, the embargo, at most `folds` folds. */
static inline void vpt_fold_cfg(vp_config* c, int64_t train, int64_t val, int64_t test, int64_t embargo,
                                int64_t folds) {
    vp_config_walkforward* w = &c->walkforward;
    w->train_bars = train, w->val_bars = val, w->test_bars = test, w->embargo_bars = embargo, w->max_folds = folds;
}

#endif /* VP_TEST_UTIL_H */
