/* vulpes: the learner (SPEC section 4, "Learning"): one call takes a batch of gathered
 * transitions and runs the online and target forwards, the C51 and IQN losses, the
 * backward, the global grad-norm clip, AdamW and the Polyak target update.
 *
 * Everything is allocated at init. vp_learner_step issues ops only (no allocation, no
 * host<->device copy, no synchronisation), so it can be captured into a graph. The host
 * reads the statistics from `stats_host` (pinned, device-mapped memory) without a copy,
 * after the backend has finished the step. */
#ifndef VULPES_LEARNER_H
#define VULPES_LEARNER_H

#include <stdint.h>

#include "vulpes/backend.h"
#include "vulpes/comm.h"
#include "vulpes/model.h"
#include "vulpes/ops.h"
#include "vulpes/signals.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Learner settings; vp_learner_cfg_default fills SPEC's defaults. */
typedef struct vp_learner_cfg {
    vp_model_cfg model;  /* the network */
    int64_t batch;       /* B: transitions per step (8192) */
    int n_taus;          /* online IQN samples per transition (64) */
    int n_target_taus;   /* target IQN samples per transition (64) */
    float kappa;         /* quantile Huber threshold (1) */
    vp_adamw_cfg adamw;  /* lr 1e-4, betas 0.9 / 0.999, eps 1.5e-4, weight decay 0 */
    float clip_norm;     /* global gradient-norm clip (10) */
    float polyak_tau;    /* target = (1 - tau) target + tau online, each step (0.005) */
    uint64_t seed;       /* parameter initialisation and tau draws */
    int popart;          /* 1: PopArt normalisation of the targets (docs/modules.md; 0) */
    float popart_beta;   /* PopArt's rate of the running moments per step (3e-4) */
    vp_signals_cfg signals; /* the training-signal bus, its rules and the lr schedule (all off) */
} vp_learner_cfg;

/* SPEC section 4 defaults (model defaults included). */
vp_learner_cfg vp_learner_cfg_default(void);

/* Checks a configuration; the message names the bad field. */
vp_status vp_learner_cfg_check(const vp_learner_cfg* c);

/* Indices into the statistics block. */
typedef enum vp_stat {
    VP_STAT_LOSS = 0,   /* mean_i w_i (c51_i + iqn_i): the optimised loss */
    VP_STAT_C51,        /* mean_i w_i c51_i */
    VP_STAT_IQN,        /* mean_i w_i iqn_i */
    VP_STAT_GRAD_NORM,  /* global gradient norm before clipping */
    VP_STAT_Q_MEAN,     /* mean online Q at s_t over samples and action heads */
    VP_STAT_Q_MAX,      /* largest online Q at s_t over samples and action heads */
    VP_STAT_NAN,        /* 1 when any of the above is not finite at the last step, else 0 */
    VP_STAT_NAN_STEPS,  /* steps so far with the NaN flag set (never reset) */
    VP_STAT_COUNT
} vp_stat;

/* One batch of already-gathered transitions, in the backend's memory. States are rows
 * of the feature matrix named by bar index (the model gathers its K-bar windows). */
typedef struct vp_batch {
    vp_tensor features;       /* [T, F] f32: the feature matrix the indices point into */
    vp_tensor bar_idx;        /* [B] i32: decision bar t */
    vp_tensor next_bar_idx;   /* [B] i32: bar t+n */
    vp_tensor portfolio;      /* [B, P] f32: portfolio vector at t */
    vp_tensor next_portfolio; /* [B, P] f32: portfolio vector at t+n */
    vp_tensor actions;        /* [B, n_branches] i32: choice taken within each branch */
    vp_tensor reward;         /* [B] f32: n-step discounted return */
    vp_tensor discount;       /* [B] f32: gamma^n, 0 when the episode ended */
    vp_tensor is_weight;      /* [B] f32: importance-sampling weight (1 when uniform) */
    vp_tensor taus;           /* [B, n_taus] f32 in (0, 1): online IQN samples */
    vp_tensor target_taus;    /* [B, n_target_taus] f32 in (0, 1): target IQN samples */
} vp_batch;

/* The phases of a step, in order (vp_learner_step runs them all). */
typedef enum vp_learner_phase {
    VP_PHASE_FORWARD = 0, /* online at s_t, online at s_{t+n}, target at s_{t+n} */
    VP_PHASE_LOSS,        /* double-DQN choice, C51 and IQN losses and their gradients */
    VP_PHASE_BACKWARD,    /* gradient of every parameter */
    VP_PHASE_OPTIM,       /* clip, AdamW, Polyak, statistics */
    VP_PHASE_COUNT
} vp_learner_phase;

