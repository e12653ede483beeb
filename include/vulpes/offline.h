/* vulpes: offline datasets — the transitions a behaviour policy made in the environment,
 * recorded by `vulpes record` (docs/offline.md) and read by the offline algorithms (IQL, the
 * Decision Transformer). A dataset is one safetensors file that Python's `safetensors` reads
 * unchanged.
 *
 * The rows are time-major: E environments stepped T times together over one span of the
 * data. Row t of env i is the observation (decision bar, portfolio vector) the behaviour
 * acted on, the action it took, the reward and whether the episode ended at that step; row
 * T holds the observation after the last step. After a done row the env restarted, so row
 * t + 1 is the first observation of a new episode. An observation's market part is not
 * stored: it is the window of the data's features ending at its decision bar, and the
 * dataset records the data's identity so that it is refused against other bars. */
#ifndef VULPES_OFFLINE_H
#define VULPES_OFFLINE_H

#include <stdint.h>

#include "vulpes/data_record.h"
#include "vulpes/dataset.h"
#include "vulpes/split.h"
#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest behaviour description, with its NUL. */
#define VP_OFFLINE_BEHAVIOUR_MAX 256

/* A recorded dataset, on the host. */
typedef struct vp_offline_data {
    int64_t steps;        /* T: steps of every env (>= 1) */
    int64_t n_envs;       /* E: environments (>= 1) */
    int n_portfolio;      /* P: width of the portfolio vector */
    int32_t* bar;         /* [T + 1, E] decision bar of each observation */
    float* portfolio;     /* [T + 1, E, P] its portfolio vector */
    int32_t* action;      /* [T, E, 4] the choice per action branch (vulpes/action.h order) */
    float* reward;        /* [T, E] the env's reward for the step */
    float* done;          /* [T, E] 1: the episode ended at this step (ruin or episode_bars), else 0 */
    float* logp;          /* [T, E] behaviour log-probability of the joint action (NaN: unknown) */
    vp_data_record data;  /* identity of the bars it was recorded on */
    vp_span span;         /* bars of the data the envs ran over */
    uint64_t seed;        /* seed of the behaviour's draws */
    char behaviour[VP_OFFLINE_BEHAVIOUR_MAX]; /* "ma_cross:fast=5,slow=20", "random", "checkpoint:PATH,epsilon=0.1" */
} vp_offline_data;

/* Allocates the arrays of *d for T steps of E envs with P portfolio columns (zeroed; logp
 * NaN); the other fields zeroed. Free with vp_offline_free (also after a failure). */
vp_status vp_offline_alloc(vp_offline_data* d, int64_t T, int64_t E, int P);

/* Frees the arrays of *d and zeroes it (a zeroed one is a no-op). */
void vp_offline_free(vp_offline_data* d);

/* Checks every field of d: sizes, bars inside d->span and one bar on after a step whose
 * episode went on, actions inside their branches, done 0 or 1, finite rewards and portfolios,
 * logp finite or NaN (never +inf, never > 0), a non-empty behaviour, the data record
 * (vp_data_record_check) and the span inside its bars. The message starts with `where` and
 * names the field and row. */
vp_status vp_offline_check(const vp_offline_data* d, const char* where);

/* Writes d to path as safetensors atomically (PATH.tmp renamed into place), after
 * vp_offline_check: tensors bar, portfolio, action, reward, done, logp; metadata
 * "vulpes.offline.*" holds the format (1), T, E, P, the span, seed and behaviour, and
 * "vulpes.data.*" the data record as a checkpoint writes it (docs/offline.md). */
vp_status vp_offline_save(const vp_offline_data* d, const char* path);

/* Reads path into *d, checking the header, every tensor's dtype, exact shape and byte range
 * (none missing, none extra) and every metadata value before use, then vp_offline_check; the
 * message starts "dataset PATH:" and names the field. On failure *d is zeroed. */
vp_status vp_offline_load(const char* path, vp_offline_data* d);

/* Fails unless d was recorded on the bars of `t` (vp_data_record_same on their records) and
 * its span lies inside them; the message names both sources. */
vp_status vp_offline_check_data(const vp_offline_data* d, const vp_train_data* t, const char* where);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_OFFLINE_H */
