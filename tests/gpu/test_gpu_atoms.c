/* GPU parity of the learner modules' kernels (docs/modules.md; cuda_atoms.cu, cuda_loss.cu and
 * cuda_lmods.cu against model_atoms.c, cpu_loss.c and cpu_lmods.c) on fresh random inputs at
 * several batch sizes and shapes, odd ones included, outputs poisoned with NaN first: the
 * support from spacing logits and the Q on it, the projection onto a non-uniform grid, the C51
 * and IQN losses with adaptive supports and PopArt's normalisation, the spacing gradient, and
 * PopArt's statistics and rescale; then learner steps with both modules on, CUDA (FP32
 * products) against the CPU. Tolerance: 1e-5 norm-wise relative for the kernels (FP32,
 * different summation orders; PopArt's moments in double), 1e-4 for the learner's state after
 * three steps. Runs on a GPU machine only. */
#include "gpu_twin.h"
#include "learn/learner_internal.h"
#include "learn/loss.h"
#include "model/model_atoms.h"

#define TOL 1e-5

/* One shape: batch, branches, atoms, support, taus, output-layer width. */
typedef struct atoms_case {
    int64_t batch;
    int nb;
    int sizes[4];
    int Z;
    float vmin, vmax;
    int N, M, HH;
} atoms_case;

