/* GPU parity of the attention ops: vp_attention and vp_attention_backward on CUDA against
 * the CPU op (double accumulation), outputs poisoned with NaN first, on the shapes of the
 * CPU test (Lq != Lk, 1 and 4 heads, D from 4 to 128 with odd ones, causal on and off,
 * several CTAs per sequence) and on the models' shapes (B = 8192 sequences of 8 .. 64
 * tokens, D 16 .. 64; L = 192 causal). On the large batches the CPU computes the first 8
 * and the last 8 sequences (sequences are independent) and only those are compared. The
 * backward is run twice (same bits: no order-dependent sums), and once replayed from a CUDA
 * graph with the forward (same bits as eager, no copy, allocation or sync at replay).
 *
 * Tolerances, norm-wise relative ||gpu - cpu|| / ||cpu||: the GPU sums up to 256 FP32
 * products per dot product and per output element, a worst-case rounding bound of about
 * 256 * 6e-8 = 1.5e-5 against the CPU's double sums (random errors stay far below), so out
 * and lse get TOL_FWD 2e-5; the gradients add dS = P (dP - delta), a difference whose
 * cancellation magnifies the relative error (by ~10 on these random inputs), so dq, dk and
 * dv get TOL_BWD 2e-4. Runs on a GPU machine only. */
#include "gpu_twin.h"

#define TOL_FWD 2e-5
#define TOL_BWD 2e-4
/* Sequences the CPU recomputes at each end of a large batch. */
#define CPU_SEQS 8

/* One problem: the descriptor fields, the input span (q, k uniform in [-span, span)). */
typedef struct attn_case {
    int64_t batch;
    int heads, lq, lk, dim, causal;
    float span;
} attn_case;

static const attn_case CASES[] = {
    /* the CPU test's shapes */
    {2, 1, 5, 7, 8, 0, 1.0f}, {3, 4, 9, 4, 16, 0, 1.0f}, {2, 4, 12, 12, 16, 1, 1.0f}, {1, 1, 1, 1, 8, 1, 1.0f},
    {2, 1, 17, 33, 64, 0, 1.0f}, {1, 4, 20, 20, 64, 1, 1.0f}, {2, 4, 3, 1, 8, 0, 1.0f}, {1, 1, 64, 64, 64, 1, 1.0f},
    {1, 2, 256, 256, 8, 1, 1.0f}, {1, 1, 40, 256, 128, 0, 1.0f}, {2, 2, 3, 5, 4, 0, 1.5f}, {1, 3, 6, 2, 5, 0, 1.5f},
    /* odd D (padded columns), several CTAs per sequence, larger logits */
    {3, 2, 130, 70, 100, 0, 1.0f}, {2, 1, 200, 200, 128, 1, 1.0f}, {5, 3, 33, 33, 24, 1, 1.0f},
    {4, 2, 16, 16, 64, 0, 3.0f}, {37, 1, 7, 9, 12, 0, 1.0f},
    /* the models' shapes */
    {8192, 4, 8, 8, 16, 0, 1.0f}, {8192, 4, 16, 16, 32, 0, 1.0f}, {8192, 2, 32, 32, 64, 1, 1.0f},
    {8192, 2, 64, 64, 64, 0, 1.0f}, {8192, 4, 64, 64, 16, 1, 1.0f}, {512, 4, 192, 192, 32, 1, 1.0f},
    {256, 2, 192, 192, 64, 1, 1.0f},
};
#define N_CASES (int)(sizeof CASES / sizeof CASES[0])

/* The tensors of one case on both backends. */
typedef struct attn_set {
    vp_attn_desc d;
    twin q, k, v, out, lse, dout, dq, dk, dv;
} attn_set;

