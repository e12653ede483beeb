/* Helpers shared by the loss tests (test_loss.c, test_loss_grad.c): host tensor views,
 * loss dimensions from branch sizes, and a batch of host arrays as a vp_loss_batch. */
#ifndef VP_TEST_LOSS_UTIL_H
#define VP_TEST_LOSS_UTIL_H

#include "learn/loss.h"
#include "vp_test.h"

/* A host tensor view [n] (the CPU backend reads host memory). */
static inline vp_tensor tlu_t1(void* p, vp_dtype dt, int64_t n) { return vp_tensor_1d(p, dt, VP_MEM_HOST, n); }

/* A host tensor view [r, c]. */
static inline vp_tensor tlu_t2(void* p, vp_dtype dt, int64_t r, int64_t c) {
    return vp_tensor_2d(p, dt, VP_MEM_HOST, r, c);
}

/* A host tensor view [a, b, c] of floats. */
static inline vp_tensor tlu_f3(float* p, int64_t a, int64_t b, int64_t c) {
    return vp_tensor_3d(p, VP_F32, VP_MEM_HOST, a, b, c);
}

/* Loss dims of batch B for `nb` branches of sizes [nb], Z atoms on [vmin, vmax], N online
 * and M target taus; fails the current test when they are refused. */
static inline vp_loss_dims tlu_dims(int64_t B, int nb, const int* sizes, int Z, float vmin, float vmax, int N,
                                    int M) {
    vp_model_cfg mc;
    memset(&mc, 0, sizeof mc);
    mc.n_branches = nb;
    for (int i = 0; i < nb; ++i) mc.branch_sizes[i] = sizes[i];
    mc.n_atoms = Z;
    mc.v_min = vmin;
    mc.v_max = vmax;
    vp_loss_dims d;
    vp_status s = vp_loss_dims_make(&d, &mc, B, N, M, 1.0f);
    CHECK(s == VP_OK, "dims: %s", vp_last_error());
    return d;
}

/* Host views of a batch's arrays and the vp_loss_batch pointing at them (it points into
 * this struct: do not copy it). */
typedef struct tlu_batch {
    vp_tensor act, next;      /* [B, NB] i32 */
    vp_tensor reward, disc, w; /* [B] f32 */
    vp_loss_batch b;
} tlu_batch;

/* Fills `t` with views of act, next [B * NB] and reward, disc, w [B]. */
static inline void tlu_batch_init(tlu_batch* t, int64_t B, int NB, int32_t* act, int32_t* next, float* reward,
                                  float* disc, float* w) {
    t->act = tlu_t2(act, VP_I32, B, NB);
    t->next = tlu_t2(next, VP_I32, B, NB);
    t->reward = tlu_t1(reward, VP_F32, B);
    t->disc = tlu_t1(disc, VP_F32, B);
    t->w = tlu_t1(w, VP_F32, B);
    vp_loss_batch b = {&t->act, &t->next, &t->reward, &t->disc, &t->w, NULL, NULL, NULL};
    t->b = b;
}

/* vp_loss_c51 on host arrays, checked: online and target log-probs lp, tlp [B, A, Z],
 * projected targets proj [B, NB, Z], per-sample loss [B], gradient dlp [B, A, Z]. */
static inline void tlu_c51(vp_backend* be, const vp_loss_dims* d, const vp_loss_batch* bt, int64_t B, int A, int NB,
                           int Z, float* lp, float* tlp, float* proj, float* loss, float* dlp) {
    vp_tensor tl = tlu_f3(lp, B, A, Z), tt = tlu_f3(tlp, B, A, Z), tp = tlu_f3(proj, B, NB, Z);
    vp_tensor tls = tlu_t1(loss, VP_F32, B), tg = tlu_f3(dlp, B, A, Z);
    CHECK_OK(vp_loss_c51(be, d, bt, &tl, &tt, &tp, &tls, &tg));
}

#endif /* VP_TEST_LOSS_UTIL_H */
