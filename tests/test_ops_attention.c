/* The attention ops of the CPU backend: values and lse against the double-precision
 * reference of ops_ref.h on several shapes (Lq != Lk, 1 and 4 heads, D 8/16/64, causal on
 * and off, logits large enough to overflow an unshifted exp), a closed form (zero keys),
 * the causal mask's independence of later keys (exact), the backward against central
 * finite differences of the double forward, and the argument errors. */
#include "ops_ref.h"
#include "vp_test.h"

static vp_backend* g_b;

/* Stated tolerances. The op computes in double and rounds each output once, so out
 * (a convex mix of values in [-1, 1]) is within float rounding of the reference: 1e-6
 * absolute; lse within 1e-6 relative plus 1e-6 absolute. */
#define OUT_ATOL 1e-6
#define LSE_ATOL 1e-6
#define LSE_RTOL 1e-6
/* Gradients: ||backend - fd|| / ||fd||; the backward reads the float out and lse, whose
 * rounding (~1e-7 relative) bounds its error well below this. */
#define GRAD_TOL 1e-5
/* Central-difference step, relative to max(|x|, 1). */
#define FD_H 1e-6

/* The float tensors of one attention problem (host memory) and their double copies. */
typedef struct attn_buf {
    vp_attn_desc d;
    int64_t nq, nk, nl;     /* elements of q (= out), of k (= v), of lse */
    float *q, *k, *v, *out, *lse;
    double *qd, *kd, *vd;   /* double copies of q, k, v */
} attn_buf;

static vp_attn_desc attn_desc(int64_t batch, int heads, int lq, int lk, int dim, int causal) {
    vp_attn_desc d = {batch, heads, lq, lk, dim, 1.0f / sqrtf((float)dim), causal};
    return d;
}

/* Inputs uniform in [-span, span) from seed; out and lse NaN until written. */
static void attn_buf_init(attn_buf* a, vp_attn_desc d, uint64_t seed, float span) {
    a->d = d;
    a->nq = d.batch * d.lq * d.heads * d.dim;
    a->nk = d.batch * d.lk * d.heads * d.dim;
    a->nl = d.batch * d.heads * d.lq;
    a->q = ref_nan_buffer(a->nq);
    a->k = ref_nan_buffer(a->nk);
    a->v = ref_nan_buffer(a->nk);
    a->out = ref_nan_buffer(a->nq);
    a->lse = ref_nan_buffer(a->nl);
    ref_fill_uniform(a->q, a->nq, seed, 1, -span, span);
    ref_fill_uniform(a->k, a->nk, seed, 2, -span, span);
    ref_fill_uniform(a->v, a->nk, seed, 3, -1.0f, 1.0f);
    a->qd = ref_dbuf(a->nq);
    a->kd = ref_dbuf(a->nk);
    a->vd = ref_dbuf(a->nk);
    ref_to_double(a->q, a->nq, a->qd);
    ref_to_double(a->k, a->nk, a->kd);
    ref_to_double(a->v, a->nk, a->vd);
}

static void attn_buf_free(attn_buf* a) {
    free(a->q), free(a->k), free(a->v), free(a->out), free(a->lse);
    free(a->qd), free(a->kd), free(a->vd);
}

/* Runs vp_attention on a's inputs into a->out, a->lse. */
static vp_status attn_run(attn_buf* a) {
    const vp_attn_desc* d = &a->d;
    const int64_t cols = (int64_t)d->heads * d->dim;
    vp_tensor tq = vp_tensor_3d(a->q, VP_F32, VP_MEM_HOST, d->batch, d->lq, cols);
    vp_tensor tk = vp_tensor_3d(a->k, VP_F32, VP_MEM_HOST, d->batch, d->lk, cols);
    vp_tensor tv = vp_tensor_3d(a->v, VP_F32, VP_MEM_HOST, d->batch, d->lk, cols);
    vp_tensor to = vp_tensor_3d(a->out, VP_F32, VP_MEM_HOST, d->batch, d->lq, cols);
    vp_tensor tl = vp_tensor_3d(a->lse, VP_F32, VP_MEM_HOST, d->batch, d->heads, d->lq);
    return vp_attention(g_b, d, &tq, &tk, &tv, &to, &tl);
}

