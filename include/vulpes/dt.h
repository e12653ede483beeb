/* vulpes: the Decision Transformer (Chen et al. 2021) — the state behind the algorithm table's
 * "dt" entry (vp_dt_algo, vulpes/algo.h), and what tests drive directly. docs/dt.md has the
 * tokens, the masks, the evaluation's conditioning and the keys.
 *
 * Offline RL as sequence modelling over a recorded dataset (vulpes/offline.h). A sequence holds
 * K steps of one episode, three tokens per step in the order return-to-go R_t, state s_t, action
 * a_t (L = 3K tokens), each embedded to D = dt.embed with a learned timestep embedding added:
 * R_t by a linear of the scalar; s_t by a linear of h = e + W_p p + b_p (e the market encoder's
 * encoding of the bar's window, vulpes/model.h, and its portfolio projection, as PPO's heads
 * read it); a_t as the sum of one embedding row per action branch. Then a LayerNorm, dt.layers
 * pre-LayerNorm GPT blocks (causal multi-head self-attention, vp_attention; an MLP D -> 4D -> D
 * with the exact GELU; residuals), a final LayerNorm, and a linear D -> A of per-branch logits
 * read at every state token (a classification head per branch: the environment's layout,
 * vulpes/action.h). A sequence shorter than K (an episode's start) is right-padded: token
 * positions carry no embedding of their own, so with the causal mask a real token never sees a
 * padded one and its output equals that of the left-padded, masked sequence of the paper; the
 * loss skips the padded steps.
 *
 * Every parameter lives in one flat buffer: the encoder's table first (its DQN head rows unused
 * and never saved), then the tensors of vp_dt_net.t, so one AdamW and one clip op update all. */
#ifndef VULPES_DT_H
#define VULPES_DT_H

#include "vulpes/model.h"
#include "vulpes/offline.h"
#include "vulpes/train.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest context (dt.context). */
#define VP_DT_MAX_CONTEXT 64

/* Most transformer blocks (dt.layers). */
#define VP_DT_MAX_LAYERS 16

/* The tensors before the blocks: X(slot, name, rows, cols), cols 0 a vector. D embed, H encoder
 * width, A heads, TM timesteps. */
#define VP_DT_IN_TENSORS(X)              \
    X(RET_W, "dt.ret.w", D, 0)           \
    X(RET_B, "dt.ret.b", D, 0)           \
    X(ST_W, "dt.state.w", D, H)          \
    X(ST_B, "dt.state.b", D, 0)          \
    X(ACT_E, "dt.action.emb", A, D)      \
    X(TIME_E, "dt.time.emb", TM, D)      \
    X(LNI_G, "dt.ln_in.g", D, 0)         \
    X(LNI_B, "dt.ln_in.b", D, 0)

/* The tensors of one block (named "dt.block<l>.<name>"). */
#define VP_DT_BLOCK_TENSORS(X)           \
    X(LN1_G, "ln1.g", D, 0)              \
    X(LN1_B, "ln1.b", D, 0)              \
    X(QKV_W, "attn.qkv.w", 3 * D, D)     \
    X(QKV_B, "attn.qkv.b", 3 * D, 0)     \
    X(PROJ_W, "attn.proj.w", D, D)       \
    X(PROJ_B, "attn.proj.b", D, 0)       \
    X(LN2_G, "ln2.g", D, 0)              \
    X(LN2_B, "ln2.b", D, 0)              \
    X(FC_W, "mlp.fc.w", 4 * D, D)        \
    X(FC_B, "mlp.fc.b", 4 * D, 0)        \
    X(FC2_W, "mlp.proj.w", D, 4 * D)     \
    X(FC2_B, "mlp.proj.b", D, 0)

/* The tensors after the blocks. */
#define VP_DT_OUT_TENSORS(X)             \
    X(LNF_G, "dt.ln_f.g", D, 0)          \
    X(LNF_B, "dt.ln_f.b", D, 0)          \
    X(HEAD_W, "dt.head.w", A, D)         \
    X(HEAD_B, "dt.head.b", A, 0)

