/* `vulpes bench attn`: the attention ops (vp_attention, vp_attention_backward) on the
 * models' shapes: B = 8192 sequences of 8 .. 64 tokens with D 16 .. 64 (the order-book
 * encoder), and L = 192 causal (the Decision Transformer). Each shape is validated first
 * (the first and the last sequence against the CPU op), then timed as `iters` forward calls,
 * and as `iters` forward + backward pairs, each captured in one graph and launched between
 * two syncs (host clock), median of 5 launches. FLOPs: 4 B NH Lq Lk D for the forward
 * (QK^T and PV), 2.5 times that for the backward (FlashAttention's count: five products of
 * that size), causal halved; bytes floor: every tensor read or written once (forward: q, k,
 * v, out, lse; backward: q, k, v, out, lse, dout, dq, dk, dv). Prints a table and one JSON
 * line per shape. The CPU runs the shapes with B divided by 256. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* One timed shape. */
typedef struct attn_shape {
    int64_t batch;
    int heads, len, dim, causal;
    const char* what; /* the model it stands for */
} attn_shape;

static const attn_shape SHAPES[] = {
    {8192, 4, 8, 16, 0, "encoder, 8 tokens"},    {8192, 4, 16, 32, 0, "encoder, 16 tokens"},
    {8192, 4, 32, 32, 0, "encoder, 32 tokens"},  {8192, 4, 64, 16, 0, "encoder, 64 tokens"},
    {8192, 4, 64, 64, 0, "encoder, 64 x D 64"},  {8192, 2, 64, 64, 1, "encoder, causal"},
    {512, 4, 192, 32, 1, "decision transformer"}, {256, 2, 192, 64, 1, "decision transformer, D 64"},
};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

/* Validation tolerances (norm-wise relative, as tests/gpu/test_gpu_attention.c states them). */
#define TOL_FWD 2e-5
#define TOL_BWD 2e-4

/* The nine tensors of a shape in the backend's memory, and host copies of the inputs. */
typedef struct attn_bufs {
    vp_buffer buf[9];   /* q, k, v, out, lse, dout, dq, dk, dv */
    vp_tensor t[9];     /* views: [B * Lq | B * Lk, NH * D]; lse [B * NH * Lq] */
    float* host[9];     /* host copies (inputs filled here, outputs downloaded for validation) */
    vp_attn_desc d;
} attn_bufs;

enum { T_Q = 0, T_K, T_V, T_OUT, T_LSE, T_DOUT, T_DQ, T_DK, T_DV, T_COUNT };

static void bufs_free(vp_backend* b, attn_bufs* a) {
    for (int i = 0; i < T_COUNT; ++i) vp_buffer_free(b, &a->buf[i]), free(a->host[i]);
    memset(a, 0, sizeof *a);
}

/* Allocates the tensors of shape s (batch divided by div) and fills the inputs uniform in [-1, 1). */
static vp_status bufs_init(vp_backend* b, attn_bufs* a, const attn_shape* s, int64_t div) {
    memset(a, 0, sizeof *a);
    const int64_t B = s->batch / div > 0 ? s->batch / div : 1, cols = (int64_t)s->heads * s->dim;
    vp_attn_desc d = {B, s->heads, s->len, s->len, s->dim, 1.0f / sqrtf((float)s->dim), s->causal};
    a->d = d;
    const vp_mem mem = vp_backend_native_mem(b);
    for (int i = 0; i < T_COUNT; ++i) {
        const int64_t rows = B * s->len, n = i == T_LSE ? B * s->heads * s->len : rows * cols;
        a->host[i] = (float*)malloc((size_t)n * sizeof(float));
        VP_REQUIRE(a->host[i] != NULL, VP_ERR_OOM, "bench attn: out of host memory");
        VP_TRY(vp_buffer_alloc(b, mem, (size_t)n * sizeof(float), &a->buf[i]));
        a->t[i] = i == T_LSE ? vp_tensor_1d(a->buf[i].dev, VP_F32, mem, n)
                             : vp_tensor_2d(a->buf[i].dev, VP_F32, mem, rows, cols);
        if (i == T_Q || i == T_K || i == T_V || i == T_DOUT) {
            for (int64_t e = 0; e < n; ++e) a->host[i][e] = 2.0f * vp_rng_uniform(0xa77e, (uint64_t)i, (uint64_t)e) - 1.0f;
            VP_TRY(vp_upload(b, &a->t[i], a->host[i], (size_t)n * sizeof(float)));
        }
    }
    return VP_OK;
}

/* The forward (and, with `bwd`, the backward) once on a's tensors. */
static vp_status run_once(vp_backend* b, attn_bufs* a, int bwd) {
    vp_tensor* t = a->t;
    VP_TRY(vp_attention(b, &a->d, &t[T_Q], &t[T_K], &t[T_V], &t[T_OUT], &t[T_LSE]));
    if (!bwd) return VP_OK;
    return vp_attention_backward(b, &a->d, &t[T_Q], &t[T_K], &t[T_V], &t[T_OUT], &t[T_LSE], &t[T_DOUT], &t[T_DQ],
                                 &t[T_DK], &t[T_DV]);
}

