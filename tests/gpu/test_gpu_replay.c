/* GPU test: the replay ring on CUDA against the CPU ring, bit for bit. The same pushes
 * must write the same ring (odd capacities, wrap-around, terminal and truncated ends, done
 * as i32 and as f32); priority updates (duplicates included) must store the same values
 * (powers come from vp_replay_pow, not powf, so alpha 0.6 is exact too); the same
 * priorities must give the same sum tree, draw the same slots in every row (the bound on
 * disagreeing rows is 0) and the same weights; a captured graph of push + sample + update
 * must replay with no copy, allocation or sync and end in the CPU's state.
 * `--time` also times push, sample and update at capacity 1M, B = 8192, 65536 envs.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include <time.h>

#include "gpu_replay_pair.h"

/* ---- the cases ------------------------------------------------------------------------------------ */

/* Pushes: 300 steps of 1031 envs into 100003 slots (wraps 3 times), n 3, done as i32; 9001
 * envs (three scan tiles) and 4096 (one full tile); then 5-step windows of 257 envs into 4099
 * slots with done as f32. */
static void test_push_identical(void) {
    rpair p;
    vp_replay_cfg c = base_cfg(100003, 1031, 3, 1, 0.6f);
    if (pair_init(&p, &c, 8192, 0)) {
        for (int t = 0; t < 300; ++t) {
            fill_step(&p, t);
            push_both(&p);
            if (t == 0 || t == 97 || t == 299) {
                char cas[64];
                snprintf(cas, sizeof cas, "C 100003 E 1031 n 3 t %d", t);
                compare_rings(cas, &p);
            }
        }
    }
    pair_free(&p);
    c = base_cfg(50021, 9001, 2, 1, 0.6f);
    if (pair_init(&p, &c, 512, 0)) {
        push_steps(&p, 25);
        compare_rings("C 50021 E 9001 (3 scan tiles) n 2", &p);
    }
    pair_free(&p);
    c = base_cfg(20011, 4096, 3, 1, 0.6f);
    if (pair_init(&p, &c, 512, 0)) {
        push_steps(&p, 12);
        compare_rings("C 20011 E 4096 (one full scan tile: the count kernel advances) n 3", &p);
    }
    pair_free(&p);
    c = base_cfg(4099, 257, 5, 0, 0.6f);
    if (pair_init(&p, &c, 1000, 1)) {
        push_steps(&p, 60);
        compare_rings("C 4099 E 257 n 5 done f32", &p);
        int64_t d = sample_both("uniform B 1000", &p);
        CHECK(d == 0, "uniform draws differ in %lld rows", (long long)d);
    }
    pair_free(&p);
}

/* Sampling with alpha 1 (priorities = losses, bit-identical on both sides): 20 rounds of
 * sample + update draw the same slots and store the same priorities. */
static void test_sample_identical_alpha1(void) {
    rpair p;
    vp_replay_cfg c = base_cfg(65537, 512, 3, 1, 1.0f);
    if (pair_init(&p, &c, 8192, 0)) {
        push_steps(&p, 150);
        int64_t d = sample_both("PER equal priorities", &p);
        CHECK(d == 0, "equal priorities: %lld rows differ", (long long)d);
        for (int round = 0; round < 20; ++round) {
            update_both(&p);
            char cas[64];
            snprintf(cas, sizeof cas, "PER alpha 1 round %d", round);
            d = sample_both(cas, &p);
            CHECK(d == 0, "%s: %lld rows differ", cas, (long long)d);
        }
        compare_rings("PER alpha 1 after 20 rounds", &p);
    }
    pair_free(&p);
}

/* alpha 0.6 (priorities from vp_replay_pow): 30 rounds of sample + update at capacity
 * 100003 draw the same slots in every row and keep the same priorities. */
static void test_sample_identical_alpha06(void) {
    rpair p;
    vp_replay_cfg c = base_cfg(100003, 1031, 3, 1, 0.6f);
    int64_t worst = 0, total = 0;
    if (pair_init(&p, &c, 8192, 0)) {
        push_steps(&p, 120);
        for (int round = 0; round < 30; ++round) {
            char cas[64];
            snprintf(cas, sizeof cas, "PER alpha 0.6 round %d", round);
            int64_t d = sample_both(cas, &p);
            worst = d > worst ? d : worst;
            total += d;
            update_both(&p);
        }
        compare_rings("PER alpha 0.6 after 30 rounds", &p);
    }
    printf("alpha 0.6: rows drawing another slot: %lld of %lld (worst batch %lld, bound 0)\n", (long long)total,
           (long long)(30 * p.B), (long long)worst);
    CHECK(worst == 0, "worst batch had %lld disagreeing rows", (long long)worst);
    pair_free(&p);
}

/* Duplicates: every slot named ~220 times in one batch of 8192; the last occurrence wins. */
static void test_update_duplicates(void) {
    rpair p;
    vp_replay_cfg c = base_cfg(37, 1, 1, 1, 1.0f);
    if (pair_init(&p, &c, 8192, 0)) {
        push_steps(&p, 40);
        for (int64_t j = 0; j < p.B; ++j) ((int32_t*)p.idx.h.data)[j] = (int32_t)((j * 13) % 37);
        update_both(&p);
        compare_rings("update, 8192 rows over 37 slots", &p);
    }
    pair_free(&p);
}

/* The body of one captured iteration: push, sample, update from the sampled slots. */
typedef struct graph_ctx {
    rpair* p;
    int dev;
} graph_ctx;

