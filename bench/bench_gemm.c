/* `vulpes bench gemm`: the learner's GEMM shapes at batch 8192 in the three layouts of a
 * linear layer (forward y = x W^T, backward dX = dY W and dW = dY^T X), TF32 and BF16
 * on CUDA, FP32 on the CPU. Each configuration is validated first (64 sampled entries of
 * C against double dot products on the host), warmed up, then timed as `iters` GEMMs
 * captured in one graph, launched between two syncs (host clock), median of 5 launches.
 * Prints a table and one JSON line per configuration. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

/* A learner GEMM: rows m (batch x what a layer sees per sample), in features k, out n. */
typedef struct gemm_shape {
    int64_t m, k, n;
    const char* what; /* where the learner runs it */
} gemm_shape;

static const gemm_shape SHAPES[] = {
    {65536, 256, 548, "advantage/value heads, 8 bars"},
    {524288, 256, 128, "IQN head, 64 taus"},
    {524288, 64, 256, "IQN cosine embedding, 64 taus"},
    {196608, 256, 256, "trunk, 8 bars x 3 nets"},
    {8192, 256, 256, "portfolio / out projection"},
};
#define N_SHAPES (int)(sizeof SHAPES / sizeof SHAPES[0])

typedef enum layout { LAYOUT_FWD = 0, LAYOUT_DX, LAYOUT_DW, LAYOUT_COUNT } layout;
static const char* LAYOUT_NAME[LAYOUT_COUNT] = {"fwd", "dX", "dW"};

#define BENCH_SAMPLES 64 /* entries of C checked per configuration */

/* Device operands at the largest size any shape needs, with host copies for validation. */
typedef struct gemm_bufs {
    vp_buffer xb, yb, wb, cb, x16b, y16b, w16b;
    float* hx; /* [m, k] host copy of X */
    float* hy; /* [m, n] host copy of dY */
    float* hw; /* [n, k] host copy of W */
} gemm_bufs;

/* One timed configuration: descriptor, operand views, host copies of A and B. */
typedef struct gemm_run {
    vp_gemm_desc d;
    vp_tensor A, B, C;
    const float *ha, *hb;
} gemm_run;

/* f32 -> bf16 -> f32, round to nearest even (what the device sees of a bf16 operand). */
static double bf16_round(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
    float r;
    memcpy(&r, &u, sizeof r);
    return (double)r;
}

/* Fills n host floats with uniform [-1, 1) from Philox (four per draw), uploads them. */
static vp_status fill_random(vp_backend* b, vp_buffer* buf, float* host, int64_t n, uint64_t stream) {
    for (int64_t i = 0; i < n; i += 4) {
        vp_u32x4 r = vp_rng_draw(0x5eed, stream, (uint64_t)(i / 4));
        for (int j = 0; j < 4 && i + j < n; ++j) host[i + j] = 2.0f * vp_u32_to_unit(r.v[j]) - 1.0f;
    }
    vp_tensor t = vp_tensor_1d(buf->dev, VP_F32, buf->mem, n);
    return vp_upload(b, &t, host, (size_t)n * sizeof(float));
}

static void bufs_free(vp_backend* b, gemm_bufs* g) {
    vp_buffer* all[7] = {&g->xb, &g->yb, &g->wb, &g->cb, &g->x16b, &g->y16b, &g->w16b};
    for (int i = 0; i < 7; ++i) vp_buffer_free(b, all[i]);
    free(g->hx), free(g->hy), free(g->hw);
    memset(g, 0, sizeof *g);
}

/* Allocates and fills the operands for shapes scaled by 1/div in m. */
static vp_status bufs_init(vp_backend* b, gemm_bufs* g, int64_t div, int bf16) {
    int64_t mx = 0, my = 0, mw = 0, mc = 0;
    for (int s = 0; s < N_SHAPES; ++s) {
        const int64_t m = SHAPES[s].m / div, k = SHAPES[s].k, n = SHAPES[s].n;
        mx = m * k > mx ? m * k : mx;
        my = m * n > my ? m * n : my;
        mw = n * k > mw ? n * k : mw;
        const int64_t c = m * n > m * k ? (m * n > n * k ? m * n : n * k) : (m * k > n * k ? m * k : n * k);
        mc = c > mc ? c : mc;
    }
    const vp_mem mem = vp_backend_native_mem(b);
    memset(g, 0, sizeof *g);
    g->hx = (float*)malloc((size_t)mx * 4), g->hy = (float*)malloc((size_t)my * 4), g->hw = (float*)malloc((size_t)mw * 4);
    VP_REQUIRE(g->hx && g->hy && g->hw, VP_ERR_OOM, "bench gemm: out of host memory");
    VP_TRY(vp_buffer_alloc(b, mem, (size_t)mx * 4, &g->xb));
    VP_TRY(vp_buffer_alloc(b, mem, (size_t)my * 4, &g->yb));
    VP_TRY(vp_buffer_alloc(b, mem, (size_t)mw * 4, &g->wb));
    VP_TRY(vp_buffer_alloc(b, mem, (size_t)mc * 4, &g->cb));
    VP_TRY(fill_random(b, &g->xb, g->hx, mx, 1));
    VP_TRY(fill_random(b, &g->yb, g->hy, my, 2));
    VP_TRY(fill_random(b, &g->wb, g->hw, mw, 3));
    if (!bf16) return VP_OK;
    /* bf16 copies of the three operands, converted on the backend */
    vp_buffer* src[3] = {&g->xb, &g->yb, &g->wb};
    vp_buffer* dst[3] = {&g->x16b, &g->y16b, &g->w16b};
    const int64_t cnt[3] = {mx, my, mw};
    for (int i = 0; i < 3; ++i) {
        VP_TRY(vp_buffer_alloc(b, mem, (size_t)cnt[i] * 2, dst[i]));
        vp_tensor s = vp_tensor_1d(src[i]->dev, VP_F32, mem, cnt[i]);
        vp_tensor t = vp_tensor_1d(dst[i]->dev, VP_BF16, mem, cnt[i]);
        VP_TRY(vp_convert(b, &s, &t));
    }
    return VP_OK;
}

