/* Tests of the Mamba2 mixer's pieces on the CPU: the scalar oracle of the scan, and the
 * conv + SiLU, scan and gated RMSNorm forwards against the double reference and their
 * backwards (inputs and parameters) against its central finite differences. */
#include "test_model_util.h"

/* Doubles rounded through float, so the reference sees exactly the float inputs. */
static void round_f32(double* x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) x[i] = (float)x[i];
}

/* A float copy of doubles (freed by the caller). */
static float* to_f32(const double* x, int64_t n) {
    float* f = (float*)calloc((size_t)(n > 0 ? n : 1), sizeof(float));
    ref_to_f32(f, x, n);
    return f;
}

/* ---- the scalar oracle ------------------------------------------------------------------ */

/* A = -1, dt = 0.5, B = C = 1, D = 0, u = [1, 0, 0]: y = [0.5, 0.303265, 0.183940], by
 * running the last-step scan over windows of length 1, 2 and 3. */
static void test_scan_oracle(void) {
    const double want[3] = {0.5, 0.303265, 0.183940};
    const float u[3] = {1, 0, 0};
    const float raw = (float)log(exp(0.5) - 1.0), zero = 0.0f, one = 1.0f;
    for (int K = 1; K <= 3; ++K) {
        vp_mamba_dims d = {1, K, 1, 1, 1, 1, 4};
        float xb[6], xbcdt[12], dt[3], y = -1.0f;
        for (int t = 0; t < K; ++t) {
            xb[t * 2 + 0] = u[t];    // x
            xb[t * 2 + 1] = 1.0f;    // B
            xbcdt[t * 4 + 3] = raw;  // dt before softplus
        }
        CHECK_OK(vp_mops_cpu.scan_forward(NULL, &d, xb, &one, xbcdt, &zero, &zero, &zero, dt, &y));
        CHECK_NEAR(dt[K - 1], 0.5, 1e-6, 0);
        CHECK_NEAR(y, want[K - 1], 1e-6, 0);
    }
}

/* ---- conv + SiLU -------------------------------------------------------------------------- */

typedef struct conv_ctx {
    vp_mamba_dims d;
    double *xbcdt, *w, *b, *wxb, *wc; /* inputs, parameters and loss weights */
} conv_ctx;

/* sum(wxb * xb) + sum(wc * c) of the reference conv. */
static double conv_loss(void* p) {
    conv_ctx* c = (conv_ctx*)p;
    const int K = c->d.window, H = c->d.hidden, N = c->d.state, CH = H + 2 * N;
    double* out = ref_alloc(c->d.batch * K * CH);
    ref_conv(&c->d, c->xbcdt, c->w, c->b, out);
    double L = 0;
    for (int64_t b = 0; b < c->d.batch; ++b) {
        for (int t = 0; t < K; ++t)
            for (int ch = 0; ch < H + N; ++ch) L += c->wxb[(b * K + t) * (H + N) + ch] * out[(b * K + t) * CH + ch];
        for (int n = 0; n < N; ++n) L += c->wc[b * N + n] * out[(b * K + K - 1) * CH + H + N + n];
    }
    free(out);
    return L;
}

