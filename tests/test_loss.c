/* Tests of the loss kernels on the CPU: the oracle values of issue 4 (C51 projection, IQN
 * quantile Huber), double-DQN selection, mass conservation, tau draws, statistics and
 * argument checks. Gradients are in test_loss_grad.c. */
#include "test_loss_util.h"

static vp_backend* g_b;

/* Issue 4 item 4: supports [[0,2,4,6,8],[1,3,4,5,6]] onto [4, 5, 6, 7, 8]. */
static void test_project_oracle_supports(void) {
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 5, 4.0f, 8.0f, 0, 0);
    float sup[10] = {0, 2, 4, 6, 8, 1, 3, 4, 5, 6};
    float pr[10] = {.1f, .6f, .1f, .1f, .1f, .1f, .2f, .5f, .1f, .1f};
    float out[10];
    const float want[10] = {.8f, 0, .1f, 0, .1f, .8f, .1f, .1f, 0, 0};
    vp_tensor ts = tlu_t2(sup, VP_F32, 2, 5), tp = tlu_t2(pr, VP_F32, 2, 5), to = tlu_t2(out, VP_F32, 2, 5);
    CHECK_OK(vp_loss_c51_project(g_b, &d, &ts, &tp, &to));
    for (int i = 0; i < 10; ++i) CHECK_NEAR(out[i], want[i], 1e-6, 0.0);
}

/* Issue 4 item 4 through the C51 loss itself: z = [-2..2], p = [.1,.2,.4,.2,.1];
 * r = .5, gamma .9; r = 0, gamma 1 (identity); terminal with r = .5. Two branches, so
 * head offsets and a* within a branch are exercised; the loss and gradient too. */
static void test_c51_projection_oracles(void) {
    enum { B = 3, Z = 5, NB = 2, A = 5 };
    int sz[NB] = {3, 2};
    vp_loss_dims d = tlu_dims(B, NB, sz, Z, -2.0f, 2.0f, 0, 0);
    const float p[Z] = {.1f, .2f, .4f, .2f, .1f};
    const float want[B][Z] = {{.03f, .15f, .32f, .32f, .18f}, {.1f, .2f, .4f, .2f, .1f}, {0, 0, .5f, .5f, 0}};
    float reward[B] = {.5f, 0.0f, .5f}, disc[B] = {.9f, 1.0f, 0.0f}, w[B] = {1.0f, 2.0f, 0.5f};
    int32_t act[B * NB] = {0, 1, 2, 0, 1, 1}, next[B * NB] = {2, 1, 0, 0, 1, 1};
    float lp[B * A * Z], tlp[B * A * Z], proj[B * NB * Z], loss[B], dlp[B * A * Z];
    // Online log-probs: a fixed non-uniform pattern; target: log p on every head.
    for (int e = 0; e < B * A * Z; ++e) {
        lp[e] = -1.0f - 0.1f * (float)(e % 7);
        tlp[e] = logf(p[e % Z]);
    }
    tlu_batch tb;
    tlu_batch_init(&tb, B, NB, act, next, reward, disc, w);
    tlu_c51(g_b, &d, &tb.b, B, A, NB, Z, lp, tlp, proj, loss, dlp);
    for (int i = 0; i < B; ++i)
        for (int br = 0; br < NB; ++br)
            for (int j = 0; j < Z; ++j) CHECK_NEAR(proj[(i * NB + br) * Z + j], want[i][j], 1e-6, 0.0);
    // Loss: mean over branches of -sum m log p_online(taken); gradient on taken heads only.
    for (int i = 0; i < B; ++i) {
        double ce = 0.0;
        for (int br = 0; br < NB; ++br) {
            int h = (br == 0 ? 0 : 3) + act[i * NB + br];
            for (int j = 0; j < Z; ++j) ce -= (double)want[i][j] * lp[(i * A + h) * Z + j];
        }
        CHECK_NEAR(loss[i], ce / NB, 1e-6, 1e-6);
        for (int a = 0; a < A; ++a) {
            int taken = (a < 3) ? (a == act[i * NB]) : (a - 3 == act[i * NB + 1]);
            for (int j = 0; j < Z; ++j) {
                double g = taken ? -(double)w[i] / (B * NB) * want[i][j] : 0.0;
                CHECK_NEAR(dlp[(i * A + a) * Z + j], g, 1e-7, 1e-6);
            }
        }
    }
}