/* The descriptor and operands of shape s in layout l at precision p. */
static gemm_run run_make(const gemm_bufs* g, const gemm_shape* s, int64_t div, layout l, vp_precision p) {
    const int64_t m = s->m / div, k = s->k, n = s->n;
    const int bf = p == VP_PREC_BF16;
    const vp_dtype dt = bf ? VP_BF16 : VP_F32;
    const vp_mem mem = g->xb.mem;
    void* x = bf ? g->x16b.dev : g->xb.dev;
    void* y = bf ? g->y16b.dev : g->yb.dev;
    void* w = bf ? g->w16b.dev : g->wb.dev;
    gemm_run r;
    memset(&r, 0, sizeof r);
    if (l == LAYOUT_FWD) { /* y [m, n] = x [m, k] W [n, k]^T */
        r.d = vp_gemm_plain(0, 1, m, n, k);
        r.A = vp_tensor_1d(x, dt, mem, m * k), r.B = vp_tensor_1d(w, dt, mem, n * k);
        r.ha = g->hx, r.hb = g->hw;
    } else if (l == LAYOUT_DX) { /* dX [m, k] = dY [m, n] W [n, k] */
        r.d = vp_gemm_plain(0, 0, m, k, n);
        r.A = vp_tensor_1d(y, dt, mem, m * n), r.B = vp_tensor_1d(w, dt, mem, n * k);
        r.ha = g->hy, r.hb = g->hw;
    } else { /* dW [n, k] = dY [m, n]^T X [m, k] */
        r.d = vp_gemm_plain(1, 0, n, k, m);
        r.A = vp_tensor_1d(y, dt, mem, m * n), r.B = vp_tensor_1d(x, dt, mem, m * k);
        r.ha = g->hy, r.hb = g->hx;
    }
    r.d.precision = p;
    r.C = vp_tensor_1d(g->cb.dev, VP_F32, mem, r.d.m * r.d.n);
    return r;
}

/* Norm-wise relative error of BENCH_SAMPLES entries of C against double dot products. */
static vp_status validate(vp_backend* b, const gemm_run* r, double* err) {
    const vp_gemm_desc* d = &r->d;
    const int bf = d->precision == VP_PREC_BF16;
    double num = 0.0, den = 0.0;
    for (int s = 0; s < BENCH_SAMPLES; ++s) {
        vp_u32x4 u = vp_rng_draw(0xc0ffee, 9, (uint64_t)s);
        const int64_t i = (int64_t)(((uint64_t)u.v[0] << 32 | u.v[1]) % (uint64_t)d->m);
        const int64_t j = (int64_t)(((uint64_t)u.v[2] << 32 | u.v[3]) % (uint64_t)d->n);
        double ref = 0.0;
        for (int64_t p = 0; p < d->k; ++p) {
            const float a = d->trans_a ? r->ha[p * d->m + i] : r->ha[i * d->k + p];
            const float bv = d->trans_b ? r->hb[j * d->k + p] : r->hb[p * d->n + j];
            ref += bf ? bf16_round(a) * bf16_round(bv) : (double)a * (double)bv;
        }
        float c = NAN;
        vp_tensor one = vp_tensor_1d((float*)r->C.data + i * d->n + j, VP_F32, r->C.mem, 1);
        VP_TRY(vp_download(b, &c, &one, sizeof c));
        num += ((double)c - ref) * ((double)c - ref);
        den += ref * ref;
    }
    *err = den > 0.0 ? sqrt(num / den) : sqrt(num);
    return VP_OK;
}

typedef struct timing_ctx {
    const gemm_run* r;
    int iters;
} timing_ctx;

/* `iters` GEMMs back to back (captured once on CUDA, replayed per launch). */
static vp_status timing_body(vp_backend* b, void* ctx) {
    const timing_ctx* t = (const timing_ctx*)ctx;
    for (int i = 0; i < t->iters; ++i) VP_TRY(vp_gemm(b, &t->r->d, &t->r->A, &t->r->B, NULL, (vp_tensor*)&t->r->C));
    return VP_OK;
}

