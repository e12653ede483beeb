/* The CPU's exp (src/backend/cpu/cpu_exp.h): within 1 ulp of exp over the normal range; the
 * edges (NaN, infinities, subnormal results, the overflow); and the row
 * forms (AVX-512 and AVX2 where the CPU has them) equal to the scalar form bit for bit, at every
 * length of a tail, in place and out of place, the SiLUs and the element-wise op's sigmoid
 * included. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/cpu_exp.h"
#include "vp_test.h"

/* Distance in ulps between two finite floats of the same sign. */
static double ulps(float got, double want) {
    const float w = (float)want;
    const double ulp = (double)nextafterf(fabsf(w), INFINITY) - (double)fabsf(w);
    return fabs((double)got - want) / ulp;
}

static int same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* The same bits, or both NaN (a product of two NaNs keeps either one: the compiler orders
 * the operands of x * sigmoid(x) as it likes). */
static int same_value(float a, float b) { return (isnan(a) && isnan(b)) || same_bits(a, b); }

static void test_accuracy(void) {
    double worst = 0.0, at = 0.0;
    // a dense sweep over the range whose results are normal floats
    for (int i = 0; i <= 2000000; ++i) {
        const float x = -87.0f + 175.7f * (float)i / 2000000.0f;
        if (x > 88.72f) break;
        const double u = ulps(vp_cpu_expf(x), exp((double)x));
        if (u > worst) worst = u, at = x;
    }
    CHECK(worst <= 1.0, "vp_cpu_expf: %.3f ulp at x = %.9g (allowed 1)", worst, at);
    CHECK(vp_cpu_expf(0.0f) == 1.0f && vp_cpu_expf(-0.0f) == 1.0f, "exp(0) = %.9g", (double)vp_cpu_expf(0.0f));
    CHECK(vp_cpu_expf(1.0f) == expf(1.0f) || ulps(vp_cpu_expf(1.0f), exp(1.0)) <= 1.0, "exp(1) = %.9g",
          (double)vp_cpu_expf(1.0f));
}

static void test_edges(void) {
    CHECK(isnan(vp_cpu_expf(NAN)), "exp(NaN) is not NaN");
    CHECK(vp_cpu_expf(-INFINITY) == 0.0f && !signbit(vp_cpu_expf(-INFINITY)), "exp(-inf) = %g",
          (double)vp_cpu_expf(-INFINITY));
    CHECK(isinf(vp_cpu_expf(INFINITY)) && vp_cpu_expf(INFINITY) > 0, "exp(inf) = %g", (double)vp_cpu_expf(INFINITY));
    CHECK(isinf(vp_cpu_expf(100.0f)), "exp(100) = %g, expected +inf", (double)vp_cpu_expf(100.0f));
    CHECK(isinf(vp_cpu_expf(88.73f)) && isfinite(vp_cpu_expf(88.72f)), "exp(88.72) = %g, exp(88.73) = %g",
          (double)vp_cpu_expf(88.72f), (double)vp_cpu_expf(88.73f));
    CHECK(vp_cpu_expf(-110.0f) == 0.0f, "exp(-110) = %g, expected 0", (double)vp_cpu_expf(-110.0f));
    // the subnormal range: within one subnormal step of exp (one rounding)
    double worst = 0.0, at = 0.0;
    for (int i = 0; i <= 200000; ++i) {
        const float x = -103.0f + 16.0f * (float)i / 200000.0f;
        const double want = exp((double)x), err = fabs((double)vp_cpu_expf(x) - want);
        const double tol = 0x1p-149 + 0x1p-23 * want;
        if (err / tol > worst) worst = err / tol, at = x;
    }
    CHECK(worst <= 1.0, "vp_cpu_expf under the normal range: %.3f of the bound at x = %.9g", worst, at);
    CHECK(isfinite(vp_cpu_expf(88.0f)) && vp_cpu_expf(88.0f) > 1e38f, "exp(88) = %g", (double)vp_cpu_expf(88.0f));
    CHECK(vp_cpu_expf(-87.0f) > 0.0f, "exp(-87) = %g", (double)vp_cpu_expf(-87.0f));
    CHECK(vp_cpu_sigmoid(0.0f) == 0.5f, "sigmoid(0) = %.9g", (double)vp_cpu_sigmoid(0.0f));
    CHECK(vp_cpu_sigmoid(200.0f) == 1.0f && vp_cpu_sigmoid(-200.0f) == 0.0f, "sigmoid(+-200) = %g %g",
          (double)vp_cpu_sigmoid(200.0f), (double)vp_cpu_sigmoid(-200.0f));
}

