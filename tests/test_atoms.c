/* Tests of adaptive atom spacing on the CPU (docs/modules.md): the support from spacing logits,
 * the projection onto a non-uniform grid and the C51 loss on it (oracles by hand), the spacing
 * gradient by hand and against central differences of a float64 reference. */
#include "model/atoms_math.h"
#include "test_hmods_util.h"
#include "test_loss_util.h"

static vp_backend* g_b;

/* Zero logits give the uniform support; logits (0, ln 2, 0) give [-1, -0.5, 0.5, 1]. */
static void test_support(void) {
    float s0[4] = {0, 0, 0, 0}, z[5];
    vp_atoms_support(s0, 5, -2.0f, 2.0f, z);
    for (int k = 0; k < 5; ++k) CHECK_NEAR(z[k], -2.0 + k, 1e-6, 0.0);
    CHECK(z[0] == -2.0f && z[4] == 2.0f, "the ends are v_min and v_max exactly: %g %g", z[0], z[4]);
    float s1[3] = {0.0f, logf(2.0f), 0.0f}, z1[4];
    vp_atoms_support(s1, 4, -1.0f, 1.0f, z1);
    const double want[4] = {-1.0, -0.5, 0.5, 1.0};
    for (int k = 0; k < 4; ++k) CHECK_NEAR(z1[k], want[k], 1e-6, 0.0);
}

/* Onto the grid [-1, -0.5, 0.5, 1]: atoms [-2, -0.75, 0, 0.8] with p [.1, .2, .3, .4] ->
 * [.2, .25, .31, .24] (-2 clipped to -1; -0.75 half and half; 0 half and half; 0.8 -> .4 / .6);
 * atoms [-0.5, 0.5, 1.5, 0.25] with p .25 each -> [0, .3125, .4375, .25] (atoms on the grid
 * go whole; 1.5 clipped; 0.25 -> .25 / .75). */
static void test_project_grid_oracle(void) {
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 4, -1.0f, 1.0f, 0, 0);
    float grid[4] = {-1.0f, -0.5f, 0.5f, 1.0f};
    float sup[8] = {-2.0f, -0.75f, 0.0f, 0.8f, -0.5f, 0.5f, 1.5f, 0.25f};
    float pr[8] = {.1f, .2f, .3f, .4f, .25f, .25f, .25f, .25f};
    float out[8];
    const double want[8] = {.2, .25, .31, .24, 0, .3125, .4375, .25};
    vp_tensor tg = tlu_t1(grid, VP_F32, 4), ts = tlu_t2(sup, VP_F32, 2, 4), tp = tlu_t2(pr, VP_F32, 2, 4);
    vp_tensor to = tlu_t2(out, VP_F32, 2, 4);
    CHECK_OK(vp_loss_c51_project_grid(g_b, &d, &tg, &ts, &tp, &to));
    for (int i = 0; i < 8; ++i) CHECK_NEAR(out[i], want[i], 1e-6, 0.0);
    // coinciding atoms: an atom on them goes whole to the lower (0 -> .6 on atom 1), 0.5 splits .2 / .2
    float g2[4] = {-1.0f, 0.0f, 0.0f, 1.0f}, s2[2] = {0.0f, 0.5f}, p2[2] = {.6f, .4f}, o2[4];
    vp_tensor tg2 = tlu_t1(g2, VP_F32, 4), ts2 = tlu_t2(s2, VP_F32, 1, 2), tp2 = tlu_t2(p2, VP_F32, 1, 2);
    vp_tensor to2 = tlu_t2(o2, VP_F32, 1, 4);
    CHECK_OK(vp_loss_c51_project_grid(g_b, &d, &tg2, &ts2, &tp2, &to2));
    const double w2[4] = {0, .6, .2, .2};
    for (int i = 0; i < 4; ++i) CHECK_NEAR(o2[i], w2[i], 1e-6, 0.0);
}

/* The C51 loss on the support [-1, -0.5, 0.5, 1] (online and target), r .25, gamma .5, target
 * p [.1, .2, .3, .4]: Bellman atoms [-.25, 0, .5, .75] -> m = [0, .175, .625, .2]; online p
 * uniform: loss = ln 4, gradient -m. With PopArt (mu 1, sigma 2) the atoms are
 * (z - .25) / 2 = [-.625, -.375, .125, .375] -> m = [.025, .4125, .5625, 0]. */
