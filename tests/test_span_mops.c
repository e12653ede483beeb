/* Tests of the span encoding's Mamba2 kernels on the CPU (mops.h: span_conv, span_scan):
 * - span_scan's y of windows read from the per-bar tables by index equals window_index, the
 *   gathered rows, conv_forward and scan_forward, bit for bit: windows that clamp at row 0 and
 *   ones that do not, at K > CW, K = CW, K < CW (every step sees the zero padding), CW = 1 (none
 *   does) and K = 1, with one head and with several, heads of 16 channels and of more or fewer,
 *   with the scan's AVX-512 path and without;
 * - span_conv's rows equal conv_forward's x, B, C at a window's last step (when K >= CW) and
 *   scan_forward's dt, bit for bit;
 * - span_mix's y is span_scan's and its yn = RMSNorm(y silu(z)) g within 1e-5 of a double
 *   reference;
 * - bad extents and NULL pointers are refused naming the kernel. */
#include <math.h>

#include "test_model_util.h"

/* n floats in [lo, hi) from a fixed LCG. */
static void fill(float* x, int64_t n, float lo, float hi, uint32_t* s) {
    for (int64_t i = 0; i < n; ++i) {
        *s = *s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)((*s >> 8) * (1.0 / 16777216.0));
    }
}

/* One shape: a table of R bars, every window's decision bar 0 .. R - 1 (the first K - 1 clamp). */
static void check_shape(const char* what, int K, int NH, int PD, int N, int CW) {
    const int H = NH * PD;
    const int64_t R = 3 * K + 7, L = H + 2 * N + NH, XB = H + N, CH = XB + N;
    const vp_mamba_dims td = {R, K, H, N, NH, PD, CW}; /* the table; batch unused */
    const vp_mamba_dims wd = {R, K, H, N, NH, PD, CW}; /* R windows */
    uint32_t seed = (uint32_t)(K * 131 + NH * 17 + N * 7 + CW);
    float* xbcdt = (float*)malloc(sizeof(float) * (size_t)(R * L));
    float* act = (float*)malloc(sizeof(float) * (size_t)(R * L));
    float* win = (float*)malloc(sizeof(float) * (size_t)(R * K * L));
    float* xb = (float*)malloc(sizeof(float) * (size_t)(R * K * XB));
    float* cc = (float*)malloc(sizeof(float) * (size_t)(R * N));
    float* dt = (float*)malloc(sizeof(float) * (size_t)(R * K * NH));
    float* y_ref = (float*)malloc(sizeof(float) * (size_t)(R * H));
    float* y = (float*)malloc(sizeof(float) * (size_t)(R * H));
    float* w = (float*)malloc(sizeof(float) * (size_t)(CH * CW));
    float bias[256], dtb[16], alog[16], D[16];
    int32_t last[256], idx[256 * 64];
    fill(xbcdt, R * L, -1.5f, 1.5f, &seed);
    fill(w, CH * CW, -0.8f, 0.8f, &seed);
    fill(bias, CH, -0.3f, 0.3f, &seed);
    fill(dtb, NH, -1.0f, 0.5f, &seed);
    fill(alog, NH, -1.0f, 1.0f, &seed);
    fill(D, NH, -1.0f, 1.0f, &seed);
    for (int64_t b = 0; b < R; ++b) last[b] = (int32_t)b;
    // the reference: the windows' rows gathered, then conv_forward and scan_forward
    CHECK_OK(vp_mops_cpu.window_index(NULL, R, K, last, idx));
    for (int64_t r = 0; r < R * K; ++r) memcpy(win + r * L, xbcdt + (int64_t)idx[r] * L, sizeof(float) * (size_t)L);
    CHECK_OK(vp_mops_cpu.conv_forward(NULL, &wd, win, w, bias, NULL, xb, NULL, cc));
    CHECK_OK(vp_mops_cpu.scan_forward(NULL, &wd, xb, cc, win, dtb, alog, D, dt, y_ref));
    // from the tables
    memset(y, 0xff, sizeof(float) * (size_t)(R * H));
    CHECK_OK(vp_mops_cpu.span_conv(NULL, &td, R, xbcdt, w, bias, dtb, act));
    CHECK_OK(vp_mops_cpu.span_scan(NULL, &wd, last, xbcdt, act, w, bias, alog, D, y));
    int64_t bad = -1;
    for (int64_t b = 0; b < R && bad < 0; ++b)
        if (memcmp(y + b * H, y_ref + b * H, sizeof(float) * (size_t)H) != 0) bad = b;
    CHECK(bad < 0, "%s: span_scan's window of bar %lld differs (y[0] %.9g vs %.9g)", what, (long long)bad,
          bad >= 0 ? (double)y[bad * H] : 0.0, bad >= 0 ? (double)y_ref[bad * H] : 0.0);
    // the table's rows: a window's last step (no padding there when K >= CW) and its dt
    int64_t bad_row = -1;
    for (int64_t b = 0; b < R && bad_row < 0; ++b) {
        const int64_t r = b * K + K - 1;
        int ok = memcmp(act + b * L + CH, dt + r * NH, sizeof(float) * (size_t)NH) == 0;
        if (K >= CW)
            ok = ok && memcmp(act + b * L, xb + r * XB, sizeof(float) * (size_t)XB) == 0 &&
                 memcmp(act + b * L + XB, cc + b * N, sizeof(float) * (size_t)N) == 0;
        if (!ok) bad_row = b;
    }
    CHECK(bad_row < 0, "%s: span_conv's row %lld differs from conv_forward's last step or scan_forward's dt", what,
          (long long)bad_row);
    // span_mix: the same y, then RMSNorm(y silu(z)) g against a double reference
    float* z = (float*)malloc(sizeof(float) * (size_t)(R * H));
    float* yn = (float*)malloc(sizeof(float) * (size_t)(R * H));
    float* scratch = (float*)malloc(sizeof(float) * (size_t)(3 * R * H + R));
    float ng[128];
    fill(z, R * H, -2.0f, 2.0f, &seed);
    fill(ng, H, 0.5f, 1.5f, &seed);
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    float *ym = scratch, *sz = scratch + R * H, *g = scratch + 2 * R * H, *rstd = scratch + 3 * R * H;
    CHECK_OK(vp_mops_cpu.span_mix(be, &wd, last, xbcdt, act, w, bias, alog, D, z, ng, 1e-5f, ym, sz, g, rstd, yn));
    CHECK(memcmp(ym, y_ref, sizeof(float) * (size_t)(R * H)) == 0, "%s: span_mix's y differs from span_scan's", what);
    double worst = 0.0;
    for (int64_t b = 0; b < R; ++b) {
        double ss = 0.0, gv[128];
        for (int c = 0; c < H; ++c) {
            const double zv = z[b * H + c];
            gv[c] = (double)y_ref[b * H + c] * (zv / (1.0 + exp(-zv)));
            ss += gv[c] * gv[c];
        }
        const double rs = 1.0 / sqrt(ss / H + 1e-5);
        for (int c = 0; c < H; ++c) {
            const double e = fabs(yn[b * H + c] - gv[c] * rs * ng[c]) / (1.0 + fabs(gv[c] * rs * ng[c]));
            worst = e > worst || isnan(e) ? e : worst;
        }
    }
    CHECK(worst <= 1e-5, "%s: span_mix's yn off the double reference by %.3e", what, worst);
    vp_backend_free(be);
    free(z), free(yn), free(scratch);
    free(xbcdt), free(act), free(win), free(xb), free(cc), free(dt), free(y_ref), free(y), free(w);
}

