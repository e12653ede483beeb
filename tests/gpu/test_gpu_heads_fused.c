/* GPU parity of the fused head kernels (mops.h): the C51 combine in one pass against the
 * three kernels it fuses (dueling, log-softmax, expected value) on the GPU, bit for bit, and
 * against the CPU's form within 1e-5 norm-wise, and from rows padded to multiples of 4 floats
 * (NaN in the padding) the same bits again; the output layers' padded copies CPU against GPU
 * bit for bit; the portfolio projection's element-wise pass
 * against the CPU's GEMM within 1e-6, in place too. Sizes: the default heads (Z 51, branches
 * 3, 4, 3, 3), odd ones, and Z over 64 (the launcher's unfused route); the whole network's
 * parity is test_gpu_model's. Runs on a GPU machine only. */
#include <string.h>

#include "gpu_twin.h"
#include "model/mops.h"

/* The device buffer of twin t equals the device buffer of u, bit for bit. */
static void same_bits(const char* op, const char* cas, twin* t, twin* u) {
    void* a = twin_fetch(t);
    void* b = twin_fetch(u);
    if (!a || !b) {
        free(a), free(b);
        return;
    }
    const size_t bytes = (size_t)t->n * vp_dtype_size(t->h.dtype);
    int64_t first = -1, bad = 0;
    for (int64_t i = 0; i < t->n; ++i)
        if (memcmp((const char*)a + i * 4, (const char*)b + i * 4, 4) != 0) {
            if (first < 0) first = i;
            bad++;
        }
    printf("  %-28s %-22s %s (%lld of %lld words differ)\n", op, cas, bad ? "FAIL" : "ok", (long long)bad,
           (long long)t->n);
    CHECK(bytes > 0 && bad == 0, "%s %s: %lld words differ, first at %lld: fused %.9g unfused %.9g", op, cas,
          (long long)bad, (long long)first, first >= 0 ? (double)((float*)a)[first] : 0.0,
          first >= 0 ? (double)((float*)b)[first] : 0.0);
    free(a), free(b);
}

static void c51_case(int64_t B, int Z, const vp_branch_map* br) {
    char cas[64];
    int A = 0;
    for (int k = 0; k < br->n; ++k) A += br->size[k];
    snprintf(cas, sizeof cas, "B%lld Z%d A%d", (long long)B, Z, A);
    const float v_min = -10.0f, v_max = 10.0f;
    twin v, adv, lp, q, lpu, qu;
    twin_2d(&v, VP_F32, B, Z);
    twin_2d(&adv, VP_F32, B, (int64_t)A * Z);
    twin_2d(&lp, VP_F32, B * A, Z);
    twin_1d(&q, VP_F32, B * A);
    twin_2d(&lpu, VP_F32, B * A, Z);
    twin_1d(&qu, VP_F32, B * A);
    twin_rand(&v, -3.0f, 3.0f);
    twin_rand(&adv, -3.0f, 3.0f);
    twin_poison(&lp), twin_poison(&q), twin_poison(&lpu), twin_poison(&qu);
    // the CPU's form, the fused pass, and the three CUDA kernels one by one
    CHECK_OK(vp_mops_cpu.c51_head(g_cpu, B, Z, br, v_min, v_max, v.h.data, Z, adv.h.data, (int64_t)A * Z, lp.h.data,
                                  q.h.data));
    CHECK_OK(vp_mops_cuda.c51_head(g_gpu, B, Z, br, v_min, v_max, v.d.data, Z, adv.d.data, (int64_t)A * Z, lp.d.data,
                                   q.d.data));
    CHECK_OK(vp_mops_cuda.dueling_forward(g_gpu, B, Z, br, v.d.data, adv.d.data, lpu.d.data));
    CHECK_OK(vp_log_softmax(g_gpu, &lpu.d, &lpu.d));
    CHECK_OK(vp_mops_cuda.c51_q(g_gpu, B * A, Z, v_min, v_max, lpu.d.data, qu.d.data));
    same_bits("c51_head logp = unfused", cas, &lp, &lpu);
    same_bits("c51_head q = unfused", cas, &q, &qu);
    twin_check("c51_head logp", cas, &lp, 1e-5);
    twin_check("c51_head q", cas, &q, 1e-5);
    if (Z <= 64) {
        // the same streams in rows padded to multiples of 4 floats, NaN in the padding: the same bits
        const int64_t Zp = (Z + 3) / 4 * 4 + 4, AZp = ((int64_t)A * Z + 3) / 4 * 4 + 4;
        twin vp, ap, lpp, qp;
        twin_2d(&vp, VP_F32, B, Zp);
        twin_2d(&ap, VP_F32, B, AZp);
        twin_2d(&lpp, VP_F32, B * A, Z);
        twin_1d(&qp, VP_F32, B * A);
        for (int64_t i = 0; i < B * Zp; ++i)
            ((float*)vp.h.data)[i] = i % Zp < Z ? ((const float*)v.h.data)[i / Zp * Z + i % Zp] : NAN;
        for (int64_t i = 0; i < B * AZp; ++i)
            ((float*)ap.h.data)[i] = i % AZp < (int64_t)A * Z ? ((const float*)adv.h.data)[i / AZp * A * Z + i % AZp] : NAN;
        twin_push(&vp), twin_push(&ap);
        twin_poison(&lpp), twin_poison(&qp);
        CHECK_OK(vp_mops_cuda.c51_head(g_gpu, B, Z, br, v_min, v_max, vp.d.data, Zp, ap.d.data, AZp, lpp.d.data,
                                       qp.d.data));
        same_bits("c51_head padded logp", cas, &lpp, &lpu);
        same_bits("c51_head padded q", cas, &qp, &qu);
        // Q only (no log-probabilities written): the same Q
        twin_poison(&qp);
        CHECK_OK(vp_mops_cuda.c51_head(g_gpu, B, Z, br, v_min, v_max, vp.d.data, Zp, ap.d.data, AZp, NULL, qp.d.data));
        same_bits("c51_head q only", cas, &qp, &qu);
        twin_free(&vp), twin_free(&ap), twin_free(&lpp), twin_free(&qp);
    }
    twin_free(&v), twin_free(&adv), twin_free(&lp), twin_free(&q), twin_free(&lpu), twin_free(&qu);
}