static void test_c51_nonuniform_oracle(void) {
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 4, -1.0f, 1.0f, 0, 0);
    float sup[4] = {-1.0f, -0.5f, 0.5f, 1.0f}, tsup[4] = {-1.0f, -0.5f, 0.5f, 1.0f};
    float reward[1] = {.25f}, disc[1] = {.5f}, w[1] = {1.0f}, pa[VP_POPART_N] = {1.0f, 5.0f, 2.0f};
    int32_t act[1] = {0}, next[1] = {0};
    float lp[4], tlp[4], proj[4], loss[1], dlp[4];
    const float tp[4] = {.1f, .2f, .3f, .4f};
    for (int j = 0; j < 4; ++j) {
        lp[j] = logf(0.25f);
        tlp[j] = logf(tp[j]);
    }
    tlu_batch tb;
    tlu_batch_init(&tb, 1, 1, act, next, reward, disc, w);
    vp_tensor ts = tlu_t2(sup, VP_F32, 1, 4), tts = tlu_t2(tsup, VP_F32, 1, 4), tpa = tlu_t1(pa, VP_F32, VP_POPART_N);
    tb.b.support = &ts;
    tb.b.target_support = &tts;
    tlu_c51(g_b, &d, &tb.b, 1, 1, 1, 4, lp, tlp, proj, loss, dlp);
    const double m[4] = {0, .175, .625, .2};
    for (int j = 0; j < 4; ++j) {
        CHECK_NEAR(proj[j], m[j], 1e-6, 0.0);
        CHECK_NEAR(dlp[j], -m[j], 1e-6, 0.0);
    }
    CHECK_NEAR(loss[0], log(4.0), 1e-6, 1e-6);
    tb.b.popart = &tpa;
    tlu_c51(g_b, &d, &tb.b, 1, 1, 1, 4, lp, tlp, proj, loss, dlp);
    const double mp[4] = {.025, .4125, .5625, 0};
    for (int j = 0; j < 4; ++j) CHECK_NEAR(proj[j], mp[j], 1e-6, 0.0);
    // the supports come in pairs
    tb.b.popart = NULL;
    tb.b.target_support = NULL;
    vp_tensor tl = tlu_f3(lp, 1, 1, 4), tt = tlu_f3(tlp, 1, 1, 4), tpj = tlu_f3(proj, 1, 1, 4);
    vp_tensor tls = tlu_t1(loss, VP_F32, 1), tgd = tlu_f3(dlp, 1, 1, 4);
    CHECK_STATUS(vp_loss_c51(g_b, &d, &tb.b, &tl, &tt, &tpj, &tls, &tgd), VP_ERR_INVALID_ARG, "together");
}

/* Spacing gradient by hand: Z 3 on [0, 1], s = 0 (z = [0, .5, 1]), p = [.2, .3, .5] so
 * Q = .65; y = .1 + .5 * .9 = .55; resid = .1; dL/dz = .1 p; G_0 = .03, G_1 = 0, mean .015;
 * ds = [.5 (.03 - .015), .5 (0 - .015)] = [.0075, -.0075]. */
static void test_spacing_grad_hand(void) {
    int sz[1] = {1};
    vp_loss_dims d = tlu_dims(1, 1, sz, 3, 0.0f, 1.0f, 0, 0);
    float sup[3] = {0.0f, 0.5f, 1.0f}, s[2] = {0, 0}, lp[3] = {logf(.2f), logf(.3f), logf(.5f)}, tq[1] = {.9f};
    float reward[1] = {.1f}, disc[1] = {.5f}, w[1] = {1.0f}, resid[1], ds[2];
    int32_t act[1] = {0}, next[1] = {0};
    tlu_batch tb;
    tlu_batch_init(&tb, 1, 1, act, next, reward, disc, w);
    vp_tensor tsu = tlu_t2(sup, VP_F32, 1, 3);
    tb.b.support = &tsu;
    tb.b.target_support = &tsu;
    vp_tensor tl = tlu_f3(lp, 1, 1, 3), ttq = tlu_t2(tq, VP_F32, 1, 1), tsp = tlu_t2(s, VP_F32, 1, 2);
    vp_tensor tr = tlu_t2(resid, VP_F32, 1, 1), tds = tlu_t2(ds, VP_F32, 1, 2);
    CHECK_OK(vp_loss_atoms_grad(g_b, &d, &tb.b, &tl, &ttq, &tsp, &tr, &tds));
    CHECK_NEAR(resid[0], 0.1, 1e-6, 0.0);
    CHECK_NEAR(ds[0], 0.0075, 1e-7, 1e-5);
    CHECK_NEAR(ds[1], -0.0075, 1e-7, 1e-5);
    tb.b.support = tb.b.target_support = NULL;
    CHECK_STATUS(vp_loss_atoms_grad(g_b, &d, &tb.b, &tl, &ttq, &tsp, &tr, &tds), VP_ERR_INVALID_ARG, "support");
}

