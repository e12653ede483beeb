/* Tests of the replay ring's insertion on the CPU backend: n-step returns by hand,
 * terminal vs truncated ends, env order, wrap-around at a capacity that is not a power
 * of two against an independent reference model, configuration errors and reset. */
#include "test_replay_util.h"

static vp_backend* g_cpu = NULL;

/* ---- n-step returns by hand ---------------------------------------------------------------- */

/* One env, n = 3, gamma = 0.5. Steps t0..t7: rewards 1 2 4 8 | 1 1 | 3 -2, t3 terminal
 * (ruin), t5 truncated. Expected ring: t0 (3 step), t1, t2, t3 (terminal tail), t4, t5
 * (truncated tail), t6 and t7 still pending. */
static void test_nstep_by_hand(void) {
    vp_replay_cfg c = rt_cfg(16, 1, 3, 0.5f);
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
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
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(r, &v));
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
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
    if (!r) return;
    const float rew[4] = {0.3f, -1.7f, 2.9f, 0.01f};
    rt_step s = {.E = 1, .P = 2, .NB = 3};
    for (int t = 0; t < 4; ++t) {
        rt_fill_env(&s, 0, 10 + t, 0);
        s.rew[0] = rew[t];
        s.done[0] = t == 3 ? VP_REPLAY_TERMINAL : 0;
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(r, &v));
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

/* done as f32 (as vp_env_step writes it: 0 running, 1 terminal, 2 truncated) gives the same
 * ring as the i32 codes. */
