/* Helpers of the replay ring's CPU tests: host arrays viewed as the tensors of one push
 * or one sampled batch (the CPU backend reads host memory), and a small seeded PRNG. */
#ifndef VP_TEST_REPLAY_UTIL_H
#define VP_TEST_REPLAY_UTIL_H

#include "vp_test.h"
#include "vulpes/replay.h"

#define RT_MAX_ENVS 64
#define RT_MAX_P 8
#define RT_MAX_NB 8
#define RT_MAX_B 1024

/* One step of E envs in host memory. */
typedef struct rt_step {
    int E, P, NB;
    int32_t bar[RT_MAX_ENVS], wend[RT_MAX_ENVS], done[RT_MAX_ENVS], next_bar[RT_MAX_ENVS];
    int32_t act[RT_MAX_ENVS * RT_MAX_NB];
    float rew[RT_MAX_ENVS], port[RT_MAX_ENVS * RT_MAX_P], next_port[RT_MAX_ENVS * RT_MAX_P];
} rt_step;

/* The push tensors over a host step. */
static inline vp_replay_step rt_step_view(rt_step* s) {
    vp_replay_step v;
    memset(&v, 0, sizeof v); /* optional fields (the intrinsic ones) absent */
    v.bar_idx = vp_tensor_1d(s->bar, VP_I32, VP_MEM_HOST, s->E);
    v.window_end = vp_tensor_1d(s->wend, VP_I32, VP_MEM_HOST, s->E);
    v.portfolio = vp_tensor_2d(s->port, VP_F32, VP_MEM_HOST, s->E, s->P);
    v.action = vp_tensor_2d(s->act, VP_I32, VP_MEM_HOST, s->E, s->NB);
    v.reward = vp_tensor_1d(s->rew, VP_F32, VP_MEM_HOST, s->E);
    v.done = vp_tensor_1d(s->done, VP_I32, VP_MEM_HOST, s->E);
    v.next_bar_idx = vp_tensor_1d(s->next_bar, VP_I32, VP_MEM_HOST, s->E);
    v.next_portfolio = vp_tensor_2d(s->next_port, VP_F32, VP_MEM_HOST, s->E, s->P);
    return v;
}

/* One sampled batch of B rows in host memory. */
typedef struct rt_batch {
    int B, P, NB;
    int32_t idx[RT_MAX_B], bar[RT_MAX_B], next_bar[RT_MAX_B], act[RT_MAX_B * RT_MAX_NB];
    float port[RT_MAX_B * RT_MAX_P], next_port[RT_MAX_B * RT_MAX_P], rew[RT_MAX_B], disc[RT_MAX_B], w[RT_MAX_B];
} rt_batch;

/* The batch tensors over a host batch. */
static inline vp_replay_batch rt_batch_view(rt_batch* o) {
    vp_replay_batch v;
    memset(&v, 0, sizeof v); /* optional fields (the intrinsic ones) absent */
    v.indices = vp_tensor_1d(o->idx, VP_I32, VP_MEM_HOST, o->B);
    v.bar_idx = vp_tensor_1d(o->bar, VP_I32, VP_MEM_HOST, o->B);
    v.next_bar_idx = vp_tensor_1d(o->next_bar, VP_I32, VP_MEM_HOST, o->B);
    v.portfolio = vp_tensor_2d(o->port, VP_F32, VP_MEM_HOST, o->B, o->P);
    v.next_portfolio = vp_tensor_2d(o->next_port, VP_F32, VP_MEM_HOST, o->B, o->P);
    v.actions = vp_tensor_2d(o->act, VP_I32, VP_MEM_HOST, o->B, o->NB);
    v.reward = vp_tensor_1d(o->rew, VP_F32, VP_MEM_HOST, o->B);
    v.discount = vp_tensor_1d(o->disc, VP_F32, VP_MEM_HOST, o->B);
    v.is_weight = vp_tensor_1d(o->w, VP_F32, VP_MEM_HOST, o->B);
    return v;
}

/* A small configuration for tests: PER, alpha 1 and eps 0 (stored priority = loss). */
static inline vp_replay_cfg rt_cfg(int64_t capacity, int n_envs, int n_step, float gamma) {
    vp_replay_cfg c = vp_replay_cfg_default();
    c.capacity = capacity;
    c.n_envs = n_envs;
    c.n_step = n_step;
    c.gamma = gamma;
    c.n_portfolio = 2;
    c.n_branches = 3;
    c.alpha = 1.0f;
    c.priority_eps = 0.0f;
    c.seed = 1234;
    return c;
}

/* A ring on backend `b` with configuration `c`; NULL (and a failed check) when init fails. */
static inline vp_replay* rt_ring(vp_backend* b, vp_replay_cfg c) {
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, b, &c));
    return r;
}

/* Pushes the host step `s` into `r` (checked). */
static inline void rt_push(vp_replay* r, rt_step* s) {
    vp_replay_step v = rt_step_view(s);
    CHECK_OK(vp_replay_push(r, &v));
}

/* xorshift64*: a seeded test PRNG. */
static inline uint64_t rt_next(uint64_t* s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 0x2545F4914F6CDD1DULL;
}

/* An integer in [0, n). */
static inline int rt_int(uint64_t* s, int n) { return (int)((rt_next(s) >> 33) % (uint64_t)n); }

/* Fills the host step with n-th step data for env e: bar, window end, portfolio, action. */
static inline void rt_fill_env(rt_step* s, int e, int32_t bar, float seed) {
    s->bar[e] = bar;
    s->wend[e] = bar + 1000;
    s->next_bar[e] = bar + 1;
    for (int k = 0; k < s->P; ++k) {
        s->port[e * s->P + k] = seed + 0.125f * (float)k;
        s->next_port[e * s->P + k] = seed + 0.5f + 0.125f * (float)k;
    }
    for (int k = 0; k < s->NB; ++k) s->act[e * s->NB + k] = (bar + k) % 3;
}

#endif /* VP_TEST_REPLAY_UTIL_H */
