/* GPU parity of the folded C51 output layers (mops.h: c51_fold, c51_fold_q):
 * - the fold on CUDA equals the CPU's bit for bit (one layout, one rounding);
 * - c51_fold_q's tensor-core pass against the CPU's loops on the same folded layers within
 *   1e-5 norm-wise (the same TF32 operands, FP32 sums in other orders): the default heads
 *   (Z 51, branches 3, 4, 3, 3) at 1, 37, 4099 and 70001 samples (blocks that run over
 *   several sample blocks), Z 56 and 49 with branches of 6 and 1 actions, rows wider than HH
 *   with NaN in the padding;
 * - the model's forward-only Q with folded heads (vp_model_acts_fold_heads, TF32) against the
 *   layer-by-layer heads of the same network: within 2e-3 of the support's width; with the
 *   parameters held, the fold is not made again, and once let go it is, giving a fresh
 *   forward's Q bit for bit; FP32 products keep the layer-by-layer heads.
 * Runs on a GPU machine only. */
#include <string.h>

#include "gpu_twin.h"
#include "model/heads_fold_math.h"
#include "model/model_internal.h"

static void fold_case(int64_t B, int Z, const vp_branch_map* br, int64_t ld) {
    char cas[64];
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    snprintf(cas, sizeof cas, "B%lld Z%d A%d ld%lld", (long long)B, Z, A, (long long)ld);
    const int HH = 128;
    twin v2w, v2b, a2w, a2b, fold, v1, ah, q;
    twin_2d(&v2w, VP_F32, Z, HH), twin_1d(&v2b, VP_F32, Z);
    twin_2d(&a2w, VP_F32, (int64_t)A * Z, HH), twin_1d(&a2b, VP_F32, (int64_t)A * Z);
    twin_1d(&fold, VP_F32, vp_c51f_floats(Z, HH, A));
    twin_2d(&v1, VP_F32, B, ld), twin_2d(&ah, VP_F32, B, ld), twin_2d(&q, VP_F32, B, A);
    twin_rand(&v2w, -0.2f, 0.2f), twin_rand(&v2b, -1.0f, 1.0f);
    twin_rand(&a2w, -0.2f, 0.2f), twin_rand(&a2b, -1.0f, 1.0f);
    twin_rand(&v1, 0.0f, 1.0f), twin_rand(&ah, 0.0f, 1.0f);
    if (ld > HH) {
        float *x = (float*)v1.h.data, *y = (float*)ah.h.data;
        for (int64_t i = 0; i < B * ld; ++i)
            if (i % ld >= HH) x[i] = y[i] = NAN;
        twin_push(&v1), twin_push(&ah);
    }
    twin_poison(&fold), twin_poison(&q);
    CHECK_OK(vp_mops_cpu.c51_fold(g_cpu, HH, Z, br, v2w.h.data, v2b.h.data, a2w.h.data, a2b.h.data, fold.h.data));
    CHECK_OK(vp_mops_cuda.c51_fold(g_gpu, HH, Z, br, v2w.d.data, v2b.d.data, a2w.d.data, a2b.d.data, fold.d.data));
    twin_check_bits("c51_fold", cas, &fold);
    CHECK_OK(vp_mops_cpu.c51_fold_q(g_cpu, B, HH, Z, br, -10.0f, 10.0f, v1.h.data, ah.h.data, ld, fold.h.data,
                                    q.h.data));
    CHECK_OK(vp_mops_cuda.c51_fold_q(g_gpu, B, HH, Z, br, -10.0f, 10.0f, v1.d.data, ah.d.data, ld, fold.d.data,
                                     q.d.data));
    twin_check("c51_fold_q", cas, &q, 1e-5);
    twin_free(&v2w), twin_free(&v2b), twin_free(&a2w), twin_free(&a2b), twin_free(&fold);
    twin_free(&v1), twin_free(&ah), twin_free(&q);
}

static void test_kernels(void) {
    const vp_branch_map def = {4, {3, 4, 3, 3}}, six = {3, {6, 1, 2}};
    fold_case(1, 51, &def, 128);
    fold_case(37, 51, &def, 128);
    fold_case(4099, 51, &def, 128);
    fold_case(70001, 51, &def, 128);
    fold_case(301, 56, &six, 136);
    fold_case(129, 49, &six, 128);
    // shapes the tensor-core pass does not take are refused, not computed
    const vp_branch_map seven = {1, {7}};
    static float p[4]; /* never read: refused first */
    CHECK(vp_mops_cuda.c51_fold_q(g_gpu, 4, 128, 51, &seven, -1.0f, 1.0f, p, p, 128, p, p) == VP_ERR_UNSUPPORTED,
          "c51_fold_q: a branch of 7 actions was not refused");
    CHECK(vp_mops_cuda.c51_fold_q(g_gpu, 4, 64, 51, &seven, -1.0f, 1.0f, p, p, 128, p, p) == VP_ERR_UNSUPPORTED,
          "c51_fold_q: HH 64 was not refused");
}