static void set_init(attn_set* s, const attn_case* c) {
    vp_attn_desc d = {c->batch, c->heads, c->lq, c->lk, c->dim, 1.0f / sqrtf((float)c->dim), c->causal};
    s->d = d;
    const int64_t cols = (int64_t)c->heads * c->dim, rq = c->batch * c->lq, rk = c->batch * c->lk;
    twin_2d(&s->q, VP_F32, rq, cols), twin_2d(&s->out, VP_F32, rq, cols), twin_2d(&s->dout, VP_F32, rq, cols);
    twin_2d(&s->dq, VP_F32, rq, cols);
    twin_2d(&s->k, VP_F32, rk, cols), twin_2d(&s->v, VP_F32, rk, cols), twin_2d(&s->dk, VP_F32, rk, cols);
    twin_2d(&s->dv, VP_F32, rk, cols);
    int64_t ls[3] = {c->batch, c->heads, c->lq};
    twin_make(&s->lse, VP_F32, 3, ls);
    twin_rand(&s->q, -c->span, c->span);
    twin_rand(&s->k, -c->span, c->span);
    twin_rand(&s->v, -1.0f, 1.0f);
    twin_rand(&s->dout, -1.0f, 1.0f);
}

static void set_free(attn_set* s) {
    twin_free(&s->q), twin_free(&s->k), twin_free(&s->v), twin_free(&s->out), twin_free(&s->lse);
    twin_free(&s->dout), twin_free(&s->dq), twin_free(&s->dk), twin_free(&s->dv);
}

/* The GPU forward and backward, outputs poisoned first. */
static vp_status gpu_run(attn_set* s) {
    twin* outs[] = {&s->out, &s->lse, &s->dq, &s->dk, &s->dv};
    for (int i = 0; i < 5; ++i) VP_TRY(vp_fill(g_gpu, &outs[i]->d, NAN));
    VP_TRY(vp_attention(g_gpu, &s->d, &s->q.d, &s->k.d, &s->v.d, &s->out.d, &s->lse.d));
    return vp_attention_backward(g_gpu, &s->d, &s->q.d, &s->k.d, &s->v.d, &s->out.d, &s->lse.d, &s->dout.d,
                                 &s->dq.d, &s->dk.d, &s->dv.d);
}

/* A [n, ...] view of sequences s0 .. s0 + n - 1 of host tensor t (per_seq elements each). */
static vp_tensor seq_view(const twin* t, int64_t s0, int64_t n, int64_t per_seq) {
    return vp_tensor_1d((float*)t->h.data + s0 * per_seq, VP_F32, VP_MEM_HOST, n * per_seq);
}

/* The CPU ops on sequences s0 .. s0 + n - 1 into the host sides of the outputs. The
 * backward takes the CPU's own out and lse, so each side is checked on its own forward. */
static void cpu_run(attn_set* s, int64_t s0, int64_t n) {
    vp_attn_desc d = s->d;
    d.batch = n;
    const int64_t cols = (int64_t)d.heads * d.dim, pq = d.lq * cols, pk = d.lk * cols, pl = (int64_t)d.heads * d.lq;
    vp_tensor q = seq_view(&s->q, s0, n, pq), k = seq_view(&s->k, s0, n, pk), v = seq_view(&s->v, s0, n, pk);
    vp_tensor o = seq_view(&s->out, s0, n, pq), l = seq_view(&s->lse, s0, n, pl), g = seq_view(&s->dout, s0, n, pq);
    vp_tensor dq = seq_view(&s->dq, s0, n, pq), dk = seq_view(&s->dk, s0, n, pk), dv = seq_view(&s->dv, s0, n, pk);
    /* 1-D views: the op wants the last extent NH * D, so give 2-D ones */
    vp_tensor* qs[] = {&q, &o, &g, &dq};
    vp_tensor* ks[] = {&k, &v, &dk, &dv};
    for (int i = 0; i < 4; ++i) *qs[i] = vp_tensor_2d(qs[i]->data, VP_F32, VP_MEM_HOST, n * d.lq, cols);
    for (int i = 0; i < 4; ++i) *ks[i] = vp_tensor_2d(ks[i]->data, VP_F32, VP_MEM_HOST, n * d.lk, cols);
    CHECK_OK(vp_attention(g_cpu, &d, &q, &k, &v, &o, &l));
    CHECK_OK(vp_attention_backward(g_cpu, &d, &q, &k, &v, &o, &l, &g, &dq, &dk, &dv));
}

