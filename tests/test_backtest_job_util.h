/* The fixture of the backtest job tests: a temporary folder (also the bar cache's), the CPU
 * backend, a synthetic market of hourly bars saved as DIR/a.csv, a tiny config on it and a
 * checkpoint DIR/best.safetensors of a freshly initialised network, with or without the record
 * of its training data; and a text comparison of output files. */
#ifndef VP_TEST_BACKTEST_JOB_UTIL_H
#define VP_TEST_BACKTEST_JOB_UTIL_H

#include "test_backtest_util.h"
#include "test_data_util.h"
#include "vp_test.h"
#include "vulpes/checkpoint.h"
#include "vulpes/config.h"
#include "vulpes/data_record.h"
#include "vulpes/dataset.h"
#include "vulpes/train.h"

enum { NBARS = 900, FROM = 400, TO = 760 };

/* A config for the synthetic market and a tiny network: 64-bar feature windows and episodes. */
static inline void tiny_config(vp_config* c, const char* data) {
    vpt_tiny_config(c, data);
    c->features.window = 64;
    c->env.episode_bars = 64;
}

/* Writes a checkpoint of a freshly initialised tiny network with `cfg` in its metadata and,
 * when `rec` is not NULL, the record of its training data (as a training run writes it). */
static inline int write_checkpoint(vp_backend* b, const vp_config* cfg, const vp_data_record* rec, const char* path) {
    vp_train_parts parts;
    vp_model m;
    char* yaml = NULL;
    if (vp_train_parts_make(cfg, VP_FEATURES_DEFAULT, &parts) != VP_OK) return 0;
    if (vp_model_init(&m, b, &parts.learner.model, 77) != VP_OK) return 0;
    vp_ckpt_item* items = (vp_ckpt_item*)calloc((size_t)m.n_params, sizeof *items);
    for (int i = 0; i < m.n_params; ++i)
        items[i] = (vp_ckpt_item){m.info[i].name, vp_model_param_view(&m, &m.params, &m.info[i])};
    int ok = vp_config_to_yaml(cfg, &yaml) == VP_OK;
    vp_ckpt_meta meta[2 + VP_CKPT_DATA_KEYS] = {{"format", "vulpes"}, {"config", yaml}};
    int n_meta = 2;
    vp_ckpt_data_meta dm;
    if (ok && rec) {
        ok = vp_checkpoint_data_meta(rec, &dm) == VP_OK;
        for (int i = 0; ok && i < dm.n; ++i) meta[n_meta++] = dm.pairs[i];
    }
    ok = ok && vp_checkpoint_save(b, path, items, m.n_params, meta, n_meta) == VP_OK;
    free(items);
    free(yaml);
    vp_model_free(&m);
    return ok;
}

/* A job's inputs: a temporary folder (also the bar cache's), the CPU backend, a synthetic
 * market saved as DIR/a.csv, the tiny config on it and a checkpoint DIR/best.safetensors;
 * rec: the record of a.csv as trained on with the config's split (when `recorded`). */
typedef struct job_fixture {
    char dir[256], csv[320], ck[320];
    vp_backend* b;
    vpt_market mk;
    vp_config cfg;
    vp_data_record rec;
} job_fixture;

static inline void fixture_init_as(job_fixture* f, uint64_t seed, int recorded) {
    memset(f, 0, sizeof *f);
    CHECK(tdu_mkdtemp(f->dir, sizeof f->dir) != NULL, "temporary folder");
    setenv("VULPES_CACHE_DIR", f->dir, 1);
    CHECK_OK(vp_backend_cpu_init(&f->b));
    CHECK(vpt_market_make(&f->mk, NBARS, seed), "market");
    snprintf(f->csv, sizeof f->csv, "%s/a.csv", f->dir);
    CHECK_OK(vp_bars_save_csv(&f->mk.bars, f->csv, -1));
    tiny_config(&f->cfg, f->csv);
    snprintf(f->ck, sizeof f->ck, "%s/best.safetensors", f->dir);
    if (recorded) {
        vp_train_data d;
        CHECK_OK(vp_train_data_load(&d, &f->cfg));
        CHECK_OK(vp_data_record_make(&d, d.split.train, &f->rec));
        vp_train_data_free(&d);
    }
    CHECK(write_checkpoint(f->b, &f->cfg, recorded ? &f->rec : NULL, f->ck), "checkpoint: %s", vp_last_error());
}

/* The fixture with a checkpoint from before checkpoints recorded their data. */
static inline void fixture_init(job_fixture* f, uint64_t seed) { fixture_init_as(f, seed, 0); }

static inline void fixture_free(job_fixture* f) {
    vpt_market_free(&f->mk);
    vp_backend_free(f->b);
    tdu_rmtree(f->dir);
}

/* Whether two text files have the same bytes, over 100 of them; with cut, up to the first occurrence of cut. */
/* Whether files a and b hold the same text (over 100 bytes) from the first `from` on (NULL:
 * the start) up to the first `cut` (NULL: the end). */
static inline int same_text_from(const char* a, const char* b, const char* from, const char* cut) {
    char *x = vpt_slurp(a, NULL), *y = vpt_slurp(b, NULL);
    int same = 0;
    if (x && y) {
        char* cx = cut ? strstr(x, cut) : NULL;
        char* cy = cut ? strstr(y, cut) : NULL;
        if (cx) *cx = '\0';
        if (cy) *cy = '\0';
        const char* fx = from ? strstr(x, from) : x;
        const char* fy = from ? strstr(y, from) : y;
        same = fx && fy && strcmp(fx, fy) == 0 && strlen(fx) > 100;
    }
    free(x);
    free(y);
    return same;
}

/* same_text_from from the start. */
static inline int same_text(const char* a, const char* b, const char* cut) { return same_text_from(a, b, NULL, cut); }

#endif /* VP_TEST_BACKTEST_JOB_UTIL_H */
