/* vulpes: the agent network (SPEC section 4): per-bar trunk, market encoder (Mamba2, TLOB or none),
 * portfolio projection, distributional dueling branching head (C51) and IQN head.
 *
 * Parameters live in one flat f32 buffer described by one table (name, shape, init,
 * offset) that drives allocation, initialisation, checkpoint names and gradient
 * checks. A model holds no batch state: activations live in a vp_model_acts made once
 * per batch size. The same forward serves the online and the target network by
 * passing the parameter buffer to use. */
#ifndef VULPES_MODEL_H
#define VULPES_MODEL_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Most action branches a model may have. */
#define VP_MAX_BRANCHES 8

/* The market encoder over the K bars' trunk rows (model.encoder; the index order is the
 * config key's values "mamba2|tlob|none"). */
typedef enum vp_model_encoder {
    VP_ENCODER_MAMBA2 = 0, /* the Mamba2 mixer (SPEC 4.2) */
    VP_ENCODER_TLOB,       /* TLOB dual-attention blocks (docs/model.md, "TLOB encoder") */
    VP_ENCODER_NONE,       /* no mixer: the last bar's trunk output */
    VP_ENCODER_COUNT
} vp_model_encoder;

/* The encoder's config name ("mamba2", "tlob", "none"; "?" out of range). */
const char* vp_model_encoder_name(vp_model_encoder e);

/* Architecture; vp_model_cfg_default fills SPEC's defaults. */
typedef struct vp_model_cfg {
    int n_features;      /* F: feature columns per bar (32) */
    int n_portfolio;     /* P: portfolio vector width (8) */
    int window;          /* K: bars seen per decision (8) */
    int hidden;          /* H: trunk width (256) */
    vp_model_encoder encoder; /* the mixer over the K bars' trunk rows (VP_ENCODER_MAMBA2) */
    int mamba_state;     /* N: SSM state size (16) */
    int mamba_head_dim;  /* head dim (64); heads = hidden / head_dim (expand 1, ngroups 1) */
    int mamba_conv;      /* causal depthwise conv width (4) */
    int tlob_blocks;     /* TLOB: dual-attention blocks (2) */
    int tlob_heads;      /* TLOB: temporal attention heads, dividing hidden (4) */
    int tlob_feature_heads; /* TLOB: feature attention heads, dividing window (1) */
    int tlob_mlp;        /* TLOB: MLP expansion factor (4) */
    int head_hidden;     /* hidden width of the value / advantage / IQN MLPs (128) */
    int n_atoms;         /* Z: C51 atoms (51) */
    float v_min, v_max;  /* C51 support [-10, 10] */
    int n_branches;      /* action branches (4) */
    int branch_sizes[VP_MAX_BRANCHES]; /* choices per branch (3, 4, 3, 3) */
    int iqn_cos;         /* cosine features of the IQN embedding (64) */
    float ln_eps;        /* LayerNorm epsilon (1e-5) */
    float rms_eps;       /* RMSNorm epsilon (1e-5) */
    /* input modules (docs/modules.md, "Input modules"); each is off at 0 */
    int vsn;             /* 1: variable selection gate over the F features before the trunk */
    int vsn_hidden;      /* VH: hidden width of the gate's network (16) */
    int spectral_norm;   /* 1: the trunk's linear layers divided by their spectral norm */
    int kan;             /* 1: a B-spline KAN layer in place of the trunk's first linear layer */
    int kan_grid;        /* G: grid intervals of the splines (5) */
    int kan_order;       /* k: spline order (3: cubic) */
    float kan_range;     /* the grid spans [-kan_range, kan_range] (3) */
    /* head modules (issue 15, task M2; docs/modules.md), each off by default */
    float stoch_depth;   /* drop probability of the Mamba2 residual branch per sample in training (0: off) */
    int q_denoise;       /* 1: residual MLP A -> 2A -> A refines the C51 Q used for action choice */
    int cross_branch;    /* 1: messages between the branches' representations before the advantage outputs */
    float risk_budget;   /* kappa > 0: sigmoid scaler of the chosen size, its target the CVaR budget kappa (0: off) */
    int adaptive_atoms;  /* 1: per-branch learned C51 support from spacing logits "c51.atoms" (docs/modules.md) */
} vp_model_cfg;

/* SPEC section 4 defaults. */
vp_model_cfg vp_model_cfg_default(void);

/* Total action heads (sum of branch sizes; 13 by default). */
int vp_model_cfg_actions(const vp_model_cfg* c);

/* Checks a configuration; the message names the bad field. */
vp_status vp_model_cfg_check(const vp_model_cfg* c);

/* GEMM FLOPs (2 m n k summed over the products) of one forward of `batch` samples with
 * `n_taus` IQN samples (0: no IQN head), plus its backward when `backward` is set. */
double vp_model_flops(const vp_model_cfg* c, int64_t batch, int n_taus, int backward);

