/* vulpes: IQL (implicit Q-learning, Kostrikov, Nair and Levine 2021) — the state behind the
 * algorithm table's "iql" entry (vp_iql_algo, vulpes/algo.h), and what tests drive directly.
 * docs/iql.md has the math, the keys and the deviations from the paper.
 *
 * Offline: it learns from a recorded dataset (vulpes/offline.h) and never steps an env while
 * training. The network is the DQN network's market encoder (vulpes/model.h) with, on
 * h = e + W_p p + b_p, four MLPs H -> HH -> out: twin Q heads Q1, Q2 (out A: one Q(s, a_b) per
 * head of the environment's branching action, vulpes/action.h), a value V (out 1) and a policy
 * (out A: per-branch logits). The joint Q(s, a) of a head is the mean over the branches of the
 * taken choices' values. A target copy of the two Q heads (not of the encoder) is kept by Polyak
 * averaging and reads the online encoding. Every trained parameter lives in one flat buffer:
 * the encoder's table first (its DQN head rows unused and never saved), then the heads, so one
 * AdamW and one clip op update them all; the target lives in a buffer of its own.
 *
 * One update draws B dataset rows with Philox (with replacement), encodes s and s' (the next
 * row of the same env), and minimises, as one sum over one backward,
 *   L_V  = mean L_tau(min(Qt1, Qt2)(s, a) - V(s)),  L_tau(u) = |tau - 1(u < 0)| u^2,
 *   L_Q  = mean sum_i (Q_i(s, a) - r - gamma (1 - done) V(s'))^2,
 *   L_pi = -mean min(exp(beta (min(Qt1, Qt2)(s, a) - V(s))), adv_clip) sum_b log pi_b(a_b | s),
 * the targets and weights without gradient; then the target heads move by Polyak's tau. On
 * CUDA an iteration (train.train_steps updates) is one graph: no copy, allocation or sync. */
#ifndef VULPES_IQL_H
#define VULPES_IQL_H

#include "vulpes/model.h"
#include "vulpes/offline.h"
#include "vulpes/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The head parameters, in buffer order after the encoder's table. X(slot, name, rows, cols):
 * cols 0 is a vector; H hidden, HH head hidden, A heads. Four MLPs of four tensors each, every
 * weight followed by its bias; Q1 and Q2 first and adjacent (the target copies their range). */
#define VP_IQL_HEADS(X)                    \
    X(Q1_W1, "iql.q1.l1.w", HH, H)         \
    X(Q1_B1, "iql.q1.l1.b", HH, 0)         \
    X(Q1_W2, "iql.q1.l2.w", A, HH)         \
    X(Q1_B2, "iql.q1.l2.b", A, 0)          \
    X(Q2_W1, "iql.q2.l1.w", HH, H)         \
    X(Q2_B1, "iql.q2.l1.b", HH, 0)         \
    X(Q2_W2, "iql.q2.l2.w", A, HH)         \
    X(Q2_B2, "iql.q2.l2.b", A, 0)          \
    X(V_W1, "iql.v.l1.w", HH, H)           \
    X(V_B1, "iql.v.l1.b", HH, 0)           \
    X(V_W2, "iql.v.l2.w", 1, HH)           \
    X(V_B2, "iql.v.l2.b", 1, 0)            \
    X(PI_W1, "iql.pi.l1.w", HH, H)         \
    X(PI_B1, "iql.pi.l1.b", HH, 0)         \
    X(PI_W2, "iql.pi.l2.w", A, HH)         \
    X(PI_B2, "iql.pi.l2.b", A, 0)

/* Head parameter slots. */
typedef enum vp_iql_head {
#define VP_IQL_HEAD_ENUM_(slot, ...) VP_IQL_##slot,
    VP_IQL_HEADS(VP_IQL_HEAD_ENUM_)
#undef VP_IQL_HEAD_ENUM_
    VP_IQL_HEAD_COUNT
} vp_iql_head;

