/* Internal: the replay ring's layout in backend memory and the per-backend entry
 * points. Plain C structs shared by replay.c, replay_cpu.c and replay_cuda.cu; the
 * public entry points (replay.c) check every argument before calling these. */
#ifndef VULPES_REPLAY_IMPL_H
#define VULPES_REPLAY_IMPL_H

#include <stdint.h>

#include "backend/kit.h"
#include "vulpes/replay.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Levels of the priority sum tree above the leaves (capacity < 2^31). */
#define VP_REPLAY_MAX_LEVELS 33
/* Envs per tile of the CPU push's two-level prefix sum (its scratch layout, replay.c). */
#define VP_REPLAY_SCAN_TILE 4096

/* Counters kept in backend memory, changed only by the ring's kernels. */
typedef struct vp_replay_ctrl {
    int64_t head;        /* next slot to write */
    int64_t size;        /* transitions stored */
    int64_t sample_step; /* sample calls so far */
    int64_t pushes;      /* push calls so far */
    int64_t emitted;     /* transitions written so far */
    int64_t base;        /* head before the current push (push scratch) */
    float max_priority;  /* running max of stored priorities */
    float beta;          /* beta of the last sample */
    float total;         /* priority mass of the last sample */
    int32_t pad;         /* keeps the size a multiple of 8 */
} vp_replay_ctrl;

/* The ring as kernels see it: sizes, hyper-parameters and backend pointers. Passed by
 * value to every kernel (C = capacity, E = n_envs, n = n_step, P, NB as in the cfg). */
typedef struct vp_replay_dev {
    int64_t cap;         /* C */
    int n_envs;          /* E */
    int n_port;          /* P */
    int n_branch;        /* NB */
    int n_step;          /* n */
    float gamma;         /* per-step discount */
    int prioritized;     /* PER on */
    int intrinsic;       /* transitions keep an n-step intrinsic return (rew_int, p_rew_int) */
    int her;             /* hindsight relabelling: portfolio entry P - 1 is the goal (replay_her.h) */
    float her_ratio;     /* probability a sampled row of a finished episode is relabelled */
    float her_lambda;    /* weight of the goal term */
    int her_tab;         /* T: finished episodes each env's table remembers */
    float alpha;         /* priority exponent */
    float eps;           /* priority epsilon */
    float beta0;         /* IS exponent at step 0 */
    int64_t beta_steps;  /* annealing length */
    uint64_t seed;       /* Philox key */
    uint64_t stream;     /* Philox stream */
    int depth;           /* sum-tree levels above the leaves (0 when C == 1) */
    int64_t level_off[VP_REPLAY_MAX_LEVELS]; /* offset of level k >= 1 in `tree` */

    /* the ring */
    int32_t* bar;        /* [C] */
    int32_t* next_bar;   /* [C] */
    int32_t* wend;       /* [C] */
    float* port;         /* [C, P] */
    float* next_port;    /* [C, P] */
    int32_t* act;        /* [C, NB] */
    float* rew;          /* [C] n-step extrinsic return */
    float* rew_int;      /* [C] n-step intrinsic return (NULL unless intrinsic) */
    float* port1;        /* [C, P] portfolio vector of s_{t+1} (NULL unless intrinsic) */
    float* done1;        /* [C] 1 where step t itself ended the episode, else 0 (NULL unless intrinsic) */
    float* goal_w;       /* [C] weight of the goal term in the n-step return, 0 when the window does not
                            reach the episode's end (NULL unless her) */
    int32_t* ep_env;     /* [C] env that wrote the slot (NULL unless her) */
    int32_t* ep_id;      /* [C] the slot's episode number within its env (NULL unless her) */
    float* disc;         /* [C] */
    int32_t* done;       /* [C] */
    float* prio;         /* [C] sum-tree leaves */
    float* tree;         /* [sum_k ceil(C / 2^k), k = 1..depth] inner nodes, level by level */
    int32_t* owner;      /* [C] last batch position updating a slot (-1 when none) */

    /* pending windows, slot-major so that env e's accesses coalesce */
    int32_t* p_count;    /* [E] pending steps */
    int32_t* p_start;    /* [E] slot of the oldest pending step */
    int32_t* p_bar;      /* [n, E] */
    int32_t* p_wend;     /* [n, E] */
    float* p_port;       /* [n, E, P] */
    int32_t* p_act;      /* [n, E, NB] */
    float* p_rew;        /* [n, E] */
    float* p_rew_int;    /* [n, E] intrinsic rewards of the pending steps (NULL unless intrinsic) */
    float* p_port1;      /* [n, E, P] next portfolio vector of each pending step (NULL unless intrinsic) */
    float* p_ret;        /* [E] reward sum of the env's current episode so far (NULL unless her) */
    int32_t* p_ep;       /* [E] the env's finished episodes = the current episode's number (NULL unless her) */
    float* tab_ret;      /* [T, E] achieved return of finished episodes, row id mod T (NULL unless her) */
    int32_t* tab_id;     /* [T, E] episode number each row holds, -1 when none (NULL unless her) */
    /* push scratch, rewritten by every push: on the CPU, env e's first transition's ring
     * offset within its tile and each tile's offset from base; on CUDA, emit_off holds the
     * one-pass push's block states instead (replay_cuda.cu) and tile_off is unused */
    int32_t* emit_off;   /* [E] */
    int32_t* tile_off;   /* [ceil(E / VP_REPLAY_SCAN_TILE)] */

    vp_replay_ctrl* ctrl; /* [1] counters */
} vp_replay_dev;

