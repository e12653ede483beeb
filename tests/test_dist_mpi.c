/* The data-parallel training loop's parts. In any process: a rank's envs start where the
 * single process's envs of the same global index start, its share of the replay and batch,
 * and the refusals of a share that does not divide. Under mpirun on the CPU (more than one
 * rank; tests/test_cli_dist_mpi.sh runs it with 2 and 3): the MPI all-reduce equals the sum
 * in rank order bit for bit on every rank, the broadcast copies the root's data; the learner's
 * gradient of a global batch split over the ranks, through the real all-reduce, equals the
 * single learner's at the whole batch within docs/distributed.md's tolerance (and is the same
 * bits on every rank); and after a warm-up and three iterations of the loop every rank holds
 * the same parameters, target and AdamW moments bit for bit. */
#include <stdint.h>

#include "dist_grad_util.h"
#include "test_train_util.h"
#include "vulpes/algo.h"
#include "vulpes/dqn.h"

static vp_backend* g_b; /* under mpirun: this rank's CPU backend */
static vp_comm* g_comm;  /* and its MPI communicator */

/* Host arrays of every env state field for n envs (one block; free st->t). */
static int state_alloc(vp_env_state* st, int64_t n) {
    const size_t i4 = (size_t)n * 4, d8 = (size_t)n * 8;
    char* p = (char*)calloc(1, 6 * i4 + 6 * d8 + 16);
    if (!p) return 0;
    st->cash = (double*)p, st->equity = st->cash + n, st->peak = st->equity + n, st->entry = st->peak + n;
    st->take_profit = st->entry + n, st->stop_loss = st->take_profit + n;
    char* q = (char*)(st->stop_loss + n);
    st->t = (int32_t*)q, st->window_end = st->t + n, st->position = st->window_end + n;
    st->bars_held = st->position + n, st->episode = (uint32_t*)(st->bars_held + n);
    st->last_size = (float*)(st->episode + n);
    return 1;
}

/* Rank r of `ranks` made from the test config: its envs' first episodes are the single
 * process's envs r E / ranks .. (r + 1) E / ranks - 1, and its parts are its share. */
static void test_rank_share(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    const char* over[] = {"env.n_envs=6", "learn.batch=24", "replay.capacity=6000"};
    vp_config cfg;
    vp_train_data d;
    memset(&d, 0, sizeof d);
    if (!vpt_train_cfg(&cfg, 3, over) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "test config or data: %s", vp_last_error());
        vp_backend_free(b);
        return;
    }
    vp_trainer one, part;
    CHECK_OK(vp_trainer_init(&one, b, &cfg, &d));
    vp_env_state s1, sr;
    CHECK(state_alloc(&s1, 6) && state_alloc(&sr, 3), "out of memory");
    CHECK_OK(vp_env_state_get(&one.env, &s1));
    for (int r = 0; r < 2; ++r) {
        CHECK_OK(vp_trainer_init_rank(&part, b, &cfg, &d, r, 2));
        CHECK(part.env.n_envs == 3 && part.learner.cfg.batch == 12 &&
                  vp_replay_get_cfg(part.replay)->capacity == 3000 && part.cfg.env.n_envs == 6,
              "rank %d of 2: %lld envs, batch %lld, capacity %lld, run's envs %lld", r, (long long)part.env.n_envs,
              (long long)part.learner.cfg.batch, (long long)vp_replay_get_cfg(part.replay)->capacity,
              (long long)part.cfg.env.n_envs);
        CHECK_OK(vp_env_state_get(&part.env, &sr));
        for (int j = 0; j < 3; ++j)
            CHECK(sr.t[j] == s1.t[3 * r + j] && sr.window_end[j] == s1.window_end[3 * r + j] &&
                      sr.episode[j] == s1.episode[3 * r + j],
                  "rank %d env %d starts at bar %d (window end %d), the single process's env %d at %d (%d)", r, j,
                  (int)sr.t[j], (int)sr.window_end[j], 3 * r + j, (int)s1.t[3 * r + j], (int)s1.window_end[3 * r + j]);
        // rank 0 keeps the single process's keys, the others derive their own
        const int same = part.parts.collect.seed == one.parts.collect.seed &&
                         part.parts.replay.seed == one.parts.replay.seed;
        CHECK(r == 0 ? same : !same, "rank %d: collect key %llx, replay key %llx (single %llx, %llx)", r,
              (unsigned long long)part.parts.collect.seed, (unsigned long long)part.parts.replay.seed,
              (unsigned long long)one.parts.collect.seed, (unsigned long long)one.parts.replay.seed);
        vp_trainer_free(&part);
    }
    // the envs of two ranks are not the same envs (the comparison above can fail)
    CHECK(s1.t[0] != s1.t[3] || s1.t[1] != s1.t[4] || s1.t[2] != s1.t[5], "envs 0..2 and 3..5 start alike");
    CHECK_STATUS(vp_trainer_init_rank(&part, b, &cfg, &d, 0, 4), VP_ERR_INVALID_ARG,
                 "env.n_envs = 6 and learn.batch = 24 must both be divisible by the 4 ranks");
    CHECK_STATUS(vp_trainer_init_rank(&part, b, &cfg, &d, 2, 2), VP_ERR_INVALID_ARG, "rank 2 of 2");
    vp_config cur = cfg;
    cur.curiosity.enabled = 1;
    CHECK_STATUS(vp_trainer_init_rank(&part, b, &cur, &d, 0, 2), VP_ERR_UNSUPPORTED, "curiosity.enabled");
    vp_algo a;
    vp_config ppo = cfg;
    snprintf(ppo.train.algo, sizeof ppo.train.algo, "ppo");
    CHECK_STATUS(vp_algo_create_rank(&a, &ppo, b, &d, VP_ALGO_TRAIN, 0, 2), VP_ERR_UNSUPPORTED,
                 "train.algo ppo has no data-parallel learner");
    free(s1.cash), free(sr.cash);
    vp_trainer_free(&one);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

