/* vulpes: ablation (docs/ablate.md) — the base config and each variant of it, the base with one
 * switch turned on, each trained for N seeds (run.seed = the base's seed + i, i = 0 .. N-1)
 * through the one training loop of `vulpes train`, several at once where memory allows (the
 * walk-forward's job pool), and one table over them: test-span Sharpe mean and its standard
 * error over the seeds, the deflated Sharpe over every run as a trial, learner step ms and
 * the parameter count.
 *
 * A switch is "KEY" for a bool key (the variant sets it true) or "KEY=VALUE" for any key; its
 * key must be one of the sections that shape the agent and its learning (model, learn,
 * replay, collect, env) and its value must differ from the base's. Anything else is refused,
 * naming the switch, before a file is made.
 *
 * The folder of an ablation:
 *   config.yaml (the base), metrics.jsonl (an "ablate_run" event per finished run),
 *   ablate_plan.json (the switches and seeds; a resume reads them), ablate.csv, ablate.json,
 *   report.html (the table and a row per run linking its report), and runs/VARIANT/seed_S/
 *   per run, a `vulpes train` run folder (VARIANT "base" or the switch as given, characters
 *   other than letters, digits and ._=+- made '_'; S the run's seed).
 * A run is finished when its summary.json says so; a resume (VP_RUN_RESUME) skips finished
 * runs, continues an interrupted one from its last.safetensors and starts the others. The
 * table is always built from the run folders' files, so a resumed ablation writes the same
 * figures as one that ran straight through (the step times aside, which are wall-clock). */
#ifndef VULPES_ABLATE_H
#define VULPES_ABLATE_H

#include <signal.h>
#include <stdint.h>
#include <stdio.h>

#include "vulpes/backend.h"
#include "vulpes/config.h"
#include "vulpes/run.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most switches of one ablation (variants: the base and one per switch). */
#define VP_ABLATE_MAX_SWITCHES 63

/* Most seeds per variant. */
#define VP_ABLATE_MAX_SEEDS 10000

/* Longest switch text, NUL included. */
#define VP_ABLATE_NAME_MAX 256

/* One variant: the base, or the base with one key changed. */
typedef struct vp_ablate_variant {
    char name[VP_ABLATE_NAME_MAX];  /* "base", or the switch as given ("model.encoder=none") */
    char slug[VP_ABLATE_NAME_MAX];  /* its folder name under runs/ */
    const vp_config_key* key;       /* the key it changes (NULL: the base) */
    char value[VP_CONFIG_STR_MAX];  /* the value it sets ("true" for a bare bool key; "" for the base) */
} vp_ablate_variant;

/* How an ablation runs. */
typedef struct vp_ablate_opts {
    const char* dir;                    /* the ablation folder (required) */
    vp_run_mode mode;                   /* CREATE (absent or empty folder), FORCE (start over), RESUME */
    const char* const* switches;        /* [n_switches] the switches (CREATE, FORCE; a resume reads its plan) */
    int n_switches;                     /* 1 .. VP_ABLATE_MAX_SWITCHES */
    int64_t seeds;                      /* seeds per variant (>= 1; a resume reads its plan) */
    int64_t parallel;                   /* runs at once asked for (>= 1; lowered to what device memory holds) */
    FILE* progress;                     /* a line per run started and finished (NULL: none) */
    const volatile sig_atomic_t* stop;  /* non-zero: the runs in progress checkpoint and stop */
    int64_t stop_after_runs;            /* start no more runs once this many were started in this call (0: no cap) */
    int fused;                          /* the test backtests' CUDA path (see vp_rollout_cfg.fused) */
} vp_ablate_opts;