/* ---- values ----------------------------------------------------------------------------- */

/* batch, heads, lq, lk, dim, causal */
static const int CASES[][6] = {
    {2, 1, 5, 7, 8, 0},   {3, 4, 9, 4, 16, 0},  {2, 4, 12, 12, 16, 1}, {1, 1, 1, 1, 8, 1},
    {2, 1, 17, 33, 64, 0}, {1, 4, 20, 20, 64, 1}, {2, 4, 3, 1, 8, 0},   {1, 1, 64, 64, 64, 1},
    {1, 2, 256, 256, 8, 1}, {1, 1, 40, 256, 128, 0},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* out and lse of a against the double reference; `what` names the case in failures. */
static void check_against_ref(attn_buf* a, const char* what, int c) {
    double *ro = ref_dbuf(a->nq), *rl = ref_dbuf(a->nl);
    ref_attention(&a->d, a->qd, a->kd, a->vd, ro, rl);
    const int64_t bo = ref_first_bad(a->out, ro, a->nq, OUT_ATOL, 0.0);
    const int64_t bl = ref_first_bad(a->lse, rl, a->nl, LSE_ATOL, LSE_RTOL);
    CHECK(bo < 0, "%s case %d: out[%lld] = %.9g, reference %.9g", what, c, (long long)bo,
          bo < 0 ? 0.0 : (double)a->out[bo], bo < 0 ? 0.0 : ro[bo]);
    CHECK(bl < 0, "%s case %d: lse[%lld] = %.9g, reference %.9g", what, c, (long long)bl,
          bl < 0 ? 0.0 : (double)a->lse[bl], bl < 0 ? 0.0 : rl[bl]);
    free(ro), free(rl);
}

static void test_values(void) {
    for (int c = 0; c < N_CASES; ++c) {
        attn_buf a;
        attn_buf_init(&a, attn_desc(CASES[c][0], CASES[c][1], CASES[c][2], CASES[c][3], CASES[c][4], CASES[c][5]),
                      500 + (uint64_t)c, 1.0f);
        CHECK_OK(attn_run(&a));
        check_against_ref(&a, "values", c);
        attn_buf_free(&a);
    }
}

/* Logits up to ~1e4 (q, k in [-25, 25], D 16, scale 1): exp overflows unless shifted. */
static void test_large_logits(void) {
    for (int causal = 0; causal <= 1; ++causal) {
        attn_buf a;
        attn_buf_init(&a, attn_desc(2, 2, 6, 6, 16, causal), 600 + (uint64_t)causal, 25.0f);
        a.d.scale = 1.0f;
        CHECK_OK(attn_run(&a));
        for (int64_t i = 0; i < a.nq; ++i) CHECK(isfinite(a.out[i]), "out[%lld] = %g", (long long)i, (double)a.out[i]);
        /* lse ~ 1e4: float rounding is ~1e-3 absolute, so only the relative bound applies */
        double *ro = ref_dbuf(a.nq), *rl = ref_dbuf(a.nl);
        ref_attention(&a.d, a.qd, a.kd, a.vd, ro, rl);
        const int64_t bo = ref_first_bad(a.out, ro, a.nq, OUT_ATOL, 0.0);
        const int64_t bl = ref_first_bad(a.lse, rl, a.nl, LSE_ATOL, LSE_RTOL);
        CHECK(bo < 0 && bl < 0, "causal %d: first bad out %lld, lse %lld", causal, (long long)bo, (long long)bl);
        free(ro), free(rl);
        attn_buf_free(&a);
    }
}

/* Zero keys give equal weights: lse_i = log(keys seen) and out_i = the mean of those values. */
static void test_zero_keys(void) {
    for (int causal = 0; causal <= 1; ++causal) {
        attn_buf a;
        attn_buf_init(&a, attn_desc(1, 2, 5, 5, 8, causal), 650, 1.0f);
        for (int64_t i = 0; i < a.nk; ++i) a.k[i] = 0.0f;
        CHECK_OK(attn_run(&a));
        const int64_t row = 2 * 8;
        for (int h = 0; h < 2; ++h)
            for (int i = 0; i < 5; ++i) {
                const int nk = causal ? i + 1 : 5;
                CHECK_NEAR(a.lse[h * 5 + i], log((double)nk), 1e-6, 0.0);
                for (int c = 0; c < 8; ++c) {
                    double m = 0.0;
                    for (int j = 0; j < nk; ++j) m += (double)a.v[j * row + h * 8 + c];
                    CHECK_NEAR(a.out[i * row + h * 8 + c], m / nk, 1e-6, 0.0);
                }
            }
        attn_buf_free(&a);
    }
}

/* Under the causal mask, changing keys and values at positions j >= j0 leaves out and lse
 * of every query i < j0 bit for bit unchanged, and does change query j0's. */
static void test_causal_mask(void) {
    attn_buf a, b;
    const vp_attn_desc d = attn_desc(2, 2, 10, 10, 8, 1);
    attn_buf_init(&a, d, 700, 1.0f);
    CHECK_OK(attn_run(&a));
    const int64_t row = (int64_t)d.heads * d.dim;
    const int j0s[] = {1, 4, 9};
    for (int t = 0; t < 3; ++t) {
        const int j0 = j0s[t];
        attn_buf_init(&b, d, 700, 1.0f);
        for (int64_t s = 0; s < d.batch; ++s)
            for (int j = j0; j < d.lk; ++j)
                for (int64_t c = 0; c < row; ++c) {
                    b.k[(s * d.lk + j) * row + c] += 0.5f;
                    b.v[(s * d.lk + j) * row + c] = -b.v[(s * d.lk + j) * row + c] + 0.25f;
                }
        CHECK_OK(attn_run(&b));
        for (int64_t s = 0; s < d.batch; ++s) {
            const int64_t o = s * d.lq * row;
            CHECK(memcmp(a.out + o, b.out + o, (size_t)(j0 * row) * sizeof(float)) == 0,
                  "j0 %d seq %lld: out rows before j0 changed", j0, (long long)s);
            CHECK(memcmp(a.out + o + j0 * row, b.out + o + j0 * row, (size_t)row * sizeof(float)) != 0,
                  "j0 %d seq %lld: out row j0 did not change", j0, (long long)s);
            for (int h = 0; h < d.heads; ++h) {
                const int64_t l = (s * d.heads + h) * d.lq;
                CHECK(memcmp(a.lse + l, b.lse + l, (size_t)j0 * sizeof(float)) == 0,
                      "j0 %d seq %lld head %d: lse before j0 changed", j0, (long long)s, h);
            }
        }
        attn_buf_free(&b);
    }
    attn_buf_free(&a);
}

/* ---- backward against finite differences ----------------------------------------------------- */

typedef struct grad_ctx {
    const attn_buf* a;
    const double* w; /* [nq] loss weights (= dout) */
    double* out;     /* [nq] scratch */
} grad_ctx;

/* L = sum(w * out) of the double forward on a's double inputs. */
static double grad_loss(grad_ctx* g) {
    ref_attention(&g->a->d, g->a->qd, g->a->kd, g->a->vd, g->out, NULL);
    double s = 0.0;
    for (int64_t i = 0; i < g->a->nq; ++i) s += g->w[i] * g->out[i];
    return s;
}

/* Central differences of the loss over every element of x (n), compared with got. */
static void check_fd(grad_ctx* g, double* x, int64_t n, const float* got, const char* what, int c) {
    double num = 0.0, den = 0.0;
    for (int64_t i = 0; i < n; ++i) {
        const double x0 = x[i], h = FD_H * fmax(fabs(x0), 1.0);
        x[i] = x0 + h;
        const double lp = grad_loss(g);
        x[i] = x0 - h;
        const double lm = grad_loss(g);
        x[i] = x0;
        const double fd = (lp - lm) / (2.0 * h), e = (double)got[i] - fd;
        num += e * e;
        den += fd * fd;
    }
    const double err = den > 0.0 ? sqrt(num / den) : sqrt(num);
    CHECK(err < GRAD_TOL && !isnan(err), "grad case %d: %s rel err %.3g >= %g", c, what, err, GRAD_TOL);
}

/* batch, heads, lq, lk, dim, causal */
static const int GCASES[][6] = {
    {2, 2, 3, 5, 4, 0}, {1, 1, 1, 1, 3, 0}, {2, 2, 4, 4, 8, 1}, {1, 3, 6, 2, 5, 0},
    {1, 2, 6, 6, 64, 1}, {1, 1, 7, 5, 16, 0},
};
#define N_GCASES (int)(sizeof GCASES / sizeof GCASES[0])

static void test_backward_fd(void) {
    for (int c = 0; c < N_GCASES; ++c) {
        attn_buf a;
        const vp_attn_desc d =
            attn_desc(GCASES[c][0], GCASES[c][1], GCASES[c][2], GCASES[c][3], GCASES[c][4], GCASES[c][5]);
        attn_buf_init(&a, d, 800 + (uint64_t)c, 1.5f);
        CHECK_OK(attn_run(&a));
        float *w = ref_nan_buffer(a.nq), *dq = ref_nan_buffer(a.nq), *dk = ref_nan_buffer(a.nk),
              *dv = ref_nan_buffer(a.nk);
        ref_fill_uniform(w, a.nq, 810 + (uint64_t)c, 0, -1.0f, 1.0f);
        const int64_t cols = (int64_t)d.heads * d.dim;
        vp_tensor tq = vp_tensor_2d(a.q, VP_F32, VP_MEM_HOST, d.batch * d.lq, cols);
        vp_tensor tk = vp_tensor_2d(a.k, VP_F32, VP_MEM_HOST, d.batch * d.lk, cols);
        vp_tensor tv = vp_tensor_2d(a.v, VP_F32, VP_MEM_HOST, d.batch * d.lk, cols);
        vp_tensor to = vp_tensor_2d(a.out, VP_F32, VP_MEM_HOST, d.batch * d.lq, cols);
        vp_tensor tl = vp_tensor_1d(a.lse, VP_F32, VP_MEM_HOST, a.nl);
        vp_tensor tw = vp_tensor_2d(w, VP_F32, VP_MEM_HOST, d.batch * d.lq, cols);
        vp_tensor tdq = vp_tensor_2d(dq, VP_F32, VP_MEM_HOST, d.batch * d.lq, cols);
        vp_tensor tdk = vp_tensor_2d(dk, VP_F32, VP_MEM_HOST, d.batch * d.lk, cols);
        vp_tensor tdv = vp_tensor_2d(dv, VP_F32, VP_MEM_HOST, d.batch * d.lk, cols);
        CHECK_OK(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tw, &tdq, &tdk, &tdv));
        double* wd = ref_dbuf(a.nq);
        ref_to_double(w, a.nq, wd);
        grad_ctx g = {&a, wd, ref_dbuf(a.nq)};
        check_fd(&g, a.qd, a.nq, dq, "dq", c);
        check_fd(&g, a.kd, a.nk, dk, "dk", c);
        check_fd(&g, a.vd, a.nk, dv, "dv", c);
        free(w), free(dq), free(dk), free(dv), free(wd), free(g.out);
        attn_buf_free(&a);
    }
}

