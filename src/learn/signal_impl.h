/* Internal: the bus kernels' launch constants, inputs and implementation tables (the kit's
 * pattern, backend/kit.h). signals.c checks the arguments and calls the table of the
 * backend's kind with raw pointers. */
#ifndef VP_LEARN_SIGNAL_IMPL_H
#define VP_LEARN_SIGNAL_IMPL_H

#include "backend/kit.h"
#include "vulpes/model.h"
#include "vulpes/signals.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Branches whose gradient norm has a bus slot (VP_SIG_GRAD_BR0..3). */
#define VP_SIG_BRANCH_SLOTS 4

/* Blocks of the CUDA bus's first pass, and the doubles of scratch its partial sums take
 * (VP_SIG_BLOCKS x the sums, backend memory). */
#define VP_SIG_BLOCKS 256
#define VP_SIG_PARTIAL_DOUBLES (VP_SIG_BLOCKS * 16)

/* Rule switches of vp_sig_params.rules. */
#define VP_SIG_RULE_TAU 1
#define VP_SIG_RULE_EPS 2
#define VP_SIG_RULE_GAMMA 4
#define VP_SIG_RULE_KELLY 8

/* Shapes, rates and rule settings of a bus launch, passed by value. */
typedef struct vp_sig_params {
    int64_t batch;                  /* B */
    int n_actions;                  /* A: heads */
    int n_branches;                 /* branches */
    int branch_size[VP_MAX_BRANCHES];   /* choices per branch */
    int branch_offset[VP_MAX_BRANCHES]; /* first head of each branch */
    int n_atoms;                    /* Z */
    float v_min, dz;                /* C51 support: atom j at v_min + j dz */
    float fast_rate, slow_rate;     /* EMA rates */
    float every;                    /* learner steps between rule applications */
    int rules;                      /* VP_SIG_RULE_* bits */
    float tau0, tau_min, tau_max, div_ref;            /* the tau rule */
    float eps_gain, eps_min, eps_max;                 /* the epsilon rule */
    float gamma0, gamma_min, gamma_max, gamma_rate;   /* the gamma rule */
    int n_step;                                       /* exponent of gamma in the discount */
    float kelly_fraction, kelly_min;                  /* the Kelly cap */
} vp_sig_params;

/* What the bus reads from one learner step (backend memory). */
typedef struct vp_sig_inputs {
    const float* log_probs;   /* [B, A, Z] online C51 log-probabilities at s_t */
    const float* d_log_probs; /* [B, A, Z] gradient of the loss w.r.t. them */
    const float* q;           /* [B, A] online C51 Q at s_t */
    const float* q_next;      /* [B, A] online C51 Q at s_{t+n} */
    const float* q_tnext;     /* [B, A] target C51 Q at s_{t+n} */
    const int32_t* actions;   /* [B, n_branches] choice taken per branch */
    const int32_t* a_star;    /* [B, n_branches] double-DQN choice per branch */
    const float* reward;      /* [B] n-step return */
    const float* discount;    /* [B] discount of the bootstrap (after the gamma rule's factor) */
    const float* stats;       /* [VP_STAT_COUNT] the step's statistics (the loss) */
    const float* support;     /* [n_branches, Z] each branch's learned C51 support (adaptive atoms);
                                 NULL: the uniform support v_min + j dz */
} vp_sig_inputs;

/* ---- the kernels ---------------------------------------------------------------------------- */

/* The bus: this step's reductions, the EMAs, the rules every p->every steps; ctl
 * [VP_CTL_COUNT] (backend memory) and sig [VP_SIG_COUNT] (mapped) read and written;
 * partial [VP_SIG_PARTIAL_DOUBLES] (backend memory) is the CUDA passes' scratch (the CPU
 * does not use it; may be NULL there). */
typedef vp_status vp_sig_bus_fn(vp_backend* b, const vp_sig_params* p, const vp_sig_inputs* in, float* ctl,
                                float* sig, double* partial);

/* lr[0] = the schedule's rate for the step held in step ([1] i32, 1-based, already counted). */
typedef vp_status vp_sig_sched_fn(vp_backend* b, int schedule, float lr0, int64_t warmup, int64_t total,
                                  const int32_t* step, float* lr);

/* Every kernel by name, in table order. */
#define VP_SIG_KERNELS(X, f, i) X(f, i, bus) X(f, i, sched)

/* One backend's bus kernels. */
typedef struct vp_sig_kernels {
    VP_KERNEL_FIELDS(VP_SIG_KERNELS, vp_sig)
} vp_sig_kernels;

/* The CPU loops (signal_cpu.c). */
VP_KERNEL_DECLARE(VP_SIG_KERNELS, vp_sig, vp_sig_cpu)
extern const vp_sig_kernels vp_sig_cpu;

/* The CUDA kernels' launchers (cuda_signals.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_SIG_KERNELS, vp_sig, vp_sig_cuda)
extern const vp_sig_kernels vp_sig_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_SIGNAL_IMPL_H */
