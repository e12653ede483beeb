/* Optimiser ops on the CPU backend: AdamW and Adam oracle values (PyTorch), grad-norm
 * clipping (PyTorch's clip_grad_norm_), the step counter, and a multi-element AdamW
 * against a double loop. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* Runs AdamW on one parameter theta0 = 1 with gradients 0.5 then -0.25 (lr 0.1, betas
 * 0.9/0.999, eps 1e-8); `gscale` (0: none) multiplies stored gradients 1 and -0.5. */
static void one_param_run(float wd, float gscale, float out[2]) {
    float p = 1.0f, g = 0.0f, m = 0.0f, v = 0.0f, s = gscale;
    int32_t step = 0;
    vp_tensor tp = vp_tensor_1d(&p, VP_F32, VP_MEM_HOST, 1), tg = vp_tensor_1d(&g, VP_F32, VP_MEM_HOST, 1);
    vp_tensor tm = vp_tensor_1d(&m, VP_F32, VP_MEM_HOST, 1), tv = vp_tensor_1d(&v, VP_F32, VP_MEM_HOST, 1);
    vp_tensor ts = vp_tensor_1d(&step, VP_I32, VP_MEM_HOST, 1), tsc = vp_tensor_1d(&s, VP_F32, VP_MEM_HOST, 1);
    vp_adamw_cfg cfg = {0.1f, 0.9f, 0.999f, 1e-8f, wd};
    const float grads[2] = {0.5f, -0.25f};
    for (int t = 0; t < 2; ++t) {
        g = gscale != 0.0f ? grads[t] / gscale : grads[t];
        CHECK_OK(vp_step_increment(g_b, &ts));
        CHECK_OK(vp_adamw(g_b, &cfg, &tp, &tg, &tm, &tv, &ts, gscale != 0.0f ? &tsc : NULL));
        out[t] = p;
    }
    CHECK(step == 2, "step counter %d after two increments", step);
}

static void test_adam_oracle(void) {
    float r[2];
    one_param_run(0.0f, 0.0f, r);
    CHECK_NEAR(r[0], 0.9, 1e-6, 0);
    CHECK_NEAR(r[1], 0.873366, 1e-6, 0);
}

static void test_adamw_oracle(void) {
    float r[2];
    one_param_run(0.01f, 0.0f, r);
    CHECK_NEAR(r[0], 0.899, 1e-6, 0);
    CHECK_NEAR(r[1], 0.871467, 1e-6, 0);
    /* the same run with gradients stored doubled and grad_scale 0.5 */
    float s[2];
    one_param_run(0.01f, 0.5f, s);
    CHECK(s[0] == r[0] && s[1] == r[1], "grad_scale run %.9g %.9g vs %.9g %.9g", s[0], s[1], r[0], r[1]);
}

/* clip_coef then scale_by, PyTorch's clip_grad_norm_ in two ops. */
static void clip(float* x, int64_t n, float max_norm, float* norm, float* coef) {
    vp_tensor tx = vp_tensor_1d(x, VP_F32, VP_MEM_HOST, n);
    vp_tensor tn = vp_tensor_1d(norm, VP_F32, VP_MEM_HOST, 1), tc = vp_tensor_1d(coef, VP_F32, VP_MEM_HOST, 1);
    CHECK_OK(vp_clip_coef(g_b, &tx, max_norm, &tn, &tc));
    CHECK_OK(vp_scale_by(g_b, &tx, &tc));
}

