/* The rows of exp and of the sigmoid (and SiLU) on the CPU (cpu_exp.h): the scalar sequence, and the same
 * operations 16 lanes at a time on AVX-512 or 8 on AVX2 (each intrinsic the scalar statement's
 * IEEE operation, in the same order, so the bits agree lane for lane). */
#include "backend/cpu/cpu_exp.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define VP_EXP_X86 1
#endif

static int g_force_scalar, g_force_avx2;

void vp_cpu_exp_force_scalar(int on) { g_force_scalar = on != 0; }

void vp_cpu_exp_force_avx2(int on) { g_force_avx2 = on != 0; }

#ifdef VP_EXP_X86
/* vp_cpu_expf lane by lane. */
__attribute__((target("avx512f"))) static inline __m512 exp16(__m512 x) {
    const __m512 t = _mm512_add_ps(_mm512_mul_ps(x, _mm512_set1_ps(VP_EXP_LOG2E)), _mm512_set1_ps(0.5f));
    const __m512 n = _mm512_roundscale_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(VP_EXP_C1)));
    r = _mm512_sub_ps(r, _mm512_mul_ps(n, _mm512_set1_ps(VP_EXP_C2)));
    const __m512 z = _mm512_mul_ps(r, r);
    __m512 p = _mm512_mul_ps(_mm512_set1_ps(VP_EXP_P0), r);
    p = _mm512_mul_ps(_mm512_add_ps(p, _mm512_set1_ps(VP_EXP_P1)), r);
    p = _mm512_mul_ps(_mm512_add_ps(p, _mm512_set1_ps(VP_EXP_P2)), r);
    p = _mm512_mul_ps(_mm512_add_ps(p, _mm512_set1_ps(VP_EXP_P3)), r);
    p = _mm512_mul_ps(_mm512_add_ps(p, _mm512_set1_ps(VP_EXP_P4)), r);
    p = _mm512_add_ps(p, _mm512_set1_ps(VP_EXP_P5));
    __m512 y = _mm512_add_ps(_mm512_mul_ps(p, z), r);
    y = _mm512_add_ps(y, _mm512_set1_ps(1.0f));
    // 2^n from the exponent bits: n + 100 where n < -126 (then 2^-100 after), n - 1 where n is
    // 128 (then 2 after), held in [-150, 128] (the lanes outside are replaced below)
    const __m512 nc = _mm512_min_ps(_mm512_max_ps(n, _mm512_set1_ps(-150.0f)), _mm512_set1_ps(128.0f));
    const __mmask16 sub = _mm512_cmp_ps_mask(n, _mm512_set1_ps(-126.0f), _CMP_LT_OQ);
    const __mmask16 sup = _mm512_cmp_ps_mask(n, _mm512_set1_ps(127.0f), _CMP_GT_OQ);
    __m512i a = _mm512_cvttps_epi32(nc);
    a = _mm512_mask_add_epi32(a, sub, a, _mm512_set1_epi32(100));
    a = _mm512_mask_sub_epi32(a, sup, a, _mm512_set1_epi32(1));
    const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(a, _mm512_set1_epi32(127)), 23);
    __m512 out = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
    out = _mm512_mask_mul_ps(out, sub, out, _mm512_set1_ps(0x1p-100f));
    out = _mm512_mask_mul_ps(out, sup, out, _mm512_set1_ps(2.0f));
    out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_set1_ps(128.0f), _CMP_GT_OQ), out,
                               _mm512_set1_ps(INFINITY));
    out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_set1_ps(-150.0f), _CMP_LT_OQ), out, _mm512_setzero_ps());
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), out, x);
}

__attribute__((target("avx512f"))) static int64_t exp_rows_avx512(const float* x, float sub, float* out, int64_t n) {
    const __m512 s = _mm512_set1_ps(sub);
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(out + j, exp16(_mm512_sub_ps(_mm512_loadu_ps(x + j), s)));
    if (j < n) {
        const __mmask16 mk = (__mmask16)((1u << (unsigned)(n - j)) - 1u);
        _mm512_mask_storeu_ps(out + j, mk, exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(mk, x + j), s)));
    }
    return n;
}

/* vp_cpu_sigmoid lane by lane (times x when silu): e = exp(-|x|) is the scalar form's
 * exp(-x) for x >= 0 and exp(x) below, the same input either way. */
__attribute__((target("avx512f"))) static inline __m512 sigmoid16(__m512 x, int silu) {
    const __m512 nabs = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN)));
    const __m512 e = exp16(nabs);
    const __m512 d = _mm512_add_ps(_mm512_set1_ps(1.0f), e);
    const __mmask16 pos = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_GE_OQ);
    const __m512 sg = _mm512_div_ps(_mm512_mask_blend_ps(pos, e, _mm512_set1_ps(1.0f)), d);
    return silu ? _mm512_mul_ps(x, sg) : sg;
}

__attribute__((target("avx512f"))) static int64_t sigmoid_rows_avx512(const float* x, float* y, int64_t n,
                                                                          int silu) {
    int64_t j = 0;
    for (; j + 16 <= n; j += 16) _mm512_storeu_ps(y + j, sigmoid16(_mm512_loadu_ps(x + j), silu));
    if (j < n) {
        const __mmask16 mk = (__mmask16)((1u << (unsigned)(n - j)) - 1u);
        _mm512_mask_storeu_ps(y + j, mk, sigmoid16(_mm512_maskz_loadu_ps(mk, x + j), silu));
    }
    return n;
}

/* vp_cpu_expf lane by lane, 8 lanes (AVX2 without FMA, so no product is fused): exp16's
 * operations in the same order, the masked steps as blends. */
