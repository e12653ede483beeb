/* vulpes: hyperparameter search (docs/search.md) — N trials, each the base config with its
 * parameters drawn from a search space (uniform, log-uniform, int, choice per key), trained
 * through the one training loop of `vulpes train` by successive halving on the validation
 * score: rung 0 trains every trial for R iterations, the top ceil(n / eta) of a rung by best
 * validation Sharpe are resumed to eta times the iterations, up to train.iterations. The
 * trials of a rung run several at once where memory allows (the walk-forward's job pool).
 *
 * Trial i's parameters come from a counter-based stream (Philox) keyed by the search seed,
 * the trial index and the key's place in the config table, so they depend on nothing else
 * (not N, not the other keys). Only keys that shape the agent and its learning are
 * searchable (model.*, learn.*, replay.*, collect.*, env.*: the ablation's rule).
 *
 * The folder of a search:
 *   config.yaml (the base), space.yaml (the space as read), search.json (the plan: seed,
 *   trials, eta, the rungs' iterations), rungs.json (each finished rung's scores and the
 *   trials it promoted), metrics.jsonl (a "search_rung" event per finished rung),
 *   results.csv, results.json, best.yaml (the winner's whole config), report.html, and
 *   trial-NNN/ per trial, a `vulpes train` run folder.
 * Everything is checked (the space, every trial's config and network) before a file is made;
 * a resume reads the plan, skips finished trials and continues interrupted ones bit for bit. */
#ifndef VULPES_SEARCH_H
#define VULPES_SEARCH_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/backend.h"
#include "vulpes/config.h"
#include "vulpes/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most keys of one space. */
#define VP_SEARCH_MAX_PARAMS 32

/* Most values of one choice. */
#define VP_SEARCH_MAX_CHOICES 16

/* Longest value text (a choice, a drawn number), NUL included. */
#define VP_SEARCH_VALUE_MAX 64

/* Most trials of one search. */
#define VP_SEARCH_MAX_TRIALS 10000

/* Most rungs of the halving. */
#define VP_SEARCH_MAX_RUNGS 32

/* How a key's values are drawn. */
typedef enum vp_search_dist {
    VP_SEARCH_UNIFORM = 0,  /* a FLOAT key: lo + u (hi - lo), u uniform in [0, 1) */
    VP_SEARCH_LOG_UNIFORM,  /* a FLOAT key, 0 < lo: exp(log lo + u (log hi - log lo)) */
    VP_SEARCH_INT,          /* an INT key: lo + floor(u (hi - lo + 1)), both ends included */
    VP_SEARCH_CHOICE,       /* any key: choice floor(u n) of the n values */
    VP_SEARCH_DIST_COUNT
} vp_search_dist;

/* One searched key. */
typedef struct vp_search_param {
    const vp_config_key* key;  /* the config key */
    int key_index;             /* its place in the config table: the index of its draws */
    vp_search_dist dist;       /* how it is drawn */
    double lo, hi;             /* UNIFORM, LOG_UNIFORM, INT: the bounds (lo < hi) */
    int n_choices;             /* CHOICE: 1 .. VP_SEARCH_MAX_CHOICES values */
    char choices[VP_SEARCH_MAX_CHOICES][VP_SEARCH_VALUE_MAX]; /* [n_choices] the values as written */
    int line;                  /* its line in the space file (1-based) */
} vp_search_param;

/* A search space: the keys in file order. */
typedef struct vp_search_space {
    int n_params;                                 /* 1 .. VP_SEARCH_MAX_PARAMS */
    vp_search_param params[VP_SEARCH_MAX_PARAMS]; /* [n_params] */
} vp_search_space;

/* One trial's drawn values, as text a key reads ("0.00031622776601683794", "64", "true"). */
typedef struct vp_search_draw {
    char values[VP_SEARCH_MAX_PARAMS][VP_SEARCH_VALUE_MAX]; /* [space n_params] */
} vp_search_draw;

/* Reads space YAML text `yaml` (`name` stands for the file in messages) against base config
 * `base` into *out: a mapping of dotted keys, each to one of {uniform: [lo, hi]},
 * {log_uniform: [lo, hi]}, {int: [lo, hi]}, {choice: [v, ...]}. Refuses, naming the file,
 * line and key: an unknown key (with the nearest one), a key outside the searchable sections,
 * a key given twice, another form, a distribution the key's type cannot take, bounds out of
 * the key's range or not ordered, log_uniform bounds <= 0, a choice value the key cannot take
 * or given twice. */
vp_status vp_search_space_parse(const char* yaml, const char* name, const vp_config* base, vp_search_space* out);

/* vp_search_space_parse of the file at `path` (at most VP_CONFIG_MAX_BYTES). */
vp_status vp_search_space_load(const char* path, const vp_config* base, vp_search_space* out);

/* The space as YAML text that parses back to it (one key a line, bounds in full precision),
 * in a malloc'd string the caller frees. */
vp_status vp_search_space_to_yaml(const vp_search_space* s, char** out);

/* The uniform number in [0, 1) of trial `trial`'s draw of config key `key_index` under
 * search seed `seed`: Philox (seed, stream = trial, index = key_index), 53 bits. */
double vp_search_unit(uint64_t seed, int64_t trial, int key_index);

/* Trial `trial`'s values of every key of s under search seed `seed`. */
void vp_search_sample(const vp_search_space* s, uint64_t seed, int64_t trial, vp_search_draw* out);

/* Sets the drawn values into cfg (a copy of the base) and checks the whole config
 * (vp_config_check); a refusal names trial `trial` and its values. */
vp_status vp_search_apply(const vp_search_space* s, const vp_search_draw* d, int64_t trial, vp_config* cfg);