static const atoms_case CASES[] = {
    {1, 1, {1}, 2, -1.0f, 1.0f, 1, 1, 1},
    {7, 2, {3, 2}, 5, -2.0f, 2.0f, 3, 5, 6},
    {333, 3, {4, 1, 3}, 51, -10.0f, 10.0f, 7, 2, 17},
    {8192, 4, {3, 4, 3, 3}, 51, -10.0f, 10.0f, 64, 64, 128},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

static vp_loss_dims dims_of(const atoms_case* c) {
    vp_model_cfg mc;
    memset(&mc, 0, sizeof mc);
    mc.n_branches = c->nb;
    for (int i = 0; i < c->nb; ++i) mc.branch_sizes[i] = c->sizes[i];
    mc.n_atoms = c->Z;
    mc.v_min = c->vmin;
    mc.v_max = c->vmax;
    vp_loss_dims d;
    CHECK_OK(vp_loss_dims_make(&d, &mc, c->batch, c->N, c->M, 1.0f));
    return d;
}

/* Random logits (host side) into log-softmax rows of width Z, pushed to the GPU. */
static void make_log_probs(twin* t, int Z) {
    twin_rand(t, -3.0f, 3.0f);
    float* x = (float*)t->h.data;
    for (int64_t r = 0; r < t->n / Z; ++r) {
        double m = -INFINITY, s = 0.0;
        for (int j = 0; j < Z; ++j) m = fmax(m, x[r * Z + j]);
        for (int j = 0; j < Z; ++j) s += exp(x[r * Z + j] - m);
        for (int j = 0; j < Z; ++j) x[r * Z + j] = (float)(x[r * Z + j] - m - log(s));
    }
    twin_push(t);
}

/* Random choices within each branch (i32). */
static void make_actions(twin* t, const vp_loss_dims* d) {
    const uint64_t s = g_stream++;
    int32_t* a = (int32_t*)t->h.data;
    for (int64_t i = 0; i < d->batch; ++i)
        for (int br = 0; br < d->n_branches; ++br)
            a[i * d->n_branches + br] =
                (int32_t)(vp_rng_uniform(g_seed, s, (uint64_t)(i * 8 + br)) * d->branch_size[br]);
    twin_push(t);
}

static void test_atoms_parity(void) {
    char cas[96];
    for (int ci = 0; ci < N_CASES; ++ci) {
        const atoms_case* c = &CASES[ci];
        vp_loss_dims d = dims_of(c);
        const int64_t B = c->batch, A = d.n_actions, Z = c->Z, nb = c->nb;
        snprintf(cas, sizeof cas, "B=%lld A=%lld Z=%lld taus=%d/%d", (long long)B, (long long)A, (long long)Z, c->N,
                 c->M);
        twin sp, tsp, sup, tsup, lp, tlp, q, tq, act, astar, rew, disc, w, pa, proj, loss, dlp, iq, tiq, taus, dq;
        twin resid, dsp, lw, lb, tw, tb;
        twin_2d(&sp, VP_F32, nb, Z - 1);
        twin_2d(&tsp, VP_F32, nb, Z - 1);
        twin_2d(&sup, VP_F32, nb, Z);
        twin_2d(&tsup, VP_F32, nb, Z);
        twin_2d(&lp, VP_F32, B * A, Z);
        twin_2d(&tlp, VP_F32, B * A, Z);
        twin_2d(&q, VP_F32, B, A);
        twin_2d(&tq, VP_F32, B, A);
        twin_2d(&act, VP_I32, B, nb);
        twin_2d(&astar, VP_I32, B, nb);
        twin_1d(&rew, VP_F32, B);
        twin_1d(&disc, VP_F32, B);
        twin_1d(&w, VP_F32, B);
        twin_1d(&pa, VP_F32, VP_POPART_N);
        twin_2d(&proj, VP_F32, B * nb, Z);
        twin_1d(&loss, VP_F32, B);
        twin_2d(&dlp, VP_F32, B * A, Z);
        twin_2d(&iq, VP_F32, B * c->N, A);
        twin_2d(&tiq, VP_F32, B * c->M, A);
        twin_2d(&taus, VP_F32, B, c->N);
        twin_2d(&dq, VP_F32, B * c->N, A);
        twin_2d(&resid, VP_F32, B, nb);
        twin_2d(&dsp, VP_F32, nb, Z - 1);
        twin_2d(&lw, VP_F32, A, c->HH);
        twin_1d(&lb, VP_F32, A);
        twin_2d(&tw, VP_F32, A, c->HH);
        twin_1d(&tb, VP_F32, A);
        // the supports of random spacing logits, and the Q on them
        twin_rand(&sp, -1.5f, 1.5f);
        twin_rand(&tsp, -1.5f, 1.5f);
        twin_poison(&sup), twin_poison(&tsup);
        CHECK_OK(vp_amops_cpu.support(g_cpu, (int)nb, (int)Z, c->vmin, c->vmax, (const float*)sp.h.data,
                                      (float*)sup.h.data));
        CHECK_OK(vp_amops_cuda.support(g_gpu, (int)nb, (int)Z, c->vmin, c->vmax, (const float*)sp.d.data,
                                       (float*)sup.d.data));
        twin_check("atoms_support", cas, &sup, TOL);
        CHECK_OK(vp_amops_cpu.support(g_cpu, (int)nb, (int)Z, c->vmin, c->vmax, (const float*)tsp.h.data,
                                      (float*)tsup.h.data));
        twin_push(&sup);
        twin_push(&tsup);
        vp_branch_map br = {(int)nb, {0}};
        for (int k = 0; k < nb; ++k) br.size[k] = c->sizes[k];
        make_log_probs(&lp, (int)Z);
        make_log_probs(&tlp, (int)Z);
        twin_poison(&q);
        CHECK_OK(vp_amops_cpu.q(g_cpu, B, (int)Z, &br, (const float*)sup.h.data, (const float*)lp.h.data,
                                (float*)q.h.data));
        CHECK_OK(vp_amops_cuda.q(g_gpu, B, (int)Z, &br, (const float*)sup.d.data, (const float*)lp.d.data,
                                 (float*)q.d.data));
        twin_check("atoms_q", cas, &q, TOL);
        // the losses with both supports and PopArt's state
        make_actions(&act, &d);
        make_actions(&astar, &d);
        twin_rand(&rew, -12.0f, 12.0f);
        twin_rand(&disc, 0.0f, 1.0f);
        ((float*)disc.h.data)[0] = 0.0f;
        twin_push(&disc);
        twin_rand(&w, 0.1f, 1.0f);
        float* ph = (float*)pa.h.data;
        ph[VP_POPART_MU] = 0.7f, ph[VP_POPART_NU] = 3.0f, ph[VP_POPART_SIGMA] = 1.5f;
        twin_push(&pa);
        vp_loss_batch hb = {&act.h, &astar.h, &rew.h, &disc.h, &w.h, &sup.h, &tsup.h, &pa.h};
        vp_loss_batch db = {&act.d, &astar.d, &rew.d, &disc.d, &w.d, &sup.d, &tsup.d, &pa.d};
        for (int popart = 0; popart < 2; ++popart) {
            hb.popart = popart ? &pa.h : NULL;
            db.popart = popart ? &pa.d : NULL;
            const char* tag = popart ? "loss_c51 atoms+popart" : "loss_c51 atoms";
            twin_poison(&proj), twin_poison(&loss), twin_poison(&dlp);
            CHECK_OK(vp_loss_c51(g_cpu, &d, &hb, &lp.h, &tlp.h, &proj.h, &loss.h, &dlp.h));
            CHECK_OK(vp_loss_c51(g_gpu, &d, &db, &lp.d, &tlp.d, &proj.d, &loss.d, &dlp.d));
            twin_check(tag, cas, &proj, TOL);
            twin_check(tag, cas, &loss, TOL);
            twin_check(tag, cas, &dlp, TOL);
            // the spacing gradient
            twin_rand(&tq, -5.0f, 5.0f);
            twin_poison(&resid), twin_poison(&dsp);
            CHECK_OK(vp_loss_atoms_grad(g_cpu, &d, &hb, &lp.h, &tq.h, &sp.h, &resid.h, &dsp.h));
            CHECK_OK(vp_loss_atoms_grad(g_gpu, &d, &db, &lp.d, &tq.d, &sp.d, &resid.d, &dsp.d));
            twin_check(popart ? "atoms_grad resid popart" : "atoms_grad resid", cas, &resid, TOL);
            twin_check(popart ? "atoms_grad d_spacing popart" : "atoms_grad d_spacing", cas, &dsp, TOL);
        }
        // IQN with PopArt's targets
        twin_rand(&iq, -4.0f, 4.0f);
        twin_rand(&tiq, -4.0f, 4.0f);
        twin_rand(&taus, 0.001f, 0.999f);
        twin_poison(&loss), twin_poison(&dq);
        CHECK_OK(vp_loss_iqn(g_cpu, &d, &hb, &iq.h, &tiq.h, &taus.h, &loss.h, &dq.h));
        CHECK_OK(vp_loss_iqn(g_gpu, &d, &db, &iq.d, &tiq.d, &taus.d, &loss.d, &dq.d));
        twin_check("loss_iqn popart loss", cas, &loss, TOL);
        twin_check("loss_iqn popart d_iqn", cas, &dq, TOL);
        // PopArt's step: the state and both rescaled output layers
        twin_rand(&lw, -1.0f, 1.0f);
        twin_rand(&lb, -1.0f, 1.0f);
        twin_rand(&tw, -1.0f, 1.0f);
        twin_rand(&tb, -1.0f, 1.0f);
        CHECK_OK(vp_loss_popart(g_cpu, &d, &hb, &tq.h, 0.01f, &lw.h, &lb.h, &tw.h, &tb.h));
        CHECK_OK(vp_loss_popart(g_gpu, &d, &db, &tq.d, 0.01f, &lw.d, &lb.d, &tw.d, &tb.d));
        twin_check("loss_popart state", cas, &pa, TOL);
        twin_check("loss_popart w", cas, &lw, TOL);
        twin_check("loss_popart bias", cas, &lb, TOL);
        twin_check("loss_popart target w", cas, &tw, TOL);
        twin_check("loss_popart target bias", cas, &tb, TOL);
        twin* all[] = {&sp,   &tsp,  &sup, &tsup, &lp, &tlp,  &q,   &tq,    &act, &astar, &rew, &disc, &w, &pa,
                       &proj, &loss, &dlp, &iq,   &tiq, &taus, &dq, &resid, &dsp, &lw,    &lb,  &tw,   &tb};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
    }
}

static void test_project_grid(void) {
    static const int64_t SHAPES[][3] = {{1, 1, 2}, {9, 5, 5}, {1000, 51, 51}, {77, 3, 101}};
    char cas[64];
    for (int s = 0; s < 4; ++s) {
        const int64_t R = SHAPES[s][0], n = SHAPES[s][1], Z = SHAPES[s][2];
        atoms_case c = {1, 1, {1}, (int)Z, -3.0f, 4.0f, 0, 0, 1};
        vp_loss_dims d = dims_of(&c);
        twin grid, sup, pr, out;
        twin_1d(&grid, VP_F32, Z);
        twin_2d(&sup, VP_F32, R, n);
        twin_2d(&pr, VP_F32, R, n);
        twin_2d(&out, VP_F32, R, Z);
        // an increasing grid with uneven gaps on [-3, 4]
        twin_rand(&grid, 0.1f, 1.0f);
        float* g = (float*)grid.h.data;
        double tot = 0.0, cum = 0.0;
        for (int64_t j = 1; j < Z; ++j) tot += g[j];
        for (int64_t j = 1; j < Z; ++j) {
            cum += g[j]; /* g[j] still holds gap j: it is overwritten after being read */
            g[j] = (float)(-3.0 + 7.0 * cum / tot);
        }
        g[0] = -3.0f;
        g[Z - 1] = 4.0f;
        twin_push(&grid);
        twin_rand(&sup, -5.0f, 6.0f);
        twin_rand(&pr, 0.0f, 1.0f);
        twin_poison(&out);
        snprintf(cas, sizeof cas, "rows=%lld n=%lld Z=%lld", (long long)R, (long long)n, (long long)Z);
        CHECK_OK(vp_loss_c51_project_grid(g_cpu, &d, &grid.h, &sup.h, &pr.h, &out.h));
        CHECK_OK(vp_loss_c51_project_grid(g_gpu, &d, &grid.d, &sup.d, &pr.d, &out.d));
        twin_check("loss_c51_project_grid", cas, &out, TOL);
        twin_free(&grid), twin_free(&sup), twin_free(&pr), twin_free(&out);
    }
}

/* A small learner with both modules on, its batch filled from host arrays (the same on both). */
static void learner_make(vp_backend* be, vp_learner* l, vp_batch* bt, twin* feat) {
    vp_learner_cfg c = vp_learner_cfg_default();
    c.model.n_features = 5;
    c.model.n_portfolio = 3;
    c.model.window = 5;
    c.model.hidden = 8;
    c.model.mamba_head_dim = 4;
    c.model.mamba_state = 3;
    c.model.head_hidden = 6;
    c.model.n_atoms = 7;
    c.model.n_branches = 2;
    c.model.branch_sizes[0] = 3;
    c.model.branch_sizes[1] = 2;
    c.model.iqn_cos = 4;
    c.model.adaptive_atoms = 1;
    c.popart = 1;
    c.popart_beta = 0.1f;
    c.batch = 64;
    c.n_taus = 3;
    c.n_target_taus = 4;
    c.adamw.lr = 1e-2f;
    CHECK_OK(vp_learner_init(l, be, &c));
    l->model.precision = VP_PREC_FP32;
    CHECK_OK(vp_learner_batch_init(l, bt));
    bt->features = be == g_gpu ? feat->d : feat->h;
    int32_t bar[64], nbar[64], act[128];
    float port[192], nport[192], r[64], d[64], w[64];
    for (int i = 0; i < 64; ++i) {
        bar[i] = 4 + i % 30;
        nbar[i] = bar[i] + 3;
        act[2 * i] = i % 3;
        act[2 * i + 1] = (i / 3) % 2;
        r[i] = 0.05f * (float)(i % 11) - 0.2f;
        d[i] = i % 9 == 0 ? 0.0f : 0.97f;
        w[i] = 0.5f + 0.01f * (float)i;
    }
    for (int e = 0; e < 192; ++e) {
        port[e] = 0.01f * (float)(e % 13) - 0.05f;
        nport[e] = 0.02f * (float)(e % 7) - 0.05f;
    }
    CHECK_OK(vp_upload(be, &bt->bar_idx, bar, sizeof bar));
    CHECK_OK(vp_upload(be, &bt->next_bar_idx, nbar, sizeof nbar));
    CHECK_OK(vp_upload(be, &bt->actions, act, sizeof act));
    CHECK_OK(vp_upload(be, &bt->portfolio, port, sizeof port));
    CHECK_OK(vp_upload(be, &bt->next_portfolio, nport, sizeof nport));
    CHECK_OK(vp_upload(be, &bt->reward, r, sizeof r));
    CHECK_OK(vp_upload(be, &bt->discount, d, sizeof d));
    CHECK_OK(vp_upload(be, &bt->is_weight, w, sizeof w));
    CHECK_OK(vp_learner_draw_taus(l, bt));
    CHECK_OK(vp_backend_sync(be));
}

/* ||a - b|| / ||b|| of two host arrays [n]. */
static double rel_err(const float* a, const float* b, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        num += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
        den += (double)b[i] * b[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

static void test_learner_steps(void) {
    twin feat;
    twin_2d(&feat, VP_F32, 40, 5);
    twin_rand(&feat, -2.0f, 2.0f);
    vp_learner lc, lg;
    vp_batch bc, bg;
    learner_make(g_cpu, &lc, &bc, &feat);
    learner_make(g_gpu, &lg, &bg, &feat);
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    for (int i = 0; i < 3; ++i) {
        CHECK_OK(vp_learner_step(&lc, &bc, NULL));
        CHECK_OK(vp_learner_step(&lg, &bg, NULL));
    }
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "learner steps with adaptive atoms and PopArt allocated, copied or synchronised");
    CHECK_OK(vp_backend_sync(g_gpu));
    // parameters (spacing logits and the rescaled IQN layer included) and PopArt's state
    const int64_t W = lc.model.n_weights;
    float* pg = (float*)malloc(sizeof(float) * (size_t)W);
    float st[VP_POPART_N];
    CHECK_OK(vp_download(g_gpu, pg, &lg.model.params, sizeof(float) * (size_t)W));
    CHECK_OK(vp_download(g_gpu, st, &lg.popart, sizeof st));
    const double ep = rel_err(pg, (const float*)lc.model.params.data, W);
    const double es = rel_err(st, (const float*)lc.popart.data, VP_POPART_N);
    const vp_param_info* sp = vp_model_find_param(&lc.model, "c51.atoms");
    const double ea = sp ? rel_err(pg + sp->offset, (const float*)lc.model.params.data + sp->offset, sp->numel) : 1.0;
    twin_row("learner params", "B64, 3 steps, atoms + popart", ep, 1e-4, ep <= 1e-4);
    twin_row("learner c51.atoms", "B64, 3 steps, atoms + popart", ea, 1e-4, ea <= 1e-4);
    twin_row("learner popart state", "B64, 3 steps, atoms + popart", es, 1e-4, es <= 1e-4);
    CHECK(ep <= 1e-4 && ea <= 1e-4 && es <= 1e-4, "learner after 3 steps: params %.3e, c51.atoms %.3e, PopArt %.3e",
          ep, ea, es);
    CHECK(isfinite(lg.stats_host[VP_STAT_LOSS]) && lg.stats_host[VP_STAT_NAN] == 0.0f, "loss %g after 3 steps",
          lg.stats_host[VP_STAT_LOSS]);
    free(pg);
    twin_free(&feat);
    vp_learner_free(&lc);
    vp_learner_free(&lg);
}

int main(void) {
    gpu_setup("test_gpu_atoms");
    RUN_TEST(test_atoms_parity);
    RUN_TEST(test_project_grid);
    RUN_TEST(test_learner_steps);
    gpu_teardown();
    return vpt_finish();
}
