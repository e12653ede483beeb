/* Tests of the replay ring's sampling and priorities on the CPU backend: the IS-weight
 * oracle, priority proportions over many draws, stratification, the sum-tree walk,
 * new items at the running max, the beta schedule, uniform sampling, duplicates in a
 * priority update, determinism and an empty ring. */
#include "learn/replay_math.h"
#include "test_replay_util.h"

static vp_backend* g_cpu = NULL;

/* A ring of `n` one-step transitions (bar index = slot) from one env. */
static vp_replay* filled_ring(vp_replay_cfg c, int n) {
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return NULL;
    rt_step s = {.E = 1, .P = c.n_portfolio, .NB = c.n_branches};
    for (int t = 0; t < n; ++t) {
        rt_fill_env(&s, 0, t, (float)t);
        s.rew[0] = (float)t;
        s.done[0] = 0;
        rt_push(r, &s);
    }
    return r;
}

/* Sets slot i's priority to p[i] (alpha 1, eps 0: the stored priority is the loss). */
static void set_priorities(vp_replay* r, const float* p, int n) {
    int32_t idx[RT_MAX_B];
    for (int i = 0; i < n; ++i) idx[i] = i;
    vp_tensor ti = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, n);
    vp_tensor tl = vp_tensor_1d((void*)p, VP_F32, VP_MEM_HOST, n);
    CHECK_OK(vp_replay_update_priorities(r, &ti, &tl));
}

/* A 4-slot ring (one env, n = 1) holding priorities [1, 2, 3, 4], beta from 0.4 over
 * `beta_steps` sampling steps. */
static vp_replay* ring_1234(int64_t beta_steps) {
    vp_replay_cfg c = rt_cfg(4, 1, 1, 0.99f);
    c.beta0 = 0.4f;
    c.beta_steps = beta_steps;
    vp_replay* r = filled_ring(c, 4);
    if (!r) return NULL;
    const float p[4] = {1, 2, 3, 4};
    set_priorities(r, p, 4);
    return r;
}

/* ---- the IS-weight oracle --------------------------------------------------------------------- */

/* Priorities [1, 2, 3, 4] (P(i) = p_i / sum p), beta 0.4: weights (N P(i))^-0.4 over the
 * batch max are [1, 0.757858, 0.644394, 0.574349]. */
static void test_is_weight_oracle(void) {
    const double oracle[4] = {1.0, 0.757858, 0.644394, 0.574349};
    for (int i = 0; i < 4; ++i) CHECK_NEAR(vp_replay_is_weight((float)(i + 1), 1.0f, 0.4f), oracle[i], 1e-6, 0);

    vp_replay* r = ring_1234(1000000);
    if (!r) return;
    rt_batch o = {.B = 64, .P = 2, .NB = 3};
    vp_replay_batch v = rt_batch_view(&o);
    CHECK_OK(vp_replay_sample(r, &v));
    int seen[4] = {0, 0, 0, 0};
    for (int j = 0; j < o.B; ++j) {
        int i = o.idx[j];
        CHECK(i >= 0 && i < 4, "index %d", i);
        if (i < 0 || i >= 4) continue;
        seen[i]++;
        CHECK_NEAR(o.w[j], oracle[i], 1e-6, 0);
        CHECK(o.bar[j] == i && o.rew[j] == (float)i && o.disc[j] == 0.99f, "row %d gathers slot %d", j, i);
        CHECK(o.port[j * 2 + 1] == (float)i + 0.125f && o.next_bar[j] == i + 1, "row %d gathers slot %d", j, i);
    }
    /* stratified: slot i gets p_i / 10 of 64 rows, within one */
    for (int i = 0; i < 4; ++i)
        CHECK(fabs(seen[i] - 6.4 * (i + 1)) <= 1.0, "slot %d drawn %d times, expected %.1f", i, seen[i], 6.4 * (i + 1));
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.total == 10.0f && st.beta == 0.4f && st.sample_step == 1, "total %g beta %g step %lld",
          (double)st.total, (double)st.beta, (long long)st.sample_step);
    vp_replay_free(r);
}

