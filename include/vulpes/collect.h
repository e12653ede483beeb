/* vulpes: collection (SPEC section 5) — n_envs environments driven by the online network.
 *
 * One collection step: the market encoding of every env's K-bar window at its decision
 * bar (vp_model_encode), the heads with the env's portfolio vector (vp_model_heads), an
 * epsilon-greedy choice per branch written straight into the env's action buffer, the
 * env step, and the step pushed into the replay (which builds the n-step returns). Every
 * part is a backend op: nothing is copied to or from the host, nothing allocated, nothing
 * synchronised, so a step can be captured into a graph.
 *
 * Exploration is deterministic: the draws of env i at collection step k are Philox words
 * (seed, VP_COLLECT_STREAM + i, 2k) for the coin of each branch and (..., 2k + 1) for the
 * random choice of each branch; epsilon anneals linearly with k, read from a counter in
 * backend memory that the step itself advances. */
#ifndef VULPES_COLLECT_H
#define VULPES_COLLECT_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/env.h"
#include "vulpes/model.h"
#include "vulpes/policy.h"
#include "vulpes/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First Philox stream of the exploration draws (env i uses this + i); apart from the env's
 * episode streams (i) and its random-action streams (2^62 + i). */
#define VP_COLLECT_STREAM (1ull << 63)

/* Exploration settings. */
typedef struct vp_collect_cfg {
    float epsilon_start;   /* exploration rate at collection step 0, in [0, 1] */
    float epsilon_end;     /* exploration rate after the anneal, in [0, 1] */
    int64_t epsilon_steps; /* collection steps of the linear anneal (0: epsilon_end from the start) */
    uint64_t seed;         /* Philox key of the exploration draws */
} vp_collect_cfg;

/* The epsilon of collection step `step` (the same float the device computes). */
float vp_collect_epsilon(const vp_collect_cfg* c, int64_t step);

/* Epsilon-greedy actions from Q-values: for env i and branch br, with probability epsilon
 * (of the step held in `step`) a uniform choice, else the argmax of q over the branch's
 * heads (ties: the lowest index; NaN never wins over a number). q [E, A] f32, step [2] i32
 * holding one int64 collection-step counter (read only), actions [E, n_branches] i32. The
 * layout must be the environment's (vulpes/action.h). */
vp_status vp_collect_act(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout, const vp_tensor* q,
                         const vp_tensor* step, vp_tensor* actions);

/* Advances the collection-step counter step ([2] i32 holding one int64) by one, on the backend. */
vp_status vp_collect_tick(vp_backend* b, vp_tensor* step);

/* n_envs environments, the network that drives them and the buffers between the two. */
typedef struct vp_collector {
    vp_backend* backend;       /* where everything runs */
    vp_policy policy;          /* what chooses the actions (its parameters included) */
    vp_tensor features;        /* [T, F] the feature matrix the envs' bar indices point into */
    vp_env* env;               /* the environments (caller-owned) */
    vp_replay* replay;         /* where steps go (caller-owned; NULL: nothing is stored) */
    vp_collect_cfg cfg;        /* exploration */
    int64_t n_envs;            /* E */
    vp_policy_work* work;      /* the policy's workspace for E samples */
    vp_arena arena;            /* the buffers below */
    vp_tensor obs_bar;         /* [E] i32 decision bar of the current observation */
    vp_tensor portfolio;       /* [E, P] f32 portfolio vector of the current observation */
    vp_tensor next_bar;        /* [E] i32 decision bar after the step */
    vp_tensor next_portfolio;  /* [E, P] f32 portfolio vector after the step */
    vp_tensor window_end;      /* [E] i32 window end of the current episode, before the step */
    vp_tensor actions;         /* [E, 4] i32 the env's action buffer */
    vp_tensor reward;          /* [E] f32 reward of the last step */
    vp_tensor done;            /* [E] f32 1 where the last step ended an episode */
    vp_tensor step;            /* [2] i32: one int64, policy collection steps taken */
} vp_collector;

/* Makes a collector over `env` (whose market's features are `features` [T, F] in backend
 * memory) driven by policy `pol` (copied; what it points to must outlive the collector),
 * pushing into `replay` (may be NULL), and writes the envs' first observation
 * (vp_collector_reset). */
vp_status vp_collector_init(vp_collector* c, vp_backend* b, const vp_policy* pol, const vp_tensor* features,
                            vp_env* env, vp_replay* replay, const vp_collect_cfg* cfg);

/* Frees a collector (a zeroed one is a no-op); the env, model and replay are left alone. */
void vp_collector_free(vp_collector* c);

/* Restarts every env at episode 0, writes the observation and sets the step counter to 0
 * (set-up: one upload). */
vp_status vp_collector_reset(vp_collector* c);

/* Re-reads the current observation from the env state (after the state was loaded). */
vp_status vp_collector_observe(vp_collector* c);

/* The policy's scores of the current observations, without acting or stepping (runs every
 * op of a step's forward once, e.g. before a graph capture; ops only). */
vp_status vp_collector_score(vp_collector* c);

/* One policy step of every env (ops only: capturable into a graph). */
vp_status vp_collector_step(vp_collector* c);

/* One step of every env with uniform random actions drawn for `counter` (the warm-up;
 * ops only). The policy step counter does not move. */
vp_status vp_collector_random_step(vp_collector* c, uint64_t counter);

/* Sets the policy step counter (set-up and checkpoints: one upload). */
vp_status vp_collector_set_step(vp_collector* c, int64_t step);

/* Reads the policy step counter (logging, tests: one download and a wait). */
vp_status vp_collector_get_step(vp_collector* c, int64_t* step);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_COLLECT_H */
