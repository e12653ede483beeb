/* GPU parity of the TLOB encoder (src/model/model_tlob.c, cuda_tlob.cu): the batched
 * transpose kernel bit for bit, then the encoder's forward (the encoding) and backward (every
 * tlob.* gradient and d h2) on the CUDA backend against the CPU's from the same parameters,
 * trunk rows and d e, at small odd shapes and the default network's, in FP32 and TF32
 * products; the GPU forward + backward allocate, copy and synchronise nothing. A failure
 * prints the tensor, the case and the error, and the program exits non-zero. */
#include "gpu_twin.h"
#include "model/model_internal.h"

/* One encoder shape and batch. */
typedef struct tlob_case {
    const char* name;
    int K, H, blocks, heads, fheads, mlp;
    int64_t B;
    vp_precision prec;
} tlob_case;

static const tlob_case CASES[] = {
    {"K3 H4 1 block", 3, 4, 1, 2, 1, 2, 2, VP_PREC_FP32},
    {"K5 H12 2 blocks heads 3/5", 5, 12, 2, 3, 5, 3, 7, VP_PREC_FP32},
    {"K8 H96 B333", 8, 96, 2, 4, 2, 4, 333, VP_PREC_FP32},
    {"default B1024", 8, 256, 2, 4, 1, 4, 1024, VP_PREC_FP32},
    {"default B1024 tf32", 8, 256, 2, 4, 1, 4, 1024, VP_PREC_TF32},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* ||gpu - cpu|| / ||cpu|| of n floats (cpu in host memory, gpu on the device); prints a row. */
static double compare(const char* what, const char* cas, const void* cpu, const vp_tensor* gpu_t, int64_t n,
                      double tol) {
    float* g = (float*)malloc(sizeof(float) * (size_t)n);
    vp_tensor t = vp_tensor_1d(gpu_t->data, VP_F32, gpu_t->mem, n);
    CHECK_OK(vp_download(g_gpu, g, &t, sizeof(float) * (size_t)n));
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
    return err;
}

/* The transpose kernel on both tables: an exact copy, so the bits agree. */
static void test_transpose(void) {
    const vp_tlops *kc = NULL, *kg = NULL;
    CHECK_OK(vp_tlops_get(g_cpu, &kc));
    CHECK_OK(vp_tlops_get(g_gpu, &kg));
    if (!kc || !kg) return;
    const int64_t shapes[][3] = {{1, 1, 1}, {3, 5, 7}, {2, 33, 65}, {7, 8, 256}, {70001, 3, 2}};
    char cas[64];
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; ++s) {
        const int64_t B = shapes[s][0], r = shapes[s][1], c = shapes[s][2];
        twin src, dst;
        twin_1d(&src, VP_F32, B * r * c);
        twin_1d(&dst, VP_F32, B * r * c);
        twin_rand(&src, -1, 1);
        twin_poison(&dst);
        CHECK_OK(kc->transpose(g_cpu, B, r, c, (const float*)src.h.data, (float*)dst.h.data));
        CHECK_OK(kg->transpose(g_gpu, B, r, c, (const float*)src.d.data, (float*)dst.d.data));
        snprintf(cas, sizeof cas, "B %lld [%lld, %lld]", (long long)B, (long long)r, (long long)c);
        twin_check_bits("tlob transpose", cas, &dst);
        twin_free(&src);
        twin_free(&dst);
    }
}

/* The configuration of a case: the default network with the case's encoder extents. */
static vp_model_cfg cfg_of(const tlob_case* k) {
    vp_model_cfg c = vp_model_cfg_default();
    c.encoder = VP_ENCODER_TLOB;
    c.window = k->K;
    c.hidden = k->H;
    c.tlob_blocks = k->blocks;
    c.tlob_heads = k->heads;
    c.tlob_feature_heads = k->fheads;
    c.tlob_mlp = k->mlp;
    return c;
}