/* The iterations of each rung into budgets[VP_SEARCH_MAX_RUNGS], *n_rungs their count: R,
 * R eta, R eta^2, ... while below `iterations`, then `iterations`. R is `min_iterations`, or
 * when 0, ceil(iterations / eta^(k - 1)) with k = 1 + floor(log_eta(n_trials)), so that there
 * are k rungs (fewer when iterations < eta^(k - 1)).
 * Refuses eta < 2, R > iterations and more than VP_SEARCH_MAX_RUNGS rungs. */
vp_status vp_search_budgets(int64_t iterations, int64_t eta, int64_t min_iterations, int64_t n_trials,
                            int64_t* budgets, int* n_rungs);

/* How many of n trials of a rung go on: ceil(n / eta) (0 for n = 0). */
int64_t vp_search_promote_count(int64_t n, int64_t eta);

/* The trials that go on from a rung of n trials trials[n] with scores[n] (best validation
 * Sharpe; NaN ranks below every number): the vp_search_promote_count(n, eta) highest, a tie
 * won by the lower trial index, written to out[] in increasing trial order; returns their
 * count (-1: out of memory). */
int64_t vp_search_promote(const int64_t* trials, const double* scores, int64_t n, int64_t eta, int64_t* out);

/* How a search runs. */
typedef struct vp_search_opts {
    const char* dir;                    /* the search folder (required) */
    vp_run_mode mode;                   /* CREATE (absent or empty folder), FORCE (start over), RESUME */
    const vp_search_space* space;       /* the space (CREATE, FORCE; RESUME: NULL, or it must be the plan's) */
    int64_t trials;                     /* N, 1 .. VP_SEARCH_MAX_TRIALS (RESUME: -1, or the plan's) */
    int64_t eta;                        /* the halving factor, >= 2 (RESUME: -1, or the plan's) */
    int64_t min_iterations;             /* R of rung 0 (0: from N and eta; RESUME: -1, or the plan's) */
    int64_t seed;                       /* the search seed, >= 0 (RESUME: -1, or the plan's) */
    int64_t parallel;                   /* trials at once asked for (>= 1; lowered to what device memory holds) */
    FILE* progress;                     /* a line per trial started and finished, per rung (NULL: none) */
    const volatile sig_atomic_t* stop;  /* non-zero: the trials in progress checkpoint and stop */
    int64_t stop_after_runs;            /* start no more trial runs once this many were started in this call (0: no cap) */
    int fused;                          /* the test backtests' CUDA path (see vp_rollout_cfg.fused) */
} vp_search_opts;

/* One trial of the table, read back from its folder. */
typedef struct vp_search_trial {
    char dir[VP_RUN_PATH_MAX];  /* its folder, DIR/trial-NNN */
    vp_search_draw draw;        /* its values */
    int rung;                   /* the last rung it was trained in (-1: none yet) */
    double score[VP_SEARCH_MAX_RUNGS]; /* its best validation Sharpe at the end of each finished rung it was in (NaN: not) */
    int finished;               /* 1: its summary.json says finished (the figures below hold) */
    int64_t iterations;         /* iterations its folder holds (summary.json; 0: none) */
    double val_sharpe;          /* best validation Sharpe (summary.json best_validation.sharpe; NaN: none) */
    double test_sharpe;         /* test-span Sharpe of its selected parameters (NaN: undefined or not finished) */
    double periods_per_year;    /* its annualisation factor */
    double skewness, kurtosis;  /* of its test-span returns (kurtosis not excess) */
    int64_t n_returns;          /* its valid test-span returns */
} vp_search_trial;

/* What a search produced (host memory, owned; vp_search_result_free). */
typedef struct vp_search_result {
    char dir[VP_RUN_PATH_MAX];      /* the folder */
    vp_search_space space;          /* the space */
    int64_t seed;                   /* the search seed */
    int64_t n_trials;               /* N */
    int64_t eta;                    /* the halving factor */
    int64_t min_iterations;         /* R as asked (0: from N and eta) */
    int n_rungs;                    /* rungs of the plan */
    int64_t budgets[VP_SEARCH_MAX_RUNGS]; /* [n_rungs] each rung's iterations */
    int64_t rung_size[VP_SEARCH_MAX_RUNGS]; /* [n_rungs] trials in each rung */
    int rungs_done;                 /* rungs finished */
    int interrupted;                /* 1: the search is unfinished; a resume continues */
    vp_search_trial* trials;        /* [n_trials] */
    vp_config base;                 /* the base config (data.path absolute) */
    int64_t best;                   /* the winner: highest score in the last rung (-1: unfinished) */
    int64_t dsr_trials;             /* trials of the deflation: those with a defined test Sharpe */
    double trials_sharpe_variance;  /* sample variance (ddof 1) of their test Sharpes, annualised */
    double expected_max_sharpe;     /* SR0: expected best Sharpe of dsr_trials unskilled trials, annualised */
    double deflated_sharpe;         /* PSR(SR0) of the winner's test-span returns (NaN: undefined) */
} vp_search_result;

/* Runs (or, with opts->mode VP_RUN_RESUME, continues) the search over base config cfg on
 * backend b into opts->dir; *out receives the table. Every trial's config is checked before
 * the folder is touched; a resume refuses another base (run.* aside) or another plan. On an
 * error *out holds nothing. */
vp_status vp_search_run(const vp_config* cfg, vp_backend* b, const vp_search_opts* opts, vp_search_result* out);

/* Prints the table: a line per trial, the winner and its deflated Sharpe. */
vp_status vp_search_print(const vp_search_result* r, FILE* out);

/* Frees a result's arrays (a zeroed result is a no-op). */
void vp_search_result_free(vp_search_result* r);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_SEARCH_H */
