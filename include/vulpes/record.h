/* vulpes: recording offline datasets — a behaviour policy stepped through the environment over
 * one span of the data, every observation, action, reward, end of episode and the behaviour's
 * log-probability of its action kept (vulpes/offline.h; `vulpes record`, docs/offline.md).
 *
 * A behaviour decides on the host from each step's observations, which are downloaded once
 * per step for all envs together; the env steps on the recording backend (CPU or CUDA, the
 * same step function, so both record the same rows for the same seed). Behaviours:
 * - random: every branch uniform, Philox draws (vulpes/rng.h) of the seed, stream per env,
 *   counter per step; logp = -log(3 x 4 x 3 x 3) for every action.
 * - ma_cross: long when the simple moving average of the last `fast` closes (bars t-fast+1
 *   .. t) is above that of the last `slow`, short when below, flat when equal or when the data
 *   has fewer than `slow` bars up to t; size choice `size`, no take-profit, no stop-loss.
 * - policy: the greedy action of a policy (a trained checkpoint's, vulpes/policy.h).
 * With epsilon > 0, at each step and env a uniform draw below epsilon replaces the
 * behaviour's action by a uniform random one; logp is then the log of the mixture's
 * probability of the action taken, epsilon / 108 + (1 - epsilon) [action = the behaviour's],
 * and 0 for a deterministic behaviour without epsilon. */
#ifndef VULPES_RECORD_H
#define VULPES_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/dataset.h"
#include "vulpes/env.h"
#include "vulpes/offline.h"
#include "vulpes/policy.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Joint actions of the environment: 3 directions x 4 sizes x 3 take-profits x 3 stop-losses. */
#define VP_RECORD_JOINT_ACTIONS 108

/* Which rule a behaviour follows. */
typedef enum vp_behaviour_kind {
    VP_BEHAVIOUR_RANDOM = 0, /* uniform per branch */
    VP_BEHAVIOUR_MA_CROSS,   /* the moving-average crossover */
    VP_BEHAVIOUR_POLICY,     /* a policy's greedy action */
    VP_BEHAVIOUR_KIND_COUNT
} vp_behaviour_kind;

/* A behaviour policy. */
typedef struct vp_behaviour {
    vp_behaviour_kind kind;   /* the rule */
    int fast, slow;           /* ma_cross: SMA lengths in bars (1 <= fast < slow) */
    int size;                 /* ma_cross: the size choice (0 .. VP_ENV_SIZE_CHOICES - 1) */
    double epsilon;           /* probability of a uniform random action at each step (0 .. 1) */
    const vp_policy* policy;  /* VP_BEHAVIOUR_POLICY: the policy, on the recording backend (outlives the recording) */
    char name[VP_OFFLINE_BEHAVIOUR_MAX]; /* what the dataset records ("ma_cross:fast=5,slow=20,size=3") */
} vp_behaviour;

/* Parses "random" or "ma_cross:fast=N,slow=M[,size=I]" (either with ",epsilon=E") into *out,
 * its name the canonical spelling; an unknown name or option, a missing or bad value is refused
 * naming it. A policy behaviour is made by vp_behaviour_policy. */
vp_status vp_behaviour_parse(const char* spec, vp_behaviour* out);

/* The greedy behaviour of policy p with epsilon into *out, named "checkpoint:SOURCE" (with
 * ",epsilon=E" when epsilon > 0). */
vp_status vp_behaviour_policy(const vp_policy* p, const char* source, double epsilon, vp_behaviour* out);

/* Sets epsilon (0 .. 1) of a parsed behaviour and appends it to the name; 0 (none given)
 * leaves the behaviour as it is, another value than the spec's own epsilon is refused. */
vp_status vp_behaviour_set_epsilon(vp_behaviour* b, double epsilon);

/* The direction ma_cross takes at the close of bar t of close [t + 1 ..] (VP_ENV_DIR_*). */
int vp_ma_cross_dir(const double* close, int64_t t, int fast, int slow);

/* The log-probability of the action taken when the behaviour chose `own` and the action
 * taken is `taken` (both [VP_ENV_BRANCHES]) under epsilon; `uniform`: the behaviour itself is
 * uniform (random). */
float vp_behaviour_logp(const int32_t* own, const int32_t* taken, double epsilon, int uniform);

