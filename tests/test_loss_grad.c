/* Gradients of the C51 and IQN losses against central finite differences of an
 * independent float64 reference of total = mean_i w_i loss_i, on small random shapes
 * (odd branch sizes, odd atom and tau counts), with random actions, rewards, discounts
 * (terminals included) and importance weights. */
#include "ops_ref.h"
#include "test_loss_util.h"

enum { B = 5, NB = 3, A = 9, Z = 7, N = 5, M = 3 };
static const int SIZES[NB] = {3, 2, 4};
static const int OFFS[NB] = {0, 3, 5};
static const double VMIN = -3.0, VMAX = 2.5;

typedef struct case_data {
    int32_t act[B * NB], next[B * NB];
    float reward[B], disc[B], w[B];
    float lp[B * A * Z], tlp[B * A * Z];
    float iqn[B * N * A], tiqn[B * M * A], taus[B * N];
} case_data;

static uint64_t g_draw = 0;
static double unif(void) { return vp_rng_uniform(2024, 3, g_draw++); }

static void make_case(case_data* c) {
    for (int i = 0; i < B; ++i) {
        for (int br = 0; br < NB; ++br) {
            c->act[i * NB + br] = (int32_t)(unif() * SIZES[br]);
            c->next[i * NB + br] = (int32_t)(unif() * SIZES[br]);
        }
        c->reward[i] = (float)(4.0 * unif() - 2.0);
        c->disc[i] = i == 1 ? 0.0f : (float)(0.5 + 0.5 * unif());
        c->w[i] = (float)(0.2 + unif());
    }
    // Log-probabilities: log-softmax of random logits per (sample, head).
    for (int r = 0; r < B * A; ++r) {
        double lg[Z], lt[Z], s = 0.0, st = 0.0;
        for (int j = 0; j < Z; ++j) {
            lg[j] = 2.0 * unif() - 1.0;
            lt[j] = 3.0 * unif() - 1.5;
            s += exp(lg[j]);
            st += exp(lt[j]);
        }
        for (int j = 0; j < Z; ++j) {
            c->lp[r * Z + j] = (float)(lg[j] - log(s));
            c->tlp[r * Z + j] = (float)(lt[j] - log(st));
        }
    }
    for (int e = 0; e < B * N * A; ++e) c->iqn[e] = (float)(3.0 * unif() - 1.5);
    for (int e = 0; e < B * M * A; ++e) c->tiqn[e] = (float)(3.0 * unif() - 1.5);
    for (int e = 0; e < B * N; ++e) c->taus[e] = (float)(0.02 + 0.96 * unif());
}

/* Reference C51 total in float64, with online log-probs `lp` as the variable. */
static double ref_c51_total(const case_data* c, const double* lp, double* per_sample) {
    const double dz = (VMAX - VMIN) / (Z - 1);
    double total = 0.0;
    for (int i = 0; i < B; ++i) {
        double li = 0.0;
        for (int br = 0; br < NB; ++br) {
            int h = OFFS[br] + c->act[i * NB + br], hs = OFFS[br] + c->next[i * NB + br];
            double m[Z] = {0};
            for (int k = 0; k < Z; ++k) {
                double tz = c->reward[i] + (double)c->disc[i] * (VMIN + k * dz);
                tz = tz < VMIN ? VMIN : (tz > VMAX ? VMAX : tz);
                double p = exp((double)c->tlp[(i * A + hs) * Z + k]);
                for (int j = 0; j < Z; ++j) {
                    double wgt = 1.0 - fabs(tz - (VMIN + j * dz)) / dz;
                    if (wgt > 0.0) m[j] += p * wgt;
                }
            }
            for (int j = 0; j < Z; ++j) li -= m[j] * lp[(i * A + h) * Z + j];
        }
        li /= NB;
        if (per_sample) per_sample[i] = li;
        total += c->w[i] * li;
    }
    return total / B;
}

/* Reference IQN total in float64, with online quantiles `q` as the variable. */
static double ref_iqn_total(const case_data* c, const double* q, double* per_sample) {
    double total = 0.0;
    for (int i = 0; i < B; ++i) {
        double li = 0.0;
        for (int br = 0; br < NB; ++br) {
            int h = OFFS[br] + c->act[i * NB + br], hs = OFFS[br] + c->next[i * NB + br];
            for (int j = 0; j < N; ++j) {
                double lj = 0.0;
                for (int k = 0; k < M; ++k) {
                    double target = c->reward[i] + (double)c->disc[i] * c->tiqn[(i * M + k) * A + hs];
                    double delta = target - q[(i * N + j) * A + h];
                    double ad = fabs(delta), tau = c->taus[i * N + j];
                    double hub = ad <= 1.0 ? 0.5 * delta * delta : ad - 0.5;
                    lj += fabs(tau - (delta < 0.0 ? 1.0 : 0.0)) * hub;
                }
                li += lj / M;
            }
        }
        li /= NB;
        if (per_sample) per_sample[i] = li;
        total += c->w[i] * li;
    }
    return total / B;
}

