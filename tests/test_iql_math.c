/* IQL's per-sample math (learn/iql_math.h) and its kernels on the CPU: the expectile loss and
 * its derivative at hand-computed points and against central differences; the joint Q and the
 * advantage weight; one sample's loss gradients against central differences; the targets
 * r + gamma (1 - done) V(s') of a hand-made 3-row dataset through the batch sampler (s' the same
 * env's next row); the sampler's rows reproducible from the seed and the counter. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "learn/iql_impl.h"
#include "vp_test.h"

/* L_tau(u) and its derivative at hand-computed points: w = tau for u >= 0, 1 - tau below. */
static void test_expectile_values(void) {
    static const struct {
        float u, tau, loss, du;
    } c[] = {
        {2.0f, 0.7f, 2.8f, 2.8f},      {-2.0f, 0.7f, 1.2f, -1.2f},    {0.5f, 0.9f, 0.225f, 0.9f},
        {-0.5f, 0.9f, 0.025f, -0.1f},  {0.0f, 0.7f, 0.0f, 0.0f},      {3.0f, 0.5f, 4.5f, 3.0f},
        {-3.0f, 0.5f, 4.5f, -3.0f},    {-1.0f, 0.1f, 0.9f, -1.8f},    {1.0f, 0.1f, 0.1f, 0.2f},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; ++i) {
        float du = NAN;
        const float l = vp_iql_expectile(c[i].u, c[i].tau, &du);
        CHECK_NEAR(l, c[i].loss, 1e-6, 1e-6);
        CHECK_NEAR(du, c[i].du, 1e-6, 1e-6);
    }
    // the derivative against central differences, away from 0 (where both sides agree anyway)
    const float taus[] = {0.1f, 0.5f, 0.7f, 0.9f};
    const float us[] = {-2.3f, -0.7f, -0.05f, 0.05f, 0.4f, 1.9f};
    for (size_t a = 0; a < 4; ++a)
        for (size_t k = 0; k < 6; ++k) {
            const float h = 1e-3f, u = us[k], tau = taus[a];
            float du = 0.0f, dd = 0.0f;
            vp_iql_expectile(u, tau, &du);
            const double fd = ((double)vp_iql_expectile(u + h, tau, &dd) - vp_iql_expectile(u - h, tau, &dd)) / (2.0 * h);
            CHECK(fabs(fd - du) < 1e-3 * fmax(1.0, fabs(du)), "tau %g u %g: derivative %g, differences %g", tau, u, du, fd);
        }
}

/* The joint Q, the weight and its clip. */
static void test_joint_and_weight(void) {
    const vp_action_layout l = vp_action_layout_env();
    float q[13];
    for (int j = 0; j < 13; ++j) q[j] = (float)j;
    const int32_t a[4] = {2, 0, 1, 2};
    // heads 2, 3 + 0, 7 + 1, 10 + 2: (2 + 3 + 8 + 12) / 4
    CHECK_NEAR(vp_iql_joint_q(&l, q, a), 6.25, 1e-6, 0);
    CHECK_NEAR(vp_iql_weight(0.1f, 3.0f, 100.0f), exp(0.3), 1e-6, 0);
    CHECK_NEAR(vp_iql_weight(-1.0f, 3.0f, 100.0f), exp(-3.0), 1e-6, 0);
    CHECK(vp_iql_weight(2.0f, 3.0f, 100.0f) == 100.0f, "exp(6) > 100 must clip to exactly 100");
    CHECK(vp_iql_weight(1.0f, 3.0f, 2.0f) == 2.0f, "a weight above adv_clip is adv_clip");
}

/* One sample's loss terms at fixed inputs (m = 1 for the differences, m = 4 for the scaling). */
static void sample_terms(const vp_iql_loss_dims* d, const float* in, float* t, float* g) {
    const int A = 13;
    const float *q1 = in, *q2 = in + A, *qt1 = in + 2 * A, *qt2 = in + 3 * A, *z = in + 4 * A;
    const int32_t a[4] = {1, 3, 0, 2};
    vp_iql_sample_loss(d, q1, q2, qt1, qt2, in[5 * A], in[5 * A + 1], z, a, 0.3f, 0.0f, t, g, g + A, g + 2 * A,
                       g + 3 * A);
}

/* The gradients against central differences of the terms they belong to: d q1, d q2 of the Q
 * term, d z of the policy term (the weight held), d v of the value term. */
