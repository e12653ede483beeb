/* vulpes: the policy interface — what a rollout (validation, backtests) and a collector run.
 *
 * A policy has a market part and a decision part. `encode` maps decision bars (each reading
 * its window of feature rows) to encoding rows; it does not see the portfolio, so a rollout
 * encodes a whole span in large batches before it steps. `score` maps encoding rows and
 * portfolio vectors to one score per action head in the environment's layout
 * (vulpes/action.h): Q-values for the DQN agent. The greedy choice is the argmax of each
 * branch's scores (vp_action_greedy). Workspace for batches of up to a given size is made
 * once (`work_init`), so encode and score allocate nothing and can be captured into a graph.
 *
 * An algorithm provides its policy as a vp_policy value (a table of functions and the state
 * they read); the DQN agent's is vp_model_policy (vulpes/model.h' network with a parameter
 * buffer). */
#ifndef VULPES_POLICY_H
#define VULPES_POLICY_H

#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/backend.h"
#include "vulpes/model.h"
#include "vulpes/model_span.h"
#include "vulpes/status.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct vp_policy vp_policy;

/* Workspace of one policy for batches of up to a fixed size (opaque). */
typedef struct vp_policy_work vp_policy_work;

/* The functions of a policy. Tensors live in the policy's backend memory. */
typedef struct vp_policy_ops {
    const char* name; /* "dqn" */
    /* Makes workspace for up to `batch` rows into *out. */
    vp_status (*work_init)(const vp_policy* p, int64_t batch, vp_policy_work** out);
    /* Frees workspace (NULL is a no-op). */
    void (*work_free)(vp_policy_work* w);
    /* Encodings of n decision bars bar_idx [n] i32 of features [T, F]: *enc becomes an
     * [n, enc_dim] f32 view into the workspace, valid until its next encode. */
    vp_status (*encode)(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                        int64_t n, vp_tensor* enc);
    /* Scores of n samples from encodings enc [>= n, enc_dim] and portfolios [n, P]: *scores
     * becomes an [n, A] f32 view into the workspace, valid until its next score. */
    vp_status (*score)(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                       int64_t n, vp_tensor* scores);
} vp_policy_ops;

/* A policy: its functions, what they read, and its shapes. */
struct vp_policy {
    const vp_policy_ops* ops;   /* the functions */
    vp_backend* backend;        /* where it computes */
    const void* impl;           /* what ops read (the DQN policy: the vp_model) */
    const vp_tensor* params;    /* [n_weights] the parameters it uses */
    int n_features;             /* F: feature columns per bar */
    int window;                 /* K: bars per decision window (rows t-K+1 .. t) */
    int n_portfolio;            /* P: portfolio vector width */
    int enc_dim;                /* width of an encoding row */
    vp_action_layout layout;    /* the environment's action layout (scores are [n, layout.n_heads]) */
    int fp32_scores;            /* 1: score with full FP32 arithmetic whatever the training precision (rollouts:
                                   a choice then does not flip with the number of rows scored together) */
    float goal;                 /* the goal a goal-conditioned network (n_portfolio = VP_ENV_PORTFOLIO + 1,
                                   her.enabled) is given: appended to every env portfolio row it scores as the
                                   last entry (docs/modules.md "Hindsight relabelling"); the Decision Transformer's
                                   policy: the return-to-go it is conditioned on at its first step (docs/dt.md);
                                   unused otherwise */
    /* Optional, NULL for a policy without memory (the DQN and PPO policies): a policy whose scores
     * depend on its own past. After the environment stepped on the choices of the workspace's last
     * score of n rows, it is given the actions the step read (actions [n, 4] i32) and the rewards
     * paid (rewards [n] f32; NaN for a row whose window took no step, whose score then did not
     * count), row i the same window as in the scores; it keeps what it needs in the workspace (ops
     * only: a rollout calls it inside its captured steps). Such a workspace serves one rollout: its
     * rows are that rollout's windows from their first step on. */
    vp_status (*observe)(const vp_policy* p, vp_policy_work* w, const vp_tensor* actions, const vp_tensor* rewards,
                         int64_t n);
};