/* ||got - ref|| / ||ref|| over n floats; NaN gives +inf. */
static double rel_err(const float* got, const float* ref, int64_t n) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        if (isnan(got[i]) || isnan(ref[i])) return INFINITY;
        num += ((double)got[i] - ref[i]) * ((double)got[i] - ref[i]);
        den += (double)ref[i] * ref[i];
    }
    return den > 0.0 ? sqrt(num / den) : sqrt(num);
}

/* Runs the forward and backward once, then recomputes sequence `seq` on the CPU backend and
 * raises *ef (out, lse) and *eb (dq, dk, dv) to the relative errors found. */
static vp_status validate_seq(vp_backend* b, vp_backend* cpu, attn_bufs* a, int64_t seq, double* ef, double* eb) {
    const vp_attn_desc* d = &a->d;
    const int64_t cols = (int64_t)d->heads * d->dim, per = d->lq * cols, pl = (int64_t)d->heads * d->lq;
    vp_attn_desc one = *d;
    one.batch = 1;
    float* ref[T_COUNT];
    vp_tensor rt[T_COUNT];
    for (int i = 0; i < T_COUNT; ++i) {
        const int64_t n = i == T_LSE ? pl : per, off = seq * n;
        ref[i] = (i == T_Q || i == T_K || i == T_V || i == T_DOUT) ? a->host[i] + off : (float*)malloc((size_t)n * 4);
        VP_REQUIRE(ref[i] != NULL, VP_ERR_OOM, "bench attn: out of host memory");
        rt[i] = i == T_LSE ? vp_tensor_1d(ref[i], VP_F32, VP_MEM_HOST, n)
                           : vp_tensor_2d(ref[i], VP_F32, VP_MEM_HOST, d->lq, cols);
        /* the backend's outputs of this sequence, downloaded beside the inputs */
        if (!(i == T_Q || i == T_K || i == T_V || i == T_DOUT)) {
            vp_tensor src = vp_tensor_1d((float*)a->buf[i].dev + off, VP_F32, a->buf[i].mem, n);
            VP_TRY(vp_download(b, a->host[i] + off, &src, (size_t)n * 4));
        }
    }
    vp_status s = vp_attention(cpu, &one, &rt[T_Q], &rt[T_K], &rt[T_V], &rt[T_OUT], &rt[T_LSE]);
    if (s == VP_OK)
        s = vp_attention_backward(cpu, &one, &rt[T_Q], &rt[T_K], &rt[T_V], &rt[T_OUT], &rt[T_LSE], &rt[T_DOUT],
                                  &rt[T_DQ], &rt[T_DK], &rt[T_DV]);
    for (int i = 0; i < T_COUNT && s == VP_OK; ++i) {
        if (i == T_Q || i == T_K || i == T_V || i == T_DOUT) continue;
        const int64_t n = i == T_LSE ? pl : per;
        const double e = rel_err(a->host[i] + seq * n, ref[i], n);
        double* to = (i == T_OUT || i == T_LSE) ? ef : eb;
        *to = (e > *to || isnan(e)) ? e : *to;
    }
    for (int i = 0; i < T_COUNT; ++i)
        if (!(i == T_Q || i == T_K || i == T_V || i == T_DOUT)) free(ref[i]);
    return s;
}

typedef struct timing_ctx {
    attn_bufs* a;
    int iters, bwd;
} timing_ctx;

/* `iters` forward calls (or forward + backward pairs), captured once on CUDA. */
static vp_status timing_body(vp_backend* b, void* ctx) {
    timing_ctx* t = (timing_ctx*)ctx;
    for (int i = 0; i < t->iters; ++i) VP_TRY(run_once(b, t->a, t->bwd));
    return VP_OK;
}

/* Forward FLOPs of the shape (4 B NH Lq Lk D, halved when causal). */
static double fwd_flops(const vp_attn_desc* d) {
    return 4.0 * (double)d->batch * d->heads * d->lq * d->lk * d->dim * (d->causal ? 0.5 : 1.0);
}

/* Bytes every tensor read or written once: forward (q, k, v, out, lse) and backward. */
static double bytes_floor(const vp_attn_desc* d, int bwd) {
    const double nq = (double)d->batch * d->lq * d->heads * d->dim, nk = (double)d->batch * d->lk * d->heads * d->dim;
    const double nl = (double)d->batch * d->heads * d->lq;
    const double fwd = 4.0 * (2.0 * nq + 2.0 * nk + nl);
    return bwd ? fwd + 4.0 * (4.0 * nq + 4.0 * nk + nl) : fwd;
}