static void check_conv(vp_mamba_dims d) {
    const int64_t B = d.batch, K = d.window, H = d.hidden, N = d.state, CH = H + 2 * N, L = CH + d.heads;
    const int64_t R = B * K, XB = H + N, CW = d.conv;
    conv_ctx c = {d, ref_alloc(R * L), ref_alloc(CH * CW), ref_alloc(CH), ref_alloc(R * XB), ref_alloc(B * N)};
    ref_fill(c.xbcdt, R * L, 11, -1.5, 1.5);
    ref_fill(c.w, CH * CW, 12, -0.6, 0.6);
    ref_fill(c.b, CH, 13, -0.3, 0.3);
    ref_fill(c.wxb, R * XB, 14, -1, 1);
    ref_fill(c.wc, B * N, 15, -1, 1);
    round_f32(c.xbcdt, R * L);
    round_f32(c.w, CH * CW);
    round_f32(c.b, CH);
    round_f32(c.wxb, R * XB);
    round_f32(c.wc, B * N);
    float *xbcdt = to_f32(c.xbcdt, R * L), *w = to_f32(c.w, CH * CW), *bias = to_f32(c.b, CH);
    float *dxb = to_f32(c.wxb, R * XB), *dc = to_f32(c.wc, B * N);
    float* xb_pre = (float*)calloc((size_t)(R * XB), sizeof(float));
    float* xb = (float*)calloc((size_t)(R * XB), sizeof(float));
    float* c_pre = (float*)calloc((size_t)(B * N), sizeof(float));
    float* cc = (float*)calloc((size_t)(B * N), sizeof(float));
    // forward vs the reference (x, B channels at every step, C at the last)
    CHECK_OK(vp_mops_cpu.conv_forward(NULL, &d, xbcdt, w, bias, xb_pre, xb, c_pre, cc));
    double* out = ref_alloc(R * CH);
    ref_conv(&d, c.xbcdt, c.w, c.b, out);
    double num = 0, den = 0;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t ch = 0; ch < XB; ++ch) {
            double e = xb[r * XB + ch] - out[r * CH + ch];
            num += e * e;
            den += out[r * CH + ch] * out[r * CH + ch];
        }
    for (int64_t b = 0; b < B; ++b)
        for (int64_t n = 0; n < N; ++n) {
            double ref = out[(b * K + K - 1) * CH + XB + n], e = cc[b * N + n] - ref;
            num += e * e;
            den += ref * ref;
        }
    CHECK(sqrt(num / den) < FWD_TOL, "conv forward rel err %.3g", sqrt(num / den));
    // backward: input and per-sample parameter gradients; dt columns stay untouched
    float* dx = (float*)calloc((size_t)(R * L), sizeof(float));
    for (int64_t i = 0; i < R * L; ++i) dx[i] = 7.0f;
    float* wp = (float*)calloc((size_t)(B * CH * CW), sizeof(float));
    float* bp = (float*)calloc((size_t)(B * CH), sizeof(float));
    CHECK_OK(vp_mops_cpu.conv_backward(NULL, &d, xbcdt, w, xb_pre, c_pre, dxb, dc, dx, wp, bp));
    int dt_kept = 1;
    for (int64_t r = 0; r < R; ++r)
        for (int64_t j = CH; j < L; ++j) dt_kept &= dx[r * L + j] == 7.0f;
    CHECK(dt_kept, "conv backward wrote the dt columns");
    // FD: input (channel columns), weights, bias
    double* fd = ref_alloc(R * L);
    ref_fd(conv_loss, &c, c.xbcdt, R * L, FD_EPS, fd);
    float* an = (float*)calloc((size_t)(R * L), sizeof(float));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t j = 0; j < L; ++j) an[r * L + j] = j < CH ? dx[r * L + j] : 0.0f;
    tmu_check_grad("conv d_input", an, fd, R * L);
    float* sum = (float*)calloc((size_t)(CH * CW), sizeof(float));
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < CH * CW; ++i) sum[i] += wp[b * CH * CW + i];
    ref_fd(conv_loss, &c, c.w, CH * CW, FD_EPS, fd);
    tmu_check_grad("conv.w", sum, fd, CH * CW);
    memset(sum, 0, sizeof(float) * (size_t)CH);
    for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < CH; ++i) sum[i] += bp[b * CH + i];
    ref_fd(conv_loss, &c, c.b, CH, FD_EPS, fd);
    tmu_check_grad("conv.b", sum, fd, CH);
    free(c.xbcdt), free(c.w), free(c.b), free(c.wxb), free(c.wc);
    free(xbcdt), free(w), free(bias), free(dxb), free(dc), free(xb_pre), free(xb), free(c_pre), free(cc);
    free(out), free(dx), free(wp), free(bp), free(fd), free(an), free(sum);
}

/* The extents both pieces are checked at: {B, K, H, N, NH, PD, CW}, a window longer than
 * the conv, and one shorter than it. */
static const vp_mamba_dims PIECE_DIMS[2] = {{3, 5, 6, 2, 2, 3, 3}, {2, 2, 4, 3, 1, 4, 4}};

static void test_conv_piece(void) {
    for (int i = 0; i < 2; ++i) check_conv(PIECE_DIMS[i]);
}

/* ---- scan -------------------------------------------------------------------------------- */

typedef struct scan_ctx {
    vp_mamba_dims d;
    double *xb, *c, *xbcdt, *dtb, *alog, *D, *wy; /* inputs, parameters, loss weights */
} scan_ctx;

/* sum(wy * y) of the reference scan. */
static double scan_loss(void* p) {
    scan_ctx* s = (scan_ctx*)p;
    const int64_t K = s->d.window, H = s->d.hidden, N = s->d.state, CH = H + 2 * N, R = s->d.batch * K;
    double* conv = ref_alloc(R * CH);
    double* y = ref_alloc(s->d.batch * H);
    for (int64_t r = 0; r < R; ++r) {
        memcpy(conv + r * CH, s->xb + r * (H + N), sizeof(double) * (size_t)(H + N));
        memcpy(conv + r * CH + H + N, s->c + (r / K) * N, sizeof(double) * (size_t)N);
    }
    ref_scan(&s->d, conv, s->xbcdt, s->dtb, s->alog, s->D, y);
    double L = ref_dot(s->wy, y, s->d.batch * H);
    free(conv);
    free(y);
    return L;
}

