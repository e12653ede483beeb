/* Tests of the replay ring's order on the CPU backend: wrap-around at a capacity that is
 * not a power of two against an independent reference model, env order, and thousands
 * of envs over several scan tiles. */
#include "test_replay_util.h"

static vp_backend* g_cpu = NULL;

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
    vp_replay* r = rt_ring(g_cpu, c);
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
        rt_push(r, &s);
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
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    rt_step s = {.E = 4, .P = 2, .NB = 3};
    for (int t = 0; t < 3; ++t) {
        for (int e = 0; e < 4; ++e) {
            rt_fill_env(&s, e, 10 * t + e, 0);
            s.rew[e] = (float)e;
            s.done[e] = 0;
        }
        rt_push(r, &s);
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
    memset(&v, 0, sizeof v); /* optional fields (the intrinsic ones) absent */
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

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_wraparound_odd_capacity);
    RUN_TEST(test_one_step_env_order);
    RUN_TEST(test_many_envs);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
