/* Helpers of test_gpu_replay.c: one replay ring per backend (CPU reference, CUDA under
 * test) with twin step and batch tensors, random steps, and the bit-for-bit comparisons
 * of the rings and of sampled batches. */
#ifndef VP_GPU_REPLAY_PAIR_H
#define VP_GPU_REPLAY_PAIR_H

#include "gpu_twin.h"
#include "vulpes/replay.h"

/* ---- one ring per backend, with the step and batch tensors ------------------------------------- */

/* The same ring on the CPU and on CUDA, and the twins of one push and one sampled batch. */
typedef struct rpair {
    vp_replay_cfg cfg;
    vp_replay *c, *g;                                    /* CPU and CUDA rings */
    twin bar, wend, port, act, rew, done, nbar, nport;   /* step inputs [E, ...] */
    twin idx, obar, onbar, oport, onport, oact, orew, odisc, ow, loss; /* batch [B, ...] */
    int64_t B;
} rpair;

/* Both rings of `cfg` and the step ([E, ...]) and batch ([B, ...]) twins; done as f32
 * when `done_f32`. Returns 0 when a ring could not be made. */
static inline int pair_init(rpair* p, const vp_replay_cfg* cfg, int64_t B, int done_f32) {
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

/* Frees both rings and every twin. */
static inline void pair_free(rpair* p) {
    vp_replay_free(p->c);
    vp_replay_free(p->g);
    twin* all[] = {&p->bar, &p->wend, &p->port, &p->act, &p->rew, &p->done, &p->nbar, &p->nport, &p->idx,
                   &p->obar, &p->onbar, &p->oport, &p->onport, &p->oact, &p->orew, &p->odisc, &p->ow, &p->loss};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
}

/* The step tensors of one side (dev 0: CPU, 1: CUDA). */
static inline vp_replay_step step_view(rpair* p, int dev) {
    vp_replay_step s;
    memset(&s, 0, sizeof s); /* optional fields (the intrinsic ones) absent */
    s.bar_idx = dev ? p->bar.d : p->bar.h, s.window_end = dev ? p->wend.d : p->wend.h;
    s.portfolio = dev ? p->port.d : p->port.h, s.action = dev ? p->act.d : p->act.h;
    s.reward = dev ? p->rew.d : p->rew.h, s.done = dev ? p->done.d : p->done.h;
    s.next_bar_idx = dev ? p->nbar.d : p->nbar.h, s.next_portfolio = dev ? p->nport.d : p->nport.h;
    return s;
}

/* The batch tensors of one side. */
static inline vp_replay_batch batch_view(rpair* p, int dev) {
    vp_replay_batch o;
    memset(&o, 0, sizeof o); /* optional fields (the intrinsic ones) absent */
    o.indices = dev ? p->idx.d : p->idx.h, o.bar_idx = dev ? p->obar.d : p->obar.h;
    o.next_bar_idx = dev ? p->onbar.d : p->onbar.h, o.portfolio = dev ? p->oport.d : p->oport.h;
    o.next_portfolio = dev ? p->onport.d : p->onport.h, o.actions = dev ? p->oact.d : p->oact.h;
    o.reward = dev ? p->orew.d : p->orew.h, o.discount = dev ? p->odisc.d : p->odisc.h;
    o.is_weight = dev ? p->ow.d : p->ow.h;
    return o;
}

/* Fresh random step data (uploaded): rewards in [-1, 1), dones 2% terminal, 1% truncated. */
static inline void fill_step(rpair* p, int t) {
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
static inline void push_both(rpair* p) {
    vp_replay_step sc = step_view(p, 0), sg = step_view(p, 1);
    CHECK_OK(vp_replay_push(p->c, &sc));
    CHECK_OK(vp_replay_push(p->g, &sg));
}

/* Fills and pushes steps 0 .. n-1 on both sides. */
static inline void push_steps(rpair* p, int n) {
    for (int t = 0; t < n; ++t) {
        fill_step(p, t);
        push_both(p);
    }
}

/* Compares one ring array bit for bit (the table shows the count of differing elements). */
static inline void compare_field(const char* cas, const char* name, const vp_tensor* c, const vp_tensor* g) {
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
static inline void compare_rings(const char* cas, rpair* p) {
    vp_replay_fields fc, fg;
    CHECK_OK(vp_replay_fields_get(p->c, &fc));
    CHECK_OK(vp_replay_fields_get(p->g, &fg));
    const vp_tensor* cf[] = {&fc.bar_idx, &fc.next_bar_idx, &fc.window_end, &fc.portfolio, &fc.next_portfolio,
                             &fc.action, &fc.reward, &fc.discount, &fc.done, &fc.priority};
    const vp_tensor* gf[] = {&fg.bar_idx, &fg.next_bar_idx, &fg.window_end, &fg.portfolio, &fg.next_portfolio,
                             &fg.action, &fg.reward, &fg.discount, &fg.done, &fg.priority};
    const char* names[] = {"bar_idx", "next_bar_idx", "window_end", "portfolio", "next_portfolio",
                           "action", "reward", "discount", "done", "priority"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; ++i) compare_field(cas, names[i], cf[i], gf[i]);
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
static inline int64_t sample_both(const char* cas, rpair* p) {
    vp_replay_batch oc = batch_view(p, 0), og = batch_view(p, 1);
    CHECK_OK(vp_replay_sample(p->c, &oc));
    CHECK_OK(vp_replay_sample(p->g, &og));
    int32_t* gi = (int32_t*)twin_fetch(&p->idx);
    if (!gi) return p->B;
    const int32_t* ci = (const int32_t*)p->idx.h.data;
    int64_t diff = 0;
    for (int64_t j = 0; j < p->B; ++j) diff += ci[j] != gi[j];
    free(gi);
    twin* out[] = {&p->idx, &p->obar, &p->onbar, &p->oport, &p->onport, &p->oact, &p->orew, &p->odisc, &p->ow};
    const char* names[] = {"replay sample idx",       "replay sample bar",     "replay sample next_bar",
                           "replay sample portfolio", "replay sample next_port", "replay sample actions",
                           "replay sample reward",    "replay sample discount", "replay sample is_weight"};
    for (size_t i = 0; i < sizeof out / sizeof out[0]; ++i) twin_check_bits(names[i], cas, out[i]);
    return diff;
}

/* Losses in [0, 5) on both sides; both update the CPU's sampled slots (the same ones
 * unless a sample already failed). */
static inline void update_both(rpair* p) {
    twin_rand(&p->loss, 0.0f, 5.0f);
    twin_push(&p->idx); /* the GPU updates the slots the CPU drew */
    CHECK_OK(vp_replay_update_priorities(p->c, &p->idx.h, &p->loss.h));
    CHECK_OK(vp_replay_update_priorities(p->g, &p->idx.d, &p->loss.d));
}

/* A configuration of capacity `cap`, E envs, n-step `n`; eps 0 at alpha 1 (priority =
 * loss on both sides), beta annealed over 7 samples, seeded by the run. */
static inline vp_replay_cfg base_cfg(int64_t cap, int E, int n, int prioritized, float alpha) {
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

#endif /* VP_GPU_REPLAY_PAIR_H */
