/* Tests of hindsight relabelling on the replay ring (CPU): a hand-built episode (one env, five
 * steps, n_step 2, gamma 0.5, a terminal end) with its goal weights, episode numbers, achieved
 * return, goal terms and relabelled goals and rewards by value at ratio 0 and 1; an unfinished
 * episode never relabelled; the coin of ratio 0.5 as the Philox rule says; a forgotten episode
 * (table of one) not relabelled; a HER ring of lambda 0 and ratio 0 sampling the plain ring's
 * batches bit for bit; the plain ring's size unchanged; the configuration's checks. */
#include "learn/replay_impl.h"
#include "test_replay_util.h"
#include "vp_test.h"
#include "vulpes/rng.h"

static vp_backend* g_cpu;

/* Goal of the hand-built episodes; the rewards of the first episode and its achieved return. */
#define GOAL 3.0f
static const float REW[5] = {1, 2, 4, 8, -16}; /* R_ep = 1 + 2 + 4 + 8 - 16 = -1 */

/* A HER ring of one env: capacity 16, n_step 2, gamma 0.5, uniform, P 2 (entry 1 the goal). */
static vp_replay* her_ring(float ratio, float lambda, int episodes) {
    vp_replay_cfg c = rt_cfg(16, 1, 2, 0.5f);
    c.prioritized = 0;
    c.her = 1;
    c.her_ratio = ratio;
    c.her_lambda = lambda;
    c.her_episodes = episodes;
    return rt_ring(g_cpu, c);
}

/* Pushes step t of an episode of one env: portfolio (t, GOAL), next (t + 0.5, GOAL), reward r. */
static void push_step(vp_replay* r, int t, float rew, int done) {
    rt_step s;
    memset(&s, 0, sizeof s);
    s.E = 1, s.P = 2, s.NB = 3;
    rt_fill_env(&s, 0, 10 + t, (float)t);
    s.port[1] = GOAL;
    s.next_port[1] = GOAL;
    s.rew[0] = rew;
    s.done[0] = done;
    rt_push(r, &s);
}

/* The first episode (five steps, terminal), then `extra` steps of an unfinished second one, each
 * of reward 1. */
static void push_episodes(vp_replay* r, int extra) {
    for (int t = 0; t < 5; ++t) push_step(r, t, REW[t], t == 4 ? VP_REPLAY_TERMINAL : VP_REPLAY_RUNNING);
    for (int t = 0; t < extra; ++t) push_step(r, 5 + t, 1.0f, VP_REPLAY_RUNNING);
}

/* A batch of 64 rows with the goal term and the relabel flags. */
typedef struct her_batch {
    rt_batch o;
    float goal[64];
    int32_t rel[64];
} her_batch;

static void sample(vp_replay* r, her_batch* h) {
    memset(h, 0, sizeof *h);
    h->o.B = 64, h->o.P = 2, h->o.NB = 3;
    vp_replay_batch v = rt_batch_view(&h->o);
    v.reward_goal = vp_tensor_1d(h->goal, VP_F32, VP_MEM_HOST, 64);
    v.relabelled = vp_tensor_1d(h->rel, VP_I32, VP_MEM_HOST, 64);
    CHECK_OK(vp_replay_sample(r, &v));
}

/* Slots 0..4 of the hand-built episode: n-step returns, goal weights, episode 0, R_ep -1. */
static void test_episode_columns(void) {
    vp_replay* r = her_ring(0.0f, 0.5f, 4);
    if (!r) return;
    push_episodes(r, 2);
    vp_replay_fields f;
    CHECK_OK(vp_replay_fields_get(r, &f));
    const float* rew = (const float*)f.reward.data;
    const float* gw = (const float*)f.goal_weight.data;
    const int32_t* id = (const int32_t*)f.episode_id.data;
    const int32_t* env = (const int32_t*)f.episode_env.data;
    // returns r_t + 0.5 r_t+1: 1 + 1, 2 + 2, 4 + 4, 8 - 8, -16; then the second episode's 1 + 0.5.
    // The goal term reaches s_t from the last step: 0.5 for t = 3, 1 for t = 4, none before it.
    const float want_rew[6] = {2, 4, 8, 0, -16, 1.5f}, want_gw[6] = {0, 0, 0, 0.5f, 1, 0};
    const int32_t want_id[6] = {0, 0, 0, 0, 0, 1};
    for (int i = 0; i < 6; ++i)
        CHECK(rew[i] == want_rew[i] && gw[i] == want_gw[i] && id[i] == want_id[i] && env[i] == 0,
              "slot %d: reward %g goal weight %g episode %d env %d (want %g %g %d 0)", i, (double)rew[i], (double)gw[i],
              (int)id[i], (int)env[i], (double)want_rew[i], (double)want_gw[i], (int)want_id[i]);
    const vp_replay_dev* d = vp_replay_dev_get(r);
    // one finished episode, filed at table row 0 with R_ep -1; the second has 1 + 1 = 2 so far
    CHECK(d->p_ep[0] == 1 && d->tab_id[0] == 0 && d->tab_ret[0] == -1.0f && d->p_ret[0] == 2.0f,
          "env 0: %d finished, table row 0 holds episode %d return %g, running return %g", (int)d->p_ep[0],
          (int)d->tab_id[0], (double)d->tab_ret[0], (double)d->p_ret[0]);
    CHECK(d->tab_id[1] == -1 && d->tab_id[2] == -1 && d->tab_id[3] == -1, "the other table rows empty");
    vp_replay_free(r);
}