/* No mass is lost when b = (r + d z - v_min) / dz is an integer, nor for arbitrary r, d. */
static void test_c51_mass_conservation(void) {
    enum { Z = 21, B = 6 };
    int sz[1] = {2};
    vp_loss_dims d = tlu_dims(B, 1, sz, Z, -10.0f, 10.0f, 0, 0);
    float reward[B] = {2.0f, -3.0f, 0.0f, 25.0f, 0.37f, -1.234f}, disc[B] = {1.0f, 1.0f, 1.0f, 1.0f, 0.97f, 0.5f};
    float w[B] = {1, 1, 1, 1, 1, 1};
    int32_t act[B] = {0, 1, 0, 1, 0, 1}, next[B] = {1, 0, 1, 0, 1, 0};
    float lp[B * 2 * Z], tlp[B * 2 * Z], proj[B * Z], loss[B], dlp[B * 2 * Z];
    // Target distributions: a softmax of a fixed pattern per head.
    for (int i = 0; i < B * 2; ++i) {
        double s = 0.0;
        for (int j = 0; j < Z; ++j) s += exp(sin(0.7 * (i + 1) * j));
        for (int j = 0; j < Z; ++j) tlp[i * Z + j] = (float)(sin(0.7 * (i + 1) * j) - log(s));
    }
    for (int e = 0; e < B * 2 * Z; ++e) lp[e] = -3.0f;
    tlu_batch tb;
    tlu_batch_init(&tb, B, 1, act, next, reward, disc, w);
    tlu_c51(g_b, &d, &tb.b, B, 2, 1, Z, lp, tlp, proj, loss, dlp);
    for (int i = 0; i < B; ++i) {
        double s = 0.0;
        for (int j = 0; j < Z; ++j) s += proj[i * Z + j];
        CHECK_NEAR(s, 1.0, 1e-5, 0.0);
        // Every target sums to 1, so -sum m log p with log p = -3 is 3.
        CHECK_NEAR(loss[i], 3.0, 1e-5, 0.0);
    }
    // Integer shifts: atoms move by exactly r atoms, the overflow piles up at the end.
    const float* p0 = tlp + (0 * 2 + 1) * Z;  // sample 0, a* = 1, r = +2
    for (int j = 0; j < Z; ++j) {
        double want = 0.0;
        if (j >= 2 && j < Z - 1) want = exp(p0[j - 2]);
        if (j == Z - 1) want = exp(p0[Z - 3]) + exp(p0[Z - 2]) + exp(p0[Z - 1]);
        CHECK_NEAR(proj[j], want, 1e-6, 1e-5);
    }
    const float* p3 = tlp + (3 * 2 + 0) * Z;  // sample 3, a* = 0, r = 25: everything at v_max
    double top = 0.0;
    for (int j = 0; j < Z; ++j) top += exp(p3[j]);
    CHECK_NEAR(proj[3 * Z + Z - 1], top, 1e-6, 1e-5);
    CHECK_NEAR(proj[3 * Z + 0], 0.0, 1e-7, 0.0);
}