/* Slots of the input tensors, of a block's, and of the output tensors. */
typedef enum vp_dt_in_slot {
#define VP_DT_SLOT_(slot, ...) VP_DT_##slot,
    VP_DT_IN_TENSORS(VP_DT_SLOT_) VP_DT_IN_COUNT
} vp_dt_in_slot;
typedef enum vp_dt_block_slot { VP_DT_BLOCK_TENSORS(VP_DT_SLOT_) VP_DT_BLOCK_COUNT } vp_dt_block_slot;
typedef enum vp_dt_out_slot {
    VP_DT_OUT_TENSORS(VP_DT_SLOT_) VP_DT_OUT_COUNT
#undef VP_DT_SLOT_
} vp_dt_out_slot;

/* Most tensors of the network after the encoder. */
#define VP_DT_MAX_TENSORS (VP_DT_IN_COUNT + VP_DT_MAX_LAYERS * VP_DT_BLOCK_COUNT + VP_DT_OUT_COUNT)

/* The shape of the transformer. */
typedef struct vp_dt_dims {
    int K;      /* steps per sequence (dt.context, 1..VP_DT_MAX_CONTEXT) */
    int L;      /* tokens per sequence: 3K */
    int D;      /* embedding width (dt.embed) */
    int NH;     /* attention heads (dt.heads, dividing D; D / NH <= VP_ATTN_MAX_DIM) */
    int layers; /* blocks (dt.layers, 1..VP_DT_MAX_LAYERS) */
    int H;      /* encoder width (model.hidden) */
    int P;      /* portfolio width (model.n_portfolio) */
    int A;      /* heads of a logits row (the action layout's n_heads) */
    int TM;     /* rows of the timestep embedding (env.episode_bars; later steps read the last row) */
    float ln_eps; /* LayerNorm epsilon (model.ln_eps) */
} vp_dt_dims;

/* One tensor of the network after the encoder. */
typedef struct vp_dt_tensor {
    char name[40];  /* checkpoint name */
    int64_t off;    /* element offset in the flat buffers */
    int64_t rows;   /* rows (numel of a vector) */
    int64_t cols;   /* columns (0: a vector) */
} vp_dt_tensor;

/* The network: the encoder and the transformer over one flat parameter buffer. */
typedef struct vp_dt_net {
    vp_model enc;                        /* the encoder; its params and grads view the flat buffers' first rows */
    int64_t n_enc;                       /* elements of the encoder's table (a multiple of 64) */
    vp_dt_dims dims;                     /* the transformer's shape */
    int n_tensors;                       /* tensors after the encoder: inputs, blocks, outputs */
    vp_dt_tensor t[VP_DT_MAX_TENSORS];   /* [n_tensors] */
    int64_t n_weights;                   /* elements of the flat buffers */
    vp_buffer param_buf, grad_buf;       /* storage of params and grads */
    vp_tensor params;                    /* [n_weights] the parameters */
    vp_tensor grads;                     /* [n_weights] gradients of the last backward (overwritten) */
} vp_dt_net;

/* Checks a shape (each field in range, NH divides D, D / NH within the attention ops' limits);
 * the message names the config key. */
vp_status vp_dt_dims_check(const vp_dt_dims* d);

/* Makes the network of encoder config cfg and transformer shape d (d->H, d->P, d->A from cfg)
 * on backend b and initialises its parameters from seed: the encoder as vp_model_init_params;
 * linear weights uniform in +-1 / sqrt(fan_in), biases zero, embedding rows uniform with
 * standard deviation 0.02, LayerNorm gains one and shifts zero (Philox). */
vp_status vp_dt_net_init(vp_dt_net* n, vp_backend* b, const vp_model_cfg* cfg, const vp_dt_dims* d, uint64_t seed);

/* Frees a network (a zeroed one is a no-op). */
void vp_dt_net_free(vp_dt_net* n);