/* The compared sequences: all of a small batch, else CPU_SEQS at each end. */
static int seq_ranges(int64_t batch, int64_t r0[2], int64_t rn[2]) {
    if (batch <= 2 * CPU_SEQS) {
        r0[0] = 0, rn[0] = batch;
        return 1;
    }
    r0[0] = 0, rn[0] = CPU_SEQS, r0[1] = batch - CPU_SEQS, rn[1] = CPU_SEQS;
    return 2;
}

/* ||gpu - cpu|| / ||cpu|| over the compared sequences of t (per_seq elements each), any
 * NaN failing; `gpu` is t's downloaded device side. */
static void compare(const char* op, const char* cas, const twin* t, const float* gpu, int64_t per_seq, int nr,
                    const int64_t* r0, const int64_t* rn, double tol) {
    const float* cpu = (const float*)t->h.data;
    double num = 0.0, den = 0.0;
    int64_t nan = 0, first = -1;
    for (int r = 0; r < nr; ++r)
        for (int64_t i = r0[r] * per_seq; i < (r0[r] + rn[r]) * per_seq; ++i) {
            if (isnan(gpu[i]) || isnan(cpu[i])) {
                if (first < 0) first = i;
                nan++;
                continue;
            }
            const double e = (double)gpu[i] - (double)cpu[i];
            num += e * e;
            den += (double)cpu[i] * (double)cpu[i];
        }
    const double err = den > 0.0 ? sqrt(num / den) : sqrt(num);
    twin_row(op, cas, err, tol, nan == 0 && err <= tol);
    CHECK(nan == 0, "%s %s: %lld NaN (unwritten or wrong), first at %lld: gpu %g cpu %g", op, cas, (long long)nan,
          (long long)first, first >= 0 ? gpu[first] : 0.0, first >= 0 ? cpu[first] : 0.0);
    CHECK(err <= tol, "%s %s: relative error %.3e over tolerance %.1e", op, cas, err, tol);
}

static void test_parity(void) {
    char cas[64];
    for (int c = 0; c < N_CASES; ++c) {
        const attn_case* ac = &CASES[c];
        attn_set s;
        set_init(&s, ac);
        snprintf(cas, sizeof cas, "B%lld NH%d Lq%d Lk%d D%d%s", (long long)ac->batch, ac->heads, ac->lq, ac->lk,
                 ac->dim, ac->causal ? " causal" : "");
        CHECK_OK(gpu_run(&s));
        float* g_out = twin_fetch(&s.out);
        float* g_lse = twin_fetch(&s.lse);
        float* g_dq = twin_fetch(&s.dq);
        float* g_dk = twin_fetch(&s.dk);
        float* g_dv = twin_fetch(&s.dv);
        int64_t r0[2], rn[2];
        const int nr = seq_ranges(ac->batch, r0, rn);
        for (int r = 0; r < nr; ++r) cpu_run(&s, r0[r], rn[r]);
        const int64_t cols = (int64_t)ac->heads * ac->dim;
        if (g_out && g_lse && g_dq && g_dk && g_dv) {
            compare("attention out", cas, &s.out, g_out, ac->lq * cols, nr, r0, rn, TOL_FWD);
            compare("attention lse", cas, &s.lse, g_lse, (int64_t)ac->heads * ac->lq, nr, r0, rn, TOL_FWD);
            compare("attention dq", cas, &s.dq, g_dq, ac->lq * cols, nr, r0, rn, TOL_BWD);
            compare("attention dk", cas, &s.dk, g_dk, ac->lk * cols, nr, r0, rn, TOL_BWD);
            compare("attention dv", cas, &s.dv, g_dv, ac->lk * cols, nr, r0, rn, TOL_BWD);
        }
        /* a second backward gives the same bits */
        CHECK_OK(gpu_run(&s));
        twin* again[] = {&s.out, &s.dq, &s.dk, &s.dv};
        float* first[] = {g_out, g_dq, g_dk, g_dv};
        int same = 1;
        for (int i = 0; i < 4; ++i) {
            float* g2 = twin_fetch(again[i]);
            same = same && g2 && first[i] && memcmp(g2, first[i], (size_t)again[i]->n * sizeof(float)) == 0;
            free(g2);
        }
        twin_row("attention rerun bits", cas, same ? 0.0 : 1.0, 0.0, same);
        CHECK(same, "%s: a second run gave other bits", cas);
        free(g_out), free(g_lse), free(g_dq), free(g_dk), free(g_dv);
        set_free(&s);
    }
}

