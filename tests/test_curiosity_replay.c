/* Tests of the replay's intrinsic return (curiosity) on the CPU: the n-step extrinsic and
 * intrinsic returns of a hand-built episode kept apart (gamma 0.5, n 3, a terminal end), the
 * step's own next portfolio and done flag beside them, a sample's reward = extrinsic +
 * intrinsic; and with curiosity off the ring as before, bit for bit: the same layout and bytes,
 * the same columns and the same sampled batches as an intrinsic ring fed no intrinsic reward. */
#include "test_replay_util.h"
#include "vp_test.h"

static vp_backend* g_cpu;

/* Hand-built episode of one env: five steps, rewards ext and int, the last one terminal. */
static void test_two_returns_by_hand(void) {
    vp_replay_cfg c = rt_cfg(16, 1, 3, 0.5f);
    c.intrinsic = 1;
    c.prioritized = 0;
    vp_replay* r = rt_ring(g_cpu, c);
    if (!r) return;
    const float ext[5] = {1, 2, 4, 8, -16}, in[5] = {0.5f, 0.25f, 1, 2, 8};
    rt_step s;
    memset(&s, 0, sizeof s);
    s.E = 1, s.P = 2, s.NB = 3;
    float ri[1];
    for (int t = 0; t < 5; ++t) {
        rt_fill_env(&s, 0, 10 + t, (float)t);
        s.rew[0] = ext[t];
        ri[0] = in[t];
        s.done[0] = t == 4 ? VP_REPLAY_TERMINAL : VP_REPLAY_RUNNING;
        vp_replay_step v = rt_step_view(&s);
        v.reward_int = vp_tensor_1d(ri, VP_F32, VP_MEM_HOST, 1);
        CHECK_OK(vp_replay_push(r, &v));
    }
    // R = r_t + 0.5 r_t+1 + 0.25 r_t+2 for each term apart; the terminal tail gets shorter sums
    //   t=0: 1 + 1 + 1 = 3        0.5 + 0.125 + 0.25 = 0.875
    //   t=1: 2 + 2 + 2 = 6        0.25 + 0.5 + 0.5 = 1.25
    //   t=2: 4 + 4 - 4 = 4        1 + 1 + 2 = 4
    //   t=3: 8 - 8 = 0            2 + 4 = 6
    //   t=4: -16                  8
    const float want_ext[5] = {3, 6, 4, 0, -16}, want_int[5] = {0.875f, 1.25f, 4, 6, 8};
    const float want_disc[5] = {0.125f, 0.125f, 0, 0, 0}, want_done1[5] = {0, 0, 0, 0, 1};
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const float* rew = (const float*)f.reward.data;
    const float* rin = (const float*)f.reward_int.data;
    const float* p1 = (const float*)f.portfolio_1.data;
    const float* d1 = (const float*)f.done_1.data;
    const float* disc = (const float*)f.discount.data;
    for (int i = 0; i < 5; ++i) {
        CHECK(rew[i] == want_ext[i] && rin[i] == want_int[i], "slot %d: returns %g, %g (want %g, %g)", i,
              (double)rew[i], (double)rin[i], (double)want_ext[i], (double)want_int[i]);
        CHECK(disc[i] == want_disc[i] && d1[i] == want_done1[i], "slot %d: discount %g, done_1 %g", i, (double)disc[i],
              (double)d1[i]);
        // the step's own next portfolio (t + 0.5, t + 0.625), not the n-step one
        CHECK(p1[2 * i] == (float)i + 0.5f && p1[2 * i + 1] == (float)i + 0.625f, "slot %d: portfolio_1 %g, %g", i,
              (double)p1[2 * i], (double)p1[2 * i + 1]);
    }
    // a sample: reward = extrinsic + intrinsic, the intrinsic part and the one-step target beside it
    rt_batch o;
    memset(&o, 0, sizeof o);
    o.B = 32, o.P = 2, o.NB = 3;
    float o_int[32], o_p1[64], o_d1[32];
    vp_replay_batch v = rt_batch_view(&o);
    v.reward_int = vp_tensor_1d(o_int, VP_F32, VP_MEM_HOST, 32);
    v.portfolio_1 = vp_tensor_2d(o_p1, VP_F32, VP_MEM_HOST, 32, 2);
    v.done_1 = vp_tensor_1d(o_d1, VP_F32, VP_MEM_HOST, 32);
    CHECK_OK(vp_replay_sample(r, &v));
    for (int j = 0; j < 32; ++j) {
        const int i = o.idx[j];
        CHECK(i >= 0 && i < 5, "row %d drew slot %d", j, i);
        if (i < 0 || i >= 5) continue;
        CHECK(o.rew[j] == want_ext[i] + want_int[i] && o_int[j] == want_int[i] && o_d1[j] == want_done1[i] &&
                  o_p1[2 * j] == (float)i + 0.5f && o.disc[j] == want_disc[i],
              "row %d (slot %d): reward %g, intrinsic %g, done_1 %g", j, i, (double)o.rew[j], (double)o_int[j],
              (double)o_d1[j]);
    }
    vp_replay_free(r);
}