/* Index in n->t of input tensor s, of tensor s of block l, of output tensor s. */
int vp_dt_in(const vp_dt_net* n, vp_dt_in_slot s);
int vp_dt_blk(const vp_dt_net* n, int l, vp_dt_block_slot s);
int vp_dt_out(const vp_dt_net* n, vp_dt_out_slot s);

/* View of tensor i of n->t ([rows, cols] or [rows]) inside a flat buffer [n_weights]. */
vp_tensor vp_dt_view(const vp_dt_net* n, const vp_tensor* flat, int i);

/* The encoder's part [n_enc] of a flat buffer [n_weights]. */
vp_tensor vp_dt_enc_view(const vp_dt_net* n, const vp_tensor* flat);

/* The tensors a checkpoint holds, in order: the encoder's rows the network uses (every row but
 * the DQN heads'), then n->t. Returns the count; with names and views not NULL writes up to cap. */
int vp_dt_net_tensors(const vp_dt_net* n, const vp_tensor* flat, const char** names, vp_tensor* views, int cap);

/* Elements of the tensors vp_dt_net_tensors lists. */
int64_t vp_dt_net_numel(const vp_dt_net* n);

/* Multiply-adds of one training update's forward over B sequences, encoder excluded
 * (docs/dt.md: the backward is about twice that). */
double vp_dt_forward_macs(const vp_dt_dims* d, int64_t B);

/* One batch of sequences, B x K steps, row b K + j step j of sequence b (backend memory). */
typedef struct vp_dt_batch {
    vp_tensor bar;    /* [B K] i32 decision bar of each step (what the encoder reads) */
    vp_tensor port;   /* [B K, P] f32 its portfolio vector */
    vp_tensor act;    /* [B K, 4] i32 the action taken */
    vp_tensor rtg;    /* [B K] f32 the return-to-go before the step */
    vp_tensor ts;     /* [B K] i32 the step's index in its episode (clamped to TM - 1 by the embedding) */
    vp_tensor valid;  /* [B K] f32 1: a step; 0: padding (after the sequence's last step) */
} vp_dt_batch;

/* Makes the tensors of a batch of B sequences from arena ar (on its backend). */
vp_status vp_dt_batch_init(vp_dt_batch* out, vp_arena* ar, const vp_dt_dims* d, int64_t B);

/* Activations of one batch (opaque). */
typedef struct vp_dt_acts vp_dt_acts;

/* Activations for up to B sequences: for_backward keeps what vp_dt_backward needs; encode_rows
 * > 0 makes encoder activations for that many bars (vp_dt_encode; B K to train the encoder);
 * fp32 computes the linears in FP32 whatever the network's precision (rollouts). */
vp_status vp_dt_acts_init(vp_dt_acts** out, const vp_dt_net* n, int64_t B, int for_backward, int64_t encode_rows,
                          int fp32);

/* Frees activations (NULL is a no-op). */
void vp_dt_acts_free(vp_dt_acts* a);

/* Encodes rows bars bar [rows] i32 of features [T, F] with params [n_weights] (vp_model_encode);
 * the encoding is vp_dt_encoding. */
vp_status vp_dt_encode(const vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, const vp_tensor* features,
                       const vp_tensor* bar, int64_t rows);

/* The encoding of the last vp_dt_encode: [rows, H] view. */
vp_tensor vp_dt_encoding(const vp_dt_acts* a);

/* The forward of B sequences from encodings enc [B K, H] (NULL: the last vp_dt_encode's, of B K
 * bars) and batch x (its port, act, rtg, ts; kept by reference for the backward): per-branch
 * logits at every token, vp_dt_logits. */
vp_status vp_dt_forward(const vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a, const vp_tensor* enc,
                        const vp_dt_batch* x, int64_t B);

/* Logits [B L, A] of the last forward (row b L + 3 j + 1: the state token of step j). */
vp_tensor vp_dt_logits(const vp_dt_acts* a);