/* Ratio 0: no goal relabelled; the goal term -0.5 |R_ep - g| = -0.5 x 4 = -2 at the end step,
 * weighted 0.5 one step before it. Ratio 1: every finished episode's row relabelled to g = -1 in
 * both portfolio rows, its goal term 0; the unfinished episode's row keeps g = 3 and no term. */
static void test_ratio_0_and_1(void) {
    const float want_term0[6] = {0, 0, 0, -1, -2, 0};
    const float ext[6] = {2, 4, 8, 0, -16, 1.5f};
    for (int ratio = 0; ratio <= 1; ++ratio) {
        vp_replay* r = her_ring((float)ratio, 0.5f, 4);
        if (!r) return;
        push_episodes(r, 2);
        her_batch h;
        sample(r, &h);
        int seen[6] = {0};
        for (int j = 0; j < 64; ++j) {
            const int i = h.o.idx[j];
            CHECK(i >= 0 && i < 6, "ratio %d row %d drew slot %d", ratio, j, i);
            if (i < 0 || i >= 6) continue;
            seen[i] = 1;
            const int finished = i < 5;
            const int want_rel = ratio == 1 && finished;
            const float want_g = want_rel ? -1.0f : GOAL;
            const float want_term = want_rel ? 0.0f : want_term0[i];
            CHECK(h.rel[j] == want_rel, "ratio %d row %d (slot %d): relabelled %d", ratio, j, i, (int)h.rel[j]);
            CHECK(h.o.port[2 * j + 1] == want_g && h.o.next_port[2 * j + 1] == want_g,
                  "ratio %d row %d (slot %d): goals %g, %g (want %g)", ratio, j, i, (double)h.o.port[2 * j + 1],
                  (double)h.o.next_port[2 * j + 1], (double)want_g);
            CHECK(h.o.port[2 * j] == (float)(i < 5 ? i : 5) && h.o.next_port[2 * j] == (float)(i < 4 ? i + 1 : i == 4 ? 4 : 6) + 0.5f,
                  "ratio %d row %d (slot %d): portfolio entries %g, %g", ratio, j, i, (double)h.o.port[2 * j],
                  (double)h.o.next_port[2 * j]);
            CHECK(h.goal[j] == want_term && h.o.rew[j] == ext[i] + want_term,
                  "ratio %d row %d (slot %d): goal term %g reward %g (want %g, %g)", ratio, j, i, (double)h.goal[j],
                  (double)h.o.rew[j], (double)want_term, (double)(ext[i] + want_term));
        }
        for (int i = 0; i < 6; ++i) CHECK(seen[i], "ratio %d: slot %d never drawn in 64 rows", ratio, i);
        vp_replay_free(r);
    }
}

/* Ratio 0.5: row j of sampling step 0 is relabelled exactly when its slot's episode finished and
 * the second word of Philox(seed, stream, j) maps below 0.5; the two outcomes both occur. */
static void test_coin(void) {
    vp_replay* r = her_ring(0.5f, 0.5f, 4);
    if (!r) return;
    push_episodes(r, 2);
    her_batch h;
    sample(r, &h);
    const vp_replay_cfg* c = vp_replay_get_cfg(r);
    int n_rel = 0, n_keep = 0;
    for (int j = 0; j < 64; ++j) {
        const int i = h.o.idx[j];
        const float u = vp_u32_to_unit(vp_rng_draw(c->seed, c->rng_stream, (uint64_t)j).v[1]);
        const int want = i < 5 && u < 0.5f;
        CHECK(h.rel[j] == want, "row %d (slot %d, coin %g): relabelled %d", j, i, (double)u, (int)h.rel[j]);
        if (i < 5) want ? ++n_rel : ++n_keep;
    }
    CHECK(n_rel > 0 && n_keep > 0, "ratio 0.5: %d relabelled, %d kept of the finished episode's rows", n_rel, n_keep);
    vp_replay_free(r);
}

/* A table of one episode: once the second episode ends (return 1 + 1 + 2 = 4 over three steps) the
 * first one's slots are forgotten: not relabelled, no goal term; the second's are. */
