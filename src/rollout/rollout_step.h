/* Internal: the per-window math of the rollout's sequential part, written once (VP_HD) for
 * the CPU loops (rollout_cpu.c), the CUDA kernels (rollout_cuda.cu) and the baselines'
 * host loop (rollout_baseline.c): the portfolio vector, one step through the environment's
 * own step function with the rollout's window rules (the last step flat; the ruin rule),
 * and the log of the step (state, the environment's fills, the choice's margin). */
#ifndef VP_ROLLOUT_STEP_H
#define VP_ROLLOUT_STEP_H

#include <stdint.h>

#include "env/env_step.h"
#include "vulpes/action.h"
#include "vulpes/defs.h"

/* Constants of one run, passed by value. Bar indices are relative to the span's first bar. */
typedef struct vp_ro_dims {
    vp_env_params env;              /* the step's constants; the environment's own ruin off (ruin_level -inf) */
    double ruin_level;              /* the rollout's: ruin_fraction x initial_equity, currency (>= 0) */
    int64_t n_windows;              /* N */
    int64_t n_rows;                 /* decision rows of the encoding: b - a - 1 */
    int hidden;                     /* H: width of an encoding row */
    vp_action_layout layout;        /* branches and where their heads sit in a score row of A */
    int forced;                     /* 1: actions from the forced table instead of the Q rows */
} vp_ro_dims;

/* Per-window bookkeeping, [N] each, in the backend's memory. */
typedef struct vp_ro_windows {
    int32_t* steps;    /* decisions of the window (L_w >= 1) */
    int32_t* offset;   /* index of its first point in the records */
    int32_t* last;     /* relative bar of its last point (the window's end) */
    int32_t* alive;    /* 1 until it has ended (its last step, or the close-out after a ruin) */
    int32_t* ruin;     /* the step at whose close equity was at or below the ruin level (-1: none) */
    vp_env_fill_rec* fill; /* the fills of the window's last step, as the environment's step wrote them */
    float* reward;     /* the environment's reward of the window's last step, NaN at a step it did not take (what a
                          policy with memory observes) */
} vp_ro_windows;

/* The per-point log, [P] each (action [P, 4]), in the backend's memory. Point offset + k + 1
 * holds the state after the window's step k; its first point is written by the host. */
typedef struct vp_ro_records {
    int32_t* position;    /* contracts */
    int32_t* bars_held;   /* bars the position has been open */
    int32_t* action;      /* [P, 4] the choices decided at the point's bar */
    double* cash;         /* currency */
    double* equity;       /* currency */
    double* entry;        /* price units (0 flat) */
    double* take_profit;  /* price units (0 none) */
    double* stop_loss;    /* price units (0 none) */
    double* margin;       /* Q margin of the choice decided at the point's bar (vp_action_greedy_margin;
                             VP_RO_NO_MARGIN: none, or forced) */
    vp_env_fill_rec* fill;    /* [P] the fills of the step decided at the point's bar (the environment's own) */
} vp_ro_records;

/* The margin logged for a choice that no scores decided (forced actions, or none). */
#define VP_RO_NO_MARGIN (-1.0)

/* Writes window i's portfolio vector: the environment's, with the true window end for the
 * time left (the environment caps bars held and time left at one episode length). */
VP_HD void vp_ro_portfolio(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s,
                           const vp_ro_windows* w, int64_t i, float* out /* [8] */) {
    vp_env_view v = vp_env_view_of(s, i);
    v.window_end = w->last[i];
    vp_env_portfolio(&d->env, bars, &v, out);
}

/* Whether window i takes a step at step k. */
VP_HD int vp_ro_active(const vp_ro_windows* w, int64_t i, int32_t k) { return w->alive[i] && k < w->steps[i]; }

/* Step k of window i under choices a [4], the environment's own step with the window rules:
 * the last step of a window and the step after a ruin close go flat (the environment's
 * window-end close; the stored window end lies one bar beyond, so it never restarts an
 * episode). After the step, a close at or below the ruin level (or not a number) marks the
 * ruin; the close-out step after it ends the window. scratch [N, 4] holds the action the
 * step reads. */
VP_HD void vp_ro_step(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                      int32_t* scratch /* [N, 4] */, int32_t k, int64_t i, const int32_t* a /* [4] */) {
    int32_t* act = scratch + i * VP_ENV_BRANCHES;
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) act[br] = a[br];
    const int closing_out = w->ruin[i] >= 0;
    if (closing_out || k + 1 == w->steps[i]) act[0] = VP_ENV_DIR_FLAT;
    vp_env_outs o = {w->reward, 0, 0, 0, w->fill};
    vp_env_step_index(&d->env, bars, s, scratch, &o, i);
    if (closing_out) w->alive[i] = 0;
    else if (!(s->equity[i] > d->ruin_level)) w->ruin[i] = k;
}

/* Logs step k of window i: the choices a [4] made at its bar and their margin, the state at
 * the next close. */
VP_HD void vp_ro_log(const vp_env_state* s, const vp_ro_windows* w, const vp_ro_records* r, int32_t k, int64_t i,
                     const int32_t* a /* [4] */, double margin) {
    int64_t p = (int64_t)w->offset[i] + k;
    for (int br = 0; br < VP_ENV_BRANCHES; ++br) r->action[p * VP_ENV_BRANCHES + br] = a[br];
    r->margin[p] = margin;
    r->fill[p] = w->fill[i];
    p += 1;
    r->position[p] = s->position[i];
    r->bars_held[p] = s->bars_held[i];
    r->cash[p] = s->cash[i];
    r->equity[p] = s->equity[i];
    r->entry[p] = s->entry[i];
    r->take_profit[p] = s->take_profit[i];
    r->stop_loss[p] = s->stop_loss[i];
}

#endif /* VP_ROLLOUT_STEP_H */