/* Issue 4 item 4: theta [0, 1], tau [.25, .75], targets [.5, 2], kappa 1 -> 0.40625. */
static void test_iqn_oracle(void) {
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 5, -2.0f, 2.0f, 2, 2);
    float theta[2] = {0.0f, 1.0f}, tau[2] = {.25f, .75f}, target[2] = {.5f, 2.0f};
    float reward[1] = {0.0f}, disc[1] = {1.0f}, w[1] = {1.0f}, loss[1], dq[2];
    int32_t act[1] = {0}, next[1] = {0};
    tlu_batch tb;
    tlu_batch_init(&tb, 1, 1, act, next, reward, disc, w);
    vp_tensor tq = tlu_f3(theta, 1, 2, 1);
    vp_tensor tt = tlu_f3(target, 1, 2, 1);
    vp_tensor tu = tlu_t2(tau, VP_F32, 1, 2), tl = tlu_t1(loss, VP_F32, 1), tg = tlu_f3(dq, 1, 2, 1);
    CHECK_OK(vp_loss_iqn(g_b, &d, &tb.b, &tq, &tt, &tu, &tl, &tg));
    CHECK_NEAR(loss[0], 0.40625, 1e-6, 0.0);
    // By hand: d/dtheta0 = -(.25*.5 + .25*1)/2, d/dtheta1 = -(-.25*.5 + .75*1)/2.
    CHECK_NEAR(dq[0], -0.1875, 1e-6, 0.0);
    CHECK_NEAR(dq[1], -0.3125, 1e-6, 0.0);
    // The same pair through a reward and a discount: targets r + d * z' = [.5, 2].
    float target2[2] = {0.0f, 1.0f};
    reward[0] = 0.5f;
    disc[0] = 1.5f;
    vp_tensor tt2 = tlu_f3(target2, 1, 2, 1);
    CHECK_OK(vp_loss_iqn(g_b, &d, &tb.b, &tq, &tt2, &tu, &tl, &tg));
    CHECK_NEAR(loss[0], 0.40625, 1e-6, 0.0);
}

/* Double-DQN argmax per branch: odd branch sizes, ties to the lowest index, NaN ignored. */
static void test_select(void) {
    enum { B = 3, NB = 3, A = 8 };
    int sz[NB] = {3, 1, 4};
    vp_loss_dims d = tlu_dims(B, NB, sz, 5, -1.0f, 1.0f, 0, 0);
    float q[B * A] = {0.1f, 0.5f, 0.2f, 9.0f, -1.0f, -2.0f, -0.5f, -0.7f,  // 1, 0, 2
                      0.3f, 0.3f, 0.3f, -9.f, 4.0f, 4.0f, 1.0f, 4.0f,      // ties: 0, 0, 0
                      NAN, 2.0f, 1.0f, 0.0f, 0.0f, 1.0f, NAN, 3.0f};       // NaN first: 1, 0, 3
    int32_t a[B * NB];
    const int32_t want[B * NB] = {1, 0, 2, 0, 0, 0, 1, 0, 3};
    vp_tensor tq = tlu_t2(q, VP_F32, B, A), tas = tlu_t2(a, VP_I32, B, NB);
    CHECK_OK(vp_loss_select(g_b, &d, &tq, &tas));
    for (int e = 0; e < B * NB; ++e) CHECK(a[e] == want[e], "a*[%d] = %d, expected %d", e, a[e], want[e]);
}

/* An action index outside its branch poisons that sample only. */
static void test_bad_action_is_nan(void) {
    enum { B = 2, Z = 3, N = 2 };
    int sz[1] = {2};
    vp_loss_dims d = tlu_dims(B, 1, sz, Z, -1.0f, 1.0f, N, N);
    float lp[B * 2 * Z], tlp[B * 2 * Z], proj[B * Z], loss[B], dlp[B * 2 * Z];
    float q[B * N * 2], tq[B * N * 2], taus[B * N], dq[B * N * 2];
    for (int e = 0; e < B * 2 * Z; ++e) lp[e] = tlp[e] = logf(1.0f / Z);
    for (int e = 0; e < B * N * 2; ++e) q[e] = tq[e] = 0.1f * (float)e;
    for (int e = 0; e < B * N; ++e) taus[e] = 0.3f;
    float reward[B] = {0, 0}, disc[B] = {1, 1}, w[B] = {1, 1};
    int32_t act[B] = {1, 2}, next[B] = {0, 0};
    tlu_batch tb;
    tlu_batch_init(&tb, B, 1, act, next, reward, disc, w);
    tlu_c51(g_b, &d, &tb.b, B, 2, 1, Z, lp, tlp, proj, loss, dlp);
    CHECK(isfinite(loss[0]) && isnan(loss[1]), "c51 losses %g %g", (double)loss[0], (double)loss[1]);
    vp_tensor tiq = tlu_f3(q, B, N, 2), ttq = tlu_f3(tq, B, N, 2);
    vp_tensor tu = tlu_t2(taus, VP_F32, B, N), tgq = tlu_f3(dq, B, N, 2), tls = tlu_t1(loss, VP_F32, B);
    CHECK_OK(vp_loss_iqn(g_b, &d, &tb.b, &tiq, &ttq, &tu, &tls, &tgq));
    CHECK(isfinite(loss[0]) && isnan(loss[1]), "iqn losses %g %g", (double)loss[0], (double)loss[1]);
}

