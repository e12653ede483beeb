/* Tests of the model configuration and the parameter table: names, shapes, offsets,
 * initialisation rules and statistics, determinism, checks and the FLOP count. */
#include "model/model_internal.h"
#include "vp_test.h"

/* Mean and variance of a host f32 range. */
static void moments(const float* x, int64_t n, double* mean, double* var) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; ++i) {
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    *mean = s / n;
    *var = s2 / n - *mean * *mean;
}

static void test_default_table(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model_cfg c = vp_model_cfg_default();
    CHECK(vp_model_cfg_actions(&c) == 13, "13 action heads");
    vp_model m;
    CHECK_OK(vp_model_init(&m, be, &c, 1));
    CHECK(m.n_params == 32, "%d tensors", m.n_params);
    // names and shapes of the SPEC 4 defaults
    struct {
        const char* name;
        int64_t r, cols;
    } want[] = {{"trunk.w1", 256, 32},        {"trunk.b1", 256, 0},         {"trunk.ln1.g", 256, 0},
                {"trunk.ln2.b", 256, 0},      {"trunk.w2", 256, 256},       {"mamba.in_proj.w", 548, 256},
                {"mamba.conv.w", 288, 4},     {"mamba.conv.b", 288, 0},     {"mamba.dt_bias", 4, 0},
                {"mamba.A_log", 4, 0},        {"mamba.D", 4, 0},            {"mamba.norm.g", 256, 0},
                {"mamba.out_proj.w", 256, 256}, {"port.w", 256, 8},         {"port.b", 256, 0},
                {"c51.v1.w", 128, 256},       {"c51.v2.w", 51, 128},        {"c51.a1.w", 128, 256},
                {"c51.a2.w", 663, 128},       {"c51.a2.b", 663, 0},         {"iqn.phi.w", 256, 64},
                {"iqn.l1.w", 128, 256},       {"iqn.l2.w", 13, 128},        {"iqn.l2.b", 13, 0}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; ++i) {
        const vp_param_info* p = vp_model_find_param(&m, want[i].name);
        CHECK(p != NULL, "%s missing", want[i].name);
        if (!p) continue;
        CHECK(p->ndim == (want[i].cols ? 2 : 1) && p->shape[0] == want[i].r && (!want[i].cols || p->shape[1] == want[i].cols),
              "%s shape [%lld, %lld]", p->name, (long long)p->shape[0], (long long)p->shape[1]);
    }
    CHECK(vp_model_find_param(&m, "nope") == NULL, "unknown name");
    // offsets: aligned, increasing, disjoint, inside the buffer
    int64_t end = 0, total = 0;
    for (int i = 0; i < m.n_params; ++i) {
        const vp_param_info* p = &m.info[i];
        CHECK(p->offset % 64 == 0 && p->offset >= end, "%s offset %lld", p->name, (long long)p->offset);
        end = p->offset + p->numel;
        total += p->numel;
        CHECK(m.slot[p->id] == i, "slot of %s", p->name);
    }
    CHECK(end <= m.n_weights && m.n_weights - total < 64 * m.n_params, "buffer %lld for %lld weights",
          (long long)m.n_weights, (long long)total);
    CHECK(total == 494211, "default model has %lld weights", (long long)total);
    // a view of a parameter
    const vp_param_info* pw = vp_model_find_param(&m, "port.w");
    vp_tensor v = vp_model_param_view(&m, &m.params, pw);
    CHECK(v.ndim == 2 && v.shape[0] == 256 && v.shape[1] == 8 && v.data == (float*)m.params.data + pw->offset,
          "param view");
    vp_model_free(&m);
    // without Mamba2 the mamba tensors are absent
    c.encoder = VP_ENCODER_NONE;
    CHECK_OK(vp_model_init(&m, be, &c, 1));
    CHECK(m.n_params == 24 && vp_model_find_param(&m, "mamba.in_proj.w") == NULL, "no mamba tensors");
    CHECK(m.slot[VP_PS_MAMBA_D] == -1, "absent slot");
    vp_model_free(&m);
    vp_backend_free(be);
}

