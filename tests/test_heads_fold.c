/* Tests of the folded C51 output layers on the CPU (mops.h: c51_fold, c51_fold_q;
 * heads_fold_math.h):
 * - vp_tf32 against hand-worked values: to nearest at 10 mantissa bits, ties away from zero,
 *   NaN and infinities kept;
 * - the fold's layout: every weight at vp_c51f_at, the value tile as given, an action's tile its
 *   layer less the branch mean (each rounded to TF32), the biases after the tiles, padding zero;
 * - c51_fold_q against a double reference of the same operands (the inputs rounded to TF32,
 *   the folded weights) within 1e-5 norm-wise, and against the layer-by-layer heads (value and
 *   advantage layers, dueling, log-softmax and expected value by c51_head, all FP32) within the
 *   TF32 rounding's 2e-3 of the support's width: the fold is the dueling combine's algebra;
 * - bad arguments are refused naming the kernel. */
#include <math.h>

#include "model/heads_fold_math.h"
#include "test_model_util.h"

/* n floats in [lo, hi) from a fixed LCG. */
static void fill(float* x, int64_t n, float lo, float hi, uint32_t* s) {
    for (int64_t i = 0; i < n; ++i) {
        *s = *s * 1664525u + 1013904223u;
        x[i] = lo + (hi - lo) * (float)((*s >> 8) * (1.0 / 16777216.0));
    }
}

static float from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void test_tf32(void) {
    // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: away from zero, up
    CHECK(vp_tf32(1.0f + 0x1p-11f) == 1.0f + 0x1p-10f, "tf32: the tie above 1 rounds up");
    CHECK(vp_tf32(-(1.0f + 0x1p-11f)) == -(1.0f + 0x1p-10f), "tf32: the tie below -1 rounds away from zero");
    CHECK(vp_tf32(1.0f + 0x1p-12f) == 1.0f, "tf32: under half an ulp rounds down");
    CHECK(vp_tf32(1.0f + 0x1p-11f + 0x1p-20f) == 1.0f + 0x1p-10f, "tf32: over half an ulp rounds up");
    CHECK(vp_tf32(1.0f + 0x1p-10f) == 1.0f + 0x1p-10f, "tf32: a TF32 value stays");
    CHECK(vp_tf32(3.0f) == 3.0f && vp_tf32(0.0f) == 0.0f, "tf32: small integers stay");
    // 1.999 (0x3ffff7cf) rounds to 2
    CHECK(vp_tf32(from_bits(0x3ffff7cfu)) == 2.0f, "tf32: the carry into the exponent");
    CHECK(isnan(vp_tf32(NAN)) && vp_tf32(INFINITY) == INFINITY && vp_tf32(-INFINITY) == -INFINITY,
          "tf32: NaN and infinities kept");
    uint32_t u;
    const float r = vp_tf32(0.1f);
    memcpy(&u, &r, sizeof u);
    CHECK((u & 0x1fffu) == 0 && fabsf(r - 0.1f) <= 0x1p-11f * 0.1f, "tf32: 0.1 -> %a", (double)r);
}

