/* GPU parity of the input modules (variable selection, spectral norm, KAN): the same network
 * (same seed) on the CPU and CUDA backends with the modules on, the same inputs, FP32 GEMMs.
 * Forward: outputs and the modules' activations (selected features, weights, W / sigma,
 * spline bases), GPU against CPU norm-wise, 1e-5. Backward on identical forward state (the
 * CPU's arena uploaded over the GPU's, as test_gpu_model.c does, so no ReLU mask differs):
 * every parameter gradient, 1e-4 (FP32 reductions over up to B K rows in other orders, and the
 * one-block sums of the spectral norm). The spectral norm's commit: u, v equal to 1e-6. No
 * allocation, copy or synchronisation in the forward and backward. Runs on a GPU machine only. */
#include "gpu_twin.h"
#include "model/model_internal.h"

/* One case: the small odd shapes or the default widths, which modules are on. */
typedef struct in_case {
    const char* name;
    int F, H, PD, K, VH, G, order;
    int vsn, sn, kan;
    int64_t B;
} in_case;

static const in_case CASES[] = {
    {"vsn F7 H96 K5 B77", 7, 96, 32, 5, 11, 5, 3, 1, 0, 0, 77},
    {"sn F7 H96 K5 B77", 7, 96, 32, 5, 11, 5, 3, 0, 1, 0, 77},
    {"kan F7 H96 G5 k3 B77", 7, 96, 32, 5, 11, 5, 3, 0, 0, 1, 77},
    {"kan G7 k2 + vsn B33", 7, 96, 32, 3, 11, 7, 2, 1, 0, 1, 33},
    {"all default B8192", 32, 256, 64, 8, 16, 5, 3, 1, 1, 1, 8192},
    {"vsn + sn default B8192", 32, 256, 64, 8, 16, 5, 3, 1, 1, 0, 8192},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* ||gpu - cpu|| / ||cpu|| of n floats (cpu host memory, gpu device memory); prints a row. */
static void compare(const char* what, const char* cas, const void* cpu, const void* gpu, int64_t n, double tol) {
    float* g = (float*)malloc(sizeof(float) * (size_t)n);
    vp_tensor gt = vp_tensor_1d((void*)gpu, VP_F32, VP_MEM_DEVICE, n);
    CHECK_OK(vp_download(g_gpu, g, &gt, sizeof(float) * (size_t)n));
    const float* c = (const float*)cpu;
    double num = 0, den = 0;
    int64_t nan = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(g[i]) || isnan(c[i])) {
            nan++;
            continue;
        }
        num += ((double)g[i] - c[i]) * ((double)g[i] - c[i]);
        den += (double)c[i] * c[i];
    }
    const double err = den > 0 ? sqrt(num / den) : sqrt(num);
    const int ok = nan == 0 && err <= tol;
    twin_row(what, cas, err, tol, ok);
    CHECK(ok, "%s %s: rel err %.3e (tol %.1e), %lld NaN", what, cas, err, tol, (long long)nan);
    free(g);
}

