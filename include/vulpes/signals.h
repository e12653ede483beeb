/* vulpes: the training-signal bus (docs/modules.md, "The training-signal bus").
 *
 * A fixed table of f32 signals that the learner's kernels write once per learner step into
 * pinned, device-mapped memory (plain memory on the CPU), read by the host in place for
 * metrics.jsonl and the report. Beside it a small block of controls in backend memory
 * (learning rate, clip threshold, Polyak tau, epsilon scale, gamma, Kelly cap) that the
 * step's kernels, the collection and the env read on the device; rules on the bus move
 * them every signals.every learner steps, on the device, with no host round trip. Every
 * switch is off by default; then the step is the one without the bus, bit for bit. */
#ifndef VULPES_SIGNALS_H
#define VULPES_SIGNALS_H

#include <stdint.h>

#include "vulpes/status.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The bus: X(id, key, unit, meaning), one slot each, in slot order. Every slot is written
 * by the bus kernel at the end of each learner step (after AdamW and the Polyak update),
 * when the bus is on; EMAs start at their first value and skip a non-finite one. */
#define VP_SIGNAL_LIST(X)                                                                        \
    X(LOSS_FAST, "sig.loss_fast", "loss", "EMA of the optimised loss at rate signals.fast_rate")  \
    X(LOSS_SLOW, "sig.loss_slow", "loss", "EMA of the optimised loss at rate signals.slow_rate")  \
    X(LOSS_TREND, "sig.loss_trend", "ratio", "(loss_fast - loss_slow) / max(|loss_slow|, 1e-8)")   \
    X(TD_ABS, "sig.td_abs", "return", "mean over samples and branches of |r + d Q_tgt(s', a*) - Q(s, a)|") \
    X(TD_FAST, "sig.td_fast", "return", "EMA of td_abs at rate signals.fast_rate")              \
    X(TD_SLOW, "sig.td_slow", "return", "EMA of td_abs at rate signals.slow_rate")              \
    X(TD_TREND, "sig.td_trend", "ratio", "(td_fast - td_slow) / max(|td_slow|, 1e-8)")          \
    X(Q_MEAN, "sig.q_mean", "return", "mean online C51 Q at s_t over samples and heads")         \
    X(Q_VAR, "sig.q_var", "return^2", "variance of those Q values")                              \
    X(Q_DIV, "sig.q_div", "return", "mean |Q_online(s') - Q_target(s')| over samples and heads") \
    X(ENTROPY, "sig.entropy", "nats", "mean entropy of the online C51 distributions at s_t")     \
    X(ATOM_UTIL, "sig.atom_util", "fraction", "mean exp(entropy) / n_atoms: the atoms in use")   \
    X(GRAD_BR0, "sig.grad_br0", "norm", "L2 norm of d loss / d log-probs of branch 0's heads")   \
    X(GRAD_BR1, "sig.grad_br1", "norm", "the same for branch 1")                                \
    X(GRAD_BR2, "sig.grad_br2", "norm", "the same for branch 2")                                \
    X(GRAD_BR3, "sig.grad_br3", "norm", "the same for branch 3")                                \
    X(TARGET_DRIFT, "sig.target_drift", "ratio", "||online - target|| / ||online|| before the Polyak update") \
    X(EDGE, "sig.edge", "return", "mean over samples and branches of E[Z(s, greedy)]")          \
    X(EDGE_VAR, "sig.edge_var", "return^2", "mean over samples and branches of Var[Z(s, greedy)]") \
    X(LR, "sig.lr", "rate", "the learning rate AdamW used at this step")                        \
    X(CLIP, "sig.clip_norm", "norm", "the gradient-norm clip threshold of this step")           \
    X(TAU, "sig.tau", "rate", "the Polyak rate of the next step")                               \
    X(EPS_SCALE, "sig.eps_scale", "factor", "the factor on the scheduled epsilon")              \
    X(GAMMA, "sig.gamma", "rate", "the discount the bootstrap uses (gamma^n)")                  \
    X(KELLY_CAP, "sig.kelly_cap", "fraction", "the factor on the position size the env allows") \
    X(RULE_RUNS, "sig.rule_runs", "count", "rule applications so far")                          \
    X(STEPS, "sig.steps", "count", "learner steps the bus has seen (exact to 2^24)")

#define VP_SIGNAL_ENUM_(id, key, unit, doc) VP_SIG_##id,
/* Slots of the bus. */
typedef enum vp_signal { VP_SIGNAL_LIST(VP_SIGNAL_ENUM_) VP_SIG_COUNT } vp_signal;
#undef VP_SIGNAL_ENUM_

