/* vulpes: the replay ring (SPEC section 5).
 *
 * A ring of compact transitions that lives where the backend computes (device memory
 * on CUDA). A transition holds indices and small vectors only: the bar index of the
 * state and of the state n steps later, the env's window end, the portfolio vectors
 * before and after, the action, the n-step return, the discount and the done code.
 * States are rebuilt from the feature matrix by bar index when a batch is used.
 *
 * n-step returns are built on insertion: the collector pushes one step of n_envs
 * transitions at a time; each env keeps a pending window of its last n steps and a
 * transition is written when its window is complete or when the episode ends.
 *
 * Sampling is uniform or prioritised (proportional PER). Push, sample and priority
 * update run as backend kernels: no host round trip, nothing allocated, every counter
 * (ring head, size, sampling step, running max priority) kept in backend memory, so
 * the calls can be captured into a graph. Results are deterministic: the same seed and
 * inputs give the same bits on every run, and the CPU and CUDA backends write the same
 * ring and draw the same indices from the same priorities (see docs/replay.md). */
#ifndef VULPES_REPLAY_H
#define VULPES_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "vulpes/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest n-step window. */
#define VP_REPLAY_MAX_NSTEP 16
/* Most action branches a transition stores. */
#define VP_REPLAY_MAX_BRANCHES 8

/* How a step ended, as the env writes it per env (the `done` input of a push). */
typedef enum vp_replay_done {
    VP_REPLAY_RUNNING = 0, /* the episode goes on */
    VP_REPLAY_TERMINAL,    /* a true end (ruin): no bootstrap, discount 0 */
    VP_REPLAY_TRUNCATED,   /* cut short (time limit the state does not show): bootstrap
                              from the step's next state with gamma^k */
    VP_REPLAY_DONE_COUNT
} vp_replay_done;

/* Configuration; vp_replay_cfg_default fills SPEC's defaults. */
typedef struct vp_replay_cfg {
    int64_t capacity;    /* transitions kept; any integer in [n_envs * n_step, 2^31 - 1] */
    int n_envs;          /* environments per push */
    int n_portfolio;     /* P: portfolio vector width (8) */
    int n_branches;      /* action branches (4) */
    int n_step;          /* n of the n-step return (3), 1..VP_REPLAY_MAX_NSTEP */
    float gamma;         /* per-step discount (0.99) */
    int prioritized;     /* 1: proportional PER; 0: uniform sampling, weights 1 */
    float alpha;         /* priority exponent (0.6): stored p = (loss + eps)^alpha */
    float priority_eps;  /* added to the loss before the exponent (1e-6) */
    float beta0;         /* IS exponent at sampling step 0 (0.4), annealed linearly to 1 */
    int64_t beta_steps;  /* sampling steps over which beta reaches 1 (>= 1) */
    uint64_t seed;       /* Philox key of the sampler */
    uint64_t rng_stream; /* Philox stream id of the sampler (distinct from env streams) */
    int intrinsic;       /* 1: each transition also keeps an n-step intrinsic return (pushes may carry
                            reward_int, a sample's reward is extrinsic + intrinsic) and the portfolio
                            vector one step after s_t (the forward model's target); 0: none (default) */
    int her;             /* 1: hindsight relabelling (docs/modules.md "Hindsight relabelling"): the last
                            portfolio entry (P - 1) is the episode's goal return g; each transition keeps
                            its episode's achieved return R_ep once the episode ends, sampling relabels g
                            := R_ep with probability her_ratio and adds the goal term
                            gamma^k x -her_lambda |R_ep - g| of the episode's end; 0: none (default) */
    float her_ratio;     /* probability in [0, 1] that a sampled row of a finished episode is relabelled */
    float her_lambda;    /* weight (>= 0) of the goal term */
    int her_episodes;    /* finished episodes each env remembers (>= 1; her only): older ones are not
                            relabelled and get no goal term */
} vp_replay_cfg;

