/* The environment over many envs and steps on random-walk markets: auto-reset to seeded
 * starts inside the span, determinism, no look-ahead, state save/restore, random actions
 * and argument errors. */
#include "test_env_util.h"
#include "vp_test.h"

/* A CPU market, env and host output buffers for n envs. */
typedef struct run {
    vp_backend* b;
    vpt_bars bars;
    vp_env_market m;
    vp_env e;
    int64_t n;
    int32_t *act, *obs;
    float *rew, *done, *pf;
} run;

/* Builds a run over a walk of T bars (seed wseed), span [begin, end), the given config. */
static int run_init(run* r, int64_t T, uint64_t wseed, int64_t begin, int64_t end, vp_env_config cfg, int64_t n) {
    memset(r, 0, sizeof *r);
    CHECK_OK(vp_backend_cpu_init(&r->b));
    r->bars = vpt_bars_alloc(T);
    vpt_bars_walk(&r->bars, wseed, 0, 4000.0, 0.004, 0.25);
    r->n = n;
    r->act = (int32_t*)calloc((size_t)n * 4, sizeof(int32_t));
    r->obs = (int32_t*)calloc((size_t)n, sizeof(int32_t));
    r->rew = (float*)calloc((size_t)n, sizeof(float));
    r->done = (float*)calloc((size_t)n, sizeof(float));
    r->pf = (float*)calloc((size_t)n * 8, sizeof(float));
    vp_env_market_desc d = {T, r->bars.o, r->bars.h, r->bars.l, r->bars.c, r->bars.atr, begin, end, NULL, NULL, 0.0,
                            0.0};
    vp_instrument inst = vpt_instrument_emini();
    inst.max_position = 5;
    if (vp_env_market_init(&r->m, r->b, &d) != VP_OK || vp_env_init(&r->e, r->b, &r->m, &inst, &cfg, n) != VP_OK) {
        CHECK(0, "set-up: %s", vp_last_error());
        return 0;
    }
    return 1;
}

/* Rebuilds the market's bars from `from` on with another walk seed (same env settings). */
static void run_rewalk(run* r, int64_t from, uint64_t wseed) {
    vpt_bars_walk(&r->bars, wseed, from, 0.0, 0.006, 0.25);
    vp_env_config cfg = r->e.config;
    vp_instrument inst = r->e.instrument;
    vp_env_free(&r->e);
    vp_env_market_free(&r->m);
    vp_env_market_desc d = {r->bars.n, r->bars.o, r->bars.h, r->bars.l, r->bars.c, r->bars.atr, 0, 0, NULL, NULL,
                            0.0, 0.0};
    d.begin = 20, d.end = r->bars.n - 20;
    CHECK_OK(vp_env_market_init(&r->m, r->b, &d));
    CHECK_OK(vp_env_init(&r->e, r->b, &r->m, &inst, &cfg, r->n));
}

static void run_free(run* r) {
    vp_env_free(&r->e);
    vp_env_market_free(&r->m);
    vpt_bars_free(&r->bars);
    free(r->act), free(r->obs), free(r->rew), free(r->done), free(r->pf);
    vp_backend_free(r->b);
}

/* Draws random actions (seed, counter) and steps once. */
static void run_step(run* r, uint64_t seed, uint64_t counter) {
    vp_tensor ta = vp_tensor_2d(r->act, VP_I32, VP_MEM_HOST, r->n, 4);
    vp_tensor tr = vp_tensor_1d(r->rew, VP_F32, VP_MEM_HOST, r->n);
    vp_tensor td = vp_tensor_1d(r->done, VP_F32, VP_MEM_HOST, r->n);
    vp_tensor to = vp_tensor_1d(r->obs, VP_I32, VP_MEM_HOST, r->n);
    vp_tensor tp = vp_tensor_2d(r->pf, VP_F32, VP_MEM_HOST, r->n, 8);
    CHECK_OK(vp_env_random_actions(r->b, seed, counter, &ta));
    CHECK_OK(vp_env_step(&r->e, &ta, &tr, &td, &to, &tp));
}

/* Start bar of an episode computed here from the Philox words, independently of the env. */
static int64_t expected_start(uint64_t seed, int64_t env, uint32_t episode, int64_t begin, int64_t n_starts) {
    vp_u32x4 w = vp_rng_draw(seed, (uint64_t)env, (uint64_t)episode);
    return begin + (int64_t)(((uint64_t)w.v[0] * (uint64_t)n_starts) >> 32);
}