static void check_scan(vp_mamba_dims d) {
    const int64_t B = d.batch, K = d.window, H = d.hidden, N = d.state, NH = d.heads, L = H + 2 * N + NH;
    const int64_t R = B * K, XB = H + N;
    scan_ctx s = {d,           ref_alloc(R * XB), ref_alloc(B * N), ref_alloc(R * L), ref_alloc(NH),
                  ref_alloc(NH), ref_alloc(NH),   ref_alloc(B * H)};
    ref_fill(s.xb, R * XB, 21, -1, 1);
    ref_fill(s.c, B * N, 22, -1, 1);
    ref_fill(s.xbcdt, R * L, 23, -1, 1);
    ref_fill(s.dtb, NH, 24, -0.5, 0.5);
    ref_fill(s.alog, NH, 25, -0.5, 0.8);
    ref_fill(s.D, NH, 26, 0.5, 1.5);
    ref_fill(s.wy, B * H, 27, -1, 1);
    double* all[7] = {s.xb, s.c, s.xbcdt, s.dtb, s.alog, s.D, s.wy};
    int64_t cnt[7] = {R * XB, B * N, R * L, NH, NH, NH, B * H};
    for (int i = 0; i < 7; ++i) round_f32(all[i], cnt[i]);
    float* f[7];
    for (int i = 0; i < 7; ++i) f[i] = to_f32(all[i], cnt[i]);
    float* dt = (float*)calloc((size_t)(R * NH), sizeof(float));
    float* y = (float*)calloc((size_t)(B * H), sizeof(float));
    // forward vs the reference
    CHECK_OK(vp_mops_cpu.scan_forward(NULL, &d, f[0], f[1], f[2], f[3], f[4], f[5], dt, y));
    double* yr = ref_alloc(B * H);
    double* yg = ref_alloc(B * H);
    {
        const int64_t CH = H + 2 * N;
        double* conv = ref_alloc(R * CH);
        for (int64_t r = 0; r < R; ++r) {
            memcpy(conv + r * CH, s.xb + r * XB, sizeof(double) * (size_t)XB);
            memcpy(conv + r * CH + XB, s.c + (r / K) * N, sizeof(double) * (size_t)N);
        }
        ref_scan(&d, conv, s.xbcdt, s.dtb, s.alog, s.D, yr);
        free(conv);
    }
    ref_from_f32(yg, y, B * H);
    double err = ref_rel_err(yg, yr, B * H);
    CHECK(err < FWD_TOL, "scan forward rel err %.3g", err);
    CHECK_NEAR(dt[2 * NH - 1], ref_softplus(s.xbcdt[1 * L + H + 2 * N + NH - 1] + s.dtb[NH - 1]), 1e-6, 1e-6);
    // backward
    float* dxb = (float*)calloc((size_t)(R * XB), sizeof(float));
    float* dc = (float*)calloc((size_t)(B * N), sizeof(float));
    float* dx = (float*)calloc((size_t)(R * L), sizeof(float));
    float* pa = (float*)calloc((size_t)(B * NH), sizeof(float));
    float* pd = (float*)calloc((size_t)(B * NH), sizeof(float));
    float* pb = (float*)calloc((size_t)(B * NH), sizeof(float));
    for (int64_t i = 0; i < R * XB; ++i) dxb[i] = 9.0f;
    CHECK_OK(vp_mops_cpu.scan_backward(NULL, &d, f[0], f[1], f[2], dt, f[3], f[4], f[5], f[6], dxb, dc, dx, pa, pd,
                                       pb));
    double* fd = ref_alloc(R * L);
    ref_fd(scan_loss, &s, s.xb, R * XB, FD_EPS, fd);
    tmu_check_grad("scan d_x,d_B", dxb, fd, R * XB);
    ref_fd(scan_loss, &s, s.c, B * N, FD_EPS, fd);
    tmu_check_grad("scan d_C", dc, fd, B * N);
    // raw dt: only the dt columns matter to the scan
    ref_fd(scan_loss, &s, s.xbcdt, R * L, FD_EPS, fd);
    float* an = (float*)calloc((size_t)(R * L), sizeof(float));
    for (int64_t r = 0; r < R; ++r)
        for (int64_t h = 0; h < NH; ++h) an[r * L + H + 2 * N + h] = dx[r * L + H + 2 * N + h];
    tmu_check_grad("scan d_dt", an, fd, R * L);
    // parameters: per-sample partials summed over the batch
    float* part[3] = {pb, pa, pd};
    double* prm[3] = {s.dtb, s.alog, s.D};
    const char* nm[3] = {"dt_bias", "A_log", "D"};
    float sum[64];
    for (int k = 0; k < 3; ++k) {
        for (int64_t h = 0; h < NH; ++h) {
            sum[h] = 0;
            for (int64_t b = 0; b < B; ++b) sum[h] += part[k][b * NH + h];
        }
        ref_fd(scan_loss, &s, prm[k], NH, FD_EPS, fd);
        tmu_check_grad(nm[k], sum, fd, NH);
    }
    for (int i = 0; i < 7; ++i) free(all[i]), free(f[i]);
    free(dt), free(y), free(yr), free(yg), free(dxb), free(dc), free(dx), free(pa), free(pd), free(pb), free(fd), free(an);
}

