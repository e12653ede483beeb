/* GPU test: hindsight relabelling on the replay ring, CUDA against the CPU.
 * - a HER ring of 4099 envs (n 3, P 8 with the goal in entry 7) on both backends, 60 pushes of
 *   random steps (2 % terminal, 1 % truncated ends) with the goal entry set to 0.25: every
 *   column (the goal weights, episode envs and numbers included) and the counters bit for bit;
 * - PER samples of 1000 rows at ratio 0.6: the slots, the relabelled goals in both portfolio
 *   rows, the relabel flags, the goal terms, the rewards and the weights bit for bit;
 * - the same at ratio 1 on a uniform ring, with a table of 2 episodes per env (older episodes
 *   forgotten on both sides alike).
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include <math.h>

#include "gpu_replay_pair.h"

/* Sets the goal entry (the last) of both portfolio rows of the current step to `g`, uploaded. */
static void set_goal(rpair* p, float g) {
    const int64_t E = p->cfg.n_envs;
    const int P = p->cfg.n_portfolio;
    for (int64_t e = 0; e < E; ++e) {
        ((float*)p->port.h.data)[e * P + P - 1] = g;
        ((float*)p->nport.h.data)[e * P + P - 1] = g;
    }
    twin_push(&p->port);
    twin_push(&p->nport);
}

static void compare_opt(const char* cas, const char* name, const vp_tensor* c, const vp_tensor* g) {
    CHECK(c->data != NULL && g->data != NULL, "%s %s: column missing", cas, name);
    if (c->data && g->data) compare_field(cas, name, c, g);
}

static void run_case(const char* cas, int prioritized, float ratio, int episodes) {
    vp_replay_cfg cfg = vp_replay_cfg_default();
    cfg.capacity = 100003;
    cfg.n_envs = 4099;
    cfg.seed = g_seed;
    cfg.prioritized = prioritized;
    cfg.her = 1;
    cfg.her_ratio = ratio;
    cfg.her_lambda = 0.5f;
    cfg.her_episodes = episodes;
    rpair p;
    if (!pair_init(&p, &cfg, 1000, 1)) {
        pair_free(&p);
        return;
    }
    twin og, orel;
    twin_1d(&og, VP_F32, p.B), twin_1d(&orel, VP_I32, p.B);
    for (int t = 0; t < 60; ++t) {
        fill_step(&p, t);
        set_goal(&p, 0.25f);
        push_both(&p);
    }
    compare_rings(cas, &p);
    vp_replay_fields fc, fg;
    CHECK_OK(vp_replay_fields_get(p.c, &fc));
    CHECK_OK(vp_replay_fields_get(p.g, &fg));
    compare_opt(cas, "goal_weight", &fc.goal_weight, &fg.goal_weight);
    compare_opt(cas, "episode_env", &fc.episode_env, &fg.episode_env);
    compare_opt(cas, "episode_id", &fc.episode_id, &fg.episode_id);
    for (int k = 0; k < 3; ++k) {
        vp_replay_batch oc = batch_view(&p, 0), ogv = batch_view(&p, 1);
        oc.reward_goal = og.h, ogv.reward_goal = og.d;
        oc.relabelled = orel.h, ogv.relabelled = orel.d;
        CHECK_OK(vp_replay_sample(p.c, &oc));
        CHECK_OK(vp_replay_sample(p.g, &ogv));
        twin_check_bits("replay sample idx", cas, &p.idx);
        twin_check_bits("replay sample portfolio (goal relabelled)", cas, &p.oport);
        twin_check_bits("replay sample next_portfolio (goal relabelled)", cas, &p.onport);
        twin_check_bits("replay sample relabelled", cas, &orel);
        twin_check_bits("replay sample reward_goal", cas, &og);
        twin_check_bits("replay sample reward (extrinsic + goal)", cas, &p.orew);
        twin_check_bits("replay sample is_weight", cas, &p.ow);
        if (prioritized) update_both(&p);
    }
    twin_free(&og), twin_free(&orel);
    pair_free(&p);
}

static void test_her_ring(void) {
    run_case("HER ring, PER, ratio 0.6", 1, 0.6f, 64);
    run_case("HER ring, uniform, ratio 1, 2 episodes", 0, 1.0f, 2);
}

int main(void) {
    gpu_setup("test_gpu_her");
    RUN_TEST(test_her_ring);
    gpu_teardown();
    return vpt_finish();
}
