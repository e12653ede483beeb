/* vulpes: PPO — the state behind the algorithm table's "ppo" entry (vp_ppo_algo,
 * vulpes/algo.h), and what tests drive directly. docs/ppo.md has the math and the keys.
 *
 * The network is an actor-critic over the DQN network's market encoder (vulpes/model.h: the
 * trunk and the Mamba2 mixer, and its portfolio projection h = e + W_p p + b_p): a policy MLP
 * H -> HH -> A of per-head logits, one categorical per action branch (the environment's
 * layout, vulpes/action.h; the joint log-probability is the sum over the branches), and a
 * value MLP H -> HH -> 1. Every parameter lives in one flat buffer: the encoder's table first
 * (its DQN head rows unused and never saved), then the heads, so one AdamW and one clip op
 * update them all.
 *
 * One iteration collects T = ppo.rollout_steps steps of each of the n_envs envs on the
 * backend (actions sampled from the policy with Philox draws; the span encoded once where
 * that is fewer rows, as the DQN collector does), computes GAE(lambda), then runs
 * ppo.epochs epochs of ppo.minibatches minibatch updates over a fresh permutation each (the
 * clipped surrogate, the optionally clipped value loss, the entropy bonus, the advantages
 * normalised per minibatch, the gradient clipped by norm). Nothing is copied, allocated or
 * synchronised inside it: on CUDA it is captured once as one graph; with ppo.target_kl > 0 the
 * collection and each epoch are graphs of their own and the host reads the last minibatch's
 * approx_kl between epochs (one download each), as CleanRL checks it after each epoch. */
#ifndef VULPES_PPO_H
#define VULPES_PPO_H

#include "vulpes/model.h"
#include "vulpes/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The head parameters of the actor-critic, in buffer order after the encoder's table.
 * X(slot, name, rows, cols): cols 0 is a vector; H hidden, HH head hidden, A heads. Each
 * weight is followed by its bias (even slots weights, odd slots biases: ppo_net.c relies on it). */
#define VP_PPO_HEADS(X)                  \
    X(PI1_W, "ppo.pi1.w", HH, H)         \
    X(PI1_B, "ppo.pi1.b", HH, 0)         \
    X(PI2_W, "ppo.pi2.w", A, HH)         \
    X(PI2_B, "ppo.pi2.b", A, 0)          \
    X(V1_W, "ppo.v1.w", HH, H)           \
    X(V1_B, "ppo.v1.b", HH, 0)           \
    X(V2_W, "ppo.v2.w", 1, HH)           \
    X(V2_B, "ppo.v2.b", 1, 0)

/* Head parameter slots. */
typedef enum vp_ppo_head {
#define VP_PPO_HEAD_ENUM_(slot, ...) VP_PPO_##slot,
    VP_PPO_HEADS(VP_PPO_HEAD_ENUM_)
#undef VP_PPO_HEAD_ENUM_
    VP_PPO_HEAD_COUNT
} vp_ppo_head;

/* The actor-critic network: the encoder and the heads over one flat parameter buffer. */
typedef struct vp_ppo_net {
    vp_model enc;                          /* the encoder; its params and grads view the flat buffers' first rows */
    int64_t n_enc;                         /* elements of the encoder's table (a multiple of 64) */
    int64_t head_off[VP_PPO_HEAD_COUNT];   /* element offset of each head tensor in the flat buffers */
    int64_t head_shape[VP_PPO_HEAD_COUNT][2]; /* [rows, cols] (cols 1 for a vector) */
    int64_t n_weights;                     /* elements of the flat buffers */
    vp_buffer param_buf, grad_buf;         /* storage of params and grads */
    vp_tensor params;                      /* [n_weights] the parameters */
    vp_tensor grads;                       /* [n_weights] gradients of the last backward (overwritten) */
} vp_ppo_net;

/* Makes the network of cfg on backend b (the DQN head modules must be off) and initialises
 * its parameters from seed: the encoder as vp_model_init_params, each head tensor uniform in
 * +-1 / sqrt(fan_in) from Philox, the policy's output layer times 0.01. */
