/* Variable selection on the CPU: the selection kernel against hand-computed values, the
 * mean weights, the switch (off: the default table), and the whole network with the gate on
 * against the double reference and finite differences (with and without Mamba2, with the
 * spectral norm beside it). */
#include "test_model_input_util.h"

/* softmax([0, ln 3]) = [1/4, 3/4]; xs = F w x = 2 [1/4 * 2, 3/4 * 4] = [1, 6]. The backward
 * by hand: g = F x d = 2 [2 * 1, 4 * 0.5] = [4, 4], so d logit = w (g - w.g) = [0, 0]; with
 * d = [1, 0]: g = [4, 0], w.g = 1, d logit = [1/4 * 3, 3/4 * -1] = [0.75, -0.75]. */
static void test_select_by_hand(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const float logit[2] = {0.0f, logf(3.0f)}, x[2] = {2.0f, 4.0f};
    float w[2], xs[2], dl[2];
    CHECK_OK(vp_cpu_vsn_select(be, 1, 2, logit, x, w, xs));
    CHECK(fabsf(w[0] - 0.25f) < 1e-7f && fabsf(w[1] - 0.75f) < 1e-7f, "weights %g %g, expected 0.25 0.75", w[0], w[1]);
    CHECK(fabsf(xs[0] - 1.0f) < 1e-6f && fabsf(xs[1] - 6.0f) < 1e-6f, "xs %g %g, expected 1 6", xs[0], xs[1]);
    const float d1[2] = {1.0f, 0.5f}, d2[2] = {1.0f, 0.0f};
    CHECK_OK(vp_cpu_vsn_select_backward(be, 1, 2, w, x, d1, dl));
    CHECK(fabsf(dl[0]) < 1e-6f && fabsf(dl[1]) < 1e-6f, "d logit %g %g, expected 0 0", dl[0], dl[1]);
    CHECK_OK(vp_cpu_vsn_select_backward(be, 1, 2, w, x, d2, dl));
    CHECK(fabsf(dl[0] - 0.75f) < 1e-6f && fabsf(dl[1] + 0.75f) < 1e-6f, "d logit %g %g, expected 0.75 -0.75", dl[0],
          dl[1]);
    // the gate: pre = x + v sigmoid(l); sigmoid(0) = 1/2
    const float gs[4] = {2.0f, -4.0f, 0.0f, 0.0f};
    float pre[2];
    CHECK_OK(vp_cpu_vsn_gate(be, 1, 2, x, gs, pre));
    CHECK(pre[0] == 3.0f && pre[1] == 2.0f, "gate %g %g, expected 3 2", pre[0], pre[1]);
    // ELU: elu(-ln 2) = -1/2, its slope there 1/2
    float e[2] = {1.5f, -logf(2.0f)}, d[2] = {1.0f, 1.0f};
    CHECK_OK(vp_cpu_vsn_elu(be, 2, e));
    CHECK_OK(vp_cpu_vsn_elu_backward(be, 2, e, d));
    CHECK(e[0] == 1.5f && fabsf(e[1] + 0.5f) < 1e-7f && d[0] == 1.0f && fabsf(d[1] - 0.5f) < 1e-7f,
          "elu %g %g slopes %g %g", e[0], e[1], d[0], d[1]);
    vp_backend_free(be);
}