static void test_done_as_float(void) {
    vp_replay_cfg c = rt_cfg(9, 2, 3, 0.5f);
    vp_replay *ri = NULL, *rf = NULL;
    CHECK_OK(vp_replay_init(&ri, g_cpu, &c));
    CHECK_OK(vp_replay_init(&rf, g_cpu, &c));
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

/* ---- an independent reference model of the ring ------------------------------------------- */

typedef struct ref_tr {
    int32_t bar, wend, next_bar, done, act[RT_MAX_NB];
    float port[RT_MAX_P], next_port[RT_MAX_P], rew, disc;
} ref_tr;

typedef struct ref_ring {
    int E, n, P, NB;
    float gamma;
    int count[RT_MAX_ENVS];
    ref_tr pend[RT_MAX_ENVS][VP_REPLAY_MAX_NSTEP]; /* oldest first */
    ref_tr* out;                                   /* every transition written, in order */
    int64_t n_out;
} ref_ring;

/* The reference push: per env in env order, forward float64 sums. */
static void ref_push(ref_ring* m, const rt_step* s) {
    for (int e = 0; e < m->E; ++e) {
        ref_tr* w = m->pend[e];
        ref_tr* a = &w[m->count[e]++];
        a->bar = s->bar[e];
        a->wend = s->wend[e];
        memcpy(a->port, &s->port[e * m->P], sizeof(float) * (size_t)m->P);
        memcpy(a->act, &s->act[e * m->NB], sizeof(int32_t) * (size_t)m->NB);
        a->rew = s->rew[e];
        int c = m->count[e], ended = s->done[e] != 0;
        int emit = ended ? c : (c == m->n ? 1 : 0);
        for (int i = 0; i < emit; ++i) {
            ref_tr t = w[i];
            double R = 0, g = 1;
            for (int j = i; j < c; ++j, g *= m->gamma) R += g * w[j].rew;
            t.rew = (float)R;
            t.disc = s->done[e] == VP_REPLAY_TERMINAL ? 0.0f : (float)pow(m->gamma, c - i);
            t.done = s->done[e];
            t.next_bar = s->next_bar[e];
            memcpy(t.next_port, &s->next_port[e * m->P], sizeof(float) * (size_t)m->P);
            m->out[m->n_out++] = t;
        }
        if (ended) {
            m->count[e] = 0;
        } else if (emit) {
            memmove(w, w + 1, sizeof(ref_tr) * (size_t)(c - 1));
            m->count[e] = c - 1;
        }
    }
}

/* Capacity 7 (not a power of two), 3 envs, n = 2, gamma 0.5, random terminal / truncated
 * ends: after every push the whole ring equals the reference's last 7 transitions. */
static void test_wraparound_odd_capacity(void) {
    const int E = 3, n = 2, T = 40;
    const int64_t C = 7;
    vp_replay_cfg c = rt_cfg(C, E, n, 0.5f);
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
    if (!r) return;
    ref_ring m;
    memset(&m, 0, sizeof m);
    m.E = E, m.n = n, m.P = 2, m.NB = 3, m.gamma = 0.5f;
    m.out = (ref_tr*)calloc((size_t)(E * T * n), sizeof(ref_tr));
    uint64_t rng = 99;
    rt_step s = {.E = E, .P = 2, .NB = 3};
    int mismatches = 0;
    for (int t = 0; t < T; ++t) {
        for (int e = 0; e < E; ++e) {
            rt_fill_env(&s, e, 1000 * e + t, (float)(e * 100 + t));
            s.rew[e] = 0.25f * (float)(rt_int(&rng, 17) - 8); /* exact in any summation order */
            int u = rt_int(&rng, 10);
            s.done[e] = u == 0 ? VP_REPLAY_TERMINAL : (u == 1 ? VP_REPLAY_TRUNCATED : VP_REPLAY_RUNNING);
        }
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(r, &v));
        ref_push(&m, &s);

        vp_replay_stats st;
        CHECK_OK(vp_replay_stats_read(r, &st));
        CHECK(st.emitted == m.n_out && st.size == (m.n_out < C ? m.n_out : C) && st.head == m.n_out % C,
              "t %d: emitted %lld size %lld head %lld, reference wrote %lld", t, (long long)st.emitted,
              (long long)st.size, (long long)st.head, (long long)m.n_out);
        vp_replay_fields f;
        CHECK_OK(vp_replay_fields_get(r, &f));
        for (int64_t k = m.n_out - 1; k >= 0 && k >= m.n_out - C; --k) {
            const ref_tr* x = &m.out[k];
            int64_t i = k % C;
            int ok = ((int32_t*)f.bar_idx.data)[i] == x->bar && ((int32_t*)f.window_end.data)[i] == x->wend &&
                     ((int32_t*)f.next_bar_idx.data)[i] == x->next_bar && ((int32_t*)f.done.data)[i] == x->done &&
                     ((float*)f.reward.data)[i] == x->rew && ((float*)f.discount.data)[i] == x->disc &&
                     memcmp((float*)f.portfolio.data + i * 2, x->port, 2 * sizeof(float)) == 0 &&
                     memcmp((float*)f.next_portfolio.data + i * 2, x->next_port, 2 * sizeof(float)) == 0 &&
                     memcmp((int32_t*)f.action.data + i * 3, x->act, 3 * sizeof(int32_t)) == 0;
            if (!ok && mismatches++ < 5)
                CHECK(ok, "t %d: slot %lld (transition %lld) differs from the reference", t, (long long)i,
                      (long long)k);
        }
    }
    CHECK(m.n_out > 3 * C, "the ring wrapped several times (%lld transitions)", (long long)m.n_out);
    CHECK(mismatches == 0, "%d slot mismatches", mismatches);
    free(m.out);
    vp_replay_free(r);
}

/* n = 1: every push writes one transition per env, in env order. */
static void test_one_step_env_order(void) {
    vp_replay_cfg c = rt_cfg(10, 4, 1, 0.9f);
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
    if (!r) return;
    rt_step s = {.E = 4, .P = 2, .NB = 3};
    for (int t = 0; t < 3; ++t) {
        for (int e = 0; e < 4; ++e) {
            rt_fill_env(&s, e, 10 * t + e, 0);
            s.rew[e] = (float)e;
            s.done[e] = 0;
        }
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(r, &v));
    }
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    /* 12 transitions into 10 slots: slots 0, 1 hold push 2's envs 2, 3 */
    const int32_t* bar = f.bar_idx.data;
    const int32_t expect[10] = {22, 23, 2, 3, 10, 11, 12, 13, 20, 21};
    for (int i = 0; i < 10; ++i) CHECK(bar[i] == expect[i], "slot %d bar %d, expected %d", i, bar[i], expect[i]);
    CHECK(((float*)f.discount.data)[5] == 0.9f, "1-step discount is gamma");
    vp_replay_free(r);
}