vp_status vp_ppo_net_init(vp_ppo_net* n, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed);

/* Frees a network (a zeroed one is a no-op). */
void vp_ppo_net_free(vp_ppo_net* n);

/* View of head tensor h ([rows, cols] or [rows]) inside a flat buffer [n_weights]. */
vp_tensor vp_ppo_head_view(const vp_ppo_net* n, const vp_tensor* flat, vp_ppo_head h);

/* The encoder's part [n_enc] of a flat buffer [n_weights] (what the vp_model functions take). */
vp_tensor vp_ppo_enc_view(const vp_ppo_net* n, const vp_tensor* flat);

/* The tensors a checkpoint holds, in order: the encoder's rows that PPO uses (every row but
 * the DQN heads': c51.*, iqn.*), then the heads. Returns the count; with names and views not
 * NULL, writes each name (static or the table's) and its view of `flat` (up to cap). */
int vp_ppo_net_tensors(const vp_ppo_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap);

/* Elements of the tensors vp_ppo_net_tensors lists: the parameters PPO trains. */
int64_t vp_ppo_net_numel(const vp_ppo_net* n);

/* Activations of one batch of the actor-critic (opaque). */
typedef struct vp_ppo_acts vp_ppo_acts;

/* Activations for up to `batch` samples; for_backward keeps what vp_ppo_net_backward needs;
 * fp32 computes the heads in FP32 whatever n->enc.precision (rollouts). */
vp_status vp_ppo_acts_init(vp_ppo_acts** out, const vp_ppo_net* n, int64_t batch, int for_backward, int fp32);

/* Frees activations (NULL is a no-op). */
void vp_ppo_acts_free(vp_ppo_acts* a);

/* Encodes `batch` decision bars bar_idx [batch] i32 of features [T, F] with params
 * [n_weights] (vp_model_encode); the encoding is vp_ppo_encoding. */
vp_status vp_ppo_net_encode(const vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* features,
                            const vp_tensor* bar_idx, int64_t batch);

/* The encoding of the last vp_ppo_net_encode: [batch, H] view. */
vp_tensor vp_ppo_encoding(const vp_ppo_acts* a);

/* The heads from encodings enc [>= batch, H] (NULL: the last vp_ppo_net_encode's) and
 * portfolio [batch, P] (kept by reference for the backward): logits and values. */
vp_status vp_ppo_net_heads(const vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* enc,
                           const vp_tensor* portfolio, int64_t batch);

/* Logits [batch, A] of the last heads (views into the activations). */
vp_tensor vp_ppo_logits(const vp_ppo_acts* a);

/* Values [batch] of the last heads. */
vp_tensor vp_ppo_values(const vp_ppo_acts* a);

/* Backward of the last encode + heads (own encoding, for_backward activations) from
 * d logits [batch, A] and d values [batch]: writes n->grads (the unused rows stay zero). */
vp_status vp_ppo_net_backward(vp_ppo_net* n, const vp_tensor* params, vp_ppo_acts* a, const vp_tensor* d_logits,
                              const vp_tensor* d_values);

/* After a training forward with activations a: writes into params [n_weights] what that
 * forward advanced (the spectral norm's power-iteration vectors; vp_model_commit). */
vp_status vp_ppo_net_commit(const vp_ppo_net* n, vp_tensor* params, const vp_ppo_acts* a);

/* The greedy policy of network n with params [n_weights]: encode is the encoder, score the
 * policy logits (FP32 heads), so a rollout takes the argmax of each branch, the mode of each
 * categorical. Both pointers must outlive the value. */
vp_policy vp_ppo_policy(const vp_ppo_net* n, const vp_tensor* params);

/* ---- the trainer ---------------------------------------------------------------------------- */

