/* vulpes: collection (SPEC section 5) — n_envs environments driven by the online network.
 *
 * One collection step: the market encoding of every env's K-bar window at its decision
 * bar, the heads with the env's portfolio vector (vp_policy_score), an epsilon-greedy
 * choice per branch written straight into the env's action buffer, the env step, and the
 * step pushed into the replay (which builds the n-step returns). Every part is a backend
 * op: nothing is copied to or from the host, nothing allocated, nothing synchronised, so a
 * step can be captured into a graph.
 *
 * S steps at a time (vp_collector_collect, one training iteration's collection) may encode
 * once: the parameters do not change inside them and the encoding does not see the
 * portfolio, so every bar an env can stand on (each decision bar of the env's tradable
 * span, episode restarts and ruin included) is encoded in large batches first, and each
 * of the S steps gathers its envs' rows and runs the heads only. It applies where the span
 * has fewer bars than the E x S windows that S single steps encode (docs/collect.md); the
 * transitions are the same as S single steps (vp_collector_step), bit for bit on the CPU.
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
#include "vulpes/model_span.h"
#include "vulpes/policy.h"
#include "vulpes/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* First Philox stream of the exploration draws (env i uses this + i); apart from the env's
 * episode streams (i) and its random-action streams (2^62 + i). */
#define VP_COLLECT_STREAM (1ull << 63)

/* How vp_collector_collect runs its S steps. */
typedef enum vp_collect_mode {
    VP_COLLECT_AUTO = 0,    /* encode once where the span has fewer bars than E x S, else step by step */
    VP_COLLECT_STEPWISE,    /* S single steps (vp_collector_step), each encoding every env's window */
    VP_COLLECT_ENCODE_ONCE, /* always encode the span once (equality tests, benchmarks) */
    VP_COLLECT_MODE_COUNT
} vp_collect_mode;

/* Exploration and collection settings. */
typedef struct vp_collect_cfg {
    float epsilon_start;   /* exploration rate at collection step 0, in [0, 1] */
    float epsilon_end;     /* exploration rate after the anneal, in [0, 1] */
    int64_t epsilon_steps; /* collection steps of the linear anneal (0: epsilon_end from the start) */
    uint64_t seed;         /* Philox key of the exploration draws */
    int64_t steps;         /* S: policy steps per vp_collector_collect (train.collect_steps; >= 0) */
    vp_collect_mode mode;  /* how those S steps run (0: VP_COLLECT_AUTO) */
} vp_collect_cfg;

/* Rows a span encoding is made in at most (one vp_policy_encode call each) when n_envs is
 * smaller; with more envs, n_envs rows. */
#define VP_COLLECT_CHUNK 32768

/* The epsilon of collection step `step` (the same float the device computes). */
float vp_collect_epsilon(const vp_collect_cfg* c, int64_t step);

/* Epsilon-greedy actions from Q-values: for env i and branch br, with probability epsilon
 * (of the step held in `step`) a uniform choice, else the argmax of q over the branch's
 * heads (ties: the lowest index; NaN never wins over a number). q [E, A] f32, step [2] i32
 * holding one int64 collection-step counter (read only), actions [E, n_branches] i32. The
 * layout must be the environment's (vulpes/action.h). */
vp_status vp_collect_act(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout, const vp_tensor* q,
                         const vp_tensor* step, vp_tensor* actions);

/* vp_collect_act with epsilon times eps_scale[0] (capped at 1), the factor read on the
 * backend at every call ([1] f32 backend memory; NULL: vp_collect_act). */
vp_status vp_collect_act_scaled(vp_backend* b, const vp_collect_cfg* c, const vp_action_layout* layout,
                                const vp_tensor* q, const vp_tensor* step, const vp_tensor* eps_scale,
                                vp_tensor* actions);

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
    vp_tensor goal_portfolio;  /* [E, P + 1] f32 the pushed s_t rows with the policy's goal appended (a
                                  goal-conditioned policy, her.enabled; else data NULL) */
    vp_tensor goal_next;       /* [E, P + 1] f32 the same of the portfolio after the step (else data NULL) */
    vp_tensor window_end;      /* [E] i32 window end of the current episode, before the step */
    vp_tensor actions;         /* [E, 4] i32 the env's action buffer */
    vp_tensor reward;          /* [E] f32 reward of the last step */
    vp_tensor done;            /* [E] f32 1 where the last step ended an episode */
    vp_tensor step;            /* [2] i32: one int64, policy collection steps taken */
    vp_tensor eps_scale;       /* [1] f32 backend memory, set by the caller: factor on epsilon (data NULL: 1) */
    struct vp_curiosity* curiosity; /* intrinsic rewards of policy steps, pushed beside the reward (NULL: none;
                                       caller-owned, set after init; vulpes/curiosity.h) */
    /* the encode-once path (vp_collector_collect); zero when it does not apply */
    int encode_once;           /* 1: collect encodes the span once, then runs S head-only steps */
    int64_t span_begin;        /* first bar with an encoding row: the market's begin */
    int64_t span_rows;         /* R: bars span_begin .. span_begin + R - 1 (every decision bar an env can hold) */
    int64_t chunk;             /* windows per encode call (<= R; shared rows: the per-bar rows in calls of chunk x K) */
    vp_policy_work* span_work; /* workspace for `chunk` rows (NULL: `work` serves, chunk <= E) */
    vp_arena span_arena;       /* the buffers below */
    vp_tensor span_bars;       /* [R] i32 the bars span_begin, span_begin + 1, ... (set-up: one upload) */
    vp_tensor span_enc;        /* [R, enc_dim] f32 the encoding of each bar, remade per collect */
    vp_tensor enc;             /* [E, enc_dim] f32 each env's row of span_enc at its decision bar */
    int span_shared;           /* 1: span_enc is made with shared rows (vp_model_encode_span over `span`: each
                                  distinct bar's trunk and in_proj rows once); 0: each window encoded alone
                                  (another policy than the DQN network's; a test may set 0 after init) */
    vp_model_span span;        /* the per-bar tables of span_enc's windows (span_shared; else zero) */
} vp_collector;

/* Makes a collector over `env` (whose market's features are `features` [T, F] in backend
 * memory) driven by policy `pol` (copied; what it points to must outlive the collector),
 * pushing into `replay` (may be NULL), and writes the envs' first observation
 * (vp_collector_reset). Chooses how cfg->steps steps are collected (cfg->mode) and, for the
 * encode-once path, allocates the span's encoding table and its workspace here. */
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
 * op of a collection's forward once, the span encoding included on the encode-once path,
 * e.g. before a graph capture; ops only). */
vp_status vp_collector_score(vp_collector* c);

/* One policy step of every env, encoding every env's window (ops only: capturable). */
vp_status vp_collector_step(vp_collector* c);

/* cfg.steps policy steps of every env: on the encode-once path the span encoding
 * (vp_collector_encode_span), then that many vp_collector_head_step; else that many
 * vp_collector_step. The same transitions either way (ops only: capturable). */
vp_status vp_collector_collect(vp_collector* c);

/* Encodes every bar of the span into span_enc with the policy's current parameters: with
 * span_shared from the per-bar rows (vp_model_encode_span), else each window with
 * vp_policy_encode; the same rows either way (encode-once path only; ops only). */
vp_status vp_collector_encode_span(vp_collector* c);

/* One policy step of every env from span_enc (valid for the current parameters): each
 * env's row gathered at its decision bar, heads, act, env step, replay push, tick
 * (encode-once path only; ops only). */
vp_status vp_collector_head_step(vp_collector* c);

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