/* 9001 envs (three scan tiles, the last one partial), n = 1, capacity 20011: push t writes
 * env e's transition at slot (t * 9001 + e) mod 20011, with every third env ending. */
static void test_many_envs(void) {
    const int E = 9001, P = 2, NB = 3, T = 5;
    const int64_t C = 20011;
    vp_replay_cfg c = rt_cfg(C, E, 1, 0.5f);
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
    int32_t* i32 = (int32_t*)calloc((size_t)E * (4 + NB), sizeof(int32_t));
    float* f32 = (float*)calloc((size_t)E * (1 + 2 * P), sizeof(float));
    if (!r || !i32 || !f32) {
        CHECK(0, "set-up");
        free(i32), free(f32), vp_replay_free(r);
        return;
    }
    vp_replay_step v;
    v.bar_idx = vp_tensor_1d(i32, VP_I32, VP_MEM_HOST, E);
    v.window_end = vp_tensor_1d(i32 + E, VP_I32, VP_MEM_HOST, E);
    v.done = vp_tensor_1d(i32 + 2 * E, VP_I32, VP_MEM_HOST, E);
    v.next_bar_idx = vp_tensor_1d(i32 + 3 * E, VP_I32, VP_MEM_HOST, E);
    v.action = vp_tensor_2d(i32 + 4 * E, VP_I32, VP_MEM_HOST, E, NB);
    v.reward = vp_tensor_1d(f32, VP_F32, VP_MEM_HOST, E);
    v.portfolio = vp_tensor_2d(f32 + E, VP_F32, VP_MEM_HOST, E, P);
    v.next_portfolio = vp_tensor_2d(f32 + E + E * P, VP_F32, VP_MEM_HOST, E, P);
    for (int t = 0; t < T; ++t) {
        for (int e = 0; e < E; ++e) {
            i32[e] = t * E + e;
            i32[2 * E + e] = e % 3 == 0 ? VP_REPLAY_TERMINAL : VP_REPLAY_RUNNING;
            f32[e] = (float)(e % 5);
        }
        CHECK_OK(vp_replay_push(r, &v));
    }
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const int32_t* bar = f.bar_idx.data;
    const float* disc = f.discount.data;
    int64_t bad = 0;
    for (int64_t k = (int64_t)T * E - C; k < (int64_t)T * E; ++k) {
        int64_t i = k % C;
        int e = (int)(k % E);
        bad += bar[i] != (int32_t)k || disc[i] != (e % 3 == 0 ? 0.0f : 0.5f);
    }
    CHECK(bad == 0, "%lld slots hold the wrong transition", (long long)bad);
    vp_replay_stats st;
    CHECK_OK(vp_replay_stats_read(r, &st));
    CHECK(st.size == C && st.head == ((int64_t)T * E) % C, "size %lld head %lld", (long long)st.size,
          (long long)st.head);
    free(i32), free(f32);
    vp_replay_free(r);
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
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
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
    vp_replay* r = NULL;
    CHECK_OK(vp_replay_init(&r, g_cpu, &c));
    if (!r) return;
    rt_step s = {.E = 2, .P = 2, .NB = 3};
    for (int t = 0; t < 3; ++t) {
        rt_fill_env(&s, 0, t, 0);
        rt_fill_env(&s, 1, t, 0);
        s.done[0] = s.done[1] = 0;
        vp_replay_step v = rt_step_view(&s);
        CHECK_OK(vp_replay_push(r, &v));
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
    RUN_TEST(test_wraparound_odd_capacity);
    RUN_TEST(test_one_step_env_order);
    RUN_TEST(test_many_envs);
    RUN_TEST(test_config_errors);
    RUN_TEST(test_push_argument_errors);
    RUN_TEST(test_reset);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