/* PPO's settings (the ppo.* keys and the learn.* keys it shares). */
typedef struct vp_ppo_cfg {
    int64_t rollout_steps; /* T: steps per env per iteration */
    int64_t epochs;        /* passes over the rollout per iteration */
    int64_t minibatches;   /* minibatches per epoch (n_envs x T divisible by it) */
    float clip;            /* surrogate clip epsilon */
    float vf_clip;         /* value clip range (0: off) */
    float ent_coef;        /* entropy bonus coefficient */
    float vf_coef;         /* value loss coefficient */
    float gamma;           /* discount (learn.gamma) */
    float gae_lambda;      /* GAE lambda */
    float target_kl;       /* stop the epochs once the last minibatch's approx_kl exceeds it (0: off) */
    int norm_adv;          /* 1: advantages normalised per minibatch */
    vp_adamw_cfg adamw;    /* learn.lr, beta1, beta2, eps, weight_decay */
    float clip_norm;       /* global gradient-norm clip (learn.clip_norm; 0 in the config: off) */
} vp_ppo_cfg;

/* Fills a PPO configuration from the run's config; fails naming the key on values PPO cannot
 * take (minibatches not dividing n_envs x rollout_steps, a DQN head module on). */
vp_status vp_ppo_cfg_make(const vp_config* cfg, vp_ppo_cfg* out);

/* Statistics of the last minibatch update (CleanRL's logged values). */
typedef enum vp_ppo_stat {
    VP_PPO_STAT_PG = 0,    /* policy (surrogate) loss */
    VP_PPO_STAT_V,         /* value loss */
    VP_PPO_STAT_ENT,       /* mean entropy */
    VP_PPO_STAT_KL,        /* approx_kl */
    VP_PPO_STAT_CLIPFRAC,  /* fraction of clipped ratios */
    VP_PPO_STAT_OLD_KL,    /* old_approx_kl */
    VP_PPO_STAT_COUNT
} vp_ppo_stat;

typedef struct vp_ppo_trainer vp_ppo_trainer;

/* The trainer's state: made by the algorithm entry, read by tests. */
struct vp_ppo_trainer {
    vp_config cfg;             /* resolved configuration */
    vp_train_parts parts;      /* instrument, env settings, network, seeds */
    vp_ppo_cfg pc;             /* PPO settings */
    vp_backend* backend;       /* where it runs */
    const vp_train_data* data; /* bars, features, split */
    vp_buffer feat_buf;        /* storage of features (CUDA) */
    vp_tensor features;        /* [T, F] f32 backend memory */
    vp_env_market market;      /* the training span */
    vp_env env;                /* n_envs training envs */
    vp_ppo_net net;            /* the actor-critic */
    vp_ppo_acts* col;          /* collection activations (E rows, forward only) */
    vp_ppo_acts* mb;           /* minibatch activations (M rows, with backward) */
    vp_arena arena;            /* every buffer below */
    vp_tensor adam_m, adam_v;  /* [n_weights] AdamW moments */
    vp_tensor adam_step;       /* [1] i32 AdamW step */
    vp_tensor grad_norm;       /* [1] f32 the last gradient norm */
    vp_tensor clip_coef;       /* [1] f32 its clip coefficient */
    vp_tensor best_params;     /* [n_weights] the best validation's parameters */
    vp_tensor ctr;             /* [2 * 2] i32: int64 collection steps, int64 epochs begun */
    vp_tensor obs_bar;         /* [E] i32 the current observation's bar */
    vp_tensor obs_port;        /* [E, P] f32 its portfolio vector */
    vp_tensor actions;         /* [E, 4] i32 the env's action buffer */
    vp_tensor last_value;      /* [E] f32 value of the observation after the rollout */
    vp_tensor r_bar, r_port, r_act, r_logp, r_value, r_reward, r_done, r_adv, r_ret; /* the rollout [N = T x E] rows */
    vp_tensor perm;            /* [N] i32 the epoch's permutation */
    vp_tensor m_bar, m_port, m_act, m_logp, m_value, m_adv, m_ret; /* the minibatch [M] rows */
    vp_tensor terms;           /* [M, 6] per-sample loss terms */
    vp_tensor d_logits;        /* [M, A] */
    vp_tensor d_values;        /* [M] */
    vp_tensor stats;           /* [VP_PPO_STAT_COUNT] sums of the last minibatch's terms */
    int encode_once;           /* 1: collection encodes the span once per iteration, then runs head-only steps
                                  (chosen at set-up where the span has fewer bars than n_envs x (T + 1)
                                  windows; 0 after set-up forces step-by-step encoding) */
    int64_t span_begin;        /* encode-once: first bar with an encoding row (the market's begin) */
    int64_t span_rows;         /* R: bars span_begin .. span_begin + R - 1 */
    int64_t chunk;             /* rows per encode call */
    vp_ppo_acts* span_acts;    /* activations for `chunk` rows (forward only) */
    vp_arena span_arena;       /* the span's buffers below */
    vp_tensor span_bars;       /* [R] i32 the bars span_begin, span_begin + 1, ... */
    vp_tensor span_enc;        /* [R, H] f32 the encoding of each bar, remade per iteration */
    vp_tensor enc;             /* [E, H] f32 each env's row of span_enc at its decision bar */
    vp_validator* val;         /* the validation span's backtest */
    vp_graph* g_all;           /* the whole iteration (target_kl 0) */
    vp_graph* g_collect;       /* collection and GAE (target_kl > 0) */
    vp_graph* g_epoch;         /* one epoch (target_kl > 0) */
    int64_t epochs_run;        /* epochs the last iteration ran (target_kl can stop early) */
    vp_train_counters count;   /* host counters */
};

