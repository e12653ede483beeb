/* What the tests of the data-parallel learner's equivalence share (test_dist_grad.c in one
 * process, test_dist_mpi.c under mpirun): a small learner config, a global batch of rows on
 * the host, and a learner holding rows [r0, r0 + n) of it with its gradient of that shard's
 * mean loss; the tolerance of docs/distributed.md ("Equivalence and its tolerance"). */
#ifndef VP_TEST_DIST_GRAD_UTIL_H
#define VP_TEST_DIST_GRAD_UTIL_H

#include "learn/learner_internal.h"
#include "vp_test.h"

enum { T_ROWS = 41, F = 5, P = 3, B = 24, NT = 3, NTT = 4, NB = 2 };

/* The tolerance of the averaged gradient, per element: |mean - single| <= ATOL_REL * max|single|
 * + RTOL * |single| (docs/distributed.md, "Equivalence"). */
#define GRAD_ATOL_REL 1e-5
#define GRAD_RTOL 1e-4

static inline vp_learner_cfg cfg_of(int64_t batch, int encoder) {
    vp_learner_cfg c = vp_learner_cfg_default();
    c.model.n_features = F;
    c.model.n_portfolio = P;
    c.model.window = 3;
    c.model.hidden = 8;
    c.model.encoder = encoder;
    c.model.mamba_state = 2;
    c.model.mamba_head_dim = 4;
    c.model.mamba_conv = 2;
    c.model.head_hidden = 6;
    c.model.n_atoms = 7;
    c.model.n_branches = NB;
    c.model.branch_sizes[0] = 2;
    c.model.branch_sizes[1] = 3;
    c.model.iqn_cos = 4;
    c.batch = batch;
    c.n_taus = NT;
    c.n_target_taus = NTT;
    c.adamw.lr = 1e-3f;
    c.seed = 11;
    return c;
}

/* The global batch's rows on the host. */
typedef struct global_rows {
    float feats[T_ROWS * F];
    int32_t bar[B], nbar[B], act[B * NB];
    float port[B * P], nport[B * P], reward[B], disc[B], w[B], taus[B * NT], ttaus[B * NTT];
} global_rows;

static inline void rows_make(global_rows* g) {
    for (int i = 0; i < T_ROWS * F; ++i) g->feats[i] = vp_rng_normal(5, 1, (uint64_t)i);
    for (int i = 0; i < B; ++i) {
        g->bar[i] = (int32_t)((7 * i + 1) % (T_ROWS - 3));
        g->nbar[i] = g->bar[i] + 3;
        g->act[i * NB + 0] = i % 2;
        g->act[i * NB + 1] = (i / 2) % 3;
        g->reward[i] = 0.5f * (float)(i % 3) - 0.4f + 0.01f * (float)i;
        g->disc[i] = i % 5 == 2 ? 0.0f : 0.970299f;
        g->w[i] = 0.5f + 0.03f * (float)i;
    }
    for (int e = 0; e < B * P; ++e) {
        g->port[e] = vp_rng_uniform(5, 2, (uint64_t)e) - 0.5f;
        g->nport[e] = vp_rng_uniform(5, 3, (uint64_t)e) - 0.5f;
    }
    for (int e = 0; e < B * NT; ++e) g->taus[e] = 0.02f + 0.96f * vp_rng_uniform(5, 4, (uint64_t)e);
    for (int e = 0; e < B * NTT; ++e) g->ttaus[e] = 0.02f + 0.96f * vp_rng_uniform(5, 5, (uint64_t)e);
}

/* A learner and its batch, holding rows [r0, r0 + n) of the global batch. */
typedef struct shard {
    vp_learner l;
    vp_batch bt;
} shard;

static inline int shard_init(shard* s, vp_backend* b, const global_rows* g, int64_t r0, int64_t n, int encoder) {
    memset(s, 0, sizeof *s);
    vp_learner_cfg c = cfg_of(n, encoder);
    if (vp_learner_init(&s->l, b, &c) != VP_OK || vp_learner_batch_init(&s->l, &s->bt) != VP_OK) {
        CHECK(0, "shard of %lld rows: %s", (long long)n, vp_last_error());
        return 0;
    }
    s->bt.features = vp_tensor_2d((void*)g->feats, VP_F32, VP_MEM_HOST, T_ROWS, F);
    memcpy(s->bt.bar_idx.data, g->bar + r0, (size_t)n * 4);
    memcpy(s->bt.next_bar_idx.data, g->nbar + r0, (size_t)n * 4);
    memcpy(s->bt.actions.data, g->act + r0 * NB, (size_t)(n * NB) * 4);
    memcpy(s->bt.portfolio.data, g->port + r0 * P, (size_t)(n * P) * 4);
    memcpy(s->bt.next_portfolio.data, g->nport + r0 * P, (size_t)(n * P) * 4);
    memcpy(s->bt.reward.data, g->reward + r0, (size_t)n * 4);
    memcpy(s->bt.discount.data, g->disc + r0, (size_t)n * 4);
    memcpy(s->bt.is_weight.data, g->w + r0, (size_t)n * 4);
    memcpy(s->bt.taus.data, g->taus + r0 * NT, (size_t)(n * NT) * 4);
    memcpy(s->bt.target_taus.data, g->ttaus + r0 * NTT, (size_t)(n * NTT) * 4);
    return 1;
}

/* Forward, loss and backward: the gradient of the shard's mean loss in model.grads. */
static inline int shard_grad(shard* s) {
    for (int ph = VP_PHASE_FORWARD; ph <= VP_PHASE_BACKWARD; ++ph) {
        vp_status st = vp_learner_run_phase(&s->l, (vp_learner_phase)ph, &s->bt, NULL);
        if (st != VP_OK) {
            CHECK(0, "phase %s: %s", vp_learner_phase_name((vp_learner_phase)ph), vp_last_error());
            return 0;
        }
    }
    return 1;
}

#endif /* VP_TEST_DIST_GRAD_UTIL_H */