static void test_forgotten_episode(void) {
    vp_replay* r = her_ring(1.0f, 0.5f, 1);
    if (!r) return;
    push_episodes(r, 2);
    push_step(r, 7, 2.0f, VP_REPLAY_TRUNCATED);
    her_batch h;
    sample(r, &h);
    const vp_replay_dev* d = vp_replay_dev_get(r);
    CHECK(d->tab_id[0] == 1 && d->tab_ret[0] == 4.0f && d->p_ep[0] == 2, "table row 0: episode %d return %g",
          (int)d->tab_id[0], (double)d->tab_ret[0]);
    for (int j = 0; j < 64; ++j) {
        const int i = h.o.idx[j];
        const int want = i >= 5;
        CHECK(h.rel[j] == want && h.o.port[2 * j + 1] == (want ? 4.0f : GOAL), "row %d (slot %d): relabelled %d goal %g",
              j, i, (int)h.rel[j], (double)h.o.port[2 * j + 1]);
        CHECK(h.goal[j] == 0.0f, "row %d (slot %d): goal term %g", j, i, (double)h.goal[j]);
    }
    vp_replay_free(r);
}

/* With lambda 0 and ratio 0 a HER ring samples the plain ring's batches bit for bit over random
 * pushes (terminal and truncated ends), PER updates and samples; the plain ring's size is the
 * documented one. */
static void test_off_is_unchanged(void) {
    vp_replay_cfg d = vp_replay_cfg_default();
    CHECK(vp_replay_bytes(&d) == 116002624u, "default ring %zu bytes (docs/replay.md: 116,002,624)", vp_replay_bytes(&d));
    d.her_ratio = 0.7f, d.her_lambda = 2.0f, d.her_episodes = 5;
    CHECK(vp_replay_bytes(&d) == 116002624u, "her keys without her change nothing");
    d.her = 1;
    CHECK(vp_replay_bytes(&d) > 116002624u, "a HER ring adds columns");
    vp_replay_cfg c = rt_cfg(97, 5, 3, 0.9f);
    vp_replay* a = rt_ring(g_cpu, c);
    c.her = 1, c.her_ratio = 0.0f, c.her_lambda = 0.0f, c.her_episodes = 3;
    vp_replay* b = rt_ring(g_cpu, c);
    if (!a || !b) {
        vp_replay_free(a), vp_replay_free(b);
        return;
    }
    rt_step s;
    memset(&s, 0, sizeof s);
    s.E = 5, s.P = 2, s.NB = 3;
    uint64_t seed = 7;
    rt_batch oa, ob;
    memset(&oa, 0, sizeof oa), memset(&ob, 0, sizeof ob);
    oa.B = ob.B = 16, oa.P = ob.P = 2, oa.NB = ob.NB = 3;
    float loss[16];
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
        CHECK_OK(vp_replay_sample(a, &va));
        CHECK_OK(vp_replay_sample(b, &vb));
        CHECK(memcmp(&oa, &ob, sizeof oa) == 0, "push %d: the batches differ", t);
        for (int j = 0; j < 16; ++j) loss[j] = (float)rt_int(&seed, 100) * 0.03f;
        vp_tensor idx = vp_tensor_1d(oa.idx, VP_I32, VP_MEM_HOST, 16), l = vp_tensor_1d(loss, VP_F32, VP_MEM_HOST, 16);
        CHECK_OK(vp_replay_update_priorities(a, &idx, &l));
        CHECK_OK(vp_replay_update_priorities(b, &idx, &l));
    }
    vp_replay_fields fa, fb;
    CHECK_OK(vp_replay_fields_get(a, &fa));
    CHECK_OK(vp_replay_fields_get(b, &fb));
    CHECK(memcmp(fa.reward.data, fb.reward.data, vp_tensor_bytes(&fa.reward)) == 0 &&
              memcmp(fa.priority.data, fb.priority.data, vp_tensor_bytes(&fa.priority)) == 0,
          "the rings' rewards or priorities differ");
    CHECK(fa.goal_weight.data == NULL && fb.goal_weight.data != NULL, "HER columns only on the HER ring");
    vp_replay_free(a), vp_replay_free(b);
}

/* The configuration's checks name the field. */
static void test_cfg_checks(void) {
    vp_replay_cfg c = rt_cfg(16, 1, 2, 0.5f);
    c.her = 1, c.her_ratio = 1.5f, c.her_episodes = 1;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "her_ratio is 1.5");
    c.her_ratio = 0.5f, c.her_lambda = -1.0f;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "her_lambda is -1");
    c.her_lambda = 1.0f, c.her_episodes = 0;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "her_episodes is 0");
    c.her_episodes = 1, c.n_portfolio = 1;
    CHECK_STATUS(vp_replay_cfg_check(&c), VP_ERR_INVALID_ARG, "the last entry is the goal");
}

int main(void) {
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "no CPU backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_episode_columns);
    RUN_TEST(test_ratio_0_and_1);
    RUN_TEST(test_coin);
    RUN_TEST(test_forgotten_episode);
    RUN_TEST(test_off_is_unchanged);
    RUN_TEST(test_cfg_checks);
    vp_backend_free(g_cpu);
    return vpt_finish();
}