/* Taus lie in (0, 1), depend on the step counter, and repeat for the same step. */
static void test_draw_taus(void) {
    enum { R = 37, C = 5 };
    float a[R * C], b2[R * C], c[R * C];
    int32_t step = 0;
    vp_tensor ts = tlu_t1(&step, VP_I32, 1), ta = tlu_t2(a, VP_F32, R, C), tb = tlu_t2(b2, VP_F32, R, C);
    vp_tensor tc = tlu_t2(c, VP_F32, R, C);
    CHECK_OK(vp_loss_draw_taus(g_b, 42, 7, &ts, &ta));
    CHECK_OK(vp_loss_draw_taus(g_b, 42, 7, &ts, &tb));
    step = 1;
    CHECK_OK(vp_loss_draw_taus(g_b, 42, 7, &ts, &tc));
    double mean = 0.0;
    int same_ab = 1, same_ac = 0;
    for (int e = 0; e < R * C; ++e) {
        CHECK(a[e] > 0.0f && a[e] < 1.0f, "tau %d = %g outside (0, 1)", e, (double)a[e]);
        same_ab &= a[e] == b2[e];
        same_ac += a[e] == c[e];
        mean += a[e];
    }
    CHECK(same_ab, "same step must give the same taus");
    CHECK(same_ac < 3, "%d taus repeat across steps", same_ac);
    CHECK_NEAR(mean / (R * C), 0.5, 0.06, 0.0);
    // A NULL step reads as step 0.
    CHECK_OK(vp_loss_draw_taus(g_b, 42, 7, NULL, &tb));
    CHECK(memcmp(a, b2, sizeof a) == 0, "NULL step differs from step 0");
}

/* Statistics: weighted means, Q mean and max, the NaN flag and its counter. */
static void test_stats(void) {
    enum { B = 3, A = 2 };
    int sz[1] = {2};
    vp_loss_dims d = tlu_dims(B, 1, sz, 5, -1.0f, 1.0f, 0, 0);
    float c51[B] = {1.0f, 2.0f, 3.0f}, iqn[B] = {0.5f, 0.25f, 1.0f}, w[B] = {1.0f, 0.5f, 2.0f};
    float q[B * A] = {0.1f, -0.2f, 0.7f, 0.3f, -1.0f, 0.4f}, norm[1] = {12.5f}, st[VP_STAT_COUNT] = {0};
    vp_tensor tc = tlu_t1(c51, VP_F32, B), ti = tlu_t1(iqn, VP_F32, B), tw = tlu_t1(w, VP_F32, B), tq = tlu_t2(q, VP_F32, B, A),
              tn = tlu_t1(norm, VP_F32, 1), ts = tlu_t1(st, VP_F32, VP_STAT_COUNT);
    CHECK_OK(vp_loss_stats(g_b, &d, &tc, &ti, &tw, &tq, &tn, &ts));
    CHECK_NEAR(st[VP_STAT_C51], (1.0 + 1.0 + 6.0) / 3, 1e-6, 1e-6);
    CHECK_NEAR(st[VP_STAT_IQN], (0.5 + 0.125 + 2.0) / 3, 1e-6, 1e-6);
    CHECK_NEAR(st[VP_STAT_LOSS], (8.0 + 2.625) / 3, 1e-6, 1e-6);
    CHECK_NEAR(st[VP_STAT_GRAD_NORM], 12.5, 0.0, 0.0);
    CHECK_NEAR(st[VP_STAT_Q_MEAN], 0.3 / 6, 1e-7, 1e-6);
    CHECK_NEAR(st[VP_STAT_Q_MAX], 0.7, 1e-7, 0.0);
    CHECK(st[VP_STAT_NAN] == 0.0f && st[VP_STAT_NAN_STEPS] == 0.0f, "no NaN expected");
    // A NaN in Q raises the flag and counts; a clean step lowers the flag, keeps the count.
    q[3] = NAN;
    CHECK_OK(vp_loss_stats(g_b, &d, &tc, &ti, &tw, &tq, &tn, &ts));
    CHECK(isnan(st[VP_STAT_Q_MAX]) && st[VP_STAT_NAN] == 1.0f && st[VP_STAT_NAN_STEPS] == 1.0f, "NaN step: %g %g %g",
          (double)st[VP_STAT_Q_MAX], (double)st[VP_STAT_NAN], (double)st[VP_STAT_NAN_STEPS]);
    q[3] = 0.3f;
    CHECK_OK(vp_loss_stats(g_b, &d, &tc, NULL, &tw, &tq, &tn, &ts));
    CHECK(st[VP_STAT_NAN] == 0.0f && st[VP_STAT_NAN_STEPS] == 1.0f, "clean step after NaN");
    CHECK_NEAR(st[VP_STAT_LOSS], 8.0 / 3, 1e-6, 1e-6);
    CHECK(st[VP_STAT_IQN] == 0.0f, "no IQN part without iqn");
}