__attribute__((target("avx2"))) static inline __m256 exp8(__m256 x) {
    const __m256 t = _mm256_add_ps(_mm256_mul_ps(x, _mm256_set1_ps(VP_EXP_LOG2E)), _mm256_set1_ps(0.5f));
    const __m256 n = _mm256_round_ps(t, _MM_FROUND_TO_NEG_INF | _MM_FROUND_NO_EXC);
    __m256 r = _mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(VP_EXP_C1)));
    r = _mm256_sub_ps(r, _mm256_mul_ps(n, _mm256_set1_ps(VP_EXP_C2)));
    const __m256 z = _mm256_mul_ps(r, r);
    __m256 p = _mm256_mul_ps(_mm256_set1_ps(VP_EXP_P0), r);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(VP_EXP_P1)), r);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(VP_EXP_P2)), r);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(VP_EXP_P3)), r);
    p = _mm256_mul_ps(_mm256_add_ps(p, _mm256_set1_ps(VP_EXP_P4)), r);
    p = _mm256_add_ps(p, _mm256_set1_ps(VP_EXP_P5));
    __m256 y = _mm256_add_ps(_mm256_mul_ps(p, z), r);
    y = _mm256_add_ps(y, _mm256_set1_ps(1.0f));
    const __m256 nc = _mm256_min_ps(_mm256_max_ps(n, _mm256_set1_ps(-150.0f)), _mm256_set1_ps(128.0f));
    const __m256 sub = _mm256_cmp_ps(n, _mm256_set1_ps(-126.0f), _CMP_LT_OQ);
    const __m256 sup = _mm256_cmp_ps(n, _mm256_set1_ps(127.0f), _CMP_GT_OQ);
    __m256i a = _mm256_cvttps_epi32(nc);
    a = _mm256_add_epi32(a, _mm256_and_si256(_mm256_castps_si256(sub), _mm256_set1_epi32(100)));
    a = _mm256_sub_epi32(a, _mm256_and_si256(_mm256_castps_si256(sup), _mm256_set1_epi32(1)));
    const __m256i e = _mm256_slli_epi32(_mm256_add_epi32(a, _mm256_set1_epi32(127)), 23);
    __m256 out = _mm256_mul_ps(y, _mm256_castsi256_ps(e));
    out = _mm256_blendv_ps(out, _mm256_mul_ps(out, _mm256_set1_ps(0x1p-100f)), sub);
    out = _mm256_blendv_ps(out, _mm256_mul_ps(out, _mm256_set1_ps(2.0f)), sup);
    out = _mm256_blendv_ps(out, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(n, _mm256_set1_ps(128.0f), _CMP_GT_OQ));
    out = _mm256_blendv_ps(out, _mm256_setzero_ps(), _mm256_cmp_ps(n, _mm256_set1_ps(-150.0f), _CMP_LT_OQ));
    return _mm256_blendv_ps(out, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* Whole groups of 8; the caller's scalar loop takes the tail. */
__attribute__((target("avx2"))) static int64_t exp_rows_avx2(const float* x, float sub, float* out, int64_t n) {
    const __m256 s = _mm256_set1_ps(sub);
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(out + j, exp8(_mm256_sub_ps(_mm256_loadu_ps(x + j), s)));
    return j;
}

/* sigmoid16's steps on 8 lanes. */
__attribute__((target("avx2"))) static inline __m256 sigmoid8(__m256 x, int silu) {
    const __m256 nabs = _mm256_castsi256_ps(_mm256_or_si256(_mm256_castps_si256(x), _mm256_set1_epi32(INT32_MIN)));
    const __m256 e = exp8(nabs);
    const __m256 d = _mm256_add_ps(_mm256_set1_ps(1.0f), e);
    const __m256 pos = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_GE_OQ);
    const __m256 sg = _mm256_div_ps(_mm256_blendv_ps(e, _mm256_set1_ps(1.0f), pos), d);
    return silu ? _mm256_mul_ps(x, sg) : sg;
}

__attribute__((target("avx2"))) static int64_t sigmoid_rows_avx2(const float* x, float* y, int64_t n, int silu) {
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) _mm256_storeu_ps(y + j, sigmoid8(_mm256_loadu_ps(x + j), silu));
    return j;
}

/* 1 where the AVX-512 forms may run. */
static int use_avx512(void) {
    static int have = -1;
    if (have < 0) have = __builtin_cpu_supports("avx512f") ? 1 : 0;
    return have && !g_force_scalar && !g_force_avx2;
}

/* 1 where the AVX2 forms may run (the AVX-512 ones are taken first). */
static int use_avx2(void) {
    static int have = -1;
    if (have < 0) have = __builtin_cpu_supports("avx2") ? 1 : 0;
    return have && !g_force_scalar;
}
#endif

void vp_cpu_exp_rows(const float* x, float sub, float* out, int64_t n) {
    int64_t j = 0;
#ifdef VP_EXP_X86
    if (use_avx512()) j = exp_rows_avx512(x, sub, out, n);
    else if (use_avx2()) j = exp_rows_avx2(x, sub, out, n);
#endif
    for (; j < n; ++j) out[j] = vp_cpu_expf(x[j] - sub);
}

void vp_cpu_sigmoid_rows(const float* x, float* y, int64_t n, int silu) {
    int64_t j = 0;
#ifdef VP_EXP_X86
    if (use_avx512()) j = sigmoid_rows_avx512(x, y, n, silu);
    else if (use_avx2()) j = sigmoid_rows_avx2(x, y, n, silu);
#endif
    for (; j < n; ++j) y[j] = silu ? x[j] * vp_cpu_sigmoid(x[j]) : vp_cpu_sigmoid(x[j]);
}
