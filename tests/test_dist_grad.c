/* The data-parallel learner's equivalence on the CPU. One learner at the global batch B and N
 * learners at B / N, from the same seed, are fed the same transitions (shard k gets rows
 * [kB/N, (k+1)B/N) with their taus rows); after the forward, loss and backward phases the
 * mean of the N gradient buffers, summed in rank order and scaled by 1 / N as the all-reduce
 * does, equals the single gradient within the tolerance of docs/distributed.md. A learner
 * with a one-rank communicator attached steps bit for bit as one without. */
#include "dist_grad_util.h"

/* N shards against the single learner for one encoder. */
static void check_ranks(int n_ranks, int encoder) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    static global_rows g;
    rows_make(&g);
    shard one, ranks[4];
    int ok = shard_init(&one, b, &g, 0, B, encoder) && shard_grad(&one);
    const int64_t W = one.l.model.n_weights, per = B / n_ranks;
    int made = 0;
    for (int k = 0; ok && k < n_ranks; ++k, ++made) ok = shard_init(&ranks[k], b, &g, k * per, per, encoder);
    for (int k = 0; ok && k < n_ranks; ++k) {
        // the same seed gives every rank the single learner's parameters
        CHECK(memcmp(ranks[k].l.model.params.data, one.l.model.params.data, (size_t)W * 4) == 0,
              "rank %d starts from other parameters", k);
        ok = shard_grad(&ranks[k]);
    }
    if (ok) {
        // the all-reduce: a float sum in rank order, then times 1 / N
        const float* g1 = (const float*)one.l.model.grads.data;
        double gmax = 0.0, worst = 0.0;
        for (int64_t i = 0; i < W; ++i) gmax = fmax(gmax, fabs((double)g1[i]));
        CHECK(gmax > 1e-6, "the single gradient is zero (max %g): the test cannot fail", gmax);
        int64_t bad = 0, worst_i = 0;
        for (int64_t i = 0; i < W; ++i) {
            float sum = 0.0f;
            for (int k = 0; k < n_ranks; ++k) sum += ((const float*)ranks[k].l.model.grads.data)[i];
            const float mean = sum * (1.0f / (float)n_ranks);
            const double err = fabs((double)mean - (double)g1[i]);
            const double tol = GRAD_ATOL_REL * gmax + GRAD_RTOL * fabs((double)g1[i]);
            if (err > tol) ++bad;
            if (err / (GRAD_ATOL_REL * gmax) > worst) {
                worst = err / (GRAD_ATOL_REL * gmax);
                worst_i = i;
            }
        }
        CHECK(bad == 0, "%d ranks, encoder %d: %lld of %lld gradient elements outside the tolerance (worst at %lld)",
              n_ranks, encoder, (long long)bad, (long long)W, (long long)worst_i);
        fprintf(stderr, "  %d ranks, encoder %d: %lld weights, max |g| %.3g, worst error %.3g x (%g max|g|)\n", n_ranks,
                encoder, (long long)W, gmax, worst, GRAD_ATOL_REL);
    }
    for (int k = 0; k < made; ++k) vp_learner_free(&ranks[k].l);
    vp_learner_free(&one.l);
    vp_backend_free(b);
}

static void test_two_ranks(void) {
    check_ranks(2, VP_ENCODER_MAMBA2);
    check_ranks(2, VP_ENCODER_NONE);
}

static void test_three_and_four_ranks(void) {
    check_ranks(3, VP_ENCODER_MAMBA2);
    check_ranks(4, VP_ENCODER_MAMBA2);
}

/* The check can fail: a shard fed other rows is far outside the tolerance. */
static void test_detects_a_wrong_shard(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    static global_rows g;
    rows_make(&g);
    shard one, r0, r1;
    int ok = shard_init(&one, b, &g, 0, B, VP_ENCODER_MAMBA2) && shard_grad(&one) &&
             shard_init(&r0, b, &g, 0, B / 2, VP_ENCODER_MAMBA2) && shard_init(&r1, b, &g, 0, B / 2, VP_ENCODER_MAMBA2);
    // rank 1 given rank 0's rows instead of its own
    if (ok) ok = shard_grad(&r0) && shard_grad(&r1);
    if (ok) {
        const int64_t W = one.l.model.n_weights;
        const float* g1 = (const float*)one.l.model.grads.data;
        double gmax = 0.0;
        for (int64_t i = 0; i < W; ++i) gmax = fmax(gmax, fabs((double)g1[i]));
        int64_t bad = 0;
        for (int64_t i = 0; i < W; ++i) {
            const float mean = (((const float*)r0.l.model.grads.data)[i] + ((const float*)r1.l.model.grads.data)[i]) * 0.5f;
            if (fabs((double)mean - g1[i]) > GRAD_ATOL_REL * gmax + GRAD_RTOL * fabs((double)g1[i])) ++bad;
        }
        CHECK(bad > W / 4, "only %lld of %lld elements differ with the wrong rows", (long long)bad, (long long)W);
    }
    vp_learner_free(&r1.l);
    vp_learner_free(&r0.l);
    vp_learner_free(&one.l);
    vp_backend_free(b);
}

/* Three data-parallel steps of 2 ranks, the all-reduce done by hand (the mean written into
 * every rank's gradient buffer, as NCCL gives every rank the same bits): after the clip, AdamW
 * and Polyak the ranks hold the same parameters, bit for bit, and those track the single
 * learner's within 1e-3 of the distance the steps moved them. */