/* The deterministic power against float64 pow over nine decades, subnormals and the
 * exponents PER uses: within half an ulp of the float result (relative 2^-24), plus exact
 * special cases. */
static void test_pow_accuracy(void) {
    const float expo[6] = {0.4f, 0.6f, 0.7f, 0.55f, 2.5f, 8.0f};
    double worst = 0;
    int64_t n = 0, same_as_powf = 0;
    for (int ai = 0; ai < 6; ++ai) {
        for (int i = 0; i < 20000; ++i) {
            float x = (float)pow(10.0, -6.0 + 12.0 * i / 20000.0) * (1.0f + 0.37f * (float)(i % 7) / 7.0f);
            float got = vp_replay_pow(x, expo[ai]);
            double want = pow((double)x, (double)expo[ai]);
            if (want > 3.4e38 || want < 1.2e-38) continue; /* float over- or underflow */
            double rel = fabs((double)got - want) / want;
            worst = rel > worst ? rel : worst;
            same_as_powf += got == powf(x, expo[ai]);
            n++;
        }
    }
    CHECK(worst <= 5.97e-8, "largest relative error %.3g over %lld powers", worst, (long long)n);
    CHECK(same_as_powf > n * 99 / 100, "equal to the C library's powf in %lld of %lld", (long long)same_as_powf,
          (long long)n);
    /* subnormal bases, special cases */
    CHECK_NEAR(vp_replay_pow(1e-40f, 0.6f), pow((double)1e-40f, (double)0.6f), 0, 6e-8);
    CHECK_NEAR(vp_replay_pow(1e-44f, 0.5f), pow((double)1e-44f, 0.5), 0, 6e-8);
    CHECK(vp_replay_pow(0.0f, 0.6f) == 0.0f && vp_replay_pow(0.0f, 0.0f) == 1.0f, "zero base");
    CHECK(vp_replay_pow(3.5f, 1.0f) == 3.5f && vp_replay_pow(1.0f, 0.6f) == 1.0f, "unit cases");
    CHECK(vp_replay_pow(4.0f, 0.5f) == 2.0f && vp_replay_pow(0.25f, 0.5f) == 0.5f, "exact roots");
    CHECK(vp_replay_pow(1e30f, 8.0f) == INFINITY && vp_replay_pow(1e-30f, 8.0f) == 0.0f, "overflow, underflow");
}

/* ---- proportions, stratification, the walk -------------------------------------------------- */

/* 10 slots, losses 1..10 with alpha 0.6: over 400 batches of 50 the draw counts match
 * p_i / sum p (chi-square, 9 degrees of freedom, p = 0.001 bound 27.88), and every batch is
 * sorted (stratified points walk the tree monotonically). */
static void test_priority_proportions(void) {
    vp_replay_cfg c = rt_cfg(10, 1, 1, 0.99f);
    c.alpha = 0.6f;
    c.priority_eps = 1e-6f;
    vp_replay* r = filled_ring(c, 10);
    if (!r) return;
    float loss[10];
    double p[10], sum = 0;
    for (int i = 0; i < 10; ++i) {
        loss[i] = (float)(i + 1);
        p[i] = pow((double)(loss[i] + 1e-6f), (double)0.6f);
        sum += p[i];
    }
    set_priorities(r, loss, 10);
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    for (int i = 0; i < 10; ++i) CHECK_NEAR(((float*)f.priority.data)[i], p[i], 0, 6e-8);

    int64_t count[10] = {0};
    const int draws = 400, B = 50;
    int unsorted = 0;
    rt_batch o = {.B = B, .P = 2, .NB = 3};
    for (int d = 0; d < draws; ++d) {
        vp_replay_batch v = rt_batch_view(&o);
        CHECK_OK(vp_replay_sample(r, &v));
        for (int j = 0; j < B; ++j) {
            if (o.idx[j] >= 0 && o.idx[j] < 10) count[o.idx[j]]++;
            if (j > 0 && o.idx[j] < o.idx[j - 1]) unsorted++;
        }
    }
    double chi2 = 0, worst = 0;
    for (int i = 0; i < 10; ++i) {
        double e = (double)draws * B * p[i] / sum;
        chi2 += (count[i] - e) * (count[i] - e) / e;
        double rel = fabs(count[i] - e) / e;
        worst = rel > worst ? rel : worst;
    }
    CHECK(chi2 < 27.88, "chi-square %.2f over 9 dof", chi2);
    CHECK(worst < 0.05, "largest relative deviation %.4f", worst);
    CHECK(unsorted == 0, "%d unsorted neighbours in stratified batches", unsorted);
    vp_replay_free(r);
}

