/* GPU test: curiosity's forward model on CUDA against the CPU.
 * - two models from one seed (the initialisation is drawn on the host: equal bit for bit);
 * - the input x (encoding, portfolio, one-hot of the env's four branches) of 1031 rows: bit
 *   for bit (copies and constants only);
 * - the forward f of 1031 rows (H 37, P 8, Hd 64, FP32 GEMMs): norm-wise within 1e-5 (the
 *   two backends sum the products in different orders);
 * - the intrinsic reward of 1031 envs with 5 % of them done: within 1e-5, and exactly 0 on
 *   the done rows on both;
 * - 5 training steps on a batch of 777 rows: the loss statistic within 1e-5 at the first step,
 *   the parameters within 1e-4 after the fifth (AdamW divides by sqrt(v), which magnifies
 *   rounding where a gradient is small), the step counters equal;
 * - a collection step's reward and a training step captured as a graph: 20 launches copy,
 *   allocate and synchronise nothing, and the AdamW step moves by 20;
 * - an intrinsic replay ring of 4099 envs (n 3) on both backends, 40 pushes with intrinsic
 *   rewards, PER samples of 1000 rows: every column (the intrinsic return, the one-step
 *   portfolio and done flag included) and every batch output bit for bit.
 * Run on a GPU machine (scripts/gpu.sh), not by ctest. */
#include <math.h>

#include "gpu_replay_pair.h"
#include "vulpes/curiosity.h"

enum { NE = 1031, NB = 777, H = 37, P = 8, HD = 64 };

static vp_curiosity_cfg cfg_of(void) {
    vp_curiosity_cfg c;
    memset(&c, 0, sizeof c);
    c.n_envs = NE;
    c.batch = NB;
    c.steps_per_iter = 1;
    c.enc_dim = H;
    c.n_portfolio = P;
    c.layout = vp_action_layout_env();
    c.hidden = HD;
    c.eta = 0.1f;
    c.adamw.lr = 1e-3f;
    c.adamw.beta1 = 0.9f;
    c.adamw.beta2 = 0.999f;
    c.adamw.eps = 1e-8f;
    c.precision = VP_PREC_FP32;
    c.seed = 11;
    return c;
}

/* A twin over two tensors the models own (h: the CPU model's, d: the GPU model's). */
static twin wrap(const vp_tensor* cpu, const vp_tensor* gpu) {
    twin t;
    memset(&t, 0, sizeof t);
    t.h = *cpu;
    t.d = *gpu;
    t.n = vp_tensor_numel(cpu);
    return t;
}

/* Random actions of every branch into an i32 twin [n, 4]. */
static void rand_actions(twin* a, int64_t n) {
    const vp_action_layout l = vp_action_layout_env();
    const uint64_t s = g_stream++;
    int32_t* h = (int32_t*)a->h.data;
    for (int64_t i = 0; i < n; ++i)
        for (int br = 0; br < l.n_branches; ++br)
            h[i * l.n_branches + br] = (int32_t)(vp_rng_draw(g_seed, s, (uint64_t)(i * 4 + br)).v[0] % (uint32_t)l.size[br]);
    twin_push(a);
}

/* The graph body: one collection step's reward, then one training step. */
typedef struct body_ctx {
    vp_curiosity* c;
    twin *enc, *port, *act, *next, *done, *benc, *bport, *bact, *bnext;
} body_ctx;

static vp_status body(vp_backend* b, void* ctx) {
    (void)b;
    body_ctx* x = (body_ctx*)ctx;
    vp_tensor r;
    VP_TRY(vp_curiosity_reward(x->c, &x->enc->d, &x->port->d, &x->act->d, &x->next->d, &x->done->d, &r));
    return vp_curiosity_train(x->c, &x->benc->d, &x->bport->d, &x->bact->d, &x->bnext->d, NULL);
}