static void test_sample_gradients(void) {
    vp_iql_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = 1, d.layout = vp_action_layout_env(), d.expectile = 0.7f, d.beta = 3.0f, d.adv_clip = 100.0f, d.gamma = 0.9f;
    const int A = 13, NIN = 5 * A + 2;
    float in[5 * 13 + 2], t[VP_IQL_T_COUNT], g[3 * 13 + 1];
    for (int i = 0; i < NIN; ++i) in[i] = 0.8f * sinf(1.7f * (float)i + 0.3f);
    in[5 * A] = -0.4f;  /* v: below the target Q, so the expectile's upper side */
    in[5 * A + 1] = 0.6f;
    sample_terms(&d, in, t, g);
    // which term and which gradient entry each input's perturbation is checked against
    struct {
        int first, count, term, grad;
    } groups[] = {{0, A, VP_IQL_T_Q, 0}, {A, A, VP_IQL_T_Q, A}, {4 * A, A, VP_IQL_T_PI, 2 * A}, {5 * A, 1, VP_IQL_T_V, 3 * A}};
    double worst = 0.0;
    for (int gi = 0; gi < 4; ++gi)
        for (int k = 0; k < groups[gi].count; ++k) {
            const int i = groups[gi].first + k;
            const float h = 1e-2f, x0 = in[i];
            float tp[VP_IQL_T_COUNT], tm[VP_IQL_T_COUNT], gs[3 * 13 + 1];
            in[i] = x0 + h, sample_terms(&d, in, tp, gs);
            in[i] = x0 - h, sample_terms(&d, in, tm, gs);
            in[i] = x0;
            const double fd = ((double)tp[groups[gi].term] - tm[groups[gi].term]) / (2.0 * h);
            const double an = g[groups[gi].grad + k];
            worst = fmax(worst, fabs(fd - an));
            CHECK(fabs(fd - an) < 2e-3 * fmax(1.0, fabs(an)), "input %d (group %d): gradient %.6g, differences %.6g", i,
                  gi, an, fd);
        }
    fprintf(stderr, "  worst |gradient - central difference| %.2e\n", worst);
    // every term divided by nothing, every gradient by the batch size
    vp_iql_loss_dims d4 = d;
    d4.m = 4;
    float t4[VP_IQL_T_COUNT], g4[3 * 13 + 1];
    sample_terms(&d4, in, t4, g4);
    for (int i = 0; i < VP_IQL_T_COUNT; ++i) CHECK(t4[i] == t[i], "term %d depends on the batch size", i);
    for (int i = 0; i < 3 * A + 1; ++i) CHECK_NEAR(g4[i], 0.25 * g[i], 1e-7, 1e-6);
}

/* A 3-step dataset of one env (and the same with two envs): the sampler's rows and the Q
 * targets the loss regresses on, by hand. */
