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

#include "gpu_twin.h"
#include "vulpes/replay.h"

/* ---- one ring per backend, with the step and batch tensors ------------------------------------- */

typedef struct rpair {
    vp_replay_cfg cfg;
    vp_replay *c, *g;                                    /* CPU and CUDA rings */
    twin bar, wend, port, act, rew, done, nbar, nport;   /* step inputs [E, ...] */
    twin idx, obar, onbar, oport, onport, oact, orew, odisc, ow, loss; /* batch [B, ...] */
    int64_t B;
} rpair;

static int pair_init(rpair* p, const vp_replay_cfg* cfg, int64_t B, int done_f32) {
    memset(p, 0, sizeof *p);
    p->cfg = *cfg;
    p->B = B;
    CHECK_OK(vp_replay_init(&p->c, g_cpu, cfg));
    CHECK_OK(vp_replay_init(&p->g, g_gpu, cfg));
    const int64_t E = cfg->n_envs, P = cfg->n_portfolio, NB = cfg->n_branches;
    twin_1d(&p->bar, VP_I32, E), twin_1d(&p->wend, VP_I32, E), twin_2d(&p->port, VP_F32, E, P);
    twin_2d(&p->act, VP_I32, E, NB), twin_1d(&p->rew, VP_F32, E), twin_1d(&p->done, done_f32 ? VP_F32 : VP_I32, E);
    twin_1d(&p->nbar, VP_I32, E), twin_2d(&p->nport, VP_F32, E, P);
    twin_1d(&p->idx, VP_I32, B), twin_1d(&p->obar, VP_I32, B), twin_1d(&p->onbar, VP_I32, B);
    twin_2d(&p->oport, VP_F32, B, P), twin_2d(&p->onport, VP_F32, B, P), twin_2d(&p->oact, VP_I32, B, NB);
    twin_1d(&p->orew, VP_F32, B), twin_1d(&p->odisc, VP_F32, B), twin_1d(&p->ow, VP_F32, B);
    twin_1d(&p->loss, VP_F32, B);
    return p->c != NULL && p->g != NULL;
}

static void pair_free(rpair* p) {
    vp_replay_free(p->c);
    vp_replay_free(p->g);
    twin* all[] = {&p->bar, &p->wend, &p->port, &p->act, &p->rew, &p->done, &p->nbar, &p->nport, &p->idx,
                   &p->obar, &p->onbar, &p->oport, &p->onport, &p->oact, &p->orew, &p->odisc, &p->ow, &p->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
}

/* The step tensors of one side (dev 0: CPU, 1: CUDA). */
static vp_replay_step step_view(rpair* p, int dev) {
    vp_replay_step s;
    s.bar_idx = dev ? p->bar.d : p->bar.h, s.window_end = dev ? p->wend.d : p->wend.h;
    s.portfolio = dev ? p->port.d : p->port.h, s.action = dev ? p->act.d : p->act.h;
    s.reward = dev ? p->rew.d : p->rew.h, s.done = dev ? p->done.d : p->done.h;
    s.next_bar_idx = dev ? p->nbar.d : p->nbar.h, s.next_portfolio = dev ? p->nport.d : p->nport.h;
    return s;
}

/* The batch tensors of one side. */
static vp_replay_batch batch_view(rpair* p, int dev) {
    vp_replay_batch o;
    o.indices = dev ? p->idx.d : p->idx.h, o.bar_idx = dev ? p->obar.d : p->obar.h;
    o.next_bar_idx = dev ? p->onbar.d : p->onbar.h, o.portfolio = dev ? p->oport.d : p->oport.h;
    o.next_portfolio = dev ? p->onport.d : p->onport.h, o.actions = dev ? p->oact.d : p->oact.h;
    o.reward = dev ? p->orew.d : p->orew.h, o.discount = dev ? p->odisc.d : p->odisc.h;
    o.is_weight = dev ? p->ow.d : p->ow.h;
    return o;
}

/* Fresh random step data (uploaded): rewards in [-1, 1), dones 2% terminal, 1% truncated. */
static void fill_step(rpair* p, int t) {
    const int64_t E = p->cfg.n_envs;
    const int P = p->cfg.n_portfolio, NB = p->cfg.n_branches;
    const uint64_t s = g_stream++;
    for (int64_t e = 0; e < E; ++e) {
        vp_u32x4 r = vp_rng_draw(g_seed, s, (uint64_t)e);
        int32_t bar = 1000 + 7 * t + (int32_t)(r.v[0] % 5000u);
        ((int32_t*)p->bar.h.data)[e] = bar;
        ((int32_t*)p->wend.h.data)[e] = bar + 500;
        ((int32_t*)p->nbar.h.data)[e] = bar + 1;
        ((float*)p->rew.h.data)[e] = 2.0f * vp_u32_to_unit(r.v[1]) - 1.0f;
        uint32_t u = r.v[2] % 100u;
        int code = u < 2 ? VP_REPLAY_TERMINAL : (u < 3 ? VP_REPLAY_TRUNCATED : VP_REPLAY_RUNNING);
        if (p->done.h.dtype == VP_F32) ((float*)p->done.h.data)[e] = (float)code;
        else ((int32_t*)p->done.h.data)[e] = code;
        for (int k = 0; k < P; ++k) {
            ((float*)p->port.h.data)[e * P + k] = vp_rng_uniform(g_seed, s + 1000000, (uint64_t)(e * P + k));
            ((float*)p->nport.h.data)[e * P + k] = vp_rng_uniform(g_seed, s + 2000000, (uint64_t)(e * P + k));
        }
        for (int k = 0; k < NB; ++k) ((int32_t*)p->act.h.data)[e * NB + k] = (int32_t)((r.v[3] >> (4 * k)) % 3u);
    }
    twin* in[] = {&p->bar, &p->wend, &p->port, &p->act, &p->rew, &p->done, &p->nbar, &p->nport};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; ++i) twin_push(in[i]);
}