static void test_clip(void) {
    float x[2] = {3.0f, 4.0f}, norm = 0, coef = 0;
    clip(x, 2, 1.0f, &norm, &coef);
    CHECK_NEAR(norm, 5.0, 0, 0);
    CHECK_NEAR(x[0], 0.6, 1e-6, 0);
    CHECK_NEAR(x[1], 0.8, 1e-6, 0);
    CHECK_NEAR(coef, 1.0 / (5.0 + 1e-6), 1e-7, 0);
    /* under the limit: coefficient exactly 1, values untouched */
    float y[3] = {0.3f, -0.4f, 0.0f};
    clip(y, 3, 1.0f, &norm, &coef);
    CHECK(coef == 1.0f, "no-clip coefficient %.9g", coef);
    CHECK(y[0] == 0.3f && y[1] == -0.4f && y[2] == 0.0f, "no-clip changed values");
    CHECK_NEAR(norm, 0.5, 1e-7, 0);
    /* a NaN gradient gives a NaN norm and coefficient (never a silent 1) */
    float z[2] = {1.0f, NAN};
    clip(z, 2, 1.0f, &norm, &coef);
    CHECK(isnan(norm) && isnan(coef), "NaN gradient: norm %g coef %g", norm, coef);
    /* many elements: norm against a double sum */
    const int64_t n = 100003;
    float* w = malloc((size_t)n * 4);
    ref_fill_uniform(w, n, 150, 0, -1, 1);
    double ss = 0;
    for (int64_t i = 0; i < n; ++i) ss += (double)w[i] * w[i];
    clip(w, n, 10.0f, &norm, &coef);
    CHECK_NEAR(norm, sqrt(ss), 0, 1e-7);
    CHECK_NEAR(coef, 10.0 / (sqrt(ss) + 1e-6), 0, 1e-6);
    free(w);
}

/* Multi-element AdamW over several steps against the same update in double. */
static void test_adamw_many(void) {
    const int64_t n = 1037;
    const vp_adamw_cfg cfg = {1e-3f, 0.9f, 0.999f, 1.5e-4f, 0.01f};
    float *p = malloc((size_t)n * 4), *g = malloc((size_t)n * 4), *m = calloc((size_t)n, 4), *v = calloc((size_t)n, 4);
    double *pd = ref_dbuf(n), *md = ref_dbuf(n), *vd = ref_dbuf(n);
    ref_fill_uniform(p, n, 160, 0, -1, 1);
    ref_to_double(p, n, pd);
    float scale = 0.75f;
    int32_t step = 0;
    vp_tensor tp = vp_tensor_1d(p, VP_F32, VP_MEM_HOST, n), tg = vp_tensor_2d(g, VP_F32, VP_MEM_HOST, 17, 61);
    vp_tensor tm = vp_tensor_1d(m, VP_F32, VP_MEM_HOST, n), tv = vp_tensor_1d(v, VP_F32, VP_MEM_HOST, n);
    vp_tensor ts = vp_tensor_1d(&step, VP_I32, VP_MEM_HOST, 1), tsc = vp_tensor_1d(&scale, VP_F32, VP_MEM_HOST, 1);
    for (int t = 1; t <= 6; ++t) {
        ref_fill_uniform(g, n, 161, (uint64_t)t, -2, 2);
        CHECK_OK(vp_step_increment(g_b, &ts));
        CHECK_OK(vp_adamw(g_b, &cfg, &tp, &tg, &tm, &tv, &ts, &tsc));
        /* the reference update in double */
        const double b1 = cfg.beta1, b2 = cfg.beta2, lr = cfg.lr;
        for (int64_t i = 0; i < n; ++i) {
            const double gi = (double)g[i] * scale;
            md[i] = b1 * md[i] + (1 - b1) * gi;
            vd[i] = b2 * vd[i] + (1 - b2) * gi * gi;
            pd[i] -= lr * (double)cfg.weight_decay * pd[i];
            pd[i] -= lr * (md[i] / (1 - pow(b1, t))) / (sqrt(vd[i] / (1 - pow(b2, t))) + (double)cfg.eps);
        }
        int64_t bad = ref_first_bad(p, pd, n, 1e-6, 1e-6);
        CHECK(bad < 0, "step %d elem %lld: %.9g vs %.9g", t, (long long)bad, bad < 0 ? 0 : p[bad], bad < 0 ? 0 : pd[bad]);
        bad = ref_first_bad(v, vd, n, 1e-9, 1e-5);
        CHECK(bad < 0, "step %d second moment elem %lld", t, (long long)bad);
    }
    CHECK(step == 6, "step %d", step);
    free(p);
    free(g);
    free(m);
    free(v);
    free(pd);
    free(md);
    free(vd);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_adam_oracle);
    RUN_TEST(test_adamw_oracle);
    RUN_TEST(test_clip);
    RUN_TEST(test_adamw_many);
    vp_backend_free(g_b);
    return vpt_finish();
}