/* The MLPs (each four slots from 4 x its index): the twin Q heads, the value, the policy. */
typedef enum vp_iql_mlp { VP_IQL_MLP_Q1 = 0, VP_IQL_MLP_Q2, VP_IQL_MLP_V, VP_IQL_MLP_PI, VP_IQL_MLP_COUNT } vp_iql_mlp;

/* The network: the encoder and the heads over one flat parameter buffer. */
typedef struct vp_iql_net {
    vp_model enc;                             /* the encoder; its params and grads view the flat buffers' first rows */
    int64_t n_enc;                            /* elements of the encoder's table (a multiple of 64) */
    int64_t head_off[VP_IQL_HEAD_COUNT];      /* element offset of each head tensor in the flat buffers */
    int64_t head_shape[VP_IQL_HEAD_COUNT][2]; /* [rows, cols] (cols 1 for a vector) */
    int64_t n_weights;                        /* elements of the flat buffers */
    int64_t n_target;                         /* elements of the Q heads' range (slots Q1_W1 .. Q2_B2) */
    vp_buffer param_buf, grad_buf;            /* storage of params and grads */
    vp_tensor params;                         /* [n_weights] the parameters */
    vp_tensor grads;                          /* [n_weights] gradients of the last backward (overwritten) */
} vp_iql_net;

/* Makes the network of cfg on backend b (the DQN head modules must be off) and initialises its
 * parameters from seed: the encoder as vp_model_init_params, each head tensor uniform in
 * +-1 / sqrt(fan_in) from Philox, the policy's output layer times 0.01. */
vp_status vp_iql_net_init(vp_iql_net* n, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed);

/* Frees a network (a zeroed one is a no-op). */
void vp_iql_net_free(vp_iql_net* n);

/* View of head tensor h ([rows, cols] or [rows]) inside a flat buffer [n_weights]. */
vp_tensor vp_iql_head_view(const vp_iql_net* n, const vp_tensor* flat, vp_iql_head h);

/* The checkpoint name of head tensor h ("iql.q1.l1.w"), NULL out of range. */
const char* vp_iql_head_name(vp_iql_head h);

/* The Q heads' range [n_target] of a flat buffer [n_weights] (what the target copies). */
vp_tensor vp_iql_q_range(const vp_iql_net* n, const vp_tensor* flat);

/* View of Q head tensor h (a slot of Q1 or Q2) inside a target buffer [n_target]. */
vp_tensor vp_iql_target_view(const vp_iql_net* n, const vp_tensor* target, vp_iql_head h);

/* The encoder's part [n_enc] of a flat buffer [n_weights] (what the vp_model functions take). */
vp_tensor vp_iql_enc_view(const vp_iql_net* n, const vp_tensor* flat);

/* The tensors of a parameter set, in order: the encoder's rows IQL uses (every row but the DQN
 * heads': c51.*, iqn.*), then the heads. Returns the count; with names and views not NULL,
 * writes each name (static or the table's) and its view of `flat` (up to cap). */
int vp_iql_net_tensors(const vp_iql_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap);

/* Elements of the tensors vp_iql_net_tensors lists: the parameters IQL trains. */
int64_t vp_iql_net_numel(const vp_iql_net* n);

/* Activations of one batch of the network (opaque). */
typedef struct vp_iql_acts vp_iql_acts;

/* Activations for up to `batch` samples; for_backward keeps what vp_iql_net_backward needs (and
 * room for the target heads' outputs); fp32 computes the heads in FP32 whatever
 * n->enc.precision (rollouts). */
vp_status vp_iql_acts_init(vp_iql_acts** out, const vp_iql_net* n, int64_t batch, int for_backward, int fp32);

/* Frees activations (NULL is a no-op). */
void vp_iql_acts_free(vp_iql_acts* a);

/* Encodes `batch` decision bars bar_idx [batch] i32 of features [T, F] with params
 * [n_weights] (vp_model_encode) and projects the portfolio [batch, P] (kept by reference for
 * the backward): h = e + W_p p + b_p; enc [>= batch, H] given (not NULL) replaces the encoding
 * (no backward then). */
vp_status vp_iql_net_encode(const vp_iql_net* n, const vp_tensor* params, vp_iql_acts* a, const vp_tensor* features,
                            const vp_tensor* bar_idx, const vp_tensor* enc, const vp_tensor* portfolio, int64_t batch);