/* The walk over a hand-built tree of 5 leaves [1, 0, 2, 0, 0]: points past the mass land
 * on the last leaf of positive priority, never on an empty one. */
static void test_tree_walk(void) {
    float prio[5] = {1, 0, 2, 0, 0};
    /* level 1: [1, 2, 0]; level 2: [3, 0]; level 3: [3] */
    float tree[6] = {1, 2, 0, 3, 0, 3};
    vp_replay_dev d;
    memset(&d, 0, sizeof d);
    d.cap = 5;
    d.prio = prio;
    d.tree = tree;
    d.depth = 3;
    d.level_off[1] = 0;
    d.level_off[2] = 3;
    d.level_off[3] = 5;
    CHECK(vp_replay_level_n(5, 1) == 3 && vp_replay_level_n(5, 2) == 2 && vp_replay_level_n(5, 3) == 1, "levels");
    CHECK(vp_replay_root(&d) == 3.0f, "root");
    const float u[7] = {0.0f, 0.5f, 0.999f, 1.0f, 2.5f, 3.0f, 100.0f};
    const int64_t expect[7] = {0, 0, 0, 2, 2, 2, 2};
    for (int k = 0; k < 7; ++k)
        CHECK(vp_replay_descend(&d, u[k]) == expect[k], "u %g -> %lld, expected %lld", (double)u[k],
              (long long)vp_replay_descend(&d, u[k]), (long long)expect[k]);
}

/* ---- priorities: running max, duplicates, bad losses ------------------------------------------- */

static void test_new_items_at_max_priority(void) {
    vp_replay_cfg c = rt_cfg(10, 1, 1, 0.99f);
    vp_replay* r = filled_ring(c, 3);
    if (!r) return;
    int32_t idx[2] = {1, 0};
    float loss[2] = {4.0f, 0.5f};
    vp_tensor ti = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, 2), tl = vp_tensor_1d(loss, VP_F32, VP_MEM_HOST, 2);
    CHECK_OK(vp_replay_update_priorities(r, &ti, &tl));
    rt_step s = {.E = 1, .P = 2, .NB = 3};
    for (int t = 3; t < 5; ++t) {
        rt_fill_env(&s, 0, t, 0);
        s.done[0] = 0;
        rt_push(r, &s);
    }
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const float* p = f.priority.data;
    const float expect[6] = {0.5f, 4.0f, 1.0f, 4.0f, 4.0f, 0.0f};
    for (int i = 0; i < 6; ++i) CHECK(p[i] == expect[i], "slot %d priority %g, expected %g", i, (double)p[i],
                                      (double)expect[i]);
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.max_priority == 4.0f, "running max %g", (double)st.max_priority);
    vp_replay_free(r);
}

/* Duplicates: the last finite occurrence wins; NaN / Inf losses and slots outside the ring
 * change nothing; the running max sees every finite value of the batch. */
