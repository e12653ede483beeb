/* Curiosity's ops: the forward model's forward (input kernel, two GEMMs), the intrinsic
 * reward of a collection step, one training step (loss, backward, AdamW) and the
 * learner-side hook. Backend ops only: nothing allocated, copied to the host or waited for. */
#include <string.h>

#include "learn/curiosity_impl.h"
#include "vulpes/curiosity.h"

/* ---- views ------------------------------------------------------------------------------------- */

/* The first `rows` rows of an [N, cols] scratch tensor (cols 0: a vector). */
static vp_tensor rows_of(const vp_tensor* t, int64_t rows, int64_t cols) {
    return cols > 0 ? vp_tensor_2d(t->data, VP_F32, t->mem, rows, cols) : vp_tensor_1d(t->data, VP_F32, t->mem, rows);
}

/* The layers' tensors inside a flat [W] buffer: W1 [Hd, D], b1 [Hd], W2 [P, Hd], b2 [P]. */
typedef struct cur_layers {
    vp_tensor w1, b1, w2, b2;
} cur_layers;

static cur_layers layers_of(const vp_curiosity* c, const vp_tensor* flat) {
    const int64_t D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    float* p = (float*)flat->data;
    cur_layers l;
    l.w1 = vp_tensor_2d(p, VP_F32, flat->mem, Hd, D);
    l.b1 = vp_tensor_1d(p + Hd * D, VP_F32, flat->mem, Hd);
    l.w2 = vp_tensor_2d(p + Hd * D + Hd, VP_F32, flat->mem, P, Hd);
    l.b2 = vp_tensor_1d(p + Hd * D + Hd + P * Hd, VP_F32, flat->mem, P);
    return l;
}

/* One product C = epi(op(A) op(B) + bias) [m, n] at the model's precision. */
static vp_status gemm(const vp_curiosity* c, int ta, int tb, int64_t m, int64_t n, int64_t k, const vp_tensor* A,
                      const vp_tensor* B, const vp_tensor* bias, vp_epilogue epi, vp_tensor* C) {
    vp_gemm_desc d = vp_gemm_plain(ta, tb, m, n, k);
    d.epilogue = epi;
    d.precision = c->cfg.precision;
    return vp_gemm(c->backend, &d, A, B, bias, C);
}

/* The kernel table of c's backend. */
static vp_status kernels_of(const char* fn, const vp_curiosity* c, const vp_curiosity_kernels** out) {
    const void* k = NULL;
    VP_TRY(vp_kernels_select(fn, "curiosity kernels", c->backend, &vp_curiosity_cpu, VP_KERNELS_CUDA(vp_curiosity_cuda),
                             &k));
    *out = (const vp_curiosity_kernels*)k;
    return VP_OK;
}

/* ---- forward and error ------------------------------------------------------------------------- */

/* The rows' inputs, checked: enc [>= n, H], port [n, P], act [n, NB] i32. */
static vp_status check_inputs(const char* fn, const vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port,
                              const vp_tensor* act, int64_t n) {
    const int64_t N = c->cfg.n_envs > c->cfg.batch ? c->cfg.n_envs : c->cfg.batch;
    VP_REQUIRE(n >= 1 && n <= N, VP_ERR_SHAPE, "%s: %lld rows (the forward model takes 1..%lld)", fn, (long long)n,
               (long long)N);
    VP_TRY(vp_tensor_check_min_rows(fn, "enc", c->backend, enc, VP_F32, n, c->cfg.enc_dim));
    VP_TRY(vp_tensor_check_rows(fn, "port", c->backend, port, VP_F32, n, c->cfg.n_portfolio));
    return vp_tensor_check_rows(fn, "act", c->backend, act, VP_I32, n, c->cfg.layout.n_branches);
}

vp_status vp_curiosity_forward(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                               int64_t n, vp_tensor* out) {
    static const char* fn = "vp_curiosity_forward";
    VP_REQUIRE(c != NULL && c->x.data != NULL && enc != NULL && port != NULL && act != NULL && out != NULL,
               VP_ERR_INVALID_ARG, "%s: curiosity is not initialised or an argument is NULL", fn);
    VP_TRY(check_inputs(fn, c, enc, port, act, n));
    const vp_curiosity_kernels* k;
    VP_TRY(kernels_of(fn, c, &k));
    const int64_t D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    // x = [enc, port, one-hot of each branch's choice]
    vp_curiosity_dims d = {n, c->cfg.enc_dim, c->cfg.n_portfolio, c->cfg.layout};
    VP_TRY(k->input(c->backend, &d, (const float*)enc->data, (const float*)port->data, (const int32_t*)act->data,
                    (float*)c->x.data));
    // h = relu(x W1^T + b1), f = h W2^T + b2
    const cur_layers l = layers_of(c, &c->params);
    vp_tensor x = rows_of(&c->x, n, D), h = rows_of(&c->h, n, Hd);
    *out = rows_of(&c->f, n, P);
    VP_TRY(gemm(c, 0, 1, n, Hd, D, &x, &l.w1, &l.b1, VP_EPI_BIAS_RELU, &h));
    return gemm(c, 0, 1, n, P, Hd, &h, &l.w2, &l.b2, VP_EPI_BIAS, out);
}

