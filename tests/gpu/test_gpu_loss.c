/* GPU parity of the loss kernels (src/learn/cuda_loss.cu against cpu_loss.c) on fresh
 * random inputs at several batch sizes and shapes, odd ones included, outputs poisoned
 * with NaN first. Tolerance: 1e-5 norm-wise relative (FP32, different summation order);
 * the double-DQN choice and the tau draws bit for bit. Runs on a GPU machine only. */
#include "gpu_twin.h"
#include "learn/loss.h"

#define TOL 1e-5

/* One shape: batch, branches, atoms, support, taus. */
typedef struct loss_case {
    int64_t batch;
    int nb;
    int sizes[4];
    int Z;
    float vmin, vmax;
    int N, M;
} loss_case;

static const loss_case CASES[] = {
    {1, 1, {1}, 2, -1.0f, 1.0f, 1, 1},
    {7, 2, {3, 2}, 5, -2.0f, 2.0f, 3, 5},
    {333, 3, {4, 1, 3}, 51, -10.0f, 10.0f, 7, 2},
    {8192, 4, {3, 4, 3, 3}, 51, -10.0f, 10.0f, 64, 64},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

static vp_loss_dims dims_of(const loss_case* c) {
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

/* Turns random logits (host side) into log-softmax rows of width Z, pushed to the GPU. */
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

/* Random choices within each branch (i32), optionally with one out-of-range entry. */
static void make_actions(twin* t, const vp_loss_dims* d, int poison_one) {
    const uint64_t s = g_stream++;
    int32_t* a = (int32_t*)t->h.data;
    for (int64_t i = 0; i < d->batch; ++i)
        for (int br = 0; br < d->n_branches; ++br)
            a[i * d->n_branches + br] =
                (int32_t)(vp_rng_uniform(g_seed, s, (uint64_t)(i * 8 + br)) * d->branch_size[br]);
    if (poison_one && d->batch > 2) a[d->n_branches] = d->branch_size[0];
    twin_push(t);
}

static void test_loss_parity(void) {
    char cas[96];
    for (int ci = 0; ci < N_CASES; ++ci) {
        const loss_case* c = &CASES[ci];
        vp_loss_dims d = dims_of(c);
        const int64_t B = c->batch, A = d.n_actions, Z = c->Z, nb = c->nb;
        snprintf(cas, sizeof cas, "B=%lld A=%lld Z=%lld taus=%d/%d", (long long)B, (long long)A, (long long)Z, c->N,
                 c->M);
        twin q, astar, act, rew, disc, w, lp, tlp, proj, loss, dlp, iq, tiq, taus, dq, st, gn;
        twin_2d(&q, VP_F32, B, A);
        twin_2d(&astar, VP_I32, B, nb);
        twin_2d(&act, VP_I32, B, nb);
        twin_1d(&rew, VP_F32, B);
        twin_1d(&disc, VP_F32, B);
        twin_1d(&w, VP_F32, B);
        twin_2d(&lp, VP_F32, B * A, Z);
        twin_2d(&tlp, VP_F32, B * A, Z);
        twin_2d(&proj, VP_F32, B * nb, Z);
        twin_1d(&loss, VP_F32, B);
        twin_2d(&dlp, VP_F32, B * A, Z);
        twin_2d(&iq, VP_F32, B * c->N, A);
        twin_2d(&tiq, VP_F32, B * c->M, A);
        twin_2d(&taus, VP_F32, B, c->N);
        twin_2d(&dq, VP_F32, B * c->N, A);
        twin_1d(&st, VP_F32, VP_STAT_COUNT);
        twin_1d(&gn, VP_F32, 1);
        // Double-DQN choice, bit for bit (ties are rare in random floats; the CPU tests them).
        twin_rand(&q, -5.0f, 5.0f);
        CHECK_OK(vp_fill_i32(g_cpu, &astar.h, -1));
        CHECK_OK(vp_fill_i32(g_gpu, &astar.d, -1));
        CHECK_OK(vp_loss_select(g_cpu, &d, &q.h, &astar.h));
        CHECK_OK(vp_loss_select(g_gpu, &d, &q.d, &astar.d));
        twin_check_bits("loss_select", cas, &astar);
        // Inputs of both losses; a* from the CPU side for both.
        twin_push(&astar);
        make_actions(&act, &d, 0);
        twin_rand(&rew, -12.0f, 12.0f);
        twin_rand(&disc, 0.0f, 1.0f);
        ((float*)disc.h.data)[0] = 0.0f;
        twin_push(&disc);
        twin_rand(&w, 0.1f, 1.0f);
        make_log_probs(&lp, (int)Z);
        make_log_probs(&tlp, (int)Z);
        vp_loss_batch hb = {&act.h, &astar.h, &rew.h, &disc.h, &w.h, NULL, NULL, NULL};
        vp_loss_batch db = {&act.d, &astar.d, &rew.d, &disc.d, &w.d, NULL, NULL, NULL};
        twin_poison(&proj), twin_poison(&loss), twin_poison(&dlp);
        CHECK_OK(vp_loss_c51(g_cpu, &d, &hb, &lp.h, &tlp.h, &proj.h, &loss.h, &dlp.h));
        CHECK_OK(vp_loss_c51(g_gpu, &d, &db, &lp.d, &tlp.d, &proj.d, &loss.d, &dlp.d));
        twin_check("loss_c51 proj", cas, &proj, TOL);
        twin_check("loss_c51 loss", cas, &loss, TOL);
        twin_check("loss_c51 d_log_probs", cas, &dlp, TOL);
        // IQN.
        twin_rand(&iq, -4.0f, 4.0f);
        twin_rand(&tiq, -4.0f, 4.0f);
        twin_rand(&taus, 0.001f, 0.999f);
        twin_poison(&loss), twin_poison(&dq);
        CHECK_OK(vp_loss_iqn(g_cpu, &d, &hb, &iq.h, &tiq.h, &taus.h, &loss.h, &dq.h));
        CHECK_OK(vp_loss_iqn(g_gpu, &d, &db, &iq.d, &tiq.d, &taus.d, &loss.d, &dq.d));
        twin_check("loss_iqn loss", cas, &loss, TOL);
        twin_check("loss_iqn d_iqn", cas, &dq, TOL);
        // Statistics from the C51 and IQN losses (counters start at 0 on both).
        twin_rand(&gn, 1.0f, 2.0f);
        twin_poison_with(&st, 0.0f);
        CHECK_OK(vp_loss_stats(g_cpu, &d, &loss.h, &loss.h, &w.h, &q.h, &gn.h, &st.h));
        CHECK_OK(vp_loss_stats(g_gpu, &d, &loss.d, &loss.d, &w.d, &q.d, &gn.d, &st.d));
        twin_check("loss_stats", cas, &st, TOL);
        // An out-of-range action poisons its sample on both.
        make_actions(&act, &d, 1);
        CHECK_OK(vp_loss_iqn(g_cpu, &d, &hb, &iq.h, &tiq.h, &taus.h, &loss.h, &dq.h));
        CHECK_OK(vp_loss_iqn(g_gpu, &d, &db, &iq.d, &tiq.d, &taus.d, &loss.d, &dq.d));
        if (B > 2) twin_check_ex("loss_iqn bad action", cas, &loss, TOL, 1);
        twin* all[] = {&q,    &astar, &act, &rew, &disc, &w,    &lp, &tlp, &proj,
                       &loss, &dlp,   &iq,  &tiq, &taus, &dq,   &st, &gn};
        for (size_t i = 0; i < sizeof all / sizeof all[0]; ++i) twin_free(all[i]);
    }
}

static void test_project_and_taus(void) {
    static const int64_t SHAPES[][3] = {{1, 1, 2}, {9, 5, 5}, {1000, 51, 51}, {77, 3, 101}};
    char cas[64];
    for (int s = 0; s < 4; ++s) {
        const int64_t R = SHAPES[s][0], n = SHAPES[s][1], Z = SHAPES[s][2];
        loss_case c = {1, 1, {1}, (int)Z, -3.0f, 4.0f, 0, 0};
        vp_loss_dims d = dims_of(&c);
        twin sup, pr, out, tau;
        twin_2d(&sup, VP_F32, R, n);
        twin_2d(&pr, VP_F32, R, n);
        twin_2d(&out, VP_F32, R, Z);
        twin_2d(&tau, VP_F32, R, n);
        twin_rand(&sup, -5.0f, 6.0f);
        twin_rand(&pr, 0.0f, 1.0f);
        twin_poison(&out);
        snprintf(cas, sizeof cas, "rows=%lld n=%lld Z=%lld", (long long)R, (long long)n, (long long)Z);
        CHECK_OK(vp_loss_c51_project(g_cpu, &d, &sup.h, &pr.h, &out.h));
        CHECK_OK(vp_loss_c51_project(g_gpu, &d, &sup.d, &pr.d, &out.d));
        twin_check("loss_c51_project", cas, &out, TOL);
        // Tau draws: same Philox words on both, for a step counter read on the device.
        twin step;
        twin_1d(&step, VP_I32, 1);
        ((int32_t*)step.h.data)[0] = 12345 + (int32_t)s;
        twin_push(&step);
        twin_poison(&tau);
        CHECK_OK(vp_loss_draw_taus(g_cpu, 99, 7, &step.h, &tau.h));
        CHECK_OK(vp_loss_draw_taus(g_gpu, 99, 7, &step.d, &tau.d));
        twin_check_bits("loss_draw_taus", cas, &tau);
        twin_free(&step);
        twin_free(&sup), twin_free(&pr), twin_free(&out), twin_free(&tau);
    }
}

int main(void) {
    gpu_setup("test_gpu_loss");
    RUN_TEST(test_loss_parity);
    RUN_TEST(test_project_and_taus);
    gpu_teardown();
    return vpt_finish();
}