static void test_init_rules(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    vp_model_cfg c = vp_model_cfg_default();
    vp_model m;
    CHECK_OK(vp_model_init(&m, be, &c, 42));
    const float* P = (const float*)m.params.data;
    double mean, var;
    // linear weights and biases U(-1/sqrt(in), 1/sqrt(in))
    const char* lin[4] = {"trunk.w2", "c51.a2.w", "mamba.in_proj.w", "trunk.b1"};
    const double fan[4] = {256, 128, 256, 32};
    for (int k = 0; k < 4; ++k) {
        const vp_param_info* p = vp_model_find_param(&m, lin[k]);
        double b = 1.0 / sqrt(fan[k]), mx = 0;
        for (int64_t i = 0; i < p->numel; ++i) mx = fmax(mx, fabs(P[p->offset + i]));
        moments(P + p->offset, p->numel, &mean, &var);
        CHECK(mx <= b && mx > 0.9 * b, "%s: max |w| %g, bound %g", lin[k], mx, b);
        CHECK_NEAR(var, b * b / 3, 0.1 * b * b / 3, 0);
        CHECK(fabs(mean) < 4 * b / sqrt(3.0 * p->numel), "%s mean %g", lin[k], mean);
    }
    // conv: fan-in is the width (4): bound 0.5
    const vp_param_info* cw = vp_model_find_param(&m, "mamba.conv.w");
    for (int64_t i = 0; i < cw->numel; ++i) CHECK(fabsf(P[cw->offset + i]) <= 0.5f, "conv bound");
    moments(P + cw->offset, cw->numel, &mean, &var);
    CHECK_NEAR(var, 0.25 / 3, 0.01, 0);
    // norm weights 1, biases 0, D 1
    const char* ones[4] = {"trunk.ln1.g", "trunk.ln2.g", "mamba.norm.g", "mamba.D"};
    for (int k = 0; k < 4; ++k) {
        const vp_param_info* p = vp_model_find_param(&m, ones[k]);
        for (int64_t i = 0; i < p->numel; ++i) CHECK(P[p->offset + i] == 1.0f, "%s[%lld]", ones[k], (long long)i);
    }
    const vp_param_info* lb = vp_model_find_param(&m, "trunk.ln1.b");
    for (int64_t i = 0; i < lb->numel; ++i) CHECK(P[lb->offset + i] == 0.0f, "ln1.b zero");
    // A_log = log(U(1, 16)); dt_bias = softplus^-1(dt), dt in [1e-3, 1e-1]
    const vp_param_info* al = vp_model_find_param(&m, "mamba.A_log");
    const vp_param_info* db = vp_model_find_param(&m, "mamba.dt_bias");
    for (int64_t i = 0; i < al->numel; ++i) {
        double A = exp(P[al->offset + i]);
        CHECK(A >= 1.0 - 1e-6 && A <= 16.0 + 1e-5, "A = %g", A);
        double dt = log1p(exp((double)P[db->offset + i]));
        CHECK(dt >= 1e-3 * (1 - 1e-4) && dt <= 0.1 * (1 + 1e-4), "dt = %g", dt);
    }
    CHECK(P[al->offset] != P[al->offset + 1] && P[db->offset] != P[db->offset + 1], "heads differ");
    // the same rule on many draws: log-uniform dt, uniform A
    vp_model_cfg wide = c;
    wide.hidden = 1024;
    wide.mamba_head_dim = 1;
    wide.window = 1;
    wide.head_hidden = 1;
    wide.iqn_cos = 1;
    wide.n_atoms = 2;
    vp_model mw;
    CHECK_OK(vp_model_init(&mw, be, &wide, 5));
    const float* W = (const float*)mw.params.data;
    const vp_param_info* al2 = vp_model_find_param(&mw, "mamba.A_log");
    const vp_param_info* db2 = vp_model_find_param(&mw, "mamba.dt_bias");
    double sa = 0, sl = 0;
    for (int64_t i = 0; i < al2->numel; ++i) {
        sa += exp(W[al2->offset + i]);
        sl += log(log1p(exp((double)W[db2->offset + i])));
    }
    // means of U(1, 16) and of log dt ~ U(log 1e-3, log 1e-1) over 1024 heads (3.7 sigma)
    CHECK_NEAR(sa / al2->numel, 8.5, 0.5, 0);
    CHECK_NEAR(sl / db2->numel, 0.5 * (log(1e-3) + log(1e-1)), 0.15, 0);
    vp_model_free(&mw);
    // same seed -> same bits; another seed -> other values
    vp_model m2, m3;
    CHECK_OK(vp_model_init(&m2, be, &c, 42));
    CHECK_OK(vp_model_init(&m3, be, &c, 43));
    CHECK(memcmp(m.params.data, m2.params.data, sizeof(float) * (size_t)m.n_weights) == 0, "deterministic");
    CHECK(memcmp(m.params.data, m3.params.data, sizeof(float) * (size_t)m.n_weights) != 0, "seed matters");
    // padding is zero, gradients start at zero
    double pad = 0;
    int64_t end = 0;
    for (int i = 0; i < m.n_params; ++i) {
        for (int64_t j = end; j < m.info[i].offset; ++j) pad += fabsf(P[j]);
        end = m.info[i].offset + m.info[i].numel;
    }
    CHECK(pad == 0.0, "padding holds %g", pad);
    vp_model_free(&m);
    vp_model_free(&m2);
    vp_model_free(&m3);
    vp_backend_free(be);
}