/* Bad arguments fail with a message naming the argument. */
static void test_arg_checks(void) {
    int sz[2] = {3, 2};
    vp_loss_dims d = tlu_dims(2, 2, sz, 5, -1.0f, 1.0f, 0, 0);
    float q[10];
    int32_t a[4];
    float af[4];
    vp_tensor tq = tlu_t2(q, VP_F32, 2, 5), ta = tlu_t2(a, VP_I32, 2, 2), taf = tlu_t2(af, VP_F32, 2, 2), tq9 = tlu_t2(q, VP_F32, 3, 3);
    CHECK_STATUS(vp_loss_select(g_b, &d, &tq, &taf), VP_ERR_INVALID_ARG, "a_star");
    CHECK_STATUS(vp_loss_select(g_b, &d, &tq9, &ta), VP_ERR_SHAPE, "q");
    CHECK_STATUS(vp_loss_select(g_b, NULL, &tq, &ta), VP_ERR_INVALID_ARG, "dims");
    vp_tensor dev = ta;
    dev.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_loss_select(g_b, &d, &tq, &dev), VP_ERR_DEVICE, "a_star");
    vp_loss_dims bad = d;
    bad.n_atoms = 1;
    CHECK_STATUS(vp_loss_select(g_b, &bad, &tq, &ta), VP_ERR_SHAPE, "n_atoms");
    bad = d;
    bad.branch_offset[1] = 2;
    CHECK_STATUS(vp_loss_select(g_b, &bad, &tq, &ta), VP_ERR_SHAPE, "branch 1");
    bad = d;
    bad.v_max = bad.v_min;
    CHECK_STATUS(vp_loss_select(g_b, &bad, &tq, &ta), VP_ERR_INVALID_ARG, "support");
    CHECK_STATUS(vp_loss_iqn(g_b, &d, NULL, &tq, &tq, &tq, &tq, &tq), VP_ERR_INVALID_ARG, "no taus");
}

int main(void) {
    if (vp_backend_cpu_init(&g_b) != VP_OK) {
        fprintf(stderr, "cpu backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_project_oracle_supports);
    RUN_TEST(test_c51_projection_oracles);
    RUN_TEST(test_c51_mass_conservation);
    RUN_TEST(test_iqn_oracle);
    RUN_TEST(test_select);
    RUN_TEST(test_bad_action_is_nan);
    RUN_TEST(test_draw_taus);
    RUN_TEST(test_stats);
    RUN_TEST(test_arg_checks);
    vp_backend_free(g_b);
    return vpt_finish();
}