/* SPEC defaults: capacity 1M, 1 env, P 8, 4 branches, n 3, gamma 0.99, PER with alpha
 * 0.6, eps 1e-6, beta 0.4 -> 1 over 100000 sampling steps, seed 0, stream 0x5245504C, no
 * intrinsic return. */
vp_replay_cfg vp_replay_cfg_default(void);

/* Checks a configuration; the message names the bad field. */
vp_status vp_replay_cfg_check(const vp_replay_cfg* c);

/* Bytes of backend memory a ring with this configuration takes (0 for a bad config). */
size_t vp_replay_bytes(const vp_replay_cfg* c);

/* A replay ring (opaque) on one backend. */
typedef struct vp_replay vp_replay;

/* Makes a ring *out on backend `b` (allocates everything it will ever use). */
vp_status vp_replay_init(vp_replay** out, vp_backend* b, const vp_replay_cfg* cfg);

/* Releases a ring (NULL is a no-op). */
void vp_replay_free(vp_replay* r);

/* The configuration a ring was made with (NULL for a NULL ring). */
const vp_replay_cfg* vp_replay_get_cfg(const vp_replay* r);

/* Empties the ring and every pending window; the sampling step and the running max
 * priority go back to 0 and 1 (set-up time: it issues fills and one upload). */
vp_status vp_replay_reset(vp_replay* r);

/* One step of n_envs transitions, as the env wrote it into backend tensors (E = n_envs,
 * P = n_portfolio, NB = n_branches). `next_*` describe the state after the step as the
 * env reached it, before any auto-reset: on a done step, the final state. */
typedef struct vp_replay_step {
    vp_tensor bar_idx;        /* [E] i32 bar index of the state s_t */
    vp_tensor window_end;     /* [E] i32 last bar of the env's episode window */
    vp_tensor portfolio;      /* [E, P] f32 portfolio vector of s_t */
    vp_tensor action;         /* [E, NB] i32 choice per branch */
    vp_tensor reward;         /* [E] f32 reward of the step */
    vp_tensor done;           /* [E] i32 vp_replay_done codes, or f32 as vp_env_step writes it
                                 (0 running, 2 truncated, any other value terminal) */
    vp_tensor next_bar_idx;   /* [E] i32 bar index of s_{t+1} */
    vp_tensor next_portfolio; /* [E, P] f32 portfolio vector of s_{t+1} */
    vp_tensor reward_int;     /* [E] f32 intrinsic reward of the step (curiosity); data NULL: none, counted 0.
                                 Only for a ring made with cfg.intrinsic = 1 */
} vp_replay_step;

/* Appends one step to every env's pending window and writes the transitions that
 * became complete (a full window: its oldest step; an episode end: all pending steps,
 * with shorter returns) into the ring at the running max priority, env by env in env
 * order, oldest first. Asynchronous on the backend. */
vp_status vp_replay_push(vp_replay* r, const vp_replay_step* s);

/* A sampled batch, written into caller-owned backend tensors (the learner's inputs). */
typedef struct vp_replay_batch {
    vp_tensor indices;        /* [B] i32 ring slots sampled */
    vp_tensor bar_idx;        /* [B] i32 bar index of s_t */
    vp_tensor next_bar_idx;   /* [B] i32 bar index of s_{t+k} */
    vp_tensor portfolio;      /* [B, P] f32 */
    vp_tensor next_portfolio; /* [B, P] f32 */
    vp_tensor actions;        /* [B, NB] i32 */
    vp_tensor reward;         /* [B] f32 n-step return: extrinsic + intrinsic (intrinsic rings) */
    vp_tensor discount;       /* [B] f32 gamma^k, 0 after a terminal */
    vp_tensor is_weight;      /* [B] f32 importance weights, batch max 1 (all 1: uniform) */
    vp_tensor reward_int;     /* [B] f32 the intrinsic part of `reward` (0 without an intrinsic return);
                                 data NULL: not written */
    vp_tensor portfolio_1;    /* [B, P] f32 portfolio vector of s_{t+1}, one step after s_t (intrinsic rings
                                 only); data NULL: not written */
    vp_tensor done_1;         /* [B] f32 1 where step t itself ended its episode (portfolio_1 is then the next
                                 episode's start), else 0 (intrinsic rings only); data NULL: not written */
    vp_tensor reward_goal;    /* [B] f32 the goal term of `reward` (HER rings; 0 elsewhere); data NULL: not
                                 written */
    vp_tensor relabelled;     /* [B] i32 1 where the row's goal was replaced by R_ep (HER rings); data NULL:
                                 not written */
} vp_replay_batch;