static void test_update_duplicates_and_bad_values(void) {
    vp_replay_cfg c = rt_cfg(8, 1, 1, 0.99f);
    vp_replay* r = filled_ring(c, 8);
    if (!r) return;
    int32_t idx[7] = {2, 2, 5, 2, 6, 6, -1};
    float loss[7] = {9.0f, 2.0f, 3.0f, 0.25f, 7.0f, NAN, 50.0f};
    vp_tensor ti = vp_tensor_1d(idx, VP_I32, VP_MEM_HOST, 7), tl = vp_tensor_1d(loss, VP_F32, VP_MEM_HOST, 7);
    CHECK_OK(vp_replay_update_priorities(r, &ti, &tl));
    int32_t idx2[2] = {3, 100};
    float loss2[2] = {INFINITY, 60.0f};
    ti = vp_tensor_1d(idx2, VP_I32, VP_MEM_HOST, 2);
    tl = vp_tensor_1d(loss2, VP_F32, VP_MEM_HOST, 2);
    CHECK_OK(vp_replay_update_priorities(r, &ti, &tl));
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const float* p = f.priority.data;
    CHECK(p[2] == 0.25f, "slot 2: last occurrence wins (%g)", (double)p[2]);
    CHECK(p[5] == 3.0f, "slot 5 %g", (double)p[5]);
    CHECK(p[6] == 7.0f, "slot 6: a NaN loss leaves the last finite one (%g)", (double)p[6]);
    CHECK(p[3] == 1.0f, "slot 3: an infinite loss changes nothing (%g)", (double)p[3]);
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.max_priority == 9.0f, "running max %g (an overwritten 9 counts, bad slots do not)",
          (double)st.max_priority);
    vp_replay_free(r);
}

/* ---- beta schedule ----------------------------------------------------------------------------- */

static void test_beta_schedule(void) {
    CHECK(vp_replay_beta(0.4f, 0, 10) == 0.4f, "beta at 0");
    CHECK_NEAR(vp_replay_beta(0.4f, 1, 10), 0.46, 1e-7, 0);
    CHECK_NEAR(vp_replay_beta(0.4f, 5, 10), 0.7, 1e-7, 0);
    CHECK(vp_replay_beta(0.4f, 10, 10) == 1.0f && vp_replay_beta(0.4f, 15, 10) == 1.0f, "beta after the end");
    CHECK_NEAR(vp_replay_beta(0.4f, 250000, 1000000), 0.55, 1e-7, 0);

    /* in the ring: beta of sampling step s, and weights (1/p)^beta with priorities 1..4 */
    vp_replay* r = ring_1234(10);
    if (!r) return;
    rt_batch o = {.B = 16, .P = 2, .NB = 3};
    for (int step = 0; step < 12; ++step) {
        vp_replay_batch v = rt_batch_view(&o);
        CHECK_OK(vp_replay_sample(r, &v));
        vp_replay_stats st;
        CHECK_OK(vp_replay_stats_read(r, &st));
        double beta = 0.4 + 0.6 * (step < 10 ? step / 10.0 : 1.0);
        CHECK_NEAR(st.beta, beta, 1e-6, 0);
        CHECK(st.sample_step == step + 1, "sample step %lld", (long long)st.sample_step);
        for (int j = 0; j < o.B; ++j) CHECK_NEAR(o.w[j], pow(1.0 / (o.idx[j] + 1), beta), 1e-6, 1e-6);
    }
    vp_replay_free(r);
}

/* ---- uniform sampling, determinism, empty ring ------------------------------------------------------ */

static void test_uniform_sampling(void) {
    vp_replay_cfg c = rt_cfg(13, 1, 1, 0.99f);
    c.prioritized = 0;
    vp_replay* r = filled_ring(c, 5);
    if (!r) return;
    rt_batch o = {.B = 200, .P = 2, .NB = 3};
    vp_replay_batch v = rt_batch_view(&o);
    CHECK_OK(vp_replay_sample(r, &v));
    int bad = 0;
    for (int j = 0; j < o.B; ++j) bad += o.idx[j] < 0 || o.idx[j] >= 5 || o.w[j] != 1.0f || o.bar[j] != o.idx[j];
    CHECK(bad == 0, "%d rows outside the 5 stored slots or with weight != 1", bad);

    /* full ring of 13 (odd): 100 batches of 260, counts uniform (chi-square, 12 dof, p = 0.001: 32.91) */
    rt_step s = {.E = 1, .P = 2, .NB = 3};
    for (int t = 5; t < 13; ++t) {
        rt_fill_env(&s, 0, t, 0);
        s.done[0] = 0;
        rt_push(r, &s);
    }
    int64_t count[13] = {0};
    o.B = 260;
    for (int d = 0; d < 100; ++d) {
        v = rt_batch_view(&o);
        CHECK_OK(vp_replay_sample(r, &v));
        for (int j = 0; j < o.B; ++j)
            if (o.idx[j] >= 0 && o.idx[j] < 13) count[o.idx[j]]++;
    }
    double chi2 = 0, e = 100.0 * 260 / 13;
    for (int i = 0; i < 13; ++i) chi2 += (count[i] - e) * (count[i] - e) / e;
    CHECK(chi2 < 32.91, "uniform chi-square %.2f over 12 dof", chi2);
    vp_replay_free(r);
}

