/* Helpers of the GPU test programs: "twin" tensors (one on the CPU backend, one on the
 * CUDA backend, same contents), random fills from Philox, NaN poisoning of outputs, and
 * the norm-wise comparison that prints one table row per check. A program that finds no
 * GPU exits non-zero with a clear message. */
#ifndef VP_GPU_TWIN_H
#define VP_GPU_TWIN_H

#include <stdint.h>
#include <time.h>

#include "vp_test.h"

static vp_backend* g_cpu = NULL; /* the reference */
static vp_backend* g_gpu = NULL; /* under test */
static uint64_t g_seed = 0;      /* Philox seed of this run (VP_TEST_SEED overrides) */
static uint64_t g_stream = 0;    /* next Philox stream: every tensor draws fresh numbers */

/* A tensor on both backends: h (host memory, CPU backend) and d (device, CUDA backend). */
typedef struct twin {
    vp_buffer hb, db; /* the two allocations */
    vp_tensor h, d;   /* views of the same shape and dtype */
    int64_t n;        /* elements */
} twin;

/* Creates both backends; exits with a message and status 2 when there is no GPU. */
static inline void gpu_setup(const char* prog) {
    setvbuf(stdout, NULL, _IOLBF, 0); /* table rows and failure lines interleave in order */
    if (vp_backend_cuda_init(&g_gpu, 0) != VP_OK) {
        fprintf(stderr, "%s: needs a CUDA GPU and found none: %s\n", prog, vp_last_error());
        exit(2);
    }
    if (vp_backend_cpu_init(&g_cpu) != VP_OK) {
        fprintf(stderr, "%s: cannot create the CPU backend: %s\n", prog, vp_last_error());
        exit(2);
    }
    const char* env = getenv("VP_TEST_SEED");
    g_seed = env ? (uint64_t)strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("%s on %s (reference %s), seed %llu (VP_TEST_SEED to repeat)\n", prog, vp_backend_name(g_gpu),
           vp_backend_name(g_cpu), (unsigned long long)g_seed);
    printf("%-24s %-40s %11s %9s  %s\n", "op", "case", "rel err", "tol", "result");
}

/* Releases both backends. */
static inline void gpu_teardown(void) {
    vp_backend_free(g_gpu);
    vp_backend_free(g_cpu);
}

/* Makes a twin of `dtype` and shape (ndim extents). */
static inline void twin_make(twin* t, vp_dtype dtype, int ndim, const int64_t* shape) {
    memset(t, 0, sizeof *t);
    t->n = 1;
    for (int i = 0; i < ndim; ++i) t->n *= shape[i];
    size_t bytes = (size_t)t->n * vp_dtype_size(dtype);
    CHECK_OK(vp_buffer_alloc(g_cpu, VP_MEM_HOST, bytes, &t->hb));
    CHECK_OK(vp_buffer_alloc(g_gpu, VP_MEM_DEVICE, bytes, &t->db));
    t->h.data = t->hb.host;
    t->d.data = t->db.dev;
    t->h.dtype = t->d.dtype = dtype;
    t->h.mem = VP_MEM_HOST;
    t->d.mem = VP_MEM_DEVICE;
    t->h.ndim = t->d.ndim = ndim;
    for (int i = 0; i < ndim; ++i) t->h.shape[i] = t->d.shape[i] = shape[i];
}

/* 1-D and 2-D shorthands. */
static inline void twin_1d(twin* t, vp_dtype dtype, int64_t n) { twin_make(t, dtype, 1, &n); }
static inline void twin_2d(twin* t, vp_dtype dtype, int64_t r, int64_t c) {
    int64_t s[2] = {r, c};
    twin_make(t, dtype, 2, s);
}

/* Frees both sides. */
static inline void twin_free(twin* t) {
    vp_buffer_free(g_cpu, &t->hb);
    vp_buffer_free(g_gpu, &t->db);
}

/* Copies the host side to the device side. */
static inline void twin_push(twin* t) {
    CHECK_OK(vp_upload(g_gpu, &t->d, t->h.data, (size_t)t->n * vp_dtype_size(t->h.dtype)));
}

/* f32 -> bf16 bits, round to nearest even (host side of the test). */
static inline uint16_t twin_bf16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

/* Fresh uniform numbers in [lo, hi) on both sides (f32; bf16 rounded; i32 truncated). */
static inline void twin_rand(twin* t, float lo, float hi) {
    const uint64_t s = g_stream++;
    for (int64_t i = 0; i < t->n; ++i) {
        float u = lo + (hi - lo) * vp_rng_uniform(g_seed, s, (uint64_t)i);
        if (t->h.dtype == VP_F32) ((float*)t->h.data)[i] = u;
        else if (t->h.dtype == VP_BF16) ((uint16_t*)t->h.data)[i] = twin_bf16(u);
        else ((int32_t*)t->h.data)[i] = (int32_t)floorf(u);
    }
    twin_push(t);
}

