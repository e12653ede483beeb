/* Tests of collection on the CPU: the epsilon schedule; epsilon-greedy actions against
 * their definition (argmax per branch with ties and NaN, Philox coins and picks, the
 * exploration rate over many envs); the collector's step against an independent forward
 * of the network, the replay pushes and the observation hand-over; the random warm-up
 * step; argument checks. */
#include <math.h>

#include "test_train_util.h"
#include "vp_test.h"

enum { A13 = 13 };
static const int SIZES[4] = {3, 4, 3, 3}, OFFS[4] = {0, 3, 7, 10};

/* The model configuration with the environment's branches. */
static vp_model_cfg env_model_cfg(int F) {
    vp_model_cfg m = vp_model_cfg_default();
    m.n_features = F;
    m.window = 3;
    m.hidden = 8;
    m.encoder = VP_ENCODER_MAMBA2;
    m.mamba_state = 2;
    m.mamba_head_dim = 4;
    m.mamba_conv = 2;
    m.head_hidden = 6;
    m.n_atoms = 7;
    m.iqn_cos = 4;
    return m;
}

static void test_epsilon_schedule(void) {
    vp_collect_cfg c = {1.0f, 0.1f, 10, 0, 1, VP_COLLECT_AUTO};
    CHECK(vp_collect_epsilon(&c, 0) == 1.0f, "eps(0) = %g", (double)vp_collect_epsilon(&c, 0));
    CHECK_NEAR(vp_collect_epsilon(&c, 5), 0.55, 1e-7, 0);
    CHECK_NEAR(vp_collect_epsilon(&c, 3), 0.73, 1e-7, 0);
    CHECK(vp_collect_epsilon(&c, 10) == 0.1f && vp_collect_epsilon(&c, 1000) == 0.1f, "eps after the anneal");
    vp_collect_cfg z = {0.7f, 0.2f, 0, 0, 1, VP_COLLECT_AUTO};
    CHECK(vp_collect_epsilon(&z, 0) == 0.2f, "no anneal: the end rate from the start");
}

/* Expected choice of env i, branch br at `step` under epsilon eps (the definition, written out). */
static int expected(const float* q, uint64_t seed, int64_t step, int64_t i, int br, float eps) {
    vp_u32x4 coin = vp_rng_draw(seed, VP_COLLECT_STREAM + (uint64_t)i, 2u * (uint64_t)step);
    vp_u32x4 pick = vp_rng_draw(seed, VP_COLLECT_STREAM + (uint64_t)i, 2u * (uint64_t)step + 1u);
    if (vp_u32_to_unit(coin.v[br]) < eps) return (int)(((uint64_t)pick.v[br] * (uint64_t)SIZES[br]) >> 32);
    int best = -1;
    for (int j = 0; j < SIZES[br]; ++j) {
        float v = q[OFFS[br] + j];
        if (isnan(v)) continue;
        if (best < 0 || v > q[OFFS[br] + best]) best = j;
    }
    return best < 0 ? 0 : best;
}

static void test_act_greedy_ties_nan(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    const vp_action_layout lay = vp_action_layout_env();
    enum { E = 5 };
    float q[E * A13];
    for (int i = 0; i < E * A13; ++i) q[i] = vp_rng_normal(3, 1, (uint64_t)i);
    // env 1: a tie in the direction branch (lowest wins); env 2: NaN where the max would be;
    // env 3: a whole branch NaN (choice 0); env 4: -inf and +inf.
    q[1 * A13 + 0] = 5.0f, q[1 * A13 + 2] = 5.0f, q[1 * A13 + 1] = 4.0f;
    q[2 * A13 + 3] = NAN, q[2 * A13 + 4] = 9.0f, q[2 * A13 + 5] = 1.0f, q[2 * A13 + 6] = 2.0f;
    q[3 * A13 + 7] = q[3 * A13 + 8] = q[3 * A13 + 9] = NAN;
    q[4 * A13 + 10] = -INFINITY, q[4 * A13 + 11] = INFINITY, q[4 * A13 + 12] = 0.0f;
    int32_t acts[E * 4];
    int64_t step[1] = {17};
    vp_collect_cfg c = {0.0f, 0.0f, 0, 99, 1, VP_COLLECT_AUTO};
    vp_tensor qt = vp_tensor_2d(q, VP_F32, VP_MEM_HOST, E, A13), at = vp_tensor_2d(acts, VP_I32, VP_MEM_HOST, E, 4);
    vp_tensor st = vp_tensor_1d(step, VP_I32, VP_MEM_HOST, 2);
    CHECK_OK(vp_collect_act(b, &c, &lay, &qt, &st, &at));
    CHECK(acts[1 * 4 + 0] == 0 && acts[2 * 4 + 1] == 1 && acts[3 * 4 + 2] == 0 && acts[4 * 4 + 3] == 1,
          "ties / NaN / inf: %d %d %d %d", acts[4], acts[9], acts[14], acts[19]);
    for (int i = 0; i < E; ++i)
        for (int br = 0; br < 4; ++br)
            CHECK(acts[i * 4 + br] == expected(q + i * A13, 99, 17, i, br, 0.0f), "env %d branch %d: %d", i, br,
                  acts[i * 4 + br]);
    CHECK(step[0] == 17, "act must not move the counter");
    CHECK_OK(vp_collect_tick(b, &st));
    CHECK(step[0] == 18, "tick: %lld", (long long)step[0]);
    vp_backend_free(b);
}