static void test_deterministic_draws(void) {
    vp_replay_cfg c = rt_cfg(50, 1, 1, 0.99f);
    vp_replay* a = filled_ring(c, 37);
    vp_replay* b = filled_ring(c, 37);
    c.seed = 1235;
    vp_replay* other = filled_ring(c, 37);
    if (!a || !b || !other) return;
    float loss[37];
    for (int i = 0; i < 37; ++i) loss[i] = (float)((i * 7) % 11) + 0.5f;
    set_priorities(a, loss, 37);
    set_priorities(b, loss, 37);
    set_priorities(other, loss, 37);
    static rt_batch oa = {.B = 97, .P = 2, .NB = 3}, ob = {.B = 97, .P = 2, .NB = 3}, oc = {.B = 97, .P = 2, .NB = 3};
    int same = 1, differs = 0;
    for (int step = 0; step < 3; ++step) {
        vp_replay_batch va = rt_batch_view(&oa), vb = rt_batch_view(&ob), vc = rt_batch_view(&oc);
        CHECK_OK(vp_replay_sample(a, &va));
        CHECK_OK(vp_replay_sample(b, &vb));
        CHECK_OK(vp_replay_sample(other, &vc));
        same &= memcmp(oa.idx, ob.idx, sizeof(int32_t) * 97) == 0 && memcmp(oa.w, ob.w, sizeof(float) * 97) == 0;
        differs += memcmp(oa.idx, oc.idx, sizeof(int32_t) * 97) != 0;
    }
    CHECK(same, "same seed, same draws and weights");
    CHECK(differs == 3, "another seed draws other slots (%d of 3 batches differ)", differs);
    vp_replay_free(a);
    vp_replay_free(b);
    vp_replay_free(other);
}

static void test_empty_ring(void) {
    for (int per = 0; per <= 1; ++per) {
        vp_replay_cfg c = rt_cfg(6, 1, 2, 0.99f);
        c.prioritized = per;
        vp_replay* r = filled_ring(c, 1); /* one pending step, nothing stored */
        if (!r) return;
        rt_batch o = {.B = 5, .P = 2, .NB = 3};
        vp_replay_batch v = rt_batch_view(&o);
        CHECK_OK(vp_replay_sample(r, &v));
        for (int j = 0; j < o.B; ++j)
            CHECK(o.idx[j] == 0 && o.w[j] == 0.0f, "%s row %d: slot %d weight %g", per ? "PER" : "uniform", j,
                  o.idx[j], (double)o.w[j]);
        o.B = 4;
        v = rt_batch_view(&o);
        v.actions = vp_tensor_2d(o.act, VP_I32, VP_MEM_HOST, 4, 2);
        CHECK_STATUS(vp_replay_sample(r, &v), VP_ERR_SHAPE, "actions is i32[4, 2]");
        vp_replay_free(r);
    }
}

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_is_weight_oracle);
    RUN_TEST(test_pow_accuracy);
    RUN_TEST(test_priority_proportions);
    RUN_TEST(test_tree_walk);
    RUN_TEST(test_new_items_at_max_priority);
    RUN_TEST(test_update_duplicates_and_bad_values);
    RUN_TEST(test_beta_schedule);
    RUN_TEST(test_uniform_sampling);
    RUN_TEST(test_deterministic_draws);
    RUN_TEST(test_empty_ring);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