/* Builds the trainer of cfg (train.algo ppo) on backend b over data d. */
vp_status vp_ppo_trainer_init(vp_ppo_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d);

/* Frees everything (a zeroed trainer is a no-op). */
void vp_ppo_trainer_free(vp_ppo_trainer* t);

/* n iterations (asynchronous on CUDA unless target_kl > 0). */
vp_status vp_ppo_trainer_iterate(vp_ppo_trainer* t, int64_t n);

/* The collection of one iteration and its GAE (ops only). */
vp_status vp_ppo_collect_body(vp_backend* b, void* trainer);

/* Chooses the collection path and, for the encode-once path, makes the span's buffers
 * (ppo_span.c; set-up: allocations and one upload). */
vp_status vp_ppo_span_init(vp_ppo_trainer* t);

/* Frees what vp_ppo_span_init made. */
void vp_ppo_span_free(vp_ppo_trainer* t);

/* The logits and values of the envs' current observations into the collection activations:
 * from the span's encoding table on the encode-once path (vp_ppo_encode_span first), else
 * encoding every env's window (ops only). */
vp_status vp_ppo_observe(vp_ppo_trainer* t);

/* Encodes every bar of the span into span_enc with the current parameters (ops only). */
vp_status vp_ppo_encode_span(vp_ppo_trainer* t);

/* One epoch: the permutation and every minibatch update (ops only). */
vp_status vp_ppo_epoch_body(vp_backend* b, void* trainer);

/* One minibatch update over rows perm[k M .. (k + 1) M) (ops only). */
vp_status vp_ppo_update(vp_ppo_trainer* t, int64_t k);

/* Waits and reads the last minibatch's statistics (means) into out [VP_PPO_STAT_COUNT] and
 * the last gradient norm into *grad_norm. */
vp_status vp_ppo_trainer_stats(vp_ppo_trainer* t, double* out, double* grad_norm);

/* Writes a checkpoint of `kind` to path atomically, with best_val_sharpe and best_iteration. */
vp_status vp_ppo_trainer_save(vp_ppo_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                              int64_t best_iteration);

/* Restores a resume checkpoint (the config must equal the run's but for the keys a resume
 * may change), with the best score into *best_val_sharpe, *best_iteration. */
vp_status vp_ppo_trainer_load(vp_ppo_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration);

/* Reads the parameters of a PPO checkpoint of either kind at path into dst ([n_weights] of n). */
vp_status vp_ppo_read_params(vp_backend* b, const vp_ppo_net* n, const char* path, vp_tensor* dst);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_PPO_H */
