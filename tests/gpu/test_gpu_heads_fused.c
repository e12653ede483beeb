/* GPU parity of the fused head kernels (mops.h): the C51 combine in one pass against the
 * three kernels it fuses (dueling, log-softmax, expected value) on the GPU, bit for bit, and
 * against the CPU's form within 1e-5 norm-wise; the portfolio projection's element-wise pass
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
    CHECK_OK(vp_mops_cpu.c51_head(g_cpu, B, Z, br, v_min, v_max, v.h.data, adv.h.data, lp.h.data, q.h.data));
    CHECK_OK(vp_mops_cuda.c51_head(g_gpu, B, Z, br, v_min, v_max, v.d.data, adv.d.data, lp.d.data, q.d.data));
    CHECK_OK(vp_mops_cuda.dueling_forward(g_gpu, B, Z, br, v.d.data, adv.d.data, lpu.d.data));
    CHECK_OK(vp_log_softmax(g_gpu, &lpu.d, &lpu.d));
    CHECK_OK(vp_mops_cuda.c51_q(g_gpu, B * A, Z, v_min, v_max, lpu.d.data, qu.d.data));
    same_bits("c51_head logp = unfused", cas, &lp, &lpu);
    same_bits("c51_head q = unfused", cas, &q, &qu);
    twin_check("c51_head logp", cas, &lp, 1e-5);
    twin_check("c51_head q", cas, &q, 1e-5);
    twin_free(&v), twin_free(&adv), twin_free(&lp), twin_free(&q), twin_free(&lpu), twin_free(&qu);
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
    port_case(33, 256, 8, 0);
    port_case(4099, 256, 8, 1);
    port_case(7, 19, 3, 0);
}

int main(void) {
    gpu_setup("test_gpu_heads_fused");
    RUN_TEST(test_kernels);
    gpu_teardown();
    return vpt_finish();
}