static void run_case(const tlob_case* k) {
    const vp_model_cfg c = cfg_of(k);
    const int64_t B = k->B, nh = B * k->K * k->H, ne = B * k->H;
    const int tf32 = k->prec == VP_PREC_TF32;
    // FP32: a few ulps per op through 2 blocks of ~20 ops each; the weight gradients also
    // sum B L rows in another order (eps sqrt(n)). TF32: 2^-11 per operand, ~10 dependent
    // products from e back to the first block's weights.
    const double tol_e = tf32 ? 1e-2 : 2e-5, tol_g = tf32 ? 2e-2 : 1e-4;
    vp_model mc, mg;
    CHECK_OK(vp_model_init(&mc, g_cpu, &c, 17));
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 17));
    mc.precision = VP_PREC_FP32;
    mg.precision = k->prec;
    vp_model_acts *ac = NULL, *ag = NULL;
    CHECK_OK(vp_model_acts_init(&ac, &mc, B, 0, 1));
    CHECK_OK(vp_model_acts_init(&ag, &mg, B, 0, 1));
    if (!ac || !ag) return;
    // the same trunk rows (ReLU outputs) and d e on both sides
    twin h2, de;
    twin_1d(&h2, VP_F32, nh);
    twin_1d(&de, VP_F32, ne);
    twin_rand(&h2, 0, 2);
    twin_rand(&de, -1, 1);
    vp_tensor h2c = vp_tensor_1d(ac->h2.data, VP_F32, ac->h2.mem, nh);
    vp_tensor h2g = vp_tensor_1d(ag->h2.data, VP_F32, ag->h2.mem, nh);
    vp_tensor dec = vp_tensor_1d(ac->d_h.data, VP_F32, ac->d_h.mem, ne);
    vp_tensor deg = vp_tensor_1d(ag->d_h.data, VP_F32, ag->d_h.mem, ne);
    CHECK_OK(vp_copy(g_cpu, &h2.h, &h2c));
    CHECK_OK(vp_copy(g_gpu, &h2.d, &h2g));
    CHECK_OK(vp_copy(g_cpu, &de.h, &dec));
    CHECK_OK(vp_copy(g_gpu, &de.d, &deg));
    // forward and backward on both; the GPU's without an allocation, copy or sync
    CHECK_OK(vp_model_tlob_forward(&mc, &mc.params, ac, B));
    CHECK_OK(vp_model_tlob_backward(&mc, &mc.params, ac, B));
    vp_runtime_counters before, after;
    vp_backend_counters(g_gpu, &before);
    CHECK_OK(vp_model_tlob_forward(&mg, &mg.params, ag, B));
    CHECK_OK(vp_model_tlob_backward(&mg, &mg.params, ag, B));
    vp_backend_counters(g_gpu, &after);
    CHECK(after.allocs == before.allocs && after.copies == before.copies && after.syncs == before.syncs,
          "%s: the GPU forward + backward allocated, copied or synchronised", k->name);
    CHECK_OK(vp_backend_sync(g_gpu));
    compare("tlob encoding", k->name, ac->e.data, &ag->e, ne, tol_e);
    for (int i = 0; i < mc.n_params; ++i) {
        const vp_param_info* p = &mc.info[i];
        if (strncmp(p->name, "tlob.", 5) != 0) continue;
        vp_tensor gg = vp_model_param_view(&mg, &mg.grads, &mg.info[i]);
        compare(p->name, k->name, (const float*)mc.grads.data + p->offset, &gg, p->numel, tol_g);
    }
    compare("tlob d h2", k->name, ac->d_t1.data, &ag->d_t1, nh, tol_g);
    twin_free(&h2);
    twin_free(&de);
    vp_model_acts_free(ac);
    vp_model_acts_free(ag);
    vp_model_free(&mc);
    vp_model_free(&mg);
}

static void test_encoder_parity(void) {
    for (int i = 0; i < N_CASES; ++i) run_case(&CASES[i]);
}

int main(void) {
    gpu_setup("test_gpu_tlob");
    RUN_TEST(test_transpose);
    RUN_TEST(test_encoder_parity);
    gpu_teardown();
    return vpt_finish();
}