/* One shape's layers, folded, and Q three ways. */
static void check_case(vp_backend* be, int64_t B, int HH, int Z, const vp_branch_map* br, int64_t ld) {
    char cas[64];
    int A = 0;
    for (int i = 0; i < br->n; ++i) A += br->size[i];
    snprintf(cas, sizeof cas, "B%lld HH%d Z%d A%d ld%lld", (long long)B, HH, Z, A, (long long)ld);
    const int ZN = (int)vp_c51f_zn(Z);
    const int64_t tile = vp_c51f_tile(Z, HH), nf = vp_c51f_floats(Z, HH, A);
    uint32_t s = (uint32_t)(B * 31 + HH * 7 + Z + A);
    float *v2w = malloc(sizeof(float) * Z * HH), *v2b = malloc(sizeof(float) * Z);
    float *a2w = malloc(sizeof(float) * A * Z * HH), *a2b = malloc(sizeof(float) * A * Z);
    float *v1 = malloc(sizeof(float) * B * ld), *ah = malloc(sizeof(float) * B * ld);
    float *fold = malloc(sizeof(float) * nf), *q = malloc(sizeof(float) * B * A);
    float *v = malloc(sizeof(float) * B * Z), *adv = malloc(sizeof(float) * B * A * Z);
    float *logp = malloc(sizeof(float) * B * A * Z), *ql = malloc(sizeof(float) * B * A);
    double *qd = malloc(sizeof(double) * B * A), *l = malloc(sizeof(double) * Z);
    if (!v2w || !v2b || !a2w || !a2b || !v1 || !ah || !fold || !q || !v || !adv || !logp || !ql || !qd || !l) {
        CHECK(0, "%s: out of memory", cas);
        return;
    }
    fill(v2w, (int64_t)Z * HH, -0.3f, 0.3f, &s), fill(v2b, Z, -1.0f, 1.0f, &s);
    fill(a2w, (int64_t)A * Z * HH, -0.3f, 0.3f, &s), fill(a2b, (int64_t)A * Z, -1.0f, 1.0f, &s);
    fill(v1, B * ld, 0.0f, 1.0f, &s), fill(ah, B * ld, 0.0f, 1.0f, &s);
    for (int64_t i = 0; i < B * ld; ++i)
        if (i % ld >= HH) v1[i] = ah[i] = NAN; // the rows' padding is not read
    for (int64_t i = 0; i < nf; ++i) fold[i] = NAN;
    CHECK_OK(vp_mops_cpu.c51_fold(be, HH, Z, br, v2w, v2b, a2w, a2b, fold));
    // the layout, weight by weight
    int bad = 0;
    const float* bias = fold + (int64_t)(1 + A) * tile;
    for (int n = 0; n < ZN; ++n)
        for (int k = 0; k < HH; ++k) {
            const float want = n < Z ? vp_tf32(v2w[(int64_t)n * HH + k]) : 0.0f;
            bad += memcmp(&fold[vp_c51f_at(Z, n, k)], &want, 4) != 0;
        }
    int a0 = 0;
    for (int b = 0; b < br->n; ++b) {
        const int na = br->size[b];
        for (int j = 0; j < na; ++j)
            for (int n = 0; n < ZN; ++n) {
                for (int k = 0; k < HH; ++k) {
                    float sum = 0.0f;
                    for (int i = 0; i < na; ++i) sum += a2w[((int64_t)(a0 + i) * Z + (n < Z ? n : 0)) * HH + k];
                    const float want =
                        n < Z ? vp_tf32(a2w[((int64_t)(a0 + j) * Z + n) * HH + k] - sum / (float)na) : 0.0f;
                    bad += memcmp(&fold[(int64_t)(1 + a0 + j) * tile + vp_c51f_at(Z, n, k)], &want, 4) != 0;
                }
                float sb = 0.0f;
                for (int i = 0; i < na; ++i) sb += a2b[(int64_t)(a0 + i) * Z + (n < Z ? n : 0)];
                const float want = n < Z ? a2b[(int64_t)(a0 + j) * Z + n] - sb / (float)na : 0.0f;
                bad += memcmp(&bias[(int64_t)(1 + a0 + j) * ZN + n], &want, 4) != 0;
            }
        a0 += na;
    }
    for (int n = 0; n < ZN; ++n) bad += bias[n] != (n < Z ? v2b[n] : 0.0f);
    CHECK(bad == 0, "c51_fold %s: %d floats out of place", cas, bad);
    for (int64_t i = 0; i < nf; ++i) bad += isnan(fold[i]);
    CHECK(bad == 0, "c51_fold %s: %d floats not written", cas, bad);
    CHECK_OK(vp_mops_cpu.c51_fold_q(be, B, HH, Z, br, -10.0f, 10.0f, v1, ah, ld, fold, q));
    // the double reference of the same operands
    const double dz = 20.0 / (Z - 1);
    for (int64_t b = 0; b < B; ++b)
        for (int a = 0; a < A; ++a) {
            double mx = -INFINITY;
            for (int n = 0; n < Z; ++n) {
                double acc = (double)bias[n] + (double)bias[(int64_t)(1 + a) * ZN + n];
                for (int k = 0; k < HH; ++k)
                    acc += (double)vp_tf32(v1[b * ld + k]) * fold[vp_c51f_at(Z, n, k)] +
                           (double)vp_tf32(ah[b * ld + k]) * fold[(int64_t)(1 + a) * tile + vp_c51f_at(Z, n, k)];
                l[n] = acc;
                mx = acc > mx ? acc : mx;
            }
            double se = 0.0, st = 0.0;
            for (int n = 0; n < Z; ++n) se += exp(l[n] - mx), st += exp(l[n] - mx) * (-10.0 + n * dz);
            qd[b * A + a] = st / se;
        }
    double num = 0.0, den = 0.0, worst = 0.0;
    for (int64_t i = 0; i < B * A; ++i) num += (q[i] - qd[i]) * (q[i] - qd[i]), den += qd[i] * qd[i];
    const double err = sqrt(num / (den > 0 ? den : 1));
    CHECK(err <= 1e-5, "c51_fold_q %s: %.3g from the double reference of its operands (1e-5)", cas, err);
    // the layer-by-layer heads in FP32
    for (int64_t b = 0; b < B; ++b) {
        for (int n = 0; n < Z; ++n) {
            float acc = v2b[n];
            for (int k = 0; k < HH; ++k) acc += v1[b * ld + k] * v2w[(int64_t)n * HH + k];
            v[b * Z + n] = acc;
        }
        for (int r = 0; r < A * Z; ++r) {
            float acc = a2b[r];
            for (int k = 0; k < HH; ++k) acc += ah[b * ld + k] * a2w[(int64_t)r * HH + k];
            adv[b * A * Z + r] = acc;
        }
    }
    CHECK_OK(vp_mops_cpu.c51_head(be, B, Z, br, -10.0f, 10.0f, v, Z, adv, (int64_t)A * Z, logp, ql));
    for (int64_t i = 0; i < B * A; ++i) {
        const double d = fabs((double)q[i] - ql[i]);
        worst = d > worst ? d : worst;
    }
    CHECK(worst <= 2e-3 * 20.0, "c51_fold_q %s: %.3g from the layer-by-layer Q (TF32: 0.04)", cas, worst);
    printf("  c51_fold_q %-28s %.2e from its double reference, %.2e from the FP32 heads\n", cas, err, worst);
    free(v2w), free(v2b), free(a2w), free(a2b), free(v1), free(ah), free(fold), free(q);
    free(v), free(adv), free(logp), free(ql), free(qd), free(l);
}