/* Draws B transitions (B = numel of out->indices) and gathers them. PER: stratified
 * proportional draws (sample j from [j/B, (j+1)/B) of the priority mass), weights
 * (N P(i))^-beta over their batch max; uniform: independent uniform slots. Then counts
 * one sampling step (Philox index and beta schedule). From an empty ring the weights are
 * 0. Asynchronous on the backend. */
vp_status vp_replay_sample(vp_replay* r, vp_replay_batch* out);

/* Stores p = (max(loss, 0) + eps)^alpha for the slots in `indices` ([B] i32) from the
 * learner's per-sample loss ([B] f32) and raises the running max priority. Of duplicate
 * slots the last occurrence in the batch wins; a non-finite loss or a slot outside the
 * ring leaves the priority unchanged. Asynchronous on the backend. */
vp_status vp_replay_update_priorities(vp_replay* r, const vp_tensor* indices, const vp_tensor* loss);

/* Views of the ring's arrays in backend memory (C = capacity), for checkpoints and tests. */
typedef struct vp_replay_fields {
    vp_tensor bar_idx;        /* [C] i32 */
    vp_tensor next_bar_idx;   /* [C] i32 */
    vp_tensor window_end;     /* [C] i32 */
    vp_tensor portfolio;      /* [C, P] f32 */
    vp_tensor next_portfolio; /* [C, P] f32 */
    vp_tensor action;         /* [C, NB] i32 */
    vp_tensor reward;         /* [C] f32 n-step extrinsic return */
    vp_tensor reward_int;     /* [C] f32 n-step intrinsic return (cfg.intrinsic 1; else data NULL) */
    vp_tensor portfolio_1;    /* [C, P] f32 portfolio vector of s_{t+1} (cfg.intrinsic 1; else data NULL) */
    vp_tensor done_1;         /* [C] f32 1 where step t ended its episode, else 0 (cfg.intrinsic 1; else NULL) */
    vp_tensor goal_weight;    /* [C] f32 gamma^k of the goal term, 0 when the window ends before the episode
                                 (cfg.her 1; else data NULL) */
    vp_tensor episode_env;    /* [C] i32 env that wrote the slot (cfg.her 1; else data NULL) */
    vp_tensor episode_id;     /* [C] i32 the slot's episode number within its env (cfg.her 1; else data NULL) */
    vp_tensor discount;       /* [C] f32 */
    vp_tensor done;           /* [C] i32 done code of the window's last step (0: none) */
    vp_tensor priority;       /* [C] f32 stored p (already ^alpha); 0 for empty slots */
} vp_replay_fields;

/* Fills `out` with views of the ring's arrays (valid until the ring is freed). */
vp_status vp_replay_fields_get(const vp_replay* r, vp_replay_fields* out);

/* Counters kept in backend memory. */
typedef struct vp_replay_stats {
    int64_t size;        /* transitions stored (<= capacity) */
    int64_t head;        /* slot the next transition goes to */
    int64_t pushes;      /* push calls */
    int64_t emitted;     /* transitions written, overwritten ones included */
    int64_t sample_step; /* sample calls */
    float max_priority;  /* running max of stored priorities (starts at 1) */
    float beta;          /* beta of the last sample (PER) */
    float total;         /* priority mass of the last sample (PER) */
} vp_replay_stats;

/* Downloads the counters (a copy and a wait: logging and tests, never inside a step). */
vp_status vp_replay_stats_read(vp_replay* r, vp_replay_stats* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_REPLAY_H */