static void test_three_rows(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b) return;
    const vp_iql_kernels* k = NULL;
    CHECK_OK(vp_iql_kernels_of("test", b, &k));
    // bars 10..13, rewards 0.5, -0.25, 1.0, the middle step ends its episode; portfolio column 0 = the row
    int32_t bar[4] = {10, 11, 12, 13}, act[3][4] = {{0, 1, 2, 0}, {1, 2, 0, 1}, {2, 3, 1, 2}};
    float port[4][8], reward[3] = {0.5f, -0.25f, 1.0f}, done[3] = {0.0f, 1.0f, 0.0f};
    memset(port, 0, sizeof port);
    for (int r = 0; r < 4; ++r) port[r][0] = (float)r;
    vp_iql_data_ptrs dp = {3, 1, bar, &port[0][0], &act[0][0], reward, done};
    enum { B = 12 };
    int32_t mb[B], mb1[B], ma[B][4];
    float mp[B][8], mp1[B][8], mr[B], md[B];
    vp_iql_rows rows = {mb, &mp[0][0], &ma[0][0], mr, md, mb1, &mp1[0][0]};
    int64_t ctr[1] = {5};
    CHECK_OK(k->sample(b, B, 42, VP_IQL_SAMPLE_STREAM, ctr, dp, rows));
    CHECK(ctr[0] == 5, "the sampler must not move the counter (the tick does)");
    int seen[3] = {0, 0, 0};
    for (int i = 0; i < B; ++i) {
        const int r = mb[i] - 10;
        CHECK(r >= 0 && r < 3, "batch row %d: bar %d is no transition's", i, mb[i]);
        if (r < 0 || r >= 3) continue;
        seen[r] = 1;
        CHECK(mb1[i] == mb[i] + 1 && mp1[i][0] == (float)(r + 1) && mp[i][0] == (float)r, "row %d: s' is not row %d",
              i, r + 1);
        CHECK(mr[i] == reward[r] && md[i] == done[r] && memcmp(ma[i], act[r], sizeof act[r]) == 0,
              "row %d: reward, done or action not of dataset row %d", i, r);
        CHECK(mb[i] == bar[vp_iql_row_at(3, B, 42, VP_IQL_SAMPLE_STREAM, 5, i)], "row %d is not the draw's", i);
    }
    CHECK(seen[0] + seen[1] + seen[2] >= 2, "12 draws of 3 rows took one row only");
    // the draws are uniform over the rows: 30000 draws of 3 rows, each within 5 sigma of 10000
    int64_t count[3] = {0, 0, 0};
    for (int64_t u = 0; u < 2500; ++u)
        for (int i = 0; i < B; ++i) count[vp_iql_row_at(3, B, 42, VP_IQL_SAMPLE_STREAM, u, i)] += 1;
    for (int r = 0; r < 3; ++r) CHECK(llabs(count[r] - 10000) < 410, "row %d drawn %lld times of 30000", r, (long long)count[r]);
    // the Q term with V(s') = 2, 4, -1 at bars 11, 12, 13 and gamma 0.9: y = 2.3, -0.25 (done), 0.1
    const double y_hand[3] = {0.5 + 0.9 * 2.0, -0.25, 1.0 + 0.9 * -1.0};
    const float vnext[3] = {2.0f, 4.0f, -1.0f};
    vp_iql_loss_dims d;
    memset(&d, 0, sizeof d);
    d.m = 1, d.layout = vp_action_layout_env(), d.expectile = 0.7f, d.beta = 1.0f, d.adv_clip = 100.0f, d.gamma = 0.9f;
    float zero[13], q1[13], t[VP_IQL_T_COUNT], g[4][13];
    memset(zero, 0, sizeof zero);
    for (int r = 0; r < 3; ++r) {
        // q1 = 1 at every head: joint 1; q2 = 0: joint 0
        for (int j = 0; j < 13; ++j) q1[j] = 1.0f;
        vp_iql_sample_loss(&d, q1, zero, zero, zero, 0.0f, vnext[r], zero, act[r], reward[r], done[r], t, g[0], g[1],
                           g[2], &g[3][0]);
        const double want = (1.0 - y_hand[r]) * (1.0 - y_hand[r]) + y_hand[r] * y_hand[r];
        CHECK_NEAR(t[VP_IQL_T_Q], want, 1e-5, 1e-6);
        // d q1 at the taken heads: 2 (1 - y) / 4, zero elsewhere
        const vp_action_layout l = d.layout;
        for (int br = 0; br < 4; ++br)
            for (int j = 0; j < l.size[br]; ++j)
                CHECK_NEAR(g[0][l.offset[br] + j], j == act[r][br] ? 2.0 * (1.0 - y_hand[r]) / 4.0 : 0.0, 1e-6, 1e-6);
    }
    // two envs: s' is the same env's next row, E rows on
    int32_t bar2[6] = {10, 20, 11, 21, 12, 22}, act2[4][4];
    float port2[6][8], rw2[4] = {0.1f, 0.2f, 0.3f, 0.4f}, dn2[4] = {0, 0, 0, 0};
    memset(port2, 0, sizeof port2), memset(act2, 0, sizeof act2);
    vp_iql_data_ptrs dp2 = {2, 2, bar2, &port2[0][0], &act2[0][0], rw2, dn2};
    ctr[0] = 0;
    CHECK_OK(k->sample(b, B, 43, VP_IQL_SAMPLE_STREAM, ctr, dp2, rows));
    for (int i = 0; i < B; ++i) CHECK(mb1[i] == mb[i] + 1 && (mb[i] == 10 || mb[i] == 11 || mb[i] == 20 || mb[i] == 21),
                                      "two envs, row %d: s %d, s' %d", i, mb[i], mb1[i]);
    // the tick moves the counter, and the next draw differs
    CHECK_OK(k->tick(b, ctr));
    CHECK(ctr[0] == 1, "tick: counter %lld", (long long)ctr[0]);
    int differ = 0;
    for (int i = 0; i < B; ++i)
        differ += vp_iql_row_at(4, B, 43, VP_IQL_SAMPLE_STREAM, 1, i) != vp_iql_row_at(4, B, 43, VP_IQL_SAMPLE_STREAM, 0, i);
    CHECK(differ > 0, "the batches of updates 0 and 1 are the same rows");
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_expectile_values);
    RUN_TEST(test_joint_and_weight);
    RUN_TEST(test_sample_gradients);
    RUN_TEST(test_three_rows);
    return vpt_finish();
}
