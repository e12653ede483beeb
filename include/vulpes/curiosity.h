/* vulpes: curiosity, the forward-model intrinsic reward (ICM, Pathak et al. 2017; docs/modules.md
 * "Curiosity").
 *
 * A two-layer MLP f predicts the portfolio vector of the next state from the features of the
 * state and the action: x = [enc(s), p(s), one-hot of each branch's choice], f(x) =
 * W2 relu(W1 x + b1) + b2. The market encoding enc(s) is detached (the forward model never
 * trains the encoder). Its error on the observed next portfolio vector p(s') is the intrinsic
 * reward r_int = eta * 0.5 ||f(x) - p(s')||^2, computed per env at collection and pushed into
 * the replay beside the extrinsic reward; the forward model itself takes one AdamW step per
 * learner step on the sampled batch, loss 0.5 ||f - p'||^2 averaged over the batch.
 *
 * Every call issues backend ops and one input kernel only (no allocation, no host copy, no
 * wait), so the collection step and the learner step stay capturable into a graph. The
 * parameters, the AdamW moments and the step counter live in one block of backend memory
 * (`state`), which a checkpoint saves and restores whole. */
#ifndef VULPES_CURIOSITY_H
#define VULPES_CURIOSITY_H

#include <stdint.h>

#include "vulpes/action.h"
#include "vulpes/backend.h"
#include "vulpes/learner.h"
#include "vulpes/ops.h"
#include "vulpes/policy.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sizes and settings of a forward model. */
typedef struct vp_curiosity_cfg {
    int64_t n_envs;          /* E: rows of a collection step (vp_curiosity_reward) */
    int64_t batch;           /* B: rows of a training step (vp_curiosity_train) */
    int64_t steps_per_iter;  /* S: collection steps per iteration (the mean of the reward statistic) */
    int enc_dim;             /* H: width of an encoding row */
    int n_portfolio;         /* P: portfolio vector width (the prediction's width) */
    vp_action_layout layout; /* the env's branches; the one-hot part of x has layout.n_heads columns */
    int hidden;              /* Hd: hidden width of the MLP (curiosity.hidden) */
    float eta;               /* scale of the intrinsic reward (curiosity.eta, >= 0) */
    vp_adamw_cfg adamw;      /* the forward model's optimiser (lr: curiosity.lr) */
    vp_precision precision;  /* arithmetic of its GEMMs */
    uint64_t seed;           /* parameter initialisation */
} vp_curiosity_cfg;

/* Checks a configuration; the message names the bad field. */
vp_status vp_curiosity_cfg_check(const vp_curiosity_cfg* c);

/* Indices into the statistics block. */
typedef enum vp_curiosity_stat {
    VP_CUR_STAT_REWARD = 0, /* mean r_int over the E x S collection steps of the last iteration */
    VP_CUR_STAT_LOSS,       /* forward-model loss of the last training step (before its update) */
    VP_CUR_STAT_COUNT
} vp_curiosity_stat;

/* A forward model, its optimiser state and its scratch. */
typedef struct vp_curiosity {
    vp_curiosity_cfg cfg;   /* as given */
    vp_backend* backend;    /* where it computes */
    int64_t in_dim;         /* D = H + P + A: width of x */
    int64_t n_weights;      /* W = Hd D + Hd + P Hd + P */
    vp_buffer state;        /* one block: params, adam_m, adam_v, step (the checkpointed state) */
    vp_tensor state_words;  /* [state bytes / 4] i32 view of the whole block */
    vp_tensor params;       /* [W] W1 [Hd, D], b1 [Hd], W2 [P, Hd], b2 [P], in that order */
    vp_tensor adam_m;       /* [W] AdamW first moment */
    vp_tensor adam_v;       /* [W] AdamW second moment */
    vp_tensor step;         /* [1] i32 AdamW steps taken */
    vp_arena arena;         /* the scratch below */
    vp_tensor grads;        /* [W] gradient of the last training step */
    vp_tensor x;            /* [N, D] inputs, N = max(E, B) */
    vp_tensor h;            /* [N, Hd] hidden activations relu(W1 x + b1) */
    vp_tensor f;            /* [N, P] predictions */
    vp_tensor diff;         /* [N, P] f - p', then the loss gradient */
    vp_tensor sq;           /* [N] ||f - p'||^2 per row */
    vp_tensor dh;           /* [N, Hd] gradient at the hidden layer */
    vp_tensor reward;       /* [E] r_int of the last collection step */
    vp_tensor acc;          /* [1] sum of r_int since the last training step's statistics */
    vp_tensor tmp;          /* [1] one reduction */
    vp_tensor stats;        /* [VP_CUR_STAT_COUNT] f32 statistics */
    vp_tensor port1;        /* [B, P] p(s_{t+1}) of a batch's transitions (the replay sample's portfolio_1) */
    vp_tensor done1;        /* [B] 1 where the batch's step t ended its episode (the replay sample's done_1) */
    vp_policy policy;       /* encodes a batch's states (vp_curiosity_learn; ops NULL: not set) */
    vp_policy_work* work;   /* its workspace for B rows */
} vp_curiosity;