static void test_scan_piece(void) {
    for (int i = 0; i < 2; ++i) check_scan(PIECE_DIMS[i]);
}

/* ---- gated RMSNorm (through the model's piece functions) ---------------------------------- */

typedef struct gate_ctx {
    int64_t B;
    int H;
    double eps;
    double *y, *z, *g, *w;
} gate_ctx;

static double gate_loss(void* p) {
    gate_ctx* c = (gate_ctx*)p;
    double* out = ref_alloc(c->B * c->H);
    ref_gate(c->B, c->H, c->y, c->z, c->g, c->eps, out);
    double L = ref_dot(c->w, out, c->B * c->H);
    free(out);
    return L;
}

static void test_gate_piece(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model_cfg cfg = tmu_cfg((tmu_dims){.F = 3, .K = 2, .H = 10, .head_dim = 5, .N = 2, .head_hidden = 4, .Z = 5,
                                          .n_cos = 3});
    vp_model m;
    vp_model_acts* a = NULL;
    CHECK_OK(vp_model_init(&m, be, &cfg, 3));
    CHECK_OK(vp_model_acts_init(&a, &m, 3, 0, 1));
    if (!a) return;
    const int64_t B = 3, H = cfg.hidden;
    gate_ctx c = {B, (int)H, cfg.rms_eps, ref_alloc(B * H), ref_alloc(B * H), ref_alloc(H), ref_alloc(B * H)};
    ref_fill(c.y, B * H, 31, -1, 1);
    ref_fill(c.z, B * H, 32, -2, 2);
    ref_fill(c.g, H, 33, 0.5, 1.5);
    ref_fill(c.w, B * H, 34, -1, 1);
    round_f32(c.y, B * H), round_f32(c.z, B * H), round_f32(c.g, H), round_f32(c.w, B * H);
    const vp_param_info* gi = vp_model_find_param(&m, "mamba.norm.g");
    ref_to_f32(a->y.data, c.y, B * H);
    ref_to_f32(a->z.data, c.z, B * H);
    ref_to_f32((float*)m.params.data + gi->offset, c.g, H);
    ref_to_f32(a->d_yn.data, c.w, B * H);
    CHECK_OK(vp_model_gate_forward(&m, &m.params, a, B));
    double* out = ref_alloc(B * H);
    double* got = ref_alloc(B * H);
    ref_gate(B, (int)H, c.y, c.z, c.g, c.eps, out);
    ref_from_f32(got, a->yn.data, B * H);
    double err = ref_rel_err(got, out, B * H);
    CHECK(err < FWD_TOL, "gate forward rel err %.3g", err);
    CHECK_OK(vp_model_gate_backward(&m, &m.params, a, B));
    double* fd = ref_alloc(B * H);
    ref_fd(gate_loss, &c, c.y, B * H, FD_EPS, fd);
    tmu_check_grad("gate d_y", a->d_y.data, fd, B * H);
    ref_fd(gate_loss, &c, c.z, B * H, FD_EPS, fd);
    tmu_check_grad("gate d_z", a->d_z.data, fd, B * H);
    ref_fd(gate_loss, &c, c.g, H, FD_EPS, fd);
    tmu_check_grad("mamba.norm.g", (float*)m.grads.data + gi->offset, fd, H);
    free(c.y), free(c.z), free(c.g), free(c.w), free(out), free(got), free(fd);
    vp_model_acts_free(a);
    vp_model_free(&m);
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_scan_oracle);
    RUN_TEST(test_conv_piece);
    RUN_TEST(test_scan_piece);
    RUN_TEST(test_gate_piece);
    return vpt_finish();
}