static void test_auto_reset_starts(void) {
    /* ruin only below zero equity, out of reach here: every episode runs its 20 steps */
    vp_env_config cfg = {20, 0.0, 100.0, 0.0, 0.0, 11};
    const int64_t n = 67, begin = 50, end = 400, n_starts = end - begin - 20;
    run r;
    if (!run_init(&r, 500, 3, begin, end, cfg, n)) return;
    vpt_state h = vpt_state_alloc(n), prev = vpt_state_alloc(n);
    CHECK_OK(vp_env_state_get(&r.e, &h.s));
    for (int64_t i = 0; i < n; ++i)
        CHECK(h.s.t[i] == expected_start(11, i, 0, begin, n_starts) && h.s.episode[i] == 0, "env %lld first start",
              (long long)i);
    int64_t resets = 0, distinct = 0;
    double sum_start = 0;
    char seen[500] = {0};
    for (int step = 0; step < 205; ++step) {
        CHECK_OK(vp_env_state_get(&r.e, &prev.s));
        run_step(&r, 5, (uint64_t)step);
        CHECK_OK(vp_env_state_get(&r.e, &h.s));
        for (int64_t i = 0; i < n; ++i) {
            int at_end = prev.s.t[i] + 1 == prev.s.window_end[i];
            CHECK((r.done[i] == 1.0f) == at_end, "env %lld step %d: done %g, t %d, window_end %d", (long long)i, step,
                  r.done[i], prev.s.t[i], prev.s.window_end[i]);
            if (r.done[i] == 0.0f) continue;
            /* a new episode: seeded start inside the span, fresh money, the next counter */
            int64_t want = expected_start(11, i, h.s.episode[i], begin, n_starts);
            CHECK(r.obs[i] == want && h.s.t[i] == want, "env %lld episode %u start %d, expected %lld", (long long)i,
                  h.s.episode[i], r.obs[i], (long long)want);
            CHECK(r.obs[i] >= begin && r.obs[i] + 20 < end, "start %d outside the span", r.obs[i]);
            CHECK(h.s.window_end[i] == r.obs[i] + 20 && h.s.cash[i] == 100000.0 && h.s.position[i] == 0,
                  "fresh episode state");
            CHECK(r.pf[i * 8 + 6] == 1.0f && r.pf[i * 8 + 0] == 0.0f, "fresh portfolio");
            resets++;
            sum_start += r.obs[i];
            if (!seen[r.obs[i]]) seen[r.obs[i]] = 1, distinct++;
        }
    }
    /* 205 steps of 20-bar episodes: at least 10 resets each; starts spread over the span */
    CHECK(resets == 10 * n, "%lld resets", (long long)resets);
    CHECK(distinct > 200, "only %lld distinct starts", (long long)distinct);
    CHECK_NEAR(sum_start / (double)resets, begin + (n_starts - 1) / 2.0, 10.0, 0);
    vpt_state_free(&h), vpt_state_free(&prev);
    run_free(&r);
}

/* Runs `steps` random steps of 257 envs under env seed `seed`; returns a hash of all outputs and states. */
static uint64_t hash_run(uint64_t seed, int steps) {
    vp_env_config cfg = {37, 0.5, 100.0, 0.1, 0.01, seed};
    run r;
    if (!run_init(&r, 1000, 8, 30, 990, cfg, 257)) return 0;
    vpt_state h = vpt_state_alloc(r.n);
    uint64_t hash = 1469598103934665603ull;
    for (int s = 0; s < steps; ++s) {
        run_step(&r, 21, (uint64_t)s);
        CHECK_OK(vp_env_state_get(&r.e, &h.s));
        const unsigned char* parts[5] = {(const unsigned char*)h.mem, (const unsigned char*)r.rew,
                                         (const unsigned char*)r.done, (const unsigned char*)r.obs,
                                         (const unsigned char*)r.pf};
        size_t sizes[5] = {vpt_state_bytes(r.n), (size_t)r.n * 4, (size_t)r.n * 4, (size_t)r.n * 4, (size_t)r.n * 32};
        for (int p = 0; p < 5; ++p)
            for (size_t k = 0; k < sizes[p]; ++k) hash = (hash ^ parts[p][k]) * 1099511628211ull;
    }
    vpt_state_free(&h);
    run_free(&r);
    return hash;
}

static void test_determinism(void) {
    uint64_t a = hash_run(99, 300), b = hash_run(99, 300), c = hash_run(100, 300);
    CHECK(a == b, "same seed, different bits: %016llx vs %016llx", (unsigned long long)a, (unsigned long long)b);
    CHECK(a != c, "another seed gave the same bits");
}