static void test_against_cpu(void) {
    vp_curiosity_cfg cfg = cfg_of();
    vp_curiosity cc, cg;
    CHECK_OK(vp_curiosity_init(&cc, g_cpu, &cfg, NULL));
    CHECK_OK(vp_curiosity_init(&cg, g_gpu, &cfg, NULL));
    if (!cc.params.data || !cg.params.data) return;
    twin w = wrap(&cc.params, &cg.params);
    twin_check_bits("curiosity init", "4296 parameters from one seed", &w);

    // collection inputs: E rows, 5 % done
    twin enc, port, act, next, done;
    twin_2d(&enc, VP_F32, NE, H), twin_2d(&port, VP_F32, NE, P), twin_2d(&act, VP_I32, NE, 4);
    twin_2d(&next, VP_F32, NE, P), twin_1d(&done, VP_F32, NE);
    twin_rand(&enc, -2.0f, 2.0f), twin_rand(&port, -1.0f, 1.0f), twin_rand(&next, -1.0f, 1.0f);
    rand_actions(&act, NE);
    float* dh = (float*)done.h.data;
    for (int64_t i = 0; i < NE; ++i) dh[i] = i % 20 == 7 ? 1.0f : 0.0f;
    twin_push(&done);

    vp_tensor fc, fg;
    CHECK_OK(vp_curiosity_forward(&cc, &enc.h, &port.h, &act.h, NE, &fc));
    CHECK_OK(vp_curiosity_forward(&cg, &enc.d, &port.d, &act.d, NE, &fg));
    twin x = wrap(&cc.x, &cg.x);
    x.n = (int64_t)NE * cc.in_dim;
    twin_check_bits("curiosity input", "1031 x (37 + 8 + 13)", &x);
    twin f = wrap(&fc, &fg);
    twin_check("curiosity forward", "1031 rows, Hd 64, FP32", &f, 1e-5);

    vp_tensor rc, rg;
    CHECK_OK(vp_curiosity_reward(&cc, &enc.h, &port.h, &act.h, &next.h, &done.h, &rc));
    CHECK_OK(vp_curiosity_reward(&cg, &enc.d, &port.d, &act.d, &next.d, &done.d, &rg));
    twin r = wrap(&rc, &rg);
    twin_check("curiosity reward", "1031 envs, 5 % done", &r, 1e-5);
    float* rgh = (float*)twin_fetch(&r);
    const float* rch = (const float*)rc.data;
    int64_t nonzero_done = 0;
    for (int64_t i = 0; rgh && i < NE; ++i)
        if (dh[i] != 0.0f && (rgh[i] != 0.0f || rch[i] != 0.0f)) nonzero_done++;
    CHECK(nonzero_done == 0, "%lld done envs with a nonzero intrinsic reward", (long long)nonzero_done);
    twin_row("curiosity reward", "done envs exactly 0", (double)nonzero_done, 0, nonzero_done == 0);
    free(rgh);

    // training inputs: B rows, 5 steps
    twin benc, bport, bact, bnext;
    twin_2d(&benc, VP_F32, NB, H), twin_2d(&bport, VP_F32, NB, P), twin_2d(&bact, VP_I32, NB, 4);
    twin_2d(&bnext, VP_F32, NB, P);
    twin_rand(&benc, -2.0f, 2.0f), twin_rand(&bport, -1.0f, 1.0f), twin_rand(&bnext, -1.0f, 1.0f);
    rand_actions(&bact, NB);
    float sc[VP_CUR_STAT_COUNT], sg[VP_CUR_STAT_COUNT];
    for (int k = 0; k < 5; ++k) {
        CHECK_OK(vp_curiosity_train(&cc, &benc.h, &bport.h, &bact.h, &bnext.h, NULL));
        CHECK_OK(vp_curiosity_train(&cg, &benc.d, &bport.d, &bact.d, &bnext.d, NULL));
        if (k > 0) continue;
        CHECK_OK(vp_curiosity_stats_read(&cc, sc));
        CHECK_OK(vp_curiosity_stats_read(&cg, sg));
        const double e = fabs((double)sg[VP_CUR_STAT_LOSS] - sc[VP_CUR_STAT_LOSS]) / fabs((double)sc[VP_CUR_STAT_LOSS]);
        twin_row("curiosity loss", "777 rows, first step", e, 1e-5, e <= 1e-5);
        CHECK(e <= 1e-5, "loss %g on the GPU, %g on the CPU", (double)sg[VP_CUR_STAT_LOSS], (double)sc[VP_CUR_STAT_LOSS]);
    }
    twin_check("curiosity train", "parameters after 5 AdamW steps", &w, 1e-4);
    int32_t stc = 0, stg = 0;
    CHECK_OK(vp_download(g_cpu, &stc, &cc.step, sizeof stc));
    CHECK_OK(vp_download(g_gpu, &stg, &cg.step, sizeof stg));
    CHECK(stc == 5 && stg == 5, "AdamW steps %d (CPU), %d (GPU)", (int)stc, (int)stg);

    // reward + training step as a graph: nothing copied, allocated or synchronised per launch
    body_ctx ctx = {&cg, &enc, &port, &act, &next, &done, &benc, &bport, &bact, &bnext};
    vp_graph* g = NULL;
    vp_status s = vp_graph_capture(g_gpu, body, &ctx, &g);
    CHECK_OK(s);
    CHECK_OK(vp_backend_sync(g_gpu));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int k = 0; k < 20 && s == VP_OK; ++k) s = vp_graph_launch(g_gpu, g);
    vp_backend_counters(g_gpu, &after);
    CHECK_OK(s);
    CHECK_OK(vp_download(g_gpu, &stg, &cg.step, sizeof stg));
    const int zero = after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs;
    twin_row("curiosity graph", "20 launches: copies/allocs/syncs", 0, 0, zero && stg == 25);
    CHECK(zero, "20 launches: copies +%lld, allocs +%lld, syncs +%lld", (long long)(after.copies - before.copies),
          (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
    CHECK(stg == 25, "AdamW step %d after 5 + 20 launches", (int)stg);
    vp_graph_free(g);

    twin* all[] = {&enc, &port, &act, &next, &done, &benc, &bport, &bact, &bnext};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
    vp_curiosity_free(&cc), vp_curiosity_free(&cg);
}

/* Compares one optional f32 column of both rings bit for bit. */
static void compare_opt(const char* cas, const char* name, const vp_tensor* c, const vp_tensor* g) {
    CHECK(c->data != NULL && g->data != NULL, "%s %s: column missing", cas, name);
    if (c->data && g->data) compare_field(cas, name, c, g);
}

static void test_intrinsic_ring(void) {
    vp_replay_cfg cfg = vp_replay_cfg_default();
    cfg.capacity = 100003;
    cfg.n_envs = 4099;
    cfg.seed = 12;
    cfg.intrinsic = 1;
    rpair p;
    if (!pair_init(&p, &cfg, 1000, 1)) {
        pair_free(&p);
        return;
    }
    twin ri, oint, op1, od1;
    twin_1d(&ri, VP_F32, cfg.n_envs);
    twin_1d(&oint, VP_F32, p.B), twin_2d(&op1, VP_F32, p.B, cfg.n_portfolio), twin_1d(&od1, VP_F32, p.B);
    for (int t = 0; t < 40; ++t) {
        fill_step(&p, t);
        twin_rand(&ri, 0.0f, 0.5f);
        vp_replay_step sc = step_view(&p, 0), sg = step_view(&p, 1);
        sc.reward_int = ri.h, sg.reward_int = ri.d;
        CHECK_OK(vp_replay_push(p.c, &sc));
        CHECK_OK(vp_replay_push(p.g, &sg));
    }
    compare_rings("intrinsic ring, 40 pushes", &p);
    vp_replay_fields fc, fg;
    CHECK_OK(vp_replay_fields_get(p.c, &fc));
    CHECK_OK(vp_replay_fields_get(p.g, &fg));
    compare_opt("intrinsic ring, 40 pushes", "reward_int", &fc.reward_int, &fg.reward_int);
    compare_opt("intrinsic ring, 40 pushes", "portfolio_1", &fc.portfolio_1, &fg.portfolio_1);
    compare_opt("intrinsic ring, 40 pushes", "done_1", &fc.done_1, &fg.done_1);
    for (int k = 0; k < 3; ++k) {
        vp_replay_batch oc = batch_view(&p, 0), og = batch_view(&p, 1);
        oc.reward_int = oint.h, og.reward_int = oint.d;
        oc.portfolio_1 = op1.h, og.portfolio_1 = op1.d;
        oc.done_1 = od1.h, og.done_1 = od1.d;
        CHECK_OK(vp_replay_sample(p.c, &oc));
        CHECK_OK(vp_replay_sample(p.g, &og));
        twin_check_bits("replay sample idx", "intrinsic ring", &p.idx);
        twin_check_bits("replay sample reward", "extrinsic + intrinsic", &p.orew);
        twin_check_bits("replay sample reward_int", "intrinsic ring", &oint);
        twin_check_bits("replay sample portfolio_1", "intrinsic ring", &op1);
        twin_check_bits("replay sample done_1", "intrinsic ring", &od1);
        twin_check_bits("replay sample is_weight", "intrinsic ring", &p.ow);
    }
    twin_free(&ri), twin_free(&oint), twin_free(&op1), twin_free(&od1);
    pair_free(&p);
}

int main(void) {
    gpu_setup("test_gpu_curiosity");
    RUN_TEST(test_against_cpu);
    RUN_TEST(test_intrinsic_ring);
    gpu_teardown();
    return vpt_finish();
}