/* diff = f - target, its rows zeroed where done != 0 (done [n] f32, NULL: none), and sq =
 * ||diff||^2 per row, for the n rows of the last forward (target [n, P]). */
static vp_status pred_error(const char* fn, vp_curiosity* c, const vp_tensor* target, const vp_tensor* done,
                            int64_t n) {
    const int64_t P = c->cfg.n_portfolio;
    vp_tensor f = rows_of(&c->f, n, P), diff = rows_of(&c->diff, n, P), sq = rows_of(&c->sq, n, 0);
    VP_TRY(vp_binary(c->backend, VP_BINARY_SUB, &f, target, &diff));
    if (done) {
        VP_TRY(vp_tensor_check_rows(fn, "done", c->backend, done, VP_F32, n, 1));
        const vp_curiosity_kernels* k;
        VP_TRY(kernels_of(fn, c, &k));
        VP_TRY(k->mask(c->backend, n, (int)P, (const float*)done->data, (float*)diff.data));
    }
    return vp_reduce_rows(c->backend, VP_REDUCE_SUMSQ, &diff, &sq);
}

/* ---- collection ---------------------------------------------------------------------------------- */

vp_status vp_curiosity_reward(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                              const vp_tensor* next_port, const vp_tensor* done, vp_tensor* out) {
    static const char* fn = "vp_curiosity_reward";
    VP_REQUIRE(c != NULL && c->x.data != NULL && next_port != NULL && out != NULL, VP_ERR_INVALID_ARG,
               "%s: curiosity is not initialised or an argument is NULL", fn);
    const int64_t E = c->cfg.n_envs;
    VP_TRY(vp_tensor_check_rows(fn, "next_port", c->backend, next_port, VP_F32, E, c->cfg.n_portfolio));
    vp_tensor f;
    VP_TRY(vp_curiosity_forward(c, enc, port, act, E, &f));
    VP_TRY(pred_error(fn, c, next_port, done, E));
    // r_int = (eta / 2) ||f - p'||^2, and its sum into the iteration's total
    vp_tensor sq = rows_of(&c->sq, E, 0);
    VP_TRY(vp_axpby(c->backend, 0.5f * c->cfg.eta, &sq, 0.0f, &c->reward));
    VP_TRY(vp_reduce_all(c->backend, VP_REDUCE_SUM, &c->reward, &c->tmp));
    VP_TRY(vp_axpby(c->backend, 1.0f, &c->tmp, 1.0f, &c->acc));
    *out = c->reward;
    return VP_OK;
}

/* ---- training ------------------------------------------------------------------------------------ */

/* Element k of the statistics block as a [1] view. */
static vp_tensor stat_at(const vp_curiosity* c, vp_curiosity_stat k) {
    return vp_tensor_1d((float*)c->stats.data + k, VP_F32, c->stats.mem, 1);
}

vp_status vp_curiosity_train(vp_curiosity* c, const vp_tensor* enc, const vp_tensor* port, const vp_tensor* act,
                             const vp_tensor* next_port, const vp_tensor* done) {
    static const char* fn = "vp_curiosity_train";
    VP_REQUIRE(c != NULL && c->x.data != NULL && next_port != NULL, VP_ERR_INVALID_ARG,
               "%s: curiosity is not initialised or next_port is NULL", fn);
    vp_backend* b = c->backend;
    const int64_t B = c->cfg.batch, D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    VP_TRY(vp_tensor_check_rows(fn, "next_port", b, next_port, VP_F32, B, P));
    vp_tensor f;
    VP_TRY(vp_curiosity_forward(c, enc, port, act, B, &f));
    VP_TRY(pred_error(fn, c, next_port, done, B));
    // loss = (1 / 2B) sum_i ||f_i - p'_i||^2 into the statistics
    vp_tensor sq = rows_of(&c->sq, B, 0), loss = stat_at(c, VP_CUR_STAT_LOSS);
    VP_TRY(vp_reduce_all(b, VP_REDUCE_SUM, &sq, &c->tmp));
    VP_TRY(vp_axpby(b, 0.5f / (float)B, &c->tmp, 0.0f, &loss));
    // dL/df = (f - p') / B (0 on masked rows), kept in f (the prediction is not needed any more)
    vp_tensor diff = rows_of(&c->diff, B, P);
    VP_TRY(vp_axpby(b, 1.0f / (float)B, &diff, 0.0f, &f));
    // output layer: dW2 = df^T h, db2 = column sums of df, dh = df W2
    const cur_layers l = layers_of(c, &c->params);
    cur_layers g = layers_of(c, &c->grads);
    vp_tensor x = rows_of(&c->x, B, D), h = rows_of(&c->h, B, Hd), dh = rows_of(&c->dh, B, Hd);
    VP_TRY(gemm(c, 1, 0, P, Hd, B, &f, &h, NULL, VP_EPI_NONE, &g.w2));
    VP_TRY(vp_reduce_cols(b, VP_REDUCE_SUM, &f, &g.b2));
    VP_TRY(gemm(c, 0, 0, B, Hd, P, &f, &l.w2, NULL, VP_EPI_NONE, &dh));
    // through the ReLU (h > 0 exactly where its input is), then dW1 = dh^T x, db1 = column sums
    VP_TRY(vp_unary_backward(b, VP_UNARY_RELU, &h, &dh, &dh));
    VP_TRY(gemm(c, 1, 0, Hd, D, B, &dh, &x, NULL, VP_EPI_NONE, &g.w1));
    VP_TRY(vp_reduce_cols(b, VP_REDUCE_SUM, &dh, &g.b1));
    // AdamW, its step counted first (bias correction is 1-based)
    VP_TRY(vp_step_increment(b, &c->step));
    return vp_adamw(b, &c->cfg.adamw, &c->params, &c->grads, &c->adam_m, &c->adam_v, &c->step, NULL);
}