/* The same random pushes, updates and samples into a plain ring and an intrinsic ring fed no
 * intrinsic reward: every common column and every batch equal bit for bit. */
static void test_off_is_unchanged(void) {
    // the layout without curiosity is the documented one
    vp_replay_cfg d = vp_replay_cfg_default();
    CHECK(vp_replay_bytes(&d) == 116002624u, "default ring %zu bytes (docs/replay.md: 116,002,624)", vp_replay_bytes(&d));
    d.intrinsic = 1;
    CHECK(vp_replay_bytes(&d) > 116002624u, "an intrinsic ring adds columns");
    vp_replay_cfg c = rt_cfg(97, 5, 3, 0.9f);
    vp_replay* a = rt_ring(g_cpu, c);
    c.intrinsic = 1;
    vp_replay* b = rt_ring(g_cpu, c);
    if (!a || !b) {
        vp_replay_free(a), vp_replay_free(b);
        return;
    }
    rt_step s;
    memset(&s, 0, sizeof s);
    s.E = 5, s.P = 2, s.NB = 3;
    uint64_t seed = 99;
    rt_batch oa, ob;
    memset(&oa, 0, sizeof oa), memset(&ob, 0, sizeof ob);
    oa.B = ob.B = 16, oa.P = ob.P = 2, oa.NB = ob.NB = 3;
    float b_int[16], loss[16];
    for (int t = 0; t < 60; ++t) {
        for (int e = 0; e < 5; ++e) {
            rt_fill_env(&s, e, 100 + t, (float)(t + e));
            s.rew[e] = (float)(rt_int(&seed, 200) + 1) * 0.01f;
            const int u = rt_int(&seed, 10);
            s.done[e] = u == 0 ? VP_REPLAY_TERMINAL : (u == 1 ? VP_REPLAY_TRUNCATED : VP_REPLAY_RUNNING);
        }
        rt_push(a, &s);
        rt_push(b, &s);
        if (t % 4 != 3) continue;
        vp_replay_batch va = rt_batch_view(&oa), vb = rt_batch_view(&ob);
        vb.reward_int = vp_tensor_1d(b_int, VP_F32, VP_MEM_HOST, 16);
        CHECK_OK(vp_replay_sample(a, &va));
        CHECK_OK(vp_replay_sample(b, &vb));
        CHECK(memcmp(&oa, &ob, sizeof oa) == 0, "push %d: the batches differ", t);
        for (int j = 0; j < 16; ++j) {
            CHECK(b_int[j] == 0.0f, "push %d row %d: intrinsic %g without intrinsic rewards", t, j, (double)b_int[j]);
            loss[j] = (float)rt_int(&seed, 100) * 0.03f;
        }
        vp_tensor idx = vp_tensor_1d(oa.idx, VP_I32, VP_MEM_HOST, 16), l = vp_tensor_1d(loss, VP_F32, VP_MEM_HOST, 16);
        CHECK_OK(vp_replay_update_priorities(a, &idx, &l));
        CHECK_OK(vp_replay_update_priorities(b, &idx, &l));
    }
    vp_replay_fields fa, fb;
    CHECK_OK(vp_replay_fields_get(a, &fa));
    CHECK_OK(vp_replay_fields_get(b, &fb));
    const vp_tensor* ca[] = {&fa.bar_idx, &fa.next_bar_idx, &fa.window_end, &fa.portfolio, &fa.next_portfolio,
                             &fa.action,  &fa.reward,       &fa.discount,   &fa.done,      &fa.priority};
    const vp_tensor* cb[] = {&fb.bar_idx, &fb.next_bar_idx, &fb.window_end, &fb.portfolio, &fb.next_portfolio,
                             &fb.action,  &fb.reward,       &fb.discount,   &fb.done,      &fb.priority};
    for (int k = 0; k < 10; ++k)
        CHECK(memcmp(ca[k]->data, cb[k]->data, vp_tensor_bytes(ca[k])) == 0, "ring column %d differs", k);
    CHECK(fa.reward_int.data == NULL && fa.portfolio_1.data == NULL && fb.reward_int.data != NULL,
          "intrinsic columns only on the intrinsic ring");
    // a plain ring refuses an intrinsic reward
    float ri[5] = {0};
    vp_replay_step v = rt_step_view(&s);
    v.reward_int = vp_tensor_1d(ri, VP_F32, VP_MEM_HOST, 5);
    CHECK_STATUS(vp_replay_push(a, &v), VP_ERR_INVALID_ARG, "keeps no intrinsic return");
    vp_replay_free(a), vp_replay_free(b);
}

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_two_returns_by_hand);
    RUN_TEST(test_off_is_unchanged);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
