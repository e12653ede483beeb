/* Spectral normalisation on the CPU: the power step against a hand-computed sigma, the
 * gradient against PyTorch's formula written out, the commit of u and v, the switch, and the
 * whole network with it on against the double reference and finite differences (u, v held,
 * as PyTorch's autograd holds them). */
#include "test_model_input_util.h"

/* W = [[2, 0], [0, 1]], u0 = [1, 1]: v = [2, 1] / sqrt 5, W v = [4, 1] / sqrt 5,
 * u = [4, 1] / sqrt 17, sigma = |W v| = sqrt(17 / 5). */
static void test_sigma_by_hand(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const float W[4] = {2.0f, 0.0f, 0.0f, 1.0f}, u0[2] = {1.0f, 1.0f};
    float u[2], v[2], sigma, wsn[4];
    CHECK_OK(vp_cpu_sn_forward(be, 2, 2, W, u0, u, v, &sigma, wsn));
    const double s = sqrt(17.0 / 5.0);
    CHECK(fabs(sigma - s) < 1e-6, "sigma %.9g, expected sqrt(17/5) = %.9g", (double)sigma, s);
    CHECK(fabs(v[0] - 2 / sqrt(5.0)) < 1e-7 && fabs(v[1] - 1 / sqrt(5.0)) < 1e-7, "v %g %g", v[0], v[1]);
    CHECK(fabs(u[0] - 4 / sqrt(17.0)) < 1e-7 && fabs(u[1] - 1 / sqrt(17.0)) < 1e-7, "u %g %g", u[0], u[1]);
    CHECK(fabs(wsn[0] - 2 / s) < 1e-6 && wsn[1] == 0.0f && fabs(wsn[3] - 1 / s) < 1e-6, "W / sigma");
    // a rank-one W = a b^T has sigma = |a| |b| after one step from any u0 not orthogonal to a
    const float R1[6] = {3.0f, 6.0f, 1.0f, 2.0f, -2.0f, -4.0f}; // [3, 1, -2]^T [1, 2]
    const float ur[3] = {0.3f, -1.0f, 0.2f};
    float u3[3], v2[2], s3, w6[6];
    CHECK_OK(vp_cpu_sn_forward(be, 3, 2, R1, ur, u3, v2, &s3, w6));
    CHECK(fabs(s3 - sqrt(14.0) * sqrt(5.0)) < 1e-5, "rank one sigma %.9g, expected sqrt 70", (double)s3);
    vp_backend_free(be);
}

/* PyTorch: w = W / sigma, sigma = dot(u, W v) with u, v constants, so dL/dW = G / sigma -
 * (sum(G W) / sigma^2) u v^T; checked element by element in double on a 3 x 4 matrix. */
static void test_backward_formula(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    double Wd[12], Gd[12], u0d[3];
    float W[12], G[12], u0[3], u[3], v[4], sigma, wsn[12];
    tmi_fill(Wd, W, 12, 31, -1, 1);
    tmi_fill(Gd, G, 12, 32, -1, 1);
    tmi_fill(u0d, u0, 3, 33, -1, 1);
    CHECK_OK(vp_cpu_sn_forward(be, 3, 4, W, u0, u, v, &sigma, wsn));
    double ud[3], vd[4];
    const double sd = ref_sn_power(Wd, 3, 4, u0d, ud, vd);
    CHECK(fabs(sd - sigma) < 1e-6 * sd, "sigma %.9g vs double %.9g", (double)sigma, sd);
    CHECK_OK(vp_cpu_sn_backward(be, 3, 4, W, u, v, &sigma, G));
    double c = 0, err = 0;
    for (int e = 0; e < 12; ++e) c += Gd[e] * Wd[e];
    for (int i = 0; i < 3; ++i)
        for (int j = 0; j < 4; ++j) {
            const double want = Gd[i * 4 + j] / sd - c / (sd * sd) * ud[i] * vd[j];
            err = fmax(err, fabs(want - G[i * 4 + j]));
        }
    CHECK(err < 1e-6, "gradient vs PyTorch's formula: max error %.3g", err);
    vp_backend_free(be);
}

/* Off: no sn tensors; on: four; the forward keeps the step's u, v, and commit writes them. */
static void test_switch_and_commit(void) {
    vp_model_cfg c = tmi_cfg(1, 3);
    c.spectral_norm = 1;
    tmi_fix f;
    CHECK(tmi_init(&f, &c, 5), "fixture: %s", vp_last_error());
    CHECK(vp_model_find_param(&f.m, "trunk.w1.sn_u") && vp_model_find_param(&f.m, "trunk.w2.sn_v"), "sn tensors");
    CHECK_OK(vp_model_encode(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, f.B));
    const vp_param_info* pu = vp_model_find_param(&f.m, "trunk.w2.sn_u");
    const vp_param_info* pw = vp_model_find_param(&f.m, "trunk.w2");
    double u[8], v[8];
    const double s = ref_sn_power(f.p + pw->offset, 8, 8, f.p + pu->offset, u, v);
    CHECK(fabs(((float*)f.a->sn_sigma.data)[1] - s) < 1e-5 * s, "sigma of trunk.w2 %.9g vs %.9g",
          (double)((float*)f.a->sn_sigma.data)[1], s);
    CHECK_OK(vp_model_commit(&f.m, &f.m.params, f.a));
    const float* kept = (const float*)f.m.params.data + pu->offset;
    double err = 0;
    for (int i = 0; i < 8; ++i) err = fmax(err, fabs(kept[i] - u[i]));
    CHECK(err < 1e-6 && memcmp(kept, f.a->sn_u2.data, sizeof(float) * 8) == 0, "committed u: error %.3g", err);
    // a second forward from the committed u moves sigma toward the largest singular value
    CHECK_OK(vp_model_encode(&f.m, &f.m.params, f.a, &f.features, &f.bar_t, f.B));
    CHECK(((float*)f.a->sn_sigma.data)[1] >= (float)s * (1 - 1e-6f), "power iteration does not decrease sigma");
    tmi_free(&f);
    c.spectral_norm = 0;
    CHECK(tmi_init(&f, &c, 5), "fixture: %s", vp_last_error());
    CHECK(vp_model_find_param(&f.m, "trunk.w1.sn_u") == NULL, "no sn tensors when off");
    CHECK_OK(vp_model_commit(&f.m, &f.m.params, f.a));
    tmi_free(&f);
}

static void test_whole_mamba(void) {
    vp_model_cfg c = tmi_cfg(1, 5);
    c.spectral_norm = 1;
    tmi_whole(&c, 21, "spectral norm, mamba K 5");
}

static void test_whole_with_vsn(void) {
    vp_model_cfg c = tmi_cfg(0, 3);
    c.spectral_norm = 1;
    c.vsn = 1;
    tmi_whole(&c, 22, "spectral norm + vsn, no mamba");
}

int main(void) {
    RUN_TEST(test_sigma_by_hand);
    RUN_TEST(test_backward_formula);
    RUN_TEST(test_switch_and_commit);
    RUN_TEST(test_whole_mamba);
    RUN_TEST(test_whole_with_vsn);
    return vpt_finish();
}