/* Inputs: a wide random spread, the specials, and values either side of every exponent step. */
static float* inputs(int64_t n) {
    float* x = (float*)malloc(sizeof(float) * (size_t)n);
    uint64_t s = 0x9e3779b97f4a7c15ull;
    for (int64_t i = 0; i < n; ++i) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        const float u = (float)(s >> 40) / (float)(1 << 24);
        x[i] = -120.0f + 240.0f * u;
    }
    const float specials[] = {0.0f, -0.0f, NAN, -NAN, INFINITY, -INFINITY, 88.3762626f, 88.38f, 88.72f, 88.73f, -87.3365f, -87.34f,
                              0.34657359f, -0.34657359f, 1e-30f, -1e-30f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0] && (int64_t)i < n; ++i) x[i * 7 % n] = specials[i];
    for (int64_t i = 0; i < n && i < 260; ++i) x[n - 1 - i] = ((float)i - 130.0f) * 0.69314718f; /* n ln 2 */
    return x;
}

static void rows_equal_scalar(void) {
    const int64_t N = 4099;
    float* x = inputs(N);
    float* out = (float*)malloc(sizeof(float) * (size_t)N);
    float* inplace = (float*)malloc(sizeof(float) * (size_t)N);
    const float subs[] = {0.0f, 1.5f, -3.25f};
    for (size_t si = 0; si < sizeof subs / sizeof subs[0]; ++si) {
        for (int64_t len = 1; len <= 40; ++len) {
            vp_cpu_exp_rows(x + 3, subs[si], out, len);
            for (int64_t j = 0; j < len; ++j)
                CHECK(same_bits(out[j], vp_cpu_expf(x[3 + j] - subs[si])), "exp rows len %lld elem %lld: %a vs %a",
                      (long long)len, (long long)j, (double)out[j], (double)vp_cpu_expf(x[3 + j] - subs[si]));
        }
        vp_cpu_exp_rows(x, subs[si], out, N);
        memcpy(inplace, x, sizeof(float) * (size_t)N);
        vp_cpu_exp_rows(inplace, subs[si], inplace, N);
        int bad = 0;
        for (int64_t j = 0; j < N; ++j)
            bad += !same_bits(out[j], vp_cpu_expf(x[j] - subs[si])) || !same_bits(inplace[j], out[j]);
        CHECK(bad == 0, "exp rows (sub %g): %d of %lld differ from the scalar form", (double)subs[si], bad, (long long)N);
    }
    // SiLU rows against x * sigmoid(x)
    for (int64_t len = 1; len <= N; len += len < 40 ? 1 : 1000) {
        memcpy(inplace, x, sizeof(float) * (size_t)len);
        vp_cpu_silu_rows(inplace, len);
        int bad = 0;
        for (int64_t j = 0; j < len; ++j) bad += !same_value(inplace[j], x[j] * vp_cpu_sigmoid(x[j]));
        CHECK(bad == 0, "silu rows len %lld: %d differ from the scalar form", (long long)len, bad);
    }
    // the element-wise op's sigmoid and SiLU rows against their scalar form, out of and in place
    for (int silu = 0; silu <= 1; ++silu)
        for (int64_t len = 1; len <= N; len += len < 40 ? 1 : 1000) {
            vp_cpu_sigmoid_rows(x, out, len, silu);
            memcpy(inplace, x, sizeof(float) * (size_t)len);
            vp_cpu_sigmoid_rows(inplace, inplace, len, silu);
            int bad = 0;
            for (int64_t j = 0; j < len; ++j) {
                const float want = silu ? x[j] * vp_cpu_sigmoid(x[j]) : vp_cpu_sigmoid(x[j]);
                bad += !same_value(out[j], want) || !same_value(inplace[j], want);
            }
            CHECK(bad == 0, "%s op rows len %lld: %d differ from the scalar form", silu ? "silu" : "sigmoid",
                  (long long)len, bad);
        }
    // the forced scalar rows give the same
    vp_cpu_exp_force_scalar(1);
    vp_cpu_exp_rows(x, 0.5f, inplace, N);
    vp_cpu_exp_force_scalar(0);
    vp_cpu_exp_rows(x, 0.5f, out, N);
    CHECK(memcmp(out, inplace, sizeof(float) * (size_t)N) == 0, "exp rows: the scalar and the wide forms differ");
    free(x), free(out), free(inplace);
}

/* The widest row forms, then the AVX2 ones (the same as the widest where the CPU has no AVX-512). */
static void test_rows_equal_scalar(void) {
    rows_equal_scalar();
    vp_cpu_exp_force_avx2(1);
    rows_equal_scalar();
    vp_cpu_exp_force_avx2(0);
}

int main(void) {
    RUN_TEST(test_accuracy);
    RUN_TEST(test_edges);
    RUN_TEST(test_rows_equal_scalar);
    return vpt_finish();
}
