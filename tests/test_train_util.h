/* Helpers of the training tests: a tiny run configuration on a synthetic market, scratch
 * run folders, and reading files back (whole, or metrics.jsonl filtered by event). */
#ifndef VP_TEST_TRAIN_UTIL_H
#define VP_TEST_TRAIN_UTIL_H

#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dirent.h>

#include "test_util.h"
#include "vulpes/config.h"
#include "vulpes/dqn.h"
#include "vulpes/train.h"

/* A run small enough for a test: 1500 bars of the trend market, 8 envs, a 16-wide network,
 * batch 32, 40 iterations with logs every 5, validations every 10, checkpoints every 15. */
static const char* VPT_TRAIN_YAML =
    "data:\n"
    "  path: \"synth:trend:bars=1500,seed=3\"\n"
    "split:\n"
    "  train: 0.6\n"
    "  val: 0.2\n"
    "  test: 0.2\n"
    "features:\n"
    "  window: 32\n"
    "instrument:\n"
    "  tick_size: 0.01\n"
    "  multiplier: 10\n"
    "  commission: 0.1\n"
    "  slippage_ticks: 1\n"
    "  max_position: 3\n"
    "  initial_equity: 10000\n"
    "env:\n"
    "  n_envs: 7\n"
    "  episode_bars: 61\n"
    "model:\n"
    "  window: 4\n"
    "  hidden: 16\n"
    "  mamba_state: 4\n"
    "  mamba_head_dim: 8\n"
    "  mamba_conv: 2\n"
    "  head_hidden: 16\n"
    "  n_atoms: 11\n"
    "  iqn_taus: 4\n"
    "  iqn_target_taus: 5\n"
    "  iqn_cos: 8\n"
    "learn:\n"
    "  batch: 33\n"
    "  lr: 0.001\n"
    "replay:\n"
    "  capacity: 3001\n"
    "  warmup: 200\n"
    "  beta_steps: 100\n"
    "collect:\n"
    "  epsilon_steps: 50\n"
    "train:\n"
    "  iterations: 40\n"
    "  collect_steps: 2\n"
    "  train_steps: 1\n"
    "  eval_every: 10\n"
    "  checkpoint_every: 15\n"
    "  log_every: 5\n"
    "run:\n"
    "  seed: 7\n"
    "  backend: cpu\n";

/* The test configuration with `n` overrides "key=value"; returns 0 on failure (printed). */
static inline int vpt_train_cfg(vp_config* cfg, int n, const char* const* overrides) {
    vp_config_defaults(cfg);
    if (vp_config_load_string(cfg, VPT_TRAIN_YAML, "test config") != VP_OK) {
        fprintf(stderr, "test config: %s\n", vp_last_error());
        return 0;
    }
    for (int i = 0; i < n; ++i)
        if (vp_config_override(cfg, overrides[i]) != VP_OK) {
            fprintf(stderr, "override %s: %s\n", overrides[i], vp_last_error());
            return 0;
        }
    if (vp_config_check(cfg) != VP_OK) {
        fprintf(stderr, "test config: %s\n", vp_last_error());
        return 0;
    }
    return 1;
}

/* A fresh scratch folder name under the system's temporary folder into out[n]. */
static inline void vpt_tmp_dir(char* out, size_t n, const char* tag) {
    const char* base = getenv("TMPDIR");
    snprintf(out, n, "%s/vulpes-%s-%ld", base && base[0] ? base : "/tmp", tag, (long)getpid());
}

/* Removes `dir` and everything under it (the run's files, whatever their names, the folds of a
 * walk-forward and the folders --force moved older runs into), so that a later test process
 * with the same pid, and so the same folder name, starts from nothing. remove() takes a file or
 * a symbolic link (never followed) or an empty folder; a folder it refuses is emptied first. */
static inline void vpt_rm_run(const char* dir) {
    if (remove(dir) == 0) return;
    DIR* d = opendir(dir);
    if (!d) return;
    struct dirent* e;
    char p[4096];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (snprintf(p, sizeof p, "%s/%s", dir, e->d_name) >= (int)sizeof p) continue;
        vpt_rm_run(p);
    }
    closedir(d);
    rmdir(dir);
}

/* The lines of dir/metrics.jsonl whose event is one of `events` (a "|"-separated list, e.g.
 * "train|eval"), concatenated; NULL when unreadable. Free it. */
static inline char* vpt_metrics_lines(const char* dir, const char* events) {
    char* text = vpt_read_file(dir, "metrics.jsonl", NULL);
    if (!text) return NULL;
    char* out = (char*)calloc(strlen(text) + 1, 1);
    size_t n = 0;
    for (char* line = text; out && *line;) {
        char* nl = strchr(line, '\n');
        size_t len = nl ? (size_t)(nl - line) + 1 : strlen(line);
        char ev[64] = "";
        if (sscanf(line, "{\"event\":\"%63[^\"]\"", ev) == 1) {
            char want[256];
            snprintf(want, sizeof want, "|%s|", events);
            char key[80];
            snprintf(key, sizeof key, "|%s|", ev);
            if (strstr(want, key)) {
                memcpy(out + n, line, len);
                n += len;
            }
        }
        line += len;
    }
    free(text);
    return out;
}

/* Number of lines in a text. */
static inline int vpt_count_lines(const char* s) {
    int n = 0;
    for (; s && *s; ++s) n += *s == '\n';
    return n;
}

/* Runs the test config (plus n overrides) in dir with the given mode, stopping as on an
 * interrupt after stop_after iterations (0: never) and with `finish` at the end (NULL: none). */
static inline vp_status vpt_train_run(const char* dir, vp_run_mode mode, int64_t stop_after, vp_train_finish_fn finish,
                                      int n, const char* const* over, vp_train_result* r) {
    vp_backend* b = NULL;
    vp_config cfg;
    if (vp_backend_cpu_init(&b) != VP_OK || !vpt_train_cfg(&cfg, n, over)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = mode;
    o.stop_after = stop_after;
    o.finish = finish;
    vp_status s = vp_train_run(&cfg, b, &o, r);
    vp_backend_free(b);
    return s;
}

/* Trains the test config (plus n overrides) on backend b into a new run folder dir, through
 * communicator comm (NULL: none). */
static inline vp_status vpt_train_comm(vp_backend* b, const char* dir, vp_comm* comm, int n, const char* const* over,
                                       vp_train_result* r) {
    vp_config cfg;
    if (!vpt_train_cfg(&cfg, n, over)) return VP_ERR_STATE;
    vp_train_opts o = vp_train_opts_default();
    o.run_dir = dir;
    o.mode = VP_RUN_CREATE;
    o.comm = comm;
    return vp_train_run(&cfg, b, &o, r);
}

#endif /* VP_TEST_TRAIN_UTIL_H */