/* The output layers' padded copies: the CPU's and the GPU's the same bits, zeros kept. */
static void pad_case(int Z, int AZ, int HH) {
    char cas[64];
    snprintf(cas, sizeof cas, "Z%d AZ%d HH%d", Z, AZ, HH);
    const int64_t Zp = (Z + 3) / 4 * 4, AZp = (AZ + 3) / 4 * 4, n = Zp * HH + Zp + AZp * HH + AZp;
    twin v2w, v2b, a2w, a2b, out;
    twin_2d(&v2w, VP_F32, Z, HH);
    twin_1d(&v2b, VP_F32, Z);
    twin_2d(&a2w, VP_F32, AZ, HH);
    twin_1d(&a2b, VP_F32, AZ);
    twin_1d(&out, VP_F32, n);
    twin_rand(&v2w, -1.0f, 1.0f), twin_rand(&v2b, -1.0f, 1.0f), twin_rand(&a2w, -1.0f, 1.0f), twin_rand(&a2b, -1.0f, 1.0f);
    twin_poison_with(&out, 0.0f);
    CHECK_OK(vp_mops_cpu.c51_pad(g_cpu, Z, AZ, HH, v2w.h.data, v2b.h.data, a2w.h.data, a2b.h.data, out.h.data));
    CHECK_OK(vp_mops_cuda.c51_pad(g_gpu, Z, AZ, HH, v2w.d.data, v2b.d.data, a2w.d.data, a2b.d.data, out.d.data));
    twin_check_bits("c51_pad", cas, &out);
    const float* o = (const float*)out.h.data;
    CHECK(o[(int64_t)Z * HH] == 0.0f || Zp == Z, "c51_pad %s: a padding row is not zero", cas);
    CHECK(o[Zp * HH] == ((const float*)v2b.h.data)[0], "c51_pad %s: v2 bias not at its place", cas);
    twin_free(&v2w), twin_free(&v2b), twin_free(&a2w), twin_free(&a2b), twin_free(&out);
}

static void port_case(int64_t B, int H, int P, int in_place) {
    char cas[64];
    snprintf(cas, sizeof cas, "B%lld H%d P%d%s", (long long)B, H, P, in_place ? " in place" : "");
    twin e, p, w, bias, h;
    twin_2d(&e, VP_F32, B, H);
    twin_2d(&p, VP_F32, B, P);
    twin_2d(&w, VP_F32, H, P);
    twin_1d(&bias, VP_F32, H);
    twin_2d(&h, VP_F32, B, H);
    twin_rand(&e, -2.0f, 2.0f);
    twin_rand(&p, -1.0f, 1.0f);
    twin_rand(&w, -0.5f, 0.5f);
    twin_rand(&bias, -0.5f, 0.5f);
    twin_poison(&h);
    twin* out = in_place ? &e : &h;
    CHECK_OK(vp_mops_cpu.port_add(g_cpu, B, H, P, e.h.data, p.h.data, w.h.data, bias.h.data, out->h.data));
    CHECK_OK(vp_mops_cuda.port_add(g_gpu, B, H, P, e.d.data, p.d.data, w.d.data, bias.d.data, out->d.data));
    twin_check("port_add", cas, out, 1e-6);
    twin_free(&e), twin_free(&p), twin_free(&w), twin_free(&bias), twin_free(&h);
}

static void test_kernels(void) {
    const vp_branch_map def = {4, {3, 4, 3, 3}}, two = {2, {2, 5}}, one = {1, {3}};
    c51_case(1, 51, &def);
    c51_case(37, 51, &def);
    c51_case(4099, 51, &def);
    c51_case(5, 7, &two);
    c51_case(9, 64, &one);
    c51_case(6, 80, &two); /* over 64 atoms: the unfused route */
    pad_case(51, 663, 128);
    pad_case(7, 49, 5);
    port_case(33, 256, 8, 0);
    port_case(4099, 256, 8, 1);
    port_case(70001, 256, 8, 0); /* 16 rows a block */
    port_case(7, 19, 3, 0);
}

int main(void) {
    gpu_setup("test_gpu_heads_fused");
    RUN_TEST(test_kernels);
    gpu_teardown();
    return vpt_finish();
}