static void test_act_exploration(void) {
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    const vp_action_layout lay = vp_action_layout_env();
    enum { E = 2001 };
    float* q = (float*)malloc(sizeof(float) * E * A13);
    int32_t* acts = (int32_t*)malloc(sizeof(int32_t) * E * 4);
    for (int i = 0; i < E * A13; ++i) q[i] = vp_rng_normal(4, 2, (uint64_t)i);
    // Step 30 of an anneal 1 -> 0 over 60 steps: epsilon 0.5.
    int64_t step[1] = {30};
    vp_collect_cfg c = {1.0f, 0.0f, 60, 12345, 1, VP_COLLECT_AUTO};
    vp_tensor qt = vp_tensor_2d(q, VP_F32, VP_MEM_HOST, E, A13), at = vp_tensor_2d(acts, VP_I32, VP_MEM_HOST, E, 4);
    vp_tensor st = vp_tensor_1d(step, VP_I32, VP_MEM_HOST, 2);
    CHECK_OK(vp_collect_act(b, &c, &lay, &qt, &st, &at));
    int bad = 0, explored = 0, counts[3] = {0, 0, 0};
    for (int i = 0; i < E; ++i)
        for (int br = 0; br < 4; ++br) {
            bad += acts[i * 4 + br] != expected(q + (size_t)i * A13, 12345, 30, i, br, 0.5f);
            vp_u32x4 coin = vp_rng_draw(12345, VP_COLLECT_STREAM + (uint64_t)i, 60);
            int ex = vp_u32_to_unit(coin.v[br]) < 0.5f;
            explored += ex;
            if (ex && br == 0) counts[acts[i * 4]]++;
        }
    CHECK(bad == 0, "%d choices differ from the definition", bad);
    CHECK(fabs(explored / (4.0 * E) - 0.5) < 0.02, "exploration rate %g at epsilon 0.5", explored / (4.0 * E));
    int n_ex = counts[0] + counts[1] + counts[2];
    for (int k = 0; k < 3; ++k)
        CHECK(fabs((double)counts[k] / n_ex - 1.0 / 3.0) < 0.05, "random direction %d drawn %d of %d", k, counts[k], n_ex);
    // Bad calls: branch count, q's width, the counter's shape.
    vp_action_layout two = lay;
    two.n_branches = 2;
    CHECK_STATUS(vp_collect_act(b, &c, &two, &qt, &st, &at), VP_ERR_INVALID_ARG, "branches");
    vp_tensor q12 = vp_tensor_2d(q, VP_F32, VP_MEM_HOST, E, 12);
    CHECK_STATUS(vp_collect_act(b, &c, &lay, &q12, &st, &at), VP_ERR_SHAPE, "q");
    vp_tensor st1 = vp_tensor_1d(step, VP_I32, VP_MEM_HOST, 1);
    CHECK_STATUS(vp_collect_act(b, &c, &lay, &qt, &st1, &at), VP_ERR_SHAPE, "counter");
    vp_collect_cfg badc = {1.5f, 0.0f, 1, 0, 1, VP_COLLECT_AUTO};
    CHECK_STATUS(vp_collect_act(b, &badc, &lay, &qt, &st, &at), VP_ERR_INVALID_ARG, "epsilon");
    free(q), free(acts);
    vp_backend_free(b);
}