static void test_no_lookahead(void) {
    /* long episodes (no window restart before the cut); bars after the cut replaced */
    vp_env_config cfg = {250, 0.0, 100.0, 0.1, 0.01, 5};
    const int64_t cuts[3] = {60, 101, 170};
    for (int ci = 0; ci < 3; ++ci) {
        int64_t cut = cuts[ci];
        run a, b;
        if (!run_init(&a, 300, 4, 20, 280, cfg, 16) || !run_init(&b, 300, 4, 20, 280, cfg, 16)) return;
        run_rewalk(&b, cut + 1, 77);
        vpt_state ha = vpt_state_alloc(16), hb = vpt_state_alloc(16);
        int compared = 0, differed = 0;
        char passed[16] = {0}; /* env has reached a bar after the cut (a restart may come back before it) */
        for (int s = 0; s < 200; ++s) {
            run_step(&a, 3, (uint64_t)s);
            run_step(&b, 3, (uint64_t)s);
            CHECK_OK(vp_env_state_get(&a.e, &ha.s));
            CHECK_OK(vp_env_state_get(&b.e, &hb.s));
            for (int64_t i = 0; i < 16; ++i) {
                /* the observation is the bar the state has reached, never later */
                CHECK(a.obs[i] == ha.s.t[i] && a.obs[i] >= 20 && a.obs[i] < 280, "obs %d vs t %d", a.obs[i],
                      ha.s.t[i]);
                int same = a.rew[i] == b.rew[i] && a.done[i] == b.done[i] && a.obs[i] == b.obs[i] &&
                           memcmp(a.pf + i * 8, b.pf + i * 8, 32) == 0 && ha.s.cash[i] == hb.s.cash[i] &&
                           ha.s.equity[i] == hb.s.equity[i] && ha.s.position[i] == hb.s.position[i];
                passed[i] |= a.obs[i] > cut || b.obs[i] > cut;
                if (!passed[i]) {
                    CHECK(same, "cut %lld: env %lld differs at obs %d, before the changed bars", (long long)cut,
                          (long long)i, a.obs[i]);
                    compared++;
                } else if (!same) {
                    differed++;
                }
            }
        }
        /* the comparison ran, and the changed bars do show once they are reached */
        CHECK(compared > 16 * 30 && differed > 0, "cut %lld: %d compared, %d differed", (long long)cut, compared,
              differed);
        vpt_state_free(&ha), vpt_state_free(&hb);
        run_free(&a), run_free(&b);
    }
}

static void test_state_save_restore(void) {
    vp_env_config cfg = {50, 0.5, 100.0, 0.0, 0.0, 9};
    run r;
    if (!run_init(&r, 600, 6, 10, 590, cfg, 33)) return;
    for (int s = 0; s < 40; ++s) run_step(&r, 1, (uint64_t)s);
    vpt_state saved = vpt_state_alloc(33), h1 = vpt_state_alloc(33), h2 = vpt_state_alloc(33);
    CHECK_OK(vp_env_state_get(&r.e, &saved.s));
    for (int s = 40; s < 90; ++s) run_step(&r, 1, (uint64_t)s);
    CHECK_OK(vp_env_state_get(&r.e, &h1.s));
    float rew1[33];
    memcpy(rew1, r.rew, sizeof rew1);
    /* restoring the saved state and replaying the same actions gives the same bits */
    CHECK_OK(vp_env_state_set(&r.e, &saved.s));
    for (int s = 40; s < 90; ++s) run_step(&r, 1, (uint64_t)s);
    CHECK_OK(vp_env_state_get(&r.e, &h2.s));
    CHECK(memcmp(h1.mem, h2.mem, vpt_state_bytes(33)) == 0 && memcmp(rew1, r.rew, sizeof rew1) == 0,
          "replay after restore differs");
    /* a state outside the span or over max_position is refused */
    saved.s.t[5] = 595;
    CHECK_STATUS(vp_env_state_set(&r.e, &saved.s), VP_ERR_INVALID_ARG, "env 5 has t 595");
    saved.s.t[5] = saved.s.window_end[5] - 1;
    saved.s.position[7] = 6;
    CHECK_STATUS(vp_env_state_set(&r.e, &saved.s), VP_ERR_INVALID_ARG, "env 7 has position 6");
    vpt_state_free(&saved), vpt_state_free(&h1), vpt_state_free(&h2);
    run_free(&r);
}