/* A float64 reference total of the loss, with `x` as the variable. */
typedef double (*total_fn)(const case_data* c, const double* x, double* per_sample);

/* fd [n] = central differences (step h) of total(c, x) in each element of x [n]; x is
 * restored. */
static void central_diff(total_fn total, const case_data* c, double* x, int n, double h, double* fd) {
    for (int e = 0; e < n; ++e) {
        double x0 = x[e];
        x[e] = x0 + h;
        double up = total(c, x, NULL);
        x[e] = x0 - h;
        double dn = total(c, x, NULL);
        x[e] = x0;
        fd[e] = (up - dn) / (2 * h);
    }
}

/* Loss dims of the case: NB branches of SIZES, Z atoms on [VMIN, VMAX], N and M taus. */
static vp_loss_dims case_dims(int n_taus, int n_target_taus) {
    return tlu_dims(B, NB, SIZES, Z, (float)VMIN, (float)VMAX, n_taus, n_target_taus);
}

static void test_c51_gradient(void) {
    static case_data c;
    make_case(&c);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_loss_dims d = case_dims(0, 0);
    static float proj[B * NB * Z], loss[B], dlp[B * A * Z];
    tlu_batch tb;
    tlu_batch_init(&tb, B, NB, c.act, c.next, c.reward, c.disc, c.w);
    tlu_c51(b, &d, &tb.b, B, A, NB, Z, c.lp, c.tlp, proj, loss, dlp);
    // Per-sample losses against the float64 reference.
    static double x[B * A * Z], fd[B * A * Z];
    double ref[B];
    for (int e = 0; e < B * A * Z; ++e) x[e] = c.lp[e];
    ref_c51_total(&c, x, ref);
    for (int i = 0; i < B; ++i) CHECK_NEAR(loss[i], ref[i], 1e-6, 1e-5);
    // Central differences of the reference total, element by element.
    central_diff(ref_c51_total, &c, x, B * A * Z, 1e-5, fd);
    double err = ref_rel_err(dlp, fd, B * A * Z);
    CHECK(err < 1e-5, "c51 gradient relative error %g", err);
    // Projected targets are distributions.
    for (int r = 0; r < B * NB; ++r) {
        double s = 0.0;
        for (int j = 0; j < Z; ++j) s += proj[r * Z + j];
        CHECK_NEAR(s, 1.0, 1e-5, 0.0);
    }
    vp_backend_free(b);
}

static void test_iqn_gradient(void) {
    static case_data c;
    make_case(&c);
    vp_backend* b = NULL;
    CHECK_OK(vp_backend_cpu_init(&b));
    vp_loss_dims d = case_dims(N, M);
    static float loss[B], dq[B * N * A];
    tlu_batch tb;
    tlu_batch_init(&tb, B, NB, c.act, c.next, c.reward, c.disc, c.w);
    vp_tensor tq = tlu_f3(c.iqn, B, N, A), tt = tlu_f3(c.tiqn, B, M, A), tu = tlu_t2(c.taus, VP_F32, B, N);
    vp_tensor tls = tlu_t1(loss, VP_F32, B), tg = tlu_f3(dq, B, N, A);
    CHECK_OK(vp_loss_iqn(b, &d, &tb.b, &tq, &tt, &tu, &tls, &tg));
    static double x[B * N * A], fd[B * N * A];
    double ref[B];
    for (int e = 0; e < B * N * A; ++e) x[e] = c.iqn[e];
    ref_iqn_total(&c, x, ref);
    for (int i = 0; i < B; ++i) CHECK_NEAR(loss[i], ref[i], 1e-6, 1e-5);
    central_diff(ref_iqn_total, &c, x, B * N * A, 1e-6, fd);
    int nonzero = 0;
    for (int e = 0; e < B * N * A; ++e) {
        nonzero += fd[e] != 0.0;
        // Heads that were not taken get exactly zero.
        if (fd[e] == 0.0) CHECK(dq[e] == 0.0f, "d_iqn[%d] = %g where the loss does not depend", e, (double)dq[e]);
    }
    CHECK(nonzero == B * N * NB, "%d gradient entries depend on the loss, expected %d", nonzero, B * N * NB);
    double err = ref_rel_err(dq, fd, B * N * A);
    CHECK(err < 1e-5, "iqn gradient relative error %g", err);
    vp_backend_free(b);
}

int main(void) {
    RUN_TEST(test_c51_gradient);
    RUN_TEST(test_iqn_gradient);
    return vpt_finish();
}