/* Q of one forward (encode, heads) into host memory. */
static void model_q(vp_model* m, vp_model_acts* a, twin* feat, twin* bar, twin* port, int64_t B, float* out) {
    CHECK_OK(vp_model_encode(m, &m->params, a, &feat->d, &bar->d, B));
    CHECK_OK(vp_model_heads(m, &m->params, a, NULL, &port->d, NULL, B));
    vp_tensor qt = vp_model_q(a);
    CHECK_OK(vp_download(g_gpu, out, &qt, (size_t)B * vp_model_cfg_actions(&m->cfg) * sizeof(float)));
}

static void test_model_fold(void) {
    const vp_model_cfg c = vp_model_cfg_default();
    const int A = vp_model_cfg_actions(&c);
    const int64_t B = 4099, rows = 3 * B + 17;
    vp_model mg;
    CHECK_OK(vp_model_init(&mg, g_gpu, &c, 77));
    mg.precision = VP_PREC_TF32;
    vp_model_acts *af = NULL, *al = NULL, *fresh = NULL;
    CHECK_OK(vp_model_acts_init(&af, &mg, B, 0, 0));
    CHECK_OK(vp_model_acts_init(&al, &mg, B, 0, 0));
    CHECK_OK(vp_model_acts_init(&fresh, &mg, B, 0, 0));
    if (!af || !al || !fresh) return;
    vp_model_acts_q_only(af), vp_model_acts_q_only(al), vp_model_acts_q_only(fresh);
    vp_model_acts_fold_heads(af), vp_model_acts_fold_heads(fresh);
    CHECK(af->head_fold.data != NULL, "model fold: CUDA forward-only activations of the default heads hold no fold");
    twin feat, bar, port;
    twin_2d(&feat, VP_F32, rows, c.n_features);
    twin_1d(&bar, VP_I32, B);
    twin_2d(&port, VP_F32, B, c.n_portfolio);
    twin_rand(&feat, -2, 2);
    twin_rand(&bar, 0, (float)rows);
    twin_rand(&port, -1, 1);
    const size_t qb = (size_t)B * A * sizeof(float);
    float *qf = malloc(qb), *ql = malloc(qb), *q2 = malloc(qb), *q3 = malloc(qb), *q4 = malloc(qb);
    if (!qf || !ql || !q2 || !q3 || !q4) return;
    model_q(&mg, af, &feat, &bar, &port, B, qf);
    model_q(&mg, al, &feat, &bar, &port, B, ql);
    CHECK(af->fold_of == mg.params.data && al->fold_of == NULL, "model fold: the folded route was %s",
          af->fold_of ? "taken where it should not be" : "not taken");
    double worst = 0.0;
    for (int64_t i = 0; i < B * A; ++i) {
        const double d = fabs((double)qf[i] - ql[i]);
        worst = d > worst || d != d ? d : worst;
    }
    const double tol = 2e-3 * (c.v_max - c.v_min);
    twin_row("model q folded", "default heads B4099 TF32", worst / (c.v_max - c.v_min), 2e-3, worst <= tol);
    CHECK(worst <= tol, "model fold: Q %.3g from the layer-by-layer heads' (tolerance %.3g)", worst, tol);
    // held: a changed advantage bias does not reach Q (no new fold); let go, it does
    vp_model_acts_hold_params(af, 1);
    vp_tensor a2b = vp_model_slot(&mg, &mg.params, VP_PS_C51_A2_B);
    float b0 = 0.0f;
    CHECK_OK(vp_download(g_gpu, &b0, &a2b, sizeof b0));
    b0 += 1.0f;
    CHECK_OK(vp_upload(g_gpu, &a2b, &b0, sizeof b0));
    model_q(&mg, af, &feat, &bar, &port, B, q2);
    CHECK(memcmp(q2, qf, qb) == 0, "model fold: a held forward folded the layers again");
    vp_model_acts_hold_params(af, 0);
    model_q(&mg, af, &feat, &bar, &port, B, q3);
    model_q(&mg, fresh, &feat, &bar, &port, B, q4);
    CHECK(memcmp(q3, q4, qb) == 0, "model fold: after letting go, Q differs from a fresh forward's");
    CHECK(memcmp(q3, qf, qb) != 0, "model fold: the changed bias did not reach Q after letting go");
    // FP32 products: the layer-by-layer heads
    mg.precision = VP_PREC_FP32;
    vp_model_acts_hold_params(fresh, 0);
    fresh->fold_of = NULL;
    model_q(&mg, fresh, &feat, &bar, &port, B, q4);
    CHECK(fresh->fold_of == NULL, "model fold: FP32 products took the folded (TF32) route");
    free(qf), free(ql), free(q2), free(q3), free(q4);
    twin_free(&feat), twin_free(&bar), twin_free(&port);
    vp_model_acts_free(af), vp_model_acts_free(al), vp_model_acts_free(fresh);
    vp_model_free(&mg);
}

int main(void) {
    gpu_setup("test_gpu_heads_fold");
    RUN_TEST(test_kernels);
    RUN_TEST(test_model_fold);
    gpu_teardown();
    return vpt_finish();
}