static vp_status graph_body(vp_backend* b, void* ctx) {
    graph_ctx* g = (graph_ctx*)ctx;
    rpair* p = g->p;
    vp_replay* r = g->dev ? p->g : p->c;
    vp_replay_step s = step_view(p, g->dev);
    vp_replay_batch o = batch_view(p, g->dev);
    VP_TRY(vp_replay_push(r, &s));
    VP_TRY(vp_replay_sample(r, &o));
    return vp_replay_update_priorities(r, &o.indices, g->dev ? &p->loss.d : &p->loss.h);
}

/* A graph of push + sample + update replayed 25 times: no copy, allocation or sync while
 * it runs, and the same ring as 25 direct iterations on the CPU. */
static void test_graph_replay(void) {
    rpair p;
    vp_replay_cfg c = base_cfg(30011, 997, 3, 1, 1.0f);
    if (pair_init(&p, &c, 4096, 0)) {
        push_steps(&p, 40);
        twin_rand(&p.loss, 0.0f, 5.0f);
        graph_ctx gc = {&p, 0}, gg = {&p, 1};
        vp_graph* graph = NULL;
        CHECK_OK(vp_graph_capture(g_gpu, graph_body, &gg, &graph));
        CHECK_OK(vp_backend_sync(g_gpu));
        vp_runtime_counters before, after;
        vp_backend_counters(g_gpu, &before);
        for (int i = 0; i < 25; ++i) {
            if (graph) CHECK_OK(vp_graph_launch(g_gpu, graph));
            CHECK_OK(graph_body(g_cpu, &gc));
        }
        vp_backend_counters(g_gpu, &after);
        CHECK(after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs,
              "graph launches made %lld copies, %lld allocations, %lld syncs", (long long)(after.copies - before.copies),
              (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
        CHECK_OK(vp_backend_sync(g_gpu));
        compare_rings("graph x 25", &p);
        twin_check_bits("replay graph idx", "last batch", &p.idx);
        twin_check_bits("replay graph is_weight", "last batch", &p.ow);
        vp_graph_free(graph);
    }
    pair_free(&p);
}

/* ---- timing (--time) -------------------------------------------------------------------------------- */

/* Mean microseconds of a captured body over `reps` launches. */
static double time_graph(vp_graph_body body, void* ctx, int reps) {
    vp_graph* g = NULL;
    if (vp_graph_capture(g_gpu, body, ctx, &g) != VP_OK) {
        CHECK(0, "capture: %s", vp_last_error());
        return 0;
    }
    for (int i = 0; i < 10; ++i) CHECK_OK(vp_graph_launch(g_gpu, g));
    CHECK_OK(vp_backend_sync(g_gpu));
    double t0 = vp_clock_s();
    for (int i = 0; i < reps; ++i) CHECK_OK(vp_graph_launch(g_gpu, g));
    CHECK_OK(vp_backend_sync(g_gpu));
    double us = (vp_clock_s() - t0) * 1e6 / reps;
    vp_graph_free(g);
    return us;
}

static vp_status time_push(vp_backend* b, void* ctx) {
    rpair* p = (rpair*)ctx;
    vp_replay_step s = step_view(p, 1);
    (void)b;
    return vp_replay_push(p->g, &s);
}

static vp_status time_sample(vp_backend* b, void* ctx) {
    rpair* p = (rpair*)ctx;
    vp_replay_batch o = batch_view(p, 1);
    (void)b;
    return vp_replay_sample(p->g, &o);
}

static vp_status time_update(vp_backend* b, void* ctx) {
    rpair* p = (rpair*)ctx;
    (void)b;
    return vp_replay_update_priorities(p->g, &p->idx.d, &p->loss.d);
}

static void time_ring(void) {
    /* push at 4096 envs into a uniform ring (500 x 4096 > 1M), then a uniform sample */
    rpair p;
    vp_replay_cfg c = base_cfg(1000000, 4096, 3, 0, 0.6f);
    double push4k_us = 0, uniform_us = 0;
    if (pair_init(&p, &c, 8192, 1)) {
        fill_step(&p, 0);
        push4k_us = time_graph(time_push, &p, 500);
        uniform_us = time_graph(time_sample, &p, 500);
    }
    pair_free(&p);
    /* push at 65536 envs (fills the ring: 200 x 65536 > 1M), then sample and update */
    c = base_cfg(1000000, 65536, 3, 1, 0.6f);
    c.beta_steps = 100000;
    if (pair_init(&p, &c, 8192, 1)) {
        fill_step(&p, 0);
        double push_us = time_graph(time_push, &p, 200);
        twin_rand(&p.loss, 0.0f, 5.0f);
        double sample_us = time_graph(time_sample, &p, 500);
        double update_us = time_graph(time_update, &p, 500);
        printf("time: capacity 1000000, B 8192: push %.1f us at 4096 envs, %.1f us at 65536 envs (%.0f M "
               "transitions/s); sample %.1f us (uniform %.1f us); update %.1f us\n",
               push4k_us, push_us, 65536.0 / push_us, sample_us, uniform_us, update_us);
        printf("{\"bench\":\"replay\",\"capacity\":1000000,\"batch\":8192,\"push_4096_us\":%.2f,"
               "\"push_65536_us\":%.2f,\"sample_us\":%.2f,\"uniform_sample_us\":%.2f,\"update_us\":%.2f}\n",
               push4k_us, push_us, sample_us, uniform_us, update_us);
    }
    pair_free(&p);
}

int main(int argc, char** argv) {
    gpu_setup("test_gpu_replay");
    RUN_TEST(test_push_identical);
    RUN_TEST(test_sample_identical_alpha1);
    RUN_TEST(test_sample_identical_alpha06);
    RUN_TEST(test_update_duplicates);
    RUN_TEST(test_graph_replay);
    if (argc > 1 && strcmp(argv[1], "--time") == 0) RUN_TEST(time_ring);
    gpu_teardown();
    return vpt_finish();
}
