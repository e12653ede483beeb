/* One-row products of the forward one bar at a time (vp_model_row_gemm): y [n] = x [k] Wt
 * [k, n] with every element accumulated as the CPU's row-exact GEMM kernel accumulates it
 * (src/backend/cpu/cpu_gemm.c): acc = fmaf(x[p], Wt[p, j], acc) for p = 0 .. k-1 from 0, one
 * correctly rounded fused multiply-add per term, then y = acc + beta y and the epilogue (+ bias,
 * relu) in the kernel's order. So the bits are those of vp_gemm's for the same row; what
 * differs is the schedule: one row's accumulators across 128 columns stay in registers while
 * the weights stream through once, where the general kernel's tile of 4 rows would run its
 * edge path for a single row. */
#include <math.h>
#include <string.h>

#include "model/model_internal.h"

#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define VP_ROW_X86 1
/* Rows of weights the AVX-512 and AVX2 paths prefetch ahead of the one they multiply: the
 * weights (1.8 MB for the default network) stream from L3 every decision, and the prefetch
 * changes no arithmetic. */
#define ROW_AHEAD 8
#endif

/* The widest product the term list holds (k of every one-row product of the live forward is
 * far below: F, H, HH). Wider ones run every term through cols_portable_all. */
#define ROW_MAX_K 4096

/* Columns [j0, j1) of y = x Wt by plain fmaf, into acc (the reference arithmetic), over the
 * terms ps[0 .. np) (ascending p). */
static void cols_portable(const int32_t* ps, int64_t np, int64_t n, const float* x, const float* W, int64_t j0,
                          int64_t j1, float* acc) {
    for (int64_t j = j0; j < j1; ++j) acc[j] = 0.0f;
    for (int64_t i = 0; i < np; ++i) {
        const int64_t p = ps[i];
        const float xp = x[p];
        const float* w = W + p * n;
        for (int64_t j = j0; j < j1; ++j) acc[j] = fmaf(xp, w[j], acc[j]);
    }
}

/* Every column of y = x Wt by plain fmaf over every term (k over ROW_MAX_K). */
static void cols_portable_all(int64_t k, int64_t n, const float* x, const float* W, float* acc) {
    for (int64_t j = 0; j < n; ++j) acc[j] = 0.0f;
    for (int64_t p = 0; p < k; ++p)
        for (int64_t j = 0; j < n; ++j) acc[j] = fmaf(x[p], W[p * n + j], acc[j]);
}

#ifdef VP_ROW_X86
/* Blocks of 128 columns in eight 16-lane accumulators, then blocks of 16, then the last
 * columns in masked lanes; returns n. */