/* Under mpirun: the all-reduce is the rank-order sum (values whose float sum depends on the
 * order), bit for bit; the broadcast from the last rank. */
static void test_mpi_collectives(void) {
    vp_comm* c = g_comm;
    const int n = vp_comm_size(c), r = vp_comm_rank(c);
    enum { N = 7 };
    float x[N], want[N];
    // rank k's element i: large and small values whose sum in another order rounds otherwise
    for (int i = 0; i < N; ++i) {
        want[i] = 0.0f;
        for (int k = 0; k < n; ++k) {
            const float v = (k % 2 ? -1.0f : 1.0f) * (k == 0 ? 1e8f : 1.0f) * (float)(i + 1) + 0.3f * (float)k;
            if (k == r) x[i] = v;
            want[i] = k == 0 ? v : want[i] + v;
        }
    }
    vp_tensor t = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, N);
    CHECK_OK(vp_comm_allreduce_sum(c, &t));
    for (int i = 0; i < N; ++i)
        CHECK(memcmp(&x[i], &want[i], sizeof x[i]) == 0, "rank %d of %d: sum[%d] = %.9g, rank order gives %.9g", r, n,
              i, (double)x[i], (double)want[i]);
    for (int i = 0; i < N; ++i) x[i] = (float)(r * 100 + i);
    CHECK_OK(vp_comm_broadcast(c, &t, n - 1));
    for (int i = 0; i < N; ++i)
        CHECK(x[i] == (float)((n - 1) * 100 + i), "rank %d: broadcast[%d] = %g, root %d sent %d", r, i, (double)x[i],
              n - 1, (n - 1) * 100 + i);
    int flag = r == n - 1 ? 3 : r;
    CHECK_OK(vp_comm_agree_max(c, &flag));
    CHECK(flag == (n - 1 > 3 ? n - 1 : 3), "rank %d: agreed %d", r, flag);
}

/* Copies a tensor of host memory, broadcasts rank 0's copy and compares it with this rank's. */
static int same_as_rank0(vp_comm* c, const vp_tensor* x) {
    const int64_t n = vp_tensor_numel(x);
    float* y = (float*)malloc((size_t)n * sizeof *y);
    if (!y) return 0;
    memcpy(y, x->data, (size_t)n * sizeof *y);
    vp_tensor t = vp_tensor_1d(y, VP_F32, VP_MEM_HOST, n);
    int ok = vp_comm_broadcast(c, &t, 0) == VP_OK && memcmp(y, x->data, (size_t)n * sizeof *y) == 0;
    free(y);
    return ok;
}

/* Under mpirun: rank k's learner takes rows [k B/N, (k+1) B/N) of the global batch; after its
 * forward, loss, backward and the all-reduce of vp_learner_allreduce_grads (MPI's, through the
 * communicator), its gradient equals the single learner's at B within the tolerance. */