/* Milliseconds per GEMM: the median over the timed launches of a graph of `iters` GEMMs. */
static vp_status time_run(vp_backend* b, const gemm_run* r, int iters, double* ms) {
    timing_ctx t = {r, iters};
    return vp_bench_time_body(b, timing_body, &t, 1, iters, ms);
}

int vp_bench_gemm(vp_backend* b, const vp_bench_opts* o) {
    const int cuda = vp_backend_get_kind(b) == VP_BACKEND_CUDA;
    const int64_t div = (cuda && !o->quick) ? 1 : 64;
    const int iters = o->iters > 0 ? o->iters : (cuda ? 20 : 2);
    const vp_precision precs[2] = {cuda ? VP_PREC_TF32 : VP_PREC_FP32, VP_PREC_BF16};
    const int nprec = cuda ? 2 : 1;
    static const char* pname[VP_PREC_COUNT] = {"fp32", "tf32", "bf16"};
    static const double ptol[VP_PREC_COUNT] = {1e-5, 1e-3, 1e-2};
    gemm_bufs g;
    vp_status s = bufs_init(b, &g, div, cuda);
    if (s != VP_OK) {
        fprintf(stderr, "vulpes bench gemm: setting up the operands failed: %s\n", vp_last_error());
        bufs_free(b, &g);
        return 1;
    }
    char json[N_SHAPES * 2 * LAYOUT_COUNT][640];
    int nj = 0;
    printf("vulpes bench gemm on %s: %d GEMMs per timed graph launch, median of %d launches%s\n", vp_backend_name(b),
           iters, VP_BENCH_REPS, div > 1 ? ", m divided by 64" : "");
    printf("%-24s %-6s %-24s %-5s %10s %9s %9s\n", "learner shape (m k n)", "layout", "GEMM (M N K)", "prec", "ms",
           "TFLOP/s", "rel err");
    int rc = 0;
    for (int si = 0; si < N_SHAPES && rc == 0; ++si) {
        const gemm_shape* sh = &SHAPES[si];
        for (int pi = 0; pi < nprec && rc == 0; ++pi) {
            for (int l = 0; l < LAYOUT_COUNT && rc == 0; ++l) {
                const vp_precision p = precs[pi];
                gemm_run r = run_make(&g, sh, div, (layout)l, p);
                double err = 0.0, ms = 0.0;
                /* validate first (this also makes the plan), then time */
                s = vp_gemm(b, &r.d, &r.A, &r.B, NULL, &r.C);
                if (s == VP_OK) s = validate(b, &r, &err);
                if (s == VP_OK && !(err <= ptol[p])) {
                    fprintf(stderr, "vulpes bench gemm: %s %s m=%lld n=%lld k=%lld failed validation: rel err %.3e > %.0e\n",
                            LAYOUT_NAME[l], pname[p], (long long)r.d.m, (long long)r.d.n, (long long)r.d.k, err, ptol[p]);
                    rc = 1;
                    break;
                }
                if (s == VP_OK) s = time_run(b, &r, iters, &ms);
                if (s != VP_OK) {
                    fprintf(stderr, "vulpes bench gemm: %s\n", vp_last_error());
                    rc = 1;
                    break;
                }
                const double tflops = 2.0 * (double)r.d.m * (double)r.d.n * (double)r.d.k / (ms * 1e-3) / 1e12;
                char lsh[32], gsh[32];
                snprintf(lsh, sizeof lsh, "%lld %lld %lld", (long long)(sh->m / div), (long long)sh->k, (long long)sh->n);
                snprintf(gsh, sizeof gsh, "%lld %lld %lld", (long long)r.d.m, (long long)r.d.n, (long long)r.d.k);
                printf("%-24s %-6s %-24s %-5s %10.4f %9.3f %9.1e\n", lsh, LAYOUT_NAME[l], gsh, pname[p], ms, tflops, err);
                snprintf(json[nj++], sizeof json[0],
                        "{\"bench\":\"gemm\",\"backend\":\"%s\",\"device\":\"%s\",\"shape\":\"%s\",\"layout\":\"%s\","
                        "\"m\":%lld,\"n\":%lld,\"k\":%lld,\"trans_a\":%d,\"trans_b\":%d,\"precision\":\"%s\","
                        "\"iters\":%d,\"ms\":%.5f,\"tflops\":%.3f,\"rel_err\":%.3e}",
                        cuda ? "cuda" : "cpu", vp_backend_name(b), sh->what, LAYOUT_NAME[l], (long long)r.d.m,
                        (long long)r.d.n, (long long)r.d.k, r.d.trans_a, r.d.trans_b, pname[p], iters, ms, tflops, err);
            }
        }
    }
    /* the JSON lines after the table */
    FILE* js = vp_bench_json_open(o);
    for (int i = 0; i < nj; ++i) fprintf(js, "%s\n", json[i]);
    vp_bench_json_close(js);
    bufs_free(b, &g);
    return rc;
}