__attribute__((target("avx512f,fma"))) static int64_t cols_avx512(const int32_t* ps, int64_t np, int64_t n,
                                                                   const float* x, const float* W, float* acc) {
    int64_t j0 = 0;
    for (; j0 + 128 <= n; j0 += 128) {
        __m512 a0 = _mm512_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int64_t i = 0; i < np; ++i) {
            const int64_t p = ps[i];
            const __m512 xp = _mm512_set1_ps(x[p]);
            const float* w = W + p * n + j0;
            if (i + ROW_AHEAD < np) {
                const char* f = (const char*)(W + (int64_t)ps[i + ROW_AHEAD] * n + j0);
                for (int q = 0; q < 512; q += 64) _mm_prefetch(f + q, _MM_HINT_T0);
            }
            a0 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w), a0);
            a1 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 16), a1);
            a2 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 32), a2);
            a3 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 48), a3);
            a4 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 64), a4);
            a5 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 80), a5);
            a6 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 96), a6);
            a7 = _mm512_fmadd_ps(xp, _mm512_loadu_ps(w + 112), a7);
        }
        _mm512_storeu_ps(acc + j0, a0), _mm512_storeu_ps(acc + j0 + 16, a1);
        _mm512_storeu_ps(acc + j0 + 32, a2), _mm512_storeu_ps(acc + j0 + 48, a3);
        _mm512_storeu_ps(acc + j0 + 64, a4), _mm512_storeu_ps(acc + j0 + 80, a5);
        _mm512_storeu_ps(acc + j0 + 96, a6), _mm512_storeu_ps(acc + j0 + 112, a7);
    }
    for (; j0 + 16 <= n; j0 += 16) {
        __m512 a0 = _mm512_setzero_ps();
        for (int64_t i = 0; i < np; ++i)
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[ps[i]]), _mm512_loadu_ps(W + (int64_t)ps[i] * n + j0), a0);
        _mm512_storeu_ps(acc + j0, a0);
    }
    if (j0 < n) {
        // the last columns in masked lanes (the lanes past n load nothing and are not stored)
        const __mmask16 mk = (__mmask16)((1u << (unsigned)(n - j0)) - 1u);
        __m512 a0 = _mm512_setzero_ps();
        for (int64_t i = 0; i < np; ++i)
            a0 = _mm512_fmadd_ps(_mm512_set1_ps(x[ps[i]]), _mm512_maskz_loadu_ps(mk, W + (int64_t)ps[i] * n + j0), a0);
        _mm512_mask_storeu_ps(acc + j0, mk, a0);
        j0 = n;
    }
    return j0;
}

/* The term list (vp_model_row_gemm) 16 inputs at a time: the lanes whose bits are nonzero but
 * for the sign, their indices packed in order; returns the count. */
__attribute__((target("avx512f"))) static int64_t terms_avx512(const float* x, int64_t k, int32_t* ps) {
    int64_t np = 0, p = 0;
    const __m512i step = _mm512_set1_epi32(16), mag = _mm512_set1_epi32(0x7fffffff);
    __m512i idx = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (; p + 16 <= k; p += 16, idx = _mm512_add_epi32(idx, step)) {
        const __mmask16 nz = _mm512_test_epi32_mask(_mm512_loadu_si512((const void*)(x + p)), mag);
        _mm512_mask_compressstoreu_epi32(ps + np, nz, idx);
        np += __builtin_popcount((unsigned)nz);
    }
    for (; p < k; ++p) {
        uint32_t bits;
        memcpy(&bits, x + p, sizeof bits);
        ps[np] = (int32_t)p;
        np += (bits << 1) != 0u;
    }
    return np;
}

/* The same in 8-lane accumulators (64 columns a block, then 8). */
__attribute__((target("avx2,fma"))) static int64_t cols_avx2(const int32_t* ps, int64_t np, int64_t n,
                                                              const float* x, const float* W, float* acc) {
    int64_t j0 = 0;
    for (; j0 + 64 <= n; j0 += 64) {
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
        for (int64_t i = 0; i < np; ++i) {
            const int64_t p = ps[i];
            const __m256 xp = _mm256_set1_ps(x[p]);
            const float* w = W + p * n + j0;
            if (i + ROW_AHEAD < np) {
                const char* f = (const char*)(W + (int64_t)ps[i + ROW_AHEAD] * n + j0);
                for (int q = 0; q < 256; q += 64) _mm_prefetch(f + q, _MM_HINT_T0);
            }
            a0 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w), a0);
            a1 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 8), a1);
            a2 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 16), a2);
            a3 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 24), a3);
            a4 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 32), a4);
            a5 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 40), a5);
            a6 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 48), a6);
            a7 = _mm256_fmadd_ps(xp, _mm256_loadu_ps(w + 56), a7);
        }
        _mm256_storeu_ps(acc + j0, a0), _mm256_storeu_ps(acc + j0 + 8, a1);
        _mm256_storeu_ps(acc + j0 + 16, a2), _mm256_storeu_ps(acc + j0 + 24, a3);
        _mm256_storeu_ps(acc + j0 + 32, a4), _mm256_storeu_ps(acc + j0 + 40, a5);
        _mm256_storeu_ps(acc + j0 + 48, a6), _mm256_storeu_ps(acc + j0 + 56, a7);
    }
    for (; j0 + 8 <= n; j0 += 8) {
        __m256 a0 = _mm256_setzero_ps();
        for (int64_t i = 0; i < np; ++i)
            a0 = _mm256_fmadd_ps(_mm256_set1_ps(x[ps[i]]), _mm256_loadu_ps(W + (int64_t)ps[i] * n + j0), a0);
        _mm256_storeu_ps(acc + j0, a0);
    }
    return j0;
}
#endif