static void test_mpi_first_step_gradient(void) {
    const int n = vp_comm_size(g_comm), r = vp_comm_rank(g_comm);
    static global_rows g;
    rows_make(&g);
    shard one, mine;
    const int64_t per = B / n;
    int ok = shard_init(&one, g_b, &g, 0, B, VP_ENCODER_MAMBA2) && shard_grad(&one) &&
             shard_init(&mine, g_b, &g, r * per, per, VP_ENCODER_MAMBA2);
    if (ok) ok = vp_learner_set_comm(&mine.l, g_comm) == VP_OK && shard_grad(&mine) &&
                 vp_learner_allreduce_grads(&mine.l) == VP_OK;
    CHECK(ok, "rank %d: %s", r, vp_last_error());
    if (ok) {
        const int64_t W = one.l.model.n_weights;
        const float* g1 = (const float*)one.l.model.grads.data;
        const float* gr = (const float*)mine.l.model.grads.data;
        double gmax = 0.0, worst = 0.0;
        for (int64_t i = 0; i < W; ++i) gmax = fmax(gmax, fabs((double)g1[i]));
        CHECK(gmax > 1e-6, "the single gradient is zero (max %g): the test cannot fail", gmax);
        int64_t bad = 0;
        for (int64_t i = 0; i < W; ++i) {
            const double err = fabs((double)gr[i] - (double)g1[i]);
            if (err > GRAD_ATOL_REL * gmax + GRAD_RTOL * fabs((double)g1[i])) ++bad;
            worst = fmax(worst, err / gmax);
        }
        CHECK(bad == 0, "rank %d of %d: %lld of %lld gradient elements outside the tolerance (worst %.3g of max|g|)", r,
              n, (long long)bad, (long long)W, worst);
        CHECK(same_as_rank0(g_comm, &mine.l.model.grads), "rank %d: the all-reduced gradient is not rank 0's bits", r);
        if (r == 0)
            fprintf(stderr, "  %d ranks through MPI: %lld weights, max |g| %.3g, worst error %.3g of max |g|\n", n,
                    (long long)W, gmax, worst);
    }
    vp_learner_free(&mine.l);
    vp_learner_free(&one.l);
}

/* Under mpirun: each rank trains its share through the algorithm table; after three
 * iterations the parameters, target and moments are rank 0's bit for bit, and they moved. */
static void test_mpi_ranks_stay_equal(void) {
    vp_backend* b = g_b;
    vp_comm* c = g_comm;
    const int n = vp_comm_size(c), r = vp_comm_rank(c);
    char envs[32], batch[32];
    snprintf(envs, sizeof envs, "env.n_envs=%d", 2 * n);
    snprintf(batch, sizeof batch, "learn.batch=%d", 8 * n);
    const char* over[] = {envs, batch};
    vp_config cfg;
    vp_train_data d;
    memset(&d, 0, sizeof d);
    if (!vpt_train_cfg(&cfg, 2, over) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "test config or data: %s", vp_last_error());
        return;
    }
    vp_algo a;
    CHECK_OK(vp_algo_create_rank(&a, &cfg, b, &d, VP_ALGO_TRAIN, r, n));
    CHECK_OK(vp_algo_set_comm(&a, c));
    const vp_trainer* t = (const vp_trainer*)a.impl;
    const vp_learner* l = &t->learner;
    float* p0 = (float*)malloc((size_t)l->model.n_weights * sizeof *p0);
    if (p0) memcpy(p0, l->model.params.data, (size_t)l->model.n_weights * sizeof *p0);
    CHECK(same_as_rank0(c, &l->model.params), "rank %d: parameters differ from rank 0's at the start", r);
    CHECK_OK(vp_algo_warmup(&a));
    CHECK_OK(vp_algo_iterate(&a, 3));
    CHECK(a.count.learner_steps == 3 && a.count.env_steps == (t->count.warmup_steps + 3 * 2) * 2 * n,
          "rank %d: counters %lld learner steps, %lld env steps", r, (long long)a.count.learner_steps,
          (long long)a.count.env_steps);
    CHECK(same_as_rank0(c, &l->model.params), "rank %d: parameters differ from rank 0's after 3 steps", r);
    CHECK(same_as_rank0(c, &l->target), "rank %d: target differs from rank 0's", r);
    CHECK(same_as_rank0(c, &l->adam_m) && same_as_rank0(c, &l->adam_v), "rank %d: AdamW moments differ", r);
    CHECK(p0 && memcmp(p0, l->model.params.data, (size_t)l->model.n_weights * sizeof *p0) != 0,
          "rank %d: the parameters did not move", r);
    free(p0);
    vp_algo_free(&a);
    vp_train_data_free(&d);
}

int main(void) {
    vp_dist dist;
    if (vp_dist_from_env(&dist) != VP_OK) {
        fprintf(stderr, "rank variables: %s\n", vp_last_error());
        return 1;
    }
    if (dist.rank == 0) RUN_TEST(test_rank_share);
    if (dist.size > 1) {
        if (vp_backend_cpu_init(&g_b) != VP_OK || vp_comm_init(&g_comm, &dist, g_b, NULL) != VP_OK) {
            fprintf(stderr, "rank %d of %d: %s\n", dist.rank, dist.size, vp_last_error());
            return 1;
        }
        RUN_TEST(test_mpi_collectives);
        RUN_TEST(test_mpi_first_step_gradient);
        RUN_TEST(test_mpi_ranks_stay_equal);
        vp_comm_free(g_comm);
        vp_backend_free(g_b);
    } else {
        printf("one process: the MPI checks run under mpirun (tests/test_cli_dist_mpi.sh)\n");
    }
    return vpt_finish();
}