/* The rows a goal-conditioned policy scores: out [n, VP_ENV_PORTFOLIO + 1] view (in the workspace,
 * valid until its next score or call) of the env's portfolio [n, VP_ENV_PORTFOLIO] with p->goal
 * appended to each row (exact copies). A policy of n_portfolio VP_ENV_PORTFOLIO: VP_ERR_INVALID_ARG. */
vp_status vp_policy_goal_rows(const vp_policy* p, vp_policy_work* w, const vp_tensor* portfolio, int64_t n,
                              vp_tensor* out);

/* Checks a policy value (ops and functions present, shapes positive, the env's layout). */
vp_status vp_policy_check(const vp_policy* p);

/* Workspace for batches of up to `batch` rows (p->ops->work_init after vp_policy_check). */
vp_status vp_policy_work_init(const vp_policy* p, int64_t batch, vp_policy_work** out);

/* Frees workspace made by vp_policy_work_init for p (NULL is a no-op). */
void vp_policy_work_free(const vp_policy* p, vp_policy_work* w);

/* p->ops->encode: enc [n, enc_dim] view for bar_idx [n] (n <= the workspace's batch). */
vp_status vp_policy_encode(const vp_policy* p, vp_policy_work* w, const vp_tensor* features, const vp_tensor* bar_idx,
                           int64_t n, vp_tensor* enc);

/* p->ops->score: scores [n, A] view from enc [>= n, enc_dim] and the env's portfolio [n, VP_ENV_PORTFOLIO]
 * (a goal-conditioned DQN policy appends p->goal, vp_policy_goal_rows). */
vp_status vp_policy_score(const vp_policy* p, vp_policy_work* w, const vp_tensor* enc, const vp_tensor* portfolio,
                          int64_t n, vp_tensor* scores);

/* p->observe when the policy has memory (VP_OK without doing anything when it has none): the actions
 * [n, 4] i32 and rewards [n] f32 of the step after the workspace's last score. */
vp_status vp_policy_observe(const vp_policy* p, vp_policy_work* w, const vp_tensor* actions, const vp_tensor* rewards,
                            int64_t n);

/* held 1: p's parameters have not changed since w's last score and do not change until the next
 * call with held 0 (a collection's S head steps), so w may keep what it derived from them (the
 * DQN network's padded or folded output layers, vp_model_acts_hold_params); held 0 (the default) derives it
 * at every score. The scores are the same bits either way; a no-op for other policies. */
vp_status vp_policy_hold_params(const vp_policy* p, vp_policy_work* w, int held);

/* The scale of each sample's size choice that w's scores come with ([batch] backend memory, filled
 * by each vp_policy_score, stable for w's life), for vp_env.size_scale; NULL when the policy
 * has none (the DQN network without its risk-budget head, or another policy). */
const float* vp_policy_size_scale(const vp_policy* p, const vp_policy_work* w);

/* The DQN agent's policy: network m with parameters params ([n_weights], m's backend memory)
 * — encode is vp_model_encode, score the C51 expected values vp_model_q of vp_model_heads,
 * both in the network's precision (collection). Both pointers must outlive the value. */
vp_policy vp_model_policy(const vp_model* m, const vp_tensor* params);

/* vp_model_policy with fp32_scores set: the heads' GEMMs in FP32 (the heads are small; FP32
 * rounding, about 1e-7 relative, stays far below the gaps between actions, where TF32's
 * 2^-11 can flip a near tie between a 7-row and a 1-row product), the encoding in the
 * network's precision. What validation and the backtests run. */
vp_policy vp_model_rollout_policy(const vp_model* m, const vp_tensor* params);

/* The functions behind vp_model_policy (a rollout compares against it to pick a fast path). */
extern const vp_policy_ops vp_model_policy_ops;

/* A DQN policy's encodings of span s's windows with shared rows (vulpes/model_span.h: the network's
 * vp_model_encode_span with the workspace's activations) into out [>= s->windows, enc_dim], in
 * calls of `chunk` windows (<= the workspace's batch). VP_ERR_INVALID_ARG for another policy. */
vp_status vp_model_policy_encode_span(const vp_policy* p, vp_policy_work* w, const vp_model_span* s,
                                      const vp_tensor* features, int64_t chunk, vp_tensor* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_POLICY_H */