static void test_collector_step(void) {
    vp_backend* b = NULL;
    vp_config cfg;
    vp_train_data d;
    CHECK_OK(vp_backend_cpu_init(&b));
    if (!b || !vpt_train_cfg(&cfg, 0, NULL) || vp_train_data_load(&d, &cfg) != VP_OK) {
        CHECK(0, "set-up: %s", vp_last_error());
        vp_backend_free(b);
        return;
    }
    const int64_t T = d.bars.n, E = 9;
    vp_tensor feats = vp_tensor_2d(d.features, VP_F32, VP_MEM_HOST, T, d.n_features);
    vp_env_market_desc md = {T, d.bars.open, d.bars.high, d.bars.low, d.bars.close, d.atr, d.split.train.begin,
                             d.split.train.end, &feats, d.bars.spread, 0.0, d.periods_per_year};
    vp_model_cfg mc = env_model_cfg(d.n_features);
    vp_instrument inst = vpt_instrument_emini();
    inst.tick_size = 0.01, inst.multiplier = 10, inst.max_position = 3;
    vp_env_config ec = vp_env_config_default();
    ec.episode_bars = 5; /* episodes end inside the test: resets and n-step flushes happen */
    vp_replay_cfg rc = vp_replay_cfg_default();
    rc.capacity = 101, rc.n_envs = (int)E;
    vp_env_market m;
    vp_env env;
    vp_model model;
    vp_replay* rp = NULL;
    vp_collector c;
    vp_model_acts* ref = NULL;
    vp_collect_cfg cc = {0.0f, 0.0f, 0, 5, 1, VP_COLLECT_AUTO};
    CHECK_OK(vp_env_market_init(&m, b, &md));
    CHECK_OK(vp_env_init(&env, b, &m, &inst, &ec, E));
    CHECK_OK(vp_model_init(&model, b, &mc, 21));
    const vp_policy pol = vp_model_policy(&model, &model.params);
    CHECK_OK(vp_replay_init(&rp, b, &rc));
    CHECK_OK(vp_collector_init(&c, b, &pol, &feats, &env, rp, &cc));
    CHECK_OK(vp_model_acts_init(&ref, &model, E, 0, 0));
    if (!rp || !ref) return;
    // Greedy steps: the actions are the argmax of an independent forward at the observation.
    int32_t bar0[9];
    float port0[9 * 8];
    int bad = 0;
    for (int k = 0; k < 7; ++k) {
        memcpy(bar0, c.obs_bar.data, sizeof bar0);
        memcpy(port0, c.portfolio.data, sizeof port0);
        vp_tensor bt = vp_tensor_1d(bar0, VP_I32, VP_MEM_HOST, E), pt = vp_tensor_2d(port0, VP_F32, VP_MEM_HOST, E, 8);
        CHECK_OK(vp_model_forward(&model, &model.params, ref, &feats, &bt, &pt, NULL, E));
        CHECK_OK(vp_collector_step(&c));
        const float* q = (const float*)vp_model_q(ref).data;
        const int32_t* a = (const int32_t*)c.actions.data;
        for (int64_t i = 0; i < E; ++i)
            for (int br = 0; br < 4; ++br) bad += a[i * 4 + br] != expected(q + i * A13, 5, k, i, br, 0.0f);
        // The observation moved on: one bar later, or a new episode after a done.
        const int32_t* nb = (const int32_t*)c.obs_bar.data;
        const float* dn = (const float*)c.done.data;
        for (int64_t i = 0; i < E; ++i)
            CHECK(dn[i] != 0.0f || nb[i] == bar0[i] + 1, "step %d env %lld: bar %d -> %d", k, (long long)i, bar0[i],
                  nb[i]);
        CHECK(memcmp(c.obs_bar.data, c.next_bar.data, (size_t)E * 4) == 0, "obs_bar is not the step's next bar");
    }
    CHECK(bad == 0, "%d greedy choices differ from the independent forward", bad);
    int64_t step = -1;
    CHECK_OK(vp_collector_get_step(&c, &step));
    CHECK(step == 7, "policy steps counted: %lld", (long long)step);
    // Every step reached the replay; episodes of 5 bars flushed their windows.
    vp_replay_stats rs;
    CHECK_OK(vp_replay_stats_read(rp, &rs));
    CHECK(rs.pushes == 7 && rs.emitted >= 4 * E && rs.size == rs.emitted, "pushes %lld, emitted %lld",
          (long long)rs.pushes, (long long)rs.emitted);
    // A random step draws the env's random actions and leaves the policy counter alone.
    int32_t want[9 * 4];
    vp_tensor wt = vp_tensor_2d(want, VP_I32, VP_MEM_HOST, E, 4);
    CHECK_OK(vp_env_random_actions(b, 5, 3, &wt));
    CHECK_OK(vp_collector_random_step(&c, 3));
    CHECK(memcmp(want, c.actions.data, sizeof want) == 0, "random step actions");
    CHECK_OK(vp_collector_get_step(&c, &step));
    CHECK(step == 7, "a random step moved the policy counter to %lld", (long long)step);
    // Without a replay nothing is stored.
    vp_collector c2;
    CHECK_OK(vp_collector_init(&c2, b, &pol, &feats, &env, NULL, &cc));
    CHECK_OK(vp_collector_step(&c2));
    CHECK_OK(vp_replay_stats_read(rp, &rs));
    CHECK(rs.pushes == 8, "pushes %lld", (long long)rs.pushes);
    vp_collector_free(&c2);
    // A replay of another env count is refused.
    vp_replay* rp2 = NULL;
    rc.n_envs = 4;
    CHECK_OK(vp_replay_init(&rp2, b, &rc));
    CHECK_STATUS(vp_collector_init(&c2, b, &pol, &feats, &env, rp2, &cc), VP_ERR_INVALID_ARG, "envs");
    vp_replay_free(rp2);
    vp_model_acts_free(ref);
    vp_collector_free(&c);
    vp_replay_free(rp);
    vp_model_free(&model);
    vp_env_free(&env);
    vp_env_market_free(&m);
    vp_train_data_free(&d);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_epsilon_schedule);
    RUN_TEST(test_act_greedy_ties_nan);
    RUN_TEST(test_act_exploration);
    RUN_TEST(test_collector_step);
    return vpt_finish();
}