/* A learner's step buffers (opaque): activations and loss scratch. */
typedef struct vp_learner_scratch vp_learner_scratch;

/* The learner: online network, target parameters, optimiser state and step scratch. */
typedef struct vp_learner {
    vp_learner_cfg cfg;            /* settings */
    vp_backend* backend;           /* where it computes */
    vp_model model;                /* online network: params [n_weights], grads [n_weights] */
    vp_arena arena;                /* backend memory: target, moments, counters, scratch */
    vp_arena mapped;               /* pinned mapped memory: the statistics block */
    vp_tensor target;              /* [n_weights] target-network parameters */
    vp_tensor adam_m;              /* [n_weights] AdamW first moment */
    vp_tensor adam_v;              /* [n_weights] AdamW second moment */
    vp_tensor step;                /* [1] i32: AdamW steps taken */
    vp_tensor grad_norm;           /* [1] f32: gradient norm of the last step, before clipping */
    vp_tensor clip_coef;           /* [1] f32: clip coefficient of the last step */
    vp_tensor stats;               /* [VP_STAT_COUNT] f32, mapped: written by the step */
    const float* stats_host;       /* [VP_STAT_COUNT] host alias of `stats` */
    vp_tensor ctl;                 /* [VP_CTL_COUNT] f32: lr, clip, tau, ... read by the kernels (signals.h) */
    vp_tensor signals;             /* [VP_SIG_COUNT] f32, mapped: the bus (signals.h) */
    const float* signals_host;     /* [VP_SIG_COUNT] host alias of `signals` */
    vp_learner_scratch* scratch;   /* activations and loss buffers */
    vp_tensor popart;              /* [3] f32: PopArt's mu, nu, sigma (cfg.popart; empty without) */
    vp_comm* comm;                 /* data-parallel communicator (vp_learner_set_comm; NULL: one process) */
} vp_learner;

/* Builds the model (parameters from cfg->seed), copies it into the target, zeroes the
 * moments and takes every buffer a step needs. */
vp_status vp_learner_init(vp_learner* l, vp_backend* b, const vp_learner_cfg* cfg);

/* Frees everything the learner holds. */
void vp_learner_free(vp_learner* l);

/* Takes the tensors of one batch from the learner's arena, once per learner (features
 * excepted: the caller sets batch->features), so a sampler or a test can fill them. */
vp_status vp_learner_batch_init(vp_learner* l, vp_batch* batch);

/* Draws fresh taus and target taus into the batch from Philox(seed, step counter), on the
 * backend (no host round trip). */
vp_status vp_learner_draw_taus(vp_learner* l, vp_batch* batch);

/* One learner step on `batch` (tensors as vp_batch says); priorities ([B] f32, backend
 * memory, may be NULL) receives each sample's C51 loss. Ops only: capturable into a
 * graph. */
vp_status vp_learner_step(vp_learner* l, const vp_batch* batch, vp_tensor* priorities);

/* Runs one phase of a step (benchmarks time them apart); the phases run in order make
 * exactly vp_learner_step. */
vp_status vp_learner_run_phase(vp_learner* l, vp_learner_phase phase, const vp_batch* batch,
                               vp_tensor* priorities);

/* Name of a phase ("forward"); never NULL. */
const char* vp_learner_phase_name(vp_learner_phase phase);

/* A [1] view of slot k (vp_control) of the learner's controls (backend memory): what the
 * collection (epsilon scale) and the env (Kelly cap) read on the device. An empty tensor
 * (data NULL) for a bad k. */
vp_tensor vp_learner_control(const vp_learner* l, int k);

/* Writes value v into control k (vp_control) of the learner: what the next steps read
 * (VP_CTL_LR is rewritten each step by a schedule other than constant). Set-up only: one
 * upload, not inside a step. */
vp_status vp_learner_set_control(vp_learner* l, int k, float v);

/* Attaches the communicator of a data-parallel run (NULL detaches; not owned). With more
 * than one rank, each step sums model.grads over the ranks after the backward and scales it
 * by 1 / size, before the clip, so every rank applies the gradient of the global batch
 * (cfg.batch is the rank's share); rank 0's parameters are broadcast to all and copied into
 * the target (set-up only). One rank changes nothing. Refused with more than one rank for
 * PopArt and the signal bus, whose state follows the rank's own batch statistics. */
vp_status vp_learner_set_comm(vp_learner* l, vp_comm* comm);

/* Copies online parameters into the target (after loading a checkpoint, say); set-up only. */
vp_status vp_learner_sync_target(vp_learner* l);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_LEARNER_H */