/* The forward and backward of one set, as a graph body. */
static vp_status graph_body(vp_backend* b, void* ctx) {
    attn_set* s = (attn_set*)ctx;
    VP_TRY(vp_attention(b, &s->d, &s->q.d, &s->k.d, &s->v.d, &s->out.d, &s->lse.d));
    return vp_attention_backward(b, &s->d, &s->q.d, &s->k.d, &s->v.d, &s->out.d, &s->lse.d, &s->dout.d, &s->dq.d,
                                 &s->dk.d, &s->dv.d);
}

static void test_graph(void) {
    const attn_case cases[] = {{8192, 2, 32, 32, 64, 1, 1.0f}, {64, 4, 192, 192, 32, 1, 1.0f}};
    for (int c = 0; c < 2; ++c) {
        char cas[64];
        snprintf(cas, sizeof cas, "B%lld L%d D%d causal", (long long)cases[c].batch, cases[c].lq, cases[c].dim);
        attn_set s;
        set_init(&s, &cases[c]);
        CHECK_OK(gpu_run(&s));
        twin* outs[] = {&s.out, &s.lse, &s.dq, &s.dk, &s.dv};
        float* eager[5];
        for (int i = 0; i < 5; ++i) eager[i] = twin_fetch(outs[i]);
        vp_graph* gr = NULL;
        CHECK_OK(vp_graph_capture(g_gpu, graph_body, &s, &gr));
        for (int i = 0; i < 5; ++i) CHECK_OK(vp_fill(g_gpu, &outs[i]->d, NAN));
        vp_runtime_counters before, after;
        vp_backend_counters(g_gpu, &before);
        for (int r = 0; r < 3 && gr; ++r) CHECK_OK(vp_graph_launch(g_gpu, gr));
        vp_backend_counters(g_gpu, &after);
        CHECK(after.copies == before.copies && after.allocs == before.allocs && after.syncs == before.syncs,
              "graph launches made copies %lld, allocs %lld, syncs %lld", (long long)(after.copies - before.copies),
              (long long)(after.allocs - before.allocs), (long long)(after.syncs - before.syncs));
        CHECK_OK(vp_backend_sync(g_gpu));
        int same = gr != NULL;
        for (int i = 0; i < 5; ++i) {
            float* g = twin_fetch(outs[i]);
            same = same && g && eager[i] && memcmp(g, eager[i], (size_t)outs[i]->n * sizeof(float)) == 0;
            free(g), free(eager[i]);
        }
        twin_row("attention graph bits", cas, same ? 0.0 : 1.0, 0.0, same);
        CHECK(same, "%s: the graph replay differs from the eager run", cas);
        vp_graph_free(gr);
        set_free(&s);
    }
}

int main(void) {
    gpu_setup("test_gpu_attention");
    RUN_TEST(test_parity);
    RUN_TEST(test_graph);
    gpu_teardown();
    return vpt_finish();
}
