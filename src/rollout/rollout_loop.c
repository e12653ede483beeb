/* The rollout's op path: the encoding of every decision bar in batches, then the windows
 * stepped side by side — prepare (encoding rows and portfolio), the model's heads
 * (the policy's scores), act (choice, environment step, log) — replayed as one graph of several
 * steps on CUDA and run as a plain loop on the CPU. The steps' kernels come from the table of
 * the backend's kind (rollout_cpu.c, rollout_cuda.cu). */
#include <stdlib.h>
#include <string.h>

#include "rollout/rollout_impl.h"
#include "vulpes/ops.h"
#include "vulpes/run.h"

/* ---- the kernels ------------------------------------------------------------------------------ */

vp_status vp_ro_kernels_of(vp_backend* b, const vp_ro_kernels** out) {
    const void* t = NULL;
    vp_status s =
        vp_kernels_select("vp_backtest_run", "rollout kernels", b, &vp_ro_cpu, VP_KERNELS_CUDA(vp_ro_cuda), &t);
    *out = (const vp_ro_kernels*)t;
    return s;
}

/* ---- the loop -------------------------------------------------------------------------------- */

/* What a step of the op path works on. */
typedef struct ops_ctx {
    vp_ro_run* r;
    const vp_ro_kernels* k; /* the backend's rollout kernels */
    vp_policy_work* work;   /* the policy's scores of N windows */
    vp_tensor enc;          /* [n_rows, H] encodings */
    vp_tensor eb;           /* [N, H] this step's rows */
    vp_tensor pf;           /* [N, 8] this step's portfolios */
    int steps;              /* steps per launch */
} ops_ctx;

/* Prepare and act on the run's backend, through its kernels. */
static vp_status prepare(ops_ctx* c) {
    vp_ro_run* r = c->r;
    return c->k->prepare(r->b, &r->dims, r->market.bars, &r->state, &r->win, (const float*)c->enc.data,
                         (const int32_t*)r->counter.data, (float*)c->eb.data, (float*)c->pf.data);
}

static vp_status act(ops_ctx* c, const float* q) {
    vp_ro_run* r = c->r;
    return c->k->act(r->b, &r->dims, r->market.bars, &r->state, &r->win, &r->rec, r->scratch, q, r->forced,
                     (const int32_t*)r->counter.data);
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
        // a policy with memory sees the actions the step read and the rewards it paid
        if (r->pol && r->pol->observe) {
            const int64_t N = r->dims.n_windows;
            vp_tensor acts = vp_tensor_2d(r->scratch, VP_I32, r->dev.mem, N, VP_ENV_BRANCHES);
            vp_tensor rew = vp_tensor_1d(r->win.reward, VP_F32, r->dev.mem, N);
            VP_TRY(vp_policy_observe(r->pol, c->work, &acts, &rew, N));
        }
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
    VP_TRY(vp_ro_kernels_of(r->b, &c.k));
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
        // the risk-budget head's scales of the windows' sizes, refilled by each score
        if (s == VP_OK) r->dims.env.size_scale = vp_policy_size_scale(r->pol, c.work);
    }
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t1 = vp_clock_s();

    // The windows side by side: a graph of several steps, launched until the longest is done.
    c.steps = c.k->graph_steps(r->b, r->max_steps);
    if (s == VP_OK) s = vp_graph_capture(r->b, steps_body, &c, &g);
    for (int64_t k = 0; s == VP_OK && k < r->max_steps; k += c.steps) s = vp_graph_launch(r->b, g);
    if (s == VP_OK) s = vp_backend_sync(r->b);
    double t2 = vp_clock_s();

    vp_graph_free(g);
    // a policy with memory keeps its workspace (each window's history) for the decision after the windows
    if (s == VP_OK && r->pol && r->pol->observe) r->mem_work = c.work;
    else vp_policy_work_free(r->pol, c.work);
    r->dims.env.size_scale = NULL; /* the scales lived in the work; the baselines step unscaled */
    if (buf.dev) vp_buffer_free(r->b, &buf);
    *encode_s = t1 - t0;
    *sequential_s = t2 - t1;
    return s;
}