/* Pushes the current step on both sides. */
static void push_both(rpair* p) {
    vp_replay_step sc = step_view(p, 0), sg = step_view(p, 1);
    CHECK_OK(vp_replay_push(p->c, &sc));
    CHECK_OK(vp_replay_push(p->g, &sg));
}

/* Compares one ring array bit for bit (the table shows the count of differing elements). */
static void compare_field(const char* cas, const char* name, const vp_tensor* c, const vp_tensor* g) {
    size_t bytes = vp_tensor_bytes(c);
    void* gh = malloc(bytes);
    if (!gh) return;
    CHECK_OK(vp_download(g_gpu, gh, g, bytes));
    int64_t n = vp_tensor_numel(c), bad = 0, first = -1;
    for (int64_t i = 0; i < n; ++i) {
        int ok = memcmp((const char*)c->data + i * 4, (const char*)gh + i * 4, 4) == 0;
        if (!ok && first < 0) first = i;
        bad += !ok;
    }
    char op[64];
    snprintf(op, sizeof op, "replay %s", name);
    twin_row(op, cas, (double)bad, 0.0, bad == 0);
    CHECK(bad == 0, "%s %s: %lld of %lld elements differ, first at %lld", cas, name, (long long)bad, (long long)n,
          (long long)first);
    free(gh);
}

/* Compares both rings: every array and the counters. */
static void compare_rings(const char* cas, rpair* p) {
    vp_replay_fields fc, fg;
    CHECK_OK(vp_replay_fields_get(p->c, &fc));
    CHECK_OK(vp_replay_fields_get(p->g, &fg));
    compare_field(cas, "bar_idx", &fc.bar_idx, &fg.bar_idx);
    compare_field(cas, "next_bar_idx", &fc.next_bar_idx, &fg.next_bar_idx);
    compare_field(cas, "window_end", &fc.window_end, &fg.window_end);
    compare_field(cas, "portfolio", &fc.portfolio, &fg.portfolio);
    compare_field(cas, "next_portfolio", &fc.next_portfolio, &fg.next_portfolio);
    compare_field(cas, "action", &fc.action, &fg.action);
    compare_field(cas, "reward", &fc.reward, &fg.reward);
    compare_field(cas, "discount", &fc.discount, &fg.discount);
    compare_field(cas, "done", &fc.done, &fg.done);
    compare_field(cas, "priority", &fc.priority, &fg.priority);
    vp_replay_stats sc, sg;
    CHECK_OK(vp_replay_stats_read(p->c, &sc));
    CHECK_OK(vp_replay_stats_read(p->g, &sg));
    CHECK(sc.size == sg.size && sc.head == sg.head && sc.emitted == sg.emitted && sc.pushes == sg.pushes &&
              sc.sample_step == sg.sample_step,
          "%s counters: cpu size %lld head %lld emitted %lld; gpu %lld %lld %lld", cas, (long long)sc.size,
          (long long)sc.head, (long long)sc.emitted, (long long)sg.size, (long long)sg.head, (long long)sg.emitted);
    CHECK(sc.max_priority == sg.max_priority && sc.total == sg.total && sc.beta == sg.beta,
          "%s max priority cpu %.9g gpu %.9g, total %.9g / %.9g, beta %.9g / %.9g", cas, (double)sc.max_priority,
          (double)sg.max_priority, (double)sc.total, (double)sg.total, (double)sc.beta, (double)sg.beta);
}