/* The encoding of the last vp_iql_net_encode that encoded: [batch, H] view. */
vp_tensor vp_iql_encoding(const vp_iql_acts* a);

/* MLP `which` on the last encode's h with its parameters taken from params [n_weights], or,
 * with target not NULL (Q heads only), from target [n_target] into the target outputs. */
vp_status vp_iql_net_head(const vp_iql_net* n, const vp_tensor* params, const vp_tensor* target, vp_iql_acts* a,
                          vp_iql_mlp which);

/* The output [batch, A] (V: [batch, 1]) of MLP `which` of the last heads, or of its target copy. */
vp_tensor vp_iql_out(const vp_iql_acts* a, vp_iql_mlp which, int target);

/* Backward of the last encode (own encoding, for_backward activations) and of the Q1, Q2, V
 * and policy heads from their output gradients d_q1, d_q2, d_logits [batch, A] and
 * d_v [batch]: writes n->grads (the unused rows stay zero). */
vp_status vp_iql_net_backward(vp_iql_net* n, const vp_tensor* params, vp_iql_acts* a, const vp_tensor* d_q1,
                              const vp_tensor* d_q2, const vp_tensor* d_v, const vp_tensor* d_logits);

/* After a training forward with activations a: writes into params [n_weights] what that forward
 * advanced (the spectral norm's power-iteration vectors; vp_model_commit). */
vp_status vp_iql_net_commit(const vp_iql_net* n, vp_tensor* params, const vp_iql_acts* a);

/* The greedy policy of network n with params [n_weights]: encode is the encoder, score the
 * policy head's logits (FP32 heads), so a rollout takes the argmax of each branch. Both pointers
 * must outlive the value. */
vp_policy vp_iql_policy(const vp_iql_net* n, const vp_tensor* params);

/* ---- the trainer ---------------------------------------------------------------------------- */

/* IQL's settings (the iql.* keys and the learn.* keys it shares). */
typedef struct vp_iql_cfg {
    int64_t batch;      /* B: rows per update (iql.batch; 0 there: learn.batch) */
    int64_t updates;    /* updates per iteration (train.train_steps) */
    float expectile;    /* tau of the expectile regression of V */
    float beta;         /* inverse temperature of the advantage weights */
    float adv_clip;     /* largest advantage weight exp(beta A) */
    float tau_polyak;   /* target <- (1 - tau) target + tau online after each update */
    float gamma;        /* discount (learn.gamma) */
    vp_adamw_cfg adamw; /* learn.lr, beta1, beta2, eps, weight_decay */
    float clip_norm;    /* global gradient-norm clip (learn.clip_norm; 0 in the config: off) */
} vp_iql_cfg;

/* Fills an IQL configuration from the run's config; fails naming the key on values IQL cannot
 * take (no iql.dataset, a switch of the DQN learner on). */
vp_status vp_iql_cfg_make(const vp_config* cfg, vp_iql_cfg* out);

/* Statistics of the last update (means over its batch). */
typedef enum vp_iql_stat {
    VP_IQL_STAT_V = 0,  /* value (expectile) loss */
    VP_IQL_STAT_Q,      /* Q loss, summed over the twin heads */
    VP_IQL_STAT_PI,     /* policy loss */
    VP_IQL_STAT_ADV,    /* advantage min(Qt1, Qt2) - V */
    VP_IQL_STAT_WEIGHT, /* advantage weight */
    VP_IQL_STAT_QVAL,   /* joint Q1(s, a) */
    VP_IQL_STAT_VVAL,   /* V(s) */
    VP_IQL_STAT_COUNT
} vp_iql_stat;

typedef struct vp_iql_trainer vp_iql_trainer;