/* The loss of the last forward against x->act: the mean over valid steps of the sum over the
 * branches of the cross-entropy at the step's state token; per-step terms into terms [B K] f32
 * (0 on padding), the valid steps' count into *count ([1] f32), d logits into the activations. */
vp_status vp_dt_loss(const vp_dt_net* n, vp_dt_acts* a, const vp_dt_batch* x, vp_tensor* terms, vp_tensor* count);

/* Backward of the last forward and loss (for_backward activations): writes n->grads. With the
 * forward on its own encoding the encoder's gradients too; with an outside encoding its
 * gradient is vp_dt_d_encoding and the encoder's rows stay zero. */
vp_status vp_dt_backward(vp_dt_net* n, const vp_tensor* params, vp_dt_acts* a);

/* Gradient [B K, H] of the encoding of the last backward. */
vp_tensor vp_dt_d_encoding(const vp_dt_acts* a);

/* ---- the policy ------------------------------------------------------------------------------ */

/* The policy of network n with params [n_weights] conditioned on target return `target`: encode
 * is the encoder; score pushes each row's state into its history (the workspace keeps the last
 * K steps of every row: encoding, portfolio, return-to-go, action) and scores the state token
 * of the sequence of its last min(steps, K) steps; observe (vulpes/policy.h) records the actions
 * taken and lowers each row's return-to-go by its reward (the target sits in the value's goal
 * field). Row i of every call is the same window; a score of many rows runs the transformer over
 * chunks of at most 64 sequences. Both pointers must outlive the value. */
vp_policy vp_dt_policy(const vp_dt_net* n, const vp_tensor* params, float target);

/* ---- the dataset ---------------------------------------------------------------------------- */

/* The training rows of a dataset on the backend: one row per step (t, env) of the dataset. */
typedef struct vp_dt_data {
    int64_t n_rows;       /* R = T x E (row t E + i: step t of env i) */
    int64_t n_envs;       /* E */
    int64_t n_episodes;   /* episodes (complete and the truncated last ones) */
    double best_return;   /* highest return of a complete episode (of any, when none completed) */
    double mean_return;   /* mean return of the complete episodes (of all, when none completed) */
    vp_arena arena;       /* the tensors below */
    vp_tensor bar;        /* [R] i32 */
    vp_tensor port;       /* [R, P] f32 */
    vp_tensor act;        /* [R, 4] i32 */
    vp_tensor rtg;        /* [R] f32 undiscounted sum of the episode's rewards from the step on */
    vp_tensor ts;         /* [R] i32 the step's index in its episode */
} vp_dt_data;

/* Splits d into episodes (the rows between done rows of each env column; a column's last
 * episode may be cut by the end of the recording), computes the returns-to-go once, and
 * uploads the rows to backend b. Fails naming the field when a row is out of range. */
vp_status vp_dt_data_init(vp_dt_data* out, vp_backend* b, const vp_offline_data* d, int n_portfolio);

/* Frees the rows (a zeroed value is a no-op). */
void vp_dt_data_free(vp_dt_data* d);

/* ---- the trainer ---------------------------------------------------------------------------- */

/* The settings of the trainer (the dt.* keys and the learn.* keys it shares). */
typedef struct vp_dt_cfg {
    vp_dt_dims dims;       /* the network's shape */
    int64_t batch;         /* B: sequences per update (dt.batch) */
    int target_best;       /* 1: condition on the dataset's best episode return (dt.target_return "best") */
    double target_return;  /* the target otherwise */
    vp_adamw_cfg adamw;    /* learn.lr, beta1, beta2, eps, weight_decay */
    float clip_norm;       /* learn.clip_norm (0 in the config: off) */
} vp_dt_cfg;

/* Fills the settings from the run's config; fails naming the key on values the trainer cannot
 * take. */
vp_status vp_dt_cfg_make(const vp_config* cfg, vp_dt_cfg* out);