/* One run of the table, read back from its folder. */
typedef struct vp_ablate_trial {
    int variant;                 /* index of its variant (0: the base) */
    int64_t seed;                /* its run.seed */
    char dir[VP_RUN_PATH_MAX];   /* its folder */
    int finished;                /* 1: its summary.json says finished (the figures below hold) */
    double sharpe;               /* test-span Sharpe, annualised (summary.json test.strategy.sharpe_ratio; NaN: undefined) */
    double periods_per_year;     /* its annualisation factor */
    double skewness, kurtosis;   /* of its test-span returns (kurtosis not excess) */
    int64_t n_returns;           /* its valid test-span returns */
    double deflated_sharpe;      /* PSR of its test Sharpe against SR0 of every finished run as a trial (NaN: undefined) */
    double step_ms;              /* wall-clock ms per learner step of its training loop (timing lines; NaN: none) */
    int64_t parameters;          /* the network's parameter count (its "run" event; -1: unknown) */
} vp_ablate_trial;

/* One variant's row of the table. */
typedef struct vp_ablate_row {
    int64_t seeds;               /* its finished runs */
    int64_t defined;             /* of them, runs with a defined test Sharpe */
    double sharpe_mean;          /* mean test Sharpe over those (NaN: none) */
    double sharpe_se;            /* its standard error: sample std (ddof 1) / sqrt(defined) (NaN: < 2) */
    double deflated_sharpe;      /* the deflated Sharpe of its best seed (highest test Sharpe; NaN: undefined) */
    int64_t best_seed;           /* that seed (-1: none) */
    double step_ms;              /* mean ms per learner step over its finished runs (NaN: none) */
    int64_t parameters;          /* parameter count (-1: unknown) */
} vp_ablate_row;

/* What an ablation produced (host memory, owned; vp_ablate_result_free). */
typedef struct vp_ablate_result {
    char dir[VP_RUN_PATH_MAX];     /* the folder */
    int n_variants;                /* the base and one per switch */
    vp_ablate_variant* variants;   /* [n_variants] */
    int64_t seeds;                 /* seeds per variant */
    int64_t base_seed;             /* the base config's run.seed */
    vp_ablate_row* rows;           /* [n_variants] */
    int64_t n_runs;                /* n_variants x seeds, variant by variant, seed by seed */
    vp_ablate_trial* runs;         /* [n_runs] */
    int64_t n_done;                /* runs finished */
    int interrupted;               /* 1: some runs are unfinished; a resume continues */
    int64_t n_trials;              /* trials of the deflation: the finished runs */
    double trials_sharpe_variance; /* sample variance (ddof 1) of their defined test Sharpes, annualised */
    double expected_max_sharpe;    /* SR0: expected best Sharpe of n_trials unskilled trials, annualised */
} vp_ablate_result;

/* Whether config key `name` may vary between runs that are compared (an ablation's switch, a
 * search's key): it is in the model, learn, replay, collect or env section. */
int vp_ablate_key_switchable(const char* name);

/* Reads switch `text` against base config `base` into *out: "KEY" (a bool key, set true) or
 * "KEY=VALUE". Refuses an unknown key (naming the nearest one), a key outside the model,
 * learn, replay, collect and env sections, a bare non-bool key, a value the key cannot take
 * and a value equal to the base's, each naming the switch. */
vp_status vp_ablate_parse_switch(const vp_config* base, const char* text, vp_ablate_variant* out);

/* Runs (or, with opts->mode VP_RUN_RESUME, continues) the ablation of base config cfg on
 * backend b into opts->dir; *out receives the table of the finished runs. Every switch and
 * every variant's config is checked before the folder is touched. A resume refuses another
 * base config than the folder's config.yaml (run.* aside). On an error *out holds nothing. */
vp_status vp_ablate_run(const vp_config* cfg, vp_backend* b, const vp_ablate_opts* opts, vp_ablate_result* out);

/* Builds the table of the finished runs of r (r->variants, seeds, base_seed, runs[].dir set)
 * from their folders' summary.json and metrics.jsonl. */
vp_status vp_ablate_collect(vp_ablate_result* r);

/* Prints the table: one line per variant, the deflation's trials and SR0 under it. */
vp_status vp_ablate_print(const vp_ablate_result* r, FILE* out);

/* Writes DIR/ablate.csv, ablate.json and report.html of r (each atomically). */
vp_status vp_ablate_write(const vp_ablate_result* r);

/* Frees a result's arrays (a zeroed result is a no-op). */
void vp_ablate_result_free(vp_ablate_result* r);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_ABLATE_H */