static void test_cases(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    const vp_branch_map def = {4, {3, 4, 3, 3}}, two = {2, {6, 1}}, one = {1, {2}};
    check_case(be, 37, 128, 51, &def, 128);
    check_case(be, 5, 128, 56, &two, 136);
    check_case(be, 3, 16, 7, &one, 16);
    check_case(be, 2, 8, 51, &def, 9);
    vp_backend_free(be);
}

static void test_bad_args(void) {
    vp_backend* be = NULL;
    CHECK_OK(vp_backend_cpu_init(&be));
    float x[64] = {0}, out[4096];
    const vp_branch_map def = {4, {3, 4, 3, 3}}, empty = {0, {0}};
    CHECK_STATUS(vp_mops_cpu.c51_fold(be, 12, 51, &def, x, x, x, x, out), VP_ERR_INVALID_ARG, "c51_fold");
    CHECK_STATUS(vp_mops_cpu.c51_fold(be, 8, 5, &empty, x, x, x, x, out), VP_ERR_INVALID_ARG, "c51_fold");
    CHECK_STATUS(vp_mops_cpu.c51_fold_q(be, 1, 8, 5, &def, -1.0f, 1.0f, x, x, 4, out, out), VP_ERR_INVALID_ARG,
              "c51_fold_q");
    CHECK_STATUS(vp_mops_cpu.c51_fold_q(be, 1, 8, 1, &def, -1.0f, 1.0f, x, x, 8, out, out), VP_ERR_INVALID_ARG,
              "c51_fold_q");
    vp_backend_free(be);
}

int main(void) {
    RUN_TEST(test_tf32);
    RUN_TEST(test_cases);
    RUN_TEST(test_bad_args);
    return vpt_finish();
}