/* Statistics of the last update. */
typedef enum vp_dt_stat {
    VP_DT_STAT_LOSS = 0, /* the loss */
    VP_DT_STAT_STEPS,    /* valid steps of the batch */
    VP_DT_STAT_COUNT
} vp_dt_stat;

typedef struct vp_dt_trainer vp_dt_trainer;

/* The trainer's state: made by the algorithm entry, read by tests. */
struct vp_dt_trainer {
    vp_config cfg;             /* resolved configuration */
    vp_train_parts parts;      /* instrument, env settings, network, seeds */
    vp_dt_cfg dc;              /* settings */
    vp_backend* backend;       /* where it runs */
    const vp_train_data* data; /* bars, features, split */
    vp_buffer feat_buf;        /* storage of features (CUDA) */
    vp_tensor features;        /* [T, F] f32 backend memory */
    vp_dt_data rows;           /* the dataset's rows */
    float target;              /* the target return evaluation conditions on */
    vp_dt_net net;             /* the network */
    vp_dt_acts* acts;          /* B sequences, with backward and B K encoder rows */
    vp_arena arena;            /* every buffer below */
    vp_dt_batch batch;         /* the sampled batch */
    vp_tensor adam_m, adam_v;  /* [n_weights] AdamW moments */
    vp_tensor adam_step;       /* [1] i32 AdamW step (also the index of the batch draws) */
    vp_tensor grad_norm;       /* [1] f32 the last gradient norm */
    vp_tensor clip_coef;       /* [1] f32 its clip coefficient */
    vp_tensor best_params;     /* [n_weights] the best validation's parameters */
    vp_tensor terms;           /* [B K] per-step loss terms */
    vp_tensor stats;           /* [VP_DT_STAT_COUNT] f32: the loss, the valid steps */
    vp_validator* val;         /* the validation span's backtest */
    vp_graph* g_update;        /* one update */
    vp_train_counters count;   /* host counters */
};

/* Builds the trainer of cfg (train.algo dt) on backend b over data d: loads dt.dataset, checks
 * it against the run's data and the training span, and makes everything an update needs. */
vp_status vp_dt_trainer_init(vp_dt_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d);

/* Builds the trainer from a dataset in memory (what vp_dt_trainer_init does after loading). */
vp_status vp_dt_trainer_init_data(vp_dt_trainer* t, vp_backend* b, const vp_config* cfg, const vp_train_data* d,
                                  const vp_offline_data* od);

/* Frees everything (a zeroed trainer is a no-op). */
void vp_dt_trainer_free(vp_dt_trainer* t);

/* One update: the batch drawn, the forward, loss, backward, clip and AdamW (ops only). */
vp_status vp_dt_update(vp_dt_trainer* t);

/* n iterations of one update each (one graph launch each; asynchronous on CUDA). */
vp_status vp_dt_trainer_iterate(vp_dt_trainer* t, int64_t n);

/* Waits and reads the last update's loss, valid steps and gradient norm. */
vp_status vp_dt_trainer_stats(vp_dt_trainer* t, double* loss, double* steps, double* grad_norm);

/* Writes a checkpoint of `kind` to path atomically, with best_val_sharpe and best_iteration and
 * the target return (metadata vulpes.dt.target_return). */
vp_status vp_dt_trainer_save(vp_dt_trainer* t, const char* path, vp_ckpt_kind kind, double best_val_sharpe,
                             int64_t best_iteration);

/* Restores a resume checkpoint, with the best score into *best_val_sharpe, *best_iteration. */
vp_status vp_dt_trainer_load(vp_dt_trainer* t, const char* path, double* best_val_sharpe, int64_t* best_iteration);

/* Reads the parameters of a DT checkpoint of either kind at path into dst ([n_weights] of n) and
 * its target return into *target (NULL: not read). */
vp_status vp_dt_read_params(vp_backend* b, const vp_dt_net* n, const char* path, vp_tensor* dst, float* target);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_DT_H */