static void run_case(const in_case* k) {
    vp_model_cfg c = vp_model_cfg_default();
    c.n_features = k->F;
    c.hidden = k->H;
    c.mamba_head_dim = k->PD;
    c.window = k->K;
    c.vsn = k->vsn;
    c.vsn_hidden = k->VH;
    c.spectral_norm = k->sn;
    c.kan = k->kan;
    c.kan_grid = k->G;
    c.kan_order = k->order;
    const int64_t B = k->B, rows = B + 9, R = B * c.window;
    const int T = 8, A = vp_model_cfg_actions(&c);
    vp_model mc, mg;
    CHECK_OK(vp_model_init(&mc, g_cpu, &c, 77));
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 77));
    mc.precision = mg.precision = VP_PREC_FP32;
    vp_model_acts *ac = NULL, *ag = NULL;
    CHECK_OK(vp_model_acts_init(&ac, &mc, B, T, 1));
    CHECK_OK(vp_model_acts_init(&ag, &mg, B, T, 1));
    if (!ac || !ag) return;
    twin feat, bar, port, taus, dlp, diqn;
    twin_2d(&feat, VP_F32, rows, c.n_features);
    twin_1d(&bar, VP_I32, B);
    twin_2d(&port, VP_F32, B, c.n_portfolio);
    twin_2d(&taus, VP_F32, B, T);
    twin_2d(&dlp, VP_F32, B * A, c.n_atoms);
    twin_2d(&diqn, VP_F32, B * T, A);
    twin_rand(&feat, -4, 4); // beyond the KAN grid's range (3) too
    twin_rand(&bar, 0, (float)rows);
    twin_rand(&port, -1, 1);
    twin_rand(&taus, 0.01f, 0.99f);
    twin_rand(&dlp, -1, 1);
    twin_rand(&diqn, -1, 1);
    // forward on both; the GPU's forward and backward neither allocate, copy nor wait
    CHECK_OK(vp_model_forward(&mc, &mc.params, ac, &feat.h, &bar.h, &port.h, &taus.h, B));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_model_forward(&mg, &mg.params, ag, &feat.d, &bar.d, &port.d, &taus.d, B));
    CHECK_OK(vp_model_backward(&mg, &mg.params, ag, &dlp.d, &diqn.d));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "%s: forward + backward on the GPU allocated, copied or synchronised", k->name);
    compare("log_probs", k->name, vp_model_log_probs(ac).data, vp_model_log_probs(ag).data, B * A * c.n_atoms, 1e-5);
    compare("iqn", k->name, vp_model_iqn(ac).data, vp_model_iqn(ag).data, B * T * A, 1e-5);
    if (c.vsn) {
        compare("vsn weights", k->name, ac->vsn_w.data, ag->vsn_w.data, R * c.n_features, 1e-5);
        compare("vsn xs", k->name, ac->xs.data, ag->xs.data, R * c.n_features, 1e-5);
        compare("vsn weight sums", k->name, ac->vsn_wsum.data, ag->vsn_wsum.data, c.n_features, 1e-5);
    }
    if (c.spectral_norm) {
        // sigma of trunk.w1 (absent with the KAN), then of trunk.w2
        compare("sn sigma", k->name, (const float*)ac->sn_sigma.data + c.kan, (const float*)ag->sn_sigma.data + c.kan,
                2 - c.kan, 1e-6);
        compare("sn w2 / sigma", k->name, ac->sn_w2.data, ag->sn_w2.data, (int64_t)c.hidden * c.hidden, 1e-6);
    }
    if (c.kan) {
        const int64_t KC = c.kan_grid + c.kan_order;
        compare("kan bases", k->name, ac->kan_basis.data, ag->kan_basis.data, R * c.n_features * KC, 1e-6);
        compare("kan scaled spline w", k->name, ac->kan_w.data, ag->kan_w.data, (int64_t)c.hidden * c.n_features * KC,
                1e-6);
    }
    // backward on the CPU's forward state: the whole arena has one layout on both sides
    CHECK(ac->arena.used == ag->arena.used, "%s: the CPU and GPU activations differ in size", k->name);
    vp_tensor dst = vp_tensor_1d(ag->arena.block.dev, VP_F32, ag->arena.block.mem,
                                 (int64_t)(ag->arena.used / sizeof(float)));
    CHECK_OK(vp_upload(g_gpu, &dst, ac->arena.block.host, ac->arena.used));
    CHECK_OK(vp_model_backward(&mg, &mg.params, ag, &dlp.d, &diqn.d));
    CHECK_OK(vp_model_backward(&mc, &mc.params, ac, &dlp.h, &diqn.h));
    for (int i = 0; i < mc.n_params; ++i) {
        const vp_param_info* p = &mc.info[i];
        char what[96];
        snprintf(what, sizeof what, "grad %s", p->name);
        compare(what, k->name, (const float*)mc.grads.data + p->offset, (const float*)mg.grads.data + p->offset,
                p->numel, 1e-4);
    }
    // the commit writes the same u, v on both
    if (c.spectral_norm) {
        CHECK_OK(vp_model_commit(&mc, &mc.params, ac));
        CHECK_OK(vp_model_commit(&mg, &mg.params, ag));
        const vp_param_info* pu = vp_model_find_param(&mc, "trunk.w2.sn_u");
        compare("sn committed u", k->name, (const float*)mc.params.data + pu->offset,
                (const float*)mg.params.data + pu->offset, pu->numel, 1e-6);
    }
    twin_free(&feat), twin_free(&bar), twin_free(&port), twin_free(&taus), twin_free(&dlp), twin_free(&diqn);
    vp_model_acts_free(ac);
    vp_model_acts_free(ag);
    vp_model_free(&mc);
    vp_model_free(&mg);
}

static void test_modules_parity(void) {
    for (int i = 0; i < N_CASES; ++i) run_case(&CASES[i]);
}

int main(void) {
    gpu_setup("test_gpu_modules_input");
    RUN_TEST(test_modules_parity);
    gpu_teardown();
    return vpt_finish();
}