static void test_ranks_stay_equal(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    static global_rows g;
    rows_make(&g);
    shard one, r[2];
    int ok = shard_init(&one, b, &g, 0, B, VP_ENCODER_MAMBA2) && shard_init(&r[0], b, &g, 0, B / 2, VP_ENCODER_MAMBA2) &&
             shard_init(&r[1], b, &g, B / 2, B / 2, VP_ENCODER_MAMBA2);
    const int64_t W = ok ? one.l.model.n_weights : 0;
    for (int step = 0; ok && step < 3; ++step) {
        ok = shard_grad(&one) && shard_grad(&r[0]) && shard_grad(&r[1]);
        float* g0 = (float*)r[0].l.model.grads.data;
        float* g1 = (float*)r[1].l.model.grads.data;
        for (int64_t i = 0; ok && i < W; ++i) g0[i] = g1[i] = (g0[i] + g1[i]) * 0.5f;
        for (int k = 0; ok && k < 2; ++k) ok = vp_learner_run_phase(&r[k].l, VP_PHASE_OPTIM, &r[k].bt, NULL) == VP_OK;
        if (ok) ok = vp_learner_run_phase(&one.l, VP_PHASE_OPTIM, &one.bt, NULL) == VP_OK;
        CHECK(ok, "step %d: %s", step, vp_last_error());
    }
    if (ok) {
        const size_t bytes = (size_t)W * 4;
        CHECK(memcmp(r[0].l.model.params.data, r[1].l.model.params.data, bytes) == 0, "the ranks' parameters differ");
        CHECK(memcmp(r[0].l.target.data, r[1].l.target.data, bytes) == 0, "the ranks' targets differ");
        CHECK(memcmp(r[0].l.adam_v.data, r[1].l.adam_v.data, bytes) == 0, "the ranks' AdamW moments differ");
        // against the single learner: AdamW moves each weight by at most about lr per step
        const float* p1 = (const float*)one.l.model.params.data;
        const float* p0 = (const float*)r[0].l.model.params.data;
        double worst = 0.0, moved = 0.0;
        for (int64_t i = 0; i < W; ++i) worst = fmax(worst, fabs((double)p0[i] - (double)p1[i]));
        float* init = (float*)malloc(bytes);
        shard fresh;
        if (init && shard_init(&fresh, b, &g, 0, B, VP_ENCODER_MAMBA2)) {
            memcpy(init, fresh.l.model.params.data, bytes);
            for (int64_t i = 0; i < W; ++i) moved = fmax(moved, fabs((double)p1[i] - (double)init[i]));
            vp_learner_free(&fresh.l);
        }
        free(init);
        CHECK(moved > 1e-4, "three steps moved the parameters by at most %g: the test cannot fail", moved);
        CHECK(worst <= 1e-3 * moved, "the data-parallel parameters are %g from the single learner's (steps moved %g)",
              worst, moved);
        fprintf(stderr, "  2 ranks, 3 steps: parameters within %.3g of the single learner's (moved up to %.3g)\n", worst,
                moved);
    }
    vp_learner_free(&r[1].l);
    vp_learner_free(&r[0].l);
    vp_learner_free(&one.l);
    vp_backend_free(b);
}

/* A one-rank communicator changes nothing: three full steps bit for bit. */
static void test_one_rank_comm_bit_identical(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    static global_rows g;
    rows_make(&g);
    shard plain, with;
    vp_comm* c = NULL;
    vp_dist d = vp_dist_single();
    int ok = shard_init(&plain, b, &g, 0, B, VP_ENCODER_MAMBA2) && shard_init(&with, b, &g, 0, B, VP_ENCODER_MAMBA2);
    CHECK_OK(vp_comm_init(&c, &d, b, NULL));
    if (ok && c) {
        CHECK_OK(vp_learner_set_comm(&with.l, c));
        CHECK(with.l.comm == c, "communicator not attached");
        for (int s = 0; s < 3; ++s) {
            CHECK_OK(vp_learner_step(&plain.l, &plain.bt, NULL));
            CHECK_OK(vp_learner_step(&with.l, &with.bt, NULL));
        }
        const size_t W = (size_t)plain.l.model.n_weights * 4;
        CHECK(memcmp(plain.l.model.params.data, with.l.model.params.data, W) == 0, "parameters differ");
        CHECK(memcmp(plain.l.target.data, with.l.target.data, W) == 0, "targets differ");
        CHECK(memcmp(plain.l.adam_v.data, with.l.adam_v.data, W) == 0, "AdamW moments differ");
        CHECK(memcmp(plain.l.stats_host, with.l.stats_host, VP_STAT_COUNT * sizeof(float)) == 0, "statistics differ");
        CHECK_OK(vp_learner_set_comm(&with.l, NULL));
        CHECK(with.l.comm == NULL, "communicator not detached");
    }
    CHECK_STATUS(vp_learner_set_comm(NULL, c), VP_ERR_INVALID_ARG, "learner is NULL");
    vp_comm_free(c);
    vp_learner_free(&with.l);
    vp_learner_free(&plain.l);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_two_ranks);
    RUN_TEST(test_three_and_four_ranks);
    RUN_TEST(test_detects_a_wrong_shard);
    RUN_TEST(test_ranks_stay_equal);
    RUN_TEST(test_one_rank_comm_bit_identical);
    return vpt_finish();
}