static void test_random_actions(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    enum { N = 4001 };
    static int32_t a[N * 4], a2[N * 4];
    vp_tensor t = vp_tensor_2d(a, VP_I32, VP_MEM_HOST, N, 4), t2 = vp_tensor_2d(a2, VP_I32, VP_MEM_HOST, N, 4);
    CHECK_OK(vp_env_random_actions(b, 5, 0, &t));
    CHECK_OK(vp_env_random_actions(b, 5, 1, &t2));
    const int choices[4] = {3, 4, 3, 3};
    int count[4][4] = {{0}}, same = 0;
    for (int i = 0; i < N; ++i)
        for (int j = 0; j < 4; ++j) {
            int v = a[i * 4 + j];
            CHECK(v >= 0 && v < choices[j], "action %d branch %d = %d", i, j, v);
            if (v >= 0 && v < 4) count[j][v]++;
            same += a2[i * 4 + j] == v;
        }
    for (int j = 0; j < 4; ++j)
        for (int v = 0; v < choices[j]; ++v) CHECK_NEAR(count[j][v], (double)N / choices[j], 0.1 * N / choices[j], 0);
    CHECK(same < N * 4 / 2, "counter 1 repeats counter 0 (%d equal)", same);
    vp_backend_free(b);
}

static void test_argument_errors(void) {
    vp_env_config cfg = {50, 0.5, 100.0, 0.0, 0.0, 9};
    run r;
    if (!run_init(&r, 200, 6, 10, 190, cfg, 5)) return;
    vp_tensor ta = vp_tensor_2d(r.act, VP_I32, VP_MEM_HOST, 5, 4);
    vp_tensor tr = vp_tensor_1d(r.rew, VP_F32, VP_MEM_HOST, 5);
    vp_tensor td = vp_tensor_1d(r.done, VP_F32, VP_MEM_HOST, 5);
    vp_tensor to = vp_tensor_1d(r.obs, VP_I32, VP_MEM_HOST, 5);
    vp_tensor tp = vp_tensor_2d(r.pf, VP_F32, VP_MEM_HOST, 5, 8);
    r.act[2 * 4 + 1] = 4;
    CHECK_STATUS(vp_env_step(&r.e, &ta, &tr, &td, &to, &tp), VP_ERR_INVALID_ARG, "env 2 size choice 4");
    r.act[2 * 4 + 1] = 0;
    vp_tensor short_rew = vp_tensor_1d(r.rew, VP_F32, VP_MEM_HOST, 4);
    CHECK_STATUS(vp_env_step(&r.e, &ta, &short_rew, &td, &to, &tp), VP_ERR_SHAPE, "reward");
    vp_tensor dev = tp;
    dev.mem = VP_MEM_DEVICE;
    CHECK_STATUS(vp_env_step(&r.e, &ta, &tr, &td, &to, &dev), VP_ERR_DEVICE, "portfolio lives in device memory");
    CHECK_OK(vp_env_step(&r.e, &ta, &tr, &td, &to, &tp));
    /* a span too short for one episode, and a broken bar */
    vp_env e2;
    vp_env_market m2;
    vp_env_market_desc d = {200, r.bars.o, r.bars.h, r.bars.l, r.bars.c, r.bars.atr, 100, 150, NULL, NULL, 0.0, 0.0};
    CHECK_OK(vp_env_market_init(&m2, r.b, &d));
    vp_instrument inst = vpt_instrument_emini();
    CHECK_STATUS(vp_env_init(&e2, r.b, &m2, &inst, &cfg, 4), VP_ERR_INVALID_ARG, "an episode of 50 bars needs 51");
    vp_env_market_free(&m2);
    double h17 = r.bars.h[17];
    r.bars.h[17] = r.bars.l[17] - 0.25;
    CHECK_STATUS(vp_env_market_init(&m2, r.b, &d), VP_ERR_INVALID_ARG, "bar 17 breaks low <= open,close <= high");
    r.bars.h[17] = h17;
    inst.tick_size = 0;
    CHECK_OK(vp_env_market_init(&m2, r.b, &d));
    cfg.episode_bars = 10;
    CHECK_STATUS(vp_env_init(&e2, r.b, &m2, &inst, &cfg, 4), VP_ERR_INVALID_ARG, "tick_size 0");
    vp_env_market_free(&m2);
    run_free(&r);
}

static void test_bytes_per_step(void) {
    /* 64 B of state read, 64 written, 16 of action, 44 of outputs, 56 of bars */
    CHECK(vp_env_bytes_per_step() == 244, "%zu bytes", vp_env_bytes_per_step());
}

int main(void) {
    RUN_TEST(test_auto_reset_starts);
    RUN_TEST(test_determinism);
    RUN_TEST(test_no_lookahead);
    RUN_TEST(test_state_save_restore);
    RUN_TEST(test_random_actions);
    RUN_TEST(test_argument_errors);
    RUN_TEST(test_bytes_per_step);
    return vpt_finish();
}