/* Makes a forward model with parameters drawn from cfg->seed (uniform in +-1/sqrt(fan_in),
 * biases 0), zero moments and step 0. `pol` (may be NULL) is the policy whose encoder
 * vp_curiosity_learn reads (copied; what it points to must outlive c). Set-up: allocations
 * and uploads. */
vp_status vp_curiosity_init(vp_curiosity* c, vp_backend* b, const vp_curiosity_cfg* cfg, const vp_policy* pol);

/* Frees everything c holds (a zeroed one is a no-op). */
void vp_curiosity_free(vp_curiosity* c);

/* f = the forward model of n rows (n <= max(E, B)): enc [>= n, H], port [n, P], act
 * [n, NB] i32; *out becomes an [n, P] view of c->f. */
vp_status vp_curiosity_forward(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                               int64_t n, vp_tensor* out);

/* The intrinsic reward of a collection step: reward [E] = eta * 0.5 ||f - next_port||^2 per
 * env, 0 where done != 0 (enc [>= E, H], port and next_port [E, P], act [E, NB], done [E] f32
 * or NULL: no env done), added to the iteration's sum; *out becomes a view of c->reward. */
vp_status vp_curiosity_reward(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                              const vp_tensor* next_port, const vp_tensor* done, vp_tensor* out);

/* One training step on B rows: the loss (1 / 2B) sum_i ||f_i - next_port_i||^2 over the rows
 * whose done is 0 (done [B] f32 or NULL: every row) into the statistics, its gradient into
 * c->grads, then AdamW on c->params. */
vp_status vp_curiosity_train(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                             const vp_tensor* next_port, const vp_tensor* done);

/* Closes an iteration's statistics: the reward statistic becomes the sum of r_int since the
 * last close over E x S (unchanged when S is 0), and the sum restarts at 0. */
vp_status vp_curiosity_close_iteration(vp_curiosity* c);

/* The learner-side hook: when `first` (the iteration's first learner step) the iteration's
 * statistics are closed (vp_curiosity_close_iteration);
 * then the batch's states s_t are encoded with the policy and the model trains one step
 * (vp_curiosity_train on the encodings, batch->portfolio, batch->actions, c->port1 and c->done1,
 * which the replay's sample wrote: the target is one step after s_t, not the n-step next state). */
vp_status vp_curiosity_learn(vp_curiosity* c, const vp_batch* batch, int first);

/* Runs, once and eagerly, every op shape of the collection and learner hooks whose outputs are
 * scratch only (the batch's encoding, both forwards' GEMMs at E and B rows, the backward's
 * GEMMs), so that first-use set-up (GEMM plans) happens before a graph capture; the state,
 * the sum and the statistics are left as they were. */
vp_status vp_curiosity_prime(vp_curiosity* c, const vp_batch* batch);

/* Checks a restored state block (a checkpoint's): every parameter and moment finite, the second
 * moments >= 0, the step = min(learner_steps, 2^31 - 1); the message names `path`, the array and
 * the element (VP_ERR_PARSE). A download and a wait. */
vp_status vp_curiosity_check_state(vp_curiosity* c, int64_t learner_steps, const char* path);

/* Reads the statistics block into out[VP_CUR_STAT_COUNT] (a download and a wait: logging). */
vp_status vp_curiosity_stats_read(vp_curiosity* c, float* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_CURIOSITY_H */