/* The widest instruction set the one-sample forward may use (vp_model_inc_limit_isa). */
static int g_isa = VP_MODEL_INC_ISA_BEST;

void vp_model_inc_limit_isa(int isa) { g_isa = isa; }

int vp_model_inc_isa(void) {
#ifdef VP_ROW_X86
    if (g_isa >= VP_MODEL_INC_ISA_BEST && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma"))
        return VP_MODEL_INC_ISA_BEST;
    if (g_isa >= VP_MODEL_INC_ISA_AVX2 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return VP_MODEL_INC_ISA_AVX2;
#endif
    return VP_MODEL_INC_ISA_PORTABLE;
}

void vp_model_row_gemm(int64_t k, int64_t n, const float* x, const float* Wt, const float* bias, vp_epilogue epi,
                       float beta, float* y, float* acc, int skip_zeros) {
    // the terms to accumulate, ascending: every p, or (skip_zeros) those with x[p] != 0. A zero
    // term is exact nothing with finite weights: fmaf(0, w, acc) is acc, and acc, started at +0,
    // never holds -0, so leaving it out changes no bit (and skips its weight row's bytes)
    int32_t ps[ROW_MAX_K];
    int64_t np = 0;
    if (k > ROW_MAX_K) {
        cols_portable_all(k, n, x, Wt, acc);
    } else {
        // without a branch: half of a ReLU output's entries are zero, in no pattern a
        // predictor learns. x[p] != 0 is its bits but the sign being nonzero (true for NaN,
        // false for -0, as the float comparison), an integer test the compiler keeps branchless
        int64_t done = 0;
#ifdef VP_ROW_X86
        const int isa = vp_model_inc_isa();
        if (skip_zeros && isa == VP_MODEL_INC_ISA_BEST) np = terms_avx512(x, k, ps);
        else
#endif
        {
            const uint32_t keep_all = skip_zeros ? 0u : 1u;
            for (int64_t p = 0; p < k; ++p) {
                uint32_t bits;
                memcpy(&bits, x + p, sizeof bits);
                ps[np] = (int32_t)p;
                np += (int64_t)(keep_all | (uint32_t)((bits << 1) != 0u));
            }
        }
#ifdef VP_ROW_X86
        if (isa == VP_MODEL_INC_ISA_BEST) done = cols_avx512(ps, np, n, x, Wt, acc);
        else if (isa == VP_MODEL_INC_ISA_AVX2) done = cols_avx2(ps, np, n, x, Wt, acc);
#endif
        if (done < n) cols_portable(ps, np, n, x, Wt, done, n, acc);
    }
    // y = acc + beta y (y not read when beta is 0), then + bias and relu, as the kernel's epilogue;
    // the cases outside the loops so that each loop vectorises (the same expressions per element)
    if (beta != 0.0f)
        for (int64_t j = 0; j < n; ++j) acc[j] = acc[j] + beta * y[j];
    if (epi == VP_EPI_NONE) {
        memcpy(y, acc, sizeof(float) * (size_t)n);
    } else if (epi == VP_EPI_BIAS_RELU) {
        for (int64_t j = 0; j < n; ++j) {
            const float v = acc[j] + bias[j];
            y[j] = v < 0.0f ? 0.0f : v;
        }
    } else {
        for (int64_t j = 0; j < n; ++j) y[j] = acc[j] + bias[j];
    }
}