/* Slots of the controls block (backend memory, read by the kernels that use them). */
typedef enum vp_control {
    VP_CTL_LR = 0,     /* AdamW learning rate (the schedule's, written on the device each step) */
    VP_CTL_CLIP,       /* global gradient-norm clip threshold */
    VP_CTL_TAU,        /* Polyak rate (the tau rule's when on) */
    VP_CTL_EPS_SCALE,  /* factor on the scheduled epsilon (the epsilon rule's), 1 when off */
    VP_CTL_GAMMA,      /* discount (the gamma rule's) */
    VP_CTL_DISC_SCALE, /* (gamma / learn.gamma)^n: the factor on each sample's gamma^n */
    VP_CTL_KELLY_CAP,  /* factor on the env's allowed position size (the Kelly rule's), 1 when off */
    VP_CTL_TICK,       /* learner steps since the last rule application */
    VP_CTL_DRIFT_SS,   /* sum (online - target)^2 of this step (scratch of the bus) */
    VP_CTL_PARAM_SS,   /* sum online^2 of this step (scratch of the bus) */
    VP_CTL_COUNT
} vp_control;

/* learn.lr_schedule: the learning rate over the run's learner steps. */
typedef enum vp_lr_schedule {
    VP_LR_CONSTANT = 0,  /* learn.lr throughout */
    VP_LR_COSINE,        /* lr 0.5 (1 + cos(pi k / K)) over the run's K learner steps */
    VP_LR_WARMUP_COSINE, /* linear warm-up over learn.warmup_steps, then the cosine over the rest */
    VP_LR_SCHEDULE_COUNT
} vp_lr_schedule;

/* Bus, rules and schedule settings (the config's signals section and learn.lr_schedule). */
typedef struct vp_signals_cfg {
    int enable;            /* 1: the bus is written each learner step (any rule turns it on too) */
    int64_t every;         /* learner steps between rule applications (1 .. 10^6) */
    float fast_rate;       /* rate of the fast EMAs, (0, 1] */
    float slow_rate;       /* rate of the slow EMAs, (0, 1] */
    int adapt_tau;         /* 1: the tau rule */
    float tau_min, tau_max; /* its bounds, 0 < tau_min <= tau_max <= 1 */
    float div_ref;         /* Q divergence (in Q standard deviations) at which tau = learn.tau */
    int adapt_epsilon;     /* 1: the epsilon rule */
    float eps_gain;        /* epsilon scale per unit of TD trend */
    float eps_scale_min, eps_scale_max; /* bounds of the scale, 0 <= min <= max */
    int adapt_gamma;       /* 1: the gamma rule */
    float gamma;           /* learn.gamma: the discount the replay's n-step returns use (> 0 with the rule) */
    float gamma_min, gamma_max; /* bounds of the adapted gamma, in (0, 1] */
    float gamma_rate;      /* gamma step per unit of loss trend */
    int n_step;            /* learn.n_step: the exponent of gamma in each sample's discount */
    int kelly;             /* 1: the Kelly cap on the position size */
    float kelly_fraction;  /* fraction of the Kelly bet mu / sigma^2, > 0 */
    float kelly_min;       /* smallest cap, in [0, 1] */
    vp_lr_schedule lr_schedule; /* learning-rate schedule */
    int64_t warmup_steps;  /* warm-up learner steps of VP_LR_WARMUP_COSINE */
    int64_t total_steps;   /* K: learner steps of the run (train.iterations x train.train_steps) */
} vp_signals_cfg;

/* Everything off, the documented rates and bounds (docs/modules.md). */
vp_signals_cfg vp_signals_cfg_default(void);

/* Checks a configuration; the message names the bad field. */
vp_status vp_signals_cfg_check(const vp_signals_cfg* c);

/* 1 when the bus is written (signals.enable or any rule), else 0. */
int vp_signals_bus_on(const vp_signals_cfg* c);

/* Key of a bus slot in metrics.jsonl ("sig.loss_fast"); "(bad signal)" outside the table. */
const char* vp_signal_key(int s);

/* Meaning of a bus slot (one line); "" outside the table. */
const char* vp_signal_doc(int s);

/* The learning rate of the learner step with k steps before it (k >= 0), from lr0 and the
 * schedule of c: the same float the device writes into VP_CTL_LR. */
float vp_signals_lr_at(const vp_signals_cfg* c, float lr0, int64_t k);

#ifdef __cplusplus
}
#endif
#endif /* VULPES_SIGNALS_H */
