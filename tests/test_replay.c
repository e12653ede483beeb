/* Tests of the replay ring's insertion on the CPU backend: n-step returns by hand,
 * terminal vs truncated ends, done given as f32, configuration and argument errors, and
 * reset. The ring's order against a reference model is in test_replay_ring.c. */
#include "test_replay_util.h"

static vp_backend* g_cpu = NULL;

/* ---- n-step returns by hand ---------------------------------------------------------------- */

/* One env, n = 3, gamma = 0.5. Steps t0..t7: rewards 1 2 4 8 | 1 1 | 3 -2, t3 terminal
 * (ruin), t5 truncated. Expected ring: t0 (3 step), t1, t2, t3 (terminal tail), t4, t5
 * (truncated tail), t6 and t7 still pending. */
static void test_nstep_by_hand(void) {
    vp_replay_cfg c = rt_cfg(16, 1, 3, 0.5f);
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    const float rew[8] = {1, 2, 4, 8, 1, 1, 3, -2};
    const int32_t bars[8] = {100, 101, 102, 103, 200, 201, 300, 301};
    const int32_t done[8] = {0, 0, 0, VP_REPLAY_TERMINAL, 0, VP_REPLAY_TRUNCATED, 0, 0};
    const int64_t size_after[8] = {0, 0, 1, 4, 4, 6, 6, 6};
    rt_step s = {.E = 1, .P = 2, .NB = 3};
    for (int t = 0; t < 8; ++t) {
        rt_fill_env(&s, 0, bars[t], (float)t);
        s.rew[0] = rew[t];
        s.done[0] = done[t];
        rt_push(r, &s);
        vp_replay_stats st;
        CHECK_OK(vp_replay_stats_read(r, &st));
        CHECK(st.size == size_after[t] && st.head == size_after[t], "after t%d: size %lld head %lld, expected %lld", t,
              (long long)st.size, (long long)st.head, (long long)size_after[t]);
    }
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const int32_t* bar = f.bar_idx.data;
    const int32_t* nbar = f.next_bar_idx.data;
    const int32_t* dn = f.done.data;
    const int32_t* act = f.action.data;
    const float* R = f.reward.data;
    const float* D = f.discount.data;
    const float* port = f.portfolio.data;
    const float* nport = f.next_portfolio.data;
    const float* prio = f.priority.data;
    /* slot: start step, return, discount, done, step whose next state closes it */
    const int st_step[6] = {0, 1, 2, 3, 4, 5};
    const float eR[6] = {1 + 0.5f * 2 + 0.25f * 4, 2 + 0.5f * 4 + 0.25f * 8, 4 + 0.5f * 8, 8, 1 + 0.5f * 1, 1};
    const float eD[6] = {0.125f, 0, 0, 0, 0.25f, 0.5f};
    const int32_t eDone[6] = {0, 1, 1, 1, 2, 2};
    const int close_step[6] = {2, 3, 3, 3, 5, 5};
    for (int i = 0; i < 6; ++i) {
        int t = st_step[i], tc = close_step[i];
        CHECK(bar[i] == bars[t], "slot %d bar %d, expected %d", i, bar[i], bars[t]);
        CHECK(nbar[i] == bars[tc] + 1, "slot %d next bar %d, expected %d", i, nbar[i], bars[tc] + 1);
        CHECK(R[i] == eR[i], "slot %d return %g, expected %g", i, (double)R[i], (double)eR[i]);
        CHECK(D[i] == eD[i], "slot %d discount %g, expected %g", i, (double)D[i], (double)eD[i]);
        CHECK(dn[i] == eDone[i], "slot %d done %d, expected %d", i, dn[i], eDone[i]);
        CHECK(port[i * 2 + 1] == (float)t + 0.125f, "slot %d portfolio %g", i, (double)port[i * 2 + 1]);
        CHECK(nport[i * 2] == (float)tc + 0.5f, "slot %d next portfolio %g", i, (double)nport[i * 2]);
        CHECK(act[i * 3 + 2] == (bars[t] + 2) % 3, "slot %d action %d", i, act[i * 3 + 2]);
        CHECK(prio[i] == 1.0f, "slot %d priority %g, expected the initial max 1", i, (double)prio[i]);
    }
    CHECK(prio[6] == 0.0f && bar[6] == 0, "slot 6 stays empty");
    vp_replay_free(r);
}

