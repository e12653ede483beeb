/* The backtest's op path: the encoding of every decision bar in batches, then the windows
 * stepped side by side — prepare (encoding rows and portfolio), the model's heads
 * (vp_model_heads), act (choice, environment step, log) — replayed as one graph of several
 * steps on CUDA and run as a plain loop on the CPU. */
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"
#include "vulpes/ops.h"
#include "vulpes/run.h"
#ifdef VP_HAVE_CUDA
#include "backend/backend_impl.h" /* vp_cuda_backend_stream */
#endif

/* Steps per captured graph on CUDA (the CPU runs one step per launch). */
#define VP_RO_GRAPH_STEPS 64

/* ---- CPU loops ------------------------------------------------------------------------------- */

void vp_ro_cpu_prepare(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                       const float* enc, const int32_t* counter, float* eb, float* pf) {
    const int32_t k = counter[0];
    for (int64_t i = 0; i < d->n_windows; ++i) {
        if (!vp_ro_active(w, i, k)) continue;
        memcpy(eb + i * d->hidden, enc + (int64_t)s->t[i] * d->hidden, sizeof(float) * (size_t)d->hidden);
        vp_ro_portfolio(d, bars, s, w, i, pf + i * VP_ENV_PORTFOLIO);
    }
}

void vp_ro_cpu_act(const vp_ro_dims* d, const vp_env_bar* bars, const vp_env_state* s, const vp_ro_windows* w,
                   const vp_ro_records* rec, int32_t* scratch, const float* q, const int32_t* forced,
                   const int32_t* counter) {
    const int32_t k = counter[0];
    for (int64_t i = 0; i < d->n_windows; ++i) {
        if (!vp_ro_active(w, i, k)) continue;
        int32_t a[VP_ENV_BRANCHES];
        if (d->forced)
            memcpy(a, forced + (int64_t)s->t[i] * VP_ENV_BRANCHES, sizeof a);
        else
            vp_action_greedy(&d->layout, q + i * d->layout.n_heads, a);
        vp_ro_step(d, bars, s, w, scratch, k, i, a);
        vp_ro_log(s, w, rec, k, i, a);
    }
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* What a step of the op path works on. */
typedef struct ops_ctx {
    vp_ro_run* r;
    vp_policy_work* work; /* the policy's scores of N windows */
    vp_tensor enc;       /* [n_rows, H] encodings */
    vp_tensor eb;        /* [N, H] this step's rows */
    vp_tensor pf;        /* [N, 8] this step's portfolios */
    int steps;           /* steps per launch */
} ops_ctx;

/* Prepare and act on the run's backend. */
static vp_status prepare(ops_ctx* c) {
    vp_ro_run* r = c->r;
    const vp_env_bar* bars = r->market.bars;
    const int32_t* k = (const int32_t*)r->counter.data;
    if (vp_backend_get_kind(r->b) == VP_BACKEND_CPU) {
        vp_ro_cpu_prepare(&r->dims, bars, &r->state, &r->win, (const float*)c->enc.data, k, (float*)c->eb.data,
                          (float*)c->pf.data);
        return VP_OK;
    }
#ifdef VP_HAVE_CUDA
    return vp_ro_cuda_prepare(vp_cuda_backend_stream(r->b), &r->dims, bars, &r->state, &r->win,
                              (const float*)c->enc.data, k, (float*)c->eb.data, (float*)c->pf.data);
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "vp_backtest_run: backend %s is not supported by this build", vp_backend_name(r->b));
#endif
}

static vp_status act(ops_ctx* c, const float* q) {
    vp_ro_run* r = c->r;
    const vp_env_bar* bars = r->market.bars;
    const int32_t* k = (const int32_t*)r->counter.data;
    if (vp_backend_get_kind(r->b) == VP_BACKEND_CPU) {
        vp_ro_cpu_act(&r->dims, bars, &r->state, &r->win, &r->rec, r->scratch, q, r->forced, k);
        return VP_OK;
    }
#ifdef VP_HAVE_CUDA
    return vp_ro_cuda_act(vp_cuda_backend_stream(r->b), &r->dims, bars, &r->state, &r->win, &r->rec, r->scratch, q,
                          r->forced, k);
#else
    VP_FAIL(VP_ERR_UNSUPPORTED, "vp_backtest_run: backend %s is not supported by this build", vp_backend_name(r->b));
#endif
}

/* Graph body: `steps` steps of every window, each ending with the counter's increment. */
static vp_status steps_body(vp_backend* b, void* ctx) {
    ops_ctx* c = (ops_ctx*)ctx;
    vp_ro_run* r = c->r;
    for (int j = 0; j < c->steps; ++j) {
        const float* q = NULL;
        if (r->pol) {
            vp_tensor scores;
            VP_TRY(prepare(c));
            VP_TRY(vp_policy_score(r->pol, c->work, &c->eb, &c->pf, r->dims.n_windows, &scores));
            q = (const float*)scores.data;
        }
        VP_TRY(act(c, q));
        VP_TRY(vp_step_increment(b, &r->counter));
    }
    return VP_OK;
}

