/* exp(x) on the CPU as one fixed sequence of IEEE single-precision operations: Cody-Waite
 * range reduction x = n ln 2 + r (n = floor(x log2 e + 1/2), ln 2 in two parts so n C1 is
 * exact), a degree-5 polynomial in r (Cephes' expf coefficients), then the scaling by 2^n
 * through the exponent bits. No fused multiply-add and no library call: the scalar form
 * (vp_cpu_expf) and the row forms (vp_cpu_exp_rows: 16 lanes on AVX-512, 8 on AVX2) give the
 * same bits, on any machine, with any libm. Within 1 ulp of exp over the normal range
 * (tests/test_cpu_exp.c).
 * Edges: NaN stays the same NaN; n = 128 scales in two steps, 2^127 then 2 (so exp overflows
 * where the float range ends, x about 88.72); n > 128 gives +inf; -150 <= n < -126 scales in two
 * steps, 2^(n + 100) then 2^-100, so a subnormal result is rounded once; n < -150 (x below
 * about -104.3) gives +0; -inf gives 0, +inf gives +inf. Every operation is its own
 * statement, so no compiler fuses a multiply and an add. */
#ifndef VULPES_CPU_EXP_H
#define VULPES_CPU_EXP_H

#include <math.h>
#include <stdint.h>
#include <string.h>

#define VP_EXP_LOG2E 1.44269504088896341f
#define VP_EXP_C1 0.693359375f     /* ln 2, high part: 9 significant bits, so n C1 is exact */
#define VP_EXP_C2 -2.12194440e-4f  /* ln 2 - C1 */
#define VP_EXP_P0 1.9875691500e-4f /* the polynomial, highest degree first */
#define VP_EXP_P1 1.3981999507e-3f
#define VP_EXP_P2 8.3334519073e-3f
#define VP_EXP_P3 4.1665795894e-2f
#define VP_EXP_P4 1.6666665459e-1f
#define VP_EXP_P5 5.0000001201e-1f

/* exp(x), the sequence above. */
static inline float vp_cpu_expf(float x) {
    if (x != x) return x;
    float t = x * VP_EXP_LOG2E;
    t = t + 0.5f;
    const float n = floorf(t);
    if (n > 128.0f) return INFINITY;
    if (n < -150.0f) return 0.0f;
    float nc = n * VP_EXP_C1;
    float r = x - nc;
    nc = n * VP_EXP_C2;
    r = r - nc;
    const float z = r * r;
    float p = VP_EXP_P0 * r;
    p = p + VP_EXP_P1;
    p = p * r;
    p = p + VP_EXP_P2;
    p = p * r;
    p = p + VP_EXP_P3;
    p = p * r;
    p = p + VP_EXP_P4;
    p = p * r;
    p = p + VP_EXP_P5;
    float y = p * z;
    y = y + r;
    y = y + 1.0f;
    const int sub = n < -126.0f, sup = n > 127.0f;
    const int32_t a = (int32_t)n + (sub ? 100 : 0) - (sup ? 1 : 0);
    const uint32_t bits = (uint32_t)(a + 127) << 23;
    float s;
    memcpy(&s, &bits, sizeof s);
    const float out = y * s;
    return sub ? out * 0x1p-100f : sup ? out * 2.0f : out;
}

/* 1 / (1 + exp(-x)) as 1 / (1 + e) for x >= 0 and e / (1 + e) below, with e = vp_cpu_expf(-|x|)
 * (neither side overflows). */
static inline float vp_cpu_sigmoid(float x) {
    if (x >= 0.0f) {
        const float e = vp_cpu_expf(-x);
        const float d = 1.0f + e;
        return 1.0f / d;
    }
    const float e = vp_cpu_expf(x);
    const float d = 1.0f + e;
    return e / d;
}

/* y[j] = vp_cpu_sigmoid(x[j]), times x[j] when silu (y may be x), 16 at a time where the CPU
 * has AVX-512, 8 where it has AVX2: the same bits as the scalar form (a NaN gives a NaN, its
 * sign either). */
void vp_cpu_sigmoid_rows(const float* x, float* y, int64_t n, int silu);

/* x[j] = x[j] * vp_cpu_sigmoid(x[j]) for j < n: SiLU in place, by vp_cpu_sigmoid_rows. */
static inline void vp_cpu_silu_rows(float* x, int64_t n) { vp_cpu_sigmoid_rows(x, x, n, 1); }

/* out[j] = vp_cpu_expf(x[j] - sub) for j < n (out may be x), 16 at a time where the CPU has
 * AVX-512, 8 where it has AVX2: the same bits as the scalar form. */
void vp_cpu_exp_rows(const float* x, float sub, float* out, int64_t n);

/* Tests only: 1 makes the row forms run the scalar form. */
void vp_cpu_exp_force_scalar(int on);

/* on 1: the row forms go no wider than AVX2 (8 lanes), so a test reaches them on a CPU with
 * AVX-512 too; 0 (the default): the widest the CPU has. */
void vp_cpu_exp_force_avx2(int on);

#endif /* VULPES_CPU_EXP_H */