/* Off: the default table exactly; on: six more tensors and the mean weights sum to 1. */
static void test_switch_and_weights(void) {
    vp_model_cfg c = tmi_cfg(1, 3);
    tmi_fix off, on;
    CHECK(tmi_init(&off, &c, 3), "fixture: %s", vp_last_error());
    c.vsn = 1;
    CHECK(tmi_init(&on, &c, 3), "fixture: %s", vp_last_error());
    CHECK(on.m.n_params == off.m.n_params + 6, "vsn adds 6 tensors: %d vs %d", on.m.n_params, off.m.n_params);
    CHECK(vp_model_find_param(&off.m, "vsn.w1") == NULL && vp_model_find_param(&on.m, "vsn.w2") != NULL,
          "vsn tensors present iff on");
    CHECK(vp_model_find_param(&on.m, "vsn.w2")->shape[0] == 10 && vp_model_find_param(&on.m, "vsn.w1")->shape[0] == 3,
          "vsn.w2 is [2F, VH], vsn.w1 [VH, F]");
    vp_model_inc inc;
    CHECK_STATUS(vp_model_inc_init(&inc, &on.m, &on.m.params), VP_ERR_UNSUPPORTED, "model.vsn on");
    float mw[5];
    CHECK_STATUS(vp_model_selection_weights(on.a, mw), VP_ERR_STATE, "hold no forward");
    CHECK_STATUS(vp_model_selection_weights(off.a, mw), VP_ERR_STATE, "no variable selection");
    CHECK_OK(vp_model_encode(&on.m, &on.m.params, on.a, &on.features, &on.bar_t, on.B));
    CHECK_OK(vp_model_selection_weights(on.a, mw));
    // the reference's weights, averaged over the B * K rows
    const int64_t R = on.B * c.window;
    double* x = ref_alloc(R * 5);
    double* xs = ref_alloc(R * 5);
    double* w = ref_alloc(R * 5);
    for (int64_t b = 0; b < on.B; ++b)
        for (int k = 0; k < c.window; ++k) {
            int64_t t = on.bar[b] - c.window + 1 + k;
            memcpy(x + (b * c.window + k) * 5, on.feat + (t < 0 ? 0 : t) * 5, sizeof(double) * 5);
        }
    ref_vsn(&on.m, on.p, x, R, xs, w);
    double sum = 0, err = 0;
    for (int j = 0; j < 5; ++j) {
        double mean = 0;
        for (int64_t r = 0; r < R; ++r) mean += w[r * 5 + j] / (double)R;
        err = fmax(err, fabs(mean - mw[j]));
        sum += mw[j];
    }
    CHECK(err < 1e-6 && fabs(sum - 1.0) < 1e-6, "mean weights: max error %.3g, sum %.9f", err, sum);
    double ex = 0;
    ref_from_f32(w, on.a->xs.data, R * 5);
    ex = ref_rel_err(w, xs, R * 5);
    CHECK(ex < FWD_TOL, "selected features vs reference %.3g", ex);
    free(x);
    free(xs);
    free(w);
    tmi_free(&off);
    tmi_free(&on);
}

/* GEMM FLOPs at the default widths, B 8192 (R = 65536 rows), VH 16: a forward adds
 * 2 R VH F + 2 R 2F VH = 201 326 592; a backward adds the weight gradients (as much), the gate
 * layer's input gradient 2 R 2F VH = 134 217 728 and the first layer's 2 R H F = 1 073 741 824. */
static void test_flops(void) {
    vp_model_cfg c = vp_model_cfg_default();
    const double f0 = vp_model_flops(&c, 8192, 64, 0), b0 = vp_model_flops(&c, 8192, 64, 1);
    c.vsn = 1;
    const double f1 = vp_model_flops(&c, 8192, 64, 0), b1 = vp_model_flops(&c, 8192, 64, 1);
    CHECK(f1 - f0 == 201326592.0, "forward FLOPs added: %.0f", f1 - f0);
    CHECK(b1 - b0 == 2 * 201326592.0 + 134217728.0 + 1073741824.0, "forward + backward FLOPs added: %.0f", b1 - b0);
}

static void test_whole_mamba(void) {
    vp_model_cfg c = tmi_cfg(1, 3);
    c.vsn = 1;
    tmi_whole(&c, 11, "vsn, mamba K 3");
}

static void test_whole_no_mamba(void) {
    vp_model_cfg c = tmi_cfg(0, 3);
    c.vsn = 1;
    tmi_whole(&c, 12, "vsn, no mamba");
}

int main(void) {
    RUN_TEST(test_select_by_hand);
    RUN_TEST(test_switch_and_weights);
    RUN_TEST(test_flops);
    RUN_TEST(test_whole_mamba);
    RUN_TEST(test_whole_no_mamba);
    return vpt_finish();
}