/* The encodings of every decision bar a .. b-2 into enc [n_rows, H], chunk by chunk. */
static vp_status encode_all(vp_ro_run* r, vp_tensor* enc) {
    const int64_t n = r->n_steps, chunk = r->cfg->encode_chunk < n ? r->cfg->encode_chunk : n;
    const int64_t H = r->pol->enc_dim;
    vp_policy_work* work = NULL;
    vp_buffer ibuf;
    memset(&ibuf, 0, sizeof ibuf);
    int32_t* idx = (int32_t*)malloc(sizeof(int32_t) * (size_t)chunk);
    vp_status s = idx ? VP_OK : vp_set_error(VP_ERR_OOM, VP_WHERE, "vp_backtest_run: %lld bar indices", (long long)chunk);
    if (s == VP_OK) s = vp_policy_work_init(r->pol, chunk, &work);
    if (s == VP_OK) s = vp_buffer_alloc(r->b, vp_backend_native_mem(r->b), sizeof(int32_t) * (size_t)chunk, &ibuf);
    for (int64_t r0 = 0; s == VP_OK && r0 < n; r0 += chunk) {
        // bar indices of the chunk, then the market part of the network, then its rows
        const int64_t nb = n - r0 < chunk ? n - r0 : chunk;
        for (int64_t j = 0; j < nb; ++j) idx[j] = (int32_t)(r->a + r0 + j);
        vp_tensor it = vp_tensor_1d(ibuf.dev, VP_I32, ibuf.mem, nb);
        s = vp_upload(r->b, &it, idx, sizeof(int32_t) * (size_t)nb);
        vp_tensor e;
        if (s == VP_OK) s = vp_policy_encode(r->pol, work, r->data->features, &it, nb, &e);
        if (s == VP_OK) {
            vp_tensor src = vp_tensor_2d(e.data, VP_F32, e.mem, nb, H);
            vp_tensor dst = vp_tensor_2d((float*)enc->data + r0 * H, VP_F32, enc->mem, nb, H);
            s = vp_copy(r->b, &src, &dst);
        }
        // wait before the index buffer is refilled
        if (s == VP_OK) s = vp_backend_sync(r->b);
    }
    if (ibuf.dev) vp_buffer_free(r->b, &ibuf);
    vp_policy_work_free(r->pol, work);
    free(idx);
    return s;
}

vp_status vp_ro_run_ops(vp_ro_run* r, double* encode_s, double* sequential_s) {
    ops_ctx c;
    memset(&c, 0, sizeof c);
    c.r = r;
    vp_buffer buf;
    memset(&buf, 0, sizeof buf);
    vp_graph* g = NULL;
    const int64_t N = r->dims.n_windows;
    vp_status s = VP_OK;
    double t0 = vp_clock_s();

    // Encodings of all decision bars, then the heads' buffers for N windows.
    if (r->pol) {
        const int64_t H = r->pol->enc_dim, n = r->n_steps;
        vp_mem mem = vp_backend_native_mem(r->b);
        size_t enc_b = ((size_t)(n * H) * 4 + 255) / 256 * 256, eb_b = ((size_t)(N * H) * 4 + 255) / 256 * 256;
        s = vp_buffer_alloc(r->b, mem, enc_b + eb_b + (size_t)N * VP_ENV_PORTFOLIO * 4, &buf);
        if (s == VP_OK) {
            c.enc = vp_tensor_2d(buf.dev, VP_F32, mem, n, H);
            c.eb = vp_tensor_2d((char*)buf.dev + enc_b, VP_F32, mem, N, H);
            c.pf = vp_tensor_2d((char*)buf.dev + enc_b + eb_b, VP_F32, mem, N, VP_ENV_PORTFOLIO);
            s = encode_all(r, &c.enc);
        }
        if (s == VP_OK) s = vp_policy_work_init(r->pol, N, &c.work);
    }
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t1 = vp_clock_s();

    // The windows side by side: a graph of several steps, launched until the longest is done.
    const int cpu = vp_backend_get_kind(r->b) == VP_BACKEND_CPU;
    c.steps = cpu ? 1 : (r->max_steps < VP_RO_GRAPH_STEPS ? r->max_steps : VP_RO_GRAPH_STEPS);
    if (s == VP_OK) s = vp_graph_capture(r->b, steps_body, &c, &g);
    for (int64_t k = 0; s == VP_OK && k < r->max_steps; k += c.steps) s = vp_graph_launch(r->b, g);
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t2 = vp_clock_s();

    vp_graph_free(g);
    vp_policy_work_free(r->pol, c.work);
    if (buf.dev) vp_buffer_free(r->b, &buf);
    *encode_s = t1 - t0;
    *sequential_s = t2 - t1;
    return s;
}