/* float64 reference of the regression loss as a function of the spacing logits. */
typedef struct ref_case {
    int B, nb, Z, A, sz[3], off[3];
    float vmin, vmax, mu, sigma;
    const float *lp, *tq, *r, *disc, *w;
    const int32_t *act, *next;
} ref_case;

static double ref_loss(const ref_case* c, const double* s /* [nb, Z - 1] */) {
    double L = 0.0;
    for (int br = 0; br < c->nb; ++br) {
        // the support in float64
        const double* sb = s + br * (c->Z - 1);
        double mx = sb[0], tot = 0.0, z[16], cum = 0.0;
        for (int i = 1; i < c->Z - 1; ++i) mx = sb[i] > mx ? sb[i] : mx;
        for (int i = 0; i < c->Z - 1; ++i) tot += exp(sb[i] - mx);
        z[0] = c->vmin;
        for (int k = 1; k < c->Z; ++k) {
            cum += exp(sb[k - 1] - mx) / tot;
            z[k] = c->vmin + (c->vmax - c->vmin) * cum;
        }
        for (int i = 0; i < c->B; ++i) {
            const int h = c->off[br] + c->act[i * c->nb + br], hs = c->off[br] + c->next[i * c->nb + br];
            double q = 0.0;
            for (int k = 0; k < c->Z; ++k) q += z[k] * exp((double)c->lp[(i * c->A + h) * c->Z + k]);
            const double y =
                ((double)c->r[i] + c->disc[i] * ((double)c->sigma * c->tq[i * c->A + hs] + c->mu) - c->mu) / c->sigma;
            L += (double)c->w[i] / (c->B * c->nb) * 0.5 * (q - y) * (q - y);
        }
    }
    return L;
}

/* Central differences at random logits, odd shapes, with and without PopArt. */
static void test_spacing_grad_fd(void) {
    enum { B = 5, NB = 2, Z = 7, A = 5 };
    int sz[NB] = {2, 3};
    vp_loss_dims d = tlu_dims(B, NB, sz, Z, -3.0f, 2.0f, 0, 0);
    uint64_t seed = 11;
    float lp[B * A * Z], tq[B * A], s[NB * (Z - 1)], sup[NB * Z], reward[B], disc[B], w[B], resid[B * NB];
    float ds[NB * (Z - 1)];
    int32_t act[B * NB], next[B * NB];
    for (int e = 0; e < B * A; ++e) {
        // random log-softmax rows
        float row[Z], mx = -1e30f, tot = 0.0f;
        for (int k = 0; k < Z; ++k) {
            row[k] = 2.0f * vp_rng_uniform(seed, 1, (uint64_t)(e * Z + k)) - 1.0f;
            mx = row[k] > mx ? row[k] : mx;
        }
        for (int k = 0; k < Z; ++k) tot += expf(row[k] - mx);
        for (int k = 0; k < Z; ++k) lp[e * Z + k] = row[k] - mx - logf(tot);
        tq[e] = 4.0f * vp_rng_uniform(seed, 2, (uint64_t)e) - 2.0f;
    }
    for (int e = 0; e < NB * (Z - 1); ++e) s[e] = 1.5f * (2.0f * vp_rng_uniform(seed, 3, (uint64_t)e) - 1.0f);
    for (int i = 0; i < B; ++i) {
        reward[i] = vp_rng_uniform(seed, 4, (uint64_t)i) - 0.5f;
        disc[i] = i == 3 ? 0.0f : 0.9f;
        w[i] = 0.5f + vp_rng_uniform(seed, 5, (uint64_t)i);
        for (int br = 0; br < NB; ++br) {
            act[i * NB + br] = (int32_t)((i + br) % sz[br]);
            next[i * NB + br] = (int32_t)((2 * i + 1) % sz[br]);
        }
    }
    for (int br = 0; br < NB; ++br) vp_atoms_support(s + br * (Z - 1), Z, -3.0f, 2.0f, sup + br * Z);
    for (int pass = 0; pass < 2; ++pass) {
        float pa[VP_POPART_N] = {0.4f, 2.0f, 1.3f};
        tlu_batch tb;
        tlu_batch_init(&tb, B, NB, act, next, reward, disc, w);
        vp_tensor tsu = tlu_t2(sup, VP_F32, NB, Z), tpa = tlu_t1(pa, VP_F32, VP_POPART_N);
        tb.b.support = &tsu;
        tb.b.target_support = &tsu;
        if (pass) tb.b.popart = &tpa;
        vp_tensor tl = tlu_f3(lp, B, A, Z), ttq = tlu_t2(tq, VP_F32, B, A), tsp = tlu_t2(s, VP_F32, NB, Z - 1);
        vp_tensor tr = tlu_t2(resid, VP_F32, B, NB), tds = tlu_t2(ds, VP_F32, NB, Z - 1);
        CHECK_OK(vp_loss_atoms_grad(g_b, &d, &tb.b, &tl, &ttq, &tsp, &tr, &tds));
        ref_case c = {B, NB, Z, A, {2, 3, 0}, {0, 2, 0}, -3.0f, 2.0f, pass ? 0.4f : 0.0f, pass ? 1.3f : 1.0f,
                      lp, tq, reward, disc, w, act, next};
        double sd[NB * (Z - 1)];
        for (int e = 0; e < NB * (Z - 1); ++e) sd[e] = s[e];
        double gmax = 0.0;
        for (int e = 0; e < NB * (Z - 1); ++e) {
            const double h = 1e-4, keep = sd[e];
            sd[e] = keep + h;
            const double lpl = ref_loss(&c, sd);
            sd[e] = keep - h;
            const double lmi = ref_loss(&c, sd);
            sd[e] = keep;
            const double fd = (lpl - lmi) / (2.0 * h);
            gmax = fabs(fd) > gmax ? fabs(fd) : gmax;
            CHECK_NEAR(ds[e], fd, 2e-6, 1e-3);
        }
        CHECK(gmax > 1e-3, "the gradient is not trivially zero (largest %g)", gmax);
    }
}