/* ---- argument errors ----------------------------------------------------------------------- */

static void test_errors(void) {
    attn_buf a;
    const vp_attn_desc d0 = attn_desc(2, 2, 4, 3, 8, 0);
    attn_buf_init(&a, d0, 900, 1.0f);
    float* big = ref_nan_buffer(4096);
    vp_tensor tq = vp_tensor_2d(a.q, VP_F32, VP_MEM_HOST, 8, 16), tk = vp_tensor_2d(a.k, VP_F32, VP_MEM_HOST, 6, 16);
    vp_tensor tv = vp_tensor_2d(a.v, VP_F32, VP_MEM_HOST, 6, 16), to = vp_tensor_2d(a.out, VP_F32, VP_MEM_HOST, 8, 16);
    vp_tensor tl = vp_tensor_1d(a.lse, VP_F32, VP_MEM_HOST, 16);
    vp_tensor wide = vp_tensor_2d(big, VP_F32, VP_MEM_HOST, 4, 32), ti = tq;
    ti.dtype = VP_I32;
    vp_attn_desc d = d0;
    CHECK_OK(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl));
    CHECK_STATUS(vp_attention(NULL, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "backend is NULL");
    CHECK_STATUS(vp_attention(g_b, NULL, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "descriptor is NULL");
    d.batch = 0;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "batch 0");
    d = d0, d.heads = 0;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "heads 0");
    d = d0, d.lq = VP_ATTN_MAX_LEN + 1;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "lq 257");
    d = d0, d.lk = 0;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "lk 0");
    d = d0, d.dim = VP_ATTN_MAX_DIM + 1;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "dim 129");
    d = d0, d.causal = 1;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "causal needs lq == lk");
    d = d0, d.scale = 0.0f;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "scale");
    d.scale = -1.0f;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "scale");
    d.scale = NAN;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "scale");
    d.scale = INFINITY;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "scale");
    d = d0, d.batch = INT64_MAX / 4;
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl), VP_ERR_SHAPE, "overflows");
    d = d0;
    /* tensors: missing, wrong dtype, wrong shape (right numel, wrong last extent too) */
    CHECK_STATUS(vp_attention(g_b, &d, NULL, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "q");
    CHECK_STATUS(vp_attention(g_b, &d, &ti, &tk, &tv, &to, &tl), VP_ERR_INVALID_ARG, "q");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tq, &tv, &to, &tl), VP_ERR_SHAPE, "k");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tq, &to, &tl), VP_ERR_SHAPE, "v");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &wide, &tl), VP_ERR_SHAPE, "out");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tk), VP_ERR_SHAPE, "lse");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, NULL), VP_ERR_INVALID_ARG, "lse");
    /* outputs overlapping an input or each other */
    vp_tensor tl_in_out = vp_tensor_1d(a.out + 8, VP_F32, VP_MEM_HOST, 16);
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &tq, &tl), VP_ERR_INVALID_ARG, "out overlaps q");
    CHECK_STATUS(vp_attention(g_b, &d, &tq, &tk, &tv, &to, &tl_in_out), VP_ERR_INVALID_ARG, "lse overlaps out");
    /* backward: every tensor checked, descriptor too */
    vp_tensor tg = to, tdq = vp_tensor_2d(big, VP_F32, VP_MEM_HOST, 8, 16);
    vp_tensor tdk = vp_tensor_2d(big + 512, VP_F32, VP_MEM_HOST, 6, 16);
    vp_tensor tdv = vp_tensor_2d(big + 1024, VP_F32, VP_MEM_HOST, 6, 16);
    CHECK_OK(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk, &tdv));
    CHECK_STATUS(vp_attention_backward(g_b, NULL, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk, &tdv),
                 VP_ERR_INVALID_ARG, "descriptor is NULL");
    d.causal = 1;
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk, &tdv), VP_ERR_SHAPE,
                 "causal");
    d = d0;
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &tk, &tl, &tg, &tdq, &tdk, &tdv), VP_ERR_SHAPE, "out");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, NULL, &tdq, &tdk, &tdv), VP_ERR_INVALID_ARG,
                 "dout");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdk, &tdk, &tdv), VP_ERR_SHAPE, "dq");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdq, &tdv), VP_ERR_SHAPE, "dk");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk, &ti), VP_ERR_INVALID_ARG,
                 "dv");
    vp_tensor tdk_over = vp_tensor_2d(big + 100, VP_F32, VP_MEM_HOST, 6, 16);
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk_over, &tdv), VP_ERR_INVALID_ARG,
                 "dk overlaps dq");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tdq, &tdk, &tk), VP_ERR_INVALID_ARG,
                 "dv overlaps k");
    CHECK_STATUS(vp_attention_backward(g_b, &d, &tq, &tk, &tv, &to, &tl, &tg, &tg, &tdk, &tdv), VP_ERR_INVALID_ARG,
                 "dq overlaps out");
    free(big);
    attn_buf_free(&a);
}

int main(void) {
    CHECK_OK(vp_backend_cpu_init(&g_b));
    if (!g_b) return 1;
    RUN_TEST(test_values);
    RUN_TEST(test_large_logits);
    RUN_TEST(test_zero_keys);
    RUN_TEST(test_causal_mask);
    RUN_TEST(test_backward_fd);
    RUN_TEST(test_errors);
    vp_backend_free(g_b);
    return vpt_finish();
}