/* Raw pointers of a push's inputs (shapes as in vp_replay_step). */
typedef struct vp_replay_step_dev {
    const int32_t* bar;       /* [E] */
    const int32_t* wend;      /* [E] */
    const float* port;        /* [E, P] */
    const int32_t* act;       /* [E, NB] */
    const float* rew;         /* [E] */
    const void* done;         /* [E] i32 codes or f32 (done_f32) */
    const int32_t* next_bar;  /* [E] */
    const float* next_port;   /* [E, P] */
    const float* rew_int;     /* [E] intrinsic rewards (NULL: 0) */
    int done_f32;             /* `done` holds floats */
} vp_replay_step_dev;

/* Raw pointers of a sampled batch (shapes as in vp_replay_batch). */
typedef struct vp_replay_batch_dev {
    int64_t n;                /* B */
    int32_t* idx;             /* [B] */
    int32_t* bar;             /* [B] */
    int32_t* next_bar;        /* [B] */
    float* port;              /* [B, P] */
    float* next_port;         /* [B, P] */
    int32_t* act;             /* [B, NB] */
    float* rew;               /* [B] */
    float* disc;              /* [B] */
    float* w;                 /* [B] */
    float* rew_int;           /* [B] intrinsic part of rew (NULL: not written) */
    float* port1;             /* [B, P] portfolio vector of s_{t+1} (NULL: not written) */
    float* done1;             /* [B] 1 where step t ended its episode (NULL: not written) */
    float* rew_goal;          /* [B] goal term of rew (HER rings; NULL: not written) */
    int32_t* relabelled;      /* [B] 1 where the row's goal was relabelled (HER rings; NULL: not written) */
} vp_replay_batch_dev;

/* ---- a restored ring's checks ----------------------------------------------------------------- */

/* What a restored ring must agree with: the bar span its indices come from, the action
 * branches, the counters of the run and (optionally) the envs whose pending steps it holds. */
typedef struct vp_replay_expect {
    int64_t bar_begin, bar_end;  /* every stored bar index in [bar_begin, bar_end) */
    const int* action_size;      /* [n_branches] choices of each branch */
    int64_t pushes;              /* push calls the ring has seen */
    int64_t samples;             /* sample calls the ring has seen */
    const int32_t* env_t;        /* [E] each env's decision bar now (NULL: pending steps unchecked against the envs) */
    const int32_t* env_wend;     /* [E] each env's window end */
    int32_t episode_bars;        /* steps of a full episode (the envs' windows) */
} vp_replay_expect;

/* Checks every counter, pending window and stored slot of the ring's memory (as a checkpoint
 * restored it) against its invariants and `x`, before any kernel uses it; the message names
 * the field, the slot or env, the value and the allowed range (VP_ERR_PARSE). */
vp_status vp_replay_check_state(vp_replay* r, const vp_replay_expect* x);

/* Checks a host copy of a ring's block (h's pointers into it) as vp_replay_check_state does
 * (replay_check.c). */
vp_status vp_replay_check_host(const vp_replay_dev* h, const vp_replay_expect* x);

/* The ring as kernels see it (tests and checks). */
const vp_replay_dev* vp_replay_dev_get(const vp_replay* r);

/* ---- the kernels: arguments checked by replay.c ------------------------------------------ */

/* Push of one step of every env (vp_replay_push). */
typedef vp_status vp_replay_push_fn(vp_backend* b, const vp_replay_dev* d, const vp_replay_step_dev* s);

/* Sample of a batch (vp_replay_sample). */
typedef vp_status vp_replay_sample_fn(vp_backend* b, const vp_replay_dev* d, const vp_replay_batch_dev* o);

/* Priority update (vp_replay_update_priorities); idx, loss [n]. */
typedef vp_status vp_replay_update_fn(vp_backend* b, const vp_replay_dev* d, const int32_t* idx, const float* loss,
                                      int64_t n);

/* Every kernel by name, in table order (the kit's list form, backend/kit.h). */
#define VP_REPLAY_KERNELS(X, f, i) X(f, i, push) X(f, i, sample) X(f, i, update)

/* One backend's replay kernels. */
typedef struct vp_replay_kernels {
    VP_KERNEL_FIELDS(VP_REPLAY_KERNELS, vp_replay)
} vp_replay_kernels;

/* The CPU loops, vp_replay_cpu_<kernel>, and their table (replay_cpu.c). */
VP_KERNEL_DECLARE(VP_REPLAY_KERNELS, vp_replay, vp_replay_cpu)
extern const vp_replay_kernels vp_replay_cpu;

/* The CUDA launchers, vp_replay_cuda_<kernel>, on the backend's stream, and their table
 * (replay_cuda.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_REPLAY_KERNELS, vp_replay, vp_replay_cuda)
extern const vp_replay_kernels vp_replay_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VULPES_REPLAY_IMPL_H */
