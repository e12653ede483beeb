/* The KAN layer on the CPU: the B-spline bases against hand-computed values and their
 * derivatives against differences, the switch (trunk.w1 gives way), and the whole network with
 * it on (alone, and with variable selection and the spectral norm) against the double
 * reference and finite differences. */
#include "model/model_input_math.h"
#include "test_model_input_util.h"

/* Order 1 on G = 2 intervals of [-1, 1]: knots -2, -1, 0, 1, 2, three hat bases peaked at
 * -1, 0, 1. At x = 0.25: [0, 0.75, 0.25], slopes [0, -1, 1]. */
static void test_bases_by_hand(void) {
    float b[VP_KAN_MAX_KNOTS], out[8], der[8];
    vp_kan_bases(0.25f, 2, 1, 1.0f, b, out, der);
    CHECK(out[0] == 0.0f && out[1] == 0.75f && out[2] == 0.25f, "hats at 0.25: %g %g %g", out[0], out[1], out[2]);
    CHECK(der[0] == 0.0f && der[1] == -1.0f && der[2] == 1.0f, "hat slopes: %g %g %g", der[0], der[1], der[2]);
    // cubic on G = 5 of [-3, 3]: knot spacing 1.2; at a knot the three nonzero bases are 1/6, 2/3, 1/6
    vp_kan_bases(0.0f, 5, 3, 3.0f, b, out, der);
    // knot 5 of -3 + (j - 3) 1.2 is -0.6, knot 6 is 0.6; 0 is mid-interval: B = [1/48, 23/48, 23/48, 1/48]
    CHECK(fabsf(out[2] - 1.0f / 48) < 1e-6f && fabsf(out[3] - 23.0f / 48) < 1e-6f &&
              fabsf(out[4] - 23.0f / 48) < 1e-6f && fabsf(out[5] - 1.0f / 48) < 1e-6f,
          "cubic at an interval's midpoint: %g %g %g %g", out[2], out[3], out[4], out[5]);
    // partition of unity inside the grid; nothing outside the extended grid
    for (float x = -2.95f; x < 3.0f; x += 0.37f) {
        vp_kan_bases(x, 5, 3, 3.0f, b, out, NULL);
        float s = 0;
        for (int c = 0; c < 8; ++c) s += out[c];
        CHECK(fabsf(s - 1.0f) < 1e-5f, "bases at %g sum to %g", x, s);
    }
    vp_kan_bases(7.0f, 5, 3, 3.0f, b, out, der);
    float s = 0;
    for (int c = 0; c < 8; ++c) s += fabsf(out[c]) + fabsf(der[c]);
    CHECK(s == 0.0f, "bases beyond the extended grid are zero");
    // derivatives against central differences of the bases, in double
    for (float x = -2.9f; x < 3.0f; x += 0.53f) {
        float lo[8], hi[8];
        vp_kan_bases(x, 5, 3, 3.0f, b, out, der);
        vp_kan_bases(x - 1e-3f, 5, 3, 3.0f, b, lo, NULL);
        vp_kan_bases(x + 1e-3f, 5, 3, 3.0f, b, hi, NULL);
        for (int c = 0; c < 8; ++c) {
            const double fd = ((double)hi[c] - lo[c]) / (2e-3);
            CHECK(fabs(fd - der[c]) < 2e-3, "dB_%d/dx at %g: %g vs differences %g", c, x, der[c], fd);
        }
    }
}

/* Off: trunk.w1 and b1; on: the three kan tensors in their place, shaped [H, F (G + k)]. */
static void test_switch(void) {
    vp_model_cfg c = tmi_cfg(1, 3);
    c.kan = 1;
    tmi_fix f;
    CHECK(tmi_init(&f, &c, 5), "fixture: %s", vp_last_error());
    CHECK(vp_model_find_param(&f.m, "trunk.w1") == NULL && vp_model_find_param(&f.m, "trunk.b1") == NULL,
          "no trunk.w1 with the KAN");
    const vp_param_info* sw = vp_model_find_param(&f.m, "kan.spline_w");
    CHECK(sw && sw->shape[0] == 8 && sw->shape[1] == 5 * 5, "kan.spline_w is [H, F (G + k)]");
    CHECK(fabsf(sw->bound - 0.05f / 3) < 1e-7f, "spline weights drawn from U(+-0.05 / G): bound %g", sw->bound);
    c.spectral_norm = 1;
    tmi_free(&f);
    CHECK(tmi_init(&f, &c, 5), "fixture: %s", vp_last_error());
    CHECK(vp_model_find_param(&f.m, "trunk.w1.sn_u") == NULL && vp_model_find_param(&f.m, "trunk.w2.sn_u") != NULL,
          "with the KAN the spectral norm covers trunk.w2 only");
    tmi_free(&f);
}

/* GEMM FLOPs at the default widths, B 8192 (R = 65536), G 5, k 3: the first layer's
 * 2 R H F = 1 073 741 824 becomes 2 R H F (1 + G + k) = 9 663 676 416 in the forward and again in
 * the weight gradients (no input gradient without the gate). */
static void test_flops(void) {
    vp_model_cfg c = vp_model_cfg_default();
    const double f0 = vp_model_flops(&c, 8192, 64, 0), b0 = vp_model_flops(&c, 8192, 64, 1);
    c.kan = 1;
    const double f1 = vp_model_flops(&c, 8192, 64, 0), b1 = vp_model_flops(&c, 8192, 64, 1);
    CHECK(f1 - f0 == 9663676416.0 - 1073741824.0, "forward FLOPs added: %.0f", f1 - f0);
    CHECK(b1 - b0 == 2 * (9663676416.0 - 1073741824.0), "forward + backward FLOPs added: %.0f", b1 - b0);
    c.kan = 0;
    c.spectral_norm = 1;
    CHECK(vp_model_flops(&c, 8192, 64, 1) == b0, "the spectral norm adds no GEMM FLOPs");
}

static void test_whole_mamba(void) {
    vp_model_cfg c = tmi_cfg(1, 3);
    c.kan = 1;
    tmi_whole(&c, 41, "kan, mamba K 3");
}

static void test_whole_all(void) {
    vp_model_cfg c = tmi_cfg(0, 3);
    c.kan = 1;
    c.vsn = 1;
    c.spectral_norm = 1;
    tmi_whole(&c, 42, "kan + vsn + spectral norm, no mamba");
}

int main(void) {
    RUN_TEST(test_bases_by_hand);
    RUN_TEST(test_switch);
    RUN_TEST(test_flops);
    RUN_TEST(test_whole_mamba);
    RUN_TEST(test_whole_all);
    return vpt_finish();
}