static void test_cfg_checks(void) {
    vp_model_cfg c = vp_model_cfg_default();
    CHECK_OK(vp_model_cfg_check(&c));
    c.hidden = 200;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "mamba_head_dim");
    c.encoder = VP_ENCODER_NONE;
    CHECK_OK(vp_model_cfg_check(&c));
    c = vp_model_cfg_default();
    c.window = 0;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "window");
    c = vp_model_cfg_default();
    c.branch_sizes[2] = 0;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "branch_sizes[2]");
    c = vp_model_cfg_default();
    c.v_min = 10.0f;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "v_min");
    c = vp_model_cfg_default();
    c.mamba_state = 65;
    CHECK_STATUS(vp_model_cfg_check(&c), VP_ERR_INVALID_ARG, "mamba_state");
    vp_backend* be = NULL;
    vp_model m;
    CHECK_OK(vp_backend_cpu_init(&be));
    CHECK_STATUS(vp_model_init(&m, be, &c, 1), VP_ERR_INVALID_ARG, "mamba_state");
    vp_backend_free(be);
}

/* GEMM FLOPs of the default model at B = 8192 with 64 taus, counted by hand per layer. */
static void test_flops(void) {
    vp_model_cfg c = vp_model_cfg_default();
    const double B = 8192, R = B * 8, Q = B * 64;
    double trunk = 2 * R * 256 * 32 + 2 * R * 256 * 256;
    double mamba = 2 * R * 256 * (256 + 32 + 4) + 2 * (2 * B * 256 * 256);
    double heads = 2 * B * 8 * 256 + 2 * (2 * B * 256 * 128) + 2 * B * 128 * 51 + 2 * B * 128 * 13 * 51;
    double iqn = 2 * Q * 64 * 256 + 2 * Q * 256 * 128 + 2 * Q * 128 * 13;
    double fwd = trunk + mamba + heads + iqn;
    double bwd = 2 * fwd - 2 * R * 256 * 32 - 2 * Q * 64 * 256;
    CHECK_NEAR(vp_model_flops(&c, 8192, 64, 0), fwd, 0, 1e-12);
    CHECK_NEAR(vp_model_flops(&c, 8192, 64, 1), fwd + bwd, 0, 1e-12);
    CHECK_NEAR(vp_model_flops(&c, 8192, 0, 0), fwd - iqn, 0, 1e-12);
    // the learner step: three forwards with IQN and one backward, about 370 GFLOP
    double step = 2 * vp_model_flops(&c, 8192, 64, 0) + vp_model_flops(&c, 8192, 64, 1);
    CHECK_NEAR(step / 1e9, 369.24, 0.01, 0);
    fprintf(stderr, "  default B=8192: forward %.1f GFLOP, backward %.1f, learner step %.1f\n", fwd / 1e9, bwd / 1e9,
            step / 1e9);
}

int main(void) {
    RUN_TEST(test_default_table);
    RUN_TEST(test_init_rules);
    RUN_TEST(test_cfg_checks);
    RUN_TEST(test_flops);
    return vpt_finish();
}