/* gamma 0.99: the returns of a full window and of a terminal tail against a float64 sum. */
static void test_nstep_gamma_099(void) {
    vp_replay_cfg c = rt_cfg(8, 1, 3, 0.99f);
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    const float rew[4] = {0.3f, -1.7f, 2.9f, 0.01f};
    rt_step s = {.E = 1, .P = 2, .NB = 3};
    for (int t = 0; t < 4; ++t) {
        rt_fill_env(&s, 0, 10 + t, 0);
        s.rew[0] = rew[t];
        s.done[0] = t == 3 ? VP_REPLAY_TERMINAL : 0;
        rt_push(r, &s);
    }
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const float* R = f.reward.data;
    const float* D = f.discount.data;
    const double g = 0.99f;
    double e0 = rew[0] + g * rew[1] + g * g * rew[2];
    double e1 = rew[1] + g * rew[2] + g * g * rew[3];
    double e2 = rew[2] + g * rew[3];
    CHECK_NEAR(R[0], e0, 1e-6, 1e-6);
    CHECK_NEAR(R[1], e1, 1e-6, 1e-6);
    CHECK_NEAR(R[2], e2, 1e-6, 1e-6);
    CHECK(R[3] == rew[3], "last step's return is its reward: %g", (double)R[3]);
    CHECK_NEAR(D[0], g * g * g, 1e-7, 1e-6);
    CHECK(D[1] == 0 && D[2] == 0 && D[3] == 0, "terminal tail has discount 0");
    vp_replay_free(r);
}

/* done as f32 (the dtype vp_env_step writes; codes 0 running, 1 terminal, 2 truncated) gives the same
 * ring as the i32 codes. */
static void test_done_as_float(void) {
    vp_replay_cfg c = rt_cfg(9, 2, 3, 0.5f);
    vp_replay *ri = rt_ring(g_cpu, c), *rf = rt_ring(g_cpu, c);
    if (!ri || !rf) return;
    const int32_t codes[6][2] = {{0, 0}, {0, 1}, {2, 0}, {0, 0}, {0, 2}, {1, 0}};
    rt_step s = {.E = 2, .P = 2, .NB = 3};
    float done_f[2];
    for (int t = 0; t < 6; ++t) {
        for (int e = 0; e < 2; ++e) {
            rt_fill_env(&s, e, 10 * e + t, (float)t);
            s.rew[e] = (float)(t + e);
            s.done[e] = codes[t][e];
            done_f[e] = (float)codes[t][e];
        }
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(ri, &v));
        v.done = vp_tensor_1d(done_f, VP_F32, VP_MEM_HOST, 2);
        CHECK_OK(vp_replay_push(rf, &v));
    }
    vp_replay_fields a, b;
    CHECK_OK(vp_replay_fields_get(ri, &a));
    CHECK_OK(vp_replay_fields_get(rf, &b));
    CHECK(memcmp(a.reward.data, b.reward.data, 9 * sizeof(float)) == 0, "returns agree");
    CHECK(memcmp(a.discount.data, b.discount.data, 9 * sizeof(float)) == 0, "discounts agree");
    CHECK(memcmp(a.done.data, b.done.data, 9 * sizeof(int32_t)) == 0, "done codes agree");
    CHECK(memcmp(a.bar_idx.data, b.bar_idx.data, 9 * sizeof(int32_t)) == 0, "bars agree");
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(rf, &st));
    /* env 1 ends at t1 (2) and t4 (3), env 0 at t2 (3) and t5 (3): 11 written, 2 overwritten */
    CHECK(st.size == 9 && st.emitted == 11, "size %lld, %lld written", (long long)st.size, (long long)st.emitted);
    const int32_t* dn = b.done.data;
    const int32_t expect[9] = {1, 1, 2, 2, 2, 2, 2, 2, 1};
    for (int i = 0; i < 9; ++i) CHECK(dn[i] == expect[i], "slot %d done %d, expected %d", i, dn[i], expect[i]);
    vp_replay_free(ri);
    vp_replay_free(rf);
}