int vp_bench_attn(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int64_t div = (cuda && !o->quick) ? 1 : 256;
    const int iters = o->iters > 0 ? o->iters : (cuda ? 20 : 1);
    vp_backend* cpu = NULL;
    if (vp_backend_cpu_init(&cpu) != VP_OK) {
        fprintf(stderr, "vulpes bench attn: cannot create the CPU reference: %s\n", vp_last_error());
        return 1;
    }
    printf("vulpes bench attn on %s: %d calls per timed graph launch, median of %d launches%s\n", vp_backend_name(b),
           iters, VP_BENCH_REPS, div > 1 ? ", B divided by 256" : "");
    printf("%-28s %6s %3s %4s %4s %3s %10s %8s %8s %10s %8s %8s %9s\n", "shape", "B", "NH", "L", "D", "cau", "fwd ms",
           "TFLOP/s", "GB/s", "f+b ms", "TFLOP/s", "GB/s", "rel err");
    char json[N_SHAPES][768];
    int nj = 0, rc = 0;
    for (int si = 0; si < N_SHAPES && rc == 0; ++si) {
        attn_bufs a;
        vp_status s = bufs_init(b, &a, &SHAPES[si], div);
        double ef = 0.0, eb = 0.0, ms_f = 0.0, ms_fb = 0.0;
        /* validate first: the first and the last sequence against the CPU op */
        if (s == VP_OK) s = run_once(b, &a, 1);
        if (s == VP_OK) s = validate_seq(b, cpu, &a, 0, &ef, &eb);
        if (s == VP_OK) s = validate_seq(b, cpu, &a, a.d.batch - 1, &ef, &eb);
        if (s == VP_OK && !(ef <= TOL_FWD && eb <= TOL_BWD)) {
            fprintf(stderr, "vulpes bench attn: %s failed validation: rel err forward %.3e (tol %.0e), backward %.3e (tol %.0e)\n",
                    SHAPES[si].what, ef, TOL_FWD, eb, TOL_BWD);
            rc = 1;
        }
        timing_ctx tf = {&a, iters, 0}, tb = {&a, iters, 1};
        if (s == VP_OK && rc == 0) s = vp_bench_time_body(b, timing_body, &tf, 1, iters, &ms_f);
        if (s == VP_OK && rc == 0) s = vp_bench_time_body(b, timing_body, &tb, 1, iters, &ms_fb);
        if (s != VP_OK) {
            fprintf(stderr, "vulpes bench attn: %s\n", vp_last_error());
            rc = 1;
        }
        if (rc == 0) {
            const vp_attn_desc* d = &a.d;
            const double ff = fwd_flops(d), fb = 3.5 * ff, bf = bytes_floor(d, 0), bb = bytes_floor(d, 1);
            const double tff = ff / (ms_f * 1e-3) / 1e12, tfb = fb / (ms_fb * 1e-3) / 1e12;
            const double gf = bf / (ms_f * 1e-3) / 1e9, gb = bb / (ms_fb * 1e-3) / 1e9;
            printf("%-28s %6lld %3d %4d %4d %3d %10.4f %8.3f %8.1f %10.4f %8.3f %8.1f %9.1e\n", SHAPES[si].what,
                   (long long)d->batch, d->heads, d->lq, d->dim, d->causal, ms_f, tff, gf, ms_fb, tfb, gb,
                   ef > eb ? ef : eb);
            snprintf(json[nj++], sizeof json[0],
                     "{\"bench\":\"attn\",\"backend\":\"%s\",\"device\":\"%s\",\"shape\":\"%s\",\"batch\":%lld,"
                     "\"heads\":%d,\"lq\":%d,\"lk\":%d,\"dim\":%d,\"causal\":%d,\"iters\":%d,\"fwd_ms\":%.5f,"
                     "\"fwdbwd_ms\":%.5f,\"fwd_flops\":%.4e,\"fwdbwd_flops\":%.4e,\"fwd_tflops\":%.3f,"
                     "\"fwdbwd_tflops\":%.3f,\"fwd_bytes\":%.4e,\"fwdbwd_bytes\":%.4e,\"fwd_gbs\":%.1f,"
                     "\"fwdbwd_gbs\":%.1f,\"rel_err_fwd\":%.3e,\"rel_err_bwd\":%.3e}",
                     cuda ? "cuda" : "cpu", vp_backend_name(b), SHAPES[si].what, (long long)d->batch, d->heads, d->lq,
                     d->lk, d->dim, d->causal, iters, ms_f, ms_fb, ff, fb, tff, tfb, bf, bb, gf, gb, ef, eb);
        }
        bufs_free(b, &a);
    }
    /* the JSON lines after the table */
    FILE* js = vp_bench_json_open(o);
    for (int i = 0; i < nj; ++i) fprintf(js, "%s\n", json[i]);
    vp_bench_json_close(js);
    vp_backend_free(cpu);
    return rc;
}