/* The trainer's state: made by the algorithm entry, read by tests. */
struct vp_iql_trainer {
    vp_config cfg;             /* resolved configuration */
    vp_train_parts parts;      /* instrument, env settings, network, seeds */
    vp_iql_cfg ic;             /* IQL settings */
    vp_backend* backend;       /* where it runs */
    const vp_train_data* data; /* bars, features, split */
    int64_t steps, n_envs;     /* T, E of the dataset */
    vp_data_record ds_data;    /* the dataset's data record (the checkpoint's metadata) */
    char ds_behaviour[VP_OFFLINE_BEHAVIOUR_MAX]; /* its behaviour */
    vp_buffer feat_buf;        /* storage of features (CUDA) */
    vp_tensor features;        /* [T, F] f32 backend memory */
    vp_iql_net net;            /* the network */
    vp_iql_acts* mb;           /* s activations (B rows, with backward) */
    vp_iql_acts* nx;           /* s' activations (B rows, forward only) */
    vp_arena arena;            /* every buffer below */
    vp_tensor target;          /* [n_target] the target Q heads */
    vp_tensor adam_m, adam_v;  /* [n_weights] AdamW moments */
    vp_tensor adam_step;       /* [1] i32 AdamW step */
    vp_tensor grad_norm;       /* [1] f32 the last gradient norm */
    vp_tensor clip_coef;       /* [1] f32 its clip coefficient */
    vp_tensor best_params;     /* [n_weights] the best validation's parameters */
    vp_tensor ctr;             /* [2] i32: int64 updates begun (index of the sampling draws) */
    vp_tensor d_bar, d_port, d_act, d_reward, d_done; /* the dataset: [T + 1, E], [T + 1, E, P], [T, E, 4], [T, E], [T, E] */
    vp_tensor m_bar, m_port, m_act, m_reward, m_done, m_bar1, m_port1; /* the batch's rows [B] (s and s') */
    vp_tensor terms;           /* [B, VP_IQL_STAT_COUNT] per-sample loss terms */
    vp_tensor d_q1, d_q2, d_logits; /* [B, A] */
    vp_tensor d_v;             /* [B] */
    vp_tensor stats;           /* [VP_IQL_STAT_COUNT] sums of the last update's terms */
    vp_validator* val;         /* the validation span's backtest */
    vp_graph* g_all;           /* one iteration */
    vp_train_counters count;   /* host counters */
};

/* Builds the trainer of cfg (train.algo iql) on backend b over data d from dataset ds (checked
 * against d: its bars and a span inside the training span; uploaded once, not kept). */
vp_status vp_iql_trainer_init(vp_iql_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                              const vp_offline_data* ds);

/* Frees everything (a zeroed trainer is a no-op). */
void vp_iql_trainer_free(vp_iql_trainer* t);

/* The batch of the next update: B dataset rows drawn (vp_iql_row_at of the draws' counter) into
 * the m_* rows, then the counter moved on (ops only). */
vp_status vp_iql_sample(vp_iql_trainer* t);

/* The update on the current m_* rows: forward, losses, backward, clip, AdamW, Polyak (ops only). */
vp_status vp_iql_learn(vp_iql_trainer* t);

/* One update: vp_iql_sample, then vp_iql_learn (ops only). */
vp_status vp_iql_update(vp_iql_trainer* t);

/* n iterations (asynchronous on CUDA). */
vp_status vp_iql_trainer_iterate(vp_iql_trainer* t, int64_t n);

/* Waits and reads the last update's statistics (means) into out [VP_IQL_STAT_COUNT] and the
 * last gradient norm into *grad_norm. */
vp_status vp_iql_trainer_stats(vp_iql_trainer* t, double* out, double* grad_norm);

/* Writes a checkpoint of `kind` to path atomically, with best_val_sharpe and best_iteration. */
vp_status vp_iql_trainer_save(vp_iql_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                              int64_t best_iteration);

/* Restores a resume checkpoint (the config must equal the run's but for the keys a resume may
 * change), with the best score into *best_val_sharpe, *best_iteration. */
vp_status vp_iql_trainer_load(vp_iql_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration);

/* Reads the parameters of an IQL checkpoint of either kind at path into dst ([n_weights] of n). */
vp_status vp_iql_read_params(vp_backend* b, const vp_iql_net* n, const char* path, vp_tensor* dst);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_IQL_H */