/* ---- configuration, arguments, reset --------------------------------------------------------- */

static void test_config_errors(void) {
    vp_replay* r = NULL;
    vp_replay_cfg c = rt_cfg(5, 3, 2, 0.9f);
    CHECK_STATUS(vp_replay_init(&r, g_cpu, &c), VP_ERR_INVALID_ARG, "capacity 5 is below n_envs * n_step");
    CHECK(r == NULL, "no ring on failure");
    c = rt_cfg(6, 3, 2, 0.9f);
    c.n_step = 0;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "n_step");
    c = rt_cfg(6, 3, 2, 1.5f);
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "gamma");
    c = rt_cfg(6, 3, 2, 0.9f);
    c.beta_steps = 0;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "beta_steps");
    c = rt_cfg(6, 3, 2, 0.9f);
    CHECK_OK(vp_replay_cfg_check(&c));
    CHECK(vp_replay_bytes(&c) > 0, "bytes of a good config");
    c.capacity = 0;
    CHECK(vp_replay_bytes(&c) == 0, "bytes of a bad config");

    /* default sizes: about 116 bytes per transition at P 8, 4 branches */
    vp_replay_cfg big = vp_replay_cfg_default();
    double per = (double)vp_replay_bytes(&big) / (double)big.capacity;
    CHECK(per > 110 && per < 120, "bytes per transition at 1M: %.2f", per);
}

static void test_push_argument_errors(void) {
    vp_replay_cfg c = rt_cfg(8, 2, 2, 0.9f);
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    rt_step s = {.E = 2, .P = 2, .NB = 3};
    vp_replay_step v = rt_step_view(&s);
    v.reward.dtype = VP_I32;
    CHECK_STATUS(vp_replay_push(r, &v), VP_ERR_INVALID_ARG, "reward is i32, expected f32");
    v = rt_step_view(&s);
    v.portfolio = vp_tensor_2d(s.port, VP_F32, VP_MEM_HOST, 1, 4);
    CHECK_STATUS(vp_replay_push(r, &v), VP_ERR_SHAPE, "portfolio is f32[1, 4]");
    v = rt_step_view(&s);
    v.done.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_replay_push(r, &v), VP_ERR_DEVICE, "done lives in device memory");
    v = rt_step_view(&s);
    v.action.data = NULL;
    CHECK_STATUS(vp_replay_push(r, &v), VP_ERR_INVALID_ARG, "action has no data");
    CHECK_STATUS(vp_replay_push(r, NULL), VP_ERR_INVALID_ARG, "NULL");
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.pushes == 0, "failed pushes change nothing (%lld pushes)", (long long)st.pushes);
    vp_replay_free(r);
}

static void test_reset(void) {
    vp_replay_cfg c = rt_cfg(8, 2, 2, 0.9f);
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    rt_step s = {.E = 2, .P = 2, .NB = 3};
    for (int t = 0; t < 3; ++t) {
        rt_fill_env(&s, 0, t, 0);
        rt_fill_env(&s, 1, t, 0);
        s.done[0] = s.done[1] = 0;
        rt_push(r, &s);
    }
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.size == 4, "size before reset %lld", (long long)st.size);
    CHECK_OK(vp_replay_reset(r));
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.size == 0 && st.head == 0 && st.pushes == 0 && st.max_priority == 1.0f, "reset counters");
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    CHECK(((float*)f.priority.data)[0] == 0.0f, "reset priorities");
    /* nothing pending: the next push writes nothing (n = 2) */
    vp_replay_step v = rt_step_view(&s);
    CHECK_OK(vp_replay_push(r, &v));
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.size == 0, "pending windows were emptied (size %lld)", (long long)st.size);
    vp_replay_free(r);
}

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_nstep_by_hand);
    RUN_TEST(test_nstep_gamma_099);
    RUN_TEST(test_done_as_float);
    RUN_TEST(test_config_errors);
    RUN_TEST(test_push_argument_errors);
    RUN_TEST(test_reset);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