static void test_shapes(void) {
    // every instruction set the scan may use (AVX-512: 16 channels at a time, the rest scalar)
    const int isas[2] = {VP_MODEL_INC_ISA_PORTABLE, VP_MODEL_INC_ISA_BEST};
    for (int i = 0; i < 2; ++i) {
        vp_model_inc_limit_isa(isas[i]);
        check_shape("K 8, CW 4, 2 heads", 8, 2, 4, 3, 4);
        check_shape("K 4, CW 4 (K = CW)", 4, 2, 4, 2, 4);
        check_shape("K 2, CW 4 (every step padded)", 2, 2, 3, 2, 4);
        check_shape("K 5, CW 1 (no padding)", 5, 3, 2, 4, 1);
        check_shape("K 1, CW 3", 1, 1, 4, 2, 3);
        check_shape("K 16, CW 4, 1 head of 16, N 16", 16, 1, 16, 16, 4);
        check_shape("K 6, CW 8, heads of 20", 6, 2, 20, 5, 8);
        check_shape("K 8, CW 4, 2 heads of 64, N 16", 8, 2, 64, 16, 4);
    }
    vp_model_inc_limit_isa(VP_MODEL_INC_ISA_BEST);
}

static void test_bad_args(void) {
    const vp_mamba_dims d = {2, 4, 4, 2, 1, 4, 3}, bad = {2, 4, 5, 2, 1, 4, 3}, big = {2, 65, 4, 2, 1, 4, 3};
    float t[64] = {0}, o[64];
    int32_t last[2] = {0, 1};
    /* H != NH x PD, 0 rows, a NULL bias; K 65, no backend, a NULL list of windows */
    CHECK_STATUS(vp_mops_cpu.span_conv(NULL, &bad, 2, t, t, t, t, o), VP_ERR_INVALID_ARG,
                 "span_conv: bad Mamba2 extents");
    CHECK_STATUS(vp_mops_cpu.span_conv(NULL, &d, 0, t, t, t, t, o), VP_ERR_INVALID_ARG, "span_conv: 0 rows");
    CHECK_STATUS(vp_mops_cpu.span_conv(NULL, &d, 2, t, t, NULL, t, o), VP_ERR_INVALID_ARG, "NULL pointer");
    CHECK_STATUS(vp_mops_cpu.span_scan(NULL, &big, last, t, t, t, t, t, t, o), VP_ERR_INVALID_ARG,
                 "span_scan: bad Mamba2 extents");
    CHECK_STATUS(vp_mops_cpu.span_mix(NULL, &d, last, t, t, t, t, t, t, t, t, 1e-5f, o, o, o, o, o),
                 VP_ERR_INVALID_ARG, "span_mix: NULL backend");
    CHECK_STATUS(vp_mops_cpu.span_scan(NULL, &d, NULL, t, t, t, t, t, t, o), VP_ERR_INVALID_ARG,
                 "span_scan: 2 windows or a NULL pointer");
}

int main(void) {
    RUN_TEST(test_shapes);
    RUN_TEST(test_bad_args);
    return vpt_finish();
}