vp_status vp_curiosity_close_iteration(vp_curiosity* c) {
    VP_REQUIRE(c != NULL && c->acc.data != NULL, VP_ERR_INVALID_ARG,
               "vp_curiosity_close_iteration: curiosity is not initialised");
    // the iteration's mean r_int over its E x S collection steps, then a fresh sum
    const int64_t ES = c->cfg.n_envs * c->cfg.steps_per_iter;
    if (ES > 0) {
        vp_tensor mean = stat_at(c, VP_CUR_STAT_REWARD);
        VP_TRY(vp_axpby(c->backend, (float)(1.0 / (double)ES), &c->acc, 0.0f, &mean));
    }
    return vp_fill(c->backend, &c->acc, 0.0f);
}

vp_status vp_curiosity_learn(vp_curiosity* c, const vp_batch* batch, int first) {
    static const char* fn = "vp_curiosity_learn";
    VP_REQUIRE(c != NULL && c->work != NULL && batch != NULL, VP_ERR_INVALID_ARG,
               "%s: curiosity has no policy to encode with, or batch is NULL", fn);
    if (first) VP_TRY(vp_curiosity_close_iteration(c));
    // the states' encodings (detached: nothing flows back into the encoder), one step
    vp_tensor enc;
    VP_TRY(vp_policy_encode(&c->policy, c->work, &batch->features, &batch->bar_idx, c->cfg.batch, &enc));
    return vp_curiosity_train(c, &enc, &batch->portfolio, &batch->actions, &c->port1, &c->done1);
}

vp_status vp_curiosity_prime(vp_curiosity* c, const vp_batch* batch) {
    VP_REQUIRE(c != NULL && c->work != NULL && batch != NULL, VP_ERR_INVALID_ARG,
               "vp_curiosity_prime: curiosity has no policy to encode with, or batch is NULL");
    const int64_t E = c->cfg.n_envs, B = c->cfg.batch, D = c->in_dim, Hd = c->cfg.hidden, P = c->cfg.n_portfolio;
    vp_tensor enc;
    VP_TRY(vp_policy_encode(&c->policy, c->work, &batch->features, &batch->bar_idx, B, &enc));
    // the forward's two products at E and B rows, on scratch
    const cur_layers l = layers_of(c, &c->params);
    cur_layers g = layers_of(c, &c->grads);
    const int64_t rows[2] = {E, B};
    for (int k = 0; k < 2; ++k) {
        vp_tensor x = rows_of(&c->x, rows[k], D), h = rows_of(&c->h, rows[k], Hd), f = rows_of(&c->f, rows[k], P);
        VP_TRY(gemm(c, 0, 1, rows[k], Hd, D, &x, &l.w1, &l.b1, VP_EPI_BIAS_RELU, &h));
        VP_TRY(gemm(c, 0, 1, rows[k], P, Hd, &h, &l.w2, &l.b2, VP_EPI_BIAS, &f));
    }
    // the backward's three products, into the gradient (scratch until a training step)
    vp_tensor x = rows_of(&c->x, B, D), h = rows_of(&c->h, B, Hd), f = rows_of(&c->f, B, P);
    vp_tensor dh = rows_of(&c->dh, B, Hd);
    VP_TRY(gemm(c, 1, 0, P, Hd, B, &f, &h, NULL, VP_EPI_NONE, &g.w2));
    VP_TRY(gemm(c, 0, 0, B, Hd, P, &f, &l.w2, NULL, VP_EPI_NONE, &dh));
    return gemm(c, 1, 0, Hd, D, B, &dh, &x, NULL, VP_EPI_NONE, &g.w1);
}