/* GEMM FLOPs (2 m n k) of the TLOB blocks' forward over `batch` samples: per block and side
 * the q, k, v and output projections, the MLP and the attention's two products (q k^T, p v);
 * 0 unless c->encoder is VP_ENCODER_TLOB. */
double vp_model_tlob_flops(const vp_model_cfg* c, double batch);

/* How a parameter tensor is initialised (PyTorch / Mamba2 reference defaults). */
typedef enum vp_param_init {
    VP_INIT_UNIFORM = 0, /* U(-bound, bound), bound = 1 / sqrt(fan_in) */
    VP_INIT_ONES,        /* 1 (norm weights, Mamba2 D) */
    VP_INIT_ZEROS,       /* 0 (norm biases) */
    VP_INIT_A_LOG,       /* log(U(1, 16)) per head */
    VP_INIT_DT_BIAS,     /* inverse softplus of dt, log-uniform in [1e-3, 1e-1], floor 1e-4 */
    VP_INIT_NEAR_EYE,    /* stacked square blocks [cols, cols]: identity + U(-bound, bound) */
    VP_INIT_COUNT
} vp_param_init;

/* One parameter tensor of the table. */
typedef struct vp_param_info {
    char name[64];            /* "trunk.w1", as in checkpoints */
    int ndim;                 /* 1 or 2 */
    int64_t shape[2];         /* [out, in] for weights, [n] for vectors */
    int64_t offset;           /* elements from the start of the flat buffer (multiple of 64) */
    int64_t numel;            /* elements */
    vp_param_init init;       /* initialisation rule */
    float bound;              /* VP_INIT_UNIFORM: half-width of the interval */
    int id;                   /* internal slot (vp_model.slot) */
} vp_param_info;

/* Internal parameter slots (the table's rows; absent ones, e.g. Mamba2 when off, map to -1). */
#define VP_MODEL_MAX_SLOTS 96

/* The network: configuration, parameter table and the flat buffers. */
typedef struct vp_model {
    vp_model_cfg cfg;         /* architecture */
    vp_backend* backend;      /* where it computes */
    int n_params;             /* entries in `info` */
    vp_param_info* info;      /* [n_params] the table */
    int64_t n_weights;        /* elements in the flat buffers */
    vp_buffer param_buf;      /* storage of `params` */
    vp_buffer grad_buf;       /* storage of `grads` */
    vp_tensor params;         /* [n_weights] online parameters */
    vp_tensor grads;          /* [n_weights] gradients of the last backward */
    vp_precision precision;   /* GEMM arithmetic (VP_PREC_TF32: FP32 on the CPU) */
    int slot[VP_MODEL_MAX_SLOTS]; /* internal: table index of each slot, -1 when absent */
} vp_model;

/* Builds the table for `cfg`, allocates params and grads on the backend and initialises
 * the parameters from `seed` (same seed -> same parameters on every backend). */
vp_status vp_model_init(vp_model* m, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed);

/* Frees a model. */
void vp_model_free(vp_model* m);

/* Writes the initial parameters for `seed` into `flat` ([n_weights], any backend memory
 * of m's backend): computed on the host with Philox (stream = hash of the name, index =
 * element), then uploaded, so every backend gets the same bits. Padding is zero. */
vp_status vp_model_init_params(const vp_model* m, vp_tensor* flat, uint64_t seed);

/* Finds a parameter by name; NULL when absent. */
const vp_param_info* vp_model_find_param(const vp_model* m, const char* name);

/* A view of parameter p ([out, in] or [n]) inside a flat buffer [n_weights] (params,
 * grads, optimiser moments). */
vp_tensor vp_model_param_view(const vp_model* m, const vp_tensor* flat, const vp_param_info* p);

/* Activations of one batch: everything forward keeps for backward, and the outputs. */
typedef struct vp_model_acts vp_model_acts;

/* Makes activations *out for batches of up to `batch` samples and `n_taus` IQN samples
 * (0: no IQN head); `for_backward` 0 keeps only what a forward needs. */
vp_status vp_model_acts_init(vp_model_acts** out, const vp_model* m, int64_t batch, int n_taus,
                             int for_backward);

/* Frees activations (NULL is a no-op). */
void vp_model_acts_free(vp_model_acts* a);

/* Bytes of backend memory the activations hold. */
size_t vp_model_acts_bytes(const vp_model_acts* a);

/* Forward of `batch` samples (vp_model_encode then vp_model_heads) with parameters
 * `params` ([n_weights], the online or the target buffer). features [T, F] is the whole
 * feature matrix; bar_idx [batch] (i32) the decision bar t of each sample, whose window
 * is rows t-K+1..t (rows below 0 read row 0); portfolio [batch, P]; taus [batch, n_taus]
 * in (0, 1) or NULL to skip the IQN head. */
vp_status vp_model_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                           const vp_tensor* features, const vp_tensor* bar_idx,
                           const vp_tensor* portfolio, const vp_tensor* taus, int64_t batch);