/* The network's Q-values with adaptive atoms: sum_k z_br,k p_k on each branch's support from its
 * (perturbed, so non-uniform) spacing logits, computed here in float64; the support view is
 * that support; with the module off the network has no c51.atoms and an empty support. */
static void test_model_q(void) {
    vp_model_cfg c = hm_cfg();
    c.adaptive_atoms = 1;
    hm_fixture f;
    if (!hm_fixture_init(&f, &c, 7)) return;
    const vp_param_info* p = vp_model_find_param(&f.m, "c51.atoms");
    CHECK(p != NULL && p->shape[0] == 2 && p->shape[1] == 6, "c51.atoms is [2, 6]");
    if (!p) return;
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, NULL, HM_B));
    vp_tensor lp = vp_model_log_probs(f.a), q = vp_model_q(f.a), sup = vp_model_support(f.a);
    CHECK(vp_tensor_numel(&sup) == 14, "support [2, 7]");
    const float* s = (const float*)f.m.params.data + p->offset;
    double spread = 0.0;
    for (int br = 0; br < 2; ++br) {
        // the support in float64 from the logits
        double mx = s[br * 6], tot = 0.0, z[7], cum = 0.0;
        for (int i = 1; i < 6; ++i) mx = s[br * 6 + i] > mx ? s[br * 6 + i] : mx;
        for (int i = 0; i < 6; ++i) tot += exp(s[br * 6 + i] - mx);
        z[0] = -2.0;
        for (int k = 1; k < 7; ++k) {
            cum += exp(s[br * 6 + k - 1] - mx) / tot;
            z[k] = -2.0 + 5.0 * cum;
            CHECK_NEAR(((const float*)sup.data)[br * 7 + k], z[k], 1e-6, 1e-6);
            spread = fmax(spread, fabs(z[k] - z[k - 1] - 5.0 / 6.0));
        }
        for (int b = 0; b < HM_B; ++b)
            for (int a = br ? 3 : 0; a < (br ? 5 : 3); ++a) {
                double want = 0.0;
                for (int k = 0; k < 7; ++k) want += z[k] * exp((double)((const float*)lp.data)[(b * 5 + a) * 7 + k]);
                CHECK_NEAR(((const float*)q.data)[b * 5 + a], want, 1e-6, 1e-5);
            }
    }
    CHECK(spread > 0.01, "the support is not uniform (largest gap change %g)", spread);
    hm_fixture_free(&f);
    c.adaptive_atoms = 0;
    if (!hm_fixture_init(&f, &c, 7)) return;
    CHECK(vp_model_find_param(&f.m, "c51.atoms") == NULL, "no spacing logits without the module");
    CHECK_OK(vp_model_forward(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, &f.port_t, NULL, HM_B));
    vp_tensor none = vp_model_support(f.a);
    CHECK(none.data == NULL, "no support view without the module");
    hm_fixture_free(&f);
}

int main(void) {
    if (vp_backend_cpu_init(&g_b) != VP_OK) {
        fprintf(stderr, "cpu backend: %s\n", vp_last_error());
        return 1;
    }
    RUN_TEST(test_support);
    RUN_TEST(test_project_grid_oracle);
    RUN_TEST(test_c51_nonuniform_oracle);
    RUN_TEST(test_spacing_grad_hand);
    RUN_TEST(test_spacing_grad_fd);
    RUN_TEST(test_model_q);
    vp_backend_free(g_b);
    return vpt_finish();
}