/* Samples on both sides; returns the rows whose slot differs. The batches must be identical. */
static int64_t sample_both(const char* cas, rpair* p) {
    vp_replay_batch oc = batch_view(p, 0), og = batch_view(p, 1);
    CHECK_OK(vp_replay_sample(p->c, &oc));
    CHECK_OK(vp_replay_sample(p->g, &og));
    int32_t* gi = (int32_t*)twin_fetch(&p->idx);
    if (!gi) return p->B;
    const int32_t* ci = (const int32_t*)p->idx.h.data;
    int64_t diff = 0;
    for (int64_t j = 0; j < p->B; ++j) diff += ci[j] != gi[j];
    free(gi);
    twin_check_bits("replay sample idx", cas, &p->idx);
    twin_check_bits("replay sample bar", cas, &p->obar);
    twin_check_bits("replay sample next_bar", cas, &p->onbar);
    twin_check_bits("replay sample portfolio", cas, &p->oport);
    twin_check_bits("replay sample next_port", cas, &p->onport);
    twin_check_bits("replay sample actions", cas, &p->oact);
    twin_check_bits("replay sample reward", cas, &p->orew);
    twin_check_bits("replay sample discount", cas, &p->odisc);
    twin_check_bits("replay sample is_weight", cas, &p->ow);
    return diff;
}

/* Losses in [0, 5) on both sides; both update the CPU's sampled slots (the same ones
 * unless a sample already failed). */
static void update_both(rpair* p) {
    twin_rand(&p->loss, 0.0f, 5.0f);
    twin_push(&p->idx); /* the GPU updates the slots the CPU drew */
    CHECK_OK(vp_replay_update_priorities(p->c, &p->idx.h, &p->loss.h));
    CHECK_OK(vp_replay_update_priorities(p->g, &p->idx.d, &p->loss.d));
}

/* ---- the cases ------------------------------------------------------------------------------------ */

static vp_replay_cfg base_cfg(int64_t cap, int E, int n, int prioritized, float alpha) {
    vp_replay_cfg c = vp_replay_cfg_default();
    c.capacity = cap;
    c.n_envs = E;
    c.n_step = n;
    c.prioritized = prioritized;
    c.alpha = alpha;
    c.priority_eps = alpha == 1.0f ? 0.0f : 1e-6f;
    c.beta_steps = 7;
    c.seed = g_seed;
    return c;
}

/* Pushes: 300 steps of 1031 envs into 100003 slots (wraps 3 times), n 3, done as i32; then
 * 5-step windows of 257 envs into 4099 slots with done as f32. */
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
        for (int t = 0; t < 25; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
        compare_rings("C 50021 E 9001 (3 scan tiles) n 2", &p);
    }
    pair_free(&p);
    c = base_cfg(4099, 257, 5, 0, 0.6f);
    if (pair_init(&p, &c, 1000, 1)) {
        for (int t = 0; t < 60; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
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
        for (int t = 0; t < 150; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
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
        for (int t = 0; t < 120; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
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
        for (int t = 0; t < 40; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
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
        for (int t = 0; t < 40; ++t) {
            fill_step(&p, t);
            push_both(&p);
        }
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

static double now_s(void) {
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Mean microseconds of a captured body over `reps` launches. */
static double time_graph(vp_graph_body body, void* ctx, int reps) {
    vp_graph* g = NULL;
    if (vp_graph_capture(g_gpu, body, ctx, &g) != VP_OK) {
        CHECK(0, "capture: %s", vp_last_error());
        return 0;
    }
    for (int i = 0; i < 10; ++i) CHECK_OK(vp_graph_launch(g_gpu, g));
    CHECK_OK(vp_backend_sync(g_gpu));
    double t0 = now_s();
    for (int i = 0; i < reps; ++i) CHECK_OK(vp_graph_launch(g_gpu, g));
    CHECK_OK(vp_backend_sync(g_gpu));
    double us = (now_s() - t0) * 1e6 / reps;
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