/* Market part of the forward (SPEC 4.1-4.2: trunk, then the encoder: Mamba2, TLOB or the last bar) with
 * params [n_weights], features [T, F] and bar_idx [batch] i32 as in vp_model_forward:
 * writes the encoding e [batch, H] into the activations (vp_model_encoding). Needs no
 * portfolio. */
vp_status vp_model_encode(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                          const vp_tensor* features, const vp_tensor* bar_idx, int64_t batch);

/* Encoding of the last vp_model_encode: [batch, H] view into the activations. */
vp_tensor vp_model_encoding(const vp_model_acts* a);

/* Portfolio projection and heads (SPEC 4.3-4.5) with params [n_weights] from encodings
 * `enc` [>= batch, H] (NULL: the activations' own, from the last vp_model_encode);
 * portfolio [batch, P]; taus [batch, n_taus] or NULL. A backward after this needs enc == NULL (the encoder's
 * activations are kept only then); with an outside `enc` only the heads are forward. */
vp_status vp_model_heads(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                         const vp_tensor* enc, const vp_tensor* portfolio, const vp_tensor* taus,
                         int64_t batch);

/* Outputs of the last forward, as views into the activations (an empty tensor, data
 * NULL, when a is NULL or holds no such output): */

/* log_probs [batch, A, Z]: C51 log-probabilities per action head (empty after forwards of
 * Q-only activations, vp_model_acts_q_only). */
vp_tensor vp_model_log_probs(const vp_model_acts* a);

/* Marks forward-only activations whose readers want Q, never the log-probabilities (a
 * policy's scores, the learner's online forward at s_{t+n}): CUDA forwards then skip writing
 * them (the CPU's keep them as scratch). Q is the same bits either way. A no-op on NULL or on
 * activations made for a backward. */
void vp_model_acts_q_only(vp_model_acts* a);

/* Marks Q-only activations (vp_model_acts_q_only, called first) whose Q may come from the
 * output layers folded with the dueling mean (mops.h c51_fold_q): one pass from the hidden
 * rows to Q where it serves (CUDA, TF32 products, the default head widths), without the
 * advantage rows. Q is then the same function within TF32 rounding, not the same bits as the
 * layer-by-layer heads. A no-op on NULL, on activations not marked Q-only, and elsewhere. */
void vp_model_acts_fold_heads(vp_model_acts* a);

/* held 1: the parameters have not changed since the last forward of a and do not change until
 * the next call with held 0, so a forward may reuse what an earlier forward with the same parameter buffer
 * derived from them (the CUDA heads' zero-padded or folded copy of the output layers, made once
 * instead of per forward: a collection's S head steps). held 0 (the default) makes every forward derive
 * it again. The outputs are the same bits either way. A no-op on NULL. */
void vp_model_acts_hold_params(vp_model_acts* a, int held);

/* The IQN head's weight gradients of a backward on `a` (the hidden layer's and the cosine
 * embedding's) run on `lane`, a lane of the model's backend (vp_backend_lane), beside the rest
 * of the backward, which joins it before returning; the same bits. NULL (the default): the
 * model's backend. A no-op on NULL activations. */
void vp_model_acts_set_lane(vp_model_acts* a, vp_backend* lane);

/* q [batch, A]: expected values sum_z z p per action head, the values actions are chosen
 * by (refined by the Q-denoise MLP when cfg.q_denoise is on). */
vp_tensor vp_model_q(const vp_model_acts* a);

/* support [n_branches, Z]: the C51 support each branch's heads sum over (cfg.adaptive_atoms on;
 * empty without, when the support is uniform on [v_min, v_max]). */
vp_tensor vp_model_support(const vp_model_acts* a);

/* iqn [batch, n_taus, A]: quantile values (the forward's taus). */
vp_tensor vp_model_iqn(const vp_model_acts* a);

/* Backward of the last forward with parameters `params` [n_weights]: given d log_probs
 * [batch, A, Z] and d iqn [batch, n_taus, A] (NULL when no IQN), writes m->grads
 * (overwritten, not accumulated; padding between tensors stays zero). Needs activations
 * made with for_backward = 1 and a forward whose encoding was the activations' own. */
vp_status vp_model_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                            const vp_tensor* d_log_probs, const vp_tensor* d_iqn);

/* After the learner's online forward: writes into params ([n_weights], the online buffer)
 * what that forward advanced, the spectral norm's power-iteration vectors u and v (PyTorch's
 * weight_u, weight_v). A no-op without spectral norm. */
vp_status vp_model_commit(const vp_model* m, vp_tensor* params, const vp_model_acts* a);

/* The mean variable-selection weight of each feature over the last forward's trunk rows into
 * out [n_features] (host memory; waits for the backend). VP_ERR_STATE without variable
 * selection or before a forward. */
vp_status vp_model_selection_weights(const vp_model_acts* a, float* out);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_H */