/* What a recording runs over. */
typedef struct vp_record_cfg {
    int64_t steps;            /* T: steps of every env (>= 1) */
    int64_t n_envs;           /* E (>= 1) */
    uint64_t seed;            /* the behaviour's draws (the dataset's seed) */
    vp_span span;             /* bars the envs run over (its episodes start inside, vp_env_market_desc) */
    vp_instrument instrument; /* contract and costs */
    vp_env_config env;        /* episodes and rewards; its seed places the episodes */
} vp_record_cfg;

/* Steps c->n_envs envs of behaviour beh for c->steps steps over span c->span of data d on
 * backend b and fills *out (vp_offline_alloc'd here: free with vp_offline_free, also after a
 * failure): the rows, the data's record (training span d->split.train), the span, seed and
 * behaviour name. `features` [T, F] in b's memory is what a policy behaviour encodes (NULL
 * otherwise). Per step: one download of the observations, one upload of the actions, one
 * download of the step's rewards and ends (and, for a policy, one of its scores). */
vp_status vp_record_run(vp_backend* b, const vp_train_data* d, const vp_tensor* features, const vp_behaviour* beh,
                        const vp_record_cfg* c, vp_offline_data* out);

/* Totals of a dataset for a summary line. */
typedef struct vp_record_totals {
    int64_t rows;        /* T x E transitions */
    int64_t episodes;    /* episodes ended (done rows) */
    double mean_reward;  /* mean reward per transition */
} vp_record_totals;

/* The totals of d. */
vp_record_totals vp_record_totals_of(const vp_offline_data* d);

/* ---- the `vulpes record` job (src/eval/record_job.c) ------------------------------------------- */

/* Steps and envs of a recording unless given. */
#define VP_RECORD_DEFAULT_STEPS 1000
#define VP_RECORD_DEFAULT_ENVS 16

/* What `vulpes record` was asked for. */
typedef struct vp_record_job {
    const char* config;      /* CONFIG (a policy behaviour's config file; NULL with a checkpoint) */
    char* const* overrides;  /* [n_overrides] "KEY=VALUE": any key with CONFIG; with a checkpoint only
                                what a backtest may change (vp_backtest_key_overridable) */
    int n_overrides;         /* how many */
    const char* checkpoint;  /* --checkpoint CK: its greedy policy, its config and its data (or NULL) */
    const char* policy;      /* --policy NAME[:opts] (vp_behaviour_parse; or NULL) */
    double epsilon;          /* --epsilon (0 .. 1) */
    int64_t steps;           /* --steps (0: VP_RECORD_DEFAULT_STEPS) */
    int64_t n_envs;          /* --envs (0: VP_RECORD_DEFAULT_ENVS) */
    const char* span;        /* --span train|val|test (NULL: train) */
    int has_seed;            /* 1: --seed given */
    uint64_t seed;           /* --seed (else run.seed of the config) */
    const char* out;         /* --out FILE */
    int force;               /* --force: replace an existing FILE */
} vp_record_job;

/* What a finished job wrote, for its summary. */
typedef struct vp_record_report {
    vp_record_totals totals;           /* rows, episodes, mean reward */
    char behaviour[VP_OFFLINE_BEHAVIOUR_MAX]; /* the behaviour's name as recorded */
    vp_data_record data;               /* the record of the data written into the file */
    const char* span_name;             /* "train", "val" or "test" */
    vp_span span;                      /* its bars */
    uint64_t seed;                     /* the seed used */
    int64_t steps, n_envs;             /* T and E */
    int checked_against_checkpoint;    /* 1: the data matched the checkpoint's record */
} vp_record_report;

/* Runs job on backend b: checks the request (one of checkpoint and policy, an --out that is
 * absent unless force, the behaviour's spec) before reading anything, the config (the file with
 * the overrides, or the checkpoint's, vp_backtest_checkpoint_config), the data (a checkpoint's
 * recorded bars, refused when they changed), the span of the split, the behaviour (a checkpoint's
 * greedy policy: an inference instance of its algorithm), vp_record_run and vp_offline_save to
 * job->out; *out says what was written. A refused or failed job writes nothing. */
vp_status vp_record_job_run(vp_backend* b, const vp_record_job* job, vp_record_report* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_RECORD_H */
