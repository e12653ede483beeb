/* Internal: PPO's kernels (the kit's pattern, backend/kit.h). ppo_kern.c checks the
 * arguments and calls the table of the backend's kind with raw pointers; the CPU loops
 * (ppo_cpu.c) and the CUDA kernels (ppo_cuda.cu) share the per-sample math of ppo_math.h. */
#ifndef VP_LEARN_PPO_IMPL_H
#define VP_LEARN_PPO_IMPL_H

#include "backend/kit.h"
#include "learn/ppo_math.h"
#include "vulpes/env.h"
#include "vulpes/ppo.h"
#include "vulpes/tensor.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Counters of the PPO state in backend memory, one int64 each (a [2 * VP_PPO_CTR_COUNT] i32 tensor). */
enum {
    VP_PPO_CTR_STEP = 0, /* collection steps taken (index of the sampling draws) */
    VP_PPO_CTR_EPOCH,    /* epochs begun (index of the permutations) */
    VP_PPO_CTR_COUNT
};

#ifdef __cplusplus
static_assert((int)VP_PPO_T_COUNT == (int)VP_PPO_STAT_COUNT, "the loss terms are the statistics");
#else
_Static_assert((int)VP_PPO_T_COUNT == (int)VP_PPO_STAT_COUNT, "the loss terms are the statistics");
#endif

/* Philox stream of the epochs' permutations (under the learner's seed; apart from the
 * encoder's and the heads' initialisation streams). */
#define VP_PPO_PERM_STREAM (0x5050ull << 52)

/* The rows of one collection step as the sample kernel writes them (row t * E + i of the
 * rollout buffer for env i). */
typedef struct vp_ppo_store_ptrs {
    int32_t* bar;      /* [E] decision bar of the observation */
    float* portfolio;  /* [E, P] its portfolio vector */
    int32_t* actions;  /* [E, 4] the sampled choices */
    float* logp;       /* [E] their joint log-probability */
    float* value;      /* [E] the value of the observation */
} vp_ppo_store_ptrs;

/* A minibatch's rows, gathered from the rollout buffer. */
typedef struct vp_ppo_rows {
    int32_t* bar;     /* [n] */
    float* portfolio; /* [n, P] */
    int32_t* actions; /* [n, 4] */
    float* logp;      /* [n] */
    float* value;     /* [n] */
    float* adv;       /* [n] */
    float* ret;       /* [n] */
} vp_ppo_rows;

/* ---- the kernels ---- */

/* Env i's choices sampled from logits [E, A] with the draw (seed, VP_COLLECT_STREAM + i,
 * ctr[VP_PPO_CTR_STEP]) into env_actions [E, 4] and out->actions, with out->logp; out->bar,
 * out->portfolio and out->value copied from bar, portfolio and value. */
typedef vp_status vp_ppo_sample_fn(vp_backend* b, int64_t E, uint64_t seed, const float* logits, const float* value,
                                   const int32_t* bar, const float* portfolio, const int64_t* ctr,
                                   int32_t* env_actions, vp_ppo_store_ptrs out);

/* ctr[which] += 1. */
typedef vp_status vp_ppo_tick_fn(vp_backend* b, int64_t* ctr, int which);

/* GAE of every env (vp_ppo_gae_env) over [T * E] rows. */
typedef vp_status vp_ppo_gae_fn(vp_backend* b, int64_t T, int64_t E, float gamma, float lambda, const float* reward,
                                const float* done, const float* value, const float* last_value, float* adv,
                                float* ret);

/* perm [n] = the permutation of epoch ctr[VP_PPO_CTR_EPOCH] (vp_ppo_perm_at of each row), then that
 * counter += 1. */
typedef vp_status vp_ppo_permute_fn(vp_backend* b, int64_t n, uint64_t seed, uint64_t stream, int64_t* ctr,
                                    int32_t* perm);

/* dst row k = src row idx[k] for k < n; then, with norm, dst->adv normalised by its moments. */
typedef vp_status vp_ppo_gather_fn(vp_backend* b, int64_t n, const int32_t* idx, vp_ppo_rows src, vp_ppo_rows dst,
                                   int norm);

/* Every sample's terms [M, VP_PPO_T_COUNT] and gradients d logits [M, A], d value [M]
 * (vp_ppo_sample_loss) from logits [M, A], value [M] and the minibatch rows. */
typedef vp_status vp_ppo_loss_fn(vp_backend* b, const vp_ppo_loss_dims* d, const float* logits, const float* value,
                                 vp_ppo_rows mb, float* terms, float* d_logits, float* d_value);

/* Every kernel by name, in table order. */
#define VP_PPO_KERNELS(X, f, i) X(f, i, sample) X(f, i, tick) X(f, i, gae) X(f, i, permute) X(f, i, gather) X(f, i, loss)

/* One backend's PPO kernels. */
typedef struct vp_ppo_kernels {
    VP_KERNEL_FIELDS(VP_PPO_KERNELS, vp_ppo)
} vp_ppo_kernels;

/* The table of b's kind into *out (ppo_kern.c); fails naming fn where there is none. */
vp_status vp_ppo_kernels_of(const char* fn, vp_backend* b, const vp_ppo_kernels** out);

/* The CPU loops (ppo_cpu.c). */
VP_KERNEL_DECLARE(VP_PPO_KERNELS, vp_ppo, vp_ppo_cpu)
extern const vp_ppo_kernels vp_ppo_cpu;

/* The CUDA launchers (ppo_cuda.cu; CUDA builds only). */
VP_KERNEL_DECLARE(VP_PPO_KERNELS, vp_ppo, vp_ppo_cuda)
extern const vp_ppo_kernels vp_ppo_cuda;

#ifdef __cplusplus
}
#endif
#endif /* VP_LEARN_PPO_IMPL_H */