/* Fills an f32 output with `v` on both sides (NaN: poison, so an element the op does not
 * write shows up as NaN). */
static inline void twin_poison_with(twin* t, float v) {
    CHECK_OK(vp_fill(g_cpu, &t->h, v));
    CHECK_OK(vp_fill(g_gpu, &t->d, v));
}
static inline void twin_poison(twin* t) { twin_poison_with(t, NAN); }

/* Downloads the device side into a new host array (caller frees). */
static inline void* twin_fetch(twin* t) {
    size_t bytes = (size_t)t->n * vp_dtype_size(t->d.dtype);
    void* out = malloc(bytes);
    CHECK(out != NULL, "out of host memory");
    if (out) CHECK_OK(vp_download(g_gpu, out, &t->d, bytes));
    return out;
}

/* Prints a row of the table. */
static inline void twin_row(const char* op, const char* cas, double err, double tol, int ok) {
    printf("%-24s %-40s %11.3e %9.1e  %s\n", op, cas, err, tol, ok ? "ok" : "FAIL");
}

/* Compares an f32 twin: ||gpu - cpu|| / ||cpu|| <= tol (absolute when ||cpu|| is 0). A
 * NaN on the GPU side (an unwritten, poisoned element or a real NaN) fails unless
 * `nan_ok` and the CPU has NaN at the same place; a NaN the GPU lacks fails too. */
static inline double twin_check_ex(const char* op, const char* cas, twin* t, double tol, int nan_ok) {
    float* g = (float*)twin_fetch(t);
    const float* c = (const float*)t->h.data;
    if (!g) return INFINITY;
    double num = 0.0, den = 0.0;
    int64_t bad_nan = 0, first = -1;
    for (int64_t i = 0; i < t->n; ++i) {
        int gn = isnan(g[i]), cn = isnan(c[i]);
        if (gn || cn) {
            if (!(nan_ok && gn && cn)) {
                if (first < 0) first = i;
                bad_nan++;
            }
            continue;
        }
        double d = (double)g[i] - (double)c[i];
        num += d * d;
        den += (double)c[i] * (double)c[i];
    }
    double err = den > 0.0 ? sqrt(num / den) : sqrt(num);
    int ok = bad_nan == 0 && err <= tol && !isnan(err);
    twin_row(op, cas, err, tol, ok);
    CHECK(bad_nan == 0, "%s %s: %lld NaN mismatches (unwritten or wrong), first at %lld: gpu %g cpu %g", op, cas,
          (long long)bad_nan, (long long)first, first >= 0 ? g[first] : 0.0, first >= 0 ? c[first] : 0.0);
    CHECK(err <= tol, "%s %s: relative error %.3e over tolerance %.1e", op, cas, err, tol);
    free(g);
    return err;
}

/* Compares an f32 twin against an absolute scale instead of ||cpu||: ||gpu - cpu|| /
 * scale <= tol, no NaN. For outputs that are a difference of much larger terms, where
 * ||cpu|| itself is rounding noise and `scale` is the size of the terms. */
static inline double twin_check_scaled(const char* op, const char* cas, twin* t, double tol, double scale) {
    float* g = (float*)twin_fetch(t);
    const float* c = (const float*)t->h.data;
    if (!g) return INFINITY;
    double num = 0.0;
    int64_t nan = 0;
    for (int64_t i = 0; i < t->n; ++i) {
        if (isnan(g[i]) || isnan(c[i])) nan++;
        else num += ((double)g[i] - c[i]) * ((double)g[i] - c[i]);
    }
    const double err = sqrt(num) / scale;
    twin_row(op, cas, err, tol, nan == 0 && err <= tol);
    CHECK(nan == 0, "%s %s: %lld NaN (unwritten or wrong)", op, cas, (long long)nan);
    CHECK(err <= tol, "%s %s: error %.3e relative to the term scale, over tolerance %.1e", op, cas, err, tol);
    free(g);
    return err;
}

/* The usual comparison: no NaN anywhere. */
static inline double twin_check(const char* op, const char* cas, twin* t, double tol) {
    return twin_check_ex(op, cas, t, tol, 0);
}

/* Bit-for-bit comparison of any dtype. */
static inline void twin_check_bits(const char* op, const char* cas, twin* t) {
    void* g = twin_fetch(t);
    if (!g) return;
    size_t bytes = (size_t)t->n * vp_dtype_size(t->d.dtype);
    int same = memcmp(g, t->h.data, bytes) == 0;
    twin_row(op, cas, same ? 0.0 : 1.0, 0.0, same);
    CHECK(same, "%s %s: GPU and CPU bytes differ", op, cas);
    free(g);
}

#endif /* VP_GPU_TWIN_H */
