/* vulpes: the agent network (SPEC section 4): per-bar trunk, Mamba2 temporal mixer,
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

#define VP_MAX_BRANCHES 8

/* Architecture; vp_model_cfg_default fills SPEC's defaults. */
typedef struct vp_model_cfg {
    int n_features;      /* F: feature columns per bar (32) */
    int n_portfolio;     /* P: portfolio vector width (8) */
    int window;          /* K: bars seen per decision (8) */
    int hidden;          /* H: trunk width (256) */
    int use_mamba;       /* 1: Mamba2 mixer over the K bars; 0: last bar's trunk output only */
    int mamba_state;     /* N: SSM state size (16) */
    int mamba_head_dim;  /* head dim (64); heads = hidden / head_dim (expand 1, ngroups 1) */
    int mamba_conv;      /* causal depthwise conv width (4) */
    int head_hidden;     /* hidden width of the value / advantage / IQN MLPs (128) */
    int n_atoms;         /* Z: C51 atoms (51) */
    float v_min, v_max;  /* C51 support [-10, 10] */
    int n_branches;      /* action branches (4) */
    int branch_sizes[VP_MAX_BRANCHES]; /* choices per branch (3, 4, 3, 3) */
    int iqn_cos;         /* cosine features of the IQN embedding (64) */
    float ln_eps;        /* LayerNorm epsilon (1e-5) */
    float rms_eps;       /* RMSNorm epsilon (1e-5) */
} vp_model_cfg;

/* SPEC section 4 defaults. */
vp_model_cfg vp_model_cfg_default(void);

/* Total action heads (sum of branch sizes; 13 by default). */
int vp_model_cfg_actions(const vp_model_cfg* c);

/* Checks a configuration; the message names the bad field. */
vp_status vp_model_cfg_check(const vp_model_cfg* c);

/* One parameter tensor of the table. */
typedef struct vp_param_info {
    char name[64];            /* "trunk.w1", as in checkpoints */
    int ndim;                 /* 1 or 2 */
    int64_t shape[2];         /* [out, in] for weights, [n] for vectors */
    int64_t offset;           /* elements from the start of the flat buffer */
    int64_t numel;            /* elements */
} vp_param_info;

/* The network: configuration, parameter table and the flat buffers. */
typedef struct vp_model {
    vp_model_cfg cfg;         /* architecture */
    vp_backend* backend;      /* where it computes */
    int n_params;             /* entries in `params_info` */
    vp_param_info* info;      /* [n_params] the table */
    int64_t n_weights;        /* elements in the flat buffers */
    vp_buffer param_buf;      /* storage of `params` */
    vp_buffer grad_buf;       /* storage of `grads` */
    vp_tensor params;         /* [n_weights] online parameters */
    vp_tensor grads;          /* [n_weights] gradients of the last backward */
} vp_model;

/* Builds the table for `cfg`, allocates params and grads on the backend and initialises
 * the parameters from `seed` (same seed -> same parameters on every backend). */
vp_status vp_model_init(vp_model* m, vp_backend* b, const vp_model_cfg* cfg, uint64_t seed);

/* Frees a model. */
void vp_model_free(vp_model* m);

/* Finds a parameter by name; NULL when absent. */
const vp_param_info* vp_model_find_param(const vp_model* m, const char* name);

/* A view of one parameter inside a flat buffer (params, grads, optimiser moments). */
vp_tensor vp_model_param_view(const vp_model* m, const vp_tensor* flat, const vp_param_info* p);

/* Activations of one batch: everything forward keeps for backward, and the outputs. */
typedef struct vp_model_acts vp_model_acts;

/* Makes activations for batches of up to `batch` samples and `n_taus` IQN samples
 * (0: no IQN head); `for_backward` 0 keeps only what a forward needs. */
vp_status vp_model_acts_init(vp_model_acts** out, const vp_model* m, int64_t batch, int n_taus,
                             int for_backward);

/* Frees activations. */
void vp_model_acts_free(vp_model_acts* a);

/* Forward of `batch` samples with parameters `params` ([n_weights], the online or the
 * target buffer). features [T, F] is the whole feature matrix; bar_idx [batch] (i32) the
 * decision bar t of each sample, whose window is rows t-K+1..t (rows below 0 read row 0);
 * portfolio [batch, P]; taus [batch, n_taus] in (0, 1) or NULL to skip the IQN head. */
vp_status vp_model_forward(const vp_model* m, const vp_tensor* params, vp_model_acts* a,
                           const vp_tensor* features, const vp_tensor* bar_idx,
                           const vp_tensor* portfolio, const vp_tensor* taus, int64_t batch);

/* Outputs of the last forward (views into the activations):
 * log_probs [batch, A, Z] C51 log-probabilities per action head,
 * q [batch, A] expected values sum_z z p, iqn [batch, n_taus, A] quantile values. */
vp_tensor vp_model_log_probs(const vp_model_acts* a);
vp_tensor vp_model_q(const vp_model_acts* a);
vp_tensor vp_model_iqn(const vp_model_acts* a);

/* Backward of the last forward with parameters `params`: given d log_probs
 * [batch, A, Z] and d iqn [batch, n_taus, A] (NULL when no IQN), writes m->grads
 * (overwritten, not accumulated). */
vp_status vp_model_backward(vp_model* m, const vp_tensor* params, vp_model_acts* a,
                            const vp_tensor* d_log_probs, const vp_tensor* d_iqn);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_MODEL_H */
